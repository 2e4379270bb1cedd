"""Inferred test items and the meta-inferential consistency report (METHODS.md section 5).

From labelled NLI items that share sentences, new sentence pairs are built whose label
the logic readings constrain (:mod:`nlieval.metainference.logic`). With sentences a, b, c:

==================  ===================================  ==========  ======
pattern             from                                 new item    target
==================  ===================================  ==========  ======
``reversal``        item (a, b)                          (b, a)      ``ba``
``shared-premise``  items (a, b) and (a, c)              (b, c)      ``bc``
``chain``           item (a, b), generated item (b, c)   (a, c)      ``ac``
``chain-reversal``  item (a, b), generated item (b, c)   (c, a)      ``ca``
==================  ===================================  ==========  ======

Shared-premise pairs are taken in both orders, so (c, b) comes from the same two items
with their roles swapped (it is the (b, c) of the pair read the other way round).
Generated items are those whose premise is, word for word, some item's hypothesis.

Every inferred item has no gold label and records its provenance in ``meta``:
``pattern``, ``sources`` (item ids), ``source_labels`` (their label values), ``input``
(the label atoms, e.g. ``"Eab & Cac"``) and ``target`` (e.g. ``"bc"``). Its id is
``inf:<pattern>:<source ids joined by +>``.

>>> from nlieval.types import Item, Label
>>> ds = [Item("1", "A man sleeps.", "A person rests.", Label.ENTAILMENT),
...       Item("2", "A man sleeps.", "A man runs.", Label.CONTRADICTION)]
>>> [(it.id, it.meta["input"], it.meta["target"]) for it in shared_premise(ds)]
[('inf:shared-premise:1+2', 'Eab & Cac', 'bc'), ('inf:shared-premise:2+1', 'Cab & Eac', 'bc')]
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..data import write_task_yaml
from ..ground import Block, Cell, FolderError, Table, atomic_write, make_folder
from ..types import NLI3, Item, Label, Record
from . import logic

#: The patterns, in report order.
PATTERNS: tuple[str, ...] = ("reversal", "shared-premise", "chain", "chain-reversal")

#: Label atoms' letters for the three NLI labels (other labels cannot be read logically).
LETTER: dict[Label, str] = {
    Label.ENTAILMENT: "E",
    Label.CONTRADICTION: "C",
    Label.NEUTRAL: "N",
}

#: Name of the jsonl file and of the task YAML written by :func:`write_task`.
ITEMS_FILE = "items.jsonl"
TASK_FILE = "task.yaml"

_META_KEYS = ("pattern", "sources", "source_labels", "input", "target")


def _labelled(items: Iterable[Item]) -> list[Item]:
    # Items without an E/N/C label give no input atom; they are simply not sources.
    return [it for it in items if it.label in LETTER]


def _inferred(
    pattern: str, premise: str, hypothesis: str, sources: Sequence[Item], inputs: str, target: str
) -> Item:
    return Item(
        id=f"inf:{pattern}:" + "+".join(s.id for s in sources),
        premise=premise,
        hypothesis=hypothesis,
        label=None,
        meta={
            "pattern": pattern,
            "sources": [s.id for s in sources],
            "source_labels": [s.label.value if s.label else None for s in sources],
            "input": inputs,
            "target": target,
        },
    )


def _letter(it: Item) -> str:
    assert it.label is not None
    return LETTER[it.label]


def reversal(items: Iterable[Item]) -> list[Item]:
    """(b, a) from each labelled item (a, b).

    >>> it = Item("7", "A dog barks.", "An animal makes noise.", Label.ENTAILMENT)
    >>> r = reversal([it])[0]
    >>> r.premise, r.meta["input"], r.meta["target"]
    ('An animal makes noise.', 'Eab', 'ba')
    """
    return [
        _inferred("reversal", it.hypothesis, it.premise, [it], f"{_letter(it)}ab", "ba")
        for it in _labelled(items)
        if it.premise.strip() != it.hypothesis.strip()
    ]


def shared_premise(items: Iterable[Item]) -> list[Item]:
    """(b, c) from every ordered pair of items (a, b), (a, c) with the same premise a.

    Pairs whose hypotheses are the same text are skipped (the new item would compare a
    sentence with itself). See the module docstring for an example.
    """
    groups: dict[str, list[Item]] = defaultdict(list)
    for it in _labelled(items):
        groups[it.premise.strip()].append(it)
    out = []
    for group in groups.values():
        for x in group:
            for y in group:
                if x is y or x.hypothesis.strip() == y.hypothesis.strip():
                    continue
                inputs = f"{_letter(x)}ab & {_letter(y)}ac"
                out.append(
                    _inferred("shared-premise", x.hypothesis, y.hypothesis, [x, y], inputs, "bc")
                )
    return out


def chain(items: Iterable[Item], generated: Iterable[Item]) -> list[Item]:
    """(a, c) and (c, a) from an item (a, b) and a generated item (b, c).

    >>> src = Item("1", "A man sleeps.", "A person rests.", Label.ENTAILMENT)
    >>> gen = Item("g1", "A person rests.", "Someone is awake.", Label.CONTRADICTION)
    >>> [(it.id, it.premise, it.meta["target"]) for it in chain([src], [gen])][1]
    ('inf:chain-reversal:1+g1', 'Someone is awake.', 'ca')
    """
    by_premise: dict[str, list[Item]] = defaultdict(list)
    for g in _labelled(generated):
        by_premise[g.premise.strip()].append(g)
    out = []
    for it in _labelled(items):
        for g in by_premise.get(it.hypothesis.strip(), ()):
            if it.premise.strip() == g.hypothesis.strip():
                continue
            inputs = f"{_letter(it)}ab & {_letter(g)}bc"
            out.append(_inferred("chain", it.premise, g.hypothesis, [it, g], inputs, "ac"))
            out.append(_inferred("chain-reversal", g.hypothesis, it.premise, [it, g], inputs, "ca"))
    return out


def build(
    items: Iterable[Item],
    generated: Iterable[Item] = (),
    patterns: Sequence[str] = PATTERNS,
    max_per_pattern: int | None = None,
    seed: int = 0,
) -> list[Item]:
    """The inferred items of the chosen patterns, at most ``max_per_pattern`` of each.

    A capped pattern keeps a random sample (``seed``) in the original order, so the same
    call gives the same items.

    >>> src = [Item(str(i), "A man sleeps.", f"Hyp {i}.", Label.NEUTRAL) for i in range(4)]
    >>> len(build(src, patterns=["shared-premise"])), len(build(src, max_per_pattern=5))
    (12, 9)
    """
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown:
        raise ValueError(f"unknown pattern(s) {', '.join(unknown)}; known: {', '.join(PATTERNS)}")
    items, generated = list(items), list(generated)
    made: dict[str, list[Item]] = {
        "reversal": reversal(items) if "reversal" in patterns else [],
        "shared-premise": shared_premise(items) if "shared-premise" in patterns else [],
    }
    if "chain" in patterns or "chain-reversal" in patterns:
        for it in chain(items, generated):
            made.setdefault(it.meta["pattern"], []).append(it)
    out: list[Item] = []
    for pattern in PATTERNS:
        found = made.get(pattern, []) if pattern in patterns else []
        if max_per_pattern is not None and len(found) > max_per_pattern:
            keep = sorted(
                random.Random(f"{seed}:{pattern}").sample(range(len(found)), max_per_pattern)
            )
            found = [found[i] for i in keep]
        out.extend(found)
    return out


def write_task(
    items: Sequence[Item],
    folder: str | Path,
    name: str = "inferred",
    description: str = "",
    *,
    overwrite: bool = False,
) -> Path:
    """Write the items (``items.jsonl``) and a task YAML (``task.yaml``) that ``nlieval run
    --task FOLDER/task.yaml`` and :func:`nlieval.data.load_task` read; returns the YAML path.

    The task is unlabelled (``fields.label: null``) and copies the provenance back into
    each item's ``meta``. A folder that already holds them is refused unless
    ``overwrite`` (a :class:`~nlieval.ground.FolderError`, its advice in flags): runs on
    the old items would no longer match.

    >>> items = reversal([Item("1", "A man sleeps.", "A person rests.", Label.ENTAILMENT)])
    >>> write_task(items, run_dir).name
    'task.yaml'
    >>> write_task(items, run_dir)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: ... holds inferred items; choose another --out, or pass ...
    """
    if not items:
        raise ValueError("no inferred items to write (do the source items share sentences?)")
    root = Path(folder)
    if not overwrite and ((root / ITEMS_FILE).exists() or (root / TASK_FILE).exists()):
        raise FolderError(
            f"{root} already holds inferred items",
            advice="choose another --out, or pass --overwrite",
        )
    make_folder(root)
    lines = []
    for it in items:
        row = {"id": it.id, "premise": it.premise, "hypothesis": it.hypothesis}
        row.update({k: it.meta[k] for k in _META_KEYS})
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    # Never through a link planted at the file's name; a full disk is one line.
    atomic_write(root / ITEMS_FILE, "".join(lines), root=root)
    counts = Counter(it.meta["pattern"] for it in items)
    spec = {
        "name": name,
        "description": description
        or "inferred items: " + ", ".join(f"{p} {n}" for p, n in counts.items()),
        "path": ITEMS_FILE,
        "labels": [lab.value for lab in NLI3],
        "fields": {"id": "id", "label": None, "meta": list(_META_KEYS)},
    }
    return write_task_yaml(root / TASK_FILE, spec)


def read_task(folder: str | Path) -> tuple[Item, ...]:
    """The inferred items written by :func:`write_task` (a folder or its task YAML); a
    path that is neither is refused (a FolderError), never read as a built-in task's name.

    >>> items = reversal([Item("7", "A dog barks.", "An animal barks.", Label.ENTAILMENT)])
    >>> it = read_task(write_task(items, run_dir))[0]  # unlabelled, provenance back in meta
    >>> it.id, it.premise, it.label, it.meta["sources"], it.meta["input"], it.meta["target"]
    ('inf:reversal:7', 'An animal barks.', None, ['7'], 'Eab', 'ba')
    >>> read_task("snli")
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: snli: no folder written by infer build, nor its task.yaml
    """
    from .. import data

    p = Path(folder)
    if not p.exists():
        raise FolderError(f"{p}: no folder written by infer build, nor its {TASK_FILE}")
    return data.load_task(str(p / TASK_FILE if p.is_dir() else p)).items


# --------------------------------------------------------------------------- report

SweepPoint = tuple[str, str | None, int, int]  # model, checkpoint, k, seed


def pred_letter(pred: str | None) -> str | None:
    """A prediction as the consistency report counts it: its E/N/C letter; None for no
    prediction or another label, which is consistent with nothing (as unparsable
    answers are scored wrong elsewhere).

    >>> pred_letter("contradiction"), pred_letter("neutral"), pred_letter("reasoning")
    ('C', 'N', None)
    """
    if pred is None:
        return None
    try:
        return LETTER.get(Label.parse(pred))
    except ValueError:
        return None


class _Sources:
    """The model's records on the source items, to know which it got right."""

    def __init__(self, records: Iterable[Record]):
        self.exact: dict[tuple[Any, ...], Record] = {}
        self.loose: dict[tuple[Any, ...], Record] = {}
        for r in records:
            self.exact.setdefault((r.model, r.checkpoint, r.k, r.seed, r.item_id), r)
            self.loose.setdefault((r.model, r.checkpoint, r.item_id), r)

    def all_right(self, rec: Record, ids: Sequence[str]) -> bool:
        # Same sweep point when the source run has it, else any record of the same model
        # (a source run made at other shot counts still tells what the model knows).
        for item_id in ids:
            src = self.exact.get((rec.model, rec.checkpoint, rec.k, rec.seed, item_id))
            src = src or self.loose.get((rec.model, rec.checkpoint, item_id))
            if src is None or not src.correct:
                return False
        return True


