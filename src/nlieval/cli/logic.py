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
import functools
import json
import sys

from ..ground import render
from ..metainference import (
    InferBuildConfig,
    InferReportConfig,
    LogicCheckConfig,
    LogicConcludeConfig,
    LogicTableConfig,
    build_inferred,
    check_relation,
    conclude_target,
    decide_table,
    inferred,
    inferred_consistency,
    logic,
)
from .args import add_command, command_parser, settings_from_args


def _add_logic(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command_parser(sub, "logic")
    lsub = p.add_subparsers(dest="logic_command", required=True)
    command = functools.partial(add_command, lsub)
    command("table", key="logic-table", handler=_cmd_table)
    command(
        "check",
        help="one meta-inference, e.g. 'Eab & Ebc -> Eac'",
        examples=(
            "nlieval logic check 'Eab & Ebc & Ecd & Ede -> Eae'",
            "nlieval logic check 'Eab & Ebc & Ede -> Eae' --frames S4",
        ),
        handler=_cmd_check,
        settings=(LogicCheckConfig,),
    )
    command(
        "conclude",
        help="what input labels entail about a target pair",
        examples=(
            "nlieval logic conclude 'Nab & Ebc' ac",
            "nlieval logic conclude 'Cab' ba --format json",
        ),
        handler=_cmd_conclude,
        settings=(LogicConcludeConfig,),
    )


def _add_infer(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command_parser(sub, "infer")
    isub = p.add_subparsers(dest="infer_command", required=True)
    command = functools.partial(add_command, isub)
    command("build", key="infer-build", handler=_cmd_build, skip=("progress",))
    command("report", key="infer-report", handler=_cmd_report)


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    cfg = settings_from_args(LogicTableConfig, args)
    rows, readings = decide_table(cfg)
    if cfg.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        print(logic.format_table(rows, citations=cfg.citations))
        print("\n" + logic.readings_summary(readings))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    cfg = settings_from_args(LogicCheckConfig, args)
    print(logic.format_check(cfg.relation, check_relation(cfg)))
    return 0


def _cmd_conclude(args: argparse.Namespace) -> int:
    cfg = settings_from_args(LogicConcludeConfig, args)
    found = conclude_target(cfg)
    if cfg.format == "json":
        # A list with one object per line: valid JSON, and one reading per line to read.
        print("[\n" + ",\n".join("  " + json.dumps(c.to_dict()) for c in found) + "\n]")
        return 0
    print(logic.format_conclusions(cfg.inputs, cfg.target, found))
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    got = build_inferred(settings_from_args(InferBuildConfig, args))
    print(
        f"{len(got['made'])} inferred items from {len(got['items'])} items of {got['task']} "
        f"{got['split']}:"
    )
    for pattern, n in got["counts"].items():
        print(f"  {pattern:<15} {n}")
    print(f"\nrun them with: nlieval run --task {got['yaml']} --out RUN_FOLDER")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    cfg = settings_from_args(InferReportConfig, args)
    got = inferred_consistency(cfg)
    if got["coverage"] is not None:
        matched, needed = got["coverage"]
        if matched < needed:
            print(
                f"nlieval: warning: --source-run {cfg.source_run} has records for {matched} of "
                f"the {needed} source items under the run's model; the filtered rows count "
                "only those",
                file=sys.stderr,
            )
    readings = got["readings"]
    if cfg.format == "json":
        frames = {r.name: r.frames for r in readings.values()}
        print(json.dumps([{**row, "frames": frames} for row in got["rows"]], indent=2))
    else:
        print(render(inferred.report_document(got["rows"], readings), cfg.format))
    return 0
