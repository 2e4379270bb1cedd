"""A LoRA checkpoint holds its base model by content: the base's absolute path and
fingerprint are recorded at training; a base with other weights is refused in one line
(when the checkpoint is used, and when ``train --lora`` resumes), and a base given by a
relative path is the same base from any directory."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from nlieval.backends import HFOptions  # noqa: E402
from nlieval.backends.classifier import EncoderClassifier  # noqa: E402
from nlieval.backends.lora_classifier import lora_base  # noqa: E402
from nlieval.cli import main  # noqa: E402
from nlieval.runs import RunFolder  # noqa: E402
from tests.helpers.tiny_models import tiny_model  # noqa: E402
from tests.sci.test_lora import _argv, llama, task  # noqa: E402, F401


def _hand_fingerprint(folder: Path) -> str:
    # By hand: SHA-256 over "name\0sha256(bytes)\n" of the model files, sorted by name.
    h = hashlib.sha256()
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.suffix in (".json", ".safetensors", ".txt", ".model", ".jinja"):
            h.update(f"{p.name}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n".encode())
    return "files:" + h.hexdigest()


def _records(out: Path) -> bytes:
    # By hand: bytes (compared for being left as they were).
    return (out / "records.jsonl").read_bytes()


def _replace(base: Path) -> None:
    shutil.rmtree(base)
    tiny_model(base, "llama", seed=5)  # other weights under the same path


def test_a_checkpoint_refuses_a_base_with_other_weights(
    llama: Path,  # noqa: F811
    task: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, out = tmp_path / "base", tmp_path / "lora"
    shutil.copytree(llama, base)
    assert main(_argv(base, task, out)) == 0
    meta = json.loads((out / "seed0" / "nlieval_classifier.json").read_text())
    assert meta["adapter"]["base_path"] == str(base.resolve()) == meta["base_model"]
    assert meta["adapter"]["base_fingerprint"] == _hand_fingerprint(base)
    scored = tmp_path / "scored"
    argv = ["run", "--model", str(out / "seed0"), "--task", task, "--no-progress"]
    assert main([*argv, "--out", str(scored), "--limit", "2"]) == 0
    before = _records(scored)

    _replace(base)
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "fresh")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"its base model {base.resolve()} has other weights" in err[0]
    assert not (tmp_path / "fresh" / "records.jsonl").exists()
    assert main([*argv, "--out", str(scored), "--limit", "4"]) == 2
    assert _records(scored) == before  # nothing scored on the other base


def test_a_relative_base_is_the_same_base_from_another_directory(
    llama: Path,  # noqa: F811
    task: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "a").mkdir()
    shutil.copytree(llama, tmp_path / "a" / "model")
    monkeypatch.chdir(tmp_path / "a")
    out = tmp_path / "lora"
    argv = _argv(Path("model"), task, out)
    assert main(argv) == 0
    records = RunFolder(out).records()
    # Another directory with another model under the same relative name.
    tiny_model(tmp_path / "b" / "model", "llama", seed=5)
    monkeypatch.chdir(tmp_path / "b")
    meta = json.loads((out / "seed0" / "nlieval_classifier.json").read_text())
    source = lora_base(meta["base_model"], meta["adapter"], "ckpt")
    assert Path(source.path) == tmp_path / "a" / "model"
    from nlieval.data import load_task

    items = {it.id: it for it in load_task(task).items}
    pairs = [(items[r.item_id].premise, items[r.item_id].hypothesis) for r in records]
    logp = EncoderClassifier(out / "seed0", HFOptions(device="cpu")).classify(pairs)
    for r, row in zip(records, logp, strict=True):
        assert max(abs(a - b) for a, b in zip(r.loglik, row, strict=True)) < 1e-5


def test_a_resumed_train_lora_refuses_a_changed_base(
    llama: Path,  # noqa: F811
    task: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, out = tmp_path / "base", tmp_path / "lora"
    shutil.copytree(llama, base)
    assert main(_argv(base, task, out)) == 0
    before = _records(out)
    _replace(base)
    capsys.readouterr()
    assert main(_argv(base, task, out, seeds="0,1")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model" in err[0] and "other contents" in err[0], err
    assert _records(out) == before and not (out / "seed1").exists()


def test_a_resumed_train_without_test_records_refuses_a_changed_base(
    llama: Path,  # noqa: F811
    task: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --no-test: no record says which weights made seed 0, its checkpoint does.
    base, out = tmp_path / "base", tmp_path / "lora"
    shutil.copytree(llama, base)
    assert main([*_argv(base, task, out), "--no-test"]) == 0
    saved = (out / "config.json").read_text()
    _replace(base)
    capsys.readouterr()
    assert main([*_argv(base, task, out, seeds="0,1"), "--no-test"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other contents" in err[0] and "model:" in err[0], err
    assert not (out / "seed1").exists() and (out / "config.json").read_text() == saved
