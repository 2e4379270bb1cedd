"""Two run folders compared on the items both scored: McNemar, a paired bootstrap, a test
over items of the seed-averaged scores, and a correction for multiple comparisons.

Records are paired by (task, k, seed, item id) — the sweep point and the item, not the
model — so two models, two checkpoints or two templates run on the same items compare
directly; a sweep point's items scored by only one side are counted, never guessed.
The seed models of a train folder (``nlieval run --model TRAIN_FOLDER``) are that
classifier's training seeds, as in the train folder's own records; two folders that share
no checkpoint compare each checkpoint of one with the single one (or none) of the other.
Everything is read from the folders' saved records (no model needed).

Every p-value of the result is one test of a family (one kind of test of one metric, per
seed or over seeds), and is also given adjusted within that family (Holm by default): see
:func:`compare_runs`.

>>> from nlieval.runs import RunFolder
>>> from nlieval.types import Record
>>> def rec(model, i, pred):
...     return Record("t", str(i), model, 0, 0, ("entailment", "neutral"), (-1.0, -2.0),
...                   (0.7, 0.3), pred, "entailment")
>>> a, b = Path(run_dir) / "a", Path(run_dir) / "b"
>>> a.mkdir(); b.mkdir()
>>> RunFolder(a).append([rec("m1", i, "neutral" if i < 6 else "entailment") for i in range(10)])
>>> RunFolder(b).append([rec("m2", i, "entailment") for i in range(10)])
>>> row = compare_runs(CompareConfig(a=str(a), b=str(b), resamples=200))[0]
>>> row["n"], row["accuracy_a"], row["accuracy_b"], row["a_only"], row["b_only"]
(10, 0.4, 1.0, 0, 6)
>>> round(row["mcnemar_p"], 4)  # 6 discordant items, all for B: 2 / 2**6
0.0312
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..ground import Cell, Document, Table
from ..metrics import Metric, mean_std, metrics
from ..runs import RunError, iter_run_records
from ..settings import setting, table_format
from ..significance import (
    CONFIDENCE,
    CORRECTIONS,
    TEST_NA_NOTE,
    Resampling,
    adjusted,
    mcnemar,
    paired_bootstrap,
)
from ..types import Record

PointKey = tuple[str, str | None, int, int]  # task, checkpoint, k, seed


def compared() -> list[Metric]:
    """The metrics of :data:`nlieval.metrics.METRICS` whose difference B - A is tested on
    paired items: those computed from the items' gold and predicted labels (a corpus
    function, which a resample of the items recomputes), in table order; a metric added
    there is compared too. McNemar's test and the rows over seeds are of accuracy
    (each item right or wrong).

    >>> [m.name for m in compared()]
    ['accuracy', 'macro_f1']
    """
    return metrics(source="records", corpus=True)


#: How a header names a compared metric beside "A", "B", "B - A" and "p" (its table
#: label where none is given here).
SHORT = {"accuracy": "acc", "macro_f1": "F1"}


def _short(m: Metric) -> str:
    return SHORT.get(m.name, m.label)


#: The names of the tests and of the interval, as tables and JSON rows print them.
MCNEMAR = "McNemar exact"
PERMUTATION = "paired permutation"
INTERVAL = "bootstrap percentile"
#: What the seed-averaged rows test: each item's correctness averaged over a side's seeds.
OVER_SEEDS = "per-item correctness averaged over seeds"


def _by_point(folder: str | Path) -> dict[PointKey, dict[str, Record]]:
    out: dict[PointKey, dict[str, Record]] = defaultdict(dict)
    models: set[str] = set()
    # Named by sweep point as every reader that pairs folders names them (a task file's
    # declared name, a train folder's seed models as its training seeds).
    for r in iter_run_records([folder], as_points=True):
        models.add(r.model)
        out[(r.task, r.checkpoint, r.k, r.seed)][r.item_id] = r
    if not out:
        raise RunError(f"{folder}: no records to compare")
    if len(models) > 1:
        raise RunError(f"{folder} holds records of several models ({', '.join(sorted(models))})")
    return out


def _checkpoints(folder: dict[PointKey, dict[str, Record]]) -> list[str | None]:
    return sorted({p[1] for p in folder}, key=lambda c: c or "")


def _pairs(
    a: str | Path, b: str | Path, left: list[str | None], right: list[str | None]
) -> list[tuple[str | None, str | None]]:
    """Which checkpoint of A is compared with which of B: the same ones, else each with
    the single one of the other side."""
    shared = [c for c in left if c in right]
    if shared:
        return [(c, c) for c in shared]
    if len(left) == 1 or len(right) == 1:
        return list(itertools.product(left, right))
    raise RunError(
        f"{a} and {b} share no checkpoint ({', '.join(map(str, left))} against "
        f"{', '.join(map(str, right))}): compare one checkpoint's folder with the other"
    )


def _gold_checked(a: str | Path, b: str | Path, task: str, la: Record, lb: Record) -> None:
    if la.gold != lb.gold:
        raise RunError(
            f"item {la.item_id} of {task} has gold {la.gold!r} in {a} and "
            f"{lb.gold!r} in {b}: not the same data"
        )


@dataclass(frozen=True, kw_only=True)
class CompareConfig(Resampling):
    """What ``nlieval compare`` tests: run folder ``a`` against ``b``
    (:func:`compare_runs`).

    >>> CompareConfig(a="x", b="y").confidence
    0.95
    """

    a: str = ""
    b: str = ""
    confidence: float = setting(CONFIDENCE, help="level of the intervals")
    correction: str = setting(
        "holm",
        help="correction of the p-values for multiple comparisons within each family of "
        "tests (one kind of test of one metric, per seed or over seeds): holm (family-wise "
        "error), bh (Benjamini-Hochberg false discovery rate), none",
        choices=tuple(CORRECTIONS),
    )
    json: str | None = setting(None, help="also write the rows as JSON here")
    format: str = table_format()


def compare_runs(cfg: CompareConfig) -> list[dict[str, Any]]:
    """The run folders ``cfg.a`` and ``cfg.b`` compared, with ``cfg.resamples`` draws at
    level ``cfg.confidence`` seeded by ``cfg.seed``, p-values corrected by
    ``cfg.correction``: one row per sweep point (task, checkpoint, k, seed) that both
    folders hold: the
    folders and their models, items scored by both (``n``) and by one side only (counted,
    and their ids in ``only_in_a_ids`` / ``only_in_b_ids``), each side's accuracy and
    macro F1, McNemar's exact test (``mcnemar_p``), and the percentile bootstrap interval
    and paired permutation p-value of B - A in accuracy and in macro F1 (seeded by
    ``seed``; see :func:`nlieval.significance.paired_bootstrap`). Items without a gold
    label are left out.

    Then one row per (task, checkpoint, k) with ``seed`` None whenever the two sides'
    seeds are not one and the same: each item's correctness averaged over each side's
    seeds (``seeds_a``, ``seeds_b``; items every seed of both scored), each side's mean
    accuracy with its standard deviation over seeds (``accuracy_a_std``), and B - A in
    the mean with its bootstrap interval and the p-value of a paired permutation test over
    items (each item's two seed-means swapped at random).

    Every p-value (``mcnemar_p``, ``accuracy_p``, ``macro_f1_p``) is one test of a family
    of :data:`FAMILIES` (one kind of test of one metric, per seed or over seeds: McNemar's
    test and the permutation test of accuracy test the same difference, and are never
    counted as two tests of one family), adjusted within it in ``*_p_adj`` by
    ``correction`` (a key of :data:`nlieval.significance.CORRECTIONS`), with the family's
    name in ``*_p_family`` and its size in ``*_p_tests``. The intervals are not adjusted.
    A test whose metric is undefined (macro F1 of items with one gold class) has NaN as
    its difference, interval and p (n/a in the table, with :data:`TEST_NA_NOTE`), and is
    left out of its family: the others are adjusted as a family of the tests made.
    Every row also names the (task, k, checkpoint) points one side holds and the other not
    (``not_compared_a``, ``not_compared_b``).
    """
    a, b, correction = cfg.a, cfg.b, cfg.correction
    resamples, confidence, seed = cfg.resamples, cfg.confidence, cfg.seed
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; one of {', '.join(CORRECTIONS)}")
    left, right = _by_point(a), _by_point(b)
    rows: list[dict[str, Any]] = []
    averaged: list[dict[str, Any]] = []
    common = {
        "model_a": next(iter(next(iter(left.values())).values())).model,
        "model_b": next(iter(next(iter(right.values())).values())).model,
        "folder_a": str(a),
        "folder_b": str(b),
        "confidence": confidence,
        "resamples": resamples,
        "seed_bootstrap": seed,
        "mcnemar_test": MCNEMAR,
        "permutation_test": PERMUTATION,
        "interval": INTERVAL,
    }
    used: tuple[set[Any], set[Any]] = (set(), set())
    for ca, cb in _pairs(a, b, _checkpoints(left), _checkpoints(right)):
        tasks_k = sorted(
            {(p[0], p[2]) for p in left if p[1] == ca} & {(p[0], p[2]) for p in right if p[1] == cb}
        )
        for task, k in tasks_k:
            used[0].add((task, ca, k))
            used[1].add((task, cb, k))
            seeds_a = sorted(p[3] for p in left if p[:3] == (task, ca, k))
            seeds_b = sorted(p[3] for p in right if p[:3] == (task, cb, k))
            where = {**common, "task": task, "k": k, "checkpoint": ca if ca == cb else None}
            where |= {"checkpoint_a": ca, "checkpoint_b": cb}
            for s in (s for s in seeds_a if s in seeds_b):
                row = _one_seed(a, b, left[(task, ca, k, s)], right[(task, cb, k, s)], where, s)
                if row is not None:
                    rows.append(row)
            if not (seeds_a == seeds_b and len(seeds_a) == 1):
                sides = (
                    [left[(task, ca, k, s)] for s in seeds_a],
                    [right[(task, cb, k, s)] for s in seeds_b],
                )
                row = _over_seeds(a, b, sides, where, seeds_a, seeds_b)
                if row is not None:
                    averaged.append(row)
    rows += averaged
    if not rows:
        raise RunError(
            f"{a} and {b} share no sweep point (task, checkpoint, k, seed): nothing to compare"
        )
    # What one side holds and the other not (another k, task or checkpoint): named, not
    # silently dropped.
    unpaired = [
        sorted(
            f"{t} k={k}" + (f" @ {c}" if c else "") for t, c, k in {p[:3] for p in folder} - done
        )
        for folder, done in zip((left, right), used, strict=True)
    ]
    for r in rows:
        r["not_compared_a"], r["not_compared_b"] = unpaired
    _adjust(rows, correction)
    return rows


def _one_seed(
    a: str | Path,
    b: str | Path,
    la: dict[str, Record],
    lb: dict[str, Record],
    where: dict[str, Any],
    s: int,
) -> dict[str, Any] | None:
    ids = sorted(i for i in set(la) & set(lb) if la[i].gold is not None)
    for i in ids:
        _gold_checked(a, b, where["task"], la[i], lb[i])
    if not ids:
        return None
    resamples, confidence, seed = where["resamples"], where["confidence"], where["seed_bootstrap"]
    gold = [la[i].gold for i in ids]
    pa = [str(la[i].pred) for i in ids]
    pb = [str(lb[i].pred) for i in ids]
    test = mcnemar([la[i].correct for i in ids], [lb[i].correct for i in ids])
    tests = {
        name: paired_bootstrap(
            pa, pb, gold, metric=name, resamples=resamples, confidence=confidence, seed=seed
        )
        for name in (m.name for m in compared())
    }
    return {
        **where,
        "seed": s,
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
    }


def _over_seeds(
    a: str | Path,
    b: str | Path,
    sides: tuple[list[dict[str, Record]], list[dict[str, Record]]],
    where: dict[str, Any],
    seeds_a: list[int],
    seeds_b: list[int],
) -> dict[str, Any] | None:
    every = [set(by_id) for side in sides for by_id in side]
    first = sides[0][0]
    ids = sorted(i for i in set.intersection(*every) if first[i].gold is not None)
    for i in ids:
        for by_id in (*sides[0], *sides[1]):
            _gold_checked(a, b, where["task"], first[i], by_id[i])
    if not ids:
        return None
    # One row per seed, one column per item: 1 where that seed got it right.
    ok_a, ok_b = (np.array([[s[i].correct for i in ids] for s in side], float) for side in sides)
    t = paired_bootstrap(
        ok_a.mean(axis=0),
        ok_b.mean(axis=0),
        metric="mean",
        resamples=where["resamples"],
        confidence=where["confidence"],
        seed=where["seed_bootstrap"],
    )
    (mean_a, std_a), (mean_b, std_b) = mean_std(ok_a.mean(axis=1)), mean_std(ok_b.mean(axis=1))
    return {
        **where,
        "seed": None,
        "seeds_a": seeds_a,
        "seeds_b": seeds_b,
        "n": len(ids),
        "averaged": OVER_SEEDS,
        "accuracy_a": mean_a,
        "accuracy_b": mean_b,
        "accuracy_a_std": std_a,
        "accuracy_b_std": std_b,
        "accuracy_diff": t.diff,
        "accuracy_ci": [t.low, t.high],
        "accuracy_p": t.p_value,
    }


#: The families of tests: each p-value key of a per-seed row (``seed`` set) or of a row
#: over seeds (``seed`` None) names the family it is adjusted within. McNemar's test and
#: the permutation test of accuracy test the same difference, so they are alternatives,
#: never two members of one family; within a family every test is another sweep point.
def families() -> dict[tuple[bool, str], str]:
    """The families of tests of the metrics compared now (:func:`compared`).

    >>> list(families().values())[:2]
    ['McNemar exact, accuracy, per seed', 'paired permutation, accuracy, per seed']
    """
    return {
        (False, "mcnemar_p"): f"{MCNEMAR}, accuracy, per seed",
        **{(False, f"{m.name}_p"): f"{PERMUTATION}, {m.label}, per seed" for m in compared()},
        (True, "accuracy_p"): f"{PERMUTATION}, accuracy, over seeds",
    }


FAMILIES = families()


def _adjust(rows: list[dict[str, Any]], correction: str) -> None:
    """Adjust each family of :data:`FAMILIES` on its own; each p-value ``key`` of a row
    gets ``key_adj``, ``key_family`` (the family's name) and ``key_tests`` (its size).
    An n/a p-value (NaN: the metric undefined on the items) is no test: it is left out of
    its family (:func:`nlieval.significance.adjusted`), its ``key_adj`` n/a too, and the
    family's size counts the tests made."""
    for (over, key), family in families().items():
        members = [r for r in rows if (r["seed"] is None) == over and key in r]
        ps = adjusted([r[key] for r in members], correction)
        size = sum(not math.isnan(r[key]) for r in members)
        for r, p in zip(members, ps, strict=True):
            r[f"{key}_adj"], r[f"{key}_family"], r[f"{key}_tests"] = p, family, size
    for r in rows:
        r["correction"] = correction


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


def _task(r: dict[str, Any]) -> str:
    ca, cb = r.get("checkpoint_a", r.get("checkpoint")), r.get("checkpoint_b", r.get("checkpoint"))
    if ca == cb:
        return str(r["task"]) + (f" @ {ca}" if ca else "")
    return f"{r['task']} @ A {ca or '-'}, B {cb or '-'}"


def _left_out(r: dict[str, Any]) -> str | None:
    parts = []
    for side in ("a", "b"):
        ids = r.get(f"only_in_{side}_ids") or []
        if ids:
            shown = ", ".join(str(i) for i in ids[:NAMED]) + (", ..." if len(ids) > NAMED else "")
            parts.append(f"{len(ids)} only in {side.upper()} ({shown})")
    if not parts:
        return None
    return f"left out of {_task(r)} k={r['k']} seed={r['seed']}: {'; '.join(parts)}"


def _p(r: dict[str, Any], key: str) -> Cell:
    p = r.get(key + "_adj", r[key])
    return Cell("n/a") if math.isnan(p) else Cell(f"{p:.3g}", p)


def _diff(diff: float, ci: Sequence[float]) -> Cell:
    """A difference and its interval; n/a where undefined (:data:`TEST_NA_NOTE`)."""
    if math.isnan(diff):
        return Cell("n/a")
    lo, hi = ci
    if math.isnan(lo) or math.isnan(hi):
        return Cell(f"{diff:+.3f} [n/a]", diff)
    return Cell(f"{diff:+.3f} [{lo:+.3f}, {hi:+.3f}]", diff)


def _seeds(mean: float, std: float, seeds: Sequence[int]) -> Cell:
    text = f"{mean:.3f} ± {std:.3f} ({len(seeds)} seed{'s' if len(seeds) != 1 else ''})"
    return Cell(text, mean)


def _names(r: dict[str, Any]) -> tuple[str, str]:
    """The interval's and the adjusted p-values' words in a header."""
    level = int(round(100 * r["confidence"]))
    named = CORRECTIONS.get(r.get("correction", "none"), (None, None))[0]
    return f"{INTERVAL} {level}%", f", {named}" if named else ""


def comparison_tables(rows: Sequence[dict[str, Any]]) -> list[Table]:
    """The tables of :func:`comparison_table`, as values: per seed (for the first metric
    of :func:`compared` each side's value, B - A and p; for the others B - A and p;
    McNemar's test), then over seeds (titled; either left out when no row is of its
    kind)."""
    per_seed = [r for r in rows if r["seed"] is not None]
    over = [r for r in rows if r["seed"] is None]
    tables = []
    if per_seed:
        interval, adj = _names(per_seed[0])
        first, *others = [m for m in compared() if f"{m.name}_diff" in per_seed[0]]
        head = ["task", "k", "seed", "n", f"{_short(first)} A", f"{_short(first)} B"]
        head += [f"B - A [{interval}]", f"p ({PERMUTATION}{adj})"]
        for m in others:
            head += [f"{_short(m)} B - A [{interval}]", f"{_short(m)} p ({PERMUTATION}{adj})"]
        head += ["A only/B only", f"p ({MCNEMAR}{adj})"]
        body: list[list[Cell | str]] = []
        for r in per_seed:
            a, b = r[f"{first.name}_a"], r[f"{first.name}_b"]
            body.append(
                [
                    _task(r),
                    Cell(str(r["k"]), r["k"]),
                    Cell(str(r["seed"]), r["seed"]),
                    Cell(str(r["n"]), r["n"]),
                    Cell(f"{a:.3f}", a),
                    Cell(f"{b:.3f}", b),
                    *(
                        cell
                        for m in (first, *others)
                        for cell in (
                            _diff(r[f"{m.name}_diff"], r[f"{m.name}_ci"]),
                            _p(r, f"{m.name}_p"),
                        )
                    ),
                    f"{r['a_only']}/{r['b_only']}",
                    _p(r, "mcnemar_p"),
                ]
            )
        tables.append(Table.of(head, body))
    if over:
        interval, adj = _names(over[0])
        head = ["task", "k", "n", "acc A (mean ± std)", "acc B (mean ± std)"]
        head += [f"B - A [{interval}]", f"p ({PERMUTATION}{adj})"]
        body = []
        for r in over:
            body.append(
                [
                    _task(r),
                    Cell(str(r["k"]), r["k"]),
                    Cell(str(r["n"]), r["n"]),
                    _seeds(r["accuracy_a"], r["accuracy_a_std"], r["seeds_a"]),
                    _seeds(r["accuracy_b"], r["accuracy_b_std"], r["seeds_b"]),
                    _diff(r["accuracy_diff"], r["accuracy_ci"]),
                    _p(r, "accuracy_p"),
                ]
            )
        tables.append(Table.of(head, body, title=[f"Over seeds ({OVER_SEEDS}):", ""]))
    return tables


def _not_compared(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [
        f"not compared, only in {side.upper()}: {'; '.join(points)}"
        for side in ("a", "b")
        if (points := rows[0].get(f"not_compared_{side}"))
    ]


def _family_note(rows: Sequence[dict[str, Any]]) -> str | None:
    sizes = {
        r[key + "_family"]: r[key + "_tests"]
        for r in rows
        for key in ("mcnemar_p", *(f"{m.name}_p" for m in compared()))
        if key + "_family" in r
    }
    if not sizes:
        return None
    named = CORRECTIONS.get(rows[0].get("correction", "none"), (None, None))[0]
    families = "; ".join(f"{family} ({n})" for family, n in sizes.items())
    if named is None:
        return f"p-values not adjusted (families of tests: {families}); intervals per comparison"
    return (
        f"p-values adjusted ({named}) within each family of tests (raw ones in the JSON): "
        f"{families}; intervals per comparison, not adjusted"
    )


def comparison_table(rows: Sequence[dict[str, Any]]) -> Document:
    """The rows of :func:`compare_runs` as tables of values, under a line naming each side
    (folder and model): one row per seed, then (where a side has several seeds or the two
    sides other seeds) one per sweep point over the seeds, with the number of seeds
    beside each ±; under them the correction, the points only one side holds, and a line
    per sweep point that left items out (how many only one side scored, the first
    :data:`NAMED` of their ids).

    >>> row = {"task": "t", "checkpoint": None, "k": 0, "seed": 0, "n": 4,
    ...     "folder_a": "runs/x", "folder_b": "runs/y", "model_a": "m1", "model_b": "m2",
    ...     "only_in_a_ids": [], "only_in_b_ids": ["7", "9"],
    ...     "accuracy_a": 0.5, "accuracy_b": 0.75, "accuracy_diff": 0.25,
    ...     "accuracy_ci": [0.0, 0.5], "accuracy_p": 1.0, "accuracy_p_adj": 1.0,
    ...     "macro_f1_diff": 0.2, "macro_f1_ci": [-0.1, 0.6], "macro_f1_p": 0.5,
    ...     "macro_f1_p_adj": 1.0, "a_only": 0, "b_only": 1, "mcnemar_p": 1.0,
    ...     "mcnemar_p_adj": 1.0, "confidence": 0.95, "correction": "holm"}
    >>> row |= {f"{key}_family": name for (over, key), name in FAMILIES.items() if not over}
    >>> row |= {f"{key}_tests": 1 for (over, key) in FAMILIES if not over}
    >>> from nlieval.ground import render
    >>> lines = render(comparison_table([row]), "md").splitlines()
    >>> lines[:2]
    ['A: runs/x (m1)', 'B: runs/y (m2)']
    >>> lines[3].split(" | ")[6:8]
    ['B - A [bootstrap percentile 95%]', 'p (paired permutation, Holm)']
    >>> lines[5].split(" | ")[4:8]
    ['0.500', '0.750', '+0.250 [+0.000, +0.500]', '1']
    >>> for line in lines[-2:]:  # each family holds the one row's test
    ...     print(line)
    p-values adjusted (Holm) within each family of tests (raw ones in the JSON): McNemar \
exact, accuracy, per seed (1); paired permutation, accuracy, per seed (1); paired \
permutation, macro F1, per seed (1); intervals per comparison, not adjusted
    left out of t k=0 seed=0: 2 only in B (7, 9)
    """
    if not rows:
        return ["(no shared items)"]
    sides = _sides(rows)
    out: list[Table | str] = [*sides, *([""] if sides else [])]
    undefined = False
    for i, table in enumerate(comparison_tables(rows)):
        out += [*([""] if i else []), table]
        undefined = undefined or any("n/a" in c.text for line in table.rows for c in line)
    notes = [line for line in map(_left_out, rows) if line is not None]
    family = _family_note(rows)
    notes = ([family] if family else []) + _not_compared(rows) + notes
    notes = ([TEST_NA_NOTE] if undefined else []) + notes
    return [*out, *([""] if notes else []), *notes]
