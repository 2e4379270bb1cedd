"""Two run folders compared item by item: pairing, counts and the tests' inputs."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from nlieval.analyses.compare import CompareConfig, compare_runs, comparison_table
from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.ground import render
from nlieval.runs import RunError, RunFolder
from nlieval.types import Record
from tests.helpers.hash_lm import HashLM


def _run(out: Path, model: str, limit: int, salt: str = "") -> None:
    cfg = RunConfig(model, ("smoke",), shots=(0, 2), seeds=(0,), limit=limit)
    run(cfg, out, model=stand_in(cfg, lambda ck: HashLM(salt)), progress=False)


def _records(folder: Path) -> list[dict[str, Any]]:
    # By hand: independent (the expected pairs, read apart from the reader compared).
    return [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines()]


def test_pairs_by_point_and_item_and_counts_by_hand(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "org/one", 12)
    _run(b, "org/two", 9, salt="x")  # another model: other predictions, fewer items
    rows = compare_runs(CompareConfig(a=str(a), b=str(b), resamples=300))
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
    assert rows == compare_runs(CompareConfig(a=str(a), b=str(b), resamples=300))  # seeded
    # --limit 12 against --limit 9 on the smoke file (smoke-01 ... smoke-48, in order):
    # A alone scored its 10th to 12th items, at each of the two k.
    assert [r["only_in_a_ids"] for r in rows] == [["smoke-10", "smoke-11", "smoke-12"]] * 2
    assert [r["only_in_b_ids"] for r in rows] == [[], []]
    table = render(comparison_table(rows), "md").splitlines()
    assert table[:2] == [f"A: {a} (org/one)", f"B: {b} (org/two)"]
    assert "p (McNemar exact, Holm)" in table[3]
    assert len(table) == 3 + 4 + 4  # sides, table, notes: the correction and two left out
    # 2 rows (one per k): each family of tests holds the 2 points' tests of its kind.
    assert table[-3].startswith(
        "p-values adjusted (Holm) within each family of tests (raw ones in the JSON): McNemar "
        "exact, accuracy, per seed (2); paired permutation, accuracy, per seed (2);"
    )
    for k, line in zip((0, 2), table[-2:], strict=True):
        assert line == f"left out of smoke k={k} seed=0: 3 only in A (smoke-10, smoke-11, smoke-12)"


def test_the_table_names_the_first_left_out_items_and_counts_all(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "org/one", 4)
    _run(b, "org/two", 12, salt="x")
    notes = render(
        comparison_table(compare_runs(CompareConfig(a=str(a), b=str(b), resamples=50))), "md"
    ).splitlines()
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
        compare_runs(CompareConfig(a=str(a), b=str(b)))
    RunFolder(c).append([rec("1", "entailment", k=5)])
    with pytest.raises(RunError, match="share no sweep point"):
        compare_runs(CompareConfig(a=str(a), b=str(c)))


# --------------------------------------------------------------------------- corrections

LABELS3 = ("entailment", "neutral", "contradiction")


def _rec(task: str, i: int, model: str, seed: int, pred: str, gold: str, k: int = 0) -> Record:
    return Record(
        task, f"i{i}", model, k, seed, LABELS3, (-1.0, -2.0, -3.0), (0.6, 0.3, 0.1), pred, gold
    )


def _exact_permutation_p(a: Any, b: Any, stat: Any) -> float:
    """A paired permutation test's two-sided p-value by enumerating every swap of the
    items' two values (2**n), as an exact test defines it: 2 x the smaller tail."""
    import itertools

    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    observed = stat(a, b)
    null = []
    for flips in itertools.product((False, True), repeat=len(a)):
        f = np.array(flips)
        null.append(stat(np.where(f, b, a), np.where(f, a, b)))
    tol = 1e-12 * max(1.0, abs(observed))
    null_arr = np.array(null)
    greater = np.mean(null_arr >= observed - tol)
    less = np.mean(null_arr <= observed + tol)
    return float(min(1.0, 2 * min(greater, less)))


