"""Plots from saved results, drawn with the helpers of :mod:`nlieval.plotting.canvas`
(matplotlib's object API on an Agg canvas: no display, no pyplot state).

Each function takes rows as returned by :func:`nlieval.metrics.summarize`,
:mod:`nlieval.analyses.chaosnli` or :func:`nlieval.analyses.dynamics.dynamics`, writes one
figure (PDF, SVG or PNG by the extension of its path: :func:`~.canvas.save`) and returns
its path. Every function draws under the package style (:func:`~.canvas.styled`), is
``width`` inches wide (the text width by default: :func:`~.canvas.paper_width`), and takes
``names``: the series names of every figure of the call, so that a model keeps its colour
and marker in each (:func:`~.canvas.styles`).

Reference lines are the quantity of their axis: the random baseline 1/K on an accuracy
axis (labelled so: :func:`chance_line`), the
uniform guess's gold NLL (ln of the number of options) on an NLL axis, the uniform and human
JS distances on a JS axis, and each reference system at the axis' metric
(:func:`reference_levels`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..metrics import METRICS, chance_label
from .canvas import (
    FigurePaths,
    display_name,
    grid,
    legend,
    panels,
    save,
    series_name,
    short_names,
    std_note,
    styled,
    styles,
)
from .canvas import palette as canvas_palette

Row = Mapping[str, Any]
ACC_STYLES = (
    ("acc_original", "-", "o", "original label"),
    ("acc_majority", "--", "s", "majority label"),
)
DIVERGENCE_PANELS = (
    ("js_distance", "JS distance"),
    ("js_divergence", "JS divergence"),
    ("kl", "KL(human ‖ model)"),
)


#: Colours and dash patterns of reference lines (darker than the series' cycle, so they
#: read as references; the dash tells two apart in grey print).
BASELINE_COLORS = ("black", "dimgrey", "saddlebrown", "darkslateblue")
BASELINE_DASHES = (":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))


def reference_levels(
    rows: Sequence[Row], metric: str = "accuracy", name: str | None = None
) -> dict[str, dict[str, float]]:
    """The reference lines of a baseline run folder's rows: one line per system (model
    and checkpoint), named by it (or ``name`` before it), task -> its ``metric``. A
    system scored at several k is drawn at its largest k (a fixed rule, not the best k
    per task, which would pick on the test items), and any k but 0 is stated in its name.

    >>> rows = [{"model": "org/roberta", "task": "snli", "k": 0, "js_distance": 0.25},
    ...         {"model": "lm", "task": "snli", "k": 0, "js_distance": 0.40},
    ...         {"model": "lm", "task": "snli", "k": 4, "js_distance": 0.30}]
    >>> reference_levels(rows, "js_distance")
    {'lm k=4 (largest k)': {'snli': 0.3}, 'roberta': {'snli': 0.25}}
    """
    systems: dict[str, list[Row]] = {}
    for r in rows:
        # A system without the metric (gold NLL of label-only imports) draws no line.
        if r.get(metric) is not None and math.isfinite(float(r[metric])):
            systems.setdefault(series_name(r), []).append(r)
    out: dict[str, dict[str, float]] = {}
    for system, sys_rows in sorted(systems.items()):
        ks = sorted({int(r["k"]) for r in sys_rows})
        label = system
        if len(ks) > 1:
            label += f" k={ks[-1]} (largest k)"
        elif ks[-1] != 0:
            label += f" k={ks[-1]}"
        if name:
            label = f"{name}: {label}"
        out[label] = {str(r["task"]): float(r[metric]) for r in sys_rows if int(r["k"]) == ks[-1]}
    return out


def _reference_lines(ax: Any, task: str, lines: Mapping[str, Mapping[str, float]] | None) -> None:
    # Each reference (a baseline system, a human estimate) at its level for the task.
    for i, (name, levels) in enumerate(sorted((lines or {}).items())):
        if task in levels:
            ax.axhline(levels[task], ls=BASELINE_DASHES[i % 4], lw=1.2,
                       color=BASELINE_COLORS[i % 4], label=name, zorder=0)  # fmt: skip


def _has_spread(rows: Iterable[Row], metric: str) -> bool:
    # Error bars are explained where some are drawn (std over more than one seed).
    return any(float(r.get(f"{metric}_std") or 0.0) > 0 for r in rows)


def _palette(names: Iterable[str] | None, rows: Iterable[Row]) -> dict[str, dict[str, Any]]:
    # The call's names when given (every figure of a call the same styles), else this
    # figure's own.
    return canvas_palette(names, (series_name(r) for r in rows))


def _by(rows: Iterable[Row], key: str) -> dict[Any, list[Row]]:
    out: dict[Any, list[Row]] = {}
    for r in rows:
        out.setdefault(r[key], []).append(r)
    return out


def _series(rows: Iterable[Row], with_k: bool = False) -> list[tuple[str, list[Row]]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(series_name(r, with_k), []).append(r)
    return sorted(out.items())


@styled
def plot_accuracy_vs_shots(
    metrics_rows: Sequence[Row],
    path: FigurePaths,
    baselines: Mapping[str, Mapping[str, float]] | None = None,
    *,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Path:
    """Accuracy (mean ± std over seeds) against the number of shots, one panel per task,
    one line per model (and checkpoint), with the task's chance level dashed and each of
    ``baselines`` (name -> task -> accuracy, e.g. a fine-tuned classifier's run: see
    :func:`reference_levels`) as a dotted line in the panels of its tasks.

    >>> import tempfile
    >>> from matplotlib.image import imread
    >>> from nlieval.metrics import summarize
    >>> from nlieval.types import Record
    >>> NLI = ("entailment", "neutral", "contradiction")
    >>> records = [Record("snli", str(i), "org/model-a", k, 0, NLI, (0.0,) * 3, (0.6, 0.3, 0.1),
    ...                   "entailment", NLI[i % 2]) for i in range(10) for k in (0, 2)]
    >>> path = plot_accuracy_vs_shots(summarize(records), Path(tempfile.mkdtemp()) / "acc.png")
    >>> path.name, imread(path).shape[1]  # the text width, 6.5 in, at 300 dpi
    ('acc.png', 1950)
    """
    if not metrics_rows:
        raise ValueError("no metrics rows to plot")
    tasks = _by(metrics_rows, "task")
    palette = _palette(names, metrics_rows)
    fig = grid(len(tasks), width=width)
    axes = panels(fig, len(tasks))
    for ax, (task, rows) in zip(axes, sorted(tasks.items()), strict=True):
        for name, series in _series(rows):
            series = sorted(series, key=lambda r: r["k"])
            ax.errorbar(
                [r["k"] for r in series],
                [r["accuracy"] for r in series],
                yerr=[r.get("accuracy_std", 0.0) for r in series],
                label=name,
                **palette[name],
            )
        chance_line(ax, rows[0])
        _reference_lines(ax, str(task), baselines)
        ax.set_xticks(sorted({int(r["k"]) for r in rows}))
        ax.set(title=str(task), xlabel="shots (k)", ylabel="accuracy", ylim=(0, 1))
    legend(fig, axes, [std_note()] if _has_spread(metrics_rows, "accuracy") else [])
    return save(fig, path)


def _k_shades(series: Iterable[tuple[str, int]]) -> dict[str, float]:
    """How far toward white each ``<name> k=<k>`` series' colour is mixed: 0 for a
    model's largest k, lighter for its smaller ones, so that a model keeps its hue and
    marker and its k still differ.

    >>> _k_shades([("m", 0), ("m", 4), ("n", 0)])
    {'m k=4': 0.0, 'm k=0': 0.6, 'n k=0': 0.0}
    """
    ks: dict[str, set[int]] = {}
    for name, k in series:
        ks.setdefault(name, set()).add(int(k))
    out = {}
    for name, values in sorted(ks.items()):
        ordered = sorted(values, reverse=True)
        for i, k in enumerate(ordered):
            out[f"{name} k={k}"] = 0.6 * i / max(1, len(ordered) - 1)
    return out


def _shade(color: str, amount: float) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def _bin_labels(rows: Sequence[Row]) -> dict[int, str]:
    # A bin's entropy range and its items (the largest n of the systems in it: they
    # differ only where systems scored different items).
    out: dict[int, str] = {}
    for b in sorted({int(r["bin"]) for r in rows}):
        in_bin = [r for r in rows if int(r["bin"]) == b]
        n = max(int(r.get("n", 0)) for r in in_bin)
        # On three lines, so that five bins fit a panel of a third of the text width.
        out[b] = f"{in_bin[0]['lo']:.2f}–\n{in_bin[0]['hi']:.2f}\nn={n}"
    return out


@styled
def plot_accuracy_by_entropy(
    bin_rows: Sequence[Row],
    path: FigurePaths,
    against: str = "both",
    *,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Path:
    """Accuracy per entropy bin of the human labels (± std over seeds), one panel per
    task, one colour and marker per model (and checkpoint), its smaller k lighter; solid
    against the original label, dashed against the majority label. ``against``
    "original" or "majority" draws only that one: one curve per model and checkpoint,
    so that many fit on one figure. Each bin's tick gives its entropy range and items;
    a band around each (solid) curve is the Wilson interval of its accuracy over the
    bin's items (``*_low`` / ``*_high`` of :func:`nlieval.analyses.chaosnli.entropy_bins`),
    said in the legend.

    >>> import tempfile
    >>> from matplotlib.image import imread
    >>> from nlieval.analyses.chaosnli import entropy_bins
    >>> from nlieval.types import Record
    >>> NLI = ("entailment", "neutral", "contradiction")
    >>> def rec(i):  # item i: human votes from unanimous to split, the model says entailment
    ...     meta = {"human_counts": [90 - 8 * i, 8 * i, 10], "majority_label": NLI[int(i > 5)]}
    ...     return Record("chaosnli_snli", str(i), "m", 0, 0, NLI, (0.0,) * 3, (0.6, 0.3, 0.1),
    ...                   "entailment", NLI[i % 2], meta=meta)
    >>> bins = entropy_bins([rec(i) for i in range(10)], 3)
    >>> path = plot_accuracy_by_entropy(bins, Path(tempfile.mkdtemp()) / "bins.png", width=3.3)
    >>> path.name, imread(path).shape[1]  # a column, 3.3 in, at 300 dpi
    ('bins.png', 990)
    """
    if not bin_rows:
        raise ValueError("no entropy-bin rows to plot")
    if against not in ("both", "original", "majority"):
        raise ValueError(f"against must be both, original or majority, not {against!r}")
    from matplotlib.lines import Line2D

    styles_used = [s for s in ACC_STYLES if against == "both" or s[0] == f"acc_{against}"]
    tasks = _by(bin_rows, "task")
    palette = _palette(names, bin_rows)
    fig = grid(len(tasks), size=(5.0, 3.6), width=width)
    axes = panels(fig, len(tasks))
    shades = _k_shades((series_name(r), r["k"]) for r in bin_rows)
    for ax, (task, rows) in zip(axes, sorted(tasks.items()), strict=True):
        for label, series in _series(rows, with_k=True):
            series = sorted(series, key=lambda r: r["bin"])
            style: dict[str, Any] = {**palette[series_name(series[0])]}
            style["color"] = _shade(style["color"], shades[label])
            for metric, ls, _, _ in styles_used:
                ax.errorbar(
                    [r["bin"] for r in series],
                    [r[metric] for r in series],
                    yerr=[r.get(f"{metric}_std", 0.0) for r in series],
                    ls=ls,
                    # The colour and marker name the series; the line style (proxy
                    # below) the label it is scored against.
                    label=label if metric == styles_used[0][0] else "_nolegend_",
                    **style,
                )
                # One band per curve pair: four would hide each other (the table has both).
                banded = metric == styles_used[0][0]
                if banded and all(r.get(f"{metric}_low") is not None for r in series):
                    ax.fill_between(
                        [r["bin"] for r in series],
                        [r[f"{metric}_low"] for r in series],
                        [r[f"{metric}_high"] for r in series],
                        color=style["color"],
                        alpha=0.12,
                        lw=0,
                    )
        ticks = _bin_labels(rows)
        ax.set_xticks(sorted(ticks), [ticks[b] for b in sorted(ticks)])
        # Short enough for a third of the text width; n is said in the legend.
        ax.set(title=str(task), xlabel="human label entropy (bits)", ylabel="accuracy")
        ax.set_ylim(0, 1)
    extra: list[Any] = [Line2D([], [], color="black", ls=ls, label=f"against the {lab}")
                        for _, ls, _, lab in styles_used]  # fmt: skip
    extra.append(Line2D([], [], ls="none", label="n: items in the entropy bin"))
    named = {r["acc_interval"] for r in bin_rows if r.get("acc_interval")}
    if named:
        from matplotlib.patches import Patch

        of = "of the solid curve" if len(styles_used) > 1 else "over the bin's items"
        text = f"band: {' / '.join(sorted(named))} interval {of}"
        extra.append(Patch(color="grey", alpha=0.25, label=text))
    if any(_has_spread(bin_rows, m) for m, *_ in styles_used):
        extra.append(std_note())
    legend(fig, axes, extra)
    return save(fig, path)


@styled
def plot_divergence(
    rows: Sequence[Row],
    path: FigurePaths,
    *,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Path:
    """JS distance, JS divergence and KL(human || model) per model (bars, ± std over
    seeds), one column per task. Each bar carries the baselines on its own items (rows
    may cover different items): the uniform distribution (grey dash) and the human line
    (black diamond: the split-half estimate, or a published value; none for KL).

    >>> import tempfile
    >>> from matplotlib.image import imread
    >>> from nlieval.analyses.chaosnli import score_records
    >>> from nlieval.types import Record
    >>> NLI = ("entailment", "neutral", "contradiction")
    >>> def rec(i):  # item i: human votes from unanimous to split, the model says entailment
    ...     meta = {"human_counts": [90 - 8 * i, 8 * i, 10], "majority_label": NLI[int(i > 5)]}
    ...     return Record("chaosnli_snli", str(i), "m", 0, 0, NLI, (0.0,) * 3, (0.6, 0.3, 0.1),
    ...                   "entailment", NLI[i % 2], meta=meta)
    >>> scores = score_records([rec(i) for i in range(10)])
    >>> path = plot_divergence(scores, Path(tempfile.mkdtemp()) / "div.png")
    >>> path.name, imread(path).shape[1]  # three panels one above the other, 6.5 in wide
    ('div.png', 1950)
    """
    if not rows:
        raise ValueError("no ChaosNLI rows to plot")
    tasks = sorted(_by(rows, "task").items())
    widest = max(len(task_rows) for _, task_rows in tasks)
    palette = _palette(names, rows)
    fig = grid(len(tasks), len(DIVERGENCE_PANELS), size=(4.5, 2.4), width=width)
    cells = fig.subplots(len(DIVERGENCE_PANELS), len(tasks), squeeze=False, sharex="col")
    for col, (task, task_rows) in enumerate(tasks):
        labels = [series_name(r, with_k=True) for r in task_rows]
        for (metric, title), ax in zip(DIVERGENCE_PANELS, cells[:, col], strict=True):
            values = [r[metric] for r in task_rows]
            errors = [r.get(metric + "_std", 0.0) for r in task_rows]
            bar_colors = [palette[series_name(r)]["color"] for r in task_rows]
            # No error bars from one seed: a std of 0 would still draw its caps.
            spread = any(float(e or 0.0) > 0 for e in errors)
            ax.bar(range(len(values)), values, yerr=errors if spread else None, color=bar_colors)
            xs = range(len(values))
            uniform = [r["uniform"][metric] for r in task_rows]
            ax.scatter(xs, uniform, marker="_", s=300, color="grey", zorder=3,
                       label="uniform distribution")  # fmt: skip
            human = [
                (x, v)
                for x, r in enumerate(task_rows)
                if (v := (r.get("human") or {}).get(metric)) is not None and math.isfinite(v)
            ]
            if human:
                label = str(task_rows[0]["human"]["label"])
                ax.scatter([x for x, _ in human], [v for _, v in human], marker="D", s=12,
                           color="black", zorder=4, label=label)  # fmt: skip
            heights = [*uniform, *(v for _, v in human)]
            top = max([*heights, *(v + e for v, e in zip(values, errors, strict=True))])
            ax.set_ylim(0, top * 1.15 if math.isfinite(top) and top > 0 else 1)
            ax.set(ylabel=title, title=str(task) if metric == DIVERGENCE_PANELS[0][0] else "")
        # Slanted, neighbouring model names ran into each other; upwards they cannot.
        cells[-1, col].set_xticks(range(len(labels)), labels, rotation=90)
        # Bars of one width in every column, however many systems a task has.
        cells[-1, col].set_xlim(-0.6, max(widest, 2) - 0.4)
    spread = any(_has_spread(rows, m) for m, _ in DIVERGENCE_PANELS)
    legend(fig, list(cells.flat), [std_note()] if spread else [])
    return save(fig, path)


@styled
def plot_accuracy_vs_size(
    metrics_rows: Sequence[Row],
    sizes: Mapping[str, float],
    path: FigurePaths,
    baselines: Mapping[str, Mapping[str, float]] | None = None,
    *,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Path:
    """Accuracy (± std over seeds) against model size in parameters (log axis), one panel
    per task, one line per number of shots, each point a model (``sizes``: model -> its
    parameters, e.g. from :func:`nlieval.backends.weights.parameter_count`) drawn with the
    model's marker (named in the legend); chance dashed and
    ``baselines`` dotted as in :func:`plot_accuracy_vs_shots`. Models without a size are
    left out with the other rows of their model.

    >>> import tempfile
    >>> rows = [{"model": m, "task": "snli", "k": k, "accuracy": a, "chance": 1 / 3}
    ...         for m, k, a in (("s", 0, 0.4), ("b", 0, 0.6), ("s", 5, 0.5), ("b", 5, 0.7))]
    >>> out = Path(tempfile.mkdtemp()) / "s.png"
    >>> plot_accuracy_vs_size(rows, {"s": 1.35e8, "b": 8e9}, out).name
    's.png'
    """
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullFormatter

    rows = [r for r in metrics_rows if str(r["model"]) in sizes]
    if not rows:
        raise ValueError("no metrics rows of a model with a known size")
    tasks = _by(rows, "task")
    fig = grid(len(tasks), width=width)
    axes = panels(fig, len(tasks))
    ks = sorted({int(r["k"]) for r in rows})
    line_styles = styles(f"k={k}" for k in ks)
    markers = _palette(names, rows)
    for ax, (task, task_rows) in zip(axes, sorted(tasks.items()), strict=True):
        for k in ks:
            pts = sorted(
                ((sizes[str(r["model"])], r) for r in task_rows if int(r["k"]) == k),
                key=lambda p: p[0],
            )
            if not pts:
                continue
            color = line_styles[f"k={k}"]["color"]
            ax.plot([x for x, _ in pts], [r["accuracy"] for _, r in pts], color=color,
                    label=f"k={k}")  # fmt: skip
            for x, r in pts:
                ax.errorbar([x], [r["accuracy"]], yerr=[r.get("accuracy_std", 0.0)],
                            color=color, marker=markers[series_name(r)]["marker"])  # fmt: skip
        chance_line(ax, task_rows[0])
        _reference_lines(ax, str(task), baselines)
        ax.set_xscale("log")
        xs = [sizes[str(r["model"])] for r in task_rows]
        # Whole decades, labelled at the decades only: every axis has a labelled tick and
        # no two labels of minor ticks run into each other.
        ax.set_xlim(10 ** math.floor(math.log10(min(xs) / 1.3)),
                    10 ** math.ceil(math.log10(max(xs) * 1.3)))  # fmt: skip
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set(title=str(task), xlabel="parameters", ylabel="accuracy", ylim=(0, 1))
    # The models by their markers, in the legend: names beside points overlap and clip.
    extra: list[Any] = [
        Line2D([], [], color="0.3", ls="none", label=name, marker=style["marker"])
        for name, style in markers.items()
        if any(series_name(r) == name for r in rows)
    ]
    if _has_spread(rows, "accuracy"):
        extra.append(std_note())
    legend(fig, axes, extra)
    return save(fig, path)


def random_baseline(row: Mapping[str, Any]) -> tuple[str, float] | None:
    """The random baseline of a row's task, 1/K for its K options, and its label; None
    when the row names neither its options (``labels``, ``n_labels``) nor a ``chance``.
    The row's ``chance`` is read only when it names no options (an older row).

    >>> random_baseline({"labels": ["e", "n", "c"], "chance": 1.0})
    ('random (1/3)', 0.3333333333333333)
    """
    k = len(row["labels"]) if row.get("labels") else row.get("n_labels")
    if k:
        return chance_label(int(k)), 1.0 / int(k)
    if row.get("chance"):
        k = round(1.0 / float(row["chance"]))
        return chance_label(k), 1.0 / k
    return None


def chance_line(ax: Any, row: Mapping[str, Any]) -> None:
    """Draw the random baseline of ``row``'s task (:func:`random_baseline`) dashed on an
    accuracy axis, labelled "random (1/K)"; nothing when the row has none."""
    level = random_baseline(row)
    if level is not None:
        ax.axhline(level[1], ls="--", color="grey", label=level[0], zorder=0)


#: Metrics :func:`plot_dynamics` can follow: those of :data:`nlieval.metrics.METRICS` with an
#: axis title.
DYNAMICS_METRICS = tuple(m.name for m in METRICS.values() if m.axis)


def _axis_levels(rows: Sequence[Row], metric: str) -> dict[str, float]:
    """The reference levels of ``metric``'s own axis in ``rows`` of one task: chance on
    accuracy, ln(options) (a uniform guess's gold NLL) on gold NLL, and the uniform and
    human JS distance on JS distance (ChaosNLI rows).

    >>> _axis_levels([{"chance": 1 / 3, "labels": ["e", "n", "c"]}], "gold_nll")
    {'uniform guess (ln 3)': 1.0986122886681098}
    """
    r = rows[0]
    if metric == "accuracy":
        level = random_baseline(r)
        return {} if level is None else {level[0]: level[1]}
    if metric == "gold_nll":
        n = len(r["labels"]) if r.get("labels") else r.get("n_labels")
        return {f"uniform guess (ln {n})": math.log(n)} if n else {}
    out: dict[str, float] = {}
    if isinstance(r.get("uniform"), Mapping) and metric in r["uniform"]:
        out["uniform distribution"] = float(r["uniform"][metric])
    human = r.get("human")
    if isinstance(human, Mapping) and human.get(metric) is not None:
        out[str(human["label"])] = float(human[metric])
    return out


@styled
def plot_dynamics(
    rows: Sequence[Row],
    position: Mapping[str, float],
    path: FigurePaths,
    *,
    metric: str = "accuracy",
    axis: str = "training tokens",
    lines: Mapping[str, Mapping[str, float]] | None = None,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Path:
    r"""Training dynamics of several models in one panel per task: ``metric`` (±std over
    seeds) of each model's checkpoints at their ``position`` on the x axis (checkpoint ->
    training tokens or steps: :func:`checkpoint_positions`), one line per model (and k),
    named by the shortest tail of its model path that tells it apart, in the model's
    colour and marker (:func:`~.canvas.styles` of ``names``, the call's model names, and
    these; a smaller k of a model lighter). The axis' own reference levels are dashed
    (chance accuracy, a uniform guess's gold NLL, the uniform and human JS distance: the
    last checkpoint's items) and ``lines`` (name -> task -> level of this metric: a reference model,
    :func:`reference_levels`) dotted. Checkpoints without a position are left out.

    >>> import tempfile
    >>> rows = [{"model": m, "checkpoint": f"step{s}", "task": "t", "k": 0, "accuracy": a,
    ...          "chance": 0.5} for m, s, a in (("a", 1, .5), ("a", 2, .6), ("b", 1, .55))]
    >>> pos = checkpoint_positions(["step1", "step2"], r"step(\d+)", scale=2e6)
    >>> plot_dynamics(rows, pos, Path(tempfile.mkdtemp()) / "d.png").name
    'd.png'
    """
    if metric not in DYNAMICS_METRICS:
        raise ValueError(f"unknown metric {metric!r}: {', '.join(DYNAMICS_METRICS)}")
    rows = [r for r in rows if r.get("checkpoint") in position and metric in r]
    if not rows:
        raise ValueError(f"no checkpoint rows with {metric} and a position on the x axis")
    tasks = _by(rows, "task")
    # The call's models (raw, or as figures name them: display_name) and the rows' models
    # under one set of short names, the call's first in the styles: a model keeps the
    # look every other figure of the call gives it.
    drawn = {str(r["model"]) for r in rows}
    seen = {display_name(m) for m in drawn}
    called = [n for n in names or () if n in drawn or display_name(n) not in seen]
    short = short_names([*called, *drawn])
    short.update({n: display_name(n) for n in names or () if n not in short})

    def label(r: Row) -> str:
        return f"{short[str(r['model'])]} k={r['k']}"

    by_model = styles({short[n] for n in names or ()}, short.values())
    shades = _k_shades((short[str(r["model"])], r["k"]) for r in rows)
    palette: dict[str, dict[str, Any]] = {
        label(r): {**by_model[short[str(r["model"])]],
                   "color": _shade(by_model[short[str(r["model"])]]["color"], shades[label(r)])}
        for r in rows
    }  # fmt: skip
    fig = grid(len(tasks), width=width)
    axes = panels(fig, len(tasks))
    for ax, (task, task_rows) in zip(axes, sorted(tasks.items()), strict=True):
        series: dict[str, list[Row]] = {}
        for r in task_rows:
            series.setdefault(label(r), []).append(r)
        for name, pts in sorted(series.items()):
            pts = sorted(pts, key=lambda r: position[str(r["checkpoint"])])
            ax.errorbar([position[str(r["checkpoint"])] for r in pts], [r[metric] for r in pts],
                        yerr=[r.get(f"{metric}_std", 0.0) or 0.0 for r in pts], ms=3,
                        label=name, **palette[name])  # fmt: skip
        last = max(task_rows, key=lambda r: position[str(r["checkpoint"])])
        for i, (ref, level) in enumerate(_axis_levels([last], metric).items()):
            ax.axhline(level, ls="--" if i == 0 else (0, (4, 2)), lw=1,
                       color="grey" if i == 0 else "0.15", label=ref, zorder=0)  # fmt: skip
        _reference_lines(ax, str(task), lines)
        xs = [position[str(r["checkpoint"])] for r in task_rows]
        if min(xs) > 0:
            _decades(ax, xs)
        ax.set(title=str(task), xlabel=axis, ylabel=METRICS[metric].axis)
        # Accuracy on 0-1, as accuracy vs shots draws it: a change of one item in a hundred
        # is not stretched over the whole panel.
        ax.set_ylim(*((0, 1) if metric == "accuracy" else (0, None)))
    legend(fig, axes, [std_note()] if _has_spread(rows, metric) else [])
    return save(fig, path)


def _decades(ax: Any, xs: Sequence[float]) -> None:
    """A log x axis over whole decades around ``xs``, labelled at the decades only: a
    series within a decade or two otherwise got a label at every minor tick (2.4e11,
    2.5e11, ...), each running into the next."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.set_xlim(10 ** math.floor(math.log10(min(xs))), 10 ** math.ceil(math.log10(max(xs) * 1.01)))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _short(names: Sequence[str]) -> list[str]:
    """Checkpoint folders by their last path part when that keeps them apart.

    >>> _short(["runs/ft/step-0000", "runs/ft/step-0010"])
    ['step-0000', 'step-0010']
    """
    tails = [Path(n).name or n for n in names]
    return tails if len(set(tails)) == len(tails) else list(names)


