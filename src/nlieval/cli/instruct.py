"""Commands for scientific NLI: ``instruct`` (prompted chat models) and ``sci-report``.

:func:`add_commands` adds them to the main parser's subcommands; each subparser carries
its handler as ``handler`` (a function of the parsed arguments returning an exit code).
Models and heavy libraries are imported only when a command runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from ..runs import RunError, atomic_write, instruct_table, make_folder, run_timing
from ..sci import report as sci
from ..sci.instruct import InstructConfig, instruct_backend, run_instruct
from .args import add_settings, settings_from_args


def cmd_instruct(args: argparse.Namespace) -> int:
    """Run (or resume) a prompted instruct model; print the table, return 0."""

    config = settings_from_args(InstructConfig, args)
    model = config.resolve()
    made: list[Any] = []

    def load(_: str | None) -> Any:
        # Each backend made, for the server faults it tried again.
        made.append(instruct_backend(model))
        return made[-1]

    try:
        results = run_instruct(
            config,
            args.out,
            dataclasses.replace(model, load_with=load),
            overwrite=args.overwrite,
            progress=not args.no_progress,
        )
    except RunError:
        raise
    except RuntimeError as err:  # a backend that failed for good (server down, ...)
        faults = _faults(made)
        raise RunError(
            f"{err}; the answers received so far are saved in {args.out}: "
            "run the same command again to resume"
            + (f" (before it, server faults tried again: {faults})" if faults else "")
        ) from err
    faults = _faults(made)
    if faults:
        # The run went on, but the user should know that the server misbehaved.
        print(f"WARNING server faults tried again: {faults}", file=sys.stderr)
    print(instruct_table(results.metrics, run_timing(results)))
    print(f"\nrecords, results.json and summary.md in {args.out}")
    return 0


def _faults(backends: list[Any]) -> str | None:
    # Server faults that were tried again (not JSON, HTTP 5xx, timeouts), in one phrase.
    faults: dict[str, int] = {}
    for b in backends:
        for kind, n in (getattr(b, "faults", None) or {}).items():
            faults[kind] = faults.get(kind, 0) + n
    if not faults:
        return None
    detail = ", ".join(f"{n} {kind}" for kind, n in sorted(faults.items()))
    return f"{sum(faults.values())} ({detail})"


def cmd_sci_report(args: argparse.Namespace) -> int:
    """Scores, per-domain and per-class F1, confusion matrices (and PNGs) of run folders."""

    if (args.in_domain is None) != (args.out_of_domain is None):
        raise ValueError("--in-domain and --out-of-domain go together")
    rows = sci.sci_rows(sci.iter_report_records(args.runs), over_checkpoints=args.over_checkpoints)
    if not rows:
        print(f"no labelled records in {', '.join(args.runs)}", file=sys.stderr)
        return 1
    shift = (args.in_domain, args.out_of_domain) if args.in_domain else None
    pairs = sci.shift_rows(rows, *shift) if shift else None
    print(sci.format_report(rows, pairs, shift))
    if args.plot_dir:
        print()
        for path in sci.plot_confusions(rows, args.plot_dir):
            print(f"plot: {path}")
    if args.json:
        out = Path(args.json)
        make_folder(out.parent)
        payload = {"rows": rows, "in_vs_out_of_domain": pairs}
        atomic_write(out, json.dumps(payload, indent=2, allow_nan=True) + "\n")
        print(f"written: {out}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``instruct`` and ``sci-report`` to the main subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["instruct", "--out", "runs/i", "--shots", "0,4"])
    >>> args.model, args.tasks, args.shots, args.runs, args.split, args.handler.__name__
    ('smollm2-135m', ('scinli',), (0, 4), (0, 1, 2), 'test', 'cmd_instruct')
    """

    p = sub.add_parser(
        "instruct",
        help="ask a chat model for the class of scientific sentence pairs (zero/k-shot)",
        description="Prompted instruct models on four-class scientific NLI (METHODS.md 4): "
        "zero-shot and k-shot with k/4 exemplars per class, greedy decoding, several runs "
        "with different exemplar sets (zero-shot is run once: the runs would repeat it). "
        "Answers that name no class are kept, counted and scored wrong.",
    )
    add_settings(p, InstructConfig, skip=("device_map", "max_memory", "prefix_attention"))
    p.add_argument("--out", "--output_path", dest="out", required=True, help="run folder")
    p.add_argument("--overwrite", action="store_true", help="discard what the run folder holds")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_instruct)

    p = sub.add_parser(
        "sci-report",
        help="macro F1 overall and per domain, per-class F1, confusion matrices (from records)",
    )
    p.add_argument("runs", nargs="+", help="run folders (nlieval run, instruct or train)")
    p.add_argument("--in-domain", default=None, help="task to compare with --out-of-domain")
    p.add_argument("--out-of-domain", default=None, help="task to compare with --in-domain")
    p.add_argument("--plot-dir", default=None, help="write one confusion-matrix PNG per row here")
    p.add_argument("--json", default=None, help="write every number to this JSON file")
    p.add_argument(
        "--over-checkpoints",
        action="store_true",
        help="count a model's checkpoints as runs (the seed checkpoints that "
        "`nlieval run --model <train folder>` scores)",
    )
    p.set_defaults(handler=cmd_sci_report)
