"""A sentence-pair classifier given a task whose items are not pairs (alpha-NLI: two
observations and the hypotheses to choose from) is refused in one line by ``run`` and
``train`` (a pair head: trained on pairs), before anything is written: it would see the
observations alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nlieval.cli import main
from tests.helpers.records import saved_rows

ROWS = [
    {"id": "s1", "obs1": "Kim left home.", "obs2": "Kim was soaked.", "hyp1": "It rained.",
     "hyp2": "The sun shone.", "label": 1},
    {"id": "s2", "obs1": "Al baked.", "obs2": "The cake burnt.", "hyp1": "He napped.",
     "hyp2": "He watched it.", "label": 1},
]  # fmt: skip


def _alpha(tmp_path: Path) -> Path:
    (tmp_path / "alpha.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    yaml = tmp_path / "alpha.yaml"
    yaml.write_text(
        "name: myalpha\npath: alpha.jsonl\npool: alpha.jsonl\nlabels: ['1', '2']\n"
        "fields: {id: id, premise: obs1, hypothesis: obs2, label: label, "
        "choices: [hyp1, hyp2]}\n"
    )
    return yaml


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], out: Path) -> str:
    assert main(argv) == 2
    # The last line (model fixtures above it print their progress bars).
    lines = capsys.readouterr().err.strip().splitlines()
    err = lines[-1]
    assert err.startswith("nlieval: error: ") and "Traceback" not in "".join(lines)
    assert "one sentence pair" in err and "myalpha" in err and "item s1" in err
    assert not (out / "records.jsonl").exists()
    return err


def test_run_refuses_a_classifier_folder_on_alpha_nli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The folder is a classifier folder by its metadata file: refused before any weight
    # is read (there are none).
    clf = tmp_path / "clf"
    clf.mkdir()
    (clf / "nlieval_classifier.json").write_text("{}")
    out = tmp_path / "r"
    argv = ["run", "--model", str(clf), "--task", str(_alpha(tmp_path)), "--out", str(out)]
    err = _refused(capsys, [*argv, "--no-progress"], out)
    assert f"--model {clf}, a sentence-pair classifier," in err


def test_run_refuses_a_sequence_classifier_on_alpha_nli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("transformers")
    from tests.backends.test_hf_classifier import _bert

    bert = _bert(tmp_path / "bert", id2label={0: "1", 1: "2"}, label2id={"1": 0, "2": 1})
    out = tmp_path / "r"
    argv = ["run", "--model", str(bert), "--task", str(_alpha(tmp_path)), "--out", str(out)]
    _refused(capsys, [*argv, "--no-progress", "--device", "cpu"], out)


def test_train_of_a_pair_head_refuses_alpha_nli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Trained on pairs (smoke), so a pair head: alpha-NLI as its test task is refused.
    # (Trained on alpha-NLI itself, the head is a multiple-choice one: tests/sci.)
    pytest.importorskip("transformers")
    from tests.helpers.tiny_bert import make_tiny_bert

    bert = make_tiny_bert(tmp_path / "enc", ["kim", "left", "home"])
    out = tmp_path / "t"
    argv = ["train", "--model", str(bert), "--task", "smoke", "--test-task", str(_alpha(tmp_path))]
    err = _refused(capsys, [*argv, "--out", str(out), "--no-progress", "--device", "cpu"], out)
    assert "nlieval train, which trains a sentence-pair classifier," in err


def test_a_language_model_still_runs_alpha_nli(tmp_path: Path, tiny_llama: Path) -> None:
    out = tmp_path / "lm"
    argv = ["run", "--model", str(tiny_llama), "--task", str(_alpha(tmp_path)), "--out", str(out)]
    assert main([*argv, "--shots", "0", "--no-progress", "--device", "cpu"]) == 0
    records = saved_rows(out)
    by_id = {r["item_id"]: r for r in records}
    assert sorted(by_id) == ["s1", "s2"] and "The sun shone." in by_id["s1"]["prompt"]


@pytest.mark.skipif(not os.environ.get("NLIEVAL_DATA_DIR"), reason="needs NLIEVAL_DATA_DIR")
def test_run_refuses_a_classifier_on_the_real_alpha_nli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clf = tmp_path / "clf"
    clf.mkdir()
    (clf / "nlieval_classifier.json").write_text("{}")
    out = tmp_path / "r"
    argv = ["run", "--model", str(clf), "--task", "chaosnli_alphanli", "--limit", "10"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nlieval: error: --model") and "\n" not in err
    assert "items of task chaosnli_alphanli hold 2 choices" in err
    assert not (out / "records.jsonl").exists()
