"""The plots of the families' own reports: EPG curves of ``nlieval contamination`` and
the confusion matrices of ``nlieval sci-report``. Each takes the rows its report computes
and draws on :func:`~nlieval.plotting.canvas.grid`; matplotlib loads when drawing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .canvas import grid, save, series_name


def plot_epg(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """EPG against the % of items marked contaminated: one panel per task, one line per
    (model, checkpoint, k), points labelled with their threshold. Writes a PNG."""
    tasks = sorted({r["task"] for r in rows}) or [""]
    fig = grid(len(tasks), size=(4.8, 3.8))
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    for ax, task in zip(axes, tasks, strict=True):
        series: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
        for r in rows:
            if r["task"] == task:
                series.setdefault((series_name(r), r["k"]), []).append(r)
        for i, ((name, k), pts) in enumerate(sorted(series.items())):
            pts = sorted(pts, key=lambda r: r["threshold"])
            x = [p["pct_contaminated"] for p in pts]
            ax.plot(x, [p["epg"] for p in pts], marker="o", label=f"{name} k={k}")
            if i == 0:  # thresholds are shared by the series; label them once
                for p in pts:
                    ax.annotate(
                        f"{p['threshold']:g}",
                        (p["pct_contaminated"], p["epg"]),
                        fontsize=6,
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
        if series:
            ax.legend(fontsize=7)
    return save(fig, path)


def plot_confusion(row: Mapping[str, Any], path: str | Path, ncol: int) -> Path:
    """Counts (left) and row-normalised shares (right) of the first ``ncol`` columns of a
    ``nlieval sci-report`` row's confusion matrix (the report decides whether its
    unparsed column is shown). Writes a PNG."""
    import numpy as np

    counts = np.asarray(row["confusion"], dtype=float)[:, :ncol]
    totals = counts.sum(axis=1, keepdims=True)
    shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    cols = row["confusion_columns"][:ncol]
    labels = row["labels"]
    fig = grid(2, size=(0.7 * ncol + 1.9, 0.6 * len(labels) + 1.7))
    axes = fig.subplots(1, 2)
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
                    fontsize=8,
                    color="white" if dark else "black",
                )
        if ncol > len(labels):  # set the unparsed column apart
            ax.axvline(len(labels) - 0.5, color="0.3", linewidth=1.2)
        ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize=8)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        ax.set_title(title, fontsize=9)
    runs = f"{row['runs']} runs summed" if row["runs"] > 1 else "1 run"
    fig.suptitle(
        f"{series_name(row)} · {row['task']} · k={row['k']} · n={row['n']} · {runs} · "
        f"macro F1 {row['macro_f1']:.3f}",
        fontsize=9,
    )
    return save(fig, path)