# Two tasks: t with two seeds (so a row over seeds), u with one; 8 items each, so that
# with resamples >= 2**8 = 256 swaps, scipy's permutation test enumerates them (exact).
GOLD = [
    "entailment",
    "neutral",
    "contradiction",
    "entailment",
    "neutral",
    "contradiction",
    "entailment",
    "neutral",
]
PREDS = {
    ("a", "t", 0): [
        "entailment",
        "neutral",
        "neutral",
        "neutral",
        "neutral",
        "entailment",
        "entailment",
        "contradiction",
    ],
    ("b", "t", 0): [
        "entailment",
        "neutral",
        "contradiction",
        "entailment",
        "neutral",
        "contradiction",
        "neutral",
        "neutral",
    ],
    ("a", "t", 1): [
        "neutral",
        "neutral",
        "contradiction",
        "entailment",
        "entailment",
        "entailment",
        "entailment",
        "neutral",
    ],
    ("b", "t", 1): [
        "entailment",
        "neutral",
        "contradiction",
        "entailment",
        "neutral",
        "neutral",
        "entailment",
        "neutral",
    ],
    ("a", "u", 0): [
        "entailment",
        "entailment",
        "entailment",
        "entailment",
        "neutral",
        "neutral",
        "neutral",
        "neutral",
    ],
    ("b", "u", 0): [
        "entailment",
        "neutral",
        "contradiction",
        "entailment",
        "neutral",
        "contradiction",
        "entailment",
        "neutral",
    ],
}


def _hand_folders(tmp_path: Path) -> tuple[Path, Path]:
    folders = {}
    for side in ("a", "b"):
        folder = tmp_path / side
        folder.mkdir()
        RunFolder(folder).append(
            [
                _rec(task, i, f"m{side}", seed, pred, GOLD[i])
                for (s, task, seed), preds in PREDS.items()
                if s == side
                for i, pred in enumerate(preds)
            ]
        )
        folders[side] = folder
    return folders["a"], folders["b"]