def _input_order(key: tuple[Any, ...]) -> tuple[Any, ...]:
    model, checkpoint, k, seed, pattern, inputs, target = key
    labels = [logic.LABELS.index(ch) for ch in inputs if ch in logic.LABELS]
    return (model, checkpoint or "", k, seed, PATTERNS.index(pattern), labels, target)


def check_item(it: Item) -> None:
    """Refuse, in one line naming the item, an inferred item whose provenance fields
    (``pattern``, ``input``, ``target``, ``sources``, ``source_labels``) are missing or of
    the wrong type: items come from a file anyone may edit, and a bad field must not be
    a traceback halfway through a report.

    >>> check_item(Item("x", "p", "h", None, meta={"pattern": "reversal"}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: inferred item x: meta field 'input' must be a string, got None (was ...)
    """
    meta = it.meta
    for key in ("pattern", "input", "target"):
        if not isinstance(meta.get(key), str):
            raise ValueError(
                f"inferred item {it.id}: meta field {key!r} must be a string, "
                f"got {meta.get(key)!r} (was the folder written by infer build?)"
            )
    if meta["pattern"] not in PATTERNS:
        raise ValueError(f"inferred item {it.id}: unknown pattern {meta['pattern']!r}")
    sources = meta.get("sources")
    if not isinstance(sources, list) or not all(isinstance(x, str) for x in sources):
        raise ValueError(
            f"inferred item {it.id}: meta field 'sources' must be a list of item ids, "
            f"got {sources!r}"
        )
    labels = meta.get("source_labels")
    if labels is not None and not isinstance(labels, list):
        raise ValueError(
            f"inferred item {it.id}: meta field 'source_labels' must be a list of labels, "
            f"got {labels!r}"
        )