#: Points along a panel's x axis that :func:`plot_run_dynamics` gives each upward label.
TICK_ROOM = 16.0


def _spread(n: int, most: int) -> list[int]:
    """At most ``most`` of the positions 0..n-1, every so many from the first (one step
    between any two, so none crowd).

    >>> _spread(5, 8), _spread(12, 4)
    ([0, 1, 2, 3, 4], [0, 3, 6, 9])
    """
    step = max(1, -(-n // most))
    return list(range(0, n, step))


@styled
def plot_run_dynamics(
    rows: Sequence[Row], path: FigurePaths, *, width: float | None = None
) -> Path:
    """One checkpoint run's rows of :func:`nlieval.analyses.dynamics.dynamics`: accuracy
    (chance dashed) and gold NLL (a uniform guess's ln(options) dashed) against
    checkpoint, one panel column per (task, k); a third row of panels with the JS
    distance from the human labels where the task is a ChaosNLI set, with the uniform
    baseline (dashed) and the human line (dotted).

    >>> import tempfile
    >>> from matplotlib.image import imread
    >>> rows = [{"task": "t", "k": 0, "checkpoints": ["s1", "s2"], "accuracy": [0.0, 1.0],
    ...          "gold_nll": [3.0, 0.1], "tau_accuracy": 1.0, "tau_nll": 1.0, "chance": 0.5,
    ...          "n_labels": 2}]
    >>> path = plot_run_dynamics(rows, Path(tempfile.mkdtemp()) / "dyn.png", width=3.3)
    >>> path.name, imread(path).shape[1]  # a column wide, at 300 dpi
    ('dyn.png', 990)
    """
    n = max(1, len(rows))
    n_rows = 3 if any("js_distance" in r for r in rows) else 2
    fig = grid(n, n_rows, size=(4.0, 2.6), width=width)
    axes = fig.subplots(n_rows, n, squeeze=False, sharex="col")
    every: list[Any] = []
    for i, r in enumerate(rows):
        x = range(len(r["checkpoints"]))
        acc, nll = axes[0][i], axes[1][i]
        acc.plot(x, r["accuracy"], marker="o", label="accuracy")
        chance_line(acc, r)
        acc.set_title(f"{r['task']} k={r['k']}  tau={r['tau_accuracy']:.2f}")
        acc.set(ylabel="accuracy", ylim=(0, 1))
        nll.plot(x, r["gold_nll"], marker="o", color="tab:red", label="gold NLL")
        if r.get("n_labels"):
            nll.axhline(math.log(r["n_labels"]), ls="--", color="grey",
                        label=f"uniform guess (ln {r['n_labels']})", zorder=0)  # fmt: skip
        nll.set_title(f"gold NLL  tau(-NLL)={r['tau_nll']:.2f}")
        # Short: a column-wide panel is lower than "mean NLL of gold option" is long.
        nll.set(ylabel="mean gold NLL", ylim=(0, None))
        shown = [acc, nll]
        if n_rows == 3:
            ax = axes[2][i]
            if "js_distance" in r:
                ax.plot(x, r["js_distance"], marker="o", color="tab:purple", label="JS distance")
                ax.axhline(r["uniform"]["js_distance"], ls="--", color="grey", label="uniform")
                ax.axhline(
                    r["human"]["js_distance"], ls=":", color="black", label=r["human"]["label"]
                )
                ax.set_title(f"JS distance (n={r['n']})  tau(-JS)={r['tau_js']:.2f}")
                ax.set_ylabel("JS distance to human labels")
                ax.set_ylim(bottom=0)
                shown.append(ax)
            else:
                ax.set_axis_off()
        every += shown
        bottom = shown[-1]
        # Upwards, every so many checkpoints from the first, as many as the panel's width
        # holds (a line of 7-pt text each, with room between): a label per checkpoint of
        # a long series ran into its neighbours.
        inches = bottom.get_position().width * fig.get_figwidth()
        shown_at = _spread(len(r["checkpoints"]), max(2, int(inches * 72 / TICK_ROOM)))
        bottom.set_xticks(shown_at, [_short(r["checkpoints"])[j] for j in shown_at],
                          rotation=90)  # fmt: skip
        bottom.set_xlabel("checkpoint (in training order)")
    # One legend below the panels: each panel's own, inside a column-wide panel, covered
    # its curves and ran into its axis title.
    legend(fig, every)
    return save(fig, path)


def checkpoint_positions(
    checkpoints: Iterable[str], pattern: str, scale: float = 1.0
) -> dict[str, float]:
    r"""Each checkpoint's position on a training axis from its name: the number the regular
    expression ``pattern`` captures (its first group), times ``scale`` (e.g. tokens per
    step: Pythia's ``step1000`` at 2,097,152 tokens per step is 2.1e9 tokens). A name the
    pattern does not match, or a pattern that is no regular expression, is a ValueError
    naming it; a table of positions can be given to :func:`plot_dynamics` directly instead.

    >>> checkpoint_positions(["step1000", "out/step2000"], r"step(\d+)", scale=2097152)
    {'step1000': 2097152000.0, 'out/step2000': 4194304000.0}
    """
    import re

    try:
        rx = re.compile(pattern)
    except re.error as err:
        raise ValueError(f"the pattern {pattern!r} is not a regular expression: {err}") from None
    except RecursionError:  # sre's parser recurses once a group: ( 1,000 deep
        raise ValueError(f"the pattern {pattern[:40]!r}... is nested too deeply") from None
    if rx.groups < 1:
        raise ValueError(f"the pattern {pattern!r} needs a group around the number")
    out = {}
    for ck in checkpoints:
        m = rx.search(str(ck))
        if m is None:
            raise ValueError(f"checkpoint {ck!r} does not match the pattern {pattern!r}")
        try:
            out[str(ck)] = float(m.group(1)) * scale
        except ValueError:
            raise ValueError(f"checkpoint {ck!r}: {m.group(1)!r} is not a number") from None
    return out


@dataclass(frozen=True, kw_only=True)
class FigureData:
    """What the drawing of a figure kind is given (:class:`FigureKind`): its ``rows``
    (:func:`nlieval.metrics.summarize`'s rows, or ``metric``'s rows when the kind takes
    ``metric``), the ``path`` (or paths) to save at, the reference ``lines`` (name ->
    task -> level at the figure's metric), ``width`` and ``names`` (the palette of the
    call), and what the kind's options made of the settings: ``sizes`` (model ->
    parameters) and ``positions`` (checkpoint -> x), empty when it does not take them."""

    rows: Sequence[Row]
    path: FigurePaths
    lines: Mapping[str, Mapping[str, float]]
    width: float | None = None
    names: Iterable[str] | None = None
    metric: str = "accuracy"
    axis: str = "training tokens"
    sizes: Mapping[str, float] = field(default_factory=dict)
    positions: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class FigureKind:
    """One figure of ``nlieval figure`` (and of an experiment's ``figure`` output):
    its ``name``, a ``help`` line, its ``draw`` (a :class:`FigureData` -> the path
    written), and the ``options`` of :class:`nlieval.reports.FigureConfig` it reads.
    The options decide what the reports prepare: ``metric`` (rows of that metric, the
    reference lines at it; without it, the summary's rows and accuracy), ``sizes``
    (each model's parameters, counted from its weights when not given) and
    ``positions`` (each checkpoint's x, from ``pattern`` and ``scale`` or the table)."""

    name: str
    help: str
    draw: Callable[[FigureData], Path]
    options: tuple[str, ...] = ()


def _draw_shots(d: FigureData) -> Path:
    return plot_accuracy_vs_shots(d.rows, d.path, d.lines, width=d.width, names=d.names)


def _draw_size(d: FigureData) -> Path:
    return plot_accuracy_vs_size(d.rows, d.sizes, d.path, d.lines, width=d.width, names=d.names)


def _draw_dynamics(d: FigureData) -> Path:
    return plot_dynamics(
        d.rows,
        d.positions,
        d.path,
        metric=d.metric,
        axis=d.axis,
        lines=d.lines,
        width=d.width,
        names=d.names,
    )


#: The figure kinds, in the order ``nlieval figure`` lists them: a new kind is its
#: drawing and one entry here.
FIGURE_KINDS: dict[str, FigureKind] = {
    k.name: k
    for k in (
        FigureKind("shots", "accuracy vs shots, a line per model", _draw_shots),
        FigureKind("size", "accuracy vs parameters, a line per k", _draw_size, ("sizes",)),
        FigureKind(
            "dynamics",
            "a metric over checkpoints, a line per model",
            _draw_dynamics,
            ("pattern", "scale", "positions", "metric", "axis"),
        ),
    )
}
