"""Metrics per sweep point, recomputed from saved records (no model needed), and the one
table that declares them (:data:`METRICS`).

A sweep point is (model, checkpoint, task, k, seed); rows aggregate seeds into a mean and
a sample standard deviation.

Every metric is declared once, as a :class:`Metric` in :data:`METRICS`: its name, its
per-item or corpus function, how its seeds aggregate, whether it can be bootstrapped, its
display name and digits. The run summaries (:func:`summarize`, ``summary.md``), ``grid``
and its ``--ci`` intervals, ``compare`` and the help texts that list metrics read it, so
a metric added there is in all of them.

>>> [m.name for m in metrics(bootstrap=True)]
['accuracy', 'macro_f1', 'gold_nll']
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .types import Record

GroupKey = tuple[str, str | None, str, int]  # model, checkpoint, task, k

#: A corpus function: the gold label codes of some items, their predicted codes and the
#: task's label codes (None: the codes present) -> the metric over those items.
Corpus = Callable[[np.ndarray, np.ndarray, "np.ndarray | None"], float]

#: What an unparsed answer (``pred`` None) is scored as: a label no gold label matches,
#: so it counts as wrong and is never dropped.
UNPARSED = "<unparsed>"


def mean_std(values: Sequence[float], *, skip_nan: bool = False) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value). With ``skip_nan``,
    NaN values are left out (both NaN when every value is NaN).

    >>> mean_std([1.0, 3.0])
    (2.0, 1.4142135623730951)
    >>> mean_std([1.0, float("nan"), 3.0], skip_nan=True)[0]
    2.0
    """
    arr = np.asarray(values, dtype=float)
    if not skip_nan:
        return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0
    if np.isnan(arr).all():
        return math.nan, math.nan
    return float(np.nanmean(arr)), float(np.nanstd(arr, ddof=1)) if len(arr) > 1 else 0.0


def accuracy(gold: np.ndarray, pred: np.ndarray, classes: np.ndarray | None = None) -> float:
    """The share of items whose prediction is the gold label (``classes`` unused), as
    scikit-learn's ``accuracy_score``.

    >>> accuracy(np.array([0, 1, 1, 2]), np.array([0, 1, 0, 0]))
    0.5
    """
    return float(np.mean(gold == pred))


def macro_f1(gold: np.ndarray, pred: np.ndarray, classes: np.ndarray | None = None) -> float:
    """The unweighted mean F1 over the classes of ``classes`` (default: every class) that
    have gold items among these items; NaN ("n/a" in tables) when fewer than two have.

    A class without gold items has no recall (0/0): counting its F1 as 0 would print a
    number over classes the items do not hold (8 items of one SciNLI class gave "macro
    F1 5.6"), so the mean is over the classes present in gold, and it is undefined when
    one class is all the items hold (accuracy says it all). With every class present
    this is scikit-learn's ``f1_score(labels=classes, average="macro",
    zero_division=0)``: a prediction of another class (or an unparsed answer) is a false
    positive of no present class but a miss of its gold class. Vectorised by hand because
    the bootstrap calls it thousands of times. :data:`UNDEFINED_NOTE` says it under a
    table.

    >>> round(macro_f1(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])), 4)
    0.7333
    >>> round(macro_f1(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), np.array([0, 1, 2])), 4)
    0.7333
    >>> macro_f1(np.array([0, 0, 0]), np.array([0, 1, 2]), np.array([0, 1, 2]))
    nan
    """
    present = np.unique(gold)
    if classes is not None:
        present = np.intersect1d(present, classes)
    if len(present) < 2:
        return float("nan")
    scores = []
    for c in present:
        tp = np.sum((gold == c) & (pred == c))
        denom = np.sum(gold == c) + np.sum(pred == c)
        scores.append(2.0 * tp / denom)
    return float(np.mean(scores))


#: Said under every table with an n/a it prints for a metric undefined on its items.
UNDEFINED_NOTE = (
    "n/a: undefined on these items (macro F1 is the mean over the classes with gold items, "
    "n/a where the items hold one class only; a class's F1 is n/a without gold items of it)"
)


def _gold_nll(record: Record) -> float:
    # A prediction imported as a label alone has no distribution: its one-hot
    # "probabilities" would give a gold NLL of 0 or 744, a number no model produced.
    return math.nan if record.meta.get("label_only") else record.gold_nll


class NonFiniteRecord(ValueError):
    """A record whose log-likelihoods hold a NaN or an infinity: its prediction and every
    metric over it would be wrong (a NaN predicts the first label), so no metric is
    computed over it, rather than leaving it out of a mean of n items."""


