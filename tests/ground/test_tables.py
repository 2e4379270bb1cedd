"""The one writer of LaTeX tables (nlieval.ground.tables): booktabs rules, escaping, and
Markdown turned into LaTeX cell for cell."""

from __future__ import annotations

import pytest

from nlieval.ground import as_format, latex_table, markdown_table


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


def test_markdown_becomes_latex_cell_for_cell() -> None:
    md = "\n".join(
        ["A: runs/x", "", *markdown_table(["k", "n"], [["0", "12"], ["2", "7"]]), "", "note"]
    )
    out = as_format(md, "latex").splitlines()
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
    assert as_format(md, "md") == md
    with pytest.raises(ValueError, match="unknown table format 'html'"):
        as_format(md, "html")
