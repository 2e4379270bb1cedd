"""Grid tables: pivots, the Average row and gaps, checked against hand-computed cells."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from nlieval.analyses.grid import grid, render_grid


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
    assert g.rows == (("m1",), ("m2",), ("Average",))
    assert len(g.cols) == 6  # 3 sets x {original, majority}
    cell = g.value(("Average",), ("chaosnli_snli", "acc_majority"))
    assert cell is not None and cell.mean == pytest.approx((0.70 + 0.76) / 2) and cell.std is None
    m1 = g.value(("m1",), ("chaosnli_mnli", "acc_original"))
    assert m1 is not None and (m1.mean, m1.std) == (0.50, 0.01)
    md = render_grid(g, percent=True, digits=1)
    assert "| m2 | 62.0 ± 1.0 | 64.0 ± 2.0 |" in md  # alpha-NLI first: sorted by name
    assert md.splitlines()[-1].startswith("| Average | 57.0 | 61.0 |")


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
    avg = [c for c in cells if c["row"] == ["Average"] and c["column"] == ["chaosnli_mnli"]]
    assert math.isclose(avg[0]["mean"], 0.6) and avg[0]["std"] is None
