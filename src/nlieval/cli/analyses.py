"""Commands for the analyses: ``chaosnli``, ``chaosnli-score`` and ``plots``.

All of them work from saved run folders or prediction files; none loads a model.
:func:`add_commands` adds them to the main parser's subcommands; each subparser carries its
handler as ``handler`` (a function of the parsed arguments returning an exit code).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..analyses import chaosnli, plots
from ..analyses.chaosnli import format_all_correct, format_bins_table, format_table
from ..analyses.dynamics import checkpoint_order, dynamics, format_dynamics, plot_dynamics
from ..metrics import summarize
from ..runs import RunFolder, iter_run_records
from .args import add_data_dir, positive_int

CHAOSNLI_JSON = "chaosnli.json"
PLOTS = ("accuracy_vs_shots.png", "accuracy_by_entropy.png", "divergence.png")


def cmd_dynamics(args: argparse.Namespace) -> int:
    rows = dynamics(RunFolder(args.run).iter_records(), checkpoint_order(args.run))
    print(format_dynamics(rows))
    if args.plot:
        print(f"\nplot: {plot_dynamics(rows, args.plot)}")
    return 0


def _write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, allow_nan=True) + "\n", encoding="utf-8")


def _print_scores(rows: Sequence[Any], bins: Sequence[Any], subsets: Sequence[Any]) -> None:

    print(format_table(rows))
    print("\nAccuracy by human-label entropy (quantile bins):\n")
    print(format_bins_table(bins))
    print("\nItems every compared system got right:\n")
    print(format_all_correct(subsets))


def cmd_chaosnli(args: argparse.Namespace) -> int:
    """Scores of the ChaosNLI records of run folders: tables printed, JSON written."""

    frame = chaosnli.item_frame(iter_run_records(args.runs))
    if frame.empty:
        print(f"no ChaosNLI records in {', '.join(args.runs)}", file=sys.stderr)
        return 1
    rows = chaosnli.score_records(frame)
    bins = chaosnli.entropy_bins(frame, args.bins)
    subsets = chaosnli.all_correct_subset(frame, args.against)
    _print_scores(rows, bins, subsets)
    out = Path(args.out or args.runs[0]) / CHAOSNLI_JSON
    _write_json(out, {"scores": rows, "entropy_bins": bins, "all_correct": subsets})
    print(f"\nwritten: {out}")
    return 0


def cmd_chaosnli_score(args: argparse.Namespace) -> int:
    """Scores of a prediction file in the official ChaosNLI format."""

    frame = chaosnli.prediction_frame(args.predictions, args.task, args.data_dir)
    rows = chaosnli.score_predictions(frame)
    # Published predictions have no sweep point: show no k.
    bins = [{**r, "k": None, "seeds": []} for r in chaosnli.entropy_bins(frame, args.bins)]
    subsets = chaosnli.all_correct_subset(frame, args.against)
    for s in subsets:
        for r in s["rows"]:
            r.update(k=None, seeds=[])
    _print_scores(rows, bins, subsets)
    if args.json:
        _write_json(Path(args.json), {"scores": rows, "entropy_bins": bins, "all_correct": subsets})
        print(f"\nwritten: {args.json}")
    return 0


def cmd_plots(args: argparse.Namespace) -> int:
    """The three PNGs from saved run folders (a plot without data is skipped, with a note)."""

    records = list(iter_run_records(args.runs))
    out = Path(args.out)
    metrics_rows = summarize(records)
    if metrics_rows:
        print(f"written: {plots.plot_accuracy_vs_shots(metrics_rows, out / PLOTS[0])}")
    else:
        print(f"skipped {PLOTS[0]}: no scored records")
    frame = chaosnli.item_frame(records)
    if frame.empty:
        print(f"skipped {PLOTS[1]} and {PLOTS[2]}: no ChaosNLI records in these runs")
        return 0
    bins = chaosnli.entropy_bins(frame, args.bins)
    print(f"written: {plots.plot_accuracy_by_entropy(bins, out / PLOTS[1])}")
    print(f"written: {plots.plot_divergence(chaosnli.score_records(frame), out / PLOTS[2])}")
    return 0


def _add_common(p: argparse.ArgumentParser, against: bool = True) -> None:
    p.add_argument(
        "--bins", type=positive_int, default=5, help="equal-size bins of human-label entropy [5]"
    )
    if against:
        p.add_argument(
            "--against",
            choices=("original", "majority"),
            default="original",
            help="label for the all-correct subset [original]; the reference uses majority",
        )


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dynamics", help="accuracy and gold NLL over the checkpoints of a run, Kendall tau"
    )
    p.add_argument("run", help="run folder made with --checkpoints")
    p.add_argument("--plot", default=None, help="write the curves to this PNG")
    p.set_defaults(handler=cmd_dynamics)
    """Add ``chaosnli``, ``chaosnli-score`` and ``plots`` to the main subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["plots", "runs/a", "--out", "figs"]).bins
    5
    """
    p = sub.add_parser(
        "chaosnli", help="ChaosNLI scores of run folders: accuracies, divergences, entropy bins"
    )
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", default=None, help=f"folder for {CHAOSNLI_JSON} [the first RUN]")
    _add_common(p)
    p.set_defaults(handler=cmd_chaosnli)

    p = sub.add_parser(
        "chaosnli-score", help="score a prediction file in the official ChaosNLI format"
    )
    p.add_argument("predictions", help="{model: {uid: {uid, logits|predicted_probabilities, ...}}}")
    p.add_argument(
        "--task",
        required=True,
        choices=("chaosnli_snli", "chaosnli_mnli", "chaosnli_alphanli"),
        help="the ChaosNLI set the predictions are for",
    )
    add_data_dir(p)
    p.add_argument("--json", default=None, help="also write the scores to this JSON file")
    _add_common(p)
    p.set_defaults(handler=cmd_chaosnli_score)

    p = sub.add_parser("plots", help="PNG plots from saved run folders (no model loaded)")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", required=True, help="folder for the PNG files")
    _add_common(p, against=False)
    p.set_defaults(handler=cmd_plots)
