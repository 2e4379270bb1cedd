"""Reading files and formulas past their bounds: box nested 3,000 deep (the decision
procedures ran for minutes), a YAML alias bomb in a description, a reading file of 4 GB
without a newline, a FIFO. Each is refused at once with one line naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nlieval.cli import main
from nlieval.metainference import logic


def _reading(tmp_path: Path, e: str, extra: str = "") -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(f"name: R\nE: '{e}'\nC: a -> ~b\nN: a & ~a\n{extra}", encoding="utf-8")
    return path


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("nlieval: error: ")
    return err


def test_box_nested_past_the_bound_is_refused_by_the_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = "box(" * 3000 + "a -> b" + ")" * 3000
    bound = logic.MAX_MODAL_DEPTH
    with pytest.raises(logic.LogicError, match="nested more than 100 deep"):
        logic.parse(deep, bound)
    # dia and box count alike; ~ and parentheses do not (5,000 of them still parse).
    # 100 two-character operators fill columns 1-200: the 101st, dia, is at column 201.
    with pytest.raises(logic.LogicError, match="column 201"):
        logic.parse("[]<>" * 50 + "dia a", bound)
    assert logic.modal_depth(logic.parse("box " * 100 + "a", bound)) == 100
    assert logic.modal_depth(logic.parse("~" * 5000 + "(" * 50 + "box a" + ")" * 50, bound)) == 1
    # Siblings are not nested: 300 boxes side by side are depth one.
    assert logic.modal_depth(logic.parse(" & ".join(["box a"] * 300), bound)) == 1
    # Without a bound (the decision procedures' own input) the depth is any.
    assert logic.modal_depth(logic.parse(deep)) == 3000
    path = _reading(tmp_path, deep)
    err = _one_line_error(capsys, ["logic", "conclude", "Eab", "ba", "--reading", str(path)])
    assert str(path) in err and "box and dia nested more than 100 deep" in err


def test_alias_bomb_in_a_description_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        levels.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    path = _reading(tmp_path, "a -> b", "\n".join(levels) + "\ndescription: *i\n")
    err = _one_line_error(capsys, ["logic", "conclude", "Eab", "ba", "--reading", str(path)])
    assert f"{path}:6: invalid YAML: aliases (*name) are not allowed" in err


def test_a_4_gb_reading_file_and_a_fifo_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as f:
        f.truncate(4 << 30)  # sparse: no disk used, no line break
    err = _one_line_error(capsys, ["logic", "conclude", "Eab", "ba", "--reading", str(big)])
    assert f"{big}: larger than 1,048,576 bytes" in err
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    err = _one_line_error(capsys, ["logic", "conclude", "Eab", "ba", "--reading", str(fifo)])
    assert f"{fifo}: not a regular file (a FIFO)" in err
