"""Early stopping when the dev macro F1 is undefined (a dev part of one gold class):
the dev accuracy selects the best epoch, with a warning, and a checkpoint is saved."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import pytest

pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

from nlieval.classifiers import is_classifier_folder  # noqa: E402
from nlieval.cli import main  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NOUNS = ["cat", "dog", "bird", "fish"]
CUE = {"entailment": "a", "neutral": "the", "contradiction": "no"}


def _rows(name: str, labels: list[str], seed: int) -> str:
    rng = random.Random(seed)
    return "".join(
        json.dumps({"id": f"{name}{i}", "premise": f"{rng.choice(NOUNS)} sees",
                    "hypothesis": f"{CUE[lab]} {rng.choice(NOUNS)}", "label": lab}) + "\n"
        for i, lab in enumerate(labels)
    )  # fmt: skip


def test_one_class_dev_part_selects_by_accuracy_and_saves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    bert = make_tiny_bert(tmp_path / "bert", [*NOUNS, *CUE.values(), "sees"])
    three = list(CUE) * 4
    (tmp_path / "train.jsonl").write_text(_rows("tr", three, 1), encoding="utf-8")
    (tmp_path / "test.jsonl").write_text(_rows("te", three, 2), encoding="utf-8")
    # The dev part: 6 items, all gold neutral; macro F1 over one class is n/a.
    (tmp_path / "dev.jsonl").write_text(_rows("dv", ["neutral"] * 6, 3), encoding="utf-8")
    for name, doc in (
        ("syn", {"path": "test.jsonl", "pool": "train.jsonl", "labels": list(CUE)}),
        ("one", {"path": "dev.jsonl", "labels": list(CUE)}),
    ):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    out = tmp_path / "run"
    argv = [
        "train", "--model", str(bert), "--task", str(tmp_path / "syn.yaml"),
        "--dev-task", str(tmp_path / "one.yaml"), "--dev-split", "test", "--epochs", "2",
        "--seeds", "1", "--max-length", "16", "--device", "cpu", "--no-progress",
        "--out", str(out),
    ]  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="nlieval"):
        assert main(argv) == 0  # before: RuntimeError from load_state_dict({})
    table = capsys.readouterr().out
    assert "nan" not in table and "n/a" in table  # the dev macro F1, undefined
    assert any(
        "macro F1 is undefined" in r.getMessage() and "dev accuracy" in r.getMessage()
        for r in caplog.records
    )
    checkpoints = [p for p in out.rglob("*") if p.is_dir() and is_classifier_folder(p)]
    assert checkpoints, "no checkpoint saved"
