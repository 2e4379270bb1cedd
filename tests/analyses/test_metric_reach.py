"""A metric declared once in :data:`nlieval.metrics.METRICS` reaches every reader of
metrics (issue 44, part 3): balanced accuracy, registered by a test alone, is a cell of
``grid`` (with ``--ci`` an interval), a column of ``report`` and ``breakdown``, and a
tested difference of ``compare``, each with the value scikit-learn gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score

from nlieval.analyses import (
    CompareConfig,
    breakdown,
    breakdown_table,
    compare_runs,
    comparison_table,
)
from nlieval.choice import RunConfig
from nlieval.cli import main
from nlieval.ground import render
from nlieval.metrics import METRICS, Metric
from nlieval.reports import ReportConfig, report
from nlieval.runs import RunFolder
from nlieval.types import Record

NLI = ("entailment", "neutral", "contradiction")
GOLD = [0, 0, 0, 0, 1, 1, 2, 2]


def _balanced(gold: np.ndarray, pred: np.ndarray, classes: np.ndarray | None = None) -> float:
    # The mean recall over the classes with gold items, written for the test.
    recalls = [float(np.mean(pred[gold == c] == c)) for c in np.unique(gold)]
    return float(np.mean(recalls))


BALANCED = Metric("balanced_accuracy", "balanced accuracy", corpus=_balanced, proportion=True)


def _preds(model: int, seed: int) -> list[int]:
    # Each model and seed right on other items, so each side's number is its own.
    return [(g + (i + model + seed) % 3 // 2) % 3 for i, g in enumerate(GOLD)]


def _folder(path: Path, model: str, shift: int) -> str:
    rf = RunFolder(path)
    rf.start(RunConfig(model=model, tasks=("smoke",)))
    rf.append(
        Record("smoke", f"smoke-{i:02d}", model, 0, seed, NLI, (-0.5, -1.0, -2.0),
               (0.6, 0.3, 0.1), NLI[p], NLI[GOLD[i]], meta={"genre": "a" if i % 2 else "b"})
        for seed in (0, 1)
        for i, p in enumerate(_preds(shift, seed))
    )  # fmt: skip
    return str(path)


def _sklearn(shift: int, items: list[int] | None = None) -> list[float]:
    """Balanced accuracy of each seed by scikit-learn (of ``items`` only, when given)."""
    at = list(range(len(GOLD))) if items is None else items
    return [
        float(balanced_accuracy_score([GOLD[i] for i in at], [_preds(shift, s)[i] for i in at]))
        for s in (0, 1)
    ]


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    monkeypatch.setitem(METRICS, BALANCED.name, BALANCED)
    return _folder(tmp_path / "a", "m-a", 0), _folder(tmp_path / "b", "m-b", 1)


def test_an_added_metric_is_a_grid_cell_with_an_interval(
    folders: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = folders
    argv = ["grid", a, b, "--metrics", "balanced_accuracy", "--format", "json", "--no-average"]
    assert main([*argv, "--ci", "0.9", "--resamples", "50"]) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    for cell, shift in zip(cells, (0, 1), strict=True):
        assert cell["mean"] == pytest.approx(np.mean(_sklearn(shift)))
        assert cell["std"] == pytest.approx(np.std(_sklearn(shift), ddof=1))
        assert cell["low"] is not None and cell["low"] <= cell["high"]


def test_an_added_metric_is_a_column_of_report(folders: tuple[str, str]) -> None:
    a, _ = folders
    head, _rule, row = report(ReportConfig(runs=(str(a),), write=False)).splitlines()[:3]
    at = head.split(" | ").index("balanced accuracy")
    mean, std = np.mean(_sklearn(0)), np.std(_sklearn(0), ddof=1)
    assert row.split(" | ")[at] == f"{mean:.3f} ± {std:.3f}"


def test_an_added_metric_is_a_column_of_breakdown(folders: tuple[str, str]) -> None:
    a, _ = folders
    rows = breakdown(RunFolder(a).records(), ["genre"])
    odd = [i for i in range(len(GOLD)) if i % 2]
    assert rows[0]["genre"] == "a"
    assert rows[0]["balanced_accuracy"] == pytest.approx(np.mean(_sklearn(0, odd)))
    assert "balanced accuracy" in breakdown_table(rows, ["genre"]).splitlines()[0]
    assert "balanced_accuracy_std" in breakdown_table(rows, ["genre"], "csv").splitlines()[0]


def test_an_added_metric_is_compared(folders: tuple[str, str]) -> None:
    a, b = folders
    rows = compare_runs(CompareConfig(a=str(a), b=str(b), resamples=50))
    for row in (r for r in rows if r["seed"] is not None):
        seed = row["seed"]
        assert row["balanced_accuracy_a"] == pytest.approx(_sklearn(0)[seed])
        assert row["balanced_accuracy_b"] == pytest.approx(_sklearn(1)[seed])
        assert row["balanced_accuracy_p_family"].endswith("balanced accuracy, per seed")
    text = render(comparison_table(rows), "md")
    assert "balanced accuracy B - A [" in text and "balanced accuracy, per seed (2)" in text
