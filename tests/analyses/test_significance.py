"""Paired significance tests, checked against values derived without nlieval's code."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import f1_score
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from nlieval.metrics import macro_f1
from nlieval.significance import bootstrap_interval, mcnemar, paired_bootstrap


def _pairs(both: int, a_only: int, b_only: int, neither: int) -> tuple[list[bool], list[bool]]:
    a = [True] * both + [True] * a_only + [False] * b_only + [False] * neither
    b = [True] * both + [False] * a_only + [True] * b_only + [False] * neither
    return a, b


@pytest.mark.parametrize("cells", [(40, 12, 3, 45), (5, 0, 0, 5), (10, 7, 7, 1), (0, 30, 11, 9)])
@pytest.mark.parametrize("exact", [True, False])
def test_mcnemar_agrees_with_statsmodels(cells: tuple[int, int, int, int], exact: bool) -> None:
    both, a_only, b_only, neither = cells
    a, b = _pairs(*cells)
    ours = mcnemar(a, b, exact=exact)
    assert (ours.a_only, ours.b_only) == (a_only, b_only)
    if a_only + b_only:
        # statsmodels only then: its chi-square divides by the discordant count.
        theirs = sm_mcnemar([[both, a_only], [b_only, neither]], exact=exact, correction=True)
        assert ours.statistic == pytest.approx(theirs.statistic)
        assert ours.p_value == pytest.approx(theirs.pvalue)
    else:
        assert ours.p_value == 1.0  # no discordant item: nothing tells the systems apart


def test_exact_mcnemar_by_hand() -> None:
    # 2 discordant items, both for A: P(X <= 0 or X >= 2 | n=2, p=1/2) = 1/4 + 1/4 = 1/2.
    assert mcnemar([1, 1, 0], [0, 0, 0]).p_value == pytest.approx(0.5)
    # 6 discordant, all for B: two-sided 2 * (1/2)^6 = 1/32.
    assert mcnemar([0] * 6, [1] * 6).p_value == pytest.approx(1 / 32)


def test_macro_f1_agrees_with_scikit_learn() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        gold = rng.integers(0, 3, 30)
        pred = rng.integers(0, 4, 30)
        # Over the classes with gold items (a predicted class 3 without gold items has
        # no recall, and is no class of the mean).
        want = f1_score(gold, pred, labels=np.unique(gold), average="macro", zero_division=0)
        assert macro_f1(gold, pred) == pytest.approx(want)


def test_bootstrap_interval_of_a_hand_derived_case() -> None:
    # Two items: A right on the first only, B on both. A resample of 2 items in pairs
    # holds the second item 0, 1 or 2 times (prob. 1/4, 1/2, 1/4): B - A is then 0, 1/2
    # or 1. The 95% percentile interval of that distribution is [0, 1], its mean 1/2.
    r = paired_bootstrap([1, 0], [1, 1], [1, 1], resamples=4000, seed=1)
    assert (r.a, r.b, r.diff) == (0.5, 1.0, 0.5)
    assert (r.low, r.high) == (0.0, 1.0)
    # Swapping A's and B's outputs per item: swapping the first changes nothing (both
    # right), swapping the second flips the sign; every assignment has |B - A| = 1/2, at
    # least the observed difference: with two items no test can call them different.
    assert r.p_value == pytest.approx(1.0)


def test_bootstrap_is_seeded_and_sees_a_real_difference() -> None:
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, 200)
    a = np.where(rng.random(200) < 0.5, gold, (gold + 1) % 3)  # about 50% right
    b = np.where(rng.random(200) < 0.8, gold, (gold + 1) % 3)  # about 80% right
    one = paired_bootstrap(a, b, gold, metric="macro_f1", resamples=500, seed=7)
    assert one == paired_bootstrap(a, b, gold, metric="macro_f1", resamples=500, seed=7)
    assert one.low > 0 and one.p_value < 0.01
    # The interval holds the observed difference and is narrower than the metric's range.
    assert one.low <= one.diff <= one.high and one.high - one.low < 0.3


def test_bootstrap_of_per_item_scores_matches_enumeration() -> None:
    # Per-item scores (e.g. JS distances): the permutation p-value of a mean difference
    # over 4 items enumerates 2^4 sign flips of the per-item differences.
    a = np.array([0.1, 0.2, 0.3, 0.4])
    b = np.array([0.3, 0.1, 0.6, 0.8])
    d = b - a
    flips = [np.mean(np.array(s) * d) for s in itertools.product([1, -1], repeat=4)]
    expected = np.mean([abs(f) >= abs(d.mean()) - 1e-12 for f in flips])
    r = paired_bootstrap(a, b, metric="mean", resamples=5000, seed=0)
    assert r.diff == pytest.approx(d.mean())
    assert r.p_value == pytest.approx(expected)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="equal"):
        mcnemar([1, 0], [1])
    with pytest.raises(ValueError, match="gold"):
        paired_bootstrap([1], [1])
    with pytest.raises(ValueError, match="finite"):
        paired_bootstrap([float("nan")], [0.1], metric="mean")
    with pytest.raises(ValueError, match="unknown metric"):
        paired_bootstrap([1], [1], [1], metric="bleu")


def test_macro_f1_over_given_classes_agrees_with_scikit_learn() -> None:
    # A table's macro F1 is over the task's labels that have gold items: absent ones
    # (2, 3) are no classes of the mean, never F1 0 (issue 42: "macro F1 5.6" of items of
    # one class); with one class present it is undefined.
    rng = np.random.default_rng(4)
    for _ in range(20):
        gold = rng.integers(0, 2, 25)
        pred = rng.integers(0, 3, 25)
        classes = np.array([0, 1, 2, 3])
        want = f1_score(gold, pred, labels=[0, 1], average="macro", zero_division=0)
        assert macro_f1(gold, pred, classes) == pytest.approx(want)
    assert np.isnan(macro_f1(np.zeros(5, int), np.arange(5) % 2, np.array([0, 1, 2])))


def test_one_system_interval_of_a_hand_derived_case() -> None:
    # Two items, one right: a resample holds the right item 0, 1 or 2 times (1/4, 1/2,
    # 1/4), so accuracy is 0, 1/2 or 1 and the 95% percentile interval is [0, 1].
    r = bootstrap_interval([[1, 0]], [1, 1], resamples=4000, seed=1)
    assert (r.value, r.low, r.high) == (0.5, 0.0, 1.0)


def test_one_system_interval_matches_the_normal_approximation() -> None:
    # 300 of 400 right: the binomial standard error is sqrt(.75 * .25 / 400) = 0.02165, so
    # a 95% interval is about 0.75 -+ 1.96 * 0.02165 = [0.7076, 0.7924].
    preds = [1] * 300 + [0] * 100
    r = bootstrap_interval([preds], [1] * 400, resamples=6000, seed=2)
    assert r.value == 0.75
    assert r.low == pytest.approx(0.7076, abs=0.008)
    assert r.high == pytest.approx(0.7924, abs=0.008)
    assert r == bootstrap_interval([preds], [1] * 400, resamples=6000, seed=2)
    # A second seed with the same predictions changes nothing; per-item scores (a mean)
    # get the mean -+ 1.96 s / sqrt(n) interval the same way.
    two = bootstrap_interval([preds, preds], [1] * 400, resamples=6000, seed=2)
    assert (two.low, two.high) == (r.low, r.high)
    scores = np.random.default_rng(5).normal(2.0, 1.0, 900)
    se = scores.std(ddof=1) / np.sqrt(900)
    m = bootstrap_interval([scores], metric="mean", resamples=6000, seed=0)
    assert m.low == pytest.approx(scores.mean() - 1.96 * se, abs=0.25 * se)
    assert m.high == pytest.approx(scores.mean() + 1.96 * se, abs=0.25 * se)


def test_one_system_interval_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="gold"):
        bootstrap_interval([[1, 0]])
    with pytest.raises(ValueError, match="equal"):
        bootstrap_interval([[1, 0], [1]], [1, 1])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval([[1]], [1], confidence=1.5)
