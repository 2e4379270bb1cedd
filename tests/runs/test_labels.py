"""Names of runs in tables (nlieval.runs.labels): what --name RUN=NAME and NAME alone
name, and what they refuse."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nlieval.runs import RunError, RunFolder, given_names, read_named
from nlieval.types import Record

R = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (0.7, 0.3), "a", "a")


def _folder(path: Path, records: list[Record], **config: object) -> str:
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    RunFolder(path).append(records)
    return str(path)


def test_names_in_folder_order_or_by_folder_or_model(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", [R], template="x")
    b = _folder(tmp_path / "b", [R, replace(R, item_id="2")], template="y")
    c = _folder(tmp_path / "c", [replace(R, model="n")])
    shown = [{r.model for r in recs} for recs in read_named([a, b, c])]
    assert shown == [{"m (template=x)"}, {"m (template=y)"}, {"n"}]
    bare = [("", "A"), ("", "B"), ("", "C")]
    assert [{r.model for r in recs} for recs in read_named([a, b, c], bare)] == [
        {"A"},
        {"B"},
        {"C"},
    ]
    keyed = [(c, "Gemma"), ("m (template=y)", "M, y")]
    assert [{r.model for r in recs} for recs in read_named([a, b, c], keyed)] == [
        {"m (template=x)"},
        {"M, y"},
        {"Gemma"},
    ]
    with pytest.raises(ValueError, match="2 names for 3 run folders"):
        read_named([a, b, c], bare[:2])
    with pytest.raises(ValueError, match="one NAME per RUN in their order, or RUN=NAME"):
        read_named([a, b, c], [("", "A"), (b, "B"), ("", "C")])
    # Pooled: one model, both folders' records under it, nothing refused.
    pooled = read_named([a, b], pool=True)
    assert [len(recs) for recs in pooled] == [1, 2]
    assert {r.model for recs in pooled for r in recs} == {"m"}


def test_a_folder_of_two_models_is_named_by_model(tmp_path: Path) -> None:
    both = _folder(tmp_path / "both", [R, replace(R, model="n")])
    with pytest.raises(ValueError, match=f"{both} holds m, n: name a model of it instead"):
        given_names([both], [[R, replace(R, model="n")]], [{}], [(both, "X")])
    assert given_names([both], [[R, replace(R, model="n")]], [{}], [("n", "N")]) == [{"n": "N"}]


def test_two_folders_named_alike_are_refused_unless_pooled(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", [R])
    b = _folder(tmp_path / "b", [replace(R, model="other")])
    alike = [(a, "X"), (b, "X")]
    with pytest.raises(RunError, match="both hold X on task t, k=0"):
        read_named([a, b], alike)
    with pytest.raises(RunError, match="both hold X") as err:
        read_named([a, b], alike, poolable=False)
    assert "--pool" not in str(err.value)
    assert {r.model for recs in read_named([a, b], alike, pool=True) for r in recs} == {"X"}
    # On other sweep points (another k) one name fills one row: nothing to refuse.
    c = _folder(tmp_path / "c", [replace(R, k=2)])
    assert [{r.model for r in recs} for recs in read_named([a, c])] == [{"m"}, {"m"}]


def test_records_as_points_name_task_files_and_training_seeds_as_run_does(
    tmp_path: Path,
) -> None:
    from nlieval.runs import iter_run_records

    # What `nlieval train --test-task my.yaml` writes (the task by its path) and what
    # `run --model TRAIN_FOLDER` writes (the declared name; a seed model as a checkpoint).
    (tmp_path / "items.jsonl").write_text("")
    task = tmp_path / "my.yaml"
    task.write_text("name: mine\npath: items.jsonl\nlabels: [entailment, neutral, contradiction]\n")
    train = tmp_path / "train"
    own = replace(R, task=str(task), model="train", seed=1)
    over = replace(R, task="mine", model=str(train), checkpoint=str(train / "seed1"))
    step = replace(R, checkpoint="m/step-100")  # a sweep's checkpoint stays one
    folder = _folder(tmp_path / "f", [own, over, step])
    raw = [(r.task, r.checkpoint, r.seed) for r in iter_run_records([folder])]
    assert raw == [(str(task), None, 1), ("mine", str(train / "seed1"), 0), ("t", "m/step-100", 0)]
    points = [(r.task, r.checkpoint, r.seed) for r in iter_run_records([folder], as_points=True)]
    assert points == [("mine", None, 1), ("mine", None, 1), ("t", "m/step-100", 0)]