def source_coverage(
    inferred_items: Iterable[Item],
    source_records: Iterable[Record],
    models: Iterable[tuple[str, str | None]] | None = None,
) -> tuple[int, int]:
    """How many of the source item ids the inferred items name have a record in the
    source run, and how many they name (a filtered report on a wrong ``--source-run``
    is all zeros; the command warns with these counts). With ``models`` (the (model,
    checkpoint) pairs of the report's run), only source records of those count: the
    filter looks a source up under the inferred record's own model, so a source run
    imported under another ``--model`` name filters everything out.

    >>> items = shared_premise([Item("1", "A man sleeps.", "A man rests.", Label.ENTAILMENT),
    ...                         Item("2", "A man sleeps.", "A man runs.", Label.CONTRADICTION)])
    >>> rec = Record("snli", "1", "m", 0, 0, ("entailment",), (0.0,), (1.0,), None, None)
    >>> source_coverage(items, [rec])  # the items name sources 1 and 2; the run has 1
    (1, 2)
    >>> source_coverage(items, [rec], models=[("other", None)])  # but not of this model
    (0, 2)
    """
    needed = {s for it in inferred_items for s in (it.meta.get("sources") or [])}
    wanted = None if models is None else set(models)
    have = {
        r.item_id for r in source_records if wanted is None or (r.model, r.checkpoint) in wanted
    }
    return len(needed & have), len(needed)


