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

from ..backends import ChatModel
from ..metainference import GenerateConfig, format_summary, generate_items
from ..runs import RECORDS
from .args import add_command, settings_from_args


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``generate`` to the main parser's subcommands.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["generate", "--task", "snli", "--out", "o"])
    >>> args.examples, args.attempts, args.handler.__name__
    (10, 3, 'cmd_generate')
    """
    add_command(
        sub,
        "generate",
        handler=cmd_generate,
    )


def cmd_generate(args: argparse.Namespace) -> int:
    """Run the command; 0 when every premise got an answer, 1 when some must be re-run."""

    config = settings_from_args(GenerateConfig, args)
    chat = settings_from_args(ChatModel, args).resolve()  # loaded once the folder is checked
    summary = generate_items(
        chat, config, args.out, overwrite=args.overwrite, progress=args.progress
    )
    print(format_summary(summary))
    print(f"\n{summary.seconds} s; items, {RECORDS} and summary.json in {args.out}")
    print(f"use them with: nlieval run --task {args.out}/task.yaml --out RUN_FOLDER")
    if summary.stopped:
        print(
            f"nlieval: error: stopped: {summary.stopped}; everything that arrived is "
            f"saved in {args.out}; run the same command again to resume",
            file=sys.stderr,
        )
        return 1
    if summary.server_errors or summary.not_attempted:
        left = summary.server_errors + summary.not_attempted
        print(
            f"nlieval: {left} premises got no answer from the server; "
            "run the same command again to ask for them",
            file=sys.stderr,
        )
        return 1
    return 0
