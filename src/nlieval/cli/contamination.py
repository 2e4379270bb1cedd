"""The ``nlieval contamination`` command: per-item contamination scores, and EPG for a run.

::

    nlieval contamination --corpus web/ books.jsonl.gz --task snli --n 8 --out snli.cont.jsonl
    nlieval contamination --scores snli.cont.jsonl --run runs/demo --plot epg.png

Writes the per-item scores (JSONL: task, item_id, score, n_tokens, n_contaminated_tokens)
and ``<out stem>.summary.json`` (settings, per-task summary, corpus read, throughput);
with ``--run``, prints the EPG table over the thresholds (``--plot``: a PNG of EPG
against the % of items marked contaminated).
"""

from __future__ import annotations

import argparse

from .. import contamination as cont
from ..ground import render
from .args import add_command, settings_from_args


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``contamination`` subcommand to the main parser's subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["contamination", "--task", "smoke", "--corpus", "c.txt"]).n
    8
    """
    add_command(
        sub,
        "contamination",
        description=__doc__.splitlines()[0] if __doc__ else None,
        handler=run_contamination,
    )


def run_contamination(args: argparse.Namespace) -> int:
    """Handler of ``nlieval contamination`` (see the module docstring)."""

    got = cont.contamination_report(settings_from_args(cont.ContaminationConfig, args))
    if "scan" in got:
        s = got["scan"]
        print(
            f"corpus: {s['shards']} shards, {s['bytes'] / 1e6:.1f} MB, {s['docs']} docs, "
            f"{s['tokens']} tokens in {s['seconds']:.1f} s ({s['mb_per_s']:.1f} MB/s); "
            f"{s['bad_lines']} bad jsonl lines"
        )
        print(f"scores: {got['out']}\nsummary: {got['summary']}")
    print(cont.format_summary(got["scores"]))
    if "epg" not in got:
        return 0
    print()
    print(render(cont.format_epg(got["epg"]), "md"))
    if "plot" in got:
        print(f"\nplot: {got['plot']}")
    return 0


__all__ = ["add_commands", "run_contamination"]