def consistency_report(
    records: Iterable[Record],
    inferred_items: Iterable[Item],
    source_records: Iterable[Record] | None = None,
    readings: Mapping[str, logic.Reading] | Sequence[logic.Reading] | None = None,
) -> list[dict[str, Any]]:
    """Per sweep point, input-label pattern and target pair: how the model labels the
    inferred items, and how often that is consistent with each reading (METHODS.md 5).

    Each row: ``model``, ``checkpoint``, ``k``, ``seed``, ``pattern``, ``input``,
    ``target``, ``third`` (where the third sentence c comes from: ``"dataset
    hypothesis"``, ``"generated"``, or None for reversals), ``subset`` (``"all"``, or
    ``"filtered"``: only items whose source items the model labelled correctly, per
    ``source_records``, matched by item id), ``count``, ``pred_E``/``pred_C``/``pred_N``
    (% of predictions), and per reading name ``inferred[name]``, ``allowed[name]`` (see
    :func:`nlieval.metainference.logic.conclude`: a model answering L for a pair denies
    the other two labels, so L is allowed when the inputs, L and the negations of the
    other two are satisfiable together) and ``consistent[name]``: % of predictions among
    the allowed labels (None when the inputs are unsatisfiable under the reading, or there
    are no items). Records of items not in ``inferred_items`` are ignored.

    A model that answers C for the reversal (b, a) of an E item (a, b): under EI, Eab
    implies ~Cba, so C is inconsistent there; SC allows every label; MC only rules out N.

    >>> items = reversal([Item("1", "A man sleeps.", "A man rests.", Label.ENTAILMENT)])
    >>> rec = Record("t", items[0].id, "m", 0, 0, ("entailment", "neutral", "contradiction"),
    ...              (0.0, 0.0, 0.0), (1 / 3, 1 / 3, 1 / 3), "contradiction", None)
    >>> row = consistency_report([rec], items)[0]
    >>> row["input"], row["target"], row["pred_C"], row["inferred"], row["consistent"]
    ('Eab', 'ba', 100.0, {'MC': '~N', 'SC': '-', 'EI': '~C'}, {'MC': 100.0, 'SC': 100.0, 'EI': 0.0})
    """
    rs = logic.reading_list(readings)
    by_id = {it.id: it for it in inferred_items}
    for checked in by_id.values():
        check_item(checked)
    sources = None if source_records is None else _Sources(source_records)
    groups: dict[tuple[Any, ...], list[tuple[str | None, bool]]] = defaultdict(list)
    for rec in records:
        it = by_id.get(rec.item_id)
        if it is None:
            continue
        meta = it.meta
        point = (rec.model, rec.checkpoint, rec.k, rec.seed)
        key: tuple[Any, ...] = (*point, meta["pattern"], meta["input"], meta["target"])
        right = sources is not None and sources.all_right(rec, it.meta["sources"])
        groups[key].append((pred_letter(rec.pred), right))
    # Decided once per input pattern, target and reading, by the decision procedure.
    decided: dict[tuple[str, str, str], logic.Conclusion] = {}
    rows = []
    for key in sorted(groups, key=_input_order):
        inputs, target = key[5], key[6]
        for r in rs:
            if (inputs, target, r.name) not in decided:
                decided[inputs, target, r.name] = logic.conclude(inputs, target, r)
        subsets = [("all", [p for p, _ in groups[key]])]
        if sources is not None:
            subsets.append(("filtered", [p for p, ok in groups[key] if ok]))
        for subset, preds in subsets:
            rows.append(_row(key, subset, preds, rs, decided))
    return rows


