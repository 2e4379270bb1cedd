"""A model that computes NaN or infinite numbers in process stops the run with one line
naming the item, as a server that returns them does; records written before stay as
they were (issue 34: a NaN head bias printed a table of first-label predictions).

The models are the tiny random ones of the fixtures with a NaN or an infinity planted by
hand: the embedding of the byte ``Z`` (so only texts holding a ``Z`` are poisoned), or a
classifier's head bias.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from transformers import (  # noqa: E402
    AutoModel,
    AutoModelForCausalLM,
    AutoTokenizer,
    BertForSequenceClassification,
)

from nlieval.backends import HFOptions, NonFiniteScore, ScoreRequest  # noqa: E402
from nlieval.backends.classifier import EncoderClassifier, classify_records  # noqa: E402
from nlieval.backends.generator import LocalChat  # noqa: E402
from nlieval.backends.hf import HFCausalLM  # noqa: E402
from nlieval.classifiers import ClassifierMeta, PairClassifier, save_classifier  # noqa: E402
from nlieval.cli import main  # noqa: E402
from nlieval.runs import loop  # noqa: E402
from nlieval.types import NLI3, Item  # noqa: E402
from tests.helpers.records import saved_records  # noqa: E402
from tests.helpers.task_files import premise_task  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_logging")


WORDS = ["a", "man", "walks", "dog", "number", "cat", "sits", ".", *"0123456"]


@pytest.fixture(scope="module")
def z_llama(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama whose embedding of ``Z`` is NaN: a text with a Z is NaN to it."""
    folder = tmp_path_factory.mktemp("z-llama")
    tok = AutoTokenizer.from_pretrained(tiny_llama)
    model = AutoModelForCausalLM.from_pretrained(tiny_llama)
    (z,) = tok("Z")["input_ids"]
    with torch.no_grad():
        model.get_input_embeddings().weight[z] = float("nan")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("nlieval:")]
    return line


SHOTS = "Premise: A man is playing a guitar on stage.\nAnswer: A\n\n"


@pytest.mark.parametrize(
    "how",
    [{}, {"prefix_cache": False}, {"prefix_attention": "rows"}],
    ids=["cascade", "plain", "cached"],
)
@pytest.mark.parametrize("poisoned", ["suffix", "prefix"])
def test_every_path_of_the_causal_lm_refuses_a_nan(
    z_llama: Path, how: dict[str, Any], poisoned: str
) -> None:
    shots = SHOTS.replace("man", "Zed man") if poisoned == "prefix" else SHOTS
    premises = ("a cat naps.", "a Zebra naps.", "two dogs.")
    reqs = [
        ScoreRequest(f"{shots}Premise: {p}\nAnswer:", (" A", " B"), len(shots)) for p in premises
    ]
    lm = HFCausalLM(str(z_llama), HFOptions(device="cpu", **how))
    with pytest.raises(NonFiniteScore) as err:
        lm.loglikelihood(reqs)
    # The Z of the suffix poisons request 1 alone; the Z of the shared shots every request.
    assert err.value.index == (1 if poisoned == "suffix" else 0)
    assert "NaN log-likelihood" in str(err.value)
    if how == {}:
        assert lm.counts["cascade_batches"] >= 1  # shared-prefix attention was taken
    # Without a Z the same model scores finite numbers.
    clean_req = ScoreRequest(f"{SHOTS}Premise: a cat.\nAnswer:", (" A",), len(SHOTS))
    clean = lm.loglikelihood([clean_req])
    assert all(abs(x) < 1e6 for x in clean[0])


