"""Resampling readers of a metric that can be undefined (macro F1 of items holding one
gold class is NaN): their interval and p-value are n/a, never a zero-width interval or
a minimal p, and an n/a test is left out of its family of multiple comparisons."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from statsmodels.stats.multitest import multipletests

from nlieval.analyses.compare import CompareConfig, compare_runs, comparison_table
from nlieval.cli import main
from nlieval.ground import render
from nlieval.runs import RunFolder
from nlieval.significance import (
    INTERVAL_NA_NOTE,
    TEST_NA_NOTE,
    adjusted,
    bootstrap_interval,
    paired_bootstrap,
)
from nlieval.types import Record

LABELS3 = ("entailment", "neutral", "contradiction")
C, E, N = "contradiction", "entailment", "neutral"


def _rec(task: str, i: int, model: str, pred: str, gold: str) -> Record:
    return Record(
        task, f"i{i}", model, 0, 0, LABELS3, (-1.0, -2.0, -3.0), (0.6, 0.3, 0.1), pred, gold
    )


# 39 contradiction items and 1 entailment item, all predicted contradiction: macro F1
# over the two gold classes is (F1_c + F1_e) / 2 = (2*39 / (39 + 40) + 0) / 2 = 39/79;
# a resample without the entailment item holds one class, so its macro F1 is undefined.
RARE_GOLD = [C] * 39 + [E]
RARE_PRED = [C] * 40


def test_interval_is_na_when_some_resamples_are_undefined() -> None:
    r = bootstrap_interval([RARE_PRED], RARE_GOLD, metric="macro_f1", labels=LABELS3, resamples=200)
    assert r.value == pytest.approx(39 / 79)
    assert math.isnan(r.low) and math.isnan(r.high)  # before: [0.494, 0.494]


def test_interval_is_na_when_the_value_is_undefined() -> None:
    r = bootstrap_interval([[C, E] * 20], [C] * 40, metric="macro_f1", resamples=50)
    assert math.isnan(r.value) and math.isnan(r.low) and math.isnan(r.high)


def test_zero_width_only_for_identical_resamples() -> None:
    # Every item right: every resample's accuracy is 1, the one point.
    r = bootstrap_interval([[C, E, N]], [C, E, N], metric="accuracy", resamples=50)
    assert (r.low, r.high) == (1.0, 1.0)


def test_paired_test_of_an_undefined_difference_is_na() -> None:
    gold = [C] * 40
    a, b = [C] * 40, [C] * 30 + [E] * 10
    f1 = paired_bootstrap(a, b, gold, metric="macro_f1", resamples=200)
    assert math.isnan(f1.diff) and math.isnan(f1.low) and math.isnan(f1.high)
    assert math.isnan(f1.p_value)  # before: 1/201, "significant"
    acc = paired_bootstrap(a, b, gold, metric="accuracy", resamples=200)
    assert acc.diff == pytest.approx(-10 / 40) and not math.isnan(acc.p_value)


@pytest.mark.parametrize(("correction", "method"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_leaves_na_p_values_out_of_the_family(correction: str, method: str) -> None:
    raw = [0.01, math.nan, 0.03, 0.02]
    rest = list(multipletests([0.01, 0.03, 0.02], method=method)[1])
    got = adjusted(raw, correction)
    assert math.isnan(got[1])
    assert [got[0], got[2], got[3]] == pytest.approx(rest)


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    """Tasks s and t with three classes (their macro F1 defined), task u with one."""
    mixed = [E, N, C, E, N, C, E, N]
    preds = {
        ("a", "s"): [E, N, N, N, N, E, E, C],
        ("b", "s"): [E, N, C, E, N, C, N, N],
        ("a", "t"): [E, E, E, E, N, N, N, N],
        ("b", "t"): [E, N, C, E, N, C, E, N],
        ("a", "u"): [C] * 8,
        ("b", "u"): [C] * 4 + [E] * 4,
    }
    out = []
    for side in ("a", "b"):
        folder = tmp_path / side
        folder.mkdir()
        RunFolder(folder).append(
            [
                _rec(task, i, f"m{side}", pred, [C] * 8 if task == "u" else mixed[i])
                for (s, task), ps in preds.items()
                if s == side
                for i, pred in enumerate(ps)
            ]
        )
        out.append(folder)
    return out[0], out[1]


def test_compare_leaves_the_undefined_test_out_of_its_family(tmp_path: Path) -> None:
    a, b = _folders(tmp_path)
    rows = {r["task"]: r for r in compare_runs(CompareConfig(a=str(a), b=str(b), resamples=256))}
    u = rows["u"]
    assert math.isnan(u["macro_f1_diff"]) and math.isnan(u["macro_f1_p"])
    assert all(math.isnan(x) for x in u["macro_f1_ci"])
    assert math.isnan(u["macro_f1_p_adj"])
    raw = [rows[t]["macro_f1_p"] for t in ("s", "t")]
    holm = list(multipletests(raw, method="holm")[1])
    assert [rows[t]["macro_f1_p_adj"] for t in ("s", "t")] == pytest.approx(holm)
    assert {r["macro_f1_p_tests"] for r in rows.values()} == {2}
    assert {r["mcnemar_p_tests"] for r in rows.values()} == {3}  # accuracy: defined
    table = render(comparison_table(list(rows.values())), "md")
    line = next(x for x in table.splitlines() if x.startswith("| u "))
    assert "nan" not in table
    assert line.split(" | ")[8:10] == ["n/a", "n/a"]
    assert TEST_NA_NOTE in table


def test_grid_ci_prints_na_for_an_interval_undefined_on_resamples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    RunFolder(folder).append(
        [_rec("t", i, "m", p, g) for i, (p, g) in enumerate(zip(RARE_PRED, RARE_GOLD, strict=True))]
    )
    assert main(["grid", str(folder), "--metrics", "accuracy,macro_f1", "--ci", "0.95"]) == 0
    out = capsys.readouterr().out
    assert "0.494 [n/a]" in out  # 39/79; before: 0.494 [0.494, 0.494]
    assert "0.975 [" in out and "0.975 [n/a]" not in out  # accuracy 39/40: defined
    assert INTERVAL_NA_NOTE in out
