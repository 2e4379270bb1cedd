"""PNG plots from saved results, drawn with the helpers of :mod:`nlieval.plotting.canvas`
(matplotlib's object API on an Agg canvas: no display, no pyplot state).

Each function takes rows as returned by :func:`nlieval.metrics.summarize`,
:mod:`nlieval.analyses.chaosnli` or :func:`nlieval.analyses.dynamics.dynamics`, writes one
PNG and returns its path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..metrics import METRICS
from .canvas import colors, grid, legend, save, series_name, short_names

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


#: Colours of reference lines (darker than the series' cycle, so they read as references).
BASELINE_COLORS = ("black", "dimgrey", "saddlebrown", "darkslateblue")


def baseline_levels(metrics_rows: Sequence[Row], metric: str = "accuracy") -> dict[str, float]:
    """A reference run's level per task (its rows' ``metric``; the best k where a task has
    several), for the ``baselines`` of the plots.

    >>> baseline_levels([{"task": "snli", "k": 0, "accuracy": 0.9},
    ...                  {"task": "snli", "k": 4, "accuracy": 0.8}])
    {'snli': 0.9}
    """
    out: dict[str, float] = {}
    for r in metrics_rows:
        value = float(r[metric])
        out[str(r["task"])] = max(out.get(str(r["task"]), -math.inf), value)
    return out


def _reference_lines(ax: Any, task: str, lines: Mapping[str, Mapping[str, float]] | None) -> None:
    # Each reference (a baseline run, a human estimate) dotted at its level for the task.
    for i, (name, levels) in enumerate(sorted((lines or {}).items())):
        if task in levels:
            ax.axhline(levels[task], ls=":", lw=1.5, color=BASELINE_COLORS[i % 4],
                       label=name, zorder=0)  # fmt: skip


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


def plot_accuracy_vs_shots(
    metrics_rows: Sequence[Row],
    path: str | Path,
    baselines: Mapping[str, Mapping[str, float]] | None = None,
) -> Path:
    """Accuracy (mean ± std over seeds) against the number of shots, one panel per task,
    one line per model (and checkpoint), with the task's chance level dashed and each of
    ``baselines`` (name -> task -> accuracy, e.g. a fine-tuned classifier's run: see
    :func:`baseline_levels`) as a dotted line in the panels of its tasks.

    >>> import tempfile
    >>> from matplotlib.image import imread
    >>> from nlieval.metrics import summarize
    >>> from nlieval.types import Record
    >>> NLI = ("entailment", "neutral", "contradiction")
    >>> records = [Record("snli", str(i), "org/model-a", k, 0, NLI, (0.0,) * 3, (0.6, 0.3, 0.1),
    ...                   "entailment", NLI[i % 2]) for i in range(10) for k in (0, 2)]
    >>> path = plot_accuracy_vs_shots(summarize(records), Path(tempfile.mkdtemp()) / "acc.png")
    >>> path.name, imread(path).shape  # one 4.5 x 3.4 inch panel at 120 dpi, RGBA
    ('acc.png', (408, 540, 4))
    """
    if not metrics_rows:
        raise ValueError("no metrics rows to plot")
    tasks = _by(metrics_rows, "task")
    palette = colors(series_name(r) for r in metrics_rows)
    fig = grid(len(tasks))
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    for ax, (task, rows) in zip(axes, sorted(tasks.items()), strict=True):
        for name, series in _series(rows):
            series = sorted(series, key=lambda r: r["k"])
            ax.errorbar(
                [r["k"] for r in series],
                [r["accuracy"] for r in series],
                yerr=[r.get("accuracy_std", 0.0) for r in series],
                marker="o",
                capsize=3,
                color=palette[name],
                label=name,
            )
        ax.axhline(rows[0]["chance"], ls="--", color="grey", label="chance", zorder=0)
        _reference_lines(ax, str(task), baselines)
        ax.set_xticks(sorted({int(r["k"]) for r in rows}))
        ax.set(title=str(task), xlabel="shots (k)", ylabel="accuracy", ylim=(0, 1))
    legend(fig, axes)
    return save(fig, path)


def plot_accuracy_by_entropy(
    bin_rows: Sequence[Row], path: str | Path, against: str = "both"
) -> Path:
    """Accuracy per entropy bin of the human labels, one panel per task, one colour per
    model (checkpoint and k); solid against the original label, dashed against the
    majority label. ``against`` "original" or "majority" draws only that one: one curve
    per model and checkpoint, so that many fit on one figure.

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
    >>> path = plot_accuracy_by_entropy(bins, Path(tempfile.mkdtemp()) / "bins.png")
    >>> path.name, imread(path).shape  # one 5 x 3.6 inch panel at 120 dpi, RGBA
    ('bins.png', (432, 600, 4))
    """
    if not bin_rows:
        raise ValueError("no entropy-bin rows to plot")
    if against not in ("both", "original", "majority"):
        raise ValueError(f"against must be both, original or majority, not {against!r}")
    from matplotlib.lines import Line2D

    styles_used = [s for s in ACC_STYLES if against == "both" or s[0] == f"acc_{against}"]
    tasks = _by(bin_rows, "task")
    palette = colors(series_name(r, with_k=True) for r in bin_rows)
    fig = grid(len(tasks), size=(5.0, 3.6))
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    for ax, (task, rows) in zip(axes, sorted(tasks.items()), strict=True):
        for name, series in _series(rows, with_k=True):
            series = sorted(series, key=lambda r: r["bin"])
            for metric, ls, marker, _ in styles_used:
                ax.plot(
                    [r["bin"] for r in series],
                    [r[metric] for r in series],
                    ls=ls,
                    marker=marker,
                    color=palette[name],
                    # The colour names the series; the line style (proxy below) the label.
                    label=name if metric == styles_used[0][0] else "_nolegend_",
                )
        edges = {r["bin"]: f"{r['lo']:.2f}–{r['hi']:.2f}" for r in rows}
        ax.set_xticks(sorted(edges), [edges[b] for b in sorted(edges)], rotation=30)
        ax.set(title=str(task), xlabel="human label entropy (bits)", ylabel="accuracy")
        ax.set_ylim(0, 1)
    styles = [Line2D([], [], color="black", ls=ls, marker=mk, label=lab)
              for _, ls, mk, lab in styles_used]  # fmt: skip
    legend(fig, axes, styles)
    return save(fig, path)


def plot_divergence(rows: Sequence[Row], path: str | Path) -> Path:
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
    >>> path.name, imread(path).shape  # three 4.5 x 2.8 inch panels, one above the other
    ('div.png', (1008, 540, 4))
    """
    if not rows:
        raise ValueError("no ChaosNLI rows to plot")
    tasks = sorted(_by(rows, "task").items())
    widest = max(len(task_rows) for _, task_rows in tasks)
    palette = colors(series_name(r) for r in rows)
    fig = grid(len(tasks), len(DIVERGENCE_PANELS), size=(max(4.5, 0.6 * widest), 2.8))
    panels = fig.subplots(len(DIVERGENCE_PANELS), len(tasks), squeeze=False)
    for col, (task, task_rows) in enumerate(tasks):
        names = [series_name(r, with_k=True) for r in task_rows]
        for (metric, title), ax in zip(DIVERGENCE_PANELS, panels[:, col], strict=True):
            values = [r[metric] for r in task_rows]
            errors = [r.get(metric + "_std", 0.0) for r in task_rows]
            bar_colors = [palette[series_name(r)] for r in task_rows]
            ax.bar(range(len(values)), values, yerr=errors, capsize=3, color=bar_colors)
            xs = range(len(values))
            uniform = [r["uniform"][metric] for r in task_rows]
            ax.scatter(xs, uniform, marker="_", s=900, color="grey", zorder=3,
                       label="uniform baseline")  # fmt: skip
            human = [
                (x, v)
                for x, r in enumerate(task_rows)
                if (v := (r.get("human") or {}).get(metric)) is not None and math.isfinite(v)
            ]
            if human:
                label = str(task_rows[0]["human"]["label"])
                ax.scatter([x for x, _ in human], [v for _, v in human], marker="D", s=25,
                           color="black", zorder=4, label=label)  # fmt: skip
            heights = [*uniform, *(v for _, v in human)]
            top = max([*heights, *(v + e for v, e in zip(values, errors, strict=True))])
            ax.set_ylim(0, top * 1.15 if math.isfinite(top) and top > 0 else 1)
            ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
            ax.set(ylabel=title, title=str(task) if metric == DIVERGENCE_PANELS[0][0] else "")
    legend(fig, list(panels.flat))
    return save(fig, path)


