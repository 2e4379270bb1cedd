"""The settings of the analysis commands (``dynamics``, ``chaosnli``, ``chaosnli-score``,
``plots``; ``chaosnli-import`` is :class:`~nlieval.analyses.imports.ImportConfig`) and
what each command does, as one function of its settings.

:class:`EntropyBins` and :class:`HumanSettings` are the settings these commands share,
declared once: the entropy bins, and the human split-half line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import plotting as plots
from ..data import DataDir, task_setting
from ..metrics import METRICS, summarize
from ..runs import (
    NamedRuns,
    RunError,
    RunFolders,
    atomic_write,
    flat,
    iter_run_records,
    make_folder,
    read_named,
)
from ..settings import out_setting, positive_int, setting, table_format
from ..types import Record
from . import chaosnli
from .chaosnli import Against, HumanBaseline
from .dynamics import follow_run

#: The file ``nlieval chaosnli`` writes.
CHAOSNLI_JSON = "chaosnli.json"
#: The files ``nlieval plots`` writes (with the extension of ``--plot-format``).
PLOTS = ("accuracy_vs_shots.png", "accuracy_by_entropy.png", "divergence.png")
#: The formats of ``--plot-format``: vector PDF or SVG, or PNG at 300 dpi.
PLOT_FORMATS = ("png", "pdf", "svg")


def task_value(text: str) -> tuple[str, float]:
    """``--human-js``'s ``TASK=JS_DISTANCE``.

    >>> task_value("chaosnli_snli=0.07")
    ('chaosnli_snli', 0.07)
    >>> task_value("snli")
    Traceback (most recent call last):
    ValueError: expected TASK=JS_DISTANCE (>= 0), got 'snli'
    """
    task, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not sep or not task or not number >= 0:
        raise ValueError(f"expected TASK=JS_DISTANCE (>= 0), got {text!r}")
    return task, number


@dataclass(frozen=True, kw_only=True)
class EntropyBins:
    """How finely the human-label entropy is binned."""

    bins: int = setting(5, help="equal-size bins of human-label entropy", parse=positive_int)


@dataclass(frozen=True, kw_only=True)
class HumanSettings(EntropyBins):
    """The human split-half line of the ChaosNLI tables (:class:`HumanBaseline`).

    >>> HumanSettings(human_js=(("chaosnli_snli", 0.07),)).human().published
    {'chaosnli_snli': 0.07}
    """

    human_splits: int | None = setting(
        None,
        help="estimate the human split-half line from this many random half-splits per "
        "item [exact: the expectation over every split]",
        parse=positive_int,
    )
    human_seed: int = setting(0, help="seed of the random half-splits of --human-splits")
    human_js: tuple[tuple[str, float], ...] | None = setting(
        None,
        help="a published human JS distance for TASK, shown instead of the estimate",
        parse=task_value,
        action="append",
        metavar="TASK=VALUE",
    )

    def human(self) -> HumanBaseline:
        """The baseline these settings ask for."""
        return HumanBaseline(self.human_splits, self.human_seed, dict(self.human_js or []))


_CURVES = "accuracy-by-entropy curves against this label (one curve per system)"
_SUBSET = "label for the all-correct subset [original]; the reference uses majority"


@dataclass(frozen=True)
class DynamicsConfig(HumanSettings, plots.FigureWidth):
    """What ``nlieval dynamics`` is asked (:func:`~nlieval.analyses.dynamics.follow_run`)."""

    run: str = setting(help="run folder made with --checkpoints", positional=True)
    plot: str | None = setting(None, help="write the curves to this .pdf, .svg or .png")
    entropy_plot: str | None = setting(
        None,
        help="write accuracy by human-label entropy bin, one curve per checkpoint, to this "
        ".pdf, .svg or .png",
    )
    against: str = setting("original", help=_CURVES, choices=("both", "original", "majority"))
    format: str = table_format()


def dynamics_of(config: DynamicsConfig, also: Sequence[str] = ()) -> dict[str, Any]:
    """What ``nlieval dynamics`` does (and an experiment's ``dynamics`` output):
    :func:`~nlieval.analyses.dynamics.follow_run` of ``config``'s run with every setting
    of it (human line, plots, bins, curves, width); ``also``: more formats (``"pdf"``)
    each plot is saved in beside its own path, from the one drawing.

    >>> import tempfile  # a run folder made without --checkpoints
    >>> folder = Path(tempfile.mkdtemp()); _ = (folder / "config.json").write_text("{}")
    >>> dynamics_of(DynamicsConfig(run=str(folder)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: ...: not a checkpoint run (made by nlieval run without --checkpoints)
    """

    def paths(path: str | None) -> plots.FigurePaths | None:
        if path is None or not also:
            return path
        return (path, *(str(Path(path).with_suffix(f".{ext}")) for ext in also))

    return follow_run(
        config.run,
        human=config.human(),
        plot=paths(config.plot),
        entropy_plot=paths(config.entropy_plot),
        bins=config.bins,
        against=config.against,
        width=config.inches,
    )


@dataclass(frozen=True)
class ChaosnliConfig(HumanSettings, NamedRuns):
    """What ``nlieval chaosnli`` is asked (see :func:`chaosnli_scores`)."""

    out: str | None = out_setting(
        f"write the scores as {CHAOSNLI_JSON} into this folder [nothing written]", None
    )
    write: bool = setting(False, help=f"write {CHAOSNLI_JSON} into the first RUN folder")
    common_items: bool = setting(
        False, help="score every system of a task on the items all of them have"
    )
    against: Against = setting("original", help=_SUBSET, choices=("original", "majority"))
    format: str = table_format()


@dataclass(frozen=True)
class ChaosnliScoreConfig(DataDir, EntropyBins):
    """What ``nlieval chaosnli-score`` is asked (see :func:`score_file`)."""

    predictions: str = setting(
        help="{model: {uid: {uid, logits|predicted_probabilities, ...}}}", positional=True
    )
    task: str = task_setting(
        help="the ChaosNLI set the predictions are for",
        choices=("chaosnli_snli", "chaosnli_mnli", "chaosnli_alphanli"),
    )
    json: str | None = setting(None, help="also write the scores to this JSON file")
    against: Against = setting("original", help=_SUBSET, choices=("original", "majority"))
    format: str = table_format()


@dataclass(frozen=True)
class PlotsConfig(HumanSettings, RunFolders, plots.FigureWidth):
    """What ``nlieval plots`` is asked (see :func:`write_plots`)."""

    out: str = out_setting("folder for the figures")
    plot_format: str = setting("png", help="format of the figures", choices=PLOT_FORMATS)
    baseline: tuple[str, ...] | None = setting(
        None,
        help="run folder drawn as a reference line per system on accuracy vs shots "
        "(repeat the flag)",
        action="append",
        metavar="RUN",
    )
    common_items: bool = setting(
        False, help="plot every system of a task on the items all of them have"
    )
    against: str = setting("both", help=_CURVES, choices=("both", "original", "majority"))


def write_json(path: Path, payload: Any) -> None:
    """``payload`` as indented JSON at ``path`` (NaN kept), through the run folder's
    writers: a link is refused, not written through, and a failed write (a file in the
    way, a full disk) is one line naming the path.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "a" / "x.json"
    >>> write_json(path, {"n": 1}); path.read_text()
    '{\\n  "n": 1\\n}\\n'
    """
    make_folder(path.parent)
    atomic_write(path, json.dumps(payload, indent=2, allow_nan=True) + "\n", root=path.parent)


def chaosnli_scores(config: ChaosnliConfig) -> tuple[dict[str, Any], Path | None] | None:
    """What ``nlieval chaosnli`` does: :func:`~nlieval.analyses.chaosnli.report` of the
    ChaosNLI records of the run folders, each folder's model a system of its own (two
    folders of one model on one task named by what differs in their ``config.json``, or
    by ``name``: :func:`~nlieval.runs.read_named`), written to ``chaosnli.json`` only when asked:
    in ``out``, or with ``write`` in the first folder (a report leaves its input folders
    as they are); returns the report and the file written (None: none), or None when no
    folder has ChaosNLI records.

    >>> import tempfile  # a run folder without records
    >>> folder = Path(tempfile.mkdtemp()); _ = (folder / "config.json").write_text("{}")
    >>> _ = (folder / "records.jsonl").write_text("")
    >>> print(chaosnli_scores(ChaosnliConfig(runs=(str(folder),))))
    None
    """
    # Each folder scored apart: two folders of one model on one task are two systems.
    named = read_named(config.runs, config.name or (), poolable=False)
    frame = chaosnli.item_frame(flat(named))
    if frame.empty:
        return None
    result = chaosnli.report(
        frame, config.bins, config.against, config.human(), config.common_items
    )
    if config.out is None and not config.write:
        return result, None
    out = Path(config.out or config.runs[0]) / CHAOSNLI_JSON
    write_json(out, result)
    return result, out


def score_file(config: ChaosnliScoreConfig) -> dict[str, Any]:
    """What ``nlieval chaosnli-score`` does: the scores, entropy bins and all-correct
    subsets of an official-format prediction file (no sweep point: ``k`` None, no seeds),
    also written to ``json`` when given."""
    frame = chaosnli.prediction_frame(config.predictions, config.task, config.data_dir)
    rows = chaosnli.score_predictions(frame)
    bins = [{**r, "k": None, "seeds": []} for r in chaosnli.entropy_bins(frame, config.bins)]
    subsets = chaosnli.all_correct_subset(frame, config.against)
    for s in subsets:
        for r in s["rows"]:
            r.update(k=None, seeds=[])
    result = {"scores": rows, "entropy_bins": bins, "all_correct": subsets}
    if config.json:
        write_json(Path(config.json), result)
    return result


def metric_rows(records: Iterable[Record], metric: str) -> list[dict[str, Any]]:
    """The rows that can hold ``metric``: ChaosNLI scores (of the records with human
    counts) for a divergence of the metric table, else the records' summary.

    >>> from nlieval.types import Record
    >>> r = Record("t", "1", "m", 0, 0, ("entailment", "neutral"), (-0.1, -2.0),
    ...            (0.87, 0.13), "neutral", "neutral")
    >>> [row["accuracy"] for row in metric_rows([r], "accuracy")]
    [1.0]
    """
    if metric in METRICS and METRICS[metric].source == "chaosnli":
        return chaosnli.score_records([r for r in records if "human_counts" in r.meta])
    return summarize(records)


def baseline_lines(folder: str | Path, metric: str = "accuracy") -> dict[str, dict[str, float]]:
    """A ``--baseline`` run folder's reference lines at a figure's own ``metric``: one
    line per system (:func:`nlieval.plotting.reference_levels`), task -> level. A folder
    with no finite ``metric`` is refused, not dropped: the figure would lack a line it was
    asked for.

    >>> import tempfile  # a run folder without records
    >>> folder = Path(tempfile.mkdtemp()); _ = (folder / "records.jsonl").write_text("")
    >>> baseline_lines(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: ...: no records with a finite accuracy for a reference line
    """
    records = iter_run_records([folder])
    rows = [r for r in metric_rows(records, metric) if metric in r]
    levels = plots.reference_levels(rows, metric)
    if not levels:
        raise RunError(f"{folder}: no records with a finite {metric} for a reference line")
    return levels


def write_plots(
    config: PlotsConfig,
    palette: Iterable[str] = (),
    held: Sequence[Sequence[Record]] | None = None,
) -> list[str]:
    """What ``nlieval plots`` does: the three figures of :data:`PLOTS` (in
    ``plot_format``) from saved run folders; returns one line per plot, written or
    skipped (a plot without data). A model has the same colour and marker in the three
    (:func:`nlieval.plotting.styles` of every model of the folders, and of ``palette``:
    the names of every figure of a larger report); each ``baseline`` folder is one
    reference line per system on accuracy vs shots. ``held``: the records of each of
    ``config.runs`` as already read.

    >>> import tempfile  # a run folder without records
    >>> folder = Path(tempfile.mkdtemp()); _ = (folder / "config.json").write_text("{}")
    >>> _ = (folder / "records.jsonl").write_text("")
    >>> write_plots(PlotsConfig(runs=(str(folder),), out=str(folder / "figs")))[0]
    'skipped accuracy_vs_shots.png: no scored records'
    """
    # Two folders of one model on one task: two systems, named by what differs.
    records = flat(read_named(config.runs, poolable=False, held=held))
    out = Path(config.out)
    names = [Path(n).with_suffix(f".{config.plot_format}").name for n in PLOTS]
    lines = []
    metrics_rows = summarize(records)
    every = {*palette, *(plots.series_name(r) for r in metrics_rows)}
    if metrics_rows:
        levels: dict[str, dict[str, float]] = {}
        for folder in config.baseline or ():
            levels.update(baseline_lines(folder))
        shots = plots.plot_accuracy_vs_shots(
            metrics_rows, out / names[0], levels, width=config.inches, names=every
        )
        lines.append(f"written: {shots}")
    else:
        lines.append(f"skipped {names[0]}: no scored records")
    frame = chaosnli.item_frame(records)
    if frame.empty:
        lines.append(f"skipped {names[1]} and {names[2]}: no ChaosNLI records in these runs")
        return lines
    if config.common_items:
        frame = chaosnli.common_items(frame)
    bins = chaosnli.entropy_bins(frame, config.bins)
    by_entropy = plots.plot_accuracy_by_entropy(
        bins, out / names[1], config.against, width=config.inches, names=every
    )
    lines.append(f"written: {by_entropy}")
    scores = chaosnli.score_records(frame, config.human())
    divergence = plots.plot_divergence(scores, out / names[2], width=config.inches, names=every)
    lines.append(f"written: {divergence}")
    return lines
