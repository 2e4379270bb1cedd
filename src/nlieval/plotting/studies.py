"""The plots of the families' own reports: EPG curves of ``nlieval contamination`` and
the confusion matrices of ``nlieval sci-report``. Each takes the rows its report computes
and draws on :func:`~nlieval.plotting.canvas.grid`; matplotlib loads when drawing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

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
)
from .canvas import palette as canvas_palette

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox


@styled
def plot_epg(
    rows: Sequence[Mapping[str, Any]],
    path: FigurePaths,
    *,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Path:
    """EPG (± std over seeds) against the % of items marked contaminated
    (:func:`epg_figure`), written in the format of ``path``'s extension, ``width``
    inches wide.

    >>> import tempfile
    >>> rows = [{"task": "t", "model": m, "checkpoint": None, "k": 0, "threshold": t,
    ...          "pct_contaminated": p, "epg": e, "metric": "accuracy"}
    ...         for m, e in (("a", 0.0), ("b", 0.1)) for t, p in ((0.5, 20.0), (0.9, 5.0))]
    >>> plot_epg(rows, Path(tempfile.mkdtemp()) / "epg.svg").read_bytes().find(b"<svg") >= 0
    True
    """
    return save(epg_figure(rows, width=width, names=names), path)


@styled
def epg_figure(
    rows: Sequence[Mapping[str, Any]],
    *,
    width: float | None = None,
    names: Iterable[str] | None = None,
) -> Figure:
    """The figure of :func:`plot_epg`: one panel per task, one line per (model,
    checkpoint, k), each model in its colour and marker
    (:func:`~nlieval.plotting.canvas.styles` of ``names``, the call's model names, and
    the rows'), each k in its dash (:data:`DASHES`), the points of the first line
    labelled with their threshold (a range where several thresholds give one point), each
    label placed where it overlaps no other (:func:`spread_labels`).

    >>> rows = [{"task": "t", "model": "a", "checkpoint": None, "k": 0, "threshold": t,
    ...          "pct_contaminated": p, "epg": 0.001, "metric": "accuracy"}
    ...         for t, p in ((0.0, 36.0), (0.1, 36.0), (0.2, 35.0))]
    >>> [t.get_text() for t in epg_figure(rows).axes[0].texts]
    ['t=0–0.1', 't=0.2']
    """
    tasks = sorted({r["task"] for r in rows}) or [""]
    palette = canvas_palette(names, (series_name(r) for r in rows))
    fig = grid(len(tasks), size=(4.8, 3.8), width=width)
    axes = panels(fig, len(tasks))
    # A model's lines share its colour and marker; its k tells them apart by dash.
    dashes = {k: DASHES[i % len(DASHES)] for i, k in enumerate(sorted({r["k"] for r in rows}))}
    labels = []
    for ax, task in zip(axes, tasks, strict=True):
        series: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
        for r in rows:
            if r["task"] == task:
                series.setdefault((series_name(r), r["k"]), []).append(r)
        for i, ((name, k), pts) in enumerate(sorted(series.items())):
            pts = sorted(pts, key=lambda r: r["threshold"])
            x = [p["pct_contaminated"] for p in pts]
            ax.errorbar(x, [p["epg"] for p in pts], yerr=[p.get("epg_std") or 0.0 for p in pts],
                        label=f"{name} k={k}", ls=dashes[k], **palette[name])  # fmt: skip
            if i == 0:  # thresholds are shared by the series; label them once
                labels += [
                    ax.annotate(
                        text, xy, fontsize=7, xytext=LABEL_PLACES[0][:2], textcoords="offset points"
                    )  # fmt: skip
                    for xy, text in _threshold_labels(pts)
                ]
        ax.axhline(0.0, color="grey", lw=0.8)
        metric = rows[0]["metric"] if rows else "accuracy"
        # On two lines: side by side at a column's width, the panels' x titles on one
        # line ran into each other.
        ax.set(
            title=task,
            xlabel="% contaminated\n(score > t)",
            ylabel=f"EPG ({metric}: all − clean)",
        )
    spread = any(float(r.get("epg_std") or 0.0) > 0 for r in rows)
    legend(fig, axes, [std_note()] if spread else [])
    spread_labels(fig, labels)
    return fig


def _threshold_labels(pts: Sequence[Mapping[str, Any]]) -> list[tuple[tuple[float, float], str]]:
    """A label per distinct point of a line sorted by threshold: thresholds that mark the
    same items and give the same EPG are one point, labelled with their range."""
    out: list[tuple[tuple[float, float], list[float]]] = []
    for p in pts:
        xy = (float(p["pct_contaminated"]), float(p["epg"]))
        if out and out[-1][0] == xy:
            out[-1][1].append(p["threshold"])
        else:
            out.append((xy, [p["threshold"]]))
    return [(xy, f"t={t[0]:g}" + (f"–{t[-1]:g}" if len(t) > 1 else "")) for xy, t in out]


#: The line styles of the k's of an EPG figure, in order of k.
DASHES = ("-", "--", ":", "-.")
#: Where a point's label may go, in the order tried: (dx, dy) in points from the point,
#: and the side of the text that is put there (above right, below right, above left,
#: below left, right, left, above, below; :func:`spread_labels`).
Place = tuple[float, float, Literal["left", "center", "right"], Literal["bottom", "center", "top"]]
LABEL_PLACES: tuple[Place, ...] = (
    (2.0, 2.0, "left", "bottom"),
    (2.0, -2.0, "left", "top"),
    (-2.0, 2.0, "right", "bottom"),
    (-2.0, -2.0, "right", "top"),
    (4.0, 0.0, "left", "center"),
    (-4.0, 0.0, "right", "center"),
    (0.0, 4.0, "center", "bottom"),
    (0.0, -4.0, "center", "top"),
)


def spread_labels(fig: Figure, labels: Sequence[Annotation]) -> None:
    """Move each of ``labels`` (annotations of points, in ``offset points``) to the first
    place of :data:`LABEL_PLACES` where its text, as drawn, overlaps no label placed
    before it and no marker, crosses no line and stays inside its axes (then one that
    crosses a line); where none is free, to the nearest free place above or below the
    point, a line further out at each step (then outside its axes), with a thin line to
    its point. Measured after the
    figure's layout, which the labels then leave alone (they are out of it), so the saved
    file has them where they were measured.

    >>> fig = grid(1, width=3.0)
    >>> ax = fig.subplots()
    >>> _ = ax.plot([0, 1], [0, 1])
    >>> a, b = (ax.annotate(t, (0.5, 0.5), (0, 0), textcoords="offset points") for t in "ab")
    >>> spread_labels(fig, [a, b])
    >>> a.xyann != b.xyann
    True
    """
    if not labels:
        return
    for label in labels:
        label.set_in_layout(False)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    placed = [box for ax in fig.axes for box in _marker_boxes(ax, fig.dpi)]
    # The figure's own texts (titles, axis and tick labels, the legend) are no place for
    # a label either: at a column's width the top row of labels met a panel's title.
    placed += [t.get_window_extent(renderer) for t in _fixed_texts(fig)]
    lines = [ln.get_transform().transform_path(ln.get_path()) for ax in fig.axes
             for ln in ax.get_lines() if ln.get_visible()]  # fmt: skip

    def free(label: Annotation, place: Place, strict: int) -> bool:
        dx, dy, ha, va = place
        label.xyann = (dx, dy)
        label.set_horizontalalignment(ha)
        label.set_verticalalignment(va)
        box = label.get_window_extent(renderer)
        within = label.axes.get_window_extent(renderer) if strict and label.axes else fig.bbox
        if not (within.x0 <= box.x0 and box.x1 <= within.x1 and within.y0 <= box.y0
                and box.y1 <= within.y1):  # fmt: skip
            return False
        if any(box.overlaps(other) for other in placed):
            return False
        if strict > 1 and any(line.intersects_bbox(box, filled=False) for line in lines):
            return False
        placed.append(box)
        return True

    for label in labels:
        line = label.get_window_extent(renderer).height * 72.0 / fig.dpi + 1.0
        further = [(dx, dy + (1 if dy > 0 else -1) * step * line, ha, va)
                   for step in range(1, 40) for dx, dy, ha, va in LABEL_PLACES[:4]]  # fmt: skip
        # Next to the point, clear of lines if it can be; then further out, then anywhere.
        if any(free(label, p, strict) for strict in (2, 1) for p in LABEL_PLACES):
            continue
        if not any(free(label, p, strict) for strict in (1, 0) for p in further):
            free(label, LABEL_PLACES[0], 0)  # nowhere free in 40 lines: as drawn first
        ax = next((a for a in fig.axes if a is label.axes), None)
        if ax is not None:  # a thin line from a label moved away to its point
            leader = ax.annotate(
                "", label.xy, label.xyann, textcoords="offset points",
                arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.4", "shrinkA": 0,
                            "shrinkB": 2},
            )  # fmt: skip
            leader.set_in_layout(False)


def _fixed_texts(fig: Figure) -> list[Any]:
    """The texts of ``fig`` that labels must keep clear of: each panel's title, axis
    labels and tick labels, and the legends' entries and titles."""
    out: list[Any] = []
    for ax in fig.axes:
        out += [ax.title, ax.xaxis.label, ax.yaxis.label]
        out += [*ax.get_xticklabels(), *ax.get_yticklabels()]
    for leg in fig.legends:
        out += [*leg.get_texts(), leg.get_title()]
    return [t for t in out if t.get_visible() and t.get_text().strip()]


def _marker_boxes(ax: Axes, dpi: float) -> list[Bbox]:
    """A box around each marker of ``ax``'s lines, in display units: where no label goes."""
    from matplotlib.transforms import Bbox

    boxes = []
    for line in ax.get_lines():
        if line.get_marker() in (None, "None", "", " ") or not line.get_visible():
            continue
        half = float(line.get_markersize()) / 2 * dpi / 72.0
        for x, y in ax.transData.transform(line.get_xydata()):
            boxes.append(Bbox.from_extents(x - half, y - half, x + half, y + half))
    return boxes


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
    # A gold row without items has no shares (0/0): its cells are blank ("–"), not 0%.
    shares = np.divide(counts, totals, out=np.full_like(counts, np.nan), where=totals > 0)
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
        top = float(np.nanmax(values)) if np.isfinite(values).any() else 0.0
        top = top if top > 0 else 1.0
        ax.imshow(values, cmap="Blues", vmin=0, vmax=top, aspect="auto")
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                dark = values[i, j] > 0.6 * top
                ax.text(
                    j,
                    i,
                    "–" if np.isnan(values[i, j]) else fmt.format(values[i, j]),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if dark else "black",
                )
        if ncol > len(labels):  # set the unparsed column apart
            ax.axvline(len(labels) - 0.5, color="0.3", linewidth=1.2)
        # Upright labels of crowded columns ran into each other; upwards they cannot.
        ax.set_xticks(range(len(cols)), cols, rotation=90)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        ax.set_title(title)
        ax.grid(False)
    runs = f"{row['runs']} runs summed" if row["runs"] > 1 else "1 run"
    fig.suptitle(
        f"{series_name(row)} · {row['task']} · k={row['k']}\n"
        f"n={row['n']} · {runs} · macro F1 {_score(row['macro_f1'])}",
    )
    return save(fig, path)


def _score(value: float | None) -> str:
    """A score as the figure prints it: n/a where it is undefined on the items (NaN).

    >>> _score(0.5), _score(float("nan"))
    ('0.500', 'n/a')
    """
    return "n/a" if value is None or value != value else f"{value:.3f}"
