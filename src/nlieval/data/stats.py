"""Dataset statistics (METHODS.md section 1): items per split and label, the number of
domains (where items have a ``domain`` field), what was dropped, mean words of premise and
hypothesis, and how many hypothesis words also occur in the premise; with several splits,
also one table of items per split.

A *word* is a maximal run of word characters (the regex ``\\w+``: letters, digits and
underscore, Unicode-aware) in the lower-cased text, so ``"Don't stop!"`` has the words
``don``, ``t``, ``stop``. The same definition is used for lengths and for overlap.
For alpha-NLI the premise and hypothesis are the two observations (obs1, obs2).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterable, Sequence
from statistics import fmean
from typing import Any

import numpy as np

from ..ground import Cell, Document, Table, render
from ..types import Item
from .dataset import Dataset
from .source import TasksToRead

_WORD = re.compile(r"\w+")

log = logging.getLogger(__name__)

#: Characters (premise, hypothesis and options together) above which an item is reported
#: as too long. Counted without a model's tokenizer (``stats`` loads none): about 2,500
#: tokens of English, ten times the longest premise of SNLI, MultiNLI or ANLI, and with
#: a few shots of that size a prompt outgrows small models' context windows.
LONG_CHARS = 10_000


def words(text: str) -> list[str]:
    """The lower-cased ``\\w+`` tokens of a text.

    >>> words("A dog's ball, 2 toys.")
    ['a', 'dog', 's', 'ball', '2', 'toys']
    """
    return _WORD.findall(text.lower())


def overlap_pct(premise: str, hypothesis: str) -> float | None:
    """% of the hypothesis' word tokens that also occur (as a word) in the premise;
    None for a hypothesis without words.

    >>> overlap_pct("A man sleeps.", "A man is asleep.")
    50.0
    """
    hyp = words(hypothesis)
    if not hyp:
        return None
    prem = set(words(premise))
    return 100.0 * sum(w in prem for w in hyp) / len(hyp)


def dataset_stats(ds: Dataset) -> dict[str, Any]:
    """Statistics of one loaded split, as a flat JSON-friendly dict.

    Keys: ``task, split, items, labels`` (label value -> count, in label-set order, plus
    ``none`` for unlabelled items), ``dropped`` (reason -> count), ``skipped_bad``,
    ``domains`` (how many distinct values the items' ``domain`` field takes; None when no
    item has one), ``premise_words`` and ``hypothesis_words`` (mean words per item), ``overlap_pct``
    (mean over items of the % of hypothesis words also in the premise; items whose
    hypothesis has no words are left out of this mean), ``long_items`` (how many items
    have more than :data:`LONG_CHARS` characters; a warning names the first ids).

    >>> from nlieval.data import load_task
    >>> s = dataset_stats(load_task("smoke"))
    >>> s["items"], s["labels"]["neutral"]
    (48, 16)
    """
    items = ds.items
    overlaps = [
        o for o in (overlap_pct(it.premise, it.hypothesis) for it in items) if o is not None
    ]
    domains = domains_of(items)
    long_ids = [it.id for it in items if _chars(it) > LONG_CHARS]
    if long_ids:
        shown = ", ".join(long_ids[:5]) + (", ..." if len(long_ids) > 5 else "")
        log.warning(
            "%s: %d item(s) of %s/%s longer than %d characters (ids: %s): a prompt may not "
            "fit a model's context window",
            ds.source or ds.task,
            len(long_ids),
            ds.task,
            ds.split,
            LONG_CHARS,
            shown,
        )
    return {
        "task": ds.task,
        "split": ds.split,
        "items": len(items),
        "labels": ds.label_counts(),
        "domains": None if domains is None else len(domains),
        "dropped": dict(ds.dropped),
        "skipped_bad": ds.skipped_bad,
        "premise_words": fmean(len(words(it.premise)) for it in items) if items else 0.0,
        "hypothesis_words": fmean(len(words(it.hypothesis)) for it in items) if items else 0.0,
        "overlap_pct": fmean(overlaps) if overlaps else 0.0,
        "long_items": len(long_ids),
        **human_label_stats(items),
    }


def human_label_stats(items: Sequence[Item]) -> dict[str, float]:
    """For items with ChaosNLI's human labels: ``label_change_pct``, the % of items whose
    majority of new labels differs from the original label, and ``fleiss_kappa`` of the
    annotations; empty for other data.

    >>> human_label_stats([Item("1", "p", "h", None)])
    {}
    """
    if not items or not all("majority_label" in it.meta for it in items):
        return {}
    out = {"label_change_pct": 100.0 * label_change_share(items)}
    counts = [it.meta.get("human_counts") for it in items]
    if all(isinstance(c, list) for c in counts):
        # Items rated by different numbers of annotators have no kappa.
        with contextlib.suppress(ValueError):
            out["fleiss_kappa"] = fleiss_kappa(counts)
    return out


#: The item field whose distinct values ``stats`` counts as domains (SciNLI, MisMatched,
#: a task YAML's ``fields: {meta: [domain]}``).
DOMAIN = "domain"


def domains_of(items: Iterable[Item]) -> set[str] | None:
    """The distinct values of the items' ``domain`` field; None when no item has one.

    >>> sorted(domains_of([Item("1", "p", "h", None, meta={"domain": "CL"}),
    ...                    Item("2", "p", "h", None, meta={"domain": "Sec"}),
    ...                    Item("3", "p", "h", None, meta={"domain": "CL"})]))
    ['CL', 'Sec']
    >>> domains_of([Item("1", "p", "h", None)]) is None
    True
    """
    found = {str(v) for it in items if (v := it.meta.get(DOMAIN)) not in (None, "")}
    return found or None


def _chars(item: Item) -> int:
    return len(item.premise) + len(item.hypothesis) + sum(len(c) for c in item.choices)


_COLUMNS = (
    "task",
    "split",
    "items",
    "labels",
    "domains",
    "dropped",
    "prem words",
    "hyp words",
    "overlap %",
)
_NUMERIC = {"items", "domains", "prem words", "hyp words", "overlap %"}
#: What a cell says where a task has no domain field, or no such split.
NA = "n/a"


def _count(n: int | None) -> str:
    return NA if n is None else f"{n:,}"


def _counted(n: int | None) -> Cell:
    return Cell(_count(n), n)


def _cells(row: dict[str, Any]) -> list[Cell | str]:
    labels = " ".join(f"{k}={v:,}" for k, v in row.get("labels", {}).items())
    dropped = dict(row.get("dropped", {}))
    if row.get("skipped_bad"):
        dropped["bad lines"] = row["skipped_bad"]
    return [
        str(row.get("task", "")),
        str(row.get("split", "")),
        _counted(row.get("items", 0)),
        labels,
        _counted(row.get("domains")),
        " ".join(f"{k}={v:,}" for k, v in dropped.items()) or "-",
        *(
            Cell(f"{row.get(key, 0.0):.1f}", row.get(key, 0.0))
            for key in ("premise_words", "hypothesis_words", "overlap_pct")
        ),
    ]


def format_stats(rows: Sequence[dict[str, Any]]) -> Table:
    """The table of :func:`dataset_stats` rows, as values, with the notes under it (a
    ChaosNLI task's label changes); :func:`task_stats` writes it.

    >>> from nlieval.data import load_task
    >>> table = format_stats([dataset_stats(load_task("smoke"))])
    >>> [c.text for c in table.rows[0][:3]], table.rows[0][2].value
    (['smoke', 'test', '48'], 48)
    """
    notes = [
        f"{r['task']}: the majority of the new human labels differs from the original label "
        f"on {r['label_change_pct']:.2f}% of items"
        + (f"; Fleiss' kappa {r['fleiss_kappa']:.3f}" if "fleiss_kappa" in r else "")
        for r in rows
        if "label_change_pct" in r
    ]
    return Table.of(_COLUMNS, [_cells(r) for r in rows], notes=notes)


def _aligned(table: Table) -> list[str]:
    """A plain-text table: the header, a rule, the rows; a column of numbers (and n/a)
    right-aligned."""
    body = table.texts()
    rows = [list(table.header), *body]
    widths = [max(len(r[i]) for r in rows) for i in range(len(table.header))]
    right = [
        all(r[i].value is not None or r[i].text == NA for r in table.rows)
        for i in range(len(table.header))
    ]

    def line(cells: list[str]) -> str:
        out = [
            c.rjust(w) if numeric else c.ljust(w)
            for c, w, numeric in zip(cells, widths, right, strict=True)
        ]
        return "  ".join(out).rstrip()

    return [line(rows[0]), "  ".join("-" * w for w in widths), *(line(r) for r in body)]


def render_stats(doc: Document, fmt: str = "md") -> str:
    """``doc`` (:func:`stats_document`) as ``nlieval stats`` prints it: ``md``, each table
    as aligned plain text (numbers right-aligned) and the lines as they are; ``latex``,
    :func:`nlieval.ground.render`'s booktabs tables with the lines as comments.

    >>> print(render_stats([Table.of(["task", "n"], [["a", 12]], notes=["note"])]))
    task   n
    ----  --
    a     12
    note
    """
    if fmt != "md":
        return render(doc, fmt)
    lines: list[str] = []
    for b in doc:
        lines += [*b.title, *_aligned(b), *b.notes] if isinstance(b, Table) else [b]
    return "\n".join(lines)


_ORDER = ("train", "dev", "test")


def split_table(datasets: Sequence[Dataset], columns: Sequence[str] = ()) -> Table:
    """Items per split, a column per split (``columns``, else train, dev, test, then
    others in the order read; ``n/a`` where a task has not that split), and the number of
    domains over all of a task's splits: the layout of the papers' dataset tables, as
    values (:func:`render_stats` writes it).

    >>> from nlieval.data import load_task
    >>> print(render_stats([split_table([load_task("smoke", split="train"), load_task("smoke")])]))
    task   train  test  domains
    -----  -----  ----  -------
    smoke     12    48      n/a
    """
    read = list(dict.fromkeys([*columns, *(ds.split for ds in datasets)]))
    # The columns asked in their order; else the papers' (train, dev, test), then others.
    splits = (
        read
        if columns
        else sorted(
            read, key=lambda s: (_ORDER.index(s) if s in _ORDER else len(_ORDER), read.index(s))
        )
    )
    tasks: dict[str, dict[str, Dataset]] = {}
    for ds in datasets:
        tasks.setdefault(ds.task, {})[ds.split] = ds
    body: list[list[Cell | str]] = []
    for task, by_split in tasks.items():
        domains = domains_of(it for ds in by_split.values() for it in ds.items)
        counts = [_counted(len(by_split[s]) if s in by_split else None) for s in splits]
        body.append([task, *counts, _counted(None if domains is None else len(domains))])
    return Table.of(["task", *splits, "domains"], body)


def stats_document(source: TasksToRead) -> Document:
    """What ``nlieval stats`` shows, as values: :func:`format_stats` of every split read
    of every task of ``source``, and when several splits are asked, :func:`split_table`
    under it, with a note naming the splits not read.

    >>> [type(b).__name__ for b in stats_document(TasksToRead(tasks=("smoke",), split="all"))]
    ['Table', 'str', 'Table']
    """
    datasets = source.datasets()
    doc: list[Table | str] = [format_stats([dataset_stats(ds) for ds in datasets])]
    if source.several:
        split = split_table(datasets, source.columns())
        unread = [f"{name} {s}" for name in source.tasks for s in source.unread(name)]
        if unread:
            note = f"{NA}: a split the task does not have, or no data here: {', '.join(unread)}"
            split = Table(split.header, split.rows, notes=(note,))
        doc += ["", split]
    return doc


def task_stats(source: TasksToRead) -> str:
    """What ``nlieval stats`` prints: :func:`stats_document` of ``source`` in its
    ``format`` (``md``: the aligned plain text, ``latex``; :func:`render_stats`).

    >>> task_stats(TasksToRead(tasks=("smoke",))).splitlines()[2].split()[:3]
    ['smoke', 'test', '48']
    >>> print(task_stats(TasksToRead(tasks=("smoke",), split="all")).splitlines()[-1])
    smoke     12    48      n/a
    """
    return render_stats(stats_document(source), source.format)


def fleiss_kappa(counts: Sequence[Sequence[float]] | Any) -> float:
    """Fleiss' kappa of items x categories annotation counts (every item rated by the same
    number of annotators, as ChaosNLI's 100 per item): (P_bar - P_e) / (1 - P_e), with
    P_bar the mean per-item agreement and P_e the chance agreement from the overall
    category shares (Fleiss 1971). Written out here: the formula is five lines, and
    statsmodels' gives NaN (0 / 0) where every rating is of one category.

    >>> fleiss_kappa([[10, 0], [0, 10]])  # perfect agreement
    1.0
    >>> round(fleiss_kappa([[5, 5], [5, 5]]), 4)  # agreement at chance level or below
    -0.1111
    """
    x = np.asarray(counts, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError("fleiss_kappa needs a non-empty items x categories table")
    raters = x.sum(axis=1)
    if not np.allclose(raters, raters[0]) or raters[0] < 2:
        raise ValueError("every item needs the same number (>= 2) of annotations")
    n = raters[0]
    p_item = ((x * x).sum(axis=1) - n) / (n * (n - 1))
    shares = x.sum(axis=0) / x.sum()
    p_bar, p_e = float(p_item.mean()), float((shares * shares).sum())
    return 1.0 if p_e == 1.0 else (p_bar - p_e) / (1.0 - p_e)


def label_change_share(items: Iterable[Item]) -> float:
    """The share of ChaosNLI items whose majority of the 100 new labels differs from the
    dataset's original label (``meta["majority_label"]`` vs the item's label).

    >>> items = [Item("1", "p", "h", "e", meta={"majority_label": "n"}),
    ...          Item("2", "p", "h", "e", meta={"majority_label": "e"})]
    >>> label_change_share(items)
    0.5
    """
    pairs = [(it.label, it.meta.get("majority_label")) for it in items]
    pairs = [(old, new) for old, new in pairs if old is not None and new is not None]
    if not pairs:
        raise ValueError("no items with both an original label and a ChaosNLI majority")
    return sum(old != new for old, new in pairs) / len(pairs)
