"""The ``train`` command: fine-tune an encoder as a sentence-pair classifier (or, on
items with choices such as alpha-NLI's, a multiple-choice one).

:func:`add_commands` adds it to the main parser's subcommands; the subparser carries its
handler as ``handler`` (a function of the parsed arguments returning an exit code).
torch and transformers are imported only when the command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..sci import TrainConfig, format_results, train_classifier
from .args import add_command, settings_from_args


def cmd_train(args: argparse.Namespace) -> int:
    """Train every seed, print one line per seed and the mean and std, return 0."""

    config = settings_from_args(TrainConfig, args, out=args.out)
    results = train_classifier(config, progress=args.progress, resume=not args.overwrite)
    print(format_results(results))
    print(f"\ncheckpoints and results.json in {Path(args.out)}")
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``train`` to the main subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["train", "--task", "sick", "--out", "runs/t", "--seeds", "3"])
    >>> args.model, args.seeds, args.epochs, args.handler.__name__
    ('minilm', (0, 1, 2), 5, 'cmd_train')
    """
    add_command(
        sub,
        "train",
        handler=cmd_train,
    )
