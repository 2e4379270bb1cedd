"""``nlieval experiment``: a study's grid of runs from one file (``plan``, ``run``,
``status``, ``schema``); see :mod:`nlieval.experiments`."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from typing import TextIO

from ..experiments import (
    ExperimentPlan,
    ExperimentRun,
    ExperimentSchema,
    ExperimentStatus,
    Progress,
    plan_text,
    run_file,
    schema_text,
    status_text,
    write_schema,
)
from .args import add_command, command_parser, settings_from_args
from .commands import no_library_bars


def _cmd_plan(args: argparse.Namespace) -> int:
    print(plan_text(settings_from_args(ExperimentPlan, args)))
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = settings_from_args(ExperimentRun, args)
    # A line per cell (on standard error with --json, whose standard output is the
    # summary alone); the bar only on a terminal, so a log file gets no escape code, nor
    # the libraries' own bars (transformers' "Loading weights").
    stream = sys.stderr if cfg.json else sys.stdout
    terminal = sys.stderr.isatty()
    if not terminal:
        no_library_bars()
    progress = None if cfg.quiet else Progress(_say(stream), bar=terminal)
    began = time.monotonic()
    summary = run_file(cfg, progress)
    seconds = time.monotonic() - began
    if cfg.json:
        print(json.dumps({**summary.to_dict(), "seconds": round(seconds, 1)}, indent=1))
    else:
        print(f"{summary.text()} in {seconds:.1f} s")
    return 1 if summary.failed else 0


def _say(stream: TextIO) -> Callable[[str], None]:
    def say(line: str) -> None:
        print(line, file=stream, flush=True)

    return say


def _cmd_status(args: argparse.Namespace) -> int:
    print(status_text(settings_from_args(ExperimentStatus, args)))
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    cfg = settings_from_args(ExperimentSchema, args)
    if cfg.out is None:
        print(schema_text(), end="")
        return 0
    write_schema(cfg.out)
    print(f"written: {cfg.out}")
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``experiment`` and its subcommands.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["experiment", "run", "e.yaml", "--out", "x", "--set", "limit=5"])
    >>> args.file, args.set, args.handler.__name__
    ('e.yaml', ['limit=5'], '_cmd_run')
    """
    p = command_parser(sub, "experiment")
    esub = p.add_subparsers(dest="experiment_command", required=True)
    command = functools.partial(add_command, esub)
    command(
        "plan",
        help="the cells of an experiment file with their command lines and estimates",
        examples=(
            "nlieval experiment plan experiments/lost-in-inference.yaml --set models=smollm2-135m",
            "nlieval experiment plan docs/examples/experiment.yaml --set limit=4 --no-estimate",
        ),
        handler=_cmd_plan,
        settings=(ExperimentPlan,),
    )
    command(
        "run",
        help="run the cells not done yet, then write the report",
        examples=(
            "nlieval experiment run experiments/lost-in-inference.yaml --set models=smollm2-135m "
            "--set limit=5 --out runs/lii",
            "nlieval experiment run docs/examples/experiment.yaml --executor slurm --partition gpu "
            "--out runs/smoke-study",
        ),
        handler=_cmd_run,
        settings=(ExperimentRun,),
    )
    command(
        "status",
        help="each cell of an experiment folder: done, partial, failed or pending",
        examples=(
            "nlieval experiment status runs/lii",
            "nlieval experiment status runs/smoke-study",
        ),
        handler=_cmd_status,
        settings=(ExperimentStatus,),
    )
    command(
        "schema",
        help="the JSON Schema of experiment files (for editors)",
        examples=(
            "nlieval experiment schema --out experiments/schema.json",
            "nlieval experiment schema",
        ),
        handler=_cmd_schema,
        settings=(ExperimentSchema,),
    )
