"""nlieval: evaluate and study language models through Natural Language Inference.

Flag names follow lm-evaluation-harness where they mean the same thing
(``--model``, ``--tasks``, ``--limit``, ``--batch_size``, ``--output_path``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..backends import ModelError
from ..data import DataError
from ..runs import RunError
from . import across, analyses, build, contamination, generate, instruct, logic, reports, run, train

#: Command groups in the order ``nlieval --help`` lists them.
GROUPS = (run, reports, analyses, across, logic, build, train, contamination, generate, instruct)


def build_parser() -> argparse.ArgumentParser:
    """The ``nlieval`` argument parser: every command group adds its subcommands, each
    with a ``handler``."""
    parser = argparse.ArgumentParser(
        prog="nlieval", description=__doc__.splitlines()[0] if __doc__ else None
    )
    # The program's own flag (before the subcommand), not a setting of any command.
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_commands(sub)
    return parser


def _no_library_bars() -> None:
    """``--no-progress``: no bar of the libraries either (transformers' "Loading weights",
    the hub's downloads), which would print around a one-line error."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when they are imported
    if "transformers" in sys.modules:  # imported already (in-process callers)
        from transformers.utils import logging as hf_logging

        off: Any = hf_logging.disable_progress_bar  # unannotated
        off()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nlieval`` command.

    >>> main(["tasks"])  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    snli   dev   entailment/neutral/contradiction   SNLI 1.0 ...
    smoke  test  entailment/neutral/contradiction   bundled 48-item ...
    0
    """
    args = build_parser().parse_args(argv)
    if getattr(args, "progress", True) is False:
        _no_library_bars()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.handler(args))
    except (DataError, ModelError, RunError, ValueError) as err:
        if args.verbose:
            raise
        print(f"nlieval: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nlieval: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`nlieval ... | head`): not an error of ours.
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
