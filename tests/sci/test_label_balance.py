"""``train`` and ``instruct`` on selections that miss labels: each part (training, dev,
test) is warned about, with the counts per label, where it is chosen."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch

from nlieval.cli import main
from nlieval.sci.train_config import TrainConfig
from nlieval.sci.train_data import load_data
from tests.helpers.tiny_bert import make_tiny_bert

SCI4 = ("contrasting", "reasoning", "entailment", "neutral")


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "items, labelled" in r.getMessage()]


def test_limit_1000_on_scinli_dev_warns_for_the_training_and_test_parts(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    raw = (data_dir / "scinli" / "dev.jsonl").read_text(encoding="utf-8").splitlines()
    # Sorted in blocks of 500: the training part (dev less a stratified tenth held out for
    # early stopping: 450 of each label left, in file order) starts 450 contrasting, 450
    # reasoning, then 100 entailment; the test split starts with 1,000 contrasting.
    assert [json.loads(line)["label"] for line in raw] == [lab for lab in SCI4 for _ in range(500)]
    config = TrainConfig("minilm", "scinli", train_split="dev", limit=1000, data_dir=str(data_dir))
    with caplog.at_level(logging.WARNING):
        data = load_data(config)
    assert (len(data.train.items), len(data.dev.items)) == (1000, 200)
    assert _said(caplog) == [
        "training part scinli dev: --limit 1000 takes the first 1,000 items, labelled "
        "contrasting=450 reasoning=450 entailment=100 neutral=0 (the split: contrasting=450 "
        "reasoning=450 entailment=450 neutral=450): no item labelled neutral; --sample 1000 "
        "takes a seeded sample stratified by label",
        "test part scinli test: --limit 1000 takes the first 1,000 items, labelled "
        "contrasting=1,000 reasoning=0 entailment=0 neutral=0 (the split: contrasting=1,000 "
        "reasoning=1,000 entailment=1,000 neutral=1,000): no item labelled reasoning, "
        "entailment, neutral; --sample 1000 takes a seeded sample stratified by label",
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        load_data(
            TrainConfig("minilm", "scinli", train_split="dev", sample=1000, data_dir=str(data_dir))
        )
    assert _said(caplog) == []


def _sorted_file(path: Path, per_label: int, premise: str = "the cat sees") -> str:
    labels = ("entailment", "neutral", "contradiction")
    rows = [
        {"id": f"{lab}-{i}", "premise": premise, "hypothesis": "a dog", "label": lab}
        for lab in labels
        for i in range(per_label)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_train_command_warns_on_its_stderr(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    model = make_tiny_bert(tmp_path / "bert", ["the", "cat", "sees", "a", "dog"])
    train_file = _sorted_file(tmp_path / "train.jsonl", 10)  # 1 of each held out: 9 e first
    # Other texts under the same ids: not the training items (train refuses those).
    test_file = _sorted_file(tmp_path / "test.jsonl", 4, "the dog sees")  # first 9: 4 e, 4 n, 1 c
    argv = ["train", "--model", str(model), "--task", train_file, "--train-split", "test",
            "--test-task", test_file, "--limit", "9", "--seeds", "0,", "--epochs", "1",
            "--max-length", "8", "--device", "cpu", "--no-progress",
            "--out", str(tmp_path / "out")]  # fmt: skip
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with caplog.at_level(logging.WARNING):
            assert main(argv) == 0
    finally:
        torch.set_num_threads(threads)
    assert _said(caplog) == [
        f"training part {train_file} test: --limit 9 takes the first 9 items, labelled "
        "entailment=9 neutral=0 contradiction=0 (the split: entailment=9 neutral=9 "
        "contradiction=9): no item labelled neutral, contradiction; --sample 9 takes a seeded "
        "sample stratified by label",
        f"test part {test_file} test: --limit 9 takes the first 9 items, labelled entailment=4 "
        "neutral=4 contradiction=1 (the split: entailment=4 neutral=4 contradiction=4): "
        "contradiction is 11% of the items, 33% of the split; --sample 9 takes a seeded "
        "sample stratified by label",
    ]
    assert "test macro F1" in capsys.readouterr().out


def test_instruct_limit_on_scinli_warns(data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    from nlieval.sci.instruct import InstructConfig, plan_instruct

    config = InstructConfig("m", shots=(0,), limit=12, data_dir=str(data_dir))
    with caplog.at_level(logging.WARNING):
        (ds, _, info), *_ = plan_instruct(config)
    assert info["items"] == 12
    assert _said(caplog) == [
        "scinli test: --limit 12 takes the first 12 items, labelled contrasting=12 reasoning=0 "
        "entailment=0 neutral=0 (the split: contrasting=1,000 reasoning=1,000 entailment=1,000 "
        "neutral=1,000): no item labelled reasoning, entailment, neutral; --sample 12 takes a "
        "seeded sample stratified by label"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        plan_instruct(
            InstructConfig("m", shots=(0,), limit=12, balanced_limit=True, data_dir=str(data_dir))
        )
    assert _said(caplog) == []
