"""Implicit relations for :mod:`nlieval.sci.distant`: the unlabelled candidate pairs
of documents (:func:`implicit_candidates`), pseudo-labelled by a classifier and filtered
on confidence and adjacency (:func:`pseudo_label`, :func:`select_pseudo_labelled`), and
:func:`classifier_fn`, which adapts a classifier backend to the :data:`ClassifyFn` they
call.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..types import SCI4, Label
from .distant_pairs import (
    BuildResult,
    Document,
    Pair,
    class_counts,
    match_linking_phrase,
    nonadjacent_pairs,
)

#: Probabilities over :data:`SCI4` (in that order) for each (sentence 1, sentence 2).
ClassifyFn = Callable[[Sequence[tuple[str, str]]], Sequence[Sequence[float]]]


def implicit_candidates(
    docs: Iterable[Document], seed: int = 0, nonadjacent_ratio: float = 1.0
) -> list[Pair]:
    """Unlabelled candidates for pseudo-labelling: every adjacent pair with no linking
    phrase in either sentence, plus per document ``round(nonadjacent_ratio * adjacent)``
    non-adjacent pairs under the same rule.

    A sentence that opens with a linking phrase is tied to the one before it (an explicit
    pair when that one is there); as either sentence of an implicit pair it would show
    the class it should hide. The non-adjacent pairs are the neutral candidates; the
    adjacency filter of :func:`select_pseudo_labelled` drops those the classifier calls a
    relation.

    >>> doc = Document("d", (("A.", "B.", "Thus, C.", "D.", "E."),))
    >>> cands = implicit_candidates([doc])
    >>> [(p.i, p.j) for p in cands if p.adjacent], [2 in (p.i, p.j) for p in cands]
    ([(0, 1), (3, 4)], [False, False, False, False])
    """
    out: list[Pair] = []
    for doc in docs:
        sents = doc.sentences
        adjacent = [
            Pair(doc.id, i, i + 1, sents[i], sents[i + 1])
            for i in doc.adjacent_starts()
            if match_linking_phrase(sents[i]) is None and match_linking_phrase(sents[i + 1]) is None
        ]
        n_far = math.floor(nonadjacent_ratio * len(adjacent) + 0.5)
        out += adjacent + nonadjacent_pairs(doc, n_far, seed, plain_starts=True)
    return out


def _check_probs(pair: Pair, probs: Sequence[float]) -> None:
    ok = len(probs) == len(SCI4) and all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in probs)
    if not ok or abs(sum(probs) - 1.0) > 1e-3:
        raise ValueError(
            f"pair {pair.id}: expected {len(SCI4)} probabilities summing to 1 "
            f"({', '.join(lab.value for lab in SCI4)}), got {list(probs)}"
        )


def select_pseudo_labelled(
    pairs: Sequence[Pair], probs: Sequence[Sequence[float]], threshold: float
) -> BuildResult:
    """Label each pair with its most probable class; keep it when that probability is at
    least ``threshold`` and the label agrees with adjacency (a relation on an adjacent
    pair, neutral on a non-adjacent one). Every drop is counted by reason.

    >>> far = Pair("d", 0, 2, "A.", "C.")
    >>> r = select_pseudo_labelled([far], [[0.95, 0.02, 0.02, 0.01]], 0.9)
    >>> len(r.pairs), r.stats["dropped_nonadjacent_relation"]
    (0, 1)
    """
    if len(probs) != len(pairs):
        raise ValueError(f"{len(probs)} probability vectors for {len(pairs)} pairs")
    kept: list[Pair] = []
    stats: Counter[str] = Counter()
    for pair, vec in zip(pairs, probs, strict=True):
        _check_probs(pair, vec)
        best = max(range(len(SCI4)), key=lambda c: vec[c])
        label, conf = SCI4[best], float(vec[best])
        if conf < threshold:
            stats["dropped_below_threshold"] += 1
        elif label is Label.NEUTRAL and pair.adjacent:
            stats["dropped_adjacent_neutral"] += 1
        elif label is not Label.NEUTRAL and not pair.adjacent:
            stats["dropped_nonadjacent_relation"] += 1
        else:
            kept.append(
                Pair(pair.doc_id, pair.i, pair.j, pair.sentence1, pair.sentence2, label, None, conf)
            )
    reasons = ("below_threshold", "adjacent_neutral", "nonadjacent_relation")
    # Always the same keys in the same order, whatever happened first.
    summary = {"candidates": len(pairs)} | {f"dropped_{r}": stats[f"dropped_{r}"] for r in reasons}
    counts = class_counts(kept)
    return BuildResult(tuple(kept), counts, counts, summary)


def pseudo_label(
    pairs: Sequence[Pair], classify_fn: ClassifyFn, threshold: float = 0.9, batch_size: int = 256
) -> BuildResult:
    """:func:`select_pseudo_labelled` with probabilities from ``classify_fn``, called on
    batches of ``(sentence1, sentence2)``.

    >>> fn = lambda batch: [[0.0, 0.0, 0.0, 1.0] for _ in batch]
    >>> r = pseudo_label([Pair("d", 0, 2, "A.", "C."), Pair("d", 0, 1, "A.", "B.")], fn)
    >>> [p.label.value for p in r.pairs], r.stats["dropped_adjacent_neutral"]
    (['neutral'], 1)
    """
    probs: list[Sequence[float]] = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        out = classify_fn([(p.sentence1, p.sentence2) for p in batch])
        if len(out) != len(batch):
            raise ValueError(f"the classifier gave {len(out)} answers for {len(batch)} pairs")
        probs.extend(out)
    return select_pseudo_labelled(pairs, probs, threshold)


def classifier_fn(backend: Any) -> ClassifyFn:
    """Adapt a :class:`~nlieval.backends.base.ClassifierBackend` (log-probabilities over
    its own ``labels``) to a :data:`ClassifyFn` (probabilities in SCI4 order).

    >>> class Fake:
    ...     labels = ("neutral", "entailment", "reasoning", "contrasting")
    ...     def classify(self, pairs): return [[0.0, -99.0, -99.0, -99.0] for _ in pairs]
    >>> [round(x, 3) for x in classifier_fn(Fake())([("a", "b")])[0]]
    [0.0, 0.0, 0.0, 1.0]
    """
    order = [Label.parse(lab) for lab in backend.labels]
    missing = [lab.value for lab in SCI4 if lab not in order]
    if missing:
        raise ValueError(f"the classifier has no class {', '.join(missing)}")
    index = [order.index(lab) for lab in SCI4]

    def fn(batch: Sequence[tuple[str, str]]) -> list[list[float]]:
        out = []
        for logp in backend.classify(batch):
            p = [math.exp(logp[k]) for k in index]
            total = sum(p)
            out.append([x / total for x in p])
        return out

    return fn
