"""Two run folders compared on the items both scored: McNemar and a paired bootstrap.

Records are paired by (task, k, seed, item id) — the sweep point and the item, not the
model — so two models, two checkpoints or two templates run on the same items compare
directly; a sweep point's items scored by only one side are counted, never guessed.
Everything is read from the folders' saved records (no model needed).

>>> from nlieval.runs import RunFolder
>>> from nlieval.types import Record
>>> def rec(model, i, pred):
...     return Record("t", str(i), model, 0, 0, ("entailment", "neutral"), (-1.0, -2.0),
...                   (0.7, 0.3), pred, "entailment")
>>> a, b = Path(run_dir) / "a", Path(run_dir) / "b"
>>> a.mkdir(); b.mkdir()
>>> RunFolder(a).append([rec("m1", i, "neutral" if i < 6 else "entailment") for i in range(10)])
>>> RunFolder(b).append([rec("m2", i, "entailment") for i in range(10)])
>>> row = compare_runs(a, b, resamples=200)[0]
>>> row["n"], row["accuracy_a"], row["accuracy_b"], row["a_only"], row["b_only"]
(10, 0.4, 1.0, 0, 6)
>>> round(row["mcnemar_p"], 4)  # 6 discordant items, all for B: 2 / 2**6
0.0312
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..runs import RunError, RunFolder, markdown_table
from ..significance import CONFIDENCE, RESAMPLES, mcnemar, paired_bootstrap
from ..types import Record

PointKey = tuple[str, str | None, int, int]  # task, checkpoint, k, seed
#: The metrics of :data:`nlieval.metrics.METRICS` whose difference B - A is tested.
COMPARED = ("accuracy", "macro_f1")


def _by_point(folder: str | Path) -> dict[PointKey, dict[str, Record]]:
    out: dict[PointKey, dict[str, Record]] = defaultdict(dict)
    models: set[str] = set()
    for r in RunFolder(folder).records():
        models.add(r.model)
        out[(r.task, r.checkpoint, r.k, r.seed)][r.item_id] = r
    if not out:
        raise RunError(f"{folder}: no records to compare")
    if len(models) > 1:
        raise RunError(f"{folder} holds records of several models ({', '.join(sorted(models))})")
    return out


def compare_runs(
    a: str | Path,
    b: str | Path,
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One row per sweep point (task, checkpoint, k, seed) that both folders hold: the
    folders and their models, items scored by both (``n``) and by one side only (counted,
    and their ids in ``only_in_a_ids`` / ``only_in_b_ids``), each side's accuracy and
    macro F1, McNemar (exact), and the bootstrap interval and permutation p-value of
    B - A in accuracy and in macro F1 (seeded by ``seed``; see
    :func:`nlieval.significance.paired_bootstrap`). Items without a gold label are left
    out.
    """
    left, right = _by_point(a), _by_point(b)
    shared = sorted(set(left) & set(right), key=lambda p: (p[0], p[1] or "", p[2], p[3]))
    if not shared:
        raise RunError(
            f"{a} and {b} share no sweep point (task, checkpoint, k, seed): nothing to compare"
        )
    rows = []
    for point in shared:
        la, lb = left[point], right[point]
        ids = sorted(i for i in set(la) & set(lb) if la[i].gold is not None)
        for i in ids:
            if la[i].gold != lb[i].gold:
                raise RunError(
                    f"item {i} of {point[0]} has gold {la[i].gold!r} in {a} and "
                    f"{lb[i].gold!r} in {b}: not the same data"
                )
        if not ids:
            continue
        gold = [la[i].gold for i in ids]
        pa = [str(la[i].pred) for i in ids]
        pb = [str(lb[i].pred) for i in ids]
        test = mcnemar([la[i].correct for i in ids], [lb[i].correct for i in ids])
        tests = {
            name: paired_bootstrap(
                pa, pb, gold, metric=name, resamples=resamples, confidence=confidence, seed=seed
            )
            for name in COMPARED
        }
        task, ckpt, k, s = point
        rows.append(
            {
                "task": task,
                "checkpoint": ckpt,
                "k": k,
                "seed": s,
                "model_a": next(iter(la.values())).model,
                "model_b": next(iter(lb.values())).model,
                "folder_a": str(a),
                "folder_b": str(b),
                "n": len(ids),
                "only_in_a": len(set(la) - set(lb)),
                "only_in_b": len(set(lb) - set(la)),
                "only_in_a_ids": sorted(set(la) - set(lb)),
                "only_in_b_ids": sorted(set(lb) - set(la)),
                **{
                    f"{name}_{part}": value
                    for name, t in tests.items()
                    for part, value in (
                        ("a", t.a),
                        ("b", t.b),
                        ("diff", t.diff),
                        ("ci", [t.low, t.high]),
                        ("p", t.p_value),
                    )
                },
                "a_only": test.a_only,
                "b_only": test.b_only,
                "mcnemar_p": test.p_value,
                "confidence": confidence,
                "resamples": resamples,
                "seed_bootstrap": seed,
            }
        )
    return rows


