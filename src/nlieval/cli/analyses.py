"""Commands for the analyses: ``dynamics``, ``chaosnli``, ``chaosnli-score``,
``chaosnli-import`` and ``plots``.

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

from .. import plotting as plots
from ..analyses import chaosnli, imports
from ..analyses.chaosnli import HumanBaseline, format_all_correct, format_bins_table, format_table
from ..analyses.dynamics import follow_run, format_dynamics
from ..analyses.predictions import FORMATS
from ..metrics import summarize
from ..runs import atomic_write, iter_run_records, make_folder
from .args import add_data_dir, positive_int

CHAOSNLI_JSON = "chaosnli.json"
PLOTS = ("accuracy_vs_shots.png", "accuracy_by_entropy.png", "divergence.png")


def cmd_dynamics(args: argparse.Namespace) -> int:
    result = follow_run(
        args.run,
        human=_human(args),
        plot=args.plot,
        entropy_plot=args.entropy_plot,
        bins=args.bins,
        against=args.against,
    )
    print(format_dynamics(result["rows"]))
    if result["written"]:
        print()
    for path in result["written"]:
        print(f"plot: {path}")
    for note in result["skipped"]:
        print(note)
    return 0


def _human(args: argparse.Namespace) -> HumanBaseline:
    return HumanBaseline(args.human_splits, args.human_seed, dict(args.human_js or []))


def _task_value(text: str) -> tuple[str, float]:
    task, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not sep or not task or not number >= 0:
        raise argparse.ArgumentTypeError(f"expected TASK=JS_DISTANCE (>= 0), got {text!r}")
    return task, number


def _write_json(path: Path, payload: Any) -> None:
    # Through the run folder's writers: a link is refused, not written through, and a
    # failed write (a file in the way, a full disk) is one line naming the path.
    make_folder(path.parent)
    atomic_write(path, json.dumps(payload, indent=2, allow_nan=True) + "\n")


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
    result = chaosnli.report(frame, args.bins, args.against, _human(args), args.common_items)
    _print_scores(result["scores"], result["entropy_bins"], result["all_correct"])
    out = Path(args.out or args.runs[0]) / CHAOSNLI_JSON
    _write_json(out, result)
    print(f"\nwritten: {out}")
    return 0


def cmd_chaosnli_import(args: argparse.Namespace) -> int:
    """Prediction files of classifiers into a run folder, with their ChaosNLI scores."""

    config = imports.ImportConfig(
        tuple(args.files),
        args.format,
        args.task,
        args.model,
        args.seed,
        tuple(args.label_order.split(",")) if args.label_order else None,
        args.data_dir,
    )
    result = imports.import_predictions(config, args.out, overwrite=args.overwrite)
    print(imports.format_import(result))
    print(f"\nwritten: {args.out}")
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
    if args.common_items:
        frame = chaosnli.common_items(frame)
    bins = chaosnli.entropy_bins(frame, args.bins)
    print(f"written: {plots.plot_accuracy_by_entropy(bins, out / PLOTS[1], args.against)}")
    scores = chaosnli.score_records(frame, _human(args))
    print(f"written: {plots.plot_divergence(scores, out / PLOTS[2])}")
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


def _add_human(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--human-splits",
        type=positive_int,
        default=10,
        help="random half-splits per item for the human split-half estimate [10]",
    )
    p.add_argument("--human-seed", type=int, default=0, help="seed of the half-splits [0]")
    p.add_argument(
        "--human-js",
        type=_task_value,
        action="append",
        metavar="TASK=VALUE",
        help="a published human JS distance for TASK, shown instead of the estimate",
    )


def _add_against_plot(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--against",
        choices=("both", "original", "majority"),
        default=default,
        help=f"accuracy-by-entropy curves against this label (one curve per system) [{default}]",
    )


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``dynamics``, ``chaosnli``, ``chaosnli-score``, ``chaosnli-import`` and
    ``plots`` to the main subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["plots", "runs/a", "--out", "figs"]).bins
    5
    >>> parser.parse_args(["chaosnli", "r", "--human-js", "chaosnli_snli=0.07"]).human_js
    [('chaosnli_snli', 0.07)]
    """
    p = sub.add_parser(
        "dynamics",
        help="accuracy, gold NLL and ChaosNLI divergences over the checkpoints of a run, "
        "Kendall tau",
    )
    p.add_argument("run", help="run folder made with --checkpoints")
    p.add_argument("--plot", default=None, help="write the curves to this PNG")
    p.add_argument(
        "--entropy-plot",
        default=None,
        help="write accuracy by human-label entropy bin, one curve per checkpoint, to this PNG",
    )
    _add_common(p, against=False)
    _add_against_plot(p, "original")
    _add_human(p)
    p.set_defaults(handler=cmd_dynamics)

    p = sub.add_parser(
        "chaosnli", help="ChaosNLI scores of run folders: accuracies, divergences, entropy bins"
    )
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", default=None, help=f"folder for {CHAOSNLI_JSON} [the first RUN]")
    p.add_argument(
        "--common-items",
        action="store_true",
        help="score every system of a task on the items all of them have",
    )
    _add_common(p)
    _add_human(p)
    p.set_defaults(handler=cmd_chaosnli)

    p = sub.add_parser(
        "chaosnli-import",
        help="prediction files of classifiers (Baan et al. 2022, official ChaosNLI, jsonl) "
        "into a run folder",
    )
    p.add_argument("files", nargs="+", help="prediction files (.json, .jsonl, .gz)")
    p.add_argument("--out", required=True, help="run folder to write (or add to)")
    p.add_argument(
        "--format",
        choices=("auto", *FORMATS),
        default="auto",
        help="file format [auto: Baan et al. file names, .json official, else jsonl]",
    )
    p.add_argument(
        "--task",
        choices=imports.CHAOSNLI_TASKS,
        default=None,
        help="the ChaosNLI set (needed unless the file names say it)",
    )
    p.add_argument("--model", default=None, help="model name (needed for jsonl)")
    p.add_argument("--seed", type=int, default=None, help="seed to record [file name, or 0]")
    p.add_argument(
        "--label-order",
        default=None,
        help="order of a jsonl file's probabilities, e.g. e,c,n [the task's: e,n,c or 1,2]",
    )
    add_data_dir(p)
    p.add_argument("--overwrite", action="store_true", help="start the folder again")
    p.set_defaults(handler=cmd_chaosnli_import)

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
    p.add_argument(
        "--common-items",
        action="store_true",
        help="plot every system of a task on the items all of them have",
    )
    _add_common(p, against=False)
    _add_against_plot(p, "both")
    _add_human(p)
    p.set_defaults(handler=cmd_plots)
