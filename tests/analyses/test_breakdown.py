"""Metrics by item field: the groups and counts come from the data, not from a list."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from nlieval.analyses.breakdown import NA_NOTE, breakdown, breakdown_table
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
    # Four table lines, then the notes: the item without a heuristic is one entailment
    # item (no macro F1), and the seeds behind each ±.
    lines = table.splitlines()
    assert lines[4:] == ["", NA_NOTE, "± sample standard deviation over 2 seeds"]
    assert "± 0.707" in table
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


def _rec(item: int, gold: str, pred: str, seed: int) -> Record:
    labels = ("entailment", "non-entailment")
    return Record("hans", str(item), "m", 0, seed, labels, (-1.0, -2.0), (0.73, 0.27), pred,
                  gold, meta={"heuristic": "x"})  # fmt: skip


E, N = "entailment", "non-entailment"
# item: gold, prediction at seed 0, at seed 1
CELLS = {1: (E, E, E), 2: (E, E, E), 3: (E, E, N), 4: (E, N, N), 5: (N, N, N), 6: (N, E, N)}


def _cell_records(seeds: tuple[int, ...] = (0, 1)) -> list[Record]:
    return [_rec(i, g, preds[s], s) for s in seeds for i, (g, *preds) in CELLS.items()]


def test_a_cell_of_one_gold_class_has_no_macro_f1_in_any_format() -> None:
    import csv
    import io
    import json

    rows = {r["gold"]: r for r in breakdown(_cell_records(), ["gold"])}
    ent = rows[E]
    # gold=entailment: seed 0 right on 3 of 4, seed 1 on 2 of 4. Precision of entailment
    # is 1 by construction: F1 = 2*3/(2*3+1) = 6/7 and 2*2/(2*2+2) = 2/3. No gold
    # non-entailment item: its F1 (recall 0/0) and the macro F1 are n/a, not 0 and 0.5.
    assert ent["accuracy"] == pytest.approx(0.625)
    assert ent["per_class_f1"][E] == pytest.approx((6 / 7 + 2 / 3) / 2)
    assert ent["per_class_f1"][N] is None and ent["macro_f1"] is None
    # gold=non-entailment: F1 2/3 (seed 0: 1 of 2 right) and 1 (seed 1).
    assert rows[N]["per_class_f1"][N] == pytest.approx(5 / 6) and rows[N]["macro_f1"] is None
    md = breakdown_table(list(rows.values()), ["gold"]).splitlines()
    assert md[2] == "| m | hans | 0 | entailment | 4 | 0.625 ± 0.177 | n/a | 0.762 | n/a |"
    assert md[3] == "| m | hans | 0 | non-entailment | 2 | 0.750 ± 0.354 | n/a | n/a | 0.833 |"
    assert md[4:] == ["", NA_NOTE, "± sample standard deviation over 2 seeds"]
    latex = breakdown_table(list(rows.values()), ["gold"], "latex")
    assert latex.count("n/a") >= 4 and "recall is undefined" in latex and "2 seeds" in latex
    table = list(csv.DictReader(io.StringIO(breakdown_table(list(rows.values()), ["gold"], "csv"))))
    assert table[0]["macro_f1"] == "" and table[0]["f1_non-entailment"] == ""
    assert float(table[0]["f1_entailment"]) == pytest.approx(16 / 21)
    got = json.loads(breakdown_table(list(rows.values()), ["gold"], "json"))
    assert got[0]["macro_f1"] is None and got[0]["per_class_f1"][N] is None


def test_json_rows_say_which_cells_are_null_and_why() -> None:
    import json

    by_gold = json.loads(breakdown_table(breakdown(_cell_records(), ["gold"]), ["gold"], "json"))
    # gold=entailment holds no non-entailment item (and the reverse): that class's F1 and
    # the macro F1 are null, and the row's note names exactly those cells.
    for row, absent in zip(by_gold, (N, E), strict=True):
        assert row["macro_f1"] is None and row["per_class_f1"][absent] is None
        assert row["note"] == (
            "null: macro_f1, macro_f1_std (the row holds gold items of one class only); "
            f"per_class_f1.{absent} (no gold items of {absent} in the row: its recall is "
            "undefined)"
        )
    # Both classes in the row: nothing is null, and the note is null too.
    (row,) = json.loads(
        breakdown_table(breakdown(_cell_records(), ["heuristic"]), ["heuristic"], "json")
    )
    assert row["macro_f1"] is not None and row["note"] is None


def test_a_cell_of_both_classes_keeps_its_macro_f1() -> None:
    (row,) = breakdown(_cell_records(), ["heuristic"])
    # seed 0: F1 E = 2*3/(6+1+1) = 0.75, F1 N = 2/(2+1+1) = 0.5: macro 0.625;
    # seed 1: F1 E = 4/(4+2) = 2/3, F1 N = 4/(4+2) = 2/3: macro 2/3.
    assert row["macro_f1"] == pytest.approx((0.625 + 2 / 3) / 2)
    assert row["macro_f1_std"] == pytest.approx(abs(0.625 - 2 / 3) / 2**0.5)
    table = breakdown_table([row], ["heuristic"])
    assert "| 0.646 ± 0.029 |" in table and "n/a" not in table


def test_rows_of_different_seed_counts_name_them_in_each_cell() -> None:
    # A second model with three seeds: the ± of each row says over how many.
    other = [replace(r, model="m3") for r in _cell_records()]
    other += [replace(r, model="m3", seed=2) for r in _cell_records((0,))]
    rows = breakdown(_cell_records() + other, ["heuristic"])
    md = breakdown_table(rows, ["heuristic"]).splitlines()
    # m3's accuracies: 4/6, 4/6, 4/6 (seed 2 repeats seed 0): std 0.
    assert md[2].startswith("| m | hans | 0 | x | 6 | 0.667 ± 0.000 (2 seeds) |")
    assert md[3].startswith("| m3 | hans | 0 | x | 6 | 0.667 ± 0.000 (3 seeds) |")
    assert md[-1] == "± sample standard deviation over the seeds each cell names"
    # One seed: no ±, no note.
    (one,) = breakdown(_cell_records((0,)), ["heuristic"])
    assert breakdown_table([one], ["heuristic"]).splitlines()[2:] == [
        "| m | hans | 0 | x | 6 | 0.667 | 0.625 | 0.750 | 0.500 |"
    ]


def test_a_cells_macro_f1_is_the_one_every_command_gives() -> None:
    import json

    from sklearn.metrics import f1_score

    labels = ("a", "b", "c")
    # gold a, a, b; predicted a, c, b: c is predicted once and has no gold item.
    pairs = [("a", "a"), ("a", "c"), ("b", "b")]
    recs = [
        Record(
            "t", str(i), "m", 0, 0, labels, (-1.0,) * 3, (1 / 3,) * 3, p, g, meta={"genre": "x"}
        )  # fmt: skip
        for i, (g, p) in enumerate(pairs)
    ]
    gold, pred = [g for g, _ in pairs], [p for _, p in pairs]
    # scikit-learn's macro F1 over the classes with gold items (a 2/3, b 1): 5/6, as
    # report and grid print it; c's own F1 is n/a (no gold item: no recall), and it is
    # no class of the mean (counted 0 it would give 5/9).
    want = f1_score(gold, pred, labels=["a", "b"], average="macro", zero_division=0)
    assert want == pytest.approx(5 / 6)
    (row,) = json.loads(breakdown_table(breakdown(recs, ["genre"]), ["genre"], "json"))
    assert row["macro_f1"] == pytest.approx(want)
    assert row["per_class_f1"]["c"] is None and row["per_class_f1"]["a"] == pytest.approx(2 / 3)
