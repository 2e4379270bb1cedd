"""The figures the code draws, caught where it saves them: each call of
:meth:`matplotlib.figure.Figure.savefig` is recorded with its figure (then made as usual),
so a test can check what is drawn (axes, series, labels, reference lines) from the figure
object itself, not only that a PNG or PDF file exists; and whether a drawn figure's text
boxes run into one another."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure


@dataclass
class Saved:
    """The savefig calls seen: each figure with what it was saved to."""

    calls: list[tuple[Figure, Any]] = field(default_factory=list)

    @property
    def figures(self) -> list[Figure]:
        """Each figure saved, once, in the order first saved."""
        out: list[Figure] = []
        for fig, _ in self.calls:
            if not any(fig is f for f in out):
                out.append(fig)
        return out

    def saves_of(self, fig: Figure) -> int:
        """How many times ``fig`` was saved."""
        return sum(1 for f, _ in self.calls if f is fig)


def record_savefig(monkeypatch: pytest.MonkeyPatch) -> Saved:
    """Record every figure saved from now on (until ``monkeypatch`` is undone)."""
    saved = Saved()
    original = Figure.savefig

    def savefig(self: Figure, fname: Any, *args: Any, **kwargs: Any) -> Any:
        saved.calls.append((self, fname))
        return original(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return saved


def series_of(ax: Any) -> dict[str, tuple[list[float], list[float]]]:
    """Each named series of ``ax``: its legend label -> (x values, y values), from its
    labelled lines and its error-bar series (whose label is the container's); lines
    matplotlib names itself (``_child``, ``_nolegend_``) are left out."""
    from matplotlib.container import ErrorbarContainer

    out: dict[str, tuple[list[float], list[float]]] = {}
    for line in ax.get_lines():
        label = str(line.get_label())
        if not label.startswith("_") and not _spans_axes(line):
            out[label] = _xy(line)
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer) and not str(c.get_label()).startswith("_"):
            out[str(c.get_label())] = _xy(c.lines[0])
    return out


def hlines_of(ax: Any) -> list[tuple[float, str]]:
    """The horizontal reference lines of ``ax`` (``axhline``): (level, label) each."""
    return [
        (float(line.get_ydata()[0]), str(line.get_label()))
        for line in ax.get_lines()
        if _spans_axes(line) and len(set(line.get_ydata())) == 1
    ]


def _spans_axes(line: Any) -> bool:
    # axhline draws x from 0 to 1 in axes coordinates, whatever the data limits.
    return [float(x) for x in line.get_xdata()] == [0.0, 1.0] and line.get_transform() != (
        line.axes.transData
    )


def _xy(line: Any) -> tuple[list[float], list[float]]:
    return [float(x) for x in line.get_xdata()], [float(y) for y in line.get_ydata()]


def points_of(ax: Any) -> dict[str, list[tuple[float, float]]]:
    """Each labelled scatter of ``ax``: its label -> its (x, y) points."""
    from matplotlib.collections import PathCollection

    return {
        str(c.get_label()): [(float(x), float(y)) for x, y in np.asarray(c.get_offsets())]
        for c in ax.collections
        if isinstance(c, PathCollection) and not str(c.get_label()).startswith("_")
    }


def bars_of(ax: Any) -> list[float]:
    """The heights of ``ax``'s bars, left to right."""
    from matplotlib.patches import Rectangle

    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    return [float(p.get_height()) for p in sorted(bars, key=lambda p: p.get_x())]


def text_boxes(fig: Any) -> list[tuple[str, Any]]:
    """Every visible, non-empty text that ``fig`` draws (titles, axis labels, the tick
    labels of the ticks in view, legend entries, annotations) with its window extent,
    after the figure is drawn."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts: list[Any] = []
    of_ticks: set[int] = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                of_ticks.update((id(tick.label1), id(tick.label2)))
            # The ticks drawn: those in the axis' view (matplotlib keeps others unseen).
            for tick in axis._update_ticks():
                texts += [lab for lab in (tick.label1, tick.label2) if lab.get_visible()]
    texts += [t for t in fig.findobj(Text) if id(t) not in of_ticks]
    out = []
    for t in texts:
        if not t.get_visible() or not t.get_text().strip():
            continue
        box = t.get_window_extent(renderer)
        if box.width > 0 and box.height > 0:
            out.append((t.get_text(), box))
    return out


def overlapping_texts(fig: Any, slack: float = 0.5) -> list[tuple[str, str]]:
    """The pairs of texts of ``fig`` whose boxes overlap by more than ``slack`` pixels in
    both directions (the touching edges of neighbouring labels are no overlap)."""
    found = []
    for (a, ba), (b, bb) in combinations(text_boxes(fig), 2):
        dx = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
        dy = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
        if dx > slack and dy > slack:
            found.append((a, b))
    return found
