"""Commands across run folders (no model loaded): ``grid`` (the papers' model x benchmark
tables, added from the table of commands alone), ``compare`` (significance of two runs on
the same items), ``breakdown`` (metrics by an item field), ``items`` (items with several
models' predictions side by side) and ``figure`` (accuracy vs shots, vs size, training
dynamics of several models).

Each command's flags are the settings of its configuration class in
:mod:`nlieval.reports`; a command parses them, calls one function there and prints."""

from __future__ import annotations

import argparse
import functools
import json

from ..analyses import comparison_table
from ..commands import settings_of
from ..ground import render
from ..reports import (
    FIGURES,
    BreakdownConfig,
    CompareConfig,
    FigureConfig,
    ItemsConfig,
    breakdown_from,
    compare_report,
    figure_from,
    items_from,
)
from .args import add_command, add_settings, command_parser, settings_from_args, write_or_print


def _runs(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(args.runs)


def cmd_compare(args: argparse.Namespace) -> int:
    """Print McNemar and bootstrap intervals per shared sweep point."""
    cfg = settings_from_args(CompareConfig, args, a=args.a, b=args.b)
    rows = compare_report(cfg)
    print(render(comparison_table(rows), cfg.format))
    if cfg.json:
        write_or_print(json.dumps(rows, indent=2), cfg.json)
    return 0


def cmd_breakdown(args: argparse.Namespace) -> int:
    """Print metrics by the named fields."""
    cfg = settings_from_args(BreakdownConfig, args, runs=_runs(args))
    write_or_print(breakdown_from(cfg), cfg.out)
    return 0


def cmd_items(args: argparse.Namespace) -> int:
    """Print the items of the folders side by side."""
    cfg = settings_from_args(ItemsConfig, args, runs=_runs(args))
    write_or_print(items_from(cfg), cfg.out)
    return 0


def cmd_figure(args: argparse.Namespace) -> int:
    """Write one figure across the folders' models."""
    cfg = settings_from_args(
        FigureConfig, args, kind=args.kind, runs=_runs(args), baseline=tuple(args.baseline or ())
    )
    print(f"written: {figure_from(cfg)}")
    return 0


def _kinds_help() -> str:
    # Each kind of the figure table, with the flags it reads.
    said = []
    for name, kind in FIGURES.items():
        flags = f" ({', '.join('--' + o for o in kind.options)})" if kind.options else ""
        said.append(f"{name}: {kind.help}{flags}")
    return "; ".join(said)


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``compare``, ``breakdown``, ``items`` and ``figure`` (``grid`` prints what its
    library function returns: the table adds it).

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["breakdown", "a", "b", "--by", "genre"])
    >>> args.runs, args.by
    (['a', 'b'], ('genre',))
    """
    command = functools.partial(add_command, sub)
    p = command_parser(sub, "compare")
    # Positionals: the settings of nlieval.settings are flags only.
    p.add_argument("a", help="run folder A")
    p.add_argument("b", help="run folder B")
    for cls in settings_of("compare"):
        add_settings(p, cls)
    p.set_defaults(handler=cmd_compare)

    command(
        "breakdown",
        handler=cmd_breakdown,
    )

    command(
        "items",
        handler=cmd_items,
    )

    p = command_parser(sub, "figure")
    # A positional with choices: the settings of nlieval.settings are flags only.
    p.add_argument("kind", choices=list(FIGURES), help=_kinds_help())
    for cls in settings_of("figure"):
        add_settings(p, cls)
    # Repeatable (action "append"), which a setting's flag cannot be.
    p.add_argument(
        "--baseline",
        action="append",
        help="run folder drawn as reference lines, one per system at the figure's metric "
        "(a system with several k at its largest; repeatable)",
    )
    p.set_defaults(handler=cmd_figure)