def test_run_stops_at_the_nan_item_in_one_line_and_keeps_earlier_records(
    tmp_path: Path, z_llama: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    premises = {f"i{n}": f"A man walks dog {n}." for n in range(6)}
    premises["zed"] = "A Zebra walks a very long way through the snow to the park."  # longest
    yaml = premise_task(tmp_path, "nf", premises)
    monkeypatch.setattr(loop, "CHUNK", 3)  # shortest first: two chunks before the Z item
    monkeypatch.setattr(loop, "CHUNK_SECONDS", 0)
    out = tmp_path / "run"
    argv = ["run", "--model", str(z_llama), "--task", str(yaml), "--out", str(out),
            "--shots", "0", "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "item 'zed' of task" in err and "NaN log-likelihood" in err
    kept = sorted(r.item_id for r in saved_records(out))
    assert kept == [f"i{n}" for n in range(6)]
    before = (out / "records.jsonl").read_bytes()  # by hand: bytes
    # The same command again: the same line, and the records written are left as they were.
    assert main(argv) == 2
    assert "item 'zed'" in _one_error_line(capsys.readouterr().err)
    assert (out / "records.jsonl").read_bytes() == before


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("bert"), WORDS)


def _poisoned_classifier(bert: Path, folder: Path, value: float) -> Path:
    """A 3-way BertForSequenceClassification whose head bias of output 1 is ``value``."""
    id2label = {0: "entailment", 1: "neutral", 2: "contradiction"}
    model = BertForSequenceClassification.from_pretrained(bert, id2label=id2label)
    with torch.no_grad():
        model.classifier.bias[1] = value
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(bert).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("value", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_a_sequence_classifier_with_a_non_finite_head_stops_in_one_line(
    bert: Path, tmp_path: Path, value: float, capsys: pytest.CaptureFixture[str]
) -> None:
    clf = _poisoned_classifier(bert, tmp_path / "clf", value)
    yaml = premise_task(tmp_path, "nf", {f"i{n}": f"a man walks dog {n} ." for n in range(6)})
    out = tmp_path / "run"
    argv = ["run", "--model", str(clf), "--task", str(yaml), "--out", str(out), "--no-progress",
            "--device", "cpu"]  # fmt: skip
    assert main(argv) == 2
    err = _one_error_line(capsys.readouterr().err)
    # +inf among finite logits: log-softmax gives NaN (inf - inf) for every output.
    assert "NaN log-probability" in err and "item 'i" in err and "of task nf" in err
    assert saved_records(out) == []  # no table, no record of first-label predictions


def _pair_folder(bert: Path, folder: Path, value: float) -> Path:
    model = PairClassifier(AutoModel.from_pretrained(bert), 3)
    with torch.no_grad():
        model.head.bias[0] = value
    meta = ClassifierMeta(tuple(x.value for x in NLI3), max_length=32)
    return save_classifier(model, AutoTokenizer.from_pretrained(bert), meta, folder)


def test_a_classifier_folder_with_a_nan_head_stops_in_one_line(
    bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _pair_folder(bert, tmp_path / "ckpt", float("nan"))
    yaml = premise_task(tmp_path, "nf", {f"i{n}": f"a man walks dog {n} ." for n in range(4)})
    out = tmp_path / "run"
    argv = ["run", "--model", str(folder), "--task", str(yaml), "--out", str(out),
            "--no-progress", "--device", "cpu"]  # fmt: skip
    assert main(argv) == 2
    err = _one_error_line(capsys.readouterr().err)
    assert "NaN log-probability" in err and "item 'i" in err
    assert saved_records(out) == []


def test_a_lora_classifier_with_a_nan_head_is_refused_by_item(tiny_llama: Path) -> None:
    pytest.importorskip("peft")
    from nlieval.backends import build_lora
    from nlieval.classifiers import LoraSettings

    model, tok = build_lora(str(tiny_llama), 3, LoraSettings(2, 4), seed=0)
    adapter = {"method": "lora", "r": 2, "alpha": 4}
    labels = tuple(x.value for x in NLI3)
    meta = ClassifierMeta(labels, max_length=32, pool="last", separator="\n", adapter=adapter)
    clf = EncoderClassifier.from_model(model, tok, meta, name="lora")
    items = [Item("a", "A man walks.", "A cat sits.", None), Item("b", "Two dogs.", "A cat.", None)]
    assert len(classify_records(clf, items, NLI3, task="t", model="lora")) == 2
    head = next(p for n, p in model.named_parameters() if "modules_to_save" in n and p.ndim == 2)
    with torch.no_grad():
        head[2, 0] = float("nan")
    with pytest.raises(NonFiniteScore) as err:
        classify_records(clf, items, NLI3, task="t", model="lora")
    assert "item 'a' of task t" in str(err.value)


def test_a_local_chat_model_with_nan_weights_names_the_conversation(
    tiny_llama: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "nan-llama"
    shutil.copytree(tiny_llama, folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    with torch.no_grad():
        model.lm_head.weight[5] = float("nan")  # one vocabulary row: every step's scores
    model.save_pretrained(folder)
    chat = LocalChat(str(folder), HFOptions(device="cpu"))
    convs = [[{"role": "user", "content": "Premise: A man naps."}]]
    for temperature in (0.0, 1.0):  # greedy would take token 0; sampling failed in torch
        with pytest.raises(NonFiniteScore) as err:
            chat.generate(convs, max_new_tokens=3, temperature=temperature)
        assert "'Premise: A man naps.'" in str(err.value) and "NaN next-token" in str(err.value)
