"""Commands across run folders (no model loaded): ``grid`` (the papers' model x benchmark
tables), ``compare`` (significance of two runs on the same items), ``breakdown`` (metrics by
an item field), ``items`` (items with several models' predictions side by side) and
``figure`` (accuracy vs shots, vs size, training dynamics of several models)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..analyses import compare_runs, comparison_table, render_grid
from ..analyses.listing import FILTERS, SORTS
from ..reports import breakdown_report, figure_report, grid_report, listing_report
from ..runs import atomic_write, make_folder
from ..settings import csv_list


def _write_or_print(text: str, out: str | None) -> None:
    if out is None:
        print(text)
        return
    path = Path(out)
    make_folder(path.parent)
    atomic_write(path, text if text.endswith("\n") else text + "\n")
    print(f"written: {path}")


def cmd_grid(args: argparse.Namespace) -> int:
    """Print (or write) the grid table of the folders."""
    g = grid_report(
        args.runs,
        index=args.rows,
        columns=args.cols,
        values=args.metrics,
        reference=args.reference,
        average=not args.no_average,
        ci=args.ci,
        resamples=args.resamples,
        seed=args.seed,
        over_checkpoints=args.over_checkpoints,
    )
    _write_or_print(render_grid(g, args.format, percent=args.percent, digits=args.digits), args.out)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Print McNemar and bootstrap intervals per shared sweep point."""
    rows = compare_runs(
        args.a, args.b, resamples=args.resamples, confidence=args.confidence, seed=args.seed
    )
    print(comparison_table(rows))
    if args.json:
        _write_or_print(json.dumps(rows, indent=2), args.json)
    return 0


def cmd_breakdown(args: argparse.Namespace) -> int:
    """Print metrics by the named fields."""
    _write_or_print(breakdown_report(args.runs, args.by, args.format), args.out)
    return 0


def cmd_items(args: argparse.Namespace) -> int:
    """Print the items of the folders side by side."""
    print(
        listing_report(
            args.runs,
            filters=args.filter or (),
            sort=args.sort,
            limit=args.limit,
            data_dir=args.data_dir,
        )
    )
    return 0


def cmd_figure(args: argparse.Namespace) -> int:
    """Write one figure across the folders' models."""
    sizes = None
    if args.sizes:
        sizes = {}
        for pair in args.sizes:
            name, _, value = pair.rpartition("=")
            try:
                sizes[name] = float(value)
            except ValueError:
                raise ValueError(f"--sizes: {pair!r} is not MODEL=PARAMETERS") from None
    positions = None
    if args.positions:
        raw = json.loads(Path(args.positions).read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError(f"{args.positions}: a JSON object of checkpoint -> position")
        positions = {str(k): float(v) for k, v in raw.items()}
    path = figure_report(
        args.kind,
        args.runs,
        args.out,
        baselines=args.baseline or (),
        sizes=sizes,
        pattern=args.pattern,
        scale=args.scale,
        positions=positions,
        metric=args.metric,
        axis=args.axis,
    )
    print(f"written: {path}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``grid``, ``compare``, ``breakdown``, ``items`` and ``figure``.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["grid", "a", "b", "--metrics", "acc_original,acc_majority"])
    >>> args.rows, args.cols, args.metrics
    (('model',), ('task',), ('acc_original', 'acc_majority'))
    """
    p = sub.add_parser("grid", help="one table over many run folders (the papers' layouts)")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--rows", type=csv_list, default=("model",), help="row keys [model]")
    p.add_argument("--cols", type=csv_list, default=("task",), help="column keys [task]")
    p.add_argument(
        "--metrics",
        type=csv_list,
        default=("accuracy",),
        help="values: accuracy, macro_f1, gold_nll, or the ChaosNLI acc_original, "
        "acc_majority, js_distance, kl [accuracy]",
    )
    p.add_argument("--reference", default=None, help="run folder to take each row's gap to")
    p.add_argument("--no-average", action="store_true", help="no Average row")
    p.add_argument(
        "--ci",
        type=float,
        default=None,
        metavar="LEVEL",
        help="add each cell's bootstrap interval over items at this level, e.g. 0.95",
    )
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap draws [2000]")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap [0]")
    p.add_argument(
        "--over-checkpoints",
        action="store_true",
        help="a model's checkpoints are its seeds (a run over a train folder's seed models)",
    )
    p.add_argument("--format", choices=("md", "csv", "json"), default="md")
    p.add_argument("--percent", action="store_true", help="values x 100")
    p.add_argument("--digits", type=int, default=3)
    p.add_argument("--out", default=None, help="write the table here instead of printing it")
    p.set_defaults(handler=cmd_grid)

    p = sub.add_parser("compare", help="McNemar and paired bootstrap of two runs' items")
    p.add_argument("a", help="run folder A")
    p.add_argument("b", help="run folder B")
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling [0]")
    p.add_argument("--json", default=None, help="also write the rows as JSON here")
    p.set_defaults(handler=cmd_compare)

    p = sub.add_parser("breakdown", help="metrics by item field (heuristic, genre, domain, ...)")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--by", type=csv_list, required=True, help="fields, e.g. heuristic,gold")
    p.add_argument("--format", choices=("md", "csv", "json"), default="md")
    p.add_argument("--out", default=None, help="write the table here instead of printing it")
    p.set_defaults(handler=cmd_breakdown)

    p = sub.add_parser("items", help="items with several models' predictions side by side")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--filter", type=csv_list, default=None, help=f"any of {', '.join(FILTERS)}")
    p.add_argument("--sort", choices=SORTS, default="id")
    p.add_argument("--limit", type=int, default=20, help="rows at most [20]")
    p.add_argument("--data-dir", default=None, help="where the tasks' data is [as saved]")
    p.set_defaults(handler=cmd_items)

    p = sub.add_parser("figure", help="accuracy vs shots / size, dynamics across models")
    p.add_argument("kind", choices=("shots", "size", "dynamics"))
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument(
        "--baseline", action="append", help="run folder drawn as a dotted line (repeatable)"
    )
    p.add_argument("--sizes", type=csv_list, default=None, help="MODEL=PARAMETERS,...")
    p.add_argument("--pattern", default=None, help=r"checkpoint name -> number, e.g. step(\d+)")
    p.add_argument("--scale", type=float, default=1.0, help="x per captured number [1]")
    p.add_argument("--positions", default=None, help="JSON file: checkpoint -> x position")
    p.add_argument("--metric", choices=("accuracy", "gold_nll", "js_distance"), default="accuracy")
    p.add_argument("--axis", default="training tokens", help="x axis title")
    p.set_defaults(handler=cmd_figure)
