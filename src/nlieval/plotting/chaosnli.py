"""The final-model divergence figure of a ChaosNLI study (Lost in Inference, Figure 5 b):
one divergence of each model's softmax from the 100 human labels, a panel per ChaosNLI
set, with the chance (uniform distribution), human-vs-human and reference-system lines.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .canvas import (
    FigurePaths,
    grid,
    legend,
    panels,
    save,
    series_name,
    std_note,
    styled,
    styles,
)
from .results import BASELINE_COLORS, BASELINE_DASHES, DIVERGENCE_PANELS

Row = Mapping[str, Any]

#: The axis title of each divergence a panel may show.
TITLES = dict(DIVERGENCE_PANELS)

#: The style of the two lines every panel has (the chance and human levels).
CHANCE_STYLE: dict[str, Any] = {"color": "grey", "ls": "--", "lw": 1.2}
HUMAN_STYLE: dict[str, Any] = {"color": "black", "ls": "-", "lw": 1.2}


def _level(values: Sequence[float]) -> float | None:
    # One line where every bar of the panel has it at one level (the same items); bars
    # scored on different items get a marker each instead.
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if finite and len(finite) == len(values) and max(finite) - min(finite) <= 1e-12:
        return finite[0]
    return None


@styled
def plot_final_divergence(
    rows: Sequence[Row],
    path: FigurePaths,
    *,
    metric: str = "js_distance",
    lines: Mapping[str, Mapping[str, float]] | None = None,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Path:
    """``metric`` (a divergence of :data:`TITLES`) of each model (and k) as a bar (± std
    over seeds), one panel per task (rows of :func:`nlieval.analyses.chaosnli.score_records`),
    with the chance line (the uniform distribution on the same items, dashed grey), the
    human line (split-half or published, solid black; none for KL) and each of ``lines``
    (name -> task -> level: a reference system such as a published BERT, dotted), all
    drawn over the bars. A level that differs between bars (bars on different items) is
    a marker per bar.

    >>> import tempfile
    >>> from nlieval.analyses.chaosnli import score_records
    >>> from nlieval.types import Record
    >>> NLI = ("entailment", "neutral", "contradiction")
    >>> def rec(i):
    ...     meta = {"human_counts": [90 - 8 * i, 8 * i, 10], "majority_label": NLI[0]}
    ...     return Record("chaosnli_snli", str(i), "m", 0, 0, NLI, (0.0,) * 3,
    ...                   (0.6, 0.3, 0.1), "entailment", NLI[0], meta=meta)
    >>> rows = score_records([rec(i) for i in range(6)])
    >>> plot_final_divergence(rows, Path(tempfile.mkdtemp()) / "jsd.png").name
    'jsd.png'
    """
    if metric not in TITLES:
        raise ValueError(f"metric must be one of {', '.join(TITLES)}, not {metric!r}")
    if not rows:
        raise ValueError("no ChaosNLI rows to plot")
    tasks: dict[str, list[Row]] = {}
    for r in rows:
        tasks.setdefault(str(r["task"]), []).append(r)
    # The call's names first: a model keeps its style across the report's figures.
    palette = styles([*(names or ()), *(series_name(r) for r in rows)])
    fig = grid(len(tasks), size=(4.0, 3.4), width=width)
    axes = panels(fig, len(tasks))
    spread = False
    for ax, (task, task_rows) in zip(axes, sorted(tasks.items()), strict=True):
        task_rows = sorted(task_rows, key=lambda r: series_name(r, with_k=True))
        xs = list(range(len(task_rows)))
        values = [float(r[metric]) for r in task_rows]
        errors = [float(r.get(f"{metric}_std") or 0.0) for r in task_rows]
        spread = spread or any(e > 0 for e in errors)
        for x, r, v, e in zip(xs, task_rows, values, errors, strict=True):
            ax.bar([x], [v], yerr=[e] if e > 0 else None,
                   color=palette[series_name(r)]["color"],
                   label=series_name(r, with_k=True))  # fmt: skip
        uniform = [float((r.get("uniform") or {}).get(metric, math.nan)) for r in task_rows]
        human = [(r.get("human") or {}).get(metric) for r in task_rows]
        human_values = [float(h) if h is not None else math.nan for h in human]
        human_name = str((task_rows[0].get("human") or {}).get("label") or "human")
        for name, levels, style in (
            ("chance (uniform distribution)", uniform, CHANCE_STYLE),
            (human_name, human_values, HUMAN_STYLE),
        ):
            level = _level(levels)
            if level is not None:
                ax.axhline(level, label=name, zorder=3, **style)
            elif any(math.isfinite(v) for v in levels):
                ax.scatter([x for x, v in zip(xs, levels, strict=True) if math.isfinite(v)],
                           [v for v in levels if math.isfinite(v)], marker="_", s=300,
                           color=style["color"], zorder=3, label=name)  # fmt: skip
        for i, (name, by_task) in enumerate(sorted((lines or {}).items())):
            if task in by_task:
                ax.axhline(by_task[task], ls=BASELINE_DASHES[i % 4], lw=1.2,
                           color=BASELINE_COLORS[i % 4], label=name, zorder=3)  # fmt: skip
        ax.set_xticks(xs, [series_name(r, with_k=True) for r in task_rows],
                      rotation=30, ha="right")  # fmt: skip
        ax.set(title=task, ylabel=TITLES[metric])
        ax.set_ylim(bottom=0)
    legend(fig, axes, [std_note()] if spread else [])
    return save(fig, path)
