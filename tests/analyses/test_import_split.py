"""``nlieval import`` against a split other than the task's default (``--split``, or
``--task NAME@SPLIT`` as ``train`` reads it), and the folder's tasks recorded in its
``config.json`` so that ``items`` (and ``view``) join the items' texts, also where the
file names its task (Baan et al.)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.cli import build_parser, main
from nlieval.data import load_task
from tests.helpers.records import saved_records


def _train_labels(tmp_path: Path) -> Path:
    # Labels for three items of the packaged smoke task's train split (its default split
    # is test, whose ids differ).
    path = tmp_path / "smoke-train.csv"
    path.write_text("id,pred\nsmoke-train-01,entailment\nsmoke-train-02,neutral\n"
                    "smoke-train-03,contradiction\n")  # fmt: skip
    return path


@pytest.mark.parametrize(
    "flags", [["--task", "smoke@train"], ["--task", "smoke", "--split", "train"]]
)
def test_predictions_for_another_split_import_against_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    out = tmp_path / "run"
    argv = ["import", str(_train_labels(tmp_path)), "--format", "labels", "--model", "m"]
    assert main([*argv, *flags, "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert (config["task"], config["split"], config["tasks"]) == ("smoke", "train", ["smoke"])
    capsys.readouterr()
    assert main(["items", str(out), "--ids", "smoke-train-01"]) == 0
    premise = load_task("smoke", None, "train").items[0].premise
    assert f"| {premise} |" in capsys.readouterr().out


def test_predictions_for_another_split_are_refused_naming_the_flag_that_helps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["import", str(_train_labels(tmp_path)), "--format", "labels", "--model", "m"]
    assert main([*argv, "--task", "smoke", "--out", str(tmp_path / "run")]) != 0
    said = capsys.readouterr().err
    assert "split test" in said and "--split" in said
    # The flags it names are flags of `import`.
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["import"]
    known = {s for a in sub._actions for s in a.option_strings}
    assert {"--split", "--task"} <= known
    assert (
        main([*argv, "--task", "smoke@train", "--split", "test", "--out", str(tmp_path / "r")]) != 0
    )
    assert "name two splits" in capsys.readouterr().err


def test_a_file_that_names_its_task_joins_the_task_texts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A Baan et al. file names its task by its file name (SNLI -> chaosnli_snli); a
    # ChaosNLI set of one item stands in for the official one.
    data = tmp_path / "data"
    data.mkdir()
    example = {"premise": "A man naps.", "hypothesis": "He sleeps."}
    row = {"uid": "u1", "example": example, "label_count": [50, 50, 0],
           "majority_label": "e", "old_label": "n", "entropy": 1.0}  # fmt: skip
    (data / "chaosNLI_snli.jsonl").write_text(json.dumps(row))
    baan = tmp_path / "SNLI_dev_roberta-base_0.jsonl"
    baan.write_text('{"uid": "u1", "probs": [0.5, 0.3, 0.2], "pred": 0}\n')
    out = tmp_path / "run"
    assert main(["import", str(baan), "--data-dir", str(data), "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["tasks"] == ["chaosnli_snli"]
    capsys.readouterr()
    assert main(["items", str(out), "--data-dir", str(data)]) == 0
    assert "| A man naps. | He sleeps. |" in capsys.readouterr().out


def _test_labels(tmp_path: Path) -> Path:
    # Labels for two items of the smoke task's test split (its default).
    path = tmp_path / "smoke-test.csv"
    path.write_text("id,pred\nsmoke-01,entailment\nsmoke-02,neutral\n")
    return path


@pytest.mark.parametrize(
    "second",
    [["--task", "smoke@test"], ["--task", "smoke"], ["--task", "smoke", "--split", "test"]],
)
def test_a_folder_holds_one_split_another_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], second: list[str]
) -> None:
    # Before: the test split's records joined the train split's in one point (n=5), and
    # config.json kept only the last split, so `items` read the train ids from test.
    out = tmp_path / "run"
    argv = ["--format", "labels", "--model", "m", "--out", str(out)]
    assert main(["import", str(_train_labels(tmp_path)), *argv, "--task", "smoke@train"]) == 0
    before = (out / "records.jsonl").read_text()  # by hand: bytes
    capsys.readouterr()
    assert main(["import", str(_test_labels(tmp_path)), *argv, *second]) != 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(out) in line and "split train" in line and "split test" in line
    assert "--out" in line
    assert json.loads((out / "config.json").read_text())["split"] == "train"
    assert (out / "records.jsonl").read_text() == before


@pytest.mark.parametrize("first", [["--task", "smoke"], ["--task", "smoke@test"]])
def test_the_same_split_named_either_way_is_added_to(tmp_path: Path, first: list[str]) -> None:
    # No --split is the task's default split (test): the same items as smoke@test.
    out = tmp_path / "run"
    argv = ["--format", "labels", "--model", "m", "--out", str(out)]
    assert main(["import", str(_test_labels(tmp_path)), *argv, *first]) == 0
    more = tmp_path / "more.csv"
    more.write_text("id,pred\nsmoke-03,contradiction\n")
    assert main(["import", str(more), *argv, "--task", "smoke", "--split", "test"]) == 0
    assert len(saved_records(out)) == 3