def plot_accuracy_vs_size(
    metrics_rows: Sequence[Row],
    sizes: Mapping[str, float],
    path: str | Path,
    baselines: Mapping[str, Mapping[str, float]] | None = None,
) -> Path:
    """Accuracy (± std over seeds) against model size in parameters (log axis), one panel
    per task, one line per number of shots, each point a model (``sizes``: model -> its
    parameters, e.g. from :func:`nlieval.backends.weights.parameter_count`); chance dashed
    and ``baselines`` dotted as in :func:`plot_accuracy_vs_shots`. Models without a size
    are left out with the other rows of their model.

    >>> import tempfile
    >>> rows = [{"model": m, "task": "snli", "k": k, "accuracy": a, "chance": 1 / 3}
    ...         for m, k, a in (("s", 0, 0.4), ("b", 0, 0.6), ("s", 5, 0.5), ("b", 5, 0.7))]
    >>> out = Path(tempfile.mkdtemp()) / "s.png"
    >>> plot_accuracy_vs_size(rows, {"s": 1.35e8, "b": 8e9}, out).name
    's.png'
    """
    rows = [r for r in metrics_rows if str(r["model"]) in sizes]
    if not rows:
        raise ValueError("no metrics rows of a model with a known size")
    tasks = _by(rows, "task")
    fig = grid(len(tasks))
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    ks = sorted({int(r["k"]) for r in rows})
    palette = colors(f"k={k}" for k in ks)
    for ax, (task, task_rows) in zip(axes, sorted(tasks.items()), strict=True):
        for k in ks:
            pts = sorted((sizes[str(r["model"])], r) for r in task_rows if int(r["k"]) == k)
            if not pts:
                continue
            ax.errorbar([x for x, _ in pts], [r["accuracy"] for _, r in pts],
                        yerr=[r.get("accuracy_std", 0.0) for _, r in pts], marker="o",
                        capsize=3, color=palette[f"k={k}"], label=f"k={k}")  # fmt: skip
            if k == ks[0]:
                for x, r in pts:
                    ax.annotate(series_name(r), (x, r["accuracy"]), fontsize=7,
                                textcoords="offset points", xytext=(3, -10))  # fmt: skip
        if task_rows[0].get("chance") is not None:
            ax.axhline(task_rows[0]["chance"], ls="--", color="grey", label="chance", zorder=0)
        _reference_lines(ax, str(task), baselines)
        ax.set_xscale("log")
        ax.set(title=str(task), xlabel="parameters", ylabel="accuracy", ylim=(0, 1))
    legend(fig, axes)
    return save(fig, path)