def check_finite(records: Iterable[Record]) -> None:
    """Raise :class:`NonFiniteRecord` naming the first of ``records`` with a log-likelihood
    that is not a finite number (records of this version never hold one: the run stops
    at it; older folders, or a hand-edited file, may).

    >>> r = Record("t", "7", "m", 0, 0, ("a", "b"), (-0.5, float("nan")), (0.6, 0.4), "a", "b")
    >>> check_finite([r])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.metrics.NonFiniteRecord: the record of item '7' (model m, task t, k=0, seed 0) ...
    """
    for r in records:
        bad = [x for x in r.loglik if not math.isfinite(x)]
        if bad:
            ckpt = f", checkpoint {r.checkpoint}" if r.checkpoint else ""
            raise NonFiniteRecord(
                f"the record of item {r.item_id!r} (model {r.model}{ckpt}, task {r.task}, "
                f"k={r.k}, seed {r.seed}) holds a log-likelihood of {bad[0]}: no metric is "
                "computed over it; remove its line from records.jsonl and run the command "
                "that wrote it again to score it anew"
            )


def encode(
    gold: Sequence[object], pred: Sequence[object], labels: Sequence[object] = ()
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gold labels, predictions and the task's labels as integer codes (one code per
    distinct text), the inputs of a :data:`Corpus` function.

    >>> [c.tolist() for c in encode(["b", "a"], ["b", "b"], ["a", "b", "c"])]
    [[1, 0], [1, 1], [0, 1, 2]]
    """
    texts = [[str(x) for x in xs] for xs in (gold, pred, labels)]
    codes = {name: i for i, name in enumerate(sorted({t for xs in texts for t in xs}))}
    g, p, c = ([codes[t] for t in xs] for xs in texts)
    return np.array(g), np.array(p), np.array(c)


@dataclass(frozen=True)
class Metric:
    """One metric, declared once.

    ``item`` scores one record (the metric is then the mean over items; a record with
    a non-finite log-likelihood is refused, :func:`check_finite`, never left out of
    the mean), or ``corpus`` scores the items together
    from their gold and predicted labels (a :data:`Corpus` function). ``seeds`` turns the
    values of a point's seeds into their mean and spread. ``bootstrap``: ``grid --ci``
    may resample it over items. ``label`` and ``digits`` are how tables show it, ``axis``
    how a plot's axis names it (a metric with one can be followed by ``figure dynamics``).
    ``proportion``: a share of items (or a mean of per-class shares) in [0, 1], which
    ``--percent`` shows x 100; a loss or a divergence (gold NLL, JS, KL) is never
    scaled (:meth:`scale`). ``source`` says which rows hold it: ``records``, those of
    :func:`summarize`; ``chaosnli``, those of
    :func:`nlieval.analyses.chaosnli.score_records` (which computes these from the human
    label counts).
    """

    name: str
    label: str
    item: Callable[[Record], float] | None = None
    corpus: Corpus | None = None
    seeds: Callable[[Sequence[float]], tuple[float, float]] = mean_std
    bootstrap: bool = True
    digits: int = 3
    axis: str = ""
    source: Literal["records", "chaosnli"] = "records"
    proportion: bool = False

    def scale(self, percent: bool) -> float:
        """What a table multiplies the metric by: 100 for a proportion under
        ``--percent``, else 1 (an NLL of 2.08 stays 2.08).

        >>> METRICS["accuracy"].scale(True), METRICS["gold_nll"].scale(True)
        (100.0, 1.0)
        """
        return 100.0 if percent and self.proportion else 1.0

    def of(self, records: Sequence[Record], labels: Sequence[str]) -> float:
        """The metric of ``records`` (each with a gold label) over the task's ``labels``.

        >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-0.5, -1.0), (0.6, 0.4), "a", "b")
        >>> METRICS["accuracy"].of([r], r.labels), METRICS["gold_nll"].of([r], r.labels)
        (0.0, 1.0)
        """
        if self.item is not None:
            check_finite(records)
            return float(np.mean([self.item(r) for r in records])) if records else math.nan
        if self.corpus is None:
            raise ValueError(f"{self.name} is computed with the {self.source} rows")
        pred = [r.pred if r.pred is not None else UNPARSED for r in records]
        return self.corpus(*encode([r.gold for r in records], pred, labels))


#: Every metric of the package, by name, in the order tables show them.
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("accuracy", "accuracy", corpus=accuracy, axis="accuracy", proportion=True),
        Metric("macro_f1", "macro F1", corpus=macro_f1, proportion=True),
        Metric("gold_nll", "gold NLL", item=_gold_nll, axis="NLL of the gold option"),
        Metric(
            "js_distance",
            "JS distance",
            bootstrap=False,
            digits=4,
            source="chaosnli",
            axis="JS distance to humans",
        ),  # fmt: skip
        Metric("js_divergence", "JS divergence", bootstrap=False, digits=4, source="chaosnli"),
        Metric("kl", "KL(human‖model)", bootstrap=False, digits=4, source="chaosnli"),
        Metric(
            "acc_original",
            "acc original",
            bootstrap=False,
            digits=4,
            source="chaosnli",
            proportion=True,
        ),  # fmt: skip
        Metric(
            "acc_majority",
            "acc majority",
            bootstrap=False,
            digits=4,
            source="chaosnli",
            proportion=True,
        ),  # fmt: skip
    )
}


#: The column heading of the random baseline (:func:`chance_label` names its K).
CHANCE_HEAD = "random (1/K)"
#: The column heading of the majority-class baseline of the scored items.
MAJORITY_LABEL = "majority class of these items"


def chance_label(options: int) -> str:
    """How a table or a figure names the random baseline of a task of ``options``
    options: the paper's 1/K, never the gold prior of the items scored.

    >>> chance_label(3)
    'random (1/3)'
    """
    return f"random (1/{options})"


def metric(name: str) -> Metric:
    """The metric called ``name`` in :data:`METRICS`; an unknown name is a ValueError
    listing the known ones.

    >>> metric("macro_f1").label
    'macro F1'
    """
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; one of {', '.join(METRICS)}") from None


def metrics(
    *, source: str | None = None, bootstrap: bool | None = None, corpus: bool | None = None
) -> list[Metric]:
    """The metrics of :data:`METRICS` held by rows of ``source`` and, when ``bootstrap``
    is given, those that can (True) or cannot (False) be bootstrapped, and when
    ``corpus`` is given, those computed (True) or not (False) from the items' gold and
    predicted labels together (a :data:`Corpus` function: what a paired test over items
    and a breakdown recompute), in table order.

    >>> [m.name for m in metrics(source="chaosnli")][:2]
    ['js_distance', 'js_divergence']
    >>> [m.name for m in metrics(source="records", corpus=True)]
    ['accuracy', 'macro_f1']
    """
    return [
        m
        for m in METRICS.values()
        if (source is None or m.source == source)
        and (bootstrap is None or m.bootstrap == bootstrap)
        and (corpus is None or (m.corpus is not None) == corpus)
    ]


def listed(ms: Iterable[Metric], last: str = ", ") -> str:
    """The names of ``ms`` for a message or a help text, the last joined by ``last``.

    >>> listed(metrics(bootstrap=True), last=" and ")
    'accuracy, macro_f1 and gold_nll'
    """
    names = [m.name for m in ms]
    return last.join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)


def point_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """Every ``records`` metric of :data:`METRICS` (accuracy, macro F1, mean gold-option
    NLL, ...), the per-class F1, predicted-label shares and the confusion matrix of the
    records of one sweep point (items without a gold label are ignored).

    An unparseable answer (``pred`` None) counts as wrong; it is its own column in the
    confusion matrix only through ``n_unparsed``. A record with a log-likelihood that is
    not finite is refused (:class:`NonFiniteRecord`): its prediction is no prediction.

    ``gold_counts`` are the scored items' gold labels; ``chance`` is the random baseline
    of the task, 1/K for its K options (:func:`chance_label`): never a number of the
    scored items, which on the first N items of a sorted file may all be one label and
    would put "chance" at 1.0. ``majority_baseline`` is the largest share of the scored
    items' gold labels (the majority class of these n items, :data:`MAJORITY_LABEL`).

    >>> from dataclasses import replace
    >>> a = Record("t", "1", "m", 0, 0, ("entailment", "neutral"), (-0.1, -2.0),
    ...            (0.87, 0.13), "entailment", "entailment")
    >>> b = replace(a, item_id="2", loglik=(-0.5, -1.0), probs=(0.62, 0.38), gold="neutral")
    >>> m = point_metrics([a, b])  # gold NLL: the mean of 0.1 and 1.0
    >>> m["accuracy"], round(m["gold_nll"], 4), m["confusion"], m["majority_baseline"]
    (0.5, 0.55, [[1, 0], [1, 0]], 0.5)
    >>> m["gold_counts"], m["chance"], point_metrics([a, a, a])["chance"]  # 1/K, K = 2
    ({'entailment': 1, 'neutral': 1}, 0.5, 0.5)
    """
    from sklearn.metrics import confusion_matrix, f1_score  # heavy: loaded on first use

    labelled = [r for r in records if r.gold is not None]
    if not records:
        raise ValueError("no records to score")
    check_finite(records)
    if not labelled:
        return _unlabelled_metrics(records)
    labels = list(labelled[0].labels)
    gold = [r.gold for r in labelled]
    # sklearn needs a label for every prediction; an unparsed answer gets a sentinel that
    # matches no gold label, so it is scored wrong but never dropped.
    pred = [r.pred if r.pred is not None else UNPARSED for r in labelled]
    n = len(labelled)
    pred_counts = Counter(pred)
    gold_counts = Counter(gold)
    out: dict[str, Any] = {"n": n}
    for m in metrics(source="records"):
        out[m.name] = m.of(labelled, labels)
        if m.name == "macro_f1":  # results.json has always listed it here
            per_class = f1_score(gold, pred, labels=labels, average=None, zero_division=0)
            # A class without gold items has no recall: its F1 is undefined, not 0.
            out["per_class_f1"] = {
                lab: float(x) if gold_counts.get(lab, 0) else math.nan
                for lab, x in zip(labels, per_class, strict=True)
            }
    return {
        **out,
        "pred_dist": {lab: pred_counts.get(lab, 0) / n for lab in labels},
        "n_unparsed": pred_counts.get(UNPARSED, 0),
        "confusion": confusion_matrix(gold, pred, labels=labels).tolist(),
        "labels": labels,
        "gold_counts": {lab: gold_counts.get(lab, 0) for lab in labels},
        "chance": 1.0 / len(labels),
        "majority_baseline": max(gold_counts.values()) / n,
    }


def _unlabelled_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """Items with no gold label (inferred or generated items): only what the model
    predicted can be counted; the scores are NaN ("n/a" in tables), never dropped rows.

    >>> r = Record("t", "1", "m", 0, 0, ("entailment", "neutral"), (-0.1, -2.0),
    ...            (0.87, 0.13), "entailment", None)
    >>> m = point_metrics([r]); m["n"], m["pred_dist"]["entailment"], math.isnan(m["accuracy"])
    (1, 1.0, True)
    """
    labels = list(records[0].labels)
    pred = Counter(r.pred if r.pred is not None else UNPARSED for r in records)
    n = len(records)
    out: dict[str, Any] = {"n": n}
    for m in metrics(source="records"):
        out[m.name] = math.nan
        if m.name == "macro_f1":  # results.json has always listed it here
            out["per_class_f1"] = {lab: math.nan for lab in labels}
    return {
        **out,
        "pred_dist": {lab: pred.get(lab, 0) / n for lab in labels},
        "n_unparsed": pred.get(UNPARSED, 0),
        "confusion": [],
        "labels": labels,
        "gold_counts": {},
        "chance": 1.0 / len(labels),
        "majority_baseline": math.nan,
    }


def group_records(records: Iterable[Record]) -> dict[GroupKey, dict[int, list[Record]]]:
    """Records by (model, checkpoint, task, k), then by seed."""
    groups: dict[GroupKey, dict[int, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        groups[(r.model, r.checkpoint, r.task, r.k)][r.seed].append(r)
    return groups


def summarize(records: Iterable[Record]) -> list[dict[str, Any]]:
    """One row per (model, checkpoint, task, k): metrics per seed and, for each metric
    of :data:`METRICS` held by records, its value over seeds (``seeds`` of the metric:
    the mean) and its spread (``<name>_std``).

    Only items scored under every seed of a row enter it, so seeds compare like for like
    even while a run is still incomplete.

    >>> from dataclasses import replace
    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (0.0, -1.0), (0.73, 0.27), "a", "a")
    >>> rows = summarize([r, replace(r, seed=1), replace(r, item_id="2", seed=1)])
    >>> rows[0]["n"], rows[0]["seeds"]  # item 2 has no seed-0 record: left out
    (1, [0, 1])
    """
    rows = []
    for (model, ckpt, task, k), by_seed in sorted(
        group_records(records).items(),
        key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2], kv[0][3]),
    ):
        common = set.intersection(*({r.item_id for r in recs} for recs in by_seed.values()))
        per_seed = []
        for seed in sorted(by_seed):
            recs = [r for r in by_seed[seed] if r.item_id in common]
            if recs:
                per_seed.append({"seed": seed, **point_metrics(recs)})
        if not per_seed:
            continue
        row: dict[str, Any] = {
            "model": model,
            "checkpoint": ckpt,
            "task": task,
            "k": k,
            "n": per_seed[0]["n"],
            "seeds": [p["seed"] for p in per_seed],
            "labels": per_seed[0]["labels"],
            # The items are those every seed scored: one gold count, one chance.
            "gold_counts": per_seed[0]["gold_counts"],
            "chance": per_seed[0]["chance"],
            "majority_baseline": per_seed[0]["majority_baseline"],
        }
        for m in metrics(source="records"):
            row[m.name], row[m.name + "_std"] = m.seeds([p[m.name] for p in per_seed])
        row["pred_dist"] = {
            lab: float(np.mean([p["pred_dist"][lab] for p in per_seed])) for lab in row["labels"]
        }
        row["n_unparsed"] = sum(p["n_unparsed"] for p in per_seed)
        row["per_seed"] = per_seed
        rows.append(row)
    return rows
