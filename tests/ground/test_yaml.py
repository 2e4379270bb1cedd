"""YAML, read in one place (:func:`nlieval.ground.load_yaml`): a key given twice is one
line naming the file, the line and the key, in every file nlieval reads as YAML (prompt
files, task files, reading files); aliases are refused; nothing else changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlieval.data import DataError, load_task
from nlieval.ground import load_yaml
from nlieval.metainference import logic
from nlieval.metainference.logic import LogicError
from nlieval.sci import instruct_prompt as ip


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        ("a: 1\nb: 2\na: 3\n", 3, "a"),
        ("outer:\n  x: 1\n  y: 2\n  x: 1\n", 4, "x"),  # nested, even with the same value
        ("- {k: 1, k: 2}\n", 1, "k"),  # in a flow mapping inside a list
        ("yes: 1\ntrue: 2\n", 2, "True"),  # two spellings of one key (both are True)
        ("1: a\n0x1: b\n", 2, "1"),
    ],
)
def test_a_key_given_twice_is_one_line(text: str, line: int, key: str) -> None:
    with pytest.raises(DataError) as err:
        load_yaml(text, "f.yaml")
    assert (err.value.path, err.value.line, err.value.field) == ("f.yaml", line, key)
    assert "given twice" in str(err.value) and "\n" not in str(err.value)


def test_what_yaml_allows_is_read_as_before() -> None:
    text = "a: {x: 1}\nb: {x: 2}\nc: [1, 1]\nd: 'a: 1'\n"
    assert load_yaml(text, "f.yaml") == {"a": {"x": 1}, "b": {"x": 2}, "c": [1, 1], "d": "a: 1"}
    with pytest.raises(DataError, match=r"f\.yaml:2: invalid YAML: aliases"):
        load_yaml("a: &x 1\nb: *x\n", "f.yaml")
    with pytest.raises(DataError, match="nested too deeply"):
        load_yaml("[" * 5000 + "]" * 5000, "f.yaml")


def test_a_prompt_file_with_user_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "kind: instruct\nsystem: S.\nuser: '{{ premise }} / {{ hypothesis }}'\n"
        "assistant: '{{ name }}'\nuser: Classify this pair.\n"
    )
    with pytest.raises(DataError) as err:
        ip.InstructPrompt.load(path)
    assert str(err.value) == f"{path}:5: field 'user': given twice (first on line 3)"


def test_a_task_file_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"p": "A.", "h": "B.", "l": "entailment"}\n')
    path = tmp_path / "t.yaml"
    path.write_text("path: d.jsonl\nfields: {premise: p, hypothesis: h, label: l, premise: h}\n")
    with pytest.raises(DataError) as err:
        load_task(str(path))
    assert (err.value.line, err.value.field) == (2, "premise")


def test_a_reading_file_with_a_key_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("name: X\nE: a\nC: b\nN: a\nE: b\n")
    with pytest.raises(LogicError) as err:
        logic.load_reading(path)
    assert f"{path}:5: field 'E': given twice (first on line 2)" == str(err.value)
