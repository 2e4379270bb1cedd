"""Paired significance tests between two systems scored on the same items.

* :func:`mcnemar`: McNemar's test on the items exactly one of the two got right (exact
  binomial by default; the chi-square form with continuity correction on request);
* :func:`bootstrap_interval`: a seeded percentile bootstrap confidence interval of one
  system's accuracy, macro F1 (any corpus metric of :data:`nlieval.metrics.METRICS`) or
  mean per-item score over items resampled with replacement (averaged over seeds when a
  system has several);
* :func:`wilson_interval`: the Wilson score interval of a proportion of n items
  (``statsmodels``' ``proportion_confint``), the interval of an accuracy per bin;
* :func:`adjusted`: p-values of a family of tests corrected for multiple comparisons
  (Holm's step-down, or Benjamini-Hochberg's false discovery rate; ``statsmodels``);
* :func:`paired_bootstrap`: a seeded percentile bootstrap confidence interval of the
  difference ``B - A`` in accuracy, macro F1 or a per-item score (such as the JS distance to
  human labels) over items resampled in pairs, and a paired permutation p-value (each
  item's two outputs swapped at random), both from :mod:`scipy.stats`.

Inputs are per-item arrays in one item order; pairing the records of two run folders by
item is the caller's part (:func:`nlieval.analyses.compare.compare_runs`). The defaults
(:data:`RESAMPLES` draws, :data:`CONFIDENCE`) are those of every command.

>>> r = mcnemar([1, 1, 1, 0, 1], [0, 0, 1, 0, 1])
>>> (r.a_only, r.b_only, round(r.p_value, 3))
(2, 0, 0.5)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .metrics import METRICS, Corpus
from .settings import setting

#: What ``metric`` may name besides a corpus metric of :data:`nlieval.metrics.METRICS`:
#: the mean of per-item scores (a gold NLL, a JS distance per item).
MEAN = "mean"
#: The bootstrap's defaults, for every interval and test of the package.
RESAMPLES = 2000
CONFIDENCE = 0.95
#: Corrections for multiple comparisons: a setting's value -> the name a table prints
#: (None: no correction) and the method of ``statsmodels``' ``multipletests``.
CORRECTIONS: dict[str, tuple[str | None, str | None]] = {
    "holm": ("Holm", "holm"),
    "bh": ("Benjamini-Hochberg", "fdr_bh"),
    "none": (None, None),
}


@dataclass(frozen=True, kw_only=True)
class Resampling:
    """The bootstrap's draws and seed, as a command's settings.

    >>> Resampling().resamples
    2000
    """

    resamples: int = setting(RESAMPLES, help="bootstrap draws")
    seed: int = setting(0, help="seed of the bootstrap")


@dataclass(frozen=True)
class McNemar:
    """McNemar's test: ``a_only`` items only A got right, ``b_only`` only B; the
    statistic is min(a_only, b_only) for the exact test, else the corrected chi-square."""

    a_only: int
    b_only: int
    statistic: float
    p_value: float
    exact: bool


def mcnemar(
    a_correct: Sequence[bool] | np.ndarray,
    b_correct: Sequence[bool] | np.ndarray,
    *,
    exact: bool = True,
) -> McNemar:
    """McNemar's test of two systems' correctness on the same items (two-sided).

    The exact test is a binomial test of ``b_only`` successes in ``a_only + b_only``
    trials at p = 1/2; ``exact=False`` gives the chi-square statistic with continuity
    correction, (|a_only - b_only| - 1)^2 / (a_only + b_only), on 1 degree of freedom.

    >>> r = mcnemar([True] * 30 + [False] * 10, [True] * 20 + [False] * 20, exact=False)
    >>> r.a_only, r.b_only, round(r.statistic, 3), round(r.p_value, 4)
    (10, 0, 8.1, 0.0044)
    """
    # scipy.stats takes about a second to import: only the commands that test load it.
    from scipy import stats

    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"mcnemar needs two equal-length lists, got {a.shape} and {b.shape}")
    a_only = int(np.sum(a & ~b))
    b_only = int(np.sum(~a & b))
    n = a_only + b_only
    if n == 0:
        return McNemar(0, 0, 0.0, 1.0, exact)
    if exact:
        p = stats.binomtest(b_only, n, 0.5, alternative="two-sided").pvalue
        return McNemar(a_only, b_only, float(min(a_only, b_only)), float(min(1.0, p)), True)
    chi2 = (abs(a_only - b_only) - 1) ** 2 / n
    return McNemar(a_only, b_only, float(chi2), float(stats.chi2.sf(chi2, 1)), False)


@dataclass(frozen=True)
class PairedBootstrap:
    """A metric of A and of B, their difference ``b - a``, its ``confidence`` interval
    [``low``, ``high``] over ``resamples`` paired resamples, and the permutation p-value."""

    metric: str
    a: float
    b: float
    diff: float
    low: float
    high: float
    p_value: float
    confidence: float
    resamples: int
    seed: int


def _metric(name: str) -> Corpus | None:
    """The corpus function of the metric ``name`` (None: ``mean``, per-item scores)."""
    if name == MEAN:
        return None
    m = METRICS.get(name)
    if m is None or m.corpus is None:
        known = [x.name for x in METRICS.values() if x.corpus is not None] + [MEAN]
        raise ValueError(f"unknown metric {name!r}; one of {', '.join(known)}")
    return m.corpus


#: Said under a table that prints an interval as n/a (NaN).
INTERVAL_NA_NOTE = (
    "[n/a]: no interval, the metric is undefined on some bootstrap resamples of the items "
    "(macro F1 where a resample holds one gold class)"
)
#: Said under a table of tests that prints a difference, an interval or a p-value as n/a.
TEST_NA_NOTE = (
    "n/a: the metric is undefined on the items (macro F1 with one gold class) or on some "
    "of their resamples: no interval or p-value; such a test is left out of its family "
    "of multiple comparisons"
)


def _bounds(boot: Any, value: float) -> tuple[float, float]:
    """The percentile interval of a ``scipy.stats.bootstrap`` result, by the package's
    rule for an undefined metric: NaN (n/a) when the observed ``value`` is NaN or when
    any resample's value is (dropping those resamples would condition the interval on
    the rare class being drawn, and bias it); the zero-width interval at ``value`` only
    where SciPy gives none because every resample had one and the same value."""
    if np.isnan(value):
        return math.nan, math.nan
    dist = np.asarray(boot.bootstrap_distribution, dtype=float)
    if np.isnan(dist).any():
        return math.nan, math.nan
    ci = boot.confidence_interval
    low, high = float(ci.low), float(ci.high)
    if np.isnan(low) and dist.size and np.all(dist == dist.flat[0]):
        low = high = value
    return low, high


@dataclass(frozen=True)
class Interval:
    """A metric's ``value`` on all items and its ``confidence`` interval [``low``,
    ``high``] over ``resamples`` bootstrap resamples of the items, seeded by ``seed``."""

    metric: str
    value: float
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int


def bootstrap_interval(
    values: Sequence[Sequence[object]] | np.ndarray,
    gold: Sequence[object] | np.ndarray | None = None,
    *,
    metric: str = "accuracy",
    labels: Sequence[object] | None = None,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Interval:
    """The percentile bootstrap interval of one system's ``metric`` over items drawn with
    replacement (``scipy.stats.bootstrap``).

    ``values`` has one row per seed (replicate) of the system and one column per item,
    the items in one order in every row: predictions against ``gold`` (``accuracy``,
    ``macro_f1`` over ``labels``, by default the labels present), or per-item scores
    (``mean``; no gold). The statistic of a resample is the metric of each row on the
    drawn items, averaged over the rows: the mean over seeds a table shows, with the
    items (not the seeds) as the source of the interval. Seeded: the same call gives the
    same interval.

    Where the metric is undefined (NaN: macro F1 of items with one gold class) on all
    the items, or on any resample of them, the interval is n/a (NaN, NaN): resamples
    are never dropped, which would condition the interval on the rare class being drawn.
    A zero-width interval at the value is only that of resamples all equal.

    >>> r = bootstrap_interval([[1, 1, 1, 1]], [1, 1, 1, 1], resamples=100)
    >>> r.value, r.low, r.high
    (1.0, 1.0, 1.0)
    """
    # scipy.stats takes about a second to import: only the commands that test load it.
    from scipy import stats

    corpus = _metric(metric)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    rows = [list(r) for r in values]
    n = len(rows[0]) if rows else 0
    if n == 0 or any(len(r) != n for r in rows):
        raise ValueError("need one or more equal, non-empty rows of items")
    if corpus is None:
        if gold is not None:
            raise ValueError("metric 'mean' averages per-item scores: pass no gold")
        v = np.array(rows, dtype=float)
        if not np.isfinite(v).all():
            raise ValueError("per-item scores must be finite numbers")

        def stat_of(idx: np.ndarray) -> float:
            return float(np.mean([np.mean(row[idx]) for row in v]))

    else:
        if gold is None:
            raise ValueError(f"metric {metric!r} needs the gold labels")
        names = sorted(
            {*(str(x) for r in rows for x in r), *map(str, gold), *map(str, labels or ())}
        )
        codes = {name: i for i, name in enumerate(names)}
        g = np.array([codes[str(x)] for x in gold])
        if len(g) != n:
            raise ValueError(f"gold has {len(g)} items, the predictions {n}")
        v = np.array([[codes[str(x)] for x in r] for r in rows])
        classes = None if labels is None else np.array([codes[str(x)] for x in labels])
        score: Corpus = corpus

        def stat_of(idx: np.ndarray) -> float:
            return float(np.mean([score(g[idx], row[idx], classes) for row in v]))

    everything = np.arange(n)
    value = stat_of(everything)
    if np.isnan(value):
        return Interval(metric, value, math.nan, math.nan, confidence, resamples, seed)
    with warnings.catch_warnings():
        # SciPy warns of NaN or degenerate resamples; _bounds says what they mean.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        boot = stats.bootstrap(
            (everything,),
            stat_of,
            vectorized=False,
            n_resamples=resamples,
            confidence_level=confidence,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
    low, high = _bounds(boot, value)
    return Interval(metric, value, low, high, confidence, resamples, seed)


def paired_bootstrap(
    a: Sequence[object] | np.ndarray,
    b: Sequence[object] | np.ndarray,
    gold: Sequence[object] | np.ndarray | None = None,
    *,
    metric: str = "accuracy",
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> PairedBootstrap:
    """Compare A and B on the same items: predictions ``a`` and ``b`` against ``gold``
    (``accuracy``, ``macro_f1``), or per-item scores ``a`` and ``b`` (``mean``; no gold).

    The interval is the percentile bootstrap of ``metric(B) - metric(A)`` over items drawn
    with replacement in pairs (``scipy.stats.bootstrap``, ``paired=True``); the p-value is
    that of a paired permutation test of the same difference (``scipy.stats.permutation_test``,
    ``permutation_type="samples"``: each item's two outputs swapped at random). Both are
    seeded by ``seed``: the same call gives the same numbers.

    Where the metric is undefined (NaN: macro F1 of items with one gold class), the
    difference is NaN, and so are the interval and p (n/a; :func:`adjusted` leaves such
    a test out of its family). Where it is defined on the items but not on some
    resamples or permutations, the interval (any NaN resample) or p (any NaN
    permutation) is n/a likewise, never computed from the defined draws only.

    When B is right exactly where A is wrong on every item, every resample has the same
    difference, so the interval is that one point:

    >>> r = paired_bootstrap([0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1], resamples=200)
    >>> r.a, r.b, r.diff, r.low, r.high
    (0.0, 1.0, 1.0, 1.0, 1.0)
    """
    # scipy.stats takes about a second to import: only the commands that test load it.
    from scipy import stats

    corpus = _metric(metric)
    av, bv = np.asarray(a), np.asarray(b)
    if av.shape != bv.shape or av.ndim != 1 or len(av) == 0:
        raise ValueError(f"need two equal, non-empty lists of items, got {av.shape}, {bv.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if corpus is None:
        if gold is not None:
            raise ValueError("metric 'mean' averages per-item scores: pass no gold")
        av, bv = av.astype(float), bv.astype(float)
        if not (np.isfinite(av).all() and np.isfinite(bv).all()):
            raise ValueError("per-item scores must be finite numbers")

        def diff(x: np.ndarray, y: np.ndarray) -> float:
            return float(np.mean(y)) - float(np.mean(x))

        data: tuple[np.ndarray, ...] = (av, bv)
        value_a, value_b = float(np.mean(av)), float(np.mean(bv))
    else:
        if gold is None:
            raise ValueError(f"metric {metric!r} needs the gold labels")
        # Labels to integer codes, one code per distinct label across all three lists.
        codes = {
            v: i for i, v in enumerate(sorted({*map(str, av), *map(str, bv), *map(str, gold)}))
        }
        g = np.array([codes[str(v)] for v in gold])
        if g.shape != av.shape:
            raise ValueError(f"gold has {len(g)} items, the predictions {len(av)}")
        av = np.array([codes[str(v)] for v in av])
        bv = np.array([codes[str(v)] for v in bv])

        score: Corpus = corpus

        def diff(x: np.ndarray, y: np.ndarray, gg: np.ndarray) -> float:  # type: ignore[misc]
            return score(gg, y, None) - score(gg, x, None)

        data = (av, bv, g)
        value_a, value_b = score(g, av, None), score(g, bv, None)
    observed = value_b - value_a
    rng = np.random.default_rng(seed)
    if np.isnan(observed):
        low = high = p = math.nan
    elif np.array_equal(av, bv):
        low = high = 0.0
        p = 1.0
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.DegenerateDataWarning)
            boot = stats.bootstrap(
                data,
                diff,
                paired=True,
                vectorized=False,
                n_resamples=resamples,
                confidence_level=confidence,
                method="percentile",
                random_state=rng,
            )
        low, high = _bounds(boot, observed)

        def perm_stat(x: np.ndarray, y: np.ndarray) -> float:
            if corpus is None:
                return float(np.mean(y)) - float(np.mean(x))
            return corpus(g, y, None) - corpus(g, x, None)

        perm = stats.permutation_test(
            (av, bv),
            perm_stat,
            permutation_type="samples",
            vectorized=False,
            n_resamples=resamples,
            alternative="two-sided",
            random_state=rng,
        )
        # A NaN permuted difference never compares as extreme: counting it would
        # shrink p, so a test with any undefined permutation has no p-value.
        p = math.nan if np.isnan(perm.null_distribution).any() else float(perm.pvalue)
    return PairedBootstrap(
        metric, value_a, value_b, observed, low, high, p, confidence, resamples, seed
    )


def wilson_interval(
    proportion: float, n: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval of a ``proportion`` of ``n`` items (an accuracy; a mean
    over seeds counts as ``proportion * n`` successes), through ``statsmodels``'
    ``proportion_confint``: inside [0, 1] and not empty at 0 or 1, where the normal
    approximation of a small bin is. (nan, nan) for no items.

    >>> [round(x, 4) for x in wilson_interval(0.5, 10)]  # 5 of 10
    [0.2366, 0.7634]
    >>> [round(x, 4) for x in wilson_interval(1.0, 4)]  # 4 of 4: 4 / (4 + 1.96^2) below
    [0.5101, 1.0]
    """
    if n <= 0:
        return float("nan"), float("nan")
    # statsmodels takes a while to import: only the tables and figures of bins load it.
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(proportion * n, n, alpha=1 - confidence, method="wilson")
    return float(low), float(high)


def adjusted(p_values: Sequence[float], correction: str = "holm") -> list[float]:
    """The p-values of one family of tests adjusted for multiple comparisons by
    ``correction`` (a key of :data:`CORRECTIONS`: ``holm``, Holm's step-down method,
    which bounds the family-wise error rate; ``bh``, Benjamini-Hochberg, which bounds the
    false discovery rate; ``none``, as they are), through ``statsmodels``'
    ``multipletests``.

    >>> adjusted([0.01, 0.04, 0.03])  # Holm: 3 x 0.01, then max(2 x 0.03, 0.03), ...
    [0.03, 0.06, 0.06]

    An n/a p-value (NaN: a test whose metric is undefined) is left out of the family:
    it stays NaN, and the others are corrected as a family of the tests made.

    >>> adjusted([0.01, float("nan"), 0.03])  # Holm over two tests: 2 x 0.01, 0.03
    [0.02, nan, 0.03]
    >>> adjusted([0.01, 0.04, 0.03], "none")
    [0.01, 0.04, 0.03]
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; one of {', '.join(CORRECTIONS)}")
    method = CORRECTIONS[correction][1]
    values = [float(p) for p in p_values]
    # An n/a p-value (NaN: the metric undefined) is no test: it stays n/a and is left
    # out of the family, so the others are corrected for the tests actually made.
    kept = [i for i, p in enumerate(values) if not math.isnan(p)]
    if method is None or not kept:
        return values
    # statsmodels takes a while to import: only the commands that correct load it.
    from statsmodels.stats.multitest import multipletests

    out = list(values)
    for i, p in zip(kept, multipletests([values[i] for i in kept], method=method)[1], strict=True):
        out[i] = float(p)
    return out