#: Where the third sentence c of each pattern comes from (reversals have none).
THIRD_SENTENCE: dict[str, str | None] = {
    "reversal": None,
    "shared-premise": "dataset hypothesis",
    "chain": "generated",
    "chain-reversal": "generated",
}


def _row(
    key: tuple[Any, ...],
    subset: str,
    preds: Sequence[str | None],
    readings: Sequence[logic.Reading],
    decided: Mapping[tuple[str, str, str], logic.Conclusion],
) -> dict[str, Any]:
    model, checkpoint, k, seed, pattern, inputs, target = key
    n = len(preds)

    def pct(count: int) -> float | None:
        return 100.0 * count / n if n else None

    row: dict[str, Any] = {
        "model": model,
        "checkpoint": checkpoint,
        "k": k,
        "seed": seed,
        "pattern": pattern,
        "input": inputs,
        "target": target,
        "third": THIRD_SENTENCE[pattern],
        "subset": subset,
        "count": n,
    }
    for lab in logic.LABELS:
        row[f"pred_{lab}"] = pct(sum(p == lab for p in preds))
    found = {r.name: decided[inputs, target, r.name] for r in readings}
    row["inferred"] = {name: c.inferred for name, c in found.items()}
    row["allowed"] = {name: list(c.allowed) for name, c in found.items()}
    row["consistent"] = {
        name: None if c.inferred == "vacuous" else pct(sum(p in c.allowed for p in preds))
        for name, c in found.items()
    }
    return row


