"""The commands of choice-based evaluation and its data: ``run``, ``stats``, ``report``,
``tasks``."""

from __future__ import annotations

import argparse
import sys

from .. import data
from ..backends import ServerError
from ..choice import RunConfig, run
from ..data.stats import dataset_stats, format_stats
from ..reports import report
from ..runs import metrics_table, run_timing
from .args import add_data_dir, add_settings, csv_list, settings_from_args


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="evaluate a language model by option NLL over tasks and shot counts, or an NLI "
        "classifier (a sequence-classification model, or a folder of nlieval train)",
    )
    add_settings(p, RunConfig)
    p.add_argument("--out", "--output_path", dest="out", required=True, help="run folder")
    p.add_argument("--overwrite", action="store_true", help="discard what the run folder holds")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = settings_from_args(RunConfig, args)
    try:
        results = run(cfg, args.out, overwrite=args.overwrite, progress=not args.no_progress)
    except ServerError as err:
        # One line, as for every other error; what was scored before it is kept.
        if getattr(args, "verbose", False):
            raise
        again = "; run the same command again to resume" if err.retryable else ""
        print(f"nlieval: error: {err}{again}", file=sys.stderr)
        return 2
    print(metrics_table(results.metrics, run_timing(results)))
    print(f"\nrecords, results.json and summary.md in {args.out}")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    rows = []
    for task in args.tasks:
        ds = data.load_task(task, args.data_dir, args.split, skip_bad=args.skip_bad)
        rows.append(dataset_stats(ds))
    print(format_stats(rows))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    print(report(args.runs, write=not args.no_write))
    return 0


def _cmd_tasks(args: argparse.Namespace) -> int:
    for name, spec in data.TASKS.items():
        labels = "/".join(lab.value for lab in spec.labels)
        print(f"{name:<18} {spec.default_split:<15} {labels:<42} {spec.description}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """``run``, ``stats``, ``report`` and ``tasks``."""
    _add_run(sub)
    p = sub.add_parser("stats", help="items, labels, lengths and overlap of benchmarks")
    p.add_argument("--task", "--tasks", dest="tasks", type=csv_list, required=True)
    add_data_dir(p)
    p.add_argument("--split", default=None)
    p.add_argument("--skip-bad", action="store_true")
    p.set_defaults(handler=_cmd_stats)
    p = sub.add_parser("report", help="tables again from saved records (no model loaded)")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument(
        "--no-write", action="store_true", help="print only; leave results.json as it is"
    )
    p.set_defaults(handler=_cmd_report)
    p = sub.add_parser("tasks", help="list the built-in tasks")
    p.set_defaults(handler=_cmd_tasks)
