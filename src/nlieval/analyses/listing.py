"""Item listings for error analysis: each item with its text, gold label, the human label
distribution where there is one, and several models' predictions side by side.

Records of several run folders are joined by (task, k, seed, item id); the texts come from
the task's data (records keep the prompt, not the fields). Filters keep the items worth
reading (where the models disagree, where all are wrong, where the ChaosNLI majority
differs from the original label), sorted by human-label entropy or by how many models
got the item wrong.

>>> from nlieval.types import Item, Record
>>> def rec(model, pred):
...     return Record("t", "1", model, 0, 0, ("entailment", "neutral"), (-1.0, -2.0),
...                   (0.7, 0.3), pred, "neutral")
>>> items = {"t": {"1": Item("1", "A dog runs.", "An animal moves.", "neutral")}}
>>> rows = item_listing([rec("a", "neutral"), rec("b", "entailment")], items, ["disagree"])
>>> rows[0]["predictions"], rows[0]["premise"]
({'a': 'neutral', 'b': 'entailment'}, 'A dog runs.')
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..ground import Cell, Document, SettingError, Table, render
from ..types import Item, Record

#: What :func:`item_listing` can keep: items where the models' predictions differ, where
#: every model is wrong, where any is wrong, where the ChaosNLI majority differs from the
#: original label.
FILTERS = ("disagree", "all-wrong", "any-wrong", "majority-changed")
SORTS = ("id", "entropy", "wrong")

log = logging.getLogger(__name__)


def _entropy(counts: Sequence[float]) -> float:
    total = float(sum(counts))
    ps = [c / total for c in counts if c > 0] if total > 0 else []
    return -sum(p * math.log2(p) for p in ps)


def item_flags(row: Mapping[str, Any]) -> dict[str, bool]:
    """Which of :data:`FILTERS` keep a row of :func:`item_listing`: the one definition
    of the filters, also for the pages of ``nlieval view`` (which filter in the browser).

    >>> item_flags({"gold": "neutral", "majority": "entailment", "wrong": 2,
    ...             "predictions": {"a": "entailment", "b": "contradiction"}})
    {'disagree': True, 'all-wrong': True, 'any-wrong': True, 'majority-changed': True}
    """
    preds = row["predictions"]
    gold = row["gold"]
    return {
        "disagree": len(set(preds.values())) > 1,
        "all-wrong": gold is not None and row["wrong"] == len(preds),
        "any-wrong": row["wrong"] > 0,
        "majority-changed": row["majority"] is not None and row["majority"] != gold,
    }


def item_listing(
    records: Iterable[Record],
    items: Mapping[str, Mapping[str, Item]],
    filters: Sequence[str] = (),
    sort: str = "id",
    max_rows: int | None = None,
    ids: Iterable[str] | None = None,
    *,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """One row per (task, k, seed, item) of ``records``: ``premise``, ``hypothesis``,
    ``gold``, ``human`` (label -> count, ChaosNLI), ``majority`` (ChaosNLI), ``entropy``
    (bits of the human labels), ``predictions`` (model, or model@checkpoint -> label) and
    ``wrong`` (how many models missed the gold label); kept by every filter in
    ``filters`` (:data:`FILTERS`), sorted by ``sort`` (:data:`SORTS`; entropy and wrong
    descending), every row of the first ``limit`` items (task and id, in that order: an
    item has a row per k and seed), at most ``max_rows`` rows (rows left out are a
    warning naming both numbers: a row is one task, k, seed and item, not one item).
    ``items`` maps task -> item id -> item for the texts (an item missing there keeps
    empty texts). ``ids``: only the items of these ids (None: all); an id no record
    holds is a ValueError naming it.
    """
    for f in filters:
        if f not in FILTERS:
            raise ValueError(f"unknown filter {f!r}: {', '.join(FILTERS)}")
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r}: {', '.join(SORTS)}")
    for flag, value in (("--limit", limit), ("--max-rows", max_rows)):
        if value is not None and value < 1:
            # A slice would read -1 as "all but the last row", and 0 as none.
            raise ValueError(f"{flag} must be positive, got {value}")
    wanted = None if ids is None else set(ids)
    joined: dict[tuple[str, int, int, str], dict[str, Record]] = defaultdict(dict)
    for r in records:
        if wanted is not None and r.item_id not in wanted:
            continue
        name = r.model + (f"@{r.checkpoint}" if r.checkpoint else "")
        joined[(r.task, r.k, r.seed, r.item_id)][name] = r
    if wanted is not None:
        missing = sorted(wanted - {key[3] for key in joined})
        if missing:
            raise SettingError("ids", f"--ids: no record of item {', '.join(map(repr, missing))}")
    rows = []
    for (task, k, seed, item_id), by_model in joined.items():
        first = next(iter(by_model.values()))
        item = items.get(task, {}).get(item_id)
        counts = first.meta.get("human_counts")
        human = dict(zip(first.labels, counts, strict=False)) if counts else None
        preds = {m: r.pred for m, r in sorted(by_model.items())}
        wrong = sum(r.gold is not None and r.pred != r.gold for r in by_model.values())
        row: dict[str, Any] = {
            "task": task,
            "k": k,
            "seed": seed,
            "id": item_id,
            "premise": item.premise if item else "",
            "hypothesis": item.hypothesis if item else "",
            "gold": first.gold,
            "human": human,
            "majority": first.meta.get("majority_label"),
            "entropy": _entropy(counts) if counts else None,
            "predictions": preds,
            "wrong": wrong,
        }
        keep = item_flags(row)
        if all(keep[f] for f in filters):
            rows.append(row)
    if sort == "entropy":
        rows.sort(key=lambda r: (-(r["entropy"] or 0.0), r["task"], r["k"], r["id"]))
    elif sort == "wrong":
        rows.sort(key=lambda r: (-r["wrong"], r["task"], r["k"], r["id"]))
    else:
        rows.sort(key=lambda r: (r["task"], r["k"], r["seed"], r["id"]))
    if limit is not None:
        order: dict[tuple[str, str], None] = dict.fromkeys((r["task"], r["id"]) for r in rows)
        kept = set(list(order)[:limit])
        rows = [r for r in rows if (r["task"], r["id"]) in kept]
    # Cut silently: the report that asked for it says what was left out, in its words
    # (`nlieval items`: --max-rows; an experiment's items output: its option).
    return rows if max_rows is None else rows[:max_rows]


def label_counts_text(counts: Mapping[str, Any]) -> str:
    """Label counts (or shares) as ``LABEL=COUNT`` pairs, word labels cut to the shortest
    start that still tells them apart (first letter capitalised), other labels whole (a
    cut ``12`` would read as ``1``): ``=`` keeps a label made of digits (alpha-NLI's
    ``1`` and ``2``) from running into its count.

    >>> label_counts_text({"entailment": 49, "neutral": 36, "contradiction": 15})
    'E=49 N=36 C=15'
    >>> label_counts_text({"1": 97, "2": 3})
    '1=97 2=3'
    >>> label_counts_text({"contrasting": 1, "contradiction": 2, "neutral": 0})
    'Contras=1 Contrad=2 Neutral=0'
    """
    labels = [str(lab) for lab in counts]
    words = all(lab[:1].isalpha() for lab in labels)
    longest = max((len(lab) for lab in labels), default=0) if words else 0
    for n in range(1, longest + 1):
        short = [lab[:n][:1].upper() + lab[1:n] for lab in labels]
        if len(set(short)) == len(short):
            break
    else:
        short = labels  # not words, or equal but for case: whole labels tell them apart
    return " ".join(f"{a}={c}" for a, c in zip(short, counts.values(), strict=True))


#: The formats of :func:`listing_table`.
LISTING_FORMATS = ("md", "csv", "json", "latex")


def listing_table(
    rows: Sequence[Mapping[str, Any]], width: int | None = 60, fmt: str = "md"
) -> str:
    """The rows of :func:`item_listing` as a table: Markdown (``md``) or LaTeX
    (``latex``), texts cut to ``width`` characters (None: whole); CSV (``csv``) or JSON
    (``json``), texts always whole, the human counts and every model's prediction a column
    (a field) of their own. The seed is a column: two seeds of one item are two rows.

    >>> row = {"task": "t", "k": 0, "seed": 1, "id": "1", "premise": "P.",
    ...     "hypothesis": "H.", "gold": "neutral", "human": None, "majority": None,
    ...     "entropy": None, "wrong": 0, "predictions": {"a": "neutral"}}
    >>> print(listing_table([row]).splitlines()[2])
    | t | 0 | 1 | 1 | P. | H. | neutral |  | neutral |
    >>> print(listing_table([row], fmt="csv"), end="")
    task,k,seed,id,premise,hypothesis,gold,human,majority,entropy,wrong,a
    t,0,1,1,P.,H.,neutral,,,,0,neutral
    """
    if fmt not in LISTING_FORMATS:
        raise ValueError(f"unknown format {fmt!r}: {', '.join(LISTING_FORMATS)}")
    models = sorted({m for r in rows for m in r["predictions"]})
    if fmt == "json":
        return json.dumps([dict(r) for r in rows], indent=2)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        fixed = ["task", "k", "seed", "id", "premise", "hypothesis", "gold", "human"]
        fixed += ["majority", "entropy", "wrong"]
        w.writerow([*fixed, *models])
        for r in rows:
            human = " ".join(f"{lab}={n}" for lab, n in (r.get("human") or {}).items())
            line = [r[f] if f != "human" else human for f in fixed]
            preds = [r["predictions"].get(m) for m in models]
            w.writerow(["" if v is None else v for v in [*line, *preds]])
        return buf.getvalue()
    return render(listing_document(rows, width), fmt)


def listing_document(rows: Sequence[Mapping[str, Any]], width: int | None = 60) -> Document:
    """The rows of :func:`item_listing` as a table of values (:func:`listing_table`'s
    Markdown and LaTeX), texts cut to ``width`` characters (None: whole).

    >>> row = {"task": "t", "k": 0, "seed": 1, "id": "1", "premise": "P.",
    ...     "hypothesis": "H.", "gold": "neutral", "human": None, "majority": None,
    ...     "entropy": None, "wrong": 0, "predictions": {"a": "neutral"}}
    >>> listing_document([row])[0].rows[0][1]
    Cell(text='0', value=0)
    """
    if not rows:
        return ["(no items)"]
    models = sorted({m for r in rows for m in r["predictions"]})

    def cut(text: str) -> str:
        text = " ".join(str(text).split()).replace("|", "/")
        return text if width is None or len(text) <= width else text[: width - 1] + "…"

    head = ["task", "k", "seed", "id", "premise", "hypothesis", "gold", "humans (majority)"]
    head += models
    body: list[list[Cell | str]] = []
    for r in rows:
        human = ""
        if r.get("human"):
            human = f"{label_counts_text(r['human'])} ({r['majority']})"
        preds = [str(r["predictions"].get(m, "–")) for m in models]
        body.append(
            [r["task"], _number(r["k"]), _number(r["seed"]), r["id"], cut(r["premise"]),
             cut(r["hypothesis"]), str(r["gold"]), human, *preds]
        )  # fmt: skip
    return [Table.of(head, body)]


def _number(x: Any) -> Cell:
    return Cell(str(x), x if isinstance(x, int) and not isinstance(x, bool) else None)
