"""A metric added to the metric table (``nlieval.metrics.METRICS``, one entry) reaches
``nlieval sci-report`` (its tables, in every format, and ``--json``), the view's confusion
page (sci-report's tables) and the view's results grids, each cell with the number
behind its text. The metric is balanced accuracy (scikit-learn's), on six hand-made
SciNLI items whose values are counted by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nlieval import metrics
from nlieval.cli import main
from nlieval.runs import RunFolder
from nlieval.types import SCI4, Record
from nlieval.view import ViewConfig, build_site
from tests.view.test_site import read_js

C, R, E, N = (lab.value for lab in SCI4)
# Item 2 wrong (a contrasting item answered reasoning): accuracy 5/6; recall per gold
# class C 2/3, R 1, E 1, N 1, so balanced accuracy (2/3 + 3) / 4 = 11/12.
ITEMS = [("1", C, C), ("2", C, R), ("3", C, C), ("4", R, R), ("5", E, E), ("6", N, N)]
BALANCED, ACCURACY = 11 / 12, 5 / 6


def _balanced(gold: np.ndarray, pred: np.ndarray, classes: np.ndarray | None = None) -> float:
    from sklearn.metrics import balanced_accuracy_score

    return float(balanced_accuracy_score(gold, pred))


@pytest.fixture
def balanced_accuracy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The metric table with balanced accuracy added, as a contributor adds a metric."""
    added = metrics.Metric("balanced_accuracy", "balanced accuracy", corpus=_balanced,
                           proportion=True)  # fmt: skip
    monkeypatch.setitem(metrics.METRICS, added.name, added)


def _folder(path: Path) -> str:
    # A chat model's folder (kind instruct: the view's confusion page shows it).
    path.mkdir(parents=True)
    labels = tuple(lab.value for lab in SCI4)
    flat = tuple(1 / len(labels) for _ in labels)
    loglik = tuple(float(x) for x in np.log(flat))
    RunFolder(path).append(
        [
            Record("sci", i, "chat", 0, 0, labels, loglik, flat, pred, gold)
            for i, gold, pred in ITEMS
        ]
    )
    (path / "config.json").write_text(json.dumps({"kind": "instruct"}))
    return str(path)


def _column(header: list[str], rows: list[list[Any]], name: str) -> list[Any]:
    return [row[header.index(name)] for row in rows]


def test_an_added_metric_reaches_sci_report(
    balanced_accuracy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path / "chat")
    report = tmp_path / "report.json"
    capsys.readouterr()
    assert main(["sci-report", folder, "--json", str(report)]) == 0
    text = capsys.readouterr().out
    head, _rule, row = [ln for ln in text.splitlines() if ln.startswith("|")][:3]
    names = [c.strip() for c in head.strip("|").split("|")]
    values = [c.strip() for c in row.strip("|").split("|")]
    assert values[names.index("balanced accuracy")] == f"{BALANCED:.3f}" == "0.917"
    assert values[names.index("accuracy")] == f"{ACCURACY:.3f}"
    (saved,) = json.loads(report.read_text())["rows"]
    assert saved["balanced_accuracy"] == pytest.approx(BALANCED)
    assert saved["per_run"][0]["balanced_accuracy"] == pytest.approx(BALANCED)
    capsys.readouterr()
    assert main(["sci-report", folder, "--format", "latex"]) == 0
    assert "balanced accuracy" in capsys.readouterr().out


def test_an_added_metric_reaches_the_views_grid_and_confusion_page(
    balanced_accuracy: None, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "chat")
    site = build_site(ViewConfig(runs=(folder,), out=str(tmp_path / "site")))
    meta = read_js(site / "data" / "meta.js")
    grids = {g["title"]: g for g in meta["grids"]}
    assert list(grids) == ["accuracy", "macro F1", "balanced accuracy"]
    grid = grids["balanced accuracy"]
    assert grid["command"].split("--metrics ")[1].split()[0] == "balanced_accuracy"
    (row,) = [r for r in grid["rows"] if r[0] == "chat"]
    (values,) = [v for v, r in zip(grid["values"], grid["rows"], strict=True) if r[0] == "chat"]
    assert row[1] == "0.917" and values[0] is None and values[1] == pytest.approx(BALANCED)
    # The confusion page shows sci-report's scores, the added metric among them, with the
    # numbers behind the texts.
    (scores, *_) = [b for b in meta["sci"]["blocks"] if "header" in b]
    assert _column(scores["header"], scores["rows"], "balanced accuracy") == ["0.917"]
    (value,) = _column(scores["header"], scores["values"], "balanced accuracy")
    assert value == pytest.approx(BALANCED)
