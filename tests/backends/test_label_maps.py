"""A sequence classifier's outputs get one task label each: a ``--label-map`` that names
one output twice, an ``id2label`` that is a list, or one that names more labels than the
head has outputs, are each one line before anything is written (issue 34: the map was
accepted, the later entry winning; the others were an AttributeError and a RuntimeError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from transformers import AutoTokenizer, BertForSequenceClassification  # noqa: E402

from nlieval.cli import main  # noqa: E402
from tests.helpers.records import saved_records  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_logging")


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("bert"), ["a", "man", "walks", "."])


def _classifier(bert: Path, folder: Path, outputs: int, config: dict[str, Any]) -> str:
    """A BertForSequenceClassification of ``outputs`` outputs named LABEL_i, then its
    config.json updated with ``config``."""
    model = BertForSequenceClassification.from_pretrained(bert, num_labels=outputs)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(bert).save_pretrained(folder)
    path = folder / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
    return str(folder)


def _run(model: str, out: Path, *extra: str) -> list[str]:
    return ["run", "--model", model, "--task", "smoke", "--limit", "3", "--device", "cpu",
            "--no-progress", "--out", str(out), *extra]  # fmt: skip


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("nlieval: error: "), lines
    return lines[0]


def test_the_run_refuses_such_a_map_before_anything_is_written(
    bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _classifier(bert, tmp_path / "clf", 3, {})
    out = tmp_path / "run"
    capsys.readouterr()  # what making the model printed
    label_map = "0=entailment,LABEL_0=contradiction,1=neutral,2=contradiction"
    assert main(_run(model, out, "--label-map", label_map)) == 2
    assert "--label-map names the output 0 of" in _one_line(capsys)
    assert not (out / "records.jsonl").exists()


def test_an_id2label_list_is_one_line_naming_the_file(
    bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = ["entailment", "neutral", "contradiction"]
    model = _classifier(bert, tmp_path / "clf", 3, {"id2label": labels})
    out = tmp_path / "run"
    capsys.readouterr()  # what making the model printed
    assert main(_run(model, out)) == 2
    line = _one_line(capsys)
    assert f"{tmp_path / 'clf' / 'config.json'}: field 'id2label': must map each output" in line
    assert not (out / "records.jsonl").exists()


def test_three_labels_over_a_two_output_head_is_one_line(
    bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    three = {"id2label": {"0": "entailment", "1": "neutral", "2": "contradiction"},
             "label2id": {"entailment": 0, "neutral": 1, "contradiction": 2}}  # fmt: skip
    model = _classifier(bert, tmp_path / "clf", 2, three)
    out = tmp_path / "run"
    capsys.readouterr()  # what making the model printed
    assert main(_run(model, out)) == 2
    line = _one_line(capsys)
    assert "its weights do not fit its config.json, whose id2label names 3 labels" in line
    assert "classifier.bias: [2], the config [3]" in line
    assert saved_records(out) == []
