"""An imported folder of a task YAML beside a run of the same task (issue 29): the records
carry the name the YAML declares, as a run's do, so ``grid`` puts both in one column and
``compare`` pairs them item by item, whatever directory the commands run from and however
each command was given the YAML's path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from tests.helpers.hash_lm import HashLM
from tests.helpers.records import saved_records

GOLD = {"p1": "entailment", "p2": "neutral", "p3": "contradiction", "p4": "entailment",
        "p5": "contradiction", "p6": "neutral"}  # fmt: skip
# Right on p1, p2, p3 and p5: 4 of 6.
PREDS = {"p1": "entailment", "p2": "neutral", "p3": "contradiction", "p4": "neutral",
         "p5": "contradiction", "p6": "entailment"}  # fmt: skip


@pytest.fixture()
def folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Path]:
    task = tmp_path / "task"
    task.mkdir()
    rows = [{"id": k, "premise": f"A cat {i} sits.", "hypothesis": f"An animal {i} waits.",
             "label": v} for i, (k, v) in enumerate(GOLD.items())]  # fmt: skip
    (task / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (task / "task.yaml").write_text(
        "name: mytask\npath: pairs.jsonl\nfields: {id: id}\n"
        "labels: [entailment, neutral, contradiction]\n"
    )
    (tmp_path / "preds.csv").write_text("id,pred\n" + "".join(f"{k},{v}\n" for k, v in
                                                              PREDS.items()))  # fmt: skip
    # The import names the YAML by a relative path, the run by an absolute one.
    monkeypatch.chdir(tmp_path)
    argv = ["import", "preds.csv", "--format", "labels", "--task", "task/task.yaml"]
    assert main([*argv, "--model", "bert", "--out", "imported"]) == 0
    cfg = RunConfig("org/lm", (str(task / "task.yaml"),), shots=(0,))
    run(cfg, tmp_path / "lm", model=stand_in(cfg, lambda ck: HashLM()), progress=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    return {"imported": tmp_path / "imported", "lm": tmp_path / "lm", "root": tmp_path}


def _lm_correct(folder: Path) -> dict[str, bool]:
    return {r.item_id: r.pred == r.gold for r in saved_records(folder)}


def test_records_carry_the_name_the_yaml_declares(folders: dict[str, Path]) -> None:
    assert {r.task for r in saved_records(folders["imported"])} == {"mytask"}
    assert {r.task for r in saved_records(folders["lm"])} == {"mytask"}


def test_grid_puts_the_imported_folder_and_the_run_in_one_column(
    folders: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    lm = _lm_correct(folders["lm"])
    out = folders["root"] / "grid.json"
    argv = ["grid", str(folders["lm"]), str(folders["imported"]), "--format", "json"]
    assert main([*argv, "--out", str(out)]) == 0
    cells = {(c["row"][0], c["column"][0]): c for c in json.loads(out.read_text())["cells"]}
    assert {col for _, col in cells} == {"mytask"}
    assert (cells["bert", "mytask"]["mean"], cells["bert", "mytask"]["n"]) == (4 / 6, 6)
    assert cells["org/lm", "mytask"]["mean"] == pytest.approx(sum(lm.values()) / 6)


def test_compare_pairs_the_imported_folder_with_the_run(
    folders: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    lm = _lm_correct(folders["lm"])
    out = folders["root"] / "compare.json"
    argv = ["compare", str(folders["lm"]), str(folders["imported"]), "--resamples", "50"]
    assert main([*argv, "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert (row["task"], row["n"], row["only_in_a"], row["only_in_b"]) == ("mytask", 6, 0, 0)
    bert = {k: PREDS[k] == GOLD[k] for k in GOLD}
    assert row["accuracy_b"] == pytest.approx(4 / 6)
    # McNemar's discordant pairs, counted from the two sides' per-item correctness.
    assert row["a_only"] == sum(lm[k] and not bert[k] for k in GOLD)
    assert row["b_only"] == sum(bert[k] and not lm[k] for k in GOLD)


def test_a_folder_whose_records_name_the_yaml_by_its_path_is_refused(
    folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A folder imported before records took the declared name: adding to it would put the
    # same items under a second task name.
    monkeypatch.chdir(folders["root"])
    records = folders["imported"] / "records.jsonl"
    records.write_text(records.read_text().replace('"task": "mytask"', '"task": "task/task.yaml"'))
    before = records.read_bytes()
    argv = ["import", "preds.csv", "--format", "labels", "--task", "task/task.yaml"]
    assert main([*argv, "--model", "bert", "--out", "imported"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "records name the task by the path task/task.yaml" in err and "--overwrite" in err
    assert records.read_bytes() == before
    assert main([*argv, "--model", "bert", "--out", "imported", "--overwrite"]) == 0
    assert {r.task for r in saved_records(folders["imported"])} == {"mytask"}


def test_items_of_an_imported_folder_alone_show_the_texts(
    folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The import's config.json names the YAML by the path it was given, from its directory.
    monkeypatch.chdir(folders["root"])
    assert main(["items", str(folders["imported"]), "--ids", "p4"]) == 0
    (row,) = capsys.readouterr().out.splitlines()[2:]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:7] == ["p4", "A cat 3 sits.", "An animal 3 waits.", "entailment"]
    assert cells[-1] == "neutral"
