"""The formats of a printed table: Markdown, LaTeX (booktabs) for a paper, CSV, JSON.

Every table command builds its tables once, as values (:class:`Table` of :class:`Cell`:
the text a cell prints, rounded and scaled as the command's rules say, and the number
behind it), and :func:`render` writes them in each format. So a LaTeX table holds exactly
the cells of the Markdown one, for every command, and no rendered text is read back.

>>> print(render(Table.of(["a", "b"], [["x_1", Cell("0.500 ± 0.010", 0.5)]]), "latex"))
\\begin{tabular}{ll}
\\toprule
a & b \\\\
\\midrule
x\\_1 & 0.500 \\ensuremath{\\pm} 0.010 \\\\
\\bottomrule
\\end{tabular}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: The text formats every table command writes (a command with its own CSV or JSON adds
#: those).
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
    # Markdown.
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


# --- Tables as values -------------------------------------------------------------
#
# A report is built once as values (Table and lines of text) and written by one renderer
# per format; no rendered text is ever read back into cells.

#: The formats :func:`render` writes.
FORMATS = ("md", "latex", "csv", "json")


@dataclass(frozen=True)
class Cell:
    """A table cell: ``text``, as the command prints it (rounded, scaled, ``0.500 ±
    0.010``, ``n/a``), and ``value``, the number behind it (None: a cell of text only),
    which the JSON rendering keeps so that no reader parses a number back from text.

    >>> Cell("50.0", 0.5)
    Cell(text='50.0', value=0.5)
    """

    text: str
    value: float | None = None


def cell(x: Cell | str | int | float | None) -> Cell:
    """``x`` as a :class:`Cell`: text as it is, a number as its text and value (a bool or
    None is text).

    >>> cell(3), cell("a"), cell(None)
    (Cell(text='3', value=3), Cell(text='a', value=None), Cell(text='', value=None))
    """
    if isinstance(x, Cell):
        return x
    if x is None:
        return Cell("")
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return Cell(str(x))
    return Cell(str(x), x)


@dataclass(frozen=True)
class Table:
    """A table as values: ``header``, ``rows`` of :class:`Cell`, the lines of text just
    before it (``title``) and just after it (``notes``), and its ``kind`` (a name a
    reader such as the view's page can tell a table by, "" none; written in JSON only).
    Build one with :meth:`of`.

    >>> t = Table.of(["model", "acc"], [["a|b", Cell("50.0", 0.5)]], title=["Scores:"])
    >>> t.rows[0][1].value, len(t.header)
    (0.5, 2)
    """

    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    title: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    kind: str = ""

    @classmethod
    def of(
        cls,
        header: Sequence[str],
        rows: Iterable[Sequence[Cell | str | int | float | None]],
        title: Sequence[str] = (),
        notes: Sequence[str] = (),
        kind: str = "",
    ) -> Table:
        """A table from plain values (each cell through :func:`cell`)."""
        return cls(
            tuple(str(h) for h in header),
            tuple(tuple(cell(c) for c in r) for r in rows),
            tuple(title),
            tuple(notes),
            kind,
        )

    def texts(self) -> list[list[str]]:
        """The rows as the texts they print."""
        return [[c.text for c in r] for r in self.rows]


#: A report: tables and lines of text ("" a blank line), in the order they print.
Block = Table | str
Document = Sequence[Block]


def _blocks(doc: Table | Document) -> list[Block]:
    return [doc] if isinstance(doc, Table) else list(doc)


def _md(doc: list[Block]) -> str:
    lines: list[str] = []
    for b in doc:
        if isinstance(b, Table):
            lines += [*b.title, *markdown_table(b.header, b.texts()), *b.notes]
        else:
            lines.append(b)
    return "\n".join(lines)


def _latex(doc: list[Block]) -> str:
    def comment(line: str) -> str:
        return f"% {line}" if line.strip() else ""

    out: list[str] = []
    for b in doc:
        if isinstance(b, Table):
            out += [comment(t) for t in b.title]
            out.append(latex_table(b.header, b.texts()))
            out += [comment(t) for t in b.notes]
        else:
            out.append(comment(b))
    return "\n".join(out)


def _csv(doc: list[Block]) -> str:
    import csv
    import io

    # The tables only, one after another with a blank line between: text lines (titles,
    # notes) are not rows of any table. A cell prints its text, as in Markdown.
    parts = []
    for b in doc:
        if isinstance(b, Table):
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerow(b.header)
            writer.writerows(b.texts())
            parts.append(buf.getvalue().rstrip("\n"))
    return "\n\n".join(parts)


def _finite(value: float | None) -> float | None:
    # JSON has no NaN or infinity (Python would write NaN, which a browser refuses): a
    # number that is not finite is null, and its cell's text says what it is.
    return value if value is None or math.isfinite(value) else None


def blocks_json(doc: Table | Document) -> list[dict[str, object]]:
    """The JSON of a report (``--format json`` and the view's pages): each table with the
    text lines before it (``text``), its ``header``, its ``rows`` of texts, the numbers
    behind them (``values``, None for text) and its ``notes`` (and its ``kind``, where it
    has one); text after the last table is a block of ``text`` alone. Blank lines are
    left out.

    >>> first, last = blocks_json(["Title:", "", Table.of(["a"], [[0.5]]), "end"])
    >>> first
    {'text': ['Title:'], 'header': ['a'], 'rows': [['0.5']], 'values': [[0.5]], 'notes': []}
    >>> last
    {'text': ['end']}
    """
    out: list[dict[str, object]] = []
    text: list[str] = []
    for b in _blocks(doc):
        if isinstance(b, Table):
            out.append(
                {
                    "text": [*text, *(t.strip() for t in b.title if t.strip())],
                    "header": list(b.header),
                    "rows": b.texts(),
                    "values": [[_finite(c.value) for c in r] for r in b.rows],
                    "notes": [t.strip() for t in b.notes if t.strip()],
                    **({"kind": b.kind} if b.kind else {}),
                }
            )
            text = []
        elif b.strip():
            text.append(b.strip())
    if text:
        out.append({"text": text})
    return out


def render(doc: Table | Document, fmt: str) -> str:
    """``doc`` (a :class:`Table`, or tables and lines of text) written in ``fmt``: ``md``
    (Markdown tables, the lines as they are), ``latex`` (each table as
    :func:`latex_table`, each other non-empty line a ``%`` comment, so the whole output
    can be pasted into a document), ``csv`` (the tables alone) or ``json``
    (:func:`blocks_json`). The one writer of every printed table.

    >>> doc = ["Scores", "", Table.of(["a", "b"], [["x_1", Cell("0.500 ± 0.010", 0.5)]])]
    >>> print(render(doc, "md"))
    Scores
    <BLANKLINE>
    | a | b |
    |---|---|
    | x_1 | 0.500 ± 0.010 |
    >>> print(render(doc, "latex"))
    % Scores
    <BLANKLINE>
    \\begin{tabular}{ll}
    \\toprule
    a & b \\\\
    \\midrule
    x\\_1 & 0.500 \\ensuremath{\\pm} 0.010 \\\\
    \\bottomrule
    \\end{tabular}
    >>> print(render(doc, "csv"))
    a,b
    x_1,0.500 ± 0.010
    """
    blocks = _blocks(doc)
    if fmt == "md":
        return _md(blocks)
    if fmt == "latex":
        return _latex(blocks)
    if fmt == "csv":
        return _csv(blocks)
    if fmt == "json":
        import json

        return json.dumps(blocks_json(blocks), indent=1, ensure_ascii=False)
    raise ValueError(f"unknown table format {fmt!r}: {', '.join(FORMATS)}")
