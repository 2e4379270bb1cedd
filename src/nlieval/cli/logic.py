"""The ``logic`` and ``infer`` commands (meta-inferential consistency, METHODS.md section 5).

``nlieval logic table``          every relation of ``RELATIONS`` (metainference.logic)
                                 under every reading, decided now (``--format json`` for a list)

Wherever readings are decided, ``--frames K|KT|S4|S5`` decides every reading over that
frame class (default: each reading's own, K for the built-in ones); every output says
which class each reading was decided over.
``nlieval logic check REL``      one meta-inference, with a counter-model where it fails
``nlieval logic conclude IN T``  the labels each reading allows for a target pair, given
                                 input labels (``--format json`` for a list)
``nlieval infer build``          inferred items from a task, as a task folder for ``run``
``nlieval infer report RUN``     the consistency report of a run on inferred items

Each leaf parser sets ``handler``; the main CLI calls ``args.handler(args)``.
"""

from __future__ import annotations

import argparse
import json
import sys

from .. import data
from ..metainference import logic
from ..metainference.inferred import (
    PATTERNS,
    build,
    consistency_report,
    format_report,
    read_task,
    source_coverage,
    write_task,
)
from ..runs import iter_run_records
from ..types import Item
from .args import add_data_dir


def _readings_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reading",
        dest="readings",
        action="extend",
        nargs="+",
        default=[],
        metavar="FILE",
        help="YAML file of a reading (name, E, C, N, optional description and frames); added "
        "to MC, SC, EI, or replacing the one of the same name",
    )
    p.add_argument(
        "--frames",
        choices=tuple(logic.FRAMES),
        default=None,
        help="decide every reading over this frame class: K (any relation), KT (reflexive), "
        "S4 (reflexive, transitive), S5 (equivalence) [each reading's own; K for MC, SC, EI]",
    )


def _add_logic(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "logic", help="decide meta-inferences of NLI labels in modal logic K (or KT, S4, S5)"
    )
    lsub = p.add_subparsers(dest="logic_command", required=True)
    t = lsub.add_parser("table", help="every built-in relation under every reading")
    _readings_arg(t)
    t.add_argument("--format", choices=("text", "json"), default="text")
    t.add_argument(
        "--no-formulas",
        action="store_true",
        help="leave out the short equivalent formula of each contingent cell (found by "
        "search, about 10 s)",
    )
    t.set_defaults(handler=_cmd_table)
    c = lsub.add_parser("check", help="one meta-inference, e.g. 'Eab & Ebc -> Eac'")
    c.add_argument("relation", help="premises -> conclusion over label atoms (Eab, ~Cba, ...)")
    _readings_arg(c)
    c.set_defaults(handler=_cmd_check)
    s = lsub.add_parser("conclude", help="what input labels entail about a target pair")
    s.add_argument("inputs", help="input label atoms, e.g. 'Eab & Cac'")
    s.add_argument("target", help="the target pair's two sentence variables, e.g. bc")
    _readings_arg(s)
    s.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: a list of {reading, inferred, allowed} objects, one per reading [text]",
    )
    s.set_defaults(handler=_cmd_conclude)


