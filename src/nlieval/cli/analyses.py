"""Commands for the analyses: ``dynamics``, ``chaosnli``, ``chaosnli-score``,
``import`` (``chaosnli-import``) and ``plots``.

All of them work from saved run folders or prediction files; none loads a model.
:func:`add_commands` adds them to the main parser's subcommands; each subparser carries its
handler as ``handler`` (a function of the parsed arguments returning an exit code).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Mapping
from typing import Any

from ..analyses import (
    CHAOSNLI_JSON,
    PLOTS,
    ChaosnliConfig,
    ChaosnliScoreConfig,
    DynamicsConfig,
    ImportConfig,
    PlotsConfig,
    chaosnli,
    chaosnli_scores,
    dynamics_of,
    format_dynamics,
    format_import,
    import_predictions,
    score_file,
    write_plots,
)
from ..ground import render
from ..runs import OutputFolder
from .args import add_command, settings_from_args

__all__ = ["CHAOSNLI_JSON", "PLOTS", "add_commands"]


def cmd_dynamics(args: argparse.Namespace) -> int:
    cfg = settings_from_args(DynamicsConfig, args)
    result = dynamics_of(cfg)
    doc = [*format_dynamics(result["rows"]), *([""] if result["written"] else [])]
    doc += [f"plot: {path}" for path in result["written"]]
    doc += list(result["skipped"])
    print(render(doc, cfg.format))
    return 0


def _print_scores(result: Mapping[str, Any], fmt: str = "md", written: str = "") -> None:
    doc = [*chaosnli.format_report(result), *(["", f"written: {written}"] if written else [])]
    print(render(doc, fmt))


def cmd_chaosnli(args: argparse.Namespace) -> int:
    """Scores of the ChaosNLI records of run folders: tables printed, JSON written when
    asked (``--out``, ``--write``)."""

    cfg = settings_from_args(ChaosnliConfig, args)
    found = chaosnli_scores(cfg)
    if found is None:
        print(f"no ChaosNLI records in {', '.join(cfg.runs)}", file=sys.stderr)
        return 1
    result, out = found
    _print_scores(result, cfg.format, "" if out is None else str(out))
    return 0


def cmd_chaosnli_import(args: argparse.Namespace) -> int:
    """Prediction files of models run elsewhere into a run folder, with their scores."""

    config = settings_from_args(ImportConfig, args)
    folder = settings_from_args(OutputFolder, args)
    result = import_predictions(config, folder.out, overwrite=folder.overwrite)
    print(render(format_import(result), "md"))
    print(f"\nwritten: {folder.out}")
    return 0


def cmd_chaosnli_score(args: argparse.Namespace) -> int:
    """Scores of a prediction file in the official ChaosNLI format."""

    cfg = settings_from_args(ChaosnliScoreConfig, args)
    _print_scores(score_file(cfg), cfg.format, cfg.json or "")
    return 0


def cmd_plots(args: argparse.Namespace) -> int:
    """The three figures from saved run folders (a plot without data is skipped, with a note)."""

    for line in write_plots(settings_from_args(PlotsConfig, args)):
        print(line)
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``dynamics``, ``chaosnli``, ``chaosnli-score``, ``import`` and
    ``plots`` to the main subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["plots", "runs/a", "--out", "figs"]).bins
    5
    >>> parser.parse_args(["chaosnli", "r", "--human-js", "chaosnli_snli=0.07"]).human_js
    [('chaosnli_snli', 0.07)]
    """
    command = functools.partial(add_command, sub)
    command(
        "dynamics",
        handler=cmd_dynamics,
    )

    command(
        "chaosnli",
        handler=cmd_chaosnli,
    )

    command(
        "import",
        handler=cmd_chaosnli_import,
        skip=("progress",),
    )

    command(
        "chaosnli-import",
        handler=cmd_chaosnli_import,
        skip=("progress",),
    )

    command(
        "chaosnli-score",
        handler=cmd_chaosnli_score,
    )

    command(
        "plots",
        handler=cmd_plots,
    )