def _pct(x: float | None) -> Cell:
    return Cell("n/a" if x is None else f"{x:.1f}", x)


_SUBSET_TITLE = {
    "all": "Unfiltered (every inferred item):",
    "filtered": "Filtered (only items whose input items the model labelled correctly):",
}


def format_report(rows: Sequence[Mapping[str, Any]]) -> list[Block]:
    """The rows of :func:`consistency_report` as a report (render it with
    :func:`nlieval.ground.render`): per sweep point, a table of every inferred item and
    one of the filtered items, one line per input pattern and target pair.

    Columns: input labels, target pair, where the third sentence comes from, n, % of
    E/C/N predictions, then per reading the inferred label (``C``, ``~E``, ``-``: nothing
    follows, ``vacuous``: the inputs cannot hold) and the % of predictions consistent
    with it.

    >>> from nlieval.ground import render
    >>> items = reversal([Item("1", "A man sleeps.", "A man rests.", Label.ENTAILMENT)])
    >>> rec = Record("t", items[0].id, "m", 0, 0, ("entailment", "neutral", "contradiction"),
    ...              (0.0, 0.0, 0.0), (1 / 3, 1 / 3, 1 / 3), "contradiction", None)
    >>> print(render(format_report(consistency_report([rec], items)), "md").splitlines()[-1])
    | Eab | ba | - | 1 | 0.0 | 100.0 | 0.0 | ~N | 100.0 | - | 100.0 | ~C | 0.0 |
    """
    if not rows:
        return ["No records of inferred items (was the run made on the inferred task?)."]
    points: dict[SweepPoint, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        points[row["model"], row["checkpoint"], row["k"], row["seed"]].append(row)
    doc: list[Block] = []
    for (model, checkpoint, k, seed), group in points.items():
        names = list(group[0]["inferred"])
        where = f"{model}" + (f" @ {checkpoint}" if checkpoint else "")
        doc += [f"### {where}, k={k}, seed={seed}", ""]
        head = ["input", "target", "third sentence", "n", "%E", "%C", "%N"]
        head += [x for n in names for x in (n, f"{n} %")]
        for subset, title in _SUBSET_TITLE.items():
            chosen = [row for row in group if row["subset"] == subset]
            if not chosen:
                continue
            body = []
            for row in chosen:
                cells = [row["input"], row["target"], row["third"] or "-", row["count"]]
                cells += [_pct(row[f"pred_{lab}"]) for lab in logic.LABELS]
                for n in names:
                    cells += [row["inferred"][n], _pct(row["consistent"][n])]
                body.append(cells)
            doc += [title, "", Table.of(head, body), ""]
    while doc and doc[-1] == "":
        doc.pop()
    return doc


def report_document(
    rows: Sequence[Mapping[str, Any]],
    readings: Mapping[str, logic.Reading] | Sequence[logic.Reading],
) -> list[Block]:
    """What ``nlieval infer report`` prints: :func:`format_report`, then the frame class
    each reading was decided over (:func:`nlieval.metainference.logic.frames_note`)."""
    return [*format_report(rows), "", logic.frames_note(readings)]
