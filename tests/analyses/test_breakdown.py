"""Metrics by item field: the groups and counts come from the data, not from a list."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest

from nlieval.analyses.breakdown import breakdown, breakdown_table
from nlieval.data import load_task
from nlieval.types import Record

DATA = os.environ.get("NLIEVAL_DATA_DIR")


def _always(items: list[Any], pred: str, seed: int = 0) -> list[Record]:
    labels = ("entailment", "non-entailment")
    return [
        Record(
            "hans",
            it.id,
            "always",
            0,
            seed,
            labels,
            (-1.0, -2.0),
            (0.73, 0.27),
            pred,
            it.label.value if hasattr(it.label, "value") else it.label,
            meta=dict(it.meta),
        )
        for it in items
    ]


@pytest.mark.data
@pytest.mark.skipif(not DATA, reason="needs NLIEVAL_DATA_DIR")
def test_hans_by_heuristic_and_label_counts_the_file() -> None:
    ds = load_task("hans", DATA)
    rows = breakdown(_always(list(ds.items), "entailment"), ["heuristic", "gold"])
    cells = {(r["heuristic"], r["gold"]): r for r in rows}
    assert set(cells) == {
        (h, g)
        for h in ("constituent", "lexical_overlap", "subsequence")
        for g in ("entailment", "non-entailment")
    }
    assert {r["n"] for r in rows} == {5000}
    # A system that always says entailment is right on every entailment item only.
    assert {g: r["accuracy"] for (_, g), r in cells.items()} == {
        "entailment": 1.0,
        "non-entailment": 0.0,
    }


def test_seeds_are_averaged_and_missing_fields_grouped() -> None:
    class It:
        def __init__(self, i: int, label: str, meta: dict[str, str]) -> None:
            self.id, self.label, self.meta = str(i), label, meta

    items = [
        It(i, "entailment" if i % 2 else "non-entailment", {"heuristic": "x"}) for i in range(4)
    ]
    items.append(It(9, "entailment", {}))
    recs = _always(items, "entailment", seed=0) + _always(items, "non-entailment", seed=1)
    rows = breakdown(recs, ["heuristic"])
    by = {r["heuristic"]: r for r in rows}
    assert set(by) == {None, "x"}
    # Seed 0 is right on the 2 entailment items of x, seed 1 on the 2 others: 0.5 each.
    assert by["x"]["accuracy"] == 0.5 and by["x"]["accuracy_std"] == 0.0
    assert by["x"]["seeds"] == 2 and by["x"]["n"] == 4
    # The item without a heuristic: right at seed 0, wrong at seed 1.
    assert by[None]["accuracy"] == 0.5 and by[None]["accuracy_std"] == pytest.approx(0.5**0.5)
    table = breakdown_table(rows, ["heuristic"])
    assert table.count("\n") == 3 and "± 0.707" in table
    assert Counter(r["seeds"] for r in rows) == {2: 2}
    with pytest.raises(ValueError, match="at least one field"):
        breakdown(recs, [])


def test_per_class_f1_per_domain_in_columns() -> None:
    import csv
    import io
    import json

    import numpy as np
    from sklearn.metrics import f1_score

    labels = ("contrasting", "reasoning", "entailment", "neutral")
    rng = np.random.default_rng(0)
    recs = []
    for i in range(120):
        gold, pred = labels[rng.integers(4)], labels[rng.integers(4)]
        dom = ("acl", "bio")[i % 2]
        recs.append(Record("sci", str(i), "m", 0, 0, labels, (-1.0,) * 4, (0.25,) * 4,
                           pred, gold, meta={"domain": dom}))  # fmt: skip
    rows = breakdown(recs, ["domain"])
    table = list(csv.DictReader(io.StringIO(breakdown_table(rows, ["domain"], "csv"))))
    assert [r["domain"] for r in table] == ["acl", "bio"]
    for row in table:
        mine = [r for r in recs if r.meta["domain"] == row["domain"]]
        want = f1_score([r.gold for r in mine], [r.pred for r in mine], labels=list(labels),
                        average=None, zero_division=0)  # fmt: skip
        for c, w in zip(labels, want, strict=True):
            assert float(row[f"f1_{c}"]) == pytest.approx(w)
    md = breakdown_table(rows, ["domain"]).splitlines()
    assert md[0].endswith("| F1 contrasting | F1 reasoning | F1 entailment | F1 neutral |")
    assert json.loads(breakdown_table(rows, ["domain"], "json"))[1]["domain"] == "bio"