#: Metrics :func:`plot_dynamics` can follow: those of :data:`nlieval.metrics.METRICS` with an
#: axis title.
DYNAMICS_METRICS = tuple(m.name for m in METRICS.values() if m.axis)


def plot_dynamics(
    rows: Sequence[Row],
    position: Mapping[str, float],
    path: str | Path,
    *,
    metric: str = "accuracy",
    axis: str = "training tokens",
    lines: Mapping[str, Mapping[str, float]] | None = None,
) -> Path:
    r"""Training dynamics of several models in one panel per task: ``metric`` (±std over
    seeds) of each model's checkpoints at their ``position`` on the x axis (checkpoint ->
    training tokens or steps: :func:`checkpoint_positions`), one line per model (and k);
    chance dashed where the rows give it, and ``lines`` (name -> task -> level: a human
    estimate, a reference model) dotted. Checkpoints without a position are left out.

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
    short = short_names(str(r["model"]) for r in rows)

    def label(r: Row) -> str:
        return f"{short[str(r['model'])]} k={r['k']}"

    palette = colors({label(r) for r in rows})
    fig = grid(len(tasks))
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    for ax, (task, task_rows) in zip(axes, sorted(tasks.items()), strict=True):
        series: dict[str, list[Row]] = {}
        for r in task_rows:
            series.setdefault(label(r), []).append(r)
        for name, pts in sorted(series.items()):
            pts = sorted(pts, key=lambda r: position[str(r["checkpoint"])])
            ax.errorbar([position[str(r["checkpoint"])] for r in pts], [r[metric] for r in pts],
                        yerr=[r.get(f"{metric}_std", 0.0) or 0.0 for r in pts], marker="o",
                        ms=3, capsize=2, color=palette[name], label=name)  # fmt: skip
        chance = task_rows[0].get("chance")
        if metric == "accuracy" and chance is not None:
            ax.axhline(chance, ls="--", color="grey", label="chance", zorder=0)
        _reference_lines(ax, str(task), lines)
        if min(position[str(r["checkpoint"])] for r in task_rows) > 0:
            ax.set_xscale("log")
        ax.set(title=str(task), xlabel=axis, ylabel=METRICS[metric].axis)
    legend(fig, axes)
    return save(fig, path)


def _short(names: Sequence[str]) -> list[str]:
    """Checkpoint folders by their last path part when that keeps them apart.

    >>> _short(["runs/ft/step-0000", "runs/ft/step-0010"])
    ['step-0000', 'step-0010']
    """
    tails = [Path(n).name or n for n in names]
    return tails if len(set(tails)) == len(tails) else list(names)


def plot_run_dynamics(rows: Sequence[Row], path: str | Path) -> Path:
    """One checkpoint run's rows of :func:`nlieval.analyses.dynamics.dynamics`: accuracy
    and gold NLL against checkpoint, one panel column per (task, k); a third
    row of panels with the JS distance from the human labels where the task is a ChaosNLI
    set, with the uniform baseline (dashed) and the human line (dotted).

    >>> import tempfile
    >>> from matplotlib.image import imread
    >>> rows = [{"task": "t", "k": 0, "checkpoints": ["s1", "s2"], "accuracy": [0.0, 1.0],
    ...          "gold_nll": [3.0, 0.1], "tau_accuracy": 1.0, "tau_nll": 1.0}]
    >>> path = plot_run_dynamics(rows, Path(tempfile.mkdtemp()) / "dyn.png")
    >>> path.name, imread(path).shape  # two 4 x 3 inch panels (no ChaosNLI row) at 120 dpi
    ('dyn.png', (720, 480, 4))
    """
    n = max(1, len(rows))
    n_rows = 3 if any("js_distance" in r for r in rows) else 2
    fig = grid(n, n_rows, size=(4.0, 3.0))
    axes = fig.subplots(n_rows, n, squeeze=False)
    for i, r in enumerate(rows):
        x = range(len(r["checkpoints"]))
        axes[0][i].plot(x, r["accuracy"], marker="o")
        axes[0][i].set_title(f"{r['task']} k={r['k']}  tau={r['tau_accuracy']:.2f}")
        axes[0][i].set_ylabel("accuracy")
        axes[1][i].plot(x, r["gold_nll"], marker="o", color="tab:red")
        axes[1][i].set_title(f"gold NLL  tau(-NLL)={r['tau_nll']:.2f}")
        axes[1][i].set_ylabel("mean NLL of gold option")
        panels = [axes[0][i], axes[1][i]]
        if n_rows == 3:
            ax = axes[2][i]
            if "js_distance" in r:
                ax.plot(x, r["js_distance"], marker="o", color="tab:purple", label="model")
                ax.axhline(r["uniform"]["js_distance"], ls="--", color="grey", label="uniform")
                ax.axhline(
                    r["human"]["js_distance"], ls=":", color="black", label=r["human"]["label"]
                )
                ax.set_title(f"JS distance (n={r['n']})  tau(-JS)={r['tau_js']:.2f}")
                ax.set_ylabel("JS distance to human labels")
                ax.set_ylim(bottom=0)
                ax.legend(fontsize=7)
                panels.append(ax)
            else:
                ax.set_axis_off()
        for ax in panels:
            ax.set_xticks(list(x))
            ax.set_xticklabels(_short(r["checkpoints"]), rotation=45, ha="right", fontsize=7)
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
