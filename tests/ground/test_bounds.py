"""The ground floor's bounds on input: JSON too deep, whole files too large or not
regular (a FIFO), lines without end, YAML aliases. Each is one DataError line naming the
file (and line), raised quickly, never a RecursionError, a MemoryError or a hang."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from nlieval import ground
from nlieval.ground import DataError, load_yaml, parse_json, read_json, read_jsonl

DEEP = "[" * 100_000 + "]" * 100_000


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text
    return text


def test_parse_json_deeper_than_the_decoder_is_one_line() -> None:
    with pytest.raises(DataError, match="nested too deeply") as got:
        parse_json(DEEP, "answer of item 3")
    assert _one_line(got.value).startswith("answer of item 3: ")
    # A depth the decoder follows is read as usual (50 levels of lists around a 1).
    value = parse_json("[" * 50 + "1" + "]" * 50, "x")
    for _ in range(50):
        value = value[0]
    assert value == 1


def test_a_jsonl_line_nested_deep_names_its_line_and_reading_goes_on() -> None:
    rows = [b'{"a": 1}\n', ('{"a": ' + DEEP + "}\n").encode(), b'{"a": 3}\n']
    got = list(read_jsonl("c.jsonl", rows, errors="yield"))
    assert [g.value["a"] for g in got if not isinstance(g, DataError)] == [1, 3]
    (bad,) = [g for g in got if isinstance(g, DataError)]
    assert bad.line == 2 and "nested too deeply" in _one_line(bad)


def test_read_json_refuses_a_fifo_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "positions.json"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="not a regular file \\(a FIFO\\)") as got:
        read_json(fifo)
    assert str(fifo) in _one_line(got.value)


def test_read_json_bounds_size_and_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text('{"a": 1,\n "b": }\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"t\.json:2: invalid JSON"):
        read_json(p)
    p.write_text('{"a": "' + "x" * 200 + '"}', encoding="utf-8")
    with pytest.raises(DataError, match="larger than 100 bytes"):
        read_json(p, 100)
    p.write_text('{"a": 1e400}', encoding="utf-8")
    assert read_json(p) == {"a": float("inf")}  # as json reads it, unless asked
    with pytest.raises(DataError, match="field 'a': 1e400 is not a finite number"):
        read_json(p, finite=True)


def test_a_line_without_end_is_refused_after_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"a": 1}\n' + b"x" * 5000)  # no newline: a line of 5,000 bytes
    monkeypatch.setattr(ground.jsonl, "MAX_LINE_BYTES", 1000)
    got = read_jsonl(p, errors="yield")
    assert next(got).value == {"a": 1}
    with pytest.raises(DataError, match="c.jsonl:2: a line longer than 1,000 bytes"):
        next(got)
    # The same from an open text file (the data readers' way).
    with pytest.raises(DataError, match="longer than 1,000 characters"):
        list(read_jsonl("t.jsonl", io.StringIO("y" * 2000)))


def test_a_sparse_4_gb_file_without_newline_is_one_line(tmp_path: Path) -> None:
    # 4 GB of zero bytes takes no disk: the reader stops at its 64 MiB line bound.
    p = tmp_path / "big.jsonl"
    with p.open("wb") as f:
        f.truncate(4 << 30)
    with pytest.raises(DataError, match=r"big\.jsonl:1: a line longer than 67,108,864 bytes"):
        list(read_jsonl(p))


def test_load_yaml_refuses_aliases_and_deep_nesting() -> None:
    bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\ndescription: [*c, *c]\n"
    # The first alias, *a, is on line 2.
    with pytest.raises(DataError, match=r"r\.yaml:2: invalid YAML: aliases") as got:
        load_yaml(bomb, "r.yaml")
    _one_line(got.value)
    with pytest.raises(DataError, match="r.yaml"):
        load_yaml("a: " + "[" * 50_000, "r.yaml")
    assert load_yaml("name: x\nE: box a\n", "r.yaml") == {"name": "x", "E": "box a"}