def _add_infer(sub: argparse._SubParsersAction) -> None:

    p = sub.add_parser("infer", help="inferred test items and their consistency report")
    isub = p.add_subparsers(dest="infer_command", required=True)
    b = isub.add_parser("build", help="build inferred items from a labelled NLI task")
    b.add_argument("--task", required=True, help="task name or task YAML (labels E/N/C)")
    add_data_dir(b)
    b.add_argument("--split", default=None, help="split of the task (default: the task's)")
    b.add_argument("--limit", type=int, default=None, help="use the first N items only")
    b.add_argument(
        "--generated", default=None, help="task of generated items (b, c) for the chain patterns"
    )
    b.add_argument(
        "--patterns",
        type=lambda text: tuple(x.strip() for x in text.split(",") if x.strip()),
        default=PATTERNS,
        help=f"comma-separated patterns [{','.join(PATTERNS)}]",
    )
    b.add_argument("--max-per-pattern", type=int, default=None, help="seeded sample per pattern")
    b.add_argument("--seed", type=int, default=0, help="seed of the sample [0]")
    b.add_argument("--name", default="inferred", help="task name of the items [inferred]")
    b.add_argument("--skip-bad", action="store_true", help="skip malformed data lines (counted)")
    b.add_argument("--out", required=True, help="folder for items.jsonl and task.yaml")
    b.add_argument("--overwrite", action="store_true", help="replace the items --out holds")
    b.set_defaults(handler=_cmd_build)
    r = isub.add_parser("report", help="consistency of a run's predictions on inferred items")
    r.add_argument("run", help="run folder of `nlieval run --task ITEMS/task.yaml`")
    r.add_argument("--items", required=True, help="folder written by `infer build`")
    r.add_argument("--source-run", default=None, help="run on the source items (for filtering)")
    _readings_arg(r)
    r.add_argument("--format", choices=("md", "json"), default="md")
    r.set_defaults(handler=_cmd_report)


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``logic`` and ``infer`` to the main parser's subcommands.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["logic", "table", "--format", "json"]).handler.__name__
    '_cmd_table'
    """
    _add_logic(sub)
    _add_infer(sub)


# --------------------------------------------------------------------------- handlers


def _cmd_table(args: argparse.Namespace) -> int:
    readings = logic.merge_readings(args.readings, frames=args.frames)
    rows = logic.table(readings, formulas=not args.no_formulas)
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        print(logic.format_table(rows))
        print("\n" + logic.readings_summary(readings))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    readings = logic.merge_readings(args.readings, frames=args.frames)
    print(logic.format_check(args.relation, logic.check(args.relation, readings)))
    return 0


def _cmd_conclude(args: argparse.Namespace) -> int:
    readings = logic.merge_readings(args.readings, frames=args.frames)
    found = logic.conclusions(args.inputs, args.target, readings)
    if args.format == "json":
        # A list with one object per line: valid JSON, and one reading per line to read.
        print("[\n" + ",\n".join("  " + json.dumps(c.to_dict()) for c in found) + "\n]")
        return 0
    print(logic.format_conclusions(args.inputs, args.target, found))
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from collections import Counter

    ds = data.load_task(args.task, args.data_dir, args.split, skip_bad=args.skip_bad)
    items = ds.items[: args.limit] if args.limit is not None else ds.items
    generated: tuple[Item, ...] = ()
    if args.generated:
        generated = data.load_task(args.generated, args.data_dir, skip_bad=args.skip_bad).items
    made = build(items, generated, args.patterns, args.max_per_pattern, args.seed)
    yaml_path = write_task(made, args.out, name=args.name, overwrite=args.overwrite)
    counts = Counter(it.meta["pattern"] for it in made)
    print(f"{len(made)} inferred items from {len(items)} items of {ds.task} {ds.split}:")
    for pattern, n in counts.items():
        print(f"  {pattern:<15} {n}")
    print(f"\nrun them with: nlieval run --task {yaml_path} --out RUN_FOLDER")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:

    items = read_task(args.items)
    records = list(iter_run_records([args.run]))
    sources = list(iter_run_records([args.source_run])) if args.source_run else None
    readings = logic.merge_readings(args.readings, frames=args.frames)
    try:
        rows = consistency_report(records, items, sources, readings)
    except ValueError as err:  # an item's provenance is missing: name the file too
        raise ValueError(f"{args.items}: {err}") from None
    if sources is not None:
        matched, needed = source_coverage(items, sources)
        if matched < needed:
            print(
                f"nlieval: warning: --source-run {args.source_run} has records for {matched} of "
                f"the {needed} source items; the filtered rows count only those",
                file=sys.stderr,
            )
    if args.format == "json":
        frames = {r.name: r.frames for r in readings.values()}
        print(json.dumps([{**row, "frames": frames} for row in rows], indent=2))
    else:
        print(format_report(rows), end="")
        print("\n" + logic.frames_note(readings))
    return 0
