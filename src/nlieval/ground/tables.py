"""The text formats of a printed table: Markdown, and LaTeX (booktabs) for a paper.

Every table command builds its cells once, as text (rounded and scaled as the command's
rules say), and writes them as a Markdown table (:func:`markdown_table`); ``--format
latex`` passes that text through :func:`as_format`, which turns each Markdown table into
a booktabs ``tabular`` (:func:`latex_table`) and each line between tables into a LaTeX
comment. So a LaTeX table holds exactly the cells of the Markdown one, for every command.

>>> print(as_format("| a | b |\\n|---|---|\\n| x_1 | 0.500 ± 0.010 |", "latex"))
\\begin{tabular}{ll}
\\toprule
a & b \\\\
\\midrule
x\\_1 & 0.500 \\ensuremath{\\pm} 0.010 \\\\
\\bottomrule
\\end{tabular}
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: The text formats of :func:`as_format` (a command with its own CSV or JSON adds those).
TEXT_FORMATS = ("md", "latex")

# Characters the tables print that pdflatex's default UTF-8 input does not know (or knows
# only in text mode): each as the command that draws it, after LaTeX's own escaping.
_UNICODE = {
    "±": r"\ensuremath{\pm}",
    "‖": r"\ensuremath{\Vert}",
    "≥": r"\ensuremath{\geq}",
    "≤": r"\ensuremath{\leq}",
    "×": r"\ensuremath{\times}",
    "−": "-",
    "†": r"\ensuremath{\dagger}",
    "…": r"\ldots{}",
    "→": r"\ensuremath{\rightarrow}",
}


#: How :func:`mean_label` names the values of a key it averages over.
_PLURALS = {"model": "models", "k": "shot counts", "task": "tasks", "checkpoint": "checkpoints",
            "seed": "seeds", "metric": "metrics"}  # fmt: skip


def mean_label(count: int, over: str) -> str:
    """The label of a row or column that averages ``count`` values of one key ``over``:
    it says what it averages, and the one rule of every table's Average (a mean over one
    named dimension, never over k, seeds or kinds of model pooled without a word).

    >>> mean_label(3, "model"), mean_label(1, "model"), mean_label(2, "domain")
    ('mean of 3 models', 'mean of 1 model', 'mean of 2 domain values')
    """
    if count == 1:
        return f"mean of 1 {over}"
    return f"mean of {count} {_PLURALS.get(over, over + ' values')}"


def markdown_table(head: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table: a header, the rule, one line per row of cells.

    >>> markdown_table(["a", "b"], [["1", "2"]])
    ['| a | b |', '|---|---|', '| 1 | 2 |']
    >>> markdown_table(["model"], [["a|b"]])[2]
    '| a\\\\|b |'
    """

    # A "|" inside a cell (a model named a|b) is escaped: else it splits the cell, in
    # Markdown and in as_format's reading of the table.
    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return [row(head), "|" + "---|" * len(head), *(row(cells) for cells in body)]


def latex_table(head: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    """A booktabs ``tabular`` (``\\toprule``, ``\\midrule``, ``\\bottomrule``; the
    preamble needs ``\\usepackage{booktabs}``) of text cells, LaTeX's special characters
    escaped, written by pandas' ``Styler.to_latex``. Columns are left-aligned: a cell is
    text (``0.500 ± 0.010``), not a number to align on its point.

    >>> print(latex_table(["model", "F1 %"], [["a&b", "50.0"]]))
    \\begin{tabular}{ll}
    \\toprule
    model & F1 \\% \\\\
    \\midrule
    a\\&b & 50.0 \\\\
    \\bottomrule
    \\end{tabular}
    """
    import pandas as pd  # heavy: loaded on first use

    rows = [[str(c) for c in cells] for cells in body]
    frame = pd.DataFrame(rows, columns=[str(h) for h in head], dtype=object)
    styler = frame.style.hide(axis="index").format(escape="latex")
    styler = styler.format_index(escape="latex", axis="columns")
    text = str(styler.to_latex(hrules=True, column_format="l" * len(head)))
    # pandas escapes LaTeX's special characters; the Unicode ones are left to us, and
    # none of them is part of the LaTeX pandas writes.
    for char, command in _UNICODE.items():
        text = text.replace(char, command)
    return text.rstrip("\n")


_CELL = re.compile(r"(?<!\\)\|")


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in _CELL.split(inner)]


def as_format(text: str, fmt: str) -> str:
    """``text`` (Markdown tables and lines between them, as a command prints them) in
    ``fmt``: ``md`` as it is; ``latex``, each table as :func:`latex_table` and each other
    non-empty line as a ``%`` comment (a heading, a note under a table), so the whole
    output can be pasted into a document.

    >>> print(as_format("Scores\\n\\n| a |\\n|---|\\n| 1 |", "latex").splitlines()[:3])
    ['% Scores', '', '\\\\begin{tabular}{l}']
    """
    if fmt == "md":
        return text
    if fmt != "latex":
        raise ValueError(f"unknown table format {fmt!r}: {' or '.join(TEXT_FORMATS)}")
    out: list[str] = []
    table: list[str] = []

    def flush() -> None:
        if table:
            # The line under the heading is Markdown's rule (|---|), no row of cells.
            ruled = len(table) > 1 and set(table[1].replace("|", "").strip()) <= set("-: ")
            head = _cells(table[0])
            body = [_cells(line) for line in table[(2 if ruled else 1) :]]
            out.append(latex_table(head, body))
            table.clear()

    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        flush()
        out.append(f"% {line}" if line.strip() else "")
    flush()
    return "\n".join(out)
