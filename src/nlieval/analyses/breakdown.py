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
>>> [(r["heuristic"], r["n"], r["accuracy"]) for r in rows]
[('lexical_overlap', 2, 0.5), ('subsequence', 1, 1.0)]
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from ..ground import DataError, as_format
from ..metrics import mean_std, point_metrics
from ..runs import markdown_table
from ..types import Record

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
    the per-class F1 (mean over seeds) and ``seeds``. Rows are sorted by their keys;
    records whose field is missing are grouped under None, and a field that holds a JSON
    object or list is a :class:`~nlieval.ground.DataError` naming the record.

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
        for name in ("accuracy", "macro_f1"):
            vals = [m[name] for m in per_seed.values() if m.get(name) is not None]
            mean, std = mean_std(vals, skip_nan=True) if vals else (float("nan"), float("nan"))
            row[name], row[f"{name}_std"] = mean, std
        seen = {c for m in per_seed.values() for c in (m.get("per_class_f1") or {})}
        # The task's label order (the papers' column order), then anything else by name.
        order = list(next(iter(groups[key].values()))[0].labels)
        classes = [c for c in order if c in seen] + sorted(seen - set(order))
        row["per_class_f1"] = {
            c: mean_std(
                [
                    m["per_class_f1"][c]
                    for m in per_seed.values()
                    if c in (m.get("per_class_f1") or {})
                ],
                skip_nan=True,
            )[0]
            for c in classes
        }
        row["seeds"] = len(per_seed)
        rows.append(row)
    return rows


def breakdown_table(rows: Sequence[dict[str, Any]], by: Sequence[str], fmt: str = "md") -> str:
    """The rows of :func:`breakdown` as a table: Markdown (``md``), CSV (``csv``), JSON
    (``json``: the rows as they are) or LaTeX (``latex``: the Markdown cells, booktabs).
    Per-class F1 gets a column per class (the papers' per-class F1 per domain layout); a
    row whose group lacks a class shows ``–``.

    >>> rows = [{"model": "m", "checkpoint": None, "task": "t", "k": 0, "genre": "fiction",
    ...          "n": 3, "accuracy": 0.5, "accuracy_std": 0.0, "macro_f1": 0.4,
    ...          "macro_f1_std": 0.0, "per_class_f1": {"entailment": 0.4}, "seeds": 1}]
    >>> print(breakdown_table(rows, ["genre"]).splitlines()[2])
    | m | t | 0 | fiction | 3 | 0.500 | 0.400 | 0.400 |
    """
    if fmt == "json":
        return json.dumps(list(rows), indent=2)
    classes: list[str] = []
    for r in rows:
        classes += [c for c in r["per_class_f1"] if c not in classes]
    head = ["model", "task", "k", *by, "n", "accuracy", "macro F1", *(f"F1 {c}" for c in classes)]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        fixed = ["n", "accuracy", "accuracy_std", "macro_f1", "macro_f1_std"]
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
                        *(r[f] for f in by), r["n"], r["accuracy"], r["accuracy_std"],
                        r["macro_f1"], r["macro_f1_std"], *(f1.get(c, "") for c in classes),
                        r["seeds"]])  # fmt: skip
        return buf.getvalue()
    if fmt not in ("md", "latex"):
        raise ValueError(f"unknown format {fmt!r}: md, csv, json or latex")
    body = []
    for r in rows:
        model = r["model"] + (f" @ {r['checkpoint']}" if r.get("checkpoint") else "")

        def cell(name: str, row: dict[str, Any] = r) -> str:
            mean, std = row[name], row[f"{name}_std"]
            return f"{mean:.3f}" + (f" ± {std:.3f}" if row["seeds"] > 1 else "")

        f1 = r["per_class_f1"]
        body.append(
            [
                model,
                r["task"],
                str(r["k"]),
                *(str(r[f]) for f in by),
                str(r["n"]),
                cell("accuracy"),
                cell("macro_f1"),
                *(f"{f1[c]:.3f}" if c in f1 else "–" for c in classes),
            ]
        )
    return as_format("\n".join(markdown_table(head, body)), fmt)