@pytest.mark.parametrize(("correction", "method"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_p_values_are_multipletests_of_independent_raw_p_values(
    tmp_path: Path, correction: str, method: str
) -> None:
    import numpy as np
    from scipy.stats import binomtest
    from sklearn.metrics import f1_score
    from statsmodels.stats.multitest import multipletests

    a, b = _hand_folders(tmp_path)
    rows = compare_runs(CompareConfig(a=str(a), b=str(b), resamples=256, correction=correction))
    # Per seed: (t, 0), (t, 1), (u, 0); then over seeds: t (two seeds), not u (one).
    assert [(r["task"], r["seed"]) for r in rows] == [("t", 0), ("t", 1), ("u", 0), ("t", None)]
    want_raw = []
    for r in rows[:3]:
        pa, pb = PREDS[("a", r["task"], r["seed"])], PREDS[("b", r["task"], r["seed"])]
        ok_a = [p == g for p, g in zip(pa, GOLD, strict=True)]
        ok_b = [p == g for p, g in zip(pb, GOLD, strict=True)]
        a_only = sum(x and not y for x, y in zip(ok_a, ok_b, strict=True))
        b_only = sum(y and not x for x, y in zip(ok_a, ok_b, strict=True))
        assert (r["a_only"], r["b_only"]) == (a_only, b_only)
        mcnemar_p = binomtest(b_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
        acc_p = _exact_permutation_p(ok_a, ok_b, lambda x, y: float(np.mean(y) - np.mean(x)))

        @functools.cache
        def f1(preds: tuple[str, ...]) -> float:
            # Items the two sides predict alike swap to the same list: one call each.
            return float(f1_score(GOLD, list(preds), average="macro", zero_division=0))

        def f1_diff(x: Any, y: Any) -> float:
            return f1(tuple(y)) - f1(tuple(x))

        f1_p = _exact_permutation_p(pa, pb, f1_diff)
        assert r["mcnemar_p"] == pytest.approx(mcnemar_p)
        assert r["accuracy_p"] == pytest.approx(acc_p)
        assert r["macro_f1_p"] == pytest.approx(f1_p)
        want_raw += [mcnemar_p, acc_p, f1_p]
    # Over seeds: each item's correctness averaged over the two seeds, per side.
    over = rows[3]
    mean_a = np.mean(
        [[p == g for p, g in zip(PREDS[("a", "t", s)], GOLD, strict=True)] for s in (0, 1)], axis=0
    )
    mean_b = np.mean(
        [[p == g for p, g in zip(PREDS[("b", "t", s)], GOLD, strict=True)] for s in (0, 1)], axis=0
    )
    # Seed 0: A 4/8, B 7/8; seed 1: A 5/8, B 7/8 (counted from PREDS by hand).
    assert over["accuracy_a"] == pytest.approx(4.5 / 8)
    assert over["accuracy_b"] == pytest.approx(7 / 8)
    assert over["accuracy_a_std"] == pytest.approx(np.std([4 / 8, 5 / 8], ddof=1))
    assert over["accuracy_b_std"] == 0.0
    assert (over["seeds_a"], over["seeds_b"], over["n"]) == ([0, 1], [0, 1], 8)
    over_p = _exact_permutation_p(mean_a, mean_b, lambda x, y: float(np.mean(y) - np.mean(x)))
    assert over["accuracy_p"] == pytest.approx(over_p)
    want_raw.append(over_p)
    # Four families, each one kind of test of one metric: McNemar per seed, permutation of
    # accuracy per seed, of macro F1 per seed (3 sweep points each), and over seeds (1).
    # McNemar and the permutation test of one seed's accuracy test one difference: never
    # two members of one family.
    families = {
        "mcnemar_p": "McNemar exact, accuracy, per seed",
        "accuracy_p": "paired permutation, accuracy, per seed",
        "macro_f1_p": "paired permutation, macro F1, per seed",
    }
    for j, (key, family) in enumerate(families.items()):
        raw = want_raw[j:9:3]
        want = list(multipletests(raw, method=method)[1])
        assert [r[key + "_adj"] for r in rows[:3]] == pytest.approx(want)
        assert {(r[key + "_family"], r[key + "_tests"]) for r in rows[:3]} == {(family, 3)}
    # A family of one test: adjusted, it is its raw p-value.
    assert over["accuracy_p_adj"] == pytest.approx(over_p)
    assert (over["accuracy_p_family"], over["accuracy_p_tests"]) == (
        "paired permutation, accuracy, over seeds",
        1,
    )
    assert "mcnemar_p_family" not in over and {r["correction"] for r in rows} == {correction}
    table = render(comparison_table(rows), "md")
    name = {"holm": "Holm", "bh": "Benjamini-Hochberg"}[correction]
    assert f"p (McNemar exact, {name})" in table and "[bootstrap percentile 95%]" in table
    assert (
        f"p-values adjusted ({name}) within each family of tests (raw ones in the JSON): "
        "McNemar exact, accuracy, per seed (3); paired permutation, accuracy, per seed (3); "
        "paired permutation, macro F1, per seed (3); paired permutation, accuracy, over "
        "seeds (1);"
    ) in table
    # Every ± with its number of seeds: seed 0 of A 0.500, seed 1 0.625.
    assert f"{4.5 / 8:.3f} ± {np.std([4 / 8, 5 / 8], ddof=1):.3f} (2 seeds)" in table


def test_no_correction_keeps_the_raw_p_values(tmp_path: Path) -> None:
    a, b = _hand_folders(tmp_path)
    rows = compare_runs(CompareConfig(a=str(a), b=str(b), resamples=300, correction="none"))
    assert all(r["mcnemar_p_adj"] == r["mcnemar_p"] for r in rows if r["seed"] is not None)
    assert "p (McNemar exact) |" in render(comparison_table(rows), "md")
    with pytest.raises(ValueError, match="unknown correction 'bonferroni'"):
        compare_runs(CompareConfig(a=str(a), b=str(b), correction="bonferroni"))


def _folder(path: Path, records: list[Record]) -> Path:
    path.mkdir()
    RunFolder(path).append(records)
    return path


def test_a_checkpoint_series_compares_with_a_single_model(tmp_path: Path) -> None:
    from dataclasses import replace

    gold = ["entailment", "neutral", "contradiction", "entailment"]
    plain = [_rec("t", i, "x", 0, "entailment", g) for i, g in enumerate(gold)]
    series = [
        replace(
            _rec("t", i, "y", 0, g if i < right else "neutral", g), checkpoint=f"y/step-{right}"
        )
        for right in (1, 3)
        for i, g in enumerate(gold)
    ]
    a, b = _folder(tmp_path / "a", plain), _folder(tmp_path / "b", series)
    rows = compare_runs(CompareConfig(a=str(a), b=str(b), resamples=100))
    # Each checkpoint of B against A's one model: A right on items 0 and 3 (entailment);
    # step-1 right on item 0 and on item 1 (its "neutral" is gold there); step-3 on 0-2.
    assert [
        (r["checkpoint_a"], r["checkpoint_b"], r["accuracy_a"], r["accuracy_b"]) for r in rows
    ] == [
        (None, "y/step-1", 0.5, 0.5),
        (None, "y/step-3", 0.5, 0.75),
    ]
    assert "t @ A -, B y/step-3" in render(comparison_table(rows), "md")
    c = _folder(
        tmp_path / "c",
        [
            replace(r, checkpoint=r.checkpoint.replace("y/", "z/"))  # type: ignore[union-attr]
            for r in series
        ],
    )
    with pytest.raises(RunError, match="share no checkpoint .y/step-1, y/step-3 against z/step-1"):
        compare_runs(CompareConfig(a=str(b), b=str(c)))


def test_a_train_folder_compares_with_a_run_over_it(tmp_path: Path) -> None:
    from dataclasses import replace

    # `nlieval train --test-task my.yaml` names the task by that path and the seeds by
    # the record's seed; `run --model TRAIN_FOLDER --task my.yaml` by the name the YAML
    # declares and by the seed model's folder.
    (tmp_path / "items.jsonl").write_text("")
    task = tmp_path / "my.yaml"
    task.write_text("name: mine\npath: items.jsonl\nlabels: [entailment, neutral, contradiction]\n")
    gold = ["entailment", "neutral", "contradiction"]
    train = tmp_path / "train"
    own = [
        _rec(str(task), i, "train", s, "entailment", g) for s in (0, 1) for i, g in enumerate(gold)
    ]
    _folder(train, own)
    over = [
        replace(_rec("mine", i, str(train), 0, g, g), checkpoint=str(train / f"seed{s}"))
        for s in (0, 1)
        for i, g in enumerate(gold)
    ]
    rows = compare_runs(
        CompareConfig(a=str(train), b=str(_folder(tmp_path / "run", over)), resamples=100)
    )
    assert [(r["task"], r["seed"], r["n"]) for r in rows] == [
        ("mine", 0, 3),
        ("mine", 1, 3),
        ("mine", None, 3),
    ]
    assert [(r["accuracy_a"], r["accuracy_b"]) for r in rows] == [(1 / 3, 1.0)] * 3


def test_points_only_one_side_holds_are_named(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "org/one", 4)  # k = 0 and 2
    cfg = RunConfig("org/two", ("smoke",), shots=(0,), seeds=(0,), limit=4)
    run(cfg, b, model=stand_in(cfg, lambda ck: HashLM("x")), progress=False)
    rows = compare_runs(CompareConfig(a=str(a), b=str(b), resamples=50))
    assert [r["k"] for r in rows] == [0]
    assert (rows[0]["not_compared_a"], rows[0]["not_compared_b"]) == (["smoke k=2"], [])
    assert "not compared, only in A: smoke k=2" in render(comparison_table(rows), "md").splitlines()
