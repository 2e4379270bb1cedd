"""``nlieval train`` setups that cannot give a true number, each refused in one line
(issue 34): a run that diverges (``--lr 5e5``: the loss becomes NaN), training sources
that share items with each other or with the test split, and a LoRA rank that is no
longer low-rank. Records written before the refusal stay as they were."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

from nlieval.cli import main  # noqa: E402
from nlieval.sci import train_loop  # noqa: E402
from nlieval.sci.train import TrainConfig, TrainError  # noqa: E402
from nlieval.sci.train_data import load_data, load_train  # noqa: E402
from tests.helpers.records import saved_records  # noqa: E402
from tests.helpers.task_files import CUE, NOUNS, cue_task  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_logging")


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("bert"), [*NOUNS, *CUE.values(), "sees"])


@pytest.fixture(scope="module")
def syn(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A task YAML: train split (pool) of 24 items, test split of 12."""
    return cue_task(tmp_path_factory.mktemp("syn"), 24, 12)


def _argv(model: Path, task: str, out: Path, *extra: str) -> list[str]:
    return ["train", "--model", str(model), "--task", task, "--epochs", "2", "--seeds", "0,",
            "--max-length", "16", "--device", "cpu", "--no-progress", "--out", str(out),
            *extra]  # fmt: skip


def _one_line(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    (line,) = [ln for ln in captured.err.splitlines() if ln.startswith("nlieval:")]
    return line, captured.out


def test_a_diverged_run_is_one_line_and_no_table(
    bert: Path, syn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(_argv(bert, syn, out, "--lr", "5e5")) == 2
    line, stdout = _one_line(capsys)
    assert "seed 0 epoch " in line and "diverged" in line and "lower --lr (now 500000)" in line
    assert "test macro F1" not in stdout and "mean over seeds" not in stdout
    assert saved_records(out) == []


def test_a_seed_that_diverges_keeps_the_records_of_the_seeds_before(
    bert: Path, syn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    original = train_loop._train_epoch

    def poisoned(model: Any, *args: Any) -> float:
        if args[-1].startswith("seed 1 "):  # the head of seed 1 turns NaN before step 1
            with torch.no_grad():
                model.head.bias[0] = float("nan")
        return original(model, *args)

    monkeypatch.setattr(train_loop, "_train_epoch", poisoned)
    out = tmp_path / "run"
    argv = [*_argv(bert, syn, out, "--lr", "1e-3"), "--seeds", "0,1"]
    assert main(argv) == 2
    line, _ = _one_line(capsys)
    assert "seed 1 epoch 1 step 1: the training loss is nan (the run diverged)" in line
    records = saved_records(out)
    assert sorted({r.seed for r in records}) == [0] and len(records) == 12
    before = (out / "records.jsonl").read_bytes()  # by hand: bytes
    assert main(argv) == 2  # again: seed 0 is not trained again, seed 1 refused again
    assert "seed 1 epoch 1 step 1" in _one_line(capsys)[0]
    assert (out / "records.jsonl").read_bytes() == before


def test_one_source_given_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # smoke's default training split is train: the two sources are the same 12 items.
    with pytest.raises(TrainError) as err:
        load_train(TrainConfig("minilm", "smoke@train,smoke"))
    assert str(err.value).startswith(
        "--task: the sources smoke@train and smoke share 12 items (e.g. 'smoke-train-01')"
    )
    # Different items from one task are still one training set.
    assert len(load_train(TrainConfig("minilm", "smoke@train,smoke@test")).items) == 60


def test_sources_that_meet_by_chance_are_said_not_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Line-number ids and three-word texts: two different files share 2 of their items.
    rows = {"a": ["cat sees", "dog sees", "bird sees"], "b": ["cat sees", "dog sees", "fish"]}
    for name, premises in rows.items():
        lines = [
            json.dumps({"premise": p, "hypothesis": "a cat", "label": list(CUE)[i]}) + "\n"
            for i, p in enumerate(premises)
        ]
        (tmp_path / f"{name}.jsonl").write_text("".join(lines))
        doc = {"path": f"{name}.jsonl", "labels": list(CUE)}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    with caplog.at_level("WARNING"):
        part = load_train(TrainConfig("minilm", f"{a}@test,{b}@test"))
    assert len(part.items) == 6
    assert "share 2 items" in caplog.text


def _copy_of_smoke_test(folder: Path, name: str) -> str:
    """A task YAML of its own name on a copy of the file of smoke's test split."""
    src = resources.files("nlieval") / "resources" / "smoke.jsonl"
    with resources.as_file(src) as path:
        shutil.copy(path, folder / f"{name}.jsonl")
    doc = {
        "path": f"{name}.jsonl",
        "labels": ["entailment", "neutral", "contradiction"],
        "fields": {"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label",
                   "id": "pairID"},
    }  # fmt: skip
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    return str(folder / f"{name}.yaml")


def test_the_test_split_given_again_through_a_task_yaml_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = _copy_of_smoke_test(tmp_path, "mine")
    # Trained on smoke's train split and the same test items under another name.
    with pytest.raises(TrainError) as err:
        load_data(TrainConfig("minilm", f"smoke@train,{copy}@test"))
    msg = str(err.value)
    assert msg.startswith(f"the training source {copy}@test and the test split smoke test")
    assert "share 48 items" in msg and "--no-test" in msg and "\n" not in msg
    # The same file as the only source, through the CLI: one line, nothing written.
    out = tmp_path / "run"
    assert main(["train", "--model", "minilm", "--task", f"{copy}@test", "--test-task",
                 "smoke", "--out", str(out), "--no-progress"]) == 2  # fmt: skip
    line, _ = _one_line(capsys)
    assert "the test split smoke test share 48 items" in line
    assert not out.exists()
    # Two names of one file as two sources are refused as sources.
    other = _copy_of_smoke_test(tmp_path, "again")
    with pytest.raises(TrainError, match="share 48 items"):
        load_train(TrainConfig("minilm", f"{copy}@test,{other}@test"))
    # A test split the training sources do not hold passes.
    assert len(load_data(TrainConfig("minilm", "smoke@train", test_task=copy)).test.items) == 48


def test_a_lora_rank_beyond_any_model_is_one_line(
    tiny_llama: Path, syn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "huge"
    assert main(_argv(tiny_llama, syn, out, "--lora", "100000000,16")) == 2
    line, _ = _one_line(capsys)
    assert "--lora rank 100000000 is above 8192" in line
    assert not out.exists()


def test_a_lora_rank_above_the_hidden_size_is_one_line(
    tiny_llama: Path, syn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("peft")
    out = tmp_path / "wide"
    assert main(_argv(tiny_llama, syn, out, "--lora", "64,16")) == 2
    line, _ = _one_line(capsys)
    assert "--lora rank 64 is above the hidden size" in line and "(32)" in line
    assert saved_records(out) == []
