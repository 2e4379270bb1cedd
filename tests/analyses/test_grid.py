"""Grid tables: pivots, the Average row and gaps, checked against hand-computed cells."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from nlieval.analyses.grid import by_fields, grid, intervals, render_grid
from nlieval.ground import DataError
from nlieval.metrics import METRICS, Metric, point_metrics, summarize
from nlieval.types import Record

#: The label of the Average row of two models (ground.mean_label).
MEAN2 = "mean of 2 models"


def _chaos_rows() -> list[dict[str, object]]:
    # Two models on the three ChaosNLI sets, original and majority accuracy per row.
    acc = {
        ("m1", "chaosnli_snli"): (0.60, 0.70),
        ("m1", "chaosnli_mnli"): (0.50, 0.55),
        ("m1", "chaosnli_alphanli"): (0.52, 0.58),
        ("m2", "chaosnli_snli"): (0.80, 0.76),
        ("m2", "chaosnli_mnli"): (0.70, 0.69),
        ("m2", "chaosnli_alphanli"): (0.62, 0.64),
    }
    return [
        {
            "model": m,
            "checkpoint": None,
            "task": t,
            "k": 0,
            "acc_original": o,
            "acc_original_std": 0.01,
            "acc_majority": j,
            "acc_majority_std": 0.02,
            "seeds": [0, 1],
        }
        for (m, t), (o, j) in acc.items()
    ]


def test_the_chaosnli_layout_with_an_average_row() -> None:
    g = grid(_chaos_rows(), values=("acc_original", "acc_majority"))
    assert g.columns == ("task", "metric")
    assert g.rows == (("m1",), ("m2",), ("mean of 2 models",))
    assert len(g.cols) == 6  # 3 sets x {original, majority}
    cell = g.value(("mean of 2 models",), ("chaosnli_snli", "acc_majority"))
    assert cell is not None and cell.mean == pytest.approx((0.70 + 0.76) / 2) and cell.std is None
    m1 = g.value(("m1",), ("chaosnli_mnli", "acc_original"))
    assert m1 is not None and (m1.mean, m1.std) == (0.50, 0.01)
    md = render_grid(g, percent=True, digits=1)
    assert "| m2 | 62.0 ± 1.0 | 64.0 ± 2.0 |" in md  # alpha-NLI first: sorted by name
    *table, blank, note = md.splitlines()
    assert table[-1].startswith("| mean of 2 models | 57.0 | 61.0 |") and blank == ""
    assert note == "± sample standard deviation over 2 seeds"  # every ± is over seeds [0, 1]


def test_gaps_to_a_reference_row_and_missing_cells() -> None:
    rows = [
        {"model": "full", "task": "scinli", "macro_f1": 0.78},
        {"model": "hyp-only", "task": "scinli", "macro_f1": 0.60},
        {"model": "full", "task": "mismatched", "macro_f1": 0.70},
    ]
    g = grid(rows, values=("macro_f1",), reference={"model": "hyp-only"}, average=False)
    gap = g.value(("full - hyp-only",), ("scinli",))
    assert gap is not None and gap.mean == pytest.approx(0.18)
    assert g.value(("full - hyp-only",), ("mismatched",)) is None  # no reference cell
    assert "–" in render_grid(g)  # hyp-only has no mismatched run
    with pytest.raises(ValueError, match="no row"):
        grid(rows, values=("macro_f1",), reference={"model": "nobody"})


def test_two_runs_in_one_cell_are_refused_and_k_can_split_them() -> None:
    rows = [
        {"model": "m", "task": "snli", "k": 0, "accuracy": 0.4},
        {"model": "m", "task": "snli", "k": 5, "accuracy": 0.6},
    ]
    with pytest.raises(ValueError, match="two runs fill the cell"):
        grid(rows)
    g = grid(rows, index=("model", "k"), average=False)
    assert g.rows == (("m", 0), ("m", 5))
    with pytest.raises(ValueError, match="unknown grid key"):
        grid(rows, index=("colour",))


def test_csv_and_json_hold_the_same_numbers() -> None:
    g = grid(_chaos_rows(), values=("acc_original",))
    table = list(csv.reader(io.StringIO(render_grid(g, "csv"))))
    assert table[0][:3] == ["model", "chaosnli_alphanli mean", "chaosnli_alphanli std"]
    assert [float(x) for x in table[1][1:3]] == [0.52, 0.01]
    cells = json.loads(render_grid(g, "json"))["cells"]
    avg = [c for c in cells if c["row"] == [MEAN2] and c["column"] == ["chaosnli_mnli"]]
    assert math.isclose(avg[0]["mean"], 0.6) and avg[0]["std"] is None


def _records(seed: int) -> list[Record]:
    rng = np.random.default_rng(seed)
    labels = ("entailment", "neutral", "contradiction")
    out = []
    for s in (0, 1):
        for i in range(30):
            gold = labels[i % 3]
            pred = labels[int(rng.integers(0, 3))] if rng.random() < 0.9 else None
            probs = tuple(float(p) for p in rng.dirichlet([1.0, 1.0, 1.0]))
            loglik = tuple(float(np.log(p)) for p in probs)
            out.append(Record("t", str(i), "m", 0, s, labels, loglik, probs, pred, gold))
    return out


def test_the_table_metrics_are_scikit_learns_to_the_bit() -> None:
    # The table's own accuracy and macro F1 replace scikit-learn's in every summary: the
    # numbers saved in results.json must not move by one bit.
    for seed in range(20):
        recs = [r for r in _records(seed) if r.seed == 0]
        gold = [r.gold for r in recs]
        pred = [r.pred or "<unparsed>" for r in recs]
        m = point_metrics(recs)
        assert m["accuracy"] == float(accuracy_score(gold, pred))
        want = f1_score(gold, pred, labels=list(recs[0].labels), average="macro", zero_division=0)
        assert m["macro_f1"] == float(want)


def test_a_metric_added_to_the_table_reaches_summaries_and_intervals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The probability of the gold option, declared once: its mean over items per seed,
    # then the mean over seeds, and an interval over items like any other metric.
    def gold_prob(r: Record) -> float:
        return r.probs[r.labels.index(str(r.gold))]

    monkeypatch.setitem(METRICS, "gold_prob", Metric("gold_prob", "gold prob.", item=gold_prob))
    recs = _records(3)
    row = summarize(recs)[0]
    per_seed = [np.mean([gold_prob(r) for r in recs if r.seed == s]) for s in (0, 1)]
    assert row["gold_prob"] == pytest.approx(np.mean(per_seed))
    assert row["gold_prob_std"] == pytest.approx(np.std(per_seed, ddof=1))
    low, high = intervals(recs, ["gold_prob"], resamples=200)[("m", None, "t", 0)]["gold_prob"]
    assert low < row["gold_prob"] < high
    g = grid([{**row, "gold_prob_ci": [low, high]}], values=("gold_prob",), average=False)
    cell = g.value(("m",), ("t",))
    assert cell is not None and (cell.low, cell.high) == (low, high)


def _field_record(i: int, domain: object, genre: str) -> Record:
    return Record("t", str(i), "m", 0, 0, ("a", "b"), (-1.0, -2.0), (0.7, 0.3), "a", "a",
                  meta={"domain": domain, "genre": genre})  # fmt: skip


def test_two_item_fields_are_pooled_alone_and_together() -> None:
    # Items by (domain, genre): (x, g) 1, (x, h) 2, (y, g) 3; a record without a domain.
    recs = [_field_record(1, "x", "g"), _field_record(2, "x", "h"), _field_record(3, "x", "h"),
            _field_record(4, "y", "g"), _field_record(5, "y", "g"), _field_record(6, "y", "g"),
            _field_record(7, None, "h")]  # fmt: skip
    rows = by_fields(recs, ["domain", "genre"], lambda rs: [{"n": len(rs)}])
    counts = {(r["domain"], r["genre"]): r["n"] for r in rows}
    assert counts == {
        ("x", "g"): 1, ("x", "h"): 2, ("y", "g"): 3, (None, "h"): 1,
        ("Overall", "g"): 4, ("Overall", "h"): 3,  # each genre over every domain
        ("x", "Overall"): 3, ("y", "Overall"): 3, (None, "Overall"): 1,
        ("Overall", "Overall"): 7,
    }  # fmt: skip
    assert len(rows) == len(counts)  # no pooled group twice
    assert len(by_fields(recs, ["domain"], lambda rs: [{"n": len(rs)}], overall=False)) == 3
    with pytest.raises(ValueError, match="has the value 'Overall' itself"):
        by_fields([_field_record(1, "Overall", "g")], ["domain"], lambda rs: [{"n": len(rs)}])
    bad = [_field_record(1, {"a": 1}, "g")]
    with pytest.raises(DataError, match="field 'domain'.*holds an object"):
        by_fields(bad, ["domain"], lambda rs: [{"n": len(rs)}])


def test_overall_is_no_row_of_the_average_and_domains_are_no_mixed_items() -> None:
    rows = [
        {"model": "m", "task": "t", "domain": d, "accuracy": acc, "n": len(ids), "item_ids": ids}
        for d, acc, ids in (("x", 1.0, {"1"}), ("y", 0.0, {"2", "3"}), ("Overall", 1 / 3,
                                                                          {"1", "2", "3"}))
    ]  # fmt: skip
    # The domains hold other items by design: not refused as mixed cells.
    g = grid(rows, index=("domain",), columns=("model",))
    assert g.rows == (("x",), ("y",), ("Overall",), ("mean of 2 domain values",))
    avg = g.value(("mean of 2 domain values",), ("m",))
    assert avg is not None and avg.mean == 0.5 and not avg.short  # (1 + 0) / 2, not with 1/3
    with pytest.raises(ValueError, match="unknown grid key 'genre'"):
        grid(rows, index=("genre",))


def test_an_average_over_fewer_rows_is_marked_and_its_note_names_the_column() -> None:
    rows = [
        {"model": "a", "task": "snli", "accuracy": 0.5, "accuracy_std": 0.1, "seeds": [0, 1]},
        {"model": "b", "task": "snli", "accuracy": 0.7, "accuracy_std": 0.1, "seeds": [0, 1]},
        {"model": "a", "task": "mnli", "accuracy": 0.4},
    ]
    g = grid(rows)
    mnli, snli = g.value((MEAN2,), ("mnli",)), g.value((MEAN2,), ("snli",))
    assert mnli is not None and mnli.short and snli is not None and not snli.short
    assert g.notes == ("‡ mean over fewer rows (the rest lack it): mnli 1 of 2",)
    md = render_grid(g).splitlines()
    assert md[4] == "| mean of 2 models | 0.400 ‡ | 0.600 |"
    assert md[-2:] == [g.notes[0], "± sample standard deviation over 2 seeds"]
    cells = json.loads(render_grid(g, "json"))
    assert cells["notes"] == list(g.notes)
    seeds = {(c["row"][0], c["column"][0]): c["seeds"] for c in cells["cells"]}
    assert seeds == {("a", "snli"): 2, ("b", "snli"): 2, ("a", "mnli"): None,
                     (MEAN2, "snli"): None, (MEAN2, "mnli"): None}  # fmt: skip


def test_an_average_is_over_the_models_at_each_k_and_says_so() -> None:
    # Two models at k = 0 and 1: the mean of the models at each k, never the mean of
    # all four rows (by hand: k=0 (0.4 + 0.6) / 2 = 0.5, k=1 (0.8 + 0.5) / 2 = 0.65; the
    # pooled mean 0.575 is the number no paper prints).
    rows = [
        {"model": m, "task": "snli", "k": k, "accuracy": a}
        for m, k, a in (("a", 0, 0.4), ("b", 0, 0.6), ("a", 1, 0.8), ("b", 1, 0.5))
    ]
    g = grid(rows, index=("model", "k"))
    assert g.rows[-2:] == (("mean of 2 models", 0), ("mean of 2 models", 1))
    means = {rk: g.value(rk, ("snli",)) for rk in g.rows[-2:]}
    assert [c.mean if c else None for c in means.values()] == [
        pytest.approx(0.5),
        pytest.approx(0.65),
    ]
    md = render_grid(g).splitlines()
    assert md[-2:] == ["| mean of 2 models | 0 | 0.500 |", "| mean of 2 models | 1 | 0.650 |"]
    # With k first in the rows, the Average is still over the models, per k.
    g = grid(rows, index=("k", "model"))
    assert g.rows[-2:] == ((0, "mean of 2 models"), (1, "mean of 2 models"))


def test_a_cell_undefined_on_its_items_is_n_a_with_a_note_and_no_number() -> None:
    nan = float("nan")
    rows = [{"model": "a", "task": "scinli", "macro_f1": nan, "n": 8},
            {"model": "b", "task": "scinli", "macro_f1": 0.5, "n": 8}]  # fmt: skip
    g = grid(rows, values=("macro_f1",))
    md = render_grid(g).splitlines()
    assert md[2] == "| a | n/a |" and md[4] == "| mean of 2 models | 0.500 ‡ |"
    assert any(line.startswith("n/a: undefined on these items") for line in md)


def test_a_reference_run_is_no_model_of_the_average() -> None:
    # m and n, and m's hypothesis-only reference run: the mean of the models is over m
    # and n (by hand (0.8 + 0.7) / 2 = 0.75), never with the baseline (0.7 over three).
    own = [{"model": "m", "task": "t", "accuracy": 0.8},
           {"model": "m hyp", "task": "t", "accuracy": 0.6},
           {"model": "n", "task": "t", "accuracy": 0.7}]  # fmt: skip
    g = grid(own, references={"m": "m hyp", "n": None}, reference_name="hyp")
    cell = g.value((MEAN2,), ("t",))
    assert cell is not None and cell.mean == pytest.approx(0.75)
    g = grid(own, reference={"model": "m hyp"})
    cell = g.value((MEAN2,), ("t",))
    assert cell is not None and cell.mean == pytest.approx(0.75)
