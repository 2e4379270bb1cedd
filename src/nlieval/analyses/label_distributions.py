"""ChaosNLI per-item measures: human and model label distributions, their divergences,
entropy bins and the human-vs-human baseline.

Part of :mod:`nlieval.analyses.chaosnli`, which imports every public name here (so
``chaosnli.divergences`` keeps working) and scores records with them.

The divergences follow the ChaosNLI reference evaluation (easonnie/ChaosNLI,
``src/evaluation/tools.py``) so that numbers compare with the published table:

- label order [e, n, c] for NLI and [1, 2] for alpha-NLI;
- the model distribution is clipped below at 1e-15 and renormalised (from logits via
  softmax first when only logits are given);
- the column the reference calls "JSD" is ``scipy.spatial.distance.jensenshannon`` with the
  natural log, i.e. the Jensen-Shannon *distance*; it is reported here as ``js_distance``,
  and the divergence (its square, per item, then averaged) as ``js_divergence``;
- ``kl`` is KL(human || model) (``scipy.stats.entropy(human, model)``), natural log.

Human vs human: no second independent set of 100 labels exists, so the human line compares
two halves of each item's labels: the JS distance between the halves, its expectation over
every way of splitting the labels in two (:func:`split_half_exact`: a sum over the
multivariate hypergeometric distribution of one half's counts), then averaged over items.
A Monte-Carlo estimate over random splits (:func:`split_half_js`) is kept for comparison.
It compares two sets of 50 labels, which differ more than two sets of 100 would; a
published value can replace it (:class:`HumanBaseline`).

>>> round(divergences([[50, 50]], [[0.5, 0.5]])["kl"], 6)
0.0
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..types import ALPHA, NLI3

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

#: The reference's floor for model probabilities (keeps KL finite).
EPS = 1e-15
NLI_ORDER: tuple[str, ...] = tuple(lab.value for lab in NLI3)
ALPHA_ORDER: tuple[str, ...] = tuple(lab.value for lab in ALPHA)
DIVERGENCES = ("js_distance", "js_divergence", "kl")


def canonical_order(labels: Iterable[str]) -> tuple[str, ...]:
    """The ChaosNLI order of a label set: [e, n, c] for NLI, [1, 2] for alpha-NLI.

    >>> canonical_order(["contradiction", "entailment", "neutral"])
    ('entailment', 'neutral', 'contradiction')
    """
    found = set(labels)
    for order in (NLI_ORDER, ALPHA_ORDER):
        if found == set(order):
            return order
    raise ValueError(f"labels {sorted(found)} are not a ChaosNLI label set (e/n/c or 1/2)")


def human_distribution(counts_or_dists: ArrayLike) -> NDArray[np.float64]:
    """Rows of label counts (or distributions) normalised to sum to 1.

    >>> human_distribution([[30, 70, 0]]).tolist()
    [[0.3, 0.7, 0.0]]
    """
    h = np.atleast_2d(np.asarray(counts_or_dists, dtype=float))
    # Negative, NaN or all-zero rows would turn every divergence into inf or NaN.
    if not np.isfinite(h).all() or (h < 0).any():
        raise ValueError("human label counts must be finite and not negative")
    if (h.sum(axis=1) <= 0).any():
        raise ValueError("an item has no human labels (its counts sum to 0)")
    # numpy types a reduction along an axis as Any; the row sums are float64 like h.
    totals: NDArray[np.float64] = h.sum(axis=1, keepdims=True)
    return h / totals


def model_distribution(probs: ArrayLike) -> NDArray[np.float64]:
    """Rows of model probabilities with entries below 1e-15 raised to it, renormalised
    (the reference's ``normalize_dist``).

    >>> float(model_distribution([[1.0, 0.0]])[0, 1]) > 0
    True
    """
    p = np.atleast_2d(np.asarray(probs, dtype=float))
    # abs() as in the reference: only values of magnitude below EPS are replaced.
    p = np.where(np.abs(p) < EPS, EPS, p)
    totals: NDArray[np.float64] = p.sum(axis=1, keepdims=True)
    return p / totals


def item_divergences(
    human_counts_or_dists: ArrayLike, model_probs: ArrayLike
) -> dict[str, NDArray[np.float64]]:
    """Per-item JS distance, JS divergence and KL(human || model), natural log.

    >>> d = item_divergences([[50, 50]], [[0.5, 0.5]])
    >>> float(d["js_distance"][0]), float(d["kl"][0])
    (0.0, 0.0)
    """
    # scipy.spatial and scipy.stats take a second to import: loaded here, where they are
    # used, not by every command that imports this package (`nlieval --help`).
    from scipy.spatial.distance import jensenshannon
    from scipy.stats import entropy

    h = human_distribution(human_counts_or_dists)
    m = model_distribution(model_probs)
    if h.shape != m.shape:
        raise ValueError(f"human {h.shape} and model {m.shape} distributions differ in shape")
    with np.errstate(invalid="ignore"):
        js = np.asarray(jensenshannon(h, m, axis=1), dtype=float)
    # Near-identical distributions can round to a tiny negative under the root: the
    # reference then sets the item's JS to 0. Non-finite input still gives nan.
    rounded = np.isnan(js) & np.isfinite(h).all(axis=1) & np.isfinite(m).all(axis=1)
    if rounded.any():
        log.debug("JS distance rounded to nan for %d items; set to 0", rounded.sum())
        js = np.where(rounded, 0.0, js)
    kl = np.asarray(entropy(h, m, axis=1), dtype=float)
    return {"js_distance": js, "js_divergence": js**2, "kl": kl}


def divergences(human_counts_or_dists: ArrayLike, model_probs: ArrayLike) -> dict[str, float]:
    """Mean JS distance, JS divergence and KL(human || model) over items, and ``n``.

    >>> d = divergences([[100, 0, 0]], [[1 / 3, 1 / 3, 1 / 3]])
    >>> round(d["kl"], 4), round(d["js_divergence"], 4), d["n"]
    (1.0986, 0.3183, 1)
    """
    per = item_divergences(human_counts_or_dists, model_probs)
    out = {name: float(np.mean(v)) for name, v in per.items()}
    out["n"] = len(per["kl"])
    return out


def entropy_bits(counts: ArrayLike) -> NDArray[np.float64]:
    """Entropy in bits of rows of label counts.

    >>> entropy_bits([[50, 50], [100, 0]]).tolist()
    [1.0, 0.0]
    """
    from scipy.stats import entropy  # slow to import: see item_divergences

    return np.asarray(entropy(np.atleast_2d(np.asarray(counts, float)), base=2, axis=1))


def bin_edges(values: ArrayLike, n_bins: int = 5) -> NDArray[np.float64]:
    """Quantile bin edges as in the reference: the minimum, then the i/n quantiles.

    Bins are [lo, hi) except the last, which is closed. Entropies of 100 labels take few
    values, so ties can make bins unequal in size (or empty).

    >>> bin_edges([0, 1, 2, 3], 2).tolist()
    [0.0, 1.5, 3.0]
    """
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")
    v = np.asarray(values, dtype=float)
    return np.concatenate([[v.min()], np.quantile(v, np.linspace(0, 1, n_bins + 1)[1:])])


@dataclass(frozen=True)
class HumanBaseline:
    """How the human-vs-human line is got: the split-half expectation computed exactly
    (``splits`` None, the default), a Monte-Carlo estimate over ``splits`` random halves
    per item (``seed``), or for a task in ``published`` that JS distance instead.

    >>> HumanBaseline(published={"chaosnli_snli": 0.1}).label("chaosnli_snli")
    'human (published)'
    >>> HumanBaseline().label("chaosnli_snli"), HumanBaseline(10).label("chaosnli_snli")
    ('human split-half (exact)', 'human split-half (estimate, 10 splits)')
    """

    splits: int | None = None
    seed: int = 0
    published: Mapping[str, float] = field(default_factory=dict)

    def label(self, task: str) -> str:
        if task in self.published:
            return "human (published)"
        if self.splits is None:
            return "human split-half (exact)"
        return f"human split-half (estimate, {self.splits} splits)"

    def item(self, counts: Sequence[int], item_id: str) -> tuple[float, float]:
        """One item's split-half JS distance and JS divergence, as this baseline asks."""
        if self.splits is None:
            return split_half_exact(counts, item_id)
        return split_half_js(counts, self.splits, self.seed, item_id)


def _checked_counts(counts: Sequence[int], item_id: str) -> tuple[int, ...]:
    c = np.asarray(counts, dtype=float)
    if (c < 0).any() or not np.isfinite(c).all() or (c != np.round(c)).any() or c.sum() < 2:
        raise ValueError(f"item {item_id!r}: split-half needs integer label counts, got {counts}")
    return tuple(int(x) for x in c)


#: The most count vectors of one half the exact split-half sums over (a few MB of arrays).
EXACT_SPLITS_MAX = 200_000


@lru_cache(maxsize=1 << 16)
def _split_half_exact(counts: tuple[int, ...]) -> tuple[float, float]:
    from scipy.spatial.distance import jensenshannon  # slow to import: see item_divergences
    from scipy.special import gammaln

    c = np.asarray(counts, dtype=np.int64)
    total, half = int(c.sum()), int(c.sum()) // 2
    # Every count vector of one half: all but the last label free, the last the rest.
    grids = np.meshgrid(*(np.arange(n + 1) for n in c[:-1]), indexing="ij")
    a = np.stack([g.ravel() for g in grids] + [half - sum(g.ravel() for g in grids)], axis=1)
    a = a[(a[:, -1] >= 0) & (a[:, -1] <= c[-1])]

    def log_comb(n: Any, k: Any) -> Any:
        return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)

    # P(half = a) = prod_i C(c_i, a_i) / C(total, half): multivariate hypergeometric.
    weight = np.exp(log_comb(c, a).sum(axis=1) - log_comb(total, half))
    halves_a, halves_b = human_distribution(a), human_distribution(c - a)
    with np.errstate(invalid="ignore"):
        js = np.asarray(jensenshannon(halves_a, halves_b, axis=1), dtype=float)
    js = np.nan_to_num(js, nan=0.0)  # equal halves can round below 0 under the root
    weight = weight / weight.sum()  # exactly 1 but for rounding
    return float(weight @ js), float(weight @ js**2)


