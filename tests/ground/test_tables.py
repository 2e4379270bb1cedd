"""The one writer of tables (nlieval.ground.tables): booktabs rules, escaping, a table of
values written cell for cell in each format, and no rendered table read back anywhere."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import pytest

from nlieval.ground import Cell, Table, latex_table, render

ROOT = Path(__file__).resolve().parents[2]


def test_latex_table_rules_and_escaping_by_hand() -> None:
    text = latex_table(
        ["model", "KL(human‖model)", "acc %"],
        [["a_b & c", "0.500 ± 0.010 †", "$5#{x}"]],
    )
    assert text.splitlines() == [
        r"\begin{tabular}{lll}",
        r"\toprule",
        r"model & KL(human\ensuremath{\Vert}model) & acc \% \\",
        r"\midrule",
        r"a\_b \& c & 0.500 \ensuremath{\pm} 0.010 \ensuremath{\dagger} & \$5\#\{x\} \\",
        r"\bottomrule",
        r"\end{tabular}",
    ]


def test_two_headings_alike_stay_two_columns() -> None:
    # A grid of two metrics names its task twice.
    lines = latex_table(["model", "snli", "snli"], [["a", "1", "2"]]).splitlines()
    assert lines[2] == r"model & snli & snli \\" and lines[4] == r"a & 1 & 2 \\"


def test_a_document_is_written_cell_for_cell_in_each_format() -> None:
    table = Table.of(["k", "n"], [["0", Cell("12", 12)], ["2", Cell("7", 7)]], notes=["note"])
    doc = ["A: runs/x", "", table]
    assert render(doc, "md").splitlines() == [
        "A: runs/x", "", "| k | n |", "|---|---|", "| 0 | 12 |", "| 2 | 7 |", "note"]  # fmt: skip
    out = render(doc, "latex").splitlines()
    assert out[0] == "% A: runs/x" and out[1] == ""
    assert out[2:9] == [
        r"\begin{tabular}{ll}",
        r"\toprule",
        r"k & n \\",
        r"\midrule",
        r"0 & 12 \\",
        r"2 & 7 \\",
        r"\bottomrule",
    ]
    assert out[-1] == "% note"
    assert list(csv.reader(io.StringIO(render(doc, "csv")))) == [
        ["k", "n"],
        ["0", "12"],
        ["2", "7"],
    ]
    (block,) = json.loads(render(doc, "json"))
    assert block["text"] == ["A: runs/x"] and block["values"] == [[None, 12], [None, 7]]
    with pytest.raises(ValueError, match="unknown table format 'html'"):
        render(doc, "html")


#: What read a printed table back into cells before tables were values: none may return.
PARSERS = re.compile(
    r"\bas_format\b|\bmarkdown_blocks\b|startswith\(\"Confusion, |/\^Confusion, /"
    r"|parse(?:Float|Int)\("
)


def test_no_rendered_table_is_parsed_back() -> None:
    files = [*(ROOT / "src" / "nlieval").rglob("*.py"), *(ROOT / "src" / "nlieval").rglob("*.js")]
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in files
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if PARSERS.search(line)
    ]
    assert not found, found


def test_a_number_that_is_not_finite_is_null_in_json() -> None:
    # A browser's JSON.parse refuses NaN and Infinity, which json.dumps writes by default.
    doc = Table.of(["m", "F1"], [["a", Cell("n/a", float("nan"))], ["b", Cell("inf", math.inf)]])
    text = render(doc, "json")
    assert "NaN" not in text and "Infinity" not in text
    (block,) = json.loads(text)
    assert block["values"] == [[None, None], [None, None]]
    assert block["rows"] == [["a", "n/a"], ["b", "inf"]]
