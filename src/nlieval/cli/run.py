"""The command of choice-based evaluation: ``run``."""

from __future__ import annotations

import argparse
import sys

from ..backends import ServerError
from ..choice import RunConfig, run
from ..ground import render
from ..runs import metrics_table, run_timing
from .args import add_command, settings_from_args


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    add_command(
        sub,
        "run",
        handler=_cmd_run,
    )


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = settings_from_args(RunConfig, args)
    try:
        results = run(cfg, args.out, overwrite=args.overwrite, progress=args.progress)
    except ServerError as err:
        # One line, as for every other error; what was scored before it is kept.
        if getattr(args, "verbose", False):
            raise
        again = "; run the same command again to resume" if err.retryable else ""
        print(f"nlieval: error: {err}{again}", file=sys.stderr)
        return 2
    print(render(metrics_table(results.metrics, run_timing(results)), "md"))
    print(f"\nrecords, results.json and summary.md in {args.out}")
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``run``."""
    _add_run(sub)
