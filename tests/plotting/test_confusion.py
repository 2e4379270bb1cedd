"""The confusion figure of ``sci-report``: a gold row without items has no shares."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from nlieval.plotting import studies


def test_a_gold_row_without_items_is_blank_not_zero_percent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kept: list[Any] = []
    save = studies.save
    monkeypatch.setattr(studies, "save", lambda fig, path: (kept.append(fig), save(fig, path))[1])
    # 4 items, all gold e (3 predicted e, 1 n): no gold n, so n's row is 0/0.
    row = {"model": "org/m", "checkpoint": None, "task": "scinli", "k": 0, "n": 4, "runs": 1,
           "labels": ["e", "n"], "confusion_columns": ["e", "n"], "confusion": [[3, 1], [0, 0]],
           "macro_f1": math.nan}  # fmt: skip
    studies.plot_confusion(row, tmp_path / "c.png", ncol=2)
    (fig,) = kept
    counts, shares = fig.axes[:2]
    # By hand: the e row 3/4 and 1/4; the n row undefined.
    assert [t.get_text() for t in shares.texts] == ["75%", "25%", "–", "–"]
    assert [t.get_text() for t in counts.texts] == ["3", "1", "0", "0"]
    assert "macro F1 n/a" in fig._suptitle.get_text()
