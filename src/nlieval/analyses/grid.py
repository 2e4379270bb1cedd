"""Grid tables across run folders: the papers' model x benchmark tables.

Metric rows (one per model, checkpoint, task and k: :func:`nlieval.metrics.summarize`, or
the ChaosNLI rows of :func:`nlieval.analyses.chaosnli.score_records` with
``acc_original``/``acc_majority``) are pivoted by the researcher's choice of row keys
(``model``, ``model`` and ``k``, ...) and column keys (``task``, and the metric when there
are several: the ChaosNLI table's task x {original, majority}), each cell a mean over
seeds with its std, an Average row over the models (one per value of the other row keys:
per k when the rows are model and k; labelled ``mean of 2 models``), and optionally the gap of
every row to a reference row (e.g. points over a hypothesis-only baseline).

Every cell carries its number of items ``n``; when the rows say which items they were
scored on (``item_ids``), the cells of one task must share one item set: a table that put
a 50-item cell beside (or averaged it with) a 200-item cell of the same task is refused,
unless ``allow_mixed``, which marks those cells instead.

A row or column key may also be any field of the items (``domain``, ``genre``, ``round``,
``heuristic``, a task YAML's own ``meta`` field): :func:`by_fields` scores the records of
each value apart and once more all pooled, the ``Overall`` row or column (a score over all
the items, not a mean of the per-value cells: macro F1 over pooled items is not the mean of
per-domain macro F1s).

>>> rows = [{"model": "a", "task": "snli", "k": 0, "accuracy": 0.5, "accuracy_std": 0.1},
...         {"model": "b", "task": "snli", "k": 0, "accuracy": 0.7, "accuracy_std": 0.0},
...         {"model": "a", "task": "mnli", "k": 0, "accuracy": 0.4, "accuracy_std": 0.0}]
>>> g = grid(rows, index=("model",), columns=("task",), values=("accuracy",))
>>> [(c.row, c.column, c.mean) for c in g.cells if c.row == ("mean of 2 models",)]
[(('mean of 2 models',), ('mnli',), 0.4), (('mean of 2 models',), ('snli',), 0.6)]
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from ..ground import Cell as TableCell
from ..ground import SettingError, Table, mean_label, render
from ..metrics import METRICS, UNDEFINED_NOTE, group_records, listed, metrics
from ..significance import CONFIDENCE, INTERVAL_NA_NOTE, MEAN, RESAMPLES, bootstrap_interval
from ..types import Record
from .breakdown import group_value
from .notes import seeds_note

#: Keys of every metric row (besides ``metric``); any other key is a field of the items.
KEYS = ("model", "checkpoint", "task", "k")
#: The value of an item-field key in the row or column scored on all items pooled.
OVERALL = "Overall"


@dataclass(frozen=True)
class Cell:
    """One cell: its row and column keys, the mean over seeds (NaN: no such run), the
    std over seeds (None: one seed, or a derived cell such as the Average) and, on
    request, the bootstrap interval over items [``low``, ``high``] (None: not asked for,
    or a derived cell)."""

    row: tuple[Any, ...]
    column: tuple[Any, ...]
    mean: float
    std: float | None = None
    low: float | None = None
    high: float | None = None
    #: Items scored (None: not known, or a derived cell).
    n: int | None = None
    #: Scored on other items than another cell of its task (or derived from such a cell).
    mixed: bool = False
    #: The metric of :data:`nlieval.metrics.METRICS` it holds (how ``--percent`` scales it).
    metric: str = ""
    #: Seeds behind ``mean`` and ``std`` (None: not known, or a derived cell).
    seeds: int | None = None
    #: An Average cell over fewer rows than the column could have (the others lack it).
    short: bool = False


@dataclass(frozen=True)
class Grid:
    """A pivoted table: row keys named ``index``, column keys named ``columns``; ``rows``
    and ``cols`` in display order (the Average and gap rows last)."""

    index: tuple[str, ...]
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    cols: tuple[tuple[Any, ...], ...]
    cells: tuple[Cell, ...]
    #: Lines that say what the table cannot (missing references, short averages).
    notes: tuple[str, ...] = ()

    def value(self, row: tuple[Any, ...], col: tuple[Any, ...]) -> Cell | None:
        """The cell at ``row`` and ``col``, if the table has one."""
        for c in self.cells:
            if c.row == row and c.column == col:
                return c
        return None


def _key(row: Mapping[str, Any], names: Sequence[str], metric: str) -> tuple[Any, ...]:
    return tuple(metric if n == "metric" else row.get(n) for n in names)


def _sort_key(key: tuple[Any, ...], names: Sequence[str], values: Sequence[str]) -> tuple[str, ...]:
    # Numbers in numeric order, metrics in the order asked for, the Overall of an item
    # field after its values, the rest by name.
    out = []
    for name, v in zip(names, key, strict=True):
        if name == "metric":
            out.append(f"{values.index(v):06d}")
        elif isinstance(v, int):
            out.append(f"{v:012d}")
        elif name not in KEYS and v == OVERALL:
            out.append("\uffff")
        else:
            out.append("" if v is None else str(v))
    return tuple(out)


def _gap_column(col: tuple[Any, ...], name: str) -> tuple[Any, ...]:
    return (*col[:-1], f"{col[-1]} - {name}")


def grid(
    rows: Sequence[Mapping[str, Any]],
    *,
    index: Sequence[str] = ("model",),
    columns: Sequence[str] = ("task",),
    values: Sequence[str] = ("accuracy",),
    average: bool = True,
    reference: Mapping[str, Any] | None = None,
    allow_mixed: bool = False,
    references: Mapping[str, str | None] | None = None,
    reference_name: str = "reference",
) -> Grid:
    """Pivot metric rows into a :class:`Grid`.

    ``index`` and ``columns`` name keys of the rows (:data:`KEYS`, a field of the items
    that the rows hold, as :func:`by_fields` gives them) or ``metric`` (one of ``values``;
    when there are several values and neither names ``metric``, it is added to the
    columns). Two rows with one cell are an error (pick keys that tell them apart, e.g.
    add ``k``). ``average`` adds Average rows: the mean of each column over one row key
    (:func:`averaged_key`: the models), one row per value of the other row keys (per k,
    never pooling shot counts), labelled with what it averages
    (:func:`nlieval.ground.mean_label`: ``mean of 3 models``); over the rows that have
    the column (one that fewer rows hold is marked ``short`` and named in a note; an item
    field's ``Overall`` row is no row of the mean). ``reference`` names rows by
    some of their keys (``{"model": "hyp-only"}``): every other row gets a gap row
    ``<row> - <reference>`` of its differences to the reference row that shares its other
    keys (the same k, ...).

    ``references`` gives each model its own reference instead (model -> the model of its
    reference run, or None where it has none): a gap column ``<column> -
    <reference_name>`` beside the columns, each cell the model's cell minus its own
    reference's cell at the same other keys; a model without a reference gets no gap
    cells and a note, never another model's reference. ``model`` must then be a row or
    column key.

    A row's ``n`` is its cells' item count; its ``item_ids`` (optional) the items it was
    scored on. Cells of one task (and one value of each item field) on different item
    sets are a ValueError naming them, unless ``allow_mixed``: then they, and the Average
    and gap cells made from them, are marked ``mixed``.

    >>> rows = [{"model": "a", "task": "snli", "accuracy": 0.5, "n": 2, "item_ids": {"1", "2"}},
    ...         {"model": "b", "task": "snli", "accuracy": 0.7, "n": 1, "item_ids": {"1"}}]
    >>> grid(rows)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval...SettingError: the cells of task snli are scored on different items: a / snli ...
    >>> [(c.row, c.n, c.mixed) for c in grid(rows, allow_mixed=True).cells]
    [(('a',), 2, True), (('b',), 1, True), (('mean of 2 models',), None, True)]
    >>> own = [{"model": "m", "task": "t", "accuracy": 0.8}, {"model": "m hyp", "task": "t",
    ...         "accuracy": 0.6}, {"model": "n", "task": "t", "accuracy": 0.7}]
    >>> g = grid(own, references={"m": "m hyp", "n": None}, reference_name="hyp")
    >>> g.cols, round(g.value(("m",), ("t - hyp",)).mean, 6), g.value(("n",), ("t - hyp",))
    ((('t',), ('t - hyp',)), 0.2, None)
    >>> g.notes[0]  # and the Average of the gap column is over 1 of 2 rows: marked
    'n: no reference run (hyp) among the folders: its gap is n/a'
    """
    index, columns = tuple(index), tuple(columns)
    if len(values) > 1 and "metric" not in index + columns:
        columns = (*columns, "metric")
    fields = [n for n in index + columns if n not in KEYS and n != "metric"]
    for name in fields:
        if not any(name in r for r in rows):
            raise ValueError(
                f"unknown grid key {name!r}: no row holds it; use {', '.join(KEYS)}, metric "
                "or a field of the items"
            )
    if references is not None and "model" not in index + columns:
        raise ValueError("a gap to each model's own reference needs model in the rows or columns")
    cells: dict[tuple[tuple[Any, ...], tuple[Any, ...]], Cell] = {}
    # Per task and item-field values, the item set of each of its cells (rows that say
    # which items they hold): a domain's cells hold that domain's items by design.
    item_sets: dict[Any, dict[tuple[tuple[Any, ...], tuple[Any, ...]], frozenset[str]]] = {}
    for r in rows:
        for metric in values:
            if metric not in r:
                continue
            rk, ck = _key(r, index, metric), _key(r, columns, metric)
            if (rk, ck) in cells:
                raise ValueError(
                    f"two runs fill the cell {rk} x {ck}: add a key that tells them apart "
                    "(k, checkpoint, ...) to the rows or columns"
                )
            std = r.get(f"{metric}_std")
            seeds = r.get("seeds")
            count = len(seeds) if isinstance(seeds, Sequence) else seeds
            ci = r.get(f"{metric}_ci")
            n = r.get("n")
            cells[(rk, ck)] = Cell(
                rk,
                ck,
                float(r[metric]),
                None if std is None or (count is not None and count < 2) else float(std),
                None if ci is None else float(ci[0]),
                None if ci is None else float(ci[1]),
                None if n is None else int(n),
                metric=metric,
                seeds=None if count is None else int(count),
            )
            if r.get("item_ids") is not None:
                group = (r.get("task"), *(r.get(f) for f in fields))
                item_sets.setdefault(group, {})[(rk, ck)] = frozenset(r["item_ids"])
    if not cells:
        raise ValueError(f"no rows hold {', '.join(values)}")
    mixed = _mixed_cells(cells, item_sets, allow_mixed)
    for key in mixed:
        cells[key] = replace(cells[key], mixed=True)
    row_keys = sorted({k[0] for k in cells}, key=lambda k: _sort_key(k, index, values))
    col_keys = sorted({k[1] for k in cells}, key=lambda k: _sort_key(k, columns, values))
    out = list(cells.values())
    notes: list[str] = []
    # Per gap column, the rows that could hold it (their model has a reference entry).
    eligible: dict[tuple[Any, ...], set[tuple[Any, ...]]] = {}
    if references is not None:
        gaps, notes, eligible = _own_gaps(
            rows, cells, index, columns, values, references, reference_name
        )
        out += gaps
        col_keys += [_gap_column(ck, reference_name) for ck in col_keys]
    extra_rows: list[tuple[Any, ...]] = []
    if reference is not None:
        extra_rows, gap_cells = _reference_rows(cells, row_keys, col_keys, index, reference)
        out += gap_cells
    if average:
        # An item field's Overall row pools the others' items: no row of the mean.
        pos = [i for i, n in enumerate(index) if n in fields]
        data_rows = [rk for rk in row_keys if not any(rk[i] == OVERALL for i in pos)]
        # A reference run (a hypothesis-only baseline) is no model of the mean: pooling it
        # with the models it is a baseline of would average two kinds of system.
        data_rows = [rk for rk in data_rows if not _is_reference(rk, index, reference, references)]
        avg_rows, avg_cells, short = _average_rows(out, data_rows, col_keys, index, eligible)
        out += avg_cells
        if short:
            notes.append(f"{SHORT_MARK} mean over fewer rows (the rest lack it): "
                         + ", ".join(short))  # fmt: skip
        extra_rows[:0] = avg_rows
    return Grid(
        index,
        columns,
        tuple(row_keys) + tuple(extra_rows),
        tuple(col_keys),
        tuple(out),
        tuple(notes),
    )


def _is_reference(
    rk: tuple[Any, ...],
    index: Sequence[str],
    reference: Mapping[str, Any] | None,
    references: Mapping[str, str | None] | None,
) -> bool:
    """Whether the row ``rk`` is a reference run's (of ``reference``, or a model that is
    none of ``references``' keys: a reference of one of them)."""
    named = dict(zip(index, rk, strict=True))
    if (
        reference is not None
        and all(named[n] == v for n, v in reference.items() if n in named)
        and any(n in named for n in reference)
    ):
        return True
    if references is not None and "model" in named:
        return str(named["model"]) not in references
    return False


def averaged_key(index: Sequence[str]) -> int:
    """The position of the one row key an Average row averages over: ``model`` when the
    rows name it, else the first key. Every other row key (k, checkpoint, ...) keeps its
    value: an Average never pools shot counts, checkpoints or seeds of one model.

    >>> averaged_key(("k", "model")), averaged_key(("domain",))
    (1, 0)
    """
    return index.index("model") if "model" in index else 0


def _average_rows(
    cells: Sequence[Cell],
    data_rows: Sequence[tuple[Any, ...]],
    col_keys: Sequence[tuple[Any, ...]],
    index: Sequence[str],
    eligible: Mapping[tuple[Any, ...], set[tuple[Any, ...]]],
) -> tuple[list[tuple[Any, ...]], list[Cell], list[str]]:
    # One Average row per value of the other row keys (one per k when the rows are model
    # and k), each the mean over the averaged key's rows of that value, labelled with
    # what it averages (mean_label); none where one row is all there is to average.
    at = averaged_key(index)
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for rk in data_rows:
        groups.setdefault(rk[:at] + rk[at + 1 :], []).append(rk)
    by_key = {(c.row, c.column): c for c in cells}
    rows: list[tuple[Any, ...]] = []
    out: list[Cell] = []
    short: list[str] = []
    for rest, members in groups.items():
        count = len({rk[at] for rk in members})
        if count < 2:
            continue  # the mean of one row is that row: no second line of the same numbers
        label = mean_label(count, index[at])
        avg = (*rest[:at], label, *rest[at:])
        made = False
        for ck in col_keys:
            have = [by_key[(rk, ck)] for rk in members if (rk, ck) in by_key]
            used = [c for c in have if not math.isnan(c.mean)]
            if not used:
                continue
            could = len(eligible[ck] & set(members)) if ck in eligible else len(members)
            out.append(
                Cell(
                    avg,
                    ck,
                    sum(c.mean for c in used) / len(used),
                    mixed=any(c.mixed for c in used),
                    short=len(used) < could,
                    metric=used[0].metric,
                )
            )
            made = True
            if len(used) < could:
                where = " ".join(str(v) for v in avg if v != label and v != "")
                where = f" ({where})" if where else ""
                short.append(f"{' / '.join(map(str, ck))}{where} {len(used)} of {could}")
        if made:
            rows.append(avg)
    return rows, out, short


def _reference_rows(
    cells: Mapping[tuple[tuple[Any, ...], tuple[Any, ...]], Cell],
    row_keys: Sequence[tuple[Any, ...]],
    col_keys: Sequence[tuple[Any, ...]],
    index: Sequence[str],
    reference: Mapping[str, Any],
) -> tuple[list[tuple[Any, ...]], list[Cell]]:
    # One gap row per row, to the reference row at its other keys (the same k, ...).
    named = [n for n in index if n in reference]
    if not named:
        raise ValueError(f"the reference {dict(reference)} names none of the row keys")
    pos = [index.index(n) for n in named]

    def is_ref(rk: tuple[Any, ...]) -> bool:
        return all(rk[i] == reference[index[i]] for i in pos)

    if not any(is_ref(rk) for rk in row_keys):
        raise ValueError(f"no row { ({n: reference[n] for n in named}) } to take gaps to")
    extra, out = [], []
    for rk in row_keys:
        if is_ref(rk):
            continue
        ref = tuple(reference[n] if n in named else v for n, v in zip(index, rk, strict=True))
        if ref not in row_keys:
            continue
        gap = tuple(
            f"{_label((v,))} - {_label((r,))}" if n in named else v
            for n, v, r in zip(index, rk, ref, strict=True)
        )
        for ck in col_keys:
            a, b = cells.get((rk, ck)), cells.get((ref, ck))
            if a is not None and b is not None:
                out.append(
                    Cell(gap, ck, a.mean - b.mean, mixed=a.mixed or b.mixed, metric=a.metric)
                )
        extra.append(gap)
    return extra, out


def _own_gaps(
    rows: Sequence[Mapping[str, Any]],
    cells: Mapping[tuple[tuple[Any, ...], tuple[Any, ...]], Cell],
    index: tuple[str, ...],
    columns: tuple[str, ...],
    values: Sequence[str],
    references: Mapping[str, str | None],
    name: str,
) -> tuple[list[Cell], list[str], dict[tuple[Any, ...], set[tuple[Any, ...]]]]:
    # Each model's cells minus its own reference's cells at the same other keys; the
    # reference row is found by its model and every other key of the grid.
    out: list[Cell] = []
    eligible: dict[tuple[Any, ...], set[tuple[Any, ...]]] = {}
    missing = sorted(m for m, ref in references.items() if ref is None)
    for r in rows:
        if str(r.get("model")) not in references:
            continue  # a reference run itself
        ref_model = references[str(r.get("model"))]
        for metric in values:
            if metric not in r:
                continue
            rk, ck = _key(r, index, metric), _key(r, columns, metric)
            gap_ck = _gap_column(ck, name)
            eligible.setdefault(gap_ck, set()).add(rk)
            if ref_model is None:
                continue
            ref_row = {**r, "model": ref_model}
            b = cells.get((_key(ref_row, index, metric), _key(ref_row, columns, metric)))
            a = cells[(rk, ck)]
            if b is not None:
                out.append(
                    Cell(rk, gap_ck, a.mean - b.mean, mixed=a.mixed or b.mixed, metric=a.metric)
                )
    notes = [f"{m}: no reference run ({name}) among the folders: its gap is n/a" for m in missing]
    return out, notes, eligible


def by_fields(
    records: Iterable[Record],
    fields: Sequence[str],
    score: Callable[[list[Record]], list[dict[str, Any]]],
    *,
    overall: bool = True,
) -> list[dict[str, Any]]:
    """The metric rows ``score`` gives for the records of each value of ``fields`` (item
    fields such as ``domain``, or record fields: :func:`nlieval.analyses.breakdown.field_value`),
    each row holding its field values; with ``overall``, also the rows of the records of
    every value pooled, their field value :data:`OVERALL` (with two fields, each pooled
    alone and both together). A record without the field counts under None; one whose field
    is an object or a list is a DataError naming it.

    >>> from nlieval.types import Record
    >>> def rec(i, domain, pred):
    ...     return Record("t", str(i), "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), pred, "a",
    ...                   meta={"domain": domain})
    >>> recs = [rec(1, "cl", "a"), rec(2, "cl", "b"), rec(3, "med", "a")]
    >>> count = lambda rs: [{"model": "m", "n": len(rs)}]
    >>> [(r["domain"], r["n"]) for r in by_fields(recs, ["domain"], count)]
    [('cl', 2), ('med', 1), ('Overall', 3)]
    """
    if not fields:
        return score(list(records))
    groups: dict[tuple[Any, ...], list[Record]] = {}
    for r in records:
        groups.setdefault(tuple(group_value(r, f) for f in fields), []).append(r)
    for i, name in enumerate(fields):
        if groups and all(key[i] is None for key in groups):
            raise ValueError(f"no record holds the field {name!r} (a typo, or a task without it?)")
        if overall and any(key[i] == OVERALL for key in groups):
            # Its cell and the pooled one would fill one cell of the table.
            raise SettingError(
                "no_overall", f"field {name!r} has the value {OVERALL!r} itself: pass --no-overall"
            )
    out: list[dict[str, Any]] = []
    # Each subset of the fields pooled: none (the per-value cells), then each alone, ...
    pooled_sets = [()] + (
        [c for size in range(1, len(fields) + 1) for c in combinations(range(len(fields)), size)]
        if overall
        else []
    )
    for pooled in pooled_sets:
        merged: dict[tuple[Any, ...], list[Record]] = {}
        for key, recs in groups.items():
            at = tuple(OVERALL if i in pooled else v for i, v in enumerate(key))
            merged.setdefault(at, []).extend(recs)
        for key in sorted(merged, key=lambda k: tuple("" if v is None else str(v) for v in k)):
            for row in score(merged[key]):
                out.append({**row, **dict(zip(fields, key, strict=True))})
    return out


def _mixed_cells(
    cells: Mapping[tuple[tuple[Any, ...], tuple[Any, ...]], Cell],
    item_sets: Mapping[Any, Mapping[tuple[tuple[Any, ...], tuple[Any, ...]], frozenset[str]]],
    allow: bool,
) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
    # Cells of one task are compared (side by side, in the Average, in a gap) only on one
    # item set; different tasks have different items by design.
    out = []
    for group, sets in item_sets.items():
        if len(set(sets.values())) < 2:
            continue
        if not allow:
            at = f" at {_label(group[1:])}" if len(group) > 1 else ""
            named = [
                f"{_label(rk)} / {_label(ck)} (n={len(ids)})" for (rk, ck), ids in sets.items()
            ]
            more = f" and {len(named) - 6} more" if len(named) > 6 else ""
            raise SettingError(
                "allow_mixed",
                f"the cells of task {_label(group[:1])}{at} are scored on different items: "
                f"{', '.join(named[:6])}{more}; score them on the same items, "
                "or pass --allow-mixed to mark them",
            )
        out += list(sets)
    return out


def intervals(
    records: Sequence[Record],
    values: Sequence[str],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[tuple[Any, ...], dict[str, list[float]]]:
    """The bootstrap interval over items of each of ``values`` at each (model,
    checkpoint, task, k) of ``records`` (:func:`nlieval.significance.bootstrap_interval`;
    several seeds: the mean over seeds of each resample), on the items every seed scored,
    as :func:`nlieval.metrics.summarize` takes them. Keyed like summarize's rows; each
    value ``[low, high]``. Items without a gold label are left out. Any metric of
    :data:`nlieval.metrics.METRICS` that can be bootstrapped may be asked for.

    >>> r = [Record("t", str(i), "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), "a", g)
    ...      for i, g in enumerate("aaaa")]
    >>> intervals(r, ["accuracy"], resamples=100)
    {('m', None, 't', 0): {'accuracy': [1.0, 1.0]}}
    """
    bounded = {m.name: m for m in metrics(source="records", bootstrap=True)}
    unknown = [v for v in values if v not in bounded]
    if unknown:
        raise ValueError(f"no intervals for {', '.join(unknown)}: only {listed(bounded.values())}")
    out: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    for key, by_seed in group_records(records).items():
        common = set.intersection(
            *({r.item_id for r in recs if r.gold is not None} for recs in by_seed.values())
        )
        ids = sorted(common)
        if not ids:
            continue
        per_seed = [{r.item_id: r for r in by_seed[s]} for s in sorted(by_seed)]
        gold = [per_seed[0][i].gold for i in ids]
        labels = list(per_seed[0][ids[0]].labels)
        out[key] = {}
        for name in values:
            m = bounded[name]
            if m.item is not None:
                scores = [[m.item(recs[i]) for i in ids] for recs in per_seed]
                res = bootstrap_interval(
                    scores, metric=MEAN, resamples=resamples, confidence=confidence, seed=seed
                )
            else:
                preds = [[str(recs[i].pred) for i in ids] for recs in per_seed]
                res = bootstrap_interval(
                    preds,
                    gold,
                    metric=name,
                    labels=labels,
                    resamples=resamples,
                    confidence=confidence,
                    seed=seed,
                )
            out[key][name] = [res.low, res.high]
    return out


def _label(key: tuple[Any, ...]) -> str:
    return " ".join(str(v) for v in key if v not in (None, ""))


#: How Markdown marks a mixed cell, and the note under the table that says why.
MIXED_MARK = "†"
MIXED_NOTE = f"{MIXED_MARK} scored on other items than a cell of the same task (--allow-mixed)"
#: How Markdown marks an Average cell over fewer rows than its column could hold.
SHORT_MARK = "‡"


#: Markdown's digits after the point when none are asked for (CSV and JSON keep all).
DIGITS = 3


def _scale(cell: Cell | None, percent: bool) -> float:
    # x 100 under --percent for a proportion only (METRICS decides which metrics are).
    if cell is None or cell.metric not in METRICS:
        return 1.0
    return METRICS[cell.metric].scale(percent)


def _num(value: float, scale: float, digits: int | None) -> float:
    # The written value of CSV and JSON: scaled, and rounded when digits are asked for.
    return value * scale if digits is None else round(value * scale, digits)


def _fmt(
    cell: Cell | None, scale: float, digits: int, with_n: bool, with_seeds: bool = False
) -> str:
    if cell is None:
        return "–"
    if math.isnan(cell.mean):
        # A run that holds the cell but whose metric is undefined on its items.
        return "n/a"
    text = f"{cell.mean * scale:.{digits}f}"
    if cell.std is not None:
        text += f" ± {cell.std * scale:.{digits}f}"
        if with_seeds and cell.seeds is not None:
            text += f" ({cell.seeds} seeds)"
    if cell.low is not None and cell.high is not None:
        if math.isnan(cell.low) or math.isnan(cell.high):
            text += " [n/a]"  # undefined on some resamples (INTERVAL_NA_NOTE)
        else:
            text += f" [{cell.low * scale:.{digits}f}, {cell.high * scale:.{digits}f}]"
    if with_n and cell.n is not None:
        text += f" (n={cell.n})"
    marks = (MIXED_MARK if cell.mixed else "") + (SHORT_MARK if cell.short else "")
    return text + (f" {marks}" if marks else "")


def _seeds_note(g: Grid) -> tuple[str | None, bool]:
    """The note that says how many seeds are behind each ±, and whether each cell must
    say it (the cells with a ± have several counts)."""
    return seeds_note(c.seeds for c in g.cells if c.std is not None)


def _column_n(g: Grid, col: tuple[Any, ...]) -> int | None:
    """The one n of a column's scored cells (None: they differ, or none is known)."""
    ns = {c.n for c in g.cells if c.column == col and c.n is not None}
    return ns.pop() if len(ns) == 1 else None


def render_grid(
    g: Grid, fmt: str = "md", *, percent: bool = False, digits: int | None = None
) -> str:
    """A grid as Markdown (``md``), CSV (``csv``: mean, std, interval and n columns, std
    only where a cell has a ± and the interval only where one has an interval),
    JSON (``json``: the cells) or LaTeX (``latex``: the cells of :func:`grid_document`
    as a booktabs table, :func:`nlieval.ground.render`). ``percent`` prints the proportions
    (accuracy, F1: :attr:`nlieval.metrics.Metric.proportion`) x 100, the papers'
    tables, and leaves a gold NLL, JS or KL as it is; every format rounds to ``digits``
    (None: :data:`DIGITS` in Markdown and LaTeX, all digits in CSV and JSON). Markdown
    gives a column's n in its heading when its cells share one, else in each cell, and
    marks mixed cells with :data:`MIXED_MARK` and a note under the table. The grid's notes
    (missing references, an Average over fewer rows, marked :data:`SHORT_MARK`) follow,
    then how many seeds are behind a ± (in each cell too where they differ); CSV has a
    ``seeds`` column when any cell has a ±, JSON each cell's ``seeds`` and ``short`` and
    the ``notes``.

    >>> g = grid([{"model": "a", "task": "t", "accuracy": 0.5, "n": 200}], average=False)
    >>> print(render_grid(g, percent=True, digits=1))
    | model | t (n=200) |
    |---|---|
    | a | 50.0 |
    >>> print(render_grid(g, "csv", percent=True, digits=1), end="")
    model,t mean,t n
    a,50.0,200
    """

    def num(value: float | None, cell: Cell) -> float | None:
        return None if value is None else _num(value, _scale(cell, percent), digits)

    if fmt == "json":
        return json.dumps(
            {
                "index": list(g.index),
                "columns": list(g.columns),
                "cells": [
                    {
                        "row": list(c.row),
                        "column": list(c.column),
                        "mean": num(c.mean, c),
                        "std": num(c.std, c),
                        "low": num(c.low, c),
                        "high": num(c.high, c),
                        "n": c.n,
                        "seeds": c.seeds,
                        "mixed": c.mixed,
                        "metric": c.metric,
                        "short": c.short,
                    }
                    for c in g.cells
                ],
                "notes": list(g.notes),
            },
            indent=2,
        )
    names = [" / ".join(str(v) for v in col) for col in g.cols]
    any_mixed = any(c.mixed for c in g.cells)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        # A column no cell fills is left out: std (and its seeds) where some cell has a
        # ±, low and high where some cell has an interval (--ci).
        with_std = any(c.std is not None for c in g.cells)
        with_ci = any(c.low is not None or c.high is not None for c in g.cells)
        parts = (
            "mean",
            *(("std",) if with_std else ()),
            *(("low", "high") if with_ci else ()),
            "n",
            *(("seeds",) if with_std else ()),
            *(("mixed",) if any_mixed else ()),
        )
        w.writerow([*g.index, *(f"{h} {part}" for h in names for part in parts)])
        for rk in g.rows:
            line: list[Any] = list(rk)
            for ck in g.cols:
                c = g.value(rk, ck)
                for part in parts:
                    value = None if c is None else getattr(c, part)
                    if part == "mixed":
                        line.append("yes" if value else "")
                    elif value is None:
                        line.append("")
                    else:
                        scale = _scale(c, percent)
                        line.append(value if part in ("n", "seeds") else _num(value, scale, digits))
            w.writerow(line)
        return buf.getvalue()
    if fmt not in ("md", "latex"):
        raise ValueError(f"unknown format {fmt!r}: md, csv, json or latex")
    return render(grid_document(g, percent=percent, digits=digits), fmt)


@dataclass(frozen=True)
class GridText:
    """A grid as the text of its cells, as Markdown and LaTeX print them: the heading of
    each column, each row's keys and cells, and the notes under the table."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]


def grid_text(g: Grid, *, percent: bool = False, digits: int | None = None) -> GridText:
    """The cells of ``g`` as text (:func:`grid_document`'s texts, for a page that draws its
    own table): a column's n in its heading when its cells share one, mixed and short
    cells marked, the notes.

    >>> g = grid([{"model": "a", "task": "t", "accuracy": 0.5, "n": 200}], average=False)
    >>> grid_text(g, percent=True, digits=1)
    GridText(header=('model', 't (n=200)'), rows=(('a', '50.0'),), notes=())
    """
    table = grid_document(g, percent=percent, digits=digits)
    notes = tuple(table.notes[1:])  # after the blank line that parts them from the table
    return GridText(table.header, tuple(tuple(row) for row in table.texts()), notes)


def grid_document(g: Grid, *, percent: bool = False, digits: int | None = None) -> Table:
    """``g`` as a table of values, as Markdown and LaTeX print it: each cell's text (a
    column's n in its heading when its cells share one, else in the cell; mixed and short
    cells marked) and the mean behind it (scaled as the text, None where the cell is
    missing or n/a), the notes under it after a blank line.

    >>> g = grid([{"model": "a", "task": "t", "accuracy": 0.5, "n": 200}], average=False)
    >>> t = grid_document(g, percent=True, digits=1)
    >>> t.header, t.rows[0][1]
    (('model', 't (n=200)'), Cell(text='50.0', value=50.0))
    """
    names = [" / ".join(str(v) for v in col) for col in g.cols]
    digits = DIGITS if digits is None else digits
    col_n = [_column_n(g, ck) for ck in g.cols]
    seeds_line, with_seeds = _seeds_note(g)
    head = (
        *g.index,
        *(name if n is None else f"{name} (n={n})" for name, n in zip(names, col_n, strict=True)),
    )

    def cell(c: Cell | None, n: int | None) -> TableCell:
        scale = _scale(c, percent)
        text = _fmt(c, scale, digits, with_n=n is None, with_seeds=with_seeds)
        value = None if c is None or math.isnan(c.mean) else c.mean * scale
        return TableCell(text, value)

    body: list[list[TableCell | str]] = [
        [
            *(str(v) for v in rk),
            *(cell(g.value(rk, ck), n) for ck, n in zip(g.cols, col_n, strict=True)),
        ]
        for rk in g.rows
    ]
    notes = [*((MIXED_NOTE,) if any(c.mixed for c in g.cells) else ()), *g.notes]
    if any(math.isnan(c.mean) for c in g.cells):
        notes.append(UNDEFINED_NOTE)
    if any(c.low is not None and math.isnan(c.low) for c in g.cells):
        notes.append(INTERVAL_NA_NOTE)
    notes += [seeds_line] if seeds_line else []
    return Table.of(head, body, notes=("", *notes) if notes else ())
