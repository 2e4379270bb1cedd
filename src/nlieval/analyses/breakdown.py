"""Metrics broken down by any field of the records or their items: HANS heuristic and
subcase, MNLI genre, ANLI round, SciNLI domain, the gold label, ...

A field is a record attribute (``gold``, ``pred``, ``task``, ``k``, ``model``, ...) or a key
of the item's extra fields that the task keeps in each record (``meta``: ``heuristic``,
``subcase``, ``genre``, ``round``, ``domain``), never a list written here. Each group's
metrics are computed per seed and then averaged (mean and sample std over seeds), as the
tables of a whole run are (:func:`nlieval.metrics.summarize`).

>>> from nlieval.types import Record
>>> def rec(i, h, gold, pred):
...     return Record("hans", str(i), "m", 0, 0, ("entailment", "non-entailment"), (-1.0, -2.0),
...                   (0.7, 0.3), pred, gold, meta={"heuristic": h})
>>> rows = breakdown([rec(1, "lexical_overlap", "entailment", "entailment"),
...                   rec(2, "lexical_overlap", "non-entailment", "entailment"),
...                   rec(3, "subsequence", "entailment", "entailment")], ["heuristic"])
>>> [(r["heuristic"], r["n"], r["accuracy"], r["macro_f1"]) for r in rows]
[('lexical_overlap', 2, 0.5, 0.3333333333333333), ('subsequence', 1, 1.0, None)]
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from ..ground import Cell, DataError, Document, Table, render
from ..metrics import Metric, mean_std, metrics, point_metrics
from ..types import Record
from .notes import seeds_note

#: Record attributes a breakdown may group by (anything else is read from ``meta``).
RECORD_FIELDS = ("task", "model", "checkpoint", "k", "seed", "gold", "pred")


def field_value(record: Record, name: str) -> Any:
    """The value of ``name`` for a record: an attribute, else its item's extra field
    (None where the item has none).

    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (0.7, 0.3), "a", "b",
    ...            meta={"genre": "fiction"})
    >>> field_value(r, "gold"), field_value(r, "genre"), field_value(r, "domain")
    ('b', 'fiction', None)
    """
    if name in RECORD_FIELDS:
        return getattr(record, name)
    return record.meta.get(name)


def group_value(record: Record, name: str) -> Any:
    """:func:`field_value` as a value to group by: a field that holds a JSON object or
    list is a :class:`~nlieval.ground.DataError` naming the record.

    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (0.7, 0.3), "a", "b",
    ...            meta={"genre": ["x"]})
    >>> group_value(r, "gold")
    'b'
    >>> group_value(r, "genre")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: field 'genre': record of item '1' (...) holds a list, ...
    """
    v = field_value(record, name)
    if isinstance(v, (dict, list)):
        # A group is one value; an object or list would be a TypeError (unhashable).
        kind = "an object" if isinstance(v, dict) else "a list"
        raise DataError(
            None,
            None,
            name,
            f"record of item {record.item_id!r} (model {record.model}, k {record.k}, "
            f"seed {record.seed}) holds {kind}, not a value to group by",
        )
    return v


def breakdown(records: Iterable[Record], by: Sequence[str]) -> list[dict[str, Any]]:
    """One row per model, checkpoint, task, k and value of each field in ``by``: the
    number of items (per seed), accuracy and macro F1 (mean over seeds, with ``*_std``),
    the per-class F1 (mean over seeds) and ``seeds``. F1 is over the classes with gold
    items in the row: a class without any has None (its recall is undefined), and macro F1
    is None where the row's gold holds one class (a breakdown by ``gold``). Rows are
    sorted by their keys; records whose field is missing are grouped under None, and a
    field that holds a JSON object or list is a :class:`~nlieval.ground.DataError`
    naming the record.

    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (0.7, 0.3), "a", "b",
    ...            meta={"genre": {"x": 1}})
    >>> breakdown([r], ["genre"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: field 'genre': record of item '1' (...) holds an object, ...
    """
    if not by:
        raise ValueError("name at least one field to break down by")
    groups: dict[tuple[Any, ...], dict[int, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        values = [group_value(r, f) for f in by]
        key = (r.model, r.checkpoint, r.task, r.k, *values)
        groups[key][r.seed].append(r)
    rows = []
    for key in sorted(groups, key=lambda k: tuple("" if v is None else str(v) for v in k)):
        per_seed = {s: point_metrics(recs) for s, recs in sorted(groups[key].items())}
        model, ckpt, task, k, *values = key
        row: dict[str, Any] = {"model": model, "checkpoint": ckpt, "task": task, "k": k}
        row.update(dict(zip(by, values, strict=True)))
        ns = {len(groups[key][s]) for s in per_seed}
        row["n"] = ns.pop() if len(ns) == 1 else sorted(ns)
        # The task's label order (the papers' column order), then anything else by name.
        order = list(next(iter(groups[key].values()))[0].labels)
        seen = {c for m in per_seed.values() for c in (m.get("per_class_f1") or {})}
        classes = [c for c in order if c in seen] + sorted(seen - set(order))
        cell = [_cell_f1(m) for m in per_seed.values()]
        for m in breakdown_metrics():
            values = [p[m.name] for p in per_seed.values() if p.get(m.name) is not None]
            row[m.name], row[f"{m.name}_std"] = _mean_std_or_none(values)
        row["per_class_f1"] = {
            c: _mean_std_or_none([f1.get(c, math.nan) for _, f1 in cell])[0] for c in classes
        }
        row["seeds"] = len(per_seed)
        rows.append(row)
    return rows


def breakdown_metrics() -> list[Metric]:
    """The metrics a breakdown shows: those of :data:`nlieval.metrics.METRICS` computed
    from the predicted labels of the records (a corpus function), in table order; a
    metric added there is a column of every breakdown.

    >>> [m.name for m in breakdown_metrics()]
    ['accuracy', 'macro_f1']
    """
    return metrics(source="records", corpus=True)


def _cell_f1(m: dict[str, Any]) -> tuple[float, dict[str, float]]:
    """The macro F1 and per-class F1 of one seed's metrics of a cell. Macro F1 is the
    metric table's (:data:`nlieval.metrics.METRICS`, the same number ``report`` and
    ``grid`` give for those items), n/a where the cell holds gold items of one class only
    (a cell restricted to ``gold=entailment``: accuracy says it all). A class without gold
    items in the cell has no recall (0/0): its own F1 is n/a, not 0.

    >>> _cell_f1({"macro_f1": 0.5, "per_class_f1": {"a": 0.5, "b": 0.0, "c": 1.0},
    ...           "gold_counts": {"a": 2, "b": 0, "c": 1}})
    (0.5, {'a': 0.5, 'b': nan, 'c': 1.0})
    >>> _cell_f1({"macro_f1": 0.4, "per_class_f1": {"a": 0.8, "b": 0.0},
    ...           "gold_counts": {"a": 5, "b": 0}})
    (nan, {'a': 0.8, 'b': nan})
    """
    gold = m.get("gold_counts") or {}
    f1 = {
        c: float(v) if gold.get(c, 0) > 0 else math.nan
        for c, v in (m.get("per_class_f1") or {}).items()
    }
    with_gold = sum(1 for n in gold.values() if n > 0)
    macro = m.get("macro_f1")
    return (float(macro) if with_gold > 1 and macro is not None else math.nan), f1


def _mean_std_or_none(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and sample std over seeds of the values that are numbers; (None, None)
    where none is (n/a in every format: JSON has no NaN)."""
    vals = [v for v in values if v is not None and not math.isnan(v)]
    if not vals:
        return None, None
    return mean_std(vals)


def _csv(value: Any) -> Any:
    """A CSV cell: n/a (None) is empty."""
    return "" if value is None else value


#: Said under a table with a cell that has no F1 (:func:`_cell_f1`).
NA_NOTE = (
    "n/a: F1 of a class without gold items in the row (its recall is undefined); macro F1 "
    "as every command gives it (the mean over the classes with gold items), n/a where "
    "the row holds gold items of one class only"
)


def null_note(row: dict[str, Any]) -> str | None:
    """What the JSON ``note`` of a :func:`breakdown` row says: which of its cells are null
    (n/a in the other formats) and why (:data:`NA_NOTE`, cell by cell); None where none is.

    >>> row = {"macro_f1": None, "per_class_f1": {"a": 0.8, "b": None}}
    >>> for part in null_note(row).split("; "):
    ...     print(part)
    null: macro_f1, macro_f1_std (the row holds gold items of one class only)
    per_class_f1.b (no gold items of b in the row: its recall is undefined)
    >>> null_note({"macro_f1": 0.5, "per_class_f1": {"a": 0.5, "b": 0.5}}) is None
    True
    """
    why = []
    if row.get("macro_f1") is None:
        why.append("macro_f1, macro_f1_std (the row holds gold items of one class only)")
    why += [
        f"per_class_f1.{c} (no gold items of {c} in the row: its recall is undefined)"
        for c, f1 in row.get("per_class_f1", {}).items()
        if f1 is None
    ]
    return "null: " + "; ".join(why) if why else None


def breakdown_table(rows: Sequence[dict[str, Any]], by: Sequence[str], fmt: str = "md") -> str:
    """The rows of :func:`breakdown` as a table: Markdown (``md``) or LaTeX (``latex``),
    :func:`breakdown_document` rendered; CSV (``csv``: every number with its std); JSON
    (``json``: the rows as they are, each with a ``note``, :func:`null_note`, naming its
    null cells and why).

    >>> rows = [{"model": "m", "checkpoint": None, "task": "t", "k": 0, "genre": "fiction",
    ...          "n": 3, "accuracy": 0.5, "accuracy_std": 0.0, "macro_f1": 0.4,
    ...          "macro_f1_std": 0.0, "per_class_f1": {"entailment": 0.4}, "seeds": 1}]
    >>> print(breakdown_table(rows, ["genre"]).splitlines()[2])
    | m | t | 0 | fiction | 3 | 0.500 | 0.400 | 0.400 |
    """
    if fmt == "json":
        return json.dumps([{**r, "note": null_note(r)} for r in rows], indent=2)
    shown = breakdown_metrics()
    classes = _classes(rows)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        fixed = ["n", *(f"{m.name}{part}" for m in shown for part in ("", "_std"))]
        w.writerow(
            [
                "model",
                "checkpoint",
                "task",
                "k",
                *by,
                *fixed,
                *(f"f1_{c}" for c in classes),
                "seeds",
            ]
        )
        for r in rows:
            f1 = r["per_class_f1"]
            w.writerow([r["model"], r.get("checkpoint") or "", r["task"], r["k"],
                        *(r[f] for f in by), r["n"], *(_csv(r[f]) for f in fixed[1:]),
                        *(_csv(f1.get(c)) for c in classes),
                        r["seeds"]])  # fmt: skip
        return buf.getvalue()
    if fmt not in ("md", "latex"):
        raise ValueError(f"unknown format {fmt!r}: md, csv, json or latex")
    return render(breakdown_document(rows, by), fmt)


def _classes(rows: Sequence[dict[str, Any]]) -> list[str]:
    classes: list[str] = []
    for r in rows:
        classes += [c for c in r["per_class_f1"] if c not in classes]
    return classes


def breakdown_document(rows: Sequence[dict[str, Any]], by: Sequence[str]) -> Document:
    """The rows of :func:`breakdown` as a table of values: each metric of
    :func:`breakdown_metrics` (mean ± std over seeds), then per-class F1 with a column per
    class (the papers' per-class F1 per domain layout); a row whose group lacks a class
    shows ``–``, one without gold items of it ``n/a`` (:data:`NA_NOTE` under the table).
    Under the table too: how many seeds are behind a ± (in each cell where rows differ),
    as ``grid`` says it.

    >>> rows = [{"model": "m", "checkpoint": None, "task": "t", "k": 0, "genre": "fiction",
    ...          "n": 3, "accuracy": 0.5, "accuracy_std": 0.0, "macro_f1": None,
    ...          "macro_f1_std": None, "per_class_f1": {"entailment": 0.4}, "seeds": 1}]
    >>> table, = breakdown_document(rows, ["genre"])
    >>> table.rows[0][5:], table.notes == ("", NA_NOTE)
    ((Cell(text='0.500', value=0.5), Cell(text='n/a', value=None), \
Cell(text='0.400', value=0.4)), True)
    """
    shown = breakdown_metrics()
    classes = _classes(rows)
    head = ["model", "task", "k", *by, "n", *(m.label for m in shown)]
    head += [f"F1 {c}" for c in classes]
    note, each = seeds_note(r["seeds"] for r in rows if r["seeds"] > 1)
    body = []
    for r in rows:
        model = r["model"] + (f" @ {r['checkpoint']}" if r.get("checkpoint") else "")

        def cell(name: str, digits: int, row: dict[str, Any] = r) -> Cell:
            mean, std = row[name], row[f"{name}_std"]
            if mean is None:
                return Cell("n/a")
            if row["seeds"] == 1 or std is None:
                return Cell(f"{mean:.{digits}f}", mean)
            text = f"{mean:.{digits}f} ± {std:.{digits}f}"
            return Cell(text + (f" ({row['seeds']} seeds)" if each else ""), mean)

        f1 = r["per_class_f1"]
        body.append(
            [
                model,
                r["task"],
                Cell(str(r["k"]), r["k"] if isinstance(r["k"], int) else None),
                *(str(r[f]) for f in by),
                Cell(str(r["n"]), r["n"] if isinstance(r["n"], int) else None),
                *(cell(m.name, m.digits) for m in shown),
                *(Cell("–") if c not in f1 else Cell("n/a") if f1[c] is None
                  else Cell(f"{f1[c]:.3f}", f1[c]) for c in classes),
            ]
        )  # fmt: skip
    table = Table.of(head, body)
    undefined = any(c.text == "n/a" for line in table.rows for c in line)
    notes = [*([NA_NOTE] if undefined else []), *([note] if note else [])]
    return [Table(table.header, table.rows, notes=("", *notes) if notes else ())]
