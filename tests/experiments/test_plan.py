"""Planning: the count of cells checked against MAX_CELLS is the number planned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.cli import main
from nlieval.experiments import count_cells, plan_cells
from nlieval.experiments import plan as plan_module
from nlieval.experiments.config import ExperimentPlan, ExperimentRun, read_with_data_dir
from nlieval.experiments.spec import parse_experiment
from nlieval.ground import DataError

# infer-build takes one `seed`: three seeds are three cells, though `each` is not given.
TEXT = """\
blocks: {items: {command: infer-build, task: smoke}}
matrix: [{block: items, seeds: [0, 1, 2]}]
"""


def test_a_singular_setting_split_is_counted() -> None:
    exp = parse_experiment(TEXT, "e.yaml")
    assert [c.name for c in plan_cells(exp, estimate=False)] == [
        "items-seed0",
        "items-seed1",
        "items-seed2",
    ]
    assert count_cells(exp) == 3


def test_a_singular_setting_split_cannot_pass_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_module, "MAX_CELLS", 2)
    with pytest.raises(DataError, match="expands to 3 cells; at most 2"):
        plan_cells(parse_experiment(TEXT, "e.yaml"), estimate=False)


def _snli_data(folder: Path, n: int) -> Path:
    # n SNLI dev pairs in the official file's shape, in a data folder of their own.
    folder.mkdir(parents=True)
    rows = [{"gold_label": "neutral", "pairID": f"p{i}", "sentence1": "A man sleeps.",
             "sentence2": "A man rests."} for i in range(n)]  # fmt: skip
    (folder / "snli_1.0_dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


RUN_AND_SCORE = """\
models: {a: smollm2-135m}
blocks:
  base: {command: run, tasks: [snli], split: dev}
  items: {command: infer-build, task: smoke}
matrix: [{block: base, models: [a]}, {block: items, seeds: [0]}]
"""


def test_plan_and_run_take_data_dir_and_pass_it_to_the_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Nothing exported and no ../shared/data: --data-dir alone says where SNLI is; the
    # estimate counts its 3 pairs of 3 + 3 words at k = 0 (by hand: 18 words), and the
    # cell is the cell planned without it.
    monkeypatch.delenv("NLIEVAL_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    data = _snli_data(tmp_path / "mine", 3)
    file = tmp_path / "e.yaml"
    file.write_text(RUN_AND_SCORE)
    assert main(["experiment", "plan", str(file), "--data-dir", str(data)]) == 0
    said = capsys.readouterr().out
    assert "base-a  records 3  words 18" in said
    assert f"--data-dir {data}" in said
    # The infer-build cell is no run: not estimated, so the total is a lower bound.
    assert said.rstrip().endswith("2 cells; records at least 3, prompt words at least 18 "
                                  "(1 cell not estimated)")  # fmt: skip
    exp = parse_experiment(RUN_AND_SCORE, str(file))
    with_dir = {c.name: c.identity for c in plan_cells(read_with_data_dir(
        ExperimentPlan(file=str(file), data_dir=str(data))), estimate=False)}  # fmt: skip
    assert with_dir == {c.name: c.identity for c in plan_cells(exp, estimate=False)}
    run = ExperimentRun(file=str(file), out="x", data_dir=str(data))
    [cell] = [c for c in plan_cells(read_with_data_dir(run), estimate=False) if c.name == "base-a"]
    assert cell.configs()[0].data_dir == str(data)
