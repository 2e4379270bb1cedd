"""The estimated performance gain (EPG) of contamination: the metric on all items minus
the metric on the clean ones, over a sweep of score thresholds; a table and a plot of it.

Scores are the rows of a scores file (:mod:`nlieval.contamination.scores`): an item is
*contaminated* at threshold t when its score is above t, *clean* otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..ground import Block, Cell, Document, Table
from ..metrics import mean_std
from ..plotting import series_name
from ..types import Record

#: Contaminated = score above t; the sweep EPG is reported over by default.
DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(i / 10 for i in range(10))


def _metric(records: Sequence[Record], metric: str) -> float:
    from ..metrics import point_metrics

    if not any(r.gold is not None for r in records):
        return math.nan
    return float(point_metrics(records)[metric])


def epg(
    records: Iterable[Record],
    scores: Iterable[Mapping[str, Any]],
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    metric: str = "accuracy",
) -> list[dict[str, Any]]:
    """EPG(t) = metric on all items minus metric on the items scoring at or below t.

    Records join scores by (task, item_id); records of tasks without scores are left out,
    and the items of a scored task that have no score are counted in ``n_unscored`` (per
    row's model, checkpoint, task and k: items, not records of every seed).
    One row per (model, checkpoint, task, k, t): means over seeds (on the items every seed
    has, as in :func:`nlieval.metrics.summarize`), ``epg_std`` across seeds.

    >>> from nlieval.types import Record
    >>> def rec(i, ok):
    ...     return Record("t", i, "m", 0, 0, ("entailment", "neutral"), (0.0, 0.0), (.5, .5),
    ...                   "entailment" if ok else "neutral", "entailment")
    >>> rows = epg([rec("a", True), rec("b", False)],
    ...            [{"task": "t", "item_id": "a", "score": 1.0},
    ...             {"task": "t", "item_id": "b", "score": 0.0}], [0.5])
    >>> rows[0]["epg"], rows[0]["pct_contaminated"]
    (0.5, 50.0)
    """
    from ..metrics import group_records

    score_of = {(s["task"], str(s["item_id"])): float(s["score"]) for s in scores}
    tasks = {task for task, _ in score_of}
    kept: list[Record] = []
    # The items (not records: a run has one per seed) of each row's run left out.
    unscored: dict[tuple[Any, ...], set[str]] = {}
    for r in records:
        if (r.task, r.item_id) in score_of:
            kept.append(r)
        elif r.task in tasks:
            unscored.setdefault((r.model, r.checkpoint, r.task, r.k), set()).add(r.item_id)
    rows = []
    for (model, ckpt, task, k), by_seed in sorted(
        group_records(kept).items(), key=lambda kv: (kv[0][0], kv[0][1] or "", *kv[0][2:])
    ):
        common = set.intersection(*({r.item_id for r in recs} for recs in by_seed.values()))
        per_seed = {s: [r for r in recs if r.item_id in common] for s, recs in by_seed.items()}
        base: dict[str, Any] = {"model": model, "checkpoint": ckpt, "task": task, "k": k}
        left_out = len(unscored.get((model, ckpt, task, k), ()))
        base |= {"metric": metric, "seeds": sorted(per_seed), "n_unscored": left_out}
        scores_here = {i: sc for (tk, i), sc in score_of.items() if tk == task}
        for t in thresholds:
            rows.append(base | _epg_point(per_seed, scores_here, float(t), metric))
    return rows


def _epg_point(
    per_seed: Mapping[int, Sequence[Record]],
    score_of: Mapping[str, float],
    t: float,
    metric: str,
) -> dict[str, Any]:
    # Seeds hold the same items (epg keeps the common ones); count them on the first.
    items = {r.item_id for r in next(iter(per_seed.values())) if r.gold is not None}
    n_cont = sum(score_of[i] > t for i in items)
    alls, cleans = [], []
    for recs in per_seed.values():
        alls.append(_metric(recs, metric))
        cleans.append(_metric([r for r in recs if score_of[r.item_id] <= t], metric))
    gains = [a - c for a, c in zip(alls, cleans, strict=True)]
    epg_mean, epg_std = mean_std(gains, skip_nan=True)
    return {
        "threshold": t,
        "n_items": len(items),
        "n_contaminated": n_cont,
        "n_clean": len(items) - n_cont,
        "pct_contaminated": 100 * n_cont / len(items) if items else math.nan,
        "metric_all": mean_std(alls, skip_nan=True)[0],
        "metric_clean": mean_std(cleans, skip_nan=True)[0],
        "epg": epg_mean,
        "epg_std": epg_std,
    }


def format_epg(rows: Sequence[Mapping[str, Any]]) -> Document:
    """The table of :func:`epg` rows, with a line per left-out group under it (written by
    :func:`nlieval.ground.render`).

    >>> from nlieval.ground import render
    >>> print(render(format_epg([]), "md"))
    (no records joined with contamination scores)
    """
    if not rows:
        return ["(no records joined with contamination scores)"]
    metric = rows[0]["metric"]
    body = []
    for r in rows:
        std = f" ± {r['epg_std']:.4f}" if len(r["seeds"]) > 1 else ""
        body.append(
            [
                series_name(r),
                r["task"],
                str(r["k"]),
                f"{r['threshold']:g}",
                Cell(f"{r['pct_contaminated']:.1f}", r["pct_contaminated"]),
                Cell(str(r["n_clean"]), r["n_clean"]),
                Cell(f"{r['metric_all']:.4f}", r["metric_all"]),
                Cell(f"{r['metric_clean']:.4f}", r["metric_clean"]),
                Cell(f"{r['epg']:+.4f}{std}", r["epg"]),
            ]
        )
    head = ["model", "task", "k", "t", "% contaminated", "n clean", f"{metric} all"]
    doc: list[Block] = [Table.of([*head, f"{metric} clean", "EPG"], body)]
    # Items the run scored but the scores file has not are left out: said with their count.
    left_out = {
        (series_name(r), r["task"], r["k"]): r["n_unscored"] for r in rows if r.get("n_unscored")
    }
    if left_out:
        doc.append("")  # a line right under a Markdown table would be read as a row
    doc += [
        f"{name} / {task} k={k}: {n} item(s) without a contamination score, left out"
        for (name, task, k), n in left_out.items()
    ]
    return doc
