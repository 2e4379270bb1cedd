"""Commands that read tasks or saved run folders and load no model: ``report`` and
``sci-report`` (``stats`` is added from the table of commands alone, ``tasks`` is
:mod:`nlieval.cli.tasks`).

:func:`add_commands` adds them to the main parser's subcommands; each subparser carries its
handler as ``handler`` (a function of the parsed arguments returning an exit code).
"""

from __future__ import annotations

import argparse
import functools
import sys

from ..ground import render
from ..reports import ReportConfig, report_document
from ..sci import SciReportConfig, sci_report
from .args import add_command, settings_from_args


def _cmd_report(args: argparse.Namespace) -> int:
    cfg = settings_from_args(ReportConfig, args)
    print(render(report_document(cfg), cfg.format))
    return 0


def cmd_sci_report(args: argparse.Namespace) -> int:
    """Scores, per-domain and per-class F1, confusion matrices (and PNGs) of run folders."""

    cfg = settings_from_args(SciReportConfig, args)
    result = sci_report(cfg)
    if result is None:
        print(f"no labelled records in {', '.join(cfg.runs)}", file=sys.stderr)
        return 1
    print(result["text"])
    # In LaTeX, what was written is said in comments: the output stays one pasteable table.
    mark = "% " if cfg.format == "latex" else ""
    if cfg.plot_dir:
        print()
        for path in result["plots"]:
            print(f"{mark}plot: {path}")
    if result["json"] is not None:
        print(f"{mark}written: {result['json']}")
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``report`` and ``sci-report`` (``stats`` prints what its library function returns:
    the table adds it).

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["report", "runs/a", "--no-write"]).write
    False
    """
    command = functools.partial(add_command, sub)
    command(
        "report",
        handler=_cmd_report,
    )
    command(
        "sci-report",
        handler=cmd_sci_report,
    )
