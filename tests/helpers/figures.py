"""Checks of a drawn matplotlib figure: its text boxes do not run into one another."""

from __future__ import annotations

from itertools import combinations
from typing import Any


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
