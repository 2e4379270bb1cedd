"""A user's own data: a data file given as ``--task``, the ids a file names itself, and
the warning when a selection of items is far from the task's label balance."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from nlieval.cli import main
from nlieval.data import (
    TASKS,
    DataError,
    ItemSelection,
    get_task,
    label_imbalance,
    load_task,
    read_items,
)
from nlieval.data.parsers import MappedParser
from nlieval.types import NLI3, Item, Label

ROWS = [
    {"id": "cat-1", "premise": "A cat naps.", "hypothesis": "A cat rests.", "label": "entailment"},
    {"id": "cat-2", "premise": "A cat naps.", "hypothesis": "A dog barks.", "label": "neutral"},
    {"id": "cat-3", "premise": "A cat naps.", "hypothesis": "A cat runs.", "label": "e"},
]


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        text = "".join(json.dumps(r) + "\n" for r in rows)
    else:
        sep = "," if ".csv" in path.name else "\t"
        keys = list(rows[0])
        text = sep.join(keys) + "\n" + "".join(sep.join(r[k] for k in keys) + "\n" for r in rows)
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["mine.jsonl", "mine.csv", "mine.tsv", "mine.jsonl.gz"])
def test_a_data_file_is_a_task_with_its_own_ids(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path / name, ROWS)
    spec = get_task(str(path))
    assert (spec.name, spec.labels, spec.family, spec.default_split) == (
        "mine",
        NLI3,
        "nli3",
        "test",
    )
    ds = load_task(str(path))
    assert [it.id for it in ds.items] == ["cat-1", "cat-2", "cat-3"]
    assert [it.label for it in ds.items] == [Label.ENTAILMENT, Label.NEUTRAL, Label.ENTAILMENT]
    assert ds.items[1].hypothesis == "A dog barks."


def test_a_data_file_without_ids_is_numbered_by_line(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "id"} for r in ROWS]
    # CSV: the header is line 1, so the rows are lines 2 to 4.
    assert [it.id for it in load_task(str(_write(tmp_path / "a.jsonl", rows))).items] == [
        "1",
        "2",
        "3",
    ]
    assert [it.id for it in load_task(str(_write(tmp_path / "b.csv", rows))).items] == [
        "2",
        "3",
        "4",
    ]


def test_stats_and_an_unknown_task_name_the_data_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "mine.jsonl", ROWS)
    assert main(["stats", "--task", str(path)]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if line.startswith("mine")][0]
    assert "entailment=2 neutral=1 contradiction=0" in row
    assert main(["stats", "--task", str(tmp_path / "none.jsonl")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"nlieval: error: {tmp_path / 'none.jsonl'}: no such file (a data file named as a task)"
    )
    with pytest.raises(DataError, match=r"a task YAML file or of a data file \(\.jsonl"):
        get_task("no-such-task")


def _yaml(tmp_path: Path, fields: str) -> str:
    _write(tmp_path / "d.jsonl", ROWS)
    yml = tmp_path / "t.yaml"
    yml.write_text(f"path: d.jsonl\nlabels: [entailment, neutral, contradiction]\n{fields}")
    return str(yml)


def test_a_task_yaml_keeps_the_files_ids_unless_told_to_number_lines(tmp_path: Path) -> None:
    assert [it.id for it in load_task(_yaml(tmp_path, "")).items] == ["cat-1", "cat-2", "cat-3"]
    numbered = load_task(_yaml(tmp_path, "fields: {id: null}\n"))
    assert [it.id for it in numbered.items] == ["1", "2", "3"]
    named = load_task(_yaml(tmp_path, "fields: {id: hypothesis}\n"))
    assert [it.id for it in named.items] == ["A cat rests.", "A dog barks.", "A cat runs."]


def test_repeated_or_empty_ids_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dup = _write(tmp_path / "dup.jsonl", [ROWS[0], ROWS[1], {**ROWS[2], "id": "cat-1"}])
    with pytest.raises(DataError) as err:
        load_task(str(dup))
    assert str(err.value) == f"{dup}:3: id 'cat-1' is the id of line 1 too: ids must be unique"
    empty = _write(tmp_path / "empty.csv", [ROWS[0], {**ROWS[1], "id": " "}])
    assert main(["stats", "--task", str(empty)]) == 2
    assert capsys.readouterr().err.strip() == f"nlieval: error: {empty}:3: field 'id': empty id"
    # --skip-bad skips the line and counts it.
    ds = load_task(str(dup), skip_bad=True)
    assert ([it.id for it in ds.items], ds.skipped_bad) == (["cat-1", "cat-2"], 1)
    # An id field the task YAML names is held to the same rule.
    with pytest.raises(DataError, match=r"d\.jsonl:2: id 'A cat naps\.' is the id of line 1"):
        load_task(_yaml(tmp_path, "fields: {id: premise}\n"))
    with pytest.raises(DataError, match=r"dup\.jsonl:3: id 'cat-1'"):
        read_items(dup)


def test_built_in_tasks_number_their_ids_as_before() -> None:
    # Only user data reads a row's own "id" unasked, and only user data refuses a
    # repeated id (official files get #n suffixes); a built-in task's parsers are as
    # they were: the id field they name, or the line number.
    for spec in TASKS.values():
        parsers = [rule.parser for rules in spec.splits.values() for rule in rules]
        parsers += [spec.hub.parser] if spec.hub else []
        for parser in parsers:
            if isinstance(parser, MappedParser):
                assert parser.fields.id_if_present is None, spec.name
                assert not parser.strict_ids, spec.name
    assert [it.id for it in load_task("smoke").items[:2]] == ["smoke-01", "smoke-02"]


# ------------------------------------------------------------------ label balance


def _items(labels: str) -> list[Item]:
    by_letter = {"e": Label.ENTAILMENT, "n": Label.NEUTRAL, "c": Label.CONTRADICTION}
    return [Item(str(i), "p", "h", by_letter[x]) for i, x in enumerate(labels)]


def test_label_imbalance_rule() -> None:
    split = _items("enc" * 10)  # 10 of each
    assert label_imbalance(NLI3, split, split) is None
    assert label_imbalance(NLI3, split, _items("ee")) == "no item labelled neutral, contradiction"
    # 5/12 e, 5/12 n, 2/12 c: 1/6 is exactly half of 1/3, not below it.
    assert label_imbalance(NLI3, split, _items("eeeeennnnncc")) is None
    # 6/13 e, 6/13 n, 1/13 c: 7.7% < 16.7%.
    assert (
        label_imbalance(NLI3, split, _items("eeeeeennnnnnc"))
        == "contradiction is 8% of the items, 33% of the split"
    )
    # The split's own balance is the reference: 20 e, 2 n, 2 c, and 9 e + 1 n + 1 c is close.
    skewed = _items("e" * 20 + "nncc")
    assert label_imbalance(NLI3, skewed, _items("e" * 9 + "nc")) is None
    # Unlabelled items are never said to be unbalanced.
    blank = [Item("1", "p", "h", None)]
    assert label_imbalance(NLI3, blank, blank) is None


def test_choose_warns_once_with_counts_and_the_stratified_flag(
    caplog: pytest.LogCaptureFixture,
) -> None:
    split = _items("e" * 6 + "n" * 6 + "c" * 6)  # sorted by label, as SciNLI's files
    with caplog.at_level(logging.WARNING, logger="nlieval.data"):
        chosen = ItemSelection(limit=5).choose(split, NLI3, "mine test")
    assert [it.id for it in chosen] == ["0", "1", "2", "3", "4"]
    assert [r.getMessage() for r in caplog.records] == [
        "mine test: --limit 5 takes the first 5 items, labelled entailment=5 neutral=0 "
        "contradiction=0 (the split: entailment=6 neutral=6 contradiction=6): no item "
        "labelled neutral, contradiction; --sample 5 takes a seeded sample stratified by label"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="nlieval.data"):
        ItemSelection(sample=6).choose(split, NLI3, "mine test")  # 2 of each: balanced
        ItemSelection(limit=100).choose(split, NLI3, "mine test")  # the whole split
    # No imbalance warning for either; the short split is said (6 + 6 + 6 = 18 items).
    assert [r.getMessage() for r in caplog.records] == [
        "mine test: --limit 100 asks for 100 items, it has 18: all 18 are used"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="nlieval.data"):
        ItemSelection(sample=2).choose(split, NLI3, "mine test")
        ItemSelection().choose(split[:12], NLI3, "two test")
    assert [r.getMessage().split(": ")[1] for r in caplog.records] == [
        # 2 of 3 equal labels: the largest remainders tie, and the alphabetical first win.
        "--sample 2 (stratified by label) takes 2 items, labelled entailment=1 neutral=0 "
        "contradiction=1 (the split",
        "all 12 items, labelled entailment=6 neutral=6 contradiction=0",
    ]
