"""The ``train`` command: fine-tune an encoder as a sentence-pair classifier.

:func:`add_commands` adds it to the main parser's subcommands; the subparser carries its
handler as ``handler`` (a function of the parsed arguments returning an exit code).
torch and transformers are imported only when the command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..sci.train import TrainConfig, format_results, train
from .args import add_data_dir, seeds


def cmd_train(args: argparse.Namespace) -> int:
    """Train every seed, print one line per seed and the mean and std, return 0."""

    config = TrainConfig(
        model=args.model,
        task=args.task,
        train_split=args.train_split,
        dev_task=args.dev_task,
        dev_split=args.dev_split,
        test_task=args.test_task,
        test_split=args.test_split,
        skip_test=args.no_test,
        data_dir=args.data_dir,
        epochs=args.epochs,
        lr=args.lr,
        batch_size=args.batch_size,
        eval_batch_size=args.eval_batch_size,
        max_length=args.max_length,
        optimizer=args.optimizer,
        weight_decay=args.weight_decay,
        max_grad_norm=args.max_grad_norm if args.max_grad_norm > 0 else None,
        patience=args.patience,
        seeds=args.seeds,
        top_layers=args.top_layers,
        hypothesis_only=args.hypothesis_only,
        dev_fraction=args.dev_fraction,
        split_seed=args.split_seed,
        limit=args.limit,
        device=args.device,
        out=args.out,
        init_from=args.init_from,
        fresh_head=not args.keep_head,
    )
    results = train(config, progress=not args.no_progress, resume=not args.overwrite)
    print(format_results(results))
    print(f"\ncheckpoints and results.json in {Path(args.out)}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``train`` to the main subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["train", "--task", "sick", "--out", "runs/t", "--seeds", "3"])
    >>> args.model, args.seeds, args.epochs, args.handler.__name__
    ('minilm', (0, 1, 2), 5, 'cmd_train')
    """
    p = sub.add_parser("train", help="fine-tune an encoder (linear head on [CLS]) on a task")
    _add_data_args(p)
    _add_training_args(p)
    p.add_argument("--device", default="auto")
    p.add_argument(
        "--out",
        required=True,
        help="output run folder: test records of every seed, seed{n}/ checkpoints",
    )
    p.add_argument(
        "--overwrite", action="store_true", help="discard the folder's records; retrain every seed"
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_train)


def _add_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        default="minilm",
        help="encoder: minilm (the packaged all-MiniLM-L6-v2), a folder or a hub id [minilm]",
    )
    p.add_argument(
        "--task", "--train-task", dest="task", required=True, help="training task or task YAML"
    )
    p.add_argument("--train-split", default="train", help="split to train on [train]")
    p.add_argument("--dev-task", default=None, help="early-stopping task [the training task]")
    p.add_argument(
        "--dev-split",
        default=None,
        help="early-stopping split [none: hold out --dev-fraction of the training split]",
    )
    p.add_argument("--dev-fraction", type=float, default=0.1, help="held-out share [0.1]")
    p.add_argument("--split-seed", type=int, default=0, help="seed of the held-out draw [0]")
    p.add_argument("--test-task", default=None, help="task to test on [the training task]")
    p.add_argument("--test-split", default=None, help="test split [the test task's default]")
    p.add_argument("--no-test", action="store_true", help="train only; no test evaluation")
    add_data_dir(p)
    p.add_argument("--limit", type=int, default=None, help="at most N items per split")


def _add_training_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--epochs", type=int, default=5, help="most epochs per seed [5]")
    p.add_argument("--patience", type=int, default=2, help="epochs without dev gain to stop [2]")
    p.add_argument("--lr", type=float, default=2e-5, help="learning rate [2e-5]")
    p.add_argument("--batch-size", type=int, default=16, help="training batch size [16]")
    p.add_argument("--eval-batch-size", type=int, default=64, help="[64]")
    p.add_argument("--max-length", type=int, default=128, help="tokens per input pair [128]")
    p.add_argument("--optimizer", choices=("adam", "adamw"), default="adam", help="[adam]")
    p.add_argument(
        "--weight-decay",
        type=float,
        default=0.01,
        help="AdamW only; never on biases and LayerNorm [0.01]",
    )
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="clipping; 0: none [1.0]")
    p.add_argument(
        "--seeds",
        type=seeds,
        default=(0, 1, 2),
        help="a count (3 = seeds 0,1,2) or a list (1,5,7; one seed: 7,) [3]",
    )
    p.add_argument(
        "--top-layers",
        type=int,
        default=None,
        help="train only the top N encoder layers and the head [all layers]",
    )
    p.add_argument(
        "--hypothesis-only", action="store_true", help="train and test on the second sentence"
    )
    p.add_argument(
        "--init-from",
        default=None,
        help="two-stage: start from this checkpoint, or seed{n} of this train folder "
        "(fresh head; give stage two a lower --lr)",
    )
    p.add_argument(
        "--keep-head",
        action="store_true",
        help="with --init-from: keep its head (default: a freshly initialised head)",
    )
