"""Two run folders compared item by item: pairing, counts and the tests' inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nlieval.analyses.compare import compare_runs, comparison_table
from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.runs import RunError, RunFolder
from nlieval.types import Record
from tests.helpers.hash_lm import HashLM


def _run(out: Path, model: str, limit: int, salt: str = "") -> None:
    cfg = RunConfig(model, ("smoke",), shots=(0, 2), seeds=(0,), limit=limit)
    run(cfg, out, model=stand_in(cfg, lambda ck: HashLM(salt)), progress=False)


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines()]


def test_pairs_by_point_and_item_and_counts_by_hand(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "org/one", 12)
    _run(b, "org/two", 9, salt="x")  # another model: other predictions, fewer items
    rows = compare_runs(a, b, resamples=300)
    assert [(r["task"], r["k"]) for r in rows] == [("smoke", 0), ("smoke", 2)]
    ra, rb = _records(a), _records(b)
    for row in rows:
        left = {r["item_id"]: r for r in ra if r["k"] == row["k"]}
        right = {r["item_id"]: r for r in rb if r["k"] == row["k"]}
        both = set(left) & set(right)
        assert row["n"] == len(both) == 9
        assert (row["only_in_a"], row["only_in_b"]) == (3, 0)
        ok_a = {i: left[i]["pred"] == left[i]["gold"] for i in both}
        ok_b = {i: right[i]["pred"] == right[i]["gold"] for i in both}
        assert row["a_only"] == sum(ok_a[i] and not ok_b[i] for i in both)
        assert row["b_only"] == sum(ok_b[i] and not ok_a[i] for i in both)
        assert row["accuracy_a"] == pytest.approx(sum(ok_a.values()) / 9)
        assert row["accuracy_b"] == pytest.approx(sum(ok_b.values()) / 9)
        assert row["accuracy_ci"][0] <= row["accuracy_diff"] <= row["accuracy_ci"][1]
    assert rows == compare_runs(a, b, resamples=300)  # seeded
    # --limit 12 against --limit 9 on the smoke file (smoke-01 ... smoke-48, in order):
    # A alone scored its 10th to 12th items, at each of the two k.
    assert [r["only_in_a_ids"] for r in rows] == [["smoke-10", "smoke-11", "smoke-12"]] * 2
    assert [r["only_in_b_ids"] for r in rows] == [[], []]
    table = comparison_table(rows).splitlines()
    assert table[:2] == [f"A: {a} (org/one)", f"B: {b} (org/two)"]
    assert "McNemar p" in table[3] and len(table) == 3 + 4 + 3  # sides, table, notes
    for k, line in zip((0, 2), table[-2:], strict=True):
        assert line == f"left out of smoke k={k} seed=0: 3 only in A (smoke-10, smoke-11, smoke-12)"


def test_the_table_names_the_first_left_out_items_and_counts_all(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "org/one", 4)
    _run(b, "org/two", 12, salt="x")
    notes = comparison_table(compare_runs(a, b, resamples=50)).splitlines()
    # B alone: smoke-05 ... smoke-12, eight items; the first five named.
    want = "8 only in B (smoke-05, smoke-06, smoke-07, smoke-08, smoke-09, ...)"
    assert notes[-1] == f"left out of smoke k=2 seed=0: {want}"


def test_other_data_and_no_shared_point_are_refused(tmp_path: Path) -> None:
    def rec(i: str, gold: str, k: int = 0) -> Record:
        return Record(
            "t",
            i,
            "m",
            k,
            0,
            ("entailment", "neutral"),
            (-1.0, -2.0),
            (0.7, 0.3),
            "entailment",
            gold,
        )

    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for f in (a, b, c):
        f.mkdir()
    RunFolder(a).append([rec("1", "entailment"), rec("2", "neutral")])
    RunFolder(b).append([rec("1", "entailment"), rec("2", "entailment")])
    with pytest.raises(RunError, match="not the same data"):
        compare_runs(a, b)
    RunFolder(c).append([rec("1", "entailment", k=5)])
    with pytest.raises(RunError, match="share no sweep point"):
        compare_runs(a, c)
