"""LoRA fine-tuning of a decoder-only LM as a pair classifier (``nlieval train --lora``),
on a tiny random Llama: it trains, saves adapters only, reloads to the same predictions,
resumes after kill -9, and is refused with other settings."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
yaml = pytest.importorskip("yaml")

from nlieval.backends import HFOptions  # noqa: E402
from nlieval.backends.classifier import EncoderClassifier, load_classifier  # noqa: E402
from nlieval.classifiers import encode_pairs  # noqa: E402
from nlieval.cli import main  # noqa: E402
from nlieval.runs import RunFolder  # noqa: E402
from nlieval.sci.train import TrainConfig, TrainError, train  # noqa: E402
from tests.helpers.cli_process import kill_once_written, start_cli  # noqa: E402
from tests.helpers.tiny_models import tiny_model  # noqa: E402

CUE = {"entailment": "a", "neutral": "the", "contradiction": "no"}
NOUNS = ["cat", "dog", "bird", "fish"]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny-llama"), "llama")


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("syn")
    for name, n, seed in (("train", 60, 1), ("test", 24, 2)):
        rng = random.Random(seed)
        rows = []
        for i in range(n):
            label = list(CUE)[i % 3]
            premise = " ".join(rng.sample(NOUNS, 2)) + " sees"
            hypothesis = f"{CUE[label]} {rng.choice(NOUNS)}"
            rows.append(
                {"id": str(i), "premise": premise, "hypothesis": hypothesis, "label": label}
            )
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    doc = {"path": "test.jsonl", "pool": "train.jsonl", "labels": list(CUE)}
    (folder / "syn.yaml").write_text(yaml.safe_dump(doc))
    return str(folder / "syn.yaml")


def _argv(llama: Path, task: str, out: Path, seeds: str = "0,") -> list[str]:
    return ["train", "--model", str(llama), "--task", task, "--lora", "4,8", "--epochs", "2",
            "--seeds", seeds, "--lr", "5e-3", "--max-length", "24", "--device", "cpu",
            "--no-progress", "--out", str(out)]  # fmt: skip


def test_lora_trains_saves_adapters_and_reloads_to_the_same_predictions(
    llama: Path, task: str, tmp_path: Path
) -> None:
    out = tmp_path / "lora"
    assert main(_argv(llama, task, out)) == 0
    seed = out / "seed0"
    names = {p.name for p in seed.iterdir()}
    assert {"adapter_model.safetensors", "adapter_config.json"} <= names
    assert "model.safetensors" not in names  # the base weights are not copied
    meta = json.loads((seed / "nlieval_classifier.json").read_text())
    assert meta["adapter"]["r"] == 4 and meta["adapter"]["alpha"] == 8
    assert meta["base_model"] == str(llama) and meta["separator"] == "\n"
    # The checkpoint, loaded again on the base model, scores as the records say.
    records = RunFolder(out).records()
    assert len(records) == 24
    from nlieval.data import load_task

    items = {it.id: it for it in load_task(task).items}
    pairs = [(items[r.item_id].premise, items[r.item_id].hypothesis) for r in records]
    for batch in (1, 7):
        logp = EncoderClassifier(seed, HFOptions(device="cpu"), batch_size=batch).classify(pairs)
        for r, row in zip(records, logp, strict=True):
            assert max(abs(a - b) for a, b in zip(r.loglik, row, strict=True)) < 1e-5
    # An independent reading: the base model plus the adapters through PEFT itself, the
    # pair joined by a newline, the last real token's logits.
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(seed)
    base = AutoModelForSequenceClassification.from_pretrained(
        llama, num_labels=3, pad_token_id=tok.pad_token_id
    )
    peft = PeftModel.from_pretrained(base, seed).eval()
    for r, (p, h) in list(zip(records, pairs, strict=True))[:5]:
        ids = tok(p, "\n" + h, return_tensors="pt")
        with torch.no_grad():
            want = torch.log_softmax(peft(**ids).logits[0], -1).tolist()
        assert max(abs(a - b) for a, b in zip(r.loglik, want, strict=True)) < 1e-5
    # nlieval run reads the train folder as it reads an encoder's.
    assert main(["run", "--model", str(out), "--task", task, "--out", str(tmp_path / "r")]) == 0
    rerun = {x.item_id: x.pred for x in RunFolder(tmp_path / "r").records()}
    assert rerun == {x.item_id: x.pred for x in records}
    model, _, _ = load_classifier(seed)
    assert not model.training


def test_lora_settings_are_checked_and_in_the_identity(
    llama: Path, task: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(TrainError, match="decoder-only"):
        train(TrainConfig(str(llama), task, device="cpu", out=str(tmp_path / "x")))
    for bad in ("4", "0,8", "4,8,1.5", "a,b"):
        with pytest.raises(TrainError, match="--lora"):
            TrainConfig(str(llama), task, lora=bad)
    with pytest.raises(TrainError, match="--top-layers"):
        TrainConfig(str(llama), task, lora="4,8", top_layers=1)
    with pytest.raises(TrainError, match="--lora-layers"):
        TrainConfig(str(llama), task, lora_layers=1)
    # --lora-layers 1 of the two: adapters in the top layer only, nothing below trains.
    from nlieval.sci.train_model import build_model

    model, _ = build_model(TrainConfig(str(llama), task, lora="4,8", lora_layers=1), list(CUE), 0)
    adapted = {n.split("layers.")[1].split(".")[0] for n, p in model.named_parameters()
               if p.requires_grad and "lora_" in n}  # fmt: skip
    assert adapted == {"1"}
    out = tmp_path / "id"
    argv = _argv(llama, task, out)
    argv[argv.index("--epochs") + 1] = "1"
    assert main(argv) == 0
    argv[argv.index("--lora") + 1] = "8,16"
    capsys.readouterr()
    assert main(argv) == 2
    assert "lora" in capsys.readouterr().err


def test_lora_kill_9_then_resume_equals_uninterrupted(
    llama: Path, task: str, tmp_path: Path
) -> None:
    ref = start_cli(*_argv(llama, task, tmp_path / "ref", "2"), cwd=tmp_path, one_thread=True)
    _, err = ref.communicate(timeout=600)
    assert ref.returncode == 0, err
    out = tmp_path / "killed"
    proc = start_cli(*_argv(llama, task, out, "2"), cwd=tmp_path, one_thread=True)
    records = out / "records.jsonl"
    kill_once_written(proc, records)  # once seed 0's records are there: in seed 1's training
    n = len(records.read_text().splitlines()) if records.exists() else 0  # by hand: torn
    assert 0 < n < 2 * 24, "the run was not killed between its first and last seed"
    again = start_cli(*_argv(llama, task, out, "2"), cwd=tmp_path, one_thread=True)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    got = RunFolder(out).records()
    want = {(r.seed, r.item_id): r for r in RunFolder(tmp_path / "ref").records()}
    assert len(records.read_text().splitlines()) == len(got) == len(want) == 48
    for r in got:
        w = want[(r.seed, r.item_id)]
        assert r.pred == w.pred
        assert max(abs(a - b) for a, b in zip(r.loglik, w.loglik, strict=True)) < 1e-5


def test_the_pair_reaches_a_decoder_as_one_text(llama: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(llama)
    enc = encode_pairs(tok, [("A cat sees.", "The dog runs.")], max_length=64, separator="\n")
    text = str(tok.decode(enc["input_ids"][0], skip_special_tokens=True))
    assert "A cat sees." in text and "\nThe dog runs." in text
    # Too long: the longer sentence (the premise) is cut, the hypothesis kept whole.
    long = "cat " * 50
    enc = encode_pairs(tok, [(long, "The dog runs.")], max_length=16, separator="\n")
    cut = str(tok.decode(enc["input_ids"][0], skip_special_tokens=True))
    assert cut.endswith("\nThe dog runs.")
