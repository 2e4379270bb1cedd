"""``nlieval generate``: NLI items written by a chat model
(see :mod:`nlieval.metainference.generated`).

The chat model is local (transformers, through its chat template) or any
OpenAI-compatible server (``--api-base``). The output folder is a task:
``nlieval run --task OUT/task.yaml``, ``nlieval stats --task OUT/task.yaml``, and
``nlieval infer build --generated OUT/task.yaml`` (with ``--sentences hypothesis``).
"""

from __future__ import annotations

import argparse
import sys

from ..backends.registry import ChatModel
from ..metainference.generated import GenerateConfig, format_summary, generate_items
from ..runs import RECORDS
from .args import add_data_dir, add_settings, settings_from_args


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``generate`` to the main parser's subcommands.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["generate", "--task", "snli", "--out", "o"])
    >>> args.examples, args.attempts, args.handler.__name__
    (10, 3, 'cmd_generate')
    """
    p = sub.add_parser(
        "generate",
        help="hypotheses (entailment / neutral / contradiction) written by a chat model, "
        "as an NLI task",
    )
    p.add_argument("--task", required=True, help="task name or task YAML whose premises to use")
    p.add_argument("--split", default=None, help="split of the task (default: the task's)")
    p.add_argument("--limit", type=int, default=None, help="the first N distinct premises")
    add_data_dir(p)
    p.add_argument("--skip-bad", action="store_true", help="skip malformed data lines (counted)")
    p.add_argument(
        "--sentences",
        choices=("premise", "hypothesis"),
        default="premise",
        help="write hypotheses for the task's premises, or for its hypotheses (for the "
        "chain patterns of `infer build --generated`) [premise]",
    )
    p.add_argument(
        "--examples", type=int, default=10, help="solved examples from the task's pool [10]"
    )
    p.add_argument("--seed", type=int, default=0, help="draws the examples; seed of answer 1 [0]")
    p.add_argument(
        "--attempts", type=int, default=3, help="answers at most per premise and run [3]"
    )
    p.add_argument(
        "--temperature", type=float, default=0.0, help="of the first answer (0: greedy) [0]"
    )
    p.add_argument(
        "--retry-temperature",
        type=float,
        default=0.7,
        help="at least this temperature when asking again after an invalid answer [0.7]",
    )
    p.add_argument("--max-new-tokens", type=int, default=160, help="per answer [160]")
    p.add_argument(
        "--max-server-errors",
        type=int,
        default=3,
        help="stop after this many requests in a row failed for good [3]",
    )
    add_settings(p, ChatModel, skip=("device_map", "max_memory"))
    p.add_argument("--out", required=True, help="output folder (re-run the command to resume)")
    p.add_argument("--overwrite", action="store_true", help="discard what the folder holds")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_generate)


def cmd_generate(args: argparse.Namespace) -> int:
    """Run the command; 0 when every premise got an answer, 1 when some must be re-run."""

    for name in ("attempts", "max_server_errors", "max_new_tokens"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
    if args.examples < 0:
        raise ValueError("--examples must be 0 or more")
    config = GenerateConfig(
        task=args.task,
        split=args.split,
        limit=args.limit,
        sentences=args.sentences,
        examples=args.examples,
        seed=args.seed,
        attempts=args.attempts,
        temperature=args.temperature,
        retry_temperature=args.retry_temperature,
        max_new_tokens=args.max_new_tokens,
        data_dir=args.data_dir,
        skip_bad=args.skip_bad,
        max_server_errors=args.max_server_errors,
    )
    backend = settings_from_args(ChatModel, args).load()
    try:
        summary = generate_items(
            backend, config, args.out, overwrite=args.overwrite, progress=not args.no_progress
        )
    finally:
        close = getattr(backend, "close", None)
        if callable(close):
            close()
    print(format_summary(summary))
    print(f"\n{summary['seconds']} s; items, {RECORDS} and summary.json in {args.out}")
    print(f"use them with: nlieval run --task {args.out}/task.yaml --out RUN_FOLDER")
    if summary["stopped"]:
        print(
            f"nlieval: stopped: {summary['stopped']}\n"
            f"everything that arrived is saved in {args.out}; "
            "run the same command again to resume",
            file=sys.stderr,
        )
        return 1
    if summary["server_errors"] or summary["not_attempted"]:
        left = summary["server_errors"] + summary["not_attempted"]
        print(
            f"nlieval: {left} premises got no answer from the server; "
            "run the same command again to ask for them",
            file=sys.stderr,
        )
        return 1
    return 0
