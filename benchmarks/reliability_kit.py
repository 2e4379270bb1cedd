"""What the case files of ``benchmarks/reliability.py`` share: the case type and file makers.

A case file (``reliability_<class>.py``) defines ``cases(model, bert) -> list[Case]``;
``reliability.py`` runs every case file's cases after its own. ``model`` is a tiny random
Llama folder and ``bert`` a tiny random BERT folder, both built by ``reliability.py``.
An ``argv`` callable gets the scratch folder ``d`` (shared by all cases: make names unique)
and may do set-up work itself, such as a first invocation through :func:`invoke`, before it
returns the argv whose outcome is classed. A case whose right outcome is exit 0 without a
word cannot be written here: every case is hostile or broken input.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LABELS3 = "[entailment, neutral, contradiction]"


@dataclass(frozen=True)
class Case:
    """One hostile input: ``expect`` is ``error`` (exit != 0 with one line) or ``warning``
    (exit 0 with a WARNING line naming the file: going on is the right answer).
    ``lost``, when given, is asked after the command (with the scratch folder): True when
    files that were not the command's to write changed (counted as data lost)."""

    command: str
    name: str
    argv: Callable[[Path], list[str]]
    expect: str = "error"
    lost: Callable[[Path], bool] | None = None


def write(path: Path, text: str | bytes) -> Path:
    """Write ``text`` to ``path`` (parents made) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def rows(labels: list[str], n: int, prefix: str, premise: str, hypothesis: str) -> str:
    """``n`` JSONL rows with ``labels`` in turn; ``premise`` may hold ``{i}``."""
    return "".join(
        json.dumps(
            {
                "id": f"{prefix}{i}",
                "premise": premise.format(i=i),
                "hypothesis": hypothesis,
                "label": labels[i % len(labels)],
            }
        )
        + "\n"
        for i in range(n)
    )


def nli_rows(n: int = 8, prefix: str = "i") -> str:
    """``n`` JSONL rows of a three-label NLI task, labels in turn."""
    return rows(
        ["entailment", "neutral", "contradiction"], n, prefix, "A man walks {i}.", "A man moves."
    )


def task(d: Path, data: str | bytes, extra: str = "", name: str = "t") -> str:
    """A task YAML ``d/name.yaml`` over the data file ``d/name.jsonl``; returns its path."""
    write(d / f"{name}.jsonl", data)
    return str(write(d / f"{name}.yaml", f"path: {name}.jsonl\nlabels: {LABELS3}\n{extra}"))


def invoke(argv: list[str], cwd: Path | None = None) -> tuple[int, str]:
    """Run ``nlieval.cli.main(argv)`` here for a case's set-up step; (exit status, stderr).

    A set-up step that fails makes the case meaningless, so callers usually assert rc 0.
    """
    from nlieval.cli import main as cli_main

    err = io.StringIO()
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    root = logging.getLogger()
    handlers = root.handlers
    root.handlers = [logging.StreamHandler(err)]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                rc = cli_main(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
    finally:
        root.handlers = handlers
        os.chdir(old)
    return int(rc or 0), err.getvalue()


SCI4 = "[contrasting, reasoning, entailment, neutral]"


def sci_task(d: Path, name: str = "sci", n: int = 16, extra: str = "") -> str:
    """A four-label SciNLI-like task ``d/name.yaml`` of ``n`` rows (labels in turn)."""
    labs = ["contrasting", "reasoning", "entailment", "neutral"]
    data = rows(labs, n, "s", "We train model {i}.", "It works.")
    write(d / f"{name}.jsonl", data)
    return str(write(d / f"{name}.yaml", f"path: {name}.jsonl\nlabels: {SCI4}\n{extra}"))