def split_half_exact(counts: Sequence[int], item_id: str = "") -> tuple[float, float]:
    """The expected JS distance and JS divergence (natural log) between two halves of
    one item's human labels, over every split: one half takes ``sum // 2`` labels, each
    set of them equally likely (so its label counts are multivariate hypergeometric),
    the other half the rest. No randomness: the expectation :func:`split_half_js`
    estimates.

    Two labels, one of each: the halves always disagree, JS divergence ln 2.

    >>> [round(v, 6) for v in split_half_exact([1, 1])]
    [0.832555, 0.693147]
    >>> split_half_exact([100, 0, 0])
    (0.0, 0.0)
    """
    checked = _checked_counts(counts, item_id)
    # The exact sum visits every count vector of one half: bounded, as the counts come
    # from data files (ChaosNLI's 100 labels over 3 classes are 5,151 vectors).
    size = math.prod(n + 1 for n in checked[:-1])
    if size > EXACT_SPLITS_MAX:
        raise ValueError(
            f"item {item_id!r}: {sum(checked)} human labels are too many for the exact "
            f"split-half ({size:,} count vectors, at most {EXACT_SPLITS_MAX:,}); "
            "the Monte-Carlo estimate instead: nlieval chaosnli --human-splits N"
        )
    return _split_half_exact(checked)


