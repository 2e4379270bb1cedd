"""Metrics per sweep point, recomputed from saved records (no model needed).

A sweep point is (model, checkpoint, task, k, seed); rows aggregate seeds into a mean and
a sample standard deviation.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .types import Record

GroupKey = tuple[str, str | None, str, int]  # model, checkpoint, task, k


def point_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """Accuracy, macro F1, mean gold-option NLL, predicted-label shares and the confusion
    matrix of the records of one sweep point (items without a gold label are ignored).

    An unparseable answer (``pred`` None) counts as wrong; it is its own column in the
    confusion matrix only through ``n_unparsed``.

    >>> from dataclasses import replace
    >>> a = Record("t", "1", "m", 0, 0, ("entailment", "neutral"), (-0.1, -2.0),
    ...            (0.87, 0.13), "entailment", "entailment")
    >>> b = replace(a, item_id="2", loglik=(-0.5, -1.0), probs=(0.62, 0.38), gold="neutral")
    >>> m = point_metrics([a, b])  # gold NLL: the mean of 0.1 and 1.0
    >>> m["accuracy"], round(m["gold_nll"], 4), m["confusion"], m["majority_baseline"]
    (0.5, 0.55, [[1, 0], [1, 0]], 0.5)
    """
    from sklearn.metrics import (  # heavy: loaded on first use
        accuracy_score,
        confusion_matrix,
        f1_score,
    )

    labelled = [r for r in records if r.gold is not None]
    if not records:
        raise ValueError("no records to score")
    if not labelled:
        return _unlabelled_metrics(records)
    labels = list(labelled[0].labels)
    gold = [r.gold for r in labelled]
    # sklearn needs a label for every prediction; an unparsed answer gets a sentinel that
    # matches no gold label, so it is scored wrong but never dropped.
    pred = [r.pred if r.pred is not None else "<unparsed>" for r in labelled]
    n = len(labelled)
    pred_counts = Counter(pred)
    gold_counts = Counter(gold)
    nll = [r.gold_nll for r in labelled]
    finite = [x for x in nll if math.isfinite(x)]
    return {
        "n": n,
        "accuracy": float(accuracy_score(gold, pred)),
        "macro_f1": float(f1_score(gold, pred, labels=labels, average="macro", zero_division=0)),
        "per_class_f1": dict(
            zip(
                labels,
                (
                    float(x)
                    for x in f1_score(gold, pred, labels=labels, average=None, zero_division=0)
                ),
                strict=True,
            )
        ),
        "gold_nll": float(np.mean(finite)) if finite else math.nan,
        "pred_dist": {lab: pred_counts.get(lab, 0) / n for lab in labels},
        "n_unparsed": pred_counts.get("<unparsed>", 0),
        "confusion": confusion_matrix(gold, pred, labels=labels).tolist(),
        "labels": labels,
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
    pred = Counter(r.pred if r.pred is not None else "<unparsed>" for r in records)
    n = len(records)
    return {
        "n": n,
        "accuracy": math.nan,
        "macro_f1": math.nan,
        "per_class_f1": {lab: math.nan for lab in labels},
        "gold_nll": math.nan,
        "pred_dist": {lab: pred.get(lab, 0) / n for lab in labels},
        "n_unparsed": pred.get("<unparsed>", 0),
        "confusion": [],
        "labels": labels,
        "chance": 1.0 / len(labels),
        "majority_baseline": math.nan,
    }


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


def group_records(records: Iterable[Record]) -> dict[GroupKey, dict[int, list[Record]]]:
    """Records by (model, checkpoint, task, k), then by seed."""
    groups: dict[GroupKey, dict[int, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        groups[(r.model, r.checkpoint, r.task, r.k)][r.seed].append(r)
    return groups


def summarize(records: Iterable[Record]) -> list[dict[str, Any]]:
    """One row per (model, checkpoint, task, k): metrics per seed and their mean/std.

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
            "chance": per_seed[0]["chance"],
            "majority_baseline": per_seed[0]["majority_baseline"],
        }
        for name in ("accuracy", "macro_f1", "gold_nll"):
            row[name], row[name + "_std"] = mean_std([p[name] for p in per_seed])
        row["pred_dist"] = {
            lab: float(np.mean([p["pred_dist"][lab] for p in per_seed])) for lab in row["labels"]
        }
        row["n_unparsed"] = sum(p["n_unparsed"] for p in per_seed)
        row["per_seed"] = per_seed
        rows.append(row)
    return rows
