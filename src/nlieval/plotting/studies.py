"""The plots of the families' own reports: EPG curves of ``nlieval contamination`` and
the confusion matrices of ``nlieval sci-report``. Each takes the rows its report computes
and draws on :func:`~nlieval.plotting.canvas.grid`; matplotlib loads when drawing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .canvas import (
    WIDTHS,
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


@styled
def plot_epg(
    rows: Sequence[Mapping[str, Any]],
    path: FigurePaths,
    *,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Path:
    """EPG (± std over seeds) against the % of items marked contaminated: one panel per
    task, one line per (model, checkpoint, k), each model in its colour and marker
    (:func:`~nlieval.plotting.canvas.styles` of ``names``, the call's model names, and
    the rows'), points of the first line labelled with
    their threshold. Writes the format of ``path``'s extension, ``width`` inches wide.

    >>> import tempfile
    >>> rows = [{"task": "t", "model": m, "checkpoint": None, "k": 0, "threshold": t,
    ...          "pct_contaminated": p, "epg": e, "metric": "accuracy"}
    ...         for m, e in (("a", 0.0), ("b", 0.1)) for t, p in ((0.5, 20.0), (0.9, 5.0))]
    >>> plot_epg(rows, Path(tempfile.mkdtemp()) / "epg.svg").read_bytes().find(b"<svg") >= 0
    True
    """
    tasks = sorted({r["task"] for r in rows}) or [""]
    palette = styles([*(names or ()), *(series_name(r) for r in rows)])
    fig = grid(len(tasks), size=(4.8, 3.8), width=width)
    axes = panels(fig, len(tasks))
    for ax, task in zip(axes, tasks, strict=True):
        series: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
        for r in rows:
            if r["task"] == task:
                series.setdefault((series_name(r), r["k"]), []).append(r)
        for i, ((name, k), pts) in enumerate(sorted(series.items())):
            pts = sorted(pts, key=lambda r: r["threshold"])
            x = [p["pct_contaminated"] for p in pts]
            ax.errorbar(x, [p["epg"] for p in pts], yerr=[p.get("epg_std") or 0.0 for p in pts],
                        label=f"{name} k={k}", **palette[name])  # fmt: skip
            if i == 0:  # thresholds are shared by the series; label them once
                for p in pts:
                    ax.annotate(
                        f"t={p['threshold']:g}",
                        (p["pct_contaminated"], p["epg"]),
                        fontsize=7,
                        xytext=(3, 3),
                        textcoords="offset points",
                    )
        ax.axhline(0.0, color="grey", lw=0.8)
        metric = rows[0]["metric"] if rows else "accuracy"
        ax.set(
            title=task,
            xlabel="% of items contaminated (score > t)",
            ylabel=f"EPG ({metric}: all − clean)",
        )
    spread = any(float(r.get("epg_std") or 0.0) > 0 for r in rows)
    legend(fig, axes, [std_note()] if spread else [])
    return save(fig, path)


@styled
def plot_confusion(
    row: Mapping[str, Any], path: FigurePaths, ncol: int, *, width: float | None = None
) -> Path:
    """Counts (left) and row-normalised shares (right) of the first ``ncol`` columns of a
    ``nlieval sci-report`` row's confusion matrix (the report decides whether its
    unparsed column is shown). Writes the format of ``path``'s extension, ``width``
    inches wide (the text width if None)."""
    import numpy as np

    counts = np.asarray(row["confusion"], dtype=float)[:, :ncol]
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    cols = row["confusion_columns"][:ncol]
    labels = row["labels"]
    # Side by side in the text width; one above the other in a column, where two panels
    # would leave a cell too narrow for its number.
    inches = WIDTHS["text"] if width is None else width
    stacked = inches < 0.7 * ncol + 2.6
    shape = (0.7 * ncol + 1.9, 0.6 * len(labels) + 1.7)
    fig = grid(1 if stacked else 2, 2 if stacked else 1, size=shape, width=inches)
    axes = fig.subplots(2, 1) if stacked else fig.subplots(1, 2)
    panels = (
        (axes[0], counts, "counts", "{:.0f}"),
        (axes[1], shares, "share of gold row", "{:.0%}"),
    )
    for ax, values, title, fmt in panels:
        top = values.max() if values.size and values.max() > 0 else 1.0
        ax.imshow(values, cmap="Blues", vmin=0, vmax=top, aspect="auto")
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                dark = values[i, j] > 0.6 * top
                ax.text(
                    j,
                    i,
                    fmt.format(values[i, j]),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if dark else "black",
                )
        if ncol > len(labels):  # set the unparsed column apart
            ax.axvline(len(labels) - 0.5, color="0.3", linewidth=1.2)
        ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        ax.set_title(title)
        ax.grid(False)
    runs = f"{row['runs']} runs summed" if row["runs"] > 1 else "1 run"
    fig.suptitle(
        f"{series_name(row)} · {row['task']} · k={row['k']}\n"
        f"n={row['n']} · {runs} · macro F1 {row['macro_f1']:.3f}",
    )
    return save(fig, path)