#: How many left-out item ids the table names per sweep point (the JSON rows hold all).
NAMED = 5


def _sides(rows: Sequence[dict[str, Any]]) -> list[str]:
    # A folder holds one model (_by_point): the first row names both sides.
    r = rows[0]
    return [
        f"{side}: {r['folder_' + side.lower()]} ({r['model_' + side.lower()]})"
        for side in ("A", "B")
        if r.get("folder_" + side.lower()) is not None
    ]


def _left_out(r: dict[str, Any]) -> str | None:
    parts = []
    for side in ("a", "b"):
        ids = r.get(f"only_in_{side}_ids") or []
        if ids:
            shown = ", ".join(str(i) for i in ids[:NAMED]) + (", ..." if len(ids) > NAMED else "")
            parts.append(f"{len(ids)} only in {side.upper()} ({shown})")
    if not parts:
        return None
    task = r["task"] + (f" @ {r['checkpoint']}" if r.get("checkpoint") else "")
    return f"left out of {task} k={r['k']} seed={r['seed']}: {'; '.join(parts)}"


def comparison_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows of :func:`compare_runs` as a Markdown table, under a line naming each side
    (folder and model) and over a line per sweep point that left items out (how many
    only one side scored, the first :data:`NAMED` of their ids).

    >>> row = {"task": "t", "checkpoint": None, "k": 0, "seed": 0, "n": 4,
    ...     "folder_a": "runs/x", "folder_b": "runs/y", "model_a": "m1", "model_b": "m2",
    ...     "only_in_a_ids": [], "only_in_b_ids": ["7", "9"],
    ...     "accuracy_a": 0.5, "accuracy_b": 0.75, "accuracy_diff": 0.25,
    ...     "accuracy_ci": [0.0, 0.5], "accuracy_p": 1.0, "macro_f1_diff": 0.2,
    ...     "macro_f1_ci": [-0.1, 0.6], "a_only": 0, "b_only": 1, "mcnemar_p": 1.0,
    ...     "confidence": 0.95}
    >>> lines = comparison_table([row]).splitlines()
    >>> lines[:2]
    ['A: runs/x (m1)', 'B: runs/y (m2)']
    >>> lines[5].split(" | ")[4:8]
    ['0.500', '0.750', '+0.250 [+0.000, +0.500]', '1']
    >>> lines[-1]
    'left out of t k=0 seed=0: 2 only in B (7, 9)'
    """
    if not rows:
        return "(no shared items)"
    level = int(round(100 * rows[0]["confidence"]))
    head = ["task", "k", "seed", "n", "acc A", "acc B", f"B - A ({level}% CI)", "p (perm.)"]
    head += [f"F1 B - A ({level}% CI)", "A only/B only", "McNemar p"]
    body = []
    for r in rows:
        task = r["task"] + (f" @ {r['checkpoint']}" if r.get("checkpoint") else "")
        lo, hi = r["accuracy_ci"]
        flo, fhi = r["macro_f1_ci"]
        body.append(
            [
                task,
                str(r["k"]),
                str(r["seed"]),
                str(r["n"]),
                f"{r['accuracy_a']:.3f}",
                f"{r['accuracy_b']:.3f}",
                f"{r['accuracy_diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]",
                f"{r['accuracy_p']:.3g}",
                f"{r['macro_f1_diff']:+.3f} [{flo:+.3f}, {fhi:+.3f}]",
                f"{r['a_only']}/{r['b_only']}",
                f"{r['mcnemar_p']:.3g}",
            ]
        )
    notes = [line for line in map(_left_out, rows) if line is not None]
    sides = _sides(rows)
    return "\n".join(
        [
            *sides,
            *([""] if sides else []),
            *markdown_table(head, body),
            *([""] if notes else []),
            *notes,
        ]
    )