@lru_cache(maxsize=1 << 16)
def _split_half(
    counts: tuple[int, ...], splits: int, seed: int, item_id: str
) -> tuple[float, float]:
    from scipy.spatial.distance import jensenshannon  # slow to import: see item_divergences

    c = np.asarray(counts, dtype=np.int64)
    # Seeded per item (not per call order) so an item gets the same halves whatever
    # other items or systems are scored beside it.
    rng = np.random.default_rng([seed, zlib.crc32(item_id.encode("utf-8"))])
    half_a = rng.multivariate_hypergeometric(c, int(c.sum()) // 2, size=splits)
    # Both halves are human label distributions: no 1e-15 floor (that is for models).
    a, b = human_distribution(half_a), human_distribution(c - half_a)
    with np.errstate(invalid="ignore"):
        js = np.asarray(jensenshannon(a, b, axis=1), dtype=float)
    js = np.nan_to_num(js, nan=0.0)  # equal halves can round below 0 under the root
    return float(js.mean()), float((js**2).mean())


def split_half_js(
    counts: Sequence[int], splits: int = 10, seed: int = 0, item_id: str = ""
) -> tuple[float, float]:
    """Mean JS distance and mean JS divergence (natural log) between two random halves
    of one item's human labels, over ``splits`` splits. A half takes ``sum // 2`` labels
    drawn without replacement (numpy's multivariate hypergeometric), the other half the
    rest; the random stream is seeded by ``seed`` and the item id.

    >>> split_half_js([100, 0, 0])
    (0.0, 0.0)
    >>> 0 < split_half_js([50, 50, 0], splits=20, item_id="x")[0] < 0.2
    True
    """
    if splits < 1:
        raise ValueError("splits must be at least 1")
    return _split_half(_checked_counts(counts, item_id), splits, seed, item_id)


def human_line(items: pd.DataFrame, task: str, human: HumanBaseline) -> dict[str, Any]:
    """The human-vs-human row of a task on the distinct items of ``items`` (a frame of
    :func:`~nlieval.analyses.chaosnli.item_frame` with ``item_id`` and ``human_counts``):
    the split-half line (exact, or estimated), or the published JS distance of ``task``.
    ``js_divergence`` is None for a published value (the mean of squares is not the square
    of the mean).
    """
    if task in human.published:
        value = float(human.published[task])
        return {"label": human.label(task), "js_distance": value, "js_divergence": None}
    pairs = [
        human.item(c, str(i)) for i, c in zip(items["item_id"], items["human_counts"], strict=True)
    ]
    arr = np.asarray(pairs, dtype=float).reshape(-1, 2)
    return {
        "label": human.label(task),
        "js_distance": float(arr[:, 0].mean()) if len(arr) else float("nan"),
        "js_divergence": float(arr[:, 1].mean()) if len(arr) else float("nan"),
        "splits": human.splits,
        "seed": human.seed,
    }


def assign_bins(values: ArrayLike, edges: ArrayLike) -> NDArray[np.intp]:
    """Bin index of each value for :func:`bin_edges` (left-closed, last bin closed).

    >>> assign_bins([0, 1.5, 3], [0, 1.5, 3]).tolist()
    [0, 1, 1]
    """
    return np.searchsorted(np.asarray(edges, float)[1:-1], np.asarray(values, float), "right")
