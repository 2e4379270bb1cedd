"""Inputs past their bounds, read by the report commands and the readers below them: a
FIFO, JSON 100,000 levels deep, a NaN position or a pattern that is no regular
expression given to ``figure dynamics``; a field holding a JSON object to ``breakdown
--by``; a run folder's results.json nested deep; a reading formula with box nested
3,000 deep, a YAML alias bomb in its description or a reading file of 4 GB without a
newline; an exemplar file of 4 GB without a newline; a corpus line of deep JSON.

Every case but the corpus line is an error (one line naming the file or flag, nothing
written); a corpus line that cannot be read is skipped with a warning, as any bad line.
The 4 GB files are sparse: they take no disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from reliability_kit import Case, sci_task, write

DEEP = "[" * 100_000 + "]" * 100_000


def _sparse(path: Path, head: bytes = b"") -> str:
    """``head``, then zero bytes up to 4 GB, no line break: no disk used."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.write(head)
        f.truncate(4 << 30)
    return str(path)


def _fifo(path: Path) -> str:
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def _dynamics(flag: str, value: Callable[[Path], str]) -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        out = d / f"dyn_{abs(hash(flag + str(value)))}.png"
        return ["figure", "dynamics", str(d / "good_run"), "--out", str(out), flag, value(d)]

    return argv


def _genre_object(d: Path) -> list[str]:
    """A copy of the good run whose second record's genre is a JSON object."""
    bad = d / "bad_genre"
    bad.mkdir(exist_ok=True)
    good = d / "good_run"
    for f in ("config.json", "results.json"):
        (bad / f).write_bytes((good / f).read_bytes())
    rows = [json.loads(x) for x in (good / "records.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):
        row.setdefault("meta", {})["genre"] = {"name": "fiction"} if i == 1 else "fiction"
    (bad / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ["breakdown", str(bad), "--by", "genre"]


def _deep_results(d: Path) -> list[str]:
    bad = d / "bad_deep_results"
    bad.mkdir(exist_ok=True)
    for f in ("config.json", "records.jsonl"):
        (bad / f).write_bytes((d / "good_run" / f).read_bytes())
    (bad / "results.json").write_text(DEEP)
    return ["report", str(bad)]


def _reading(name: str, e: str, extra: str = "") -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        path = write(d / f"{name}.yaml", f"name: R\nE: '{e}'\nC: a -> ~b\nN: a & ~a\n{extra}")
        return ["logic", "conclude", "Eab", "ba", "--reading", str(path)]

    return argv


def _alias_bomb() -> str:
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        levels.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(levels) + "\ndescription: *i\n"


def cases(model: str, bert: str) -> list[Case]:
    del bert
    return [
        Case(
            "figure", "positions a FIFO", _dynamics("--positions", lambda d: _fifo(d / "pos.fifo"))
        ),
        Case(
            "figure",
            "positions nested 100,000 deep",
            _dynamics("--positions", lambda d: str(write(d / "pos_deep.json", DEEP))),
        ),
        Case(
            "figure",
            "a NaN position",
            _dynamics(
                "--positions",
                lambda d: str(write(d / "pos_nan.json", '{"a": 1, "b": NaN}')),
            ),
        ),
        Case("figure", "pattern '('", _dynamics("--pattern", lambda d: "(")),
        Case("breakdown", "genre a JSON object", _genre_object),
        Case("report", "results.json nested 100,000 deep", _deep_results),
        Case(
            "logic",
            "box nested 3,000 deep",
            _reading("deep", "box(" * 3000 + "a -> b" + ")" * 3000),
        ),
        Case("logic", "YAML alias bomb in description", _reading("bomb", "a -> b", _alias_bomb())),
        Case(
            "logic",
            "reading of 4 GB without newline",
            lambda d: ["logic", "conclude", "Eab", "ba", "--reading", _sparse(d / "big.yaml")],
        ),
        Case(
            "instruct",
            "exemplars of 4 GB without newline",
            lambda d: [
                "instruct",
                "--model",
                model,
                "--task",
                sci_task(d, "bx"),
                "--exemplars",
                _sparse(d / "ex_big.jsonl"),
                "--shots",
                "4",
                "--out",
                str(d / "bx_out"),
                "--no-progress",
            ],
        ),
        Case(
            "contamination",
            "corpus line nested 100,000 deep",
            lambda d: [
                "contamination",
                "--task",
                "smoke",
                "--corpus",
                str(write(d / "deep_corpus.jsonl", '{"text": "a b c"}\n{"text": ' + DEEP + "}\n")),
                "--out",
                str(d / "c_deep.jsonl"),
                "--workers",
                "1",
            ],
            expect="warning",
        ),
    ]
