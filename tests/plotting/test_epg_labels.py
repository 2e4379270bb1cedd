"""The threshold labels of an EPG figure: points that crowd together (the ten thresholds
of a real scan often mark nearly the same share of items) get labels that do not touch."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

from nlieval.plotting import save
from nlieval.plotting.studies import epg_figure

# (threshold, % contaminated, EPG) as the SmolLM2 scan of SNLI dev gives them: thresholds
# 0 to 0.2 mark the same items, 0.3 and 0.4 a few fewer.
POINTS = [(0.0, 36.0, 0.0013), (0.1, 36.0, 0.0013), (0.2, 36.0, 0.0013), (0.3, 35.8, 0.0008),
          (0.4, 35.5, 0.0013), (0.5, 34.5, 0.0043), (0.6, 28.6, 0.0033),
          (0.7, 19.3, -0.0048), (0.8, 9.0, -0.0031), (0.9, 6.7, -0.0034)]  # fmt: skip


def _rows() -> list[dict[str, Any]]:
    return [
        {"task": "snli", "model": "smollm2-135m", "checkpoint": None, "k": k, "threshold": t,
         "pct_contaminated": p, "epg": e - 0.004 * k, "metric": "accuracy"}
        for k in (0, 1, 5)
        for t, p, e in POINTS
    ]  # fmt: skip


def _label_boxes(fig: Any) -> tuple[list[str], list[Any]]:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    return [t.get_text() for t in ax.texts], [t.get_window_extent(renderer) for t in ax.texts]


@pytest.mark.parametrize("width", [3.3, 6.5])
def test_labels_of_close_points_do_not_overlap(width: float, tmp_path: Path) -> None:
    fig = epg_figure(_rows(), width=width)
    texts, boxes = _label_boxes(fig)
    # One label per point of the first line: thresholds 0 to 0.2 mark the same items and
    # give one point, labelled with their range; the leaders of moved labels have no text.
    want = ["t=0–0.2", *(f"t={t:g}" for t, _, _ in POINTS[3:])]
    assert sorted(t for t in texts if t) == sorted(want)
    boxes = [b for t, b in zip(texts, boxes, strict=True) if t]
    texts = [t for t in texts if t]
    for (ta, a), (tb, b) in combinations(zip(texts, boxes, strict=True), 2):
        assert not a.overlaps(b), f"{ta} and {tb} overlap"
    # Every label is inside the figure (one cut at its edge cannot be read).
    frame = fig.bbox
    for text, box in zip(texts, boxes, strict=True):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, text
        assert frame.y0 <= box.y0 and box.y1 <= frame.y1, text
    # Saving lays the figure out again: the labels stay where they were measured.
    save(fig, tmp_path / "epg.pdf")
    again_texts, again = _label_boxes(fig)
    again = [b for t, b in zip(again_texts, again, strict=True) if t]
    assert [v for b in again for v in b.bounds] == pytest.approx(
        [v for b in boxes for v in b.bounds]
    )
