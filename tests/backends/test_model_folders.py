"""A model folder is checked for everything its kind needs before anything is scored
(issue 43, rule 3): for each kind the registry decides (a causal LM, a sequence
classifier, a multiple-choice model, an ``nlieval train`` pair classifier, a LoRA
checkpoint), a tiny folder with one needed file removed or emptied of a tensor is one
line naming that file, raised while the scorer loads; nothing is drawn at random in its
place. A model the user starts training from (a base, ``--init-from``) is a warning."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from safetensors.torch import load_file, save_file  # noqa: E402

from nlieval.backends import HFOptions, resolve  # noqa: E402
from nlieval.backends.lora_classifier import build_lora  # noqa: E402
from nlieval.backends.weights import ModelError  # noqa: E402
from nlieval.classifiers import (  # noqa: E402
    ClassifierError,
    ClassifierMeta,
    LoraSettings,
    PairClassifier,
    save_classifier,
)
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402
from tests.helpers.tiny_models import tiny_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WORDS = list("abcdefghijklmnopqrstuvwxyz")
NLI3 = ("entailment", "neutral", "contradiction")
BERT_TOKENIZER = ("vocab.txt", "tokenizer.json", "tokenizer_config.json")
LLAMA_TOKENIZER = ("tokenizer.json", "tokenizer_config.json")


def _drop_tensors(file: Path, prefix: str) -> None:
    """Rewrite a safetensors ``file`` without the tensors whose name starts with ``prefix``."""
    state = load_file(str(file))
    kept = {k: v for k, v in state.items() if not k.startswith(prefix)}
    assert len(kept) < len(state), f"no tensor of {file} starts with {prefix}"
    save_file(kept, str(file), metadata={"format": "pt"})


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One sound tiny folder of each kind."""
    root = tmp_path_factory.mktemp("kinds")
    lm = tiny_model(root / "lm", "llama")
    seq = make_tiny_bert(
        root / "seq",
        WORDS,
        head="BertForSequenceClassification",
        id2label=dict(enumerate(NLI3)),
    )
    mc = make_tiny_bert(root / "mc", WORDS, head="BertForMultipleChoice")
    bert = make_tiny_bert(root / "bert", WORDS)
    from transformers import AutoModel, AutoTokenizer

    clf = save_classifier(
        PairClassifier(AutoModel.from_pretrained(bert), 3),
        AutoTokenizer.from_pretrained(bert),
        ClassifierMeta(NLI3),
        root / "clf",
    )
    settings = LoraSettings(4, 8)
    lora_model, lora_tok = build_lora(str(lm), 3, settings, seed=0)
    lora = save_classifier(
        lora_model,
        lora_tok,
        ClassifierMeta(
            NLI3,
            pool="last",
            base_model=lora_model.base["base_path"],
            adapter={"method": "lora", **settings.to_dict(), **lora_model.base},
        ),
        root / "lora",
    )
    return {"lm": lm, "seq": seq, "mc": mc, "clf": clf, "lora": lora}


def _remove(*names: str) -> Callable[[Path], None]:
    def change(folder: Path) -> None:
        for name in names:
            (folder / name).unlink(missing_ok=True)

    return change


def _drop(file: str, prefix: str) -> Callable[[Path], None]:
    return lambda folder: _drop_tensors(folder / file, prefix)


# (kind, what the registry must call it, change, the file the one line must name)
CASES = [
    ("lm", "causal-lm", _drop("model.safetensors", "lm_head."), "model.safetensors"),
    ("lm", "causal-lm", _drop("model.safetensors", "model.norm."), "model.safetensors"),
    ("lm", "causal-lm", _remove(*LLAMA_TOKENIZER), "tokenizer"),
    ("lm", "causal-lm", _remove("model.safetensors"), "model.safetensors"),
    ("seq", "sequence-classifier", _drop("model.safetensors", "classifier."), "model.safetensors"),
    ("seq", "sequence-classifier", _remove(*BERT_TOKENIZER), "vocab.txt"),
    ("mc", "multiple-choice", _drop("model.safetensors", "classifier."), "model.safetensors"),
    ("mc", "multiple-choice", _remove(*BERT_TOKENIZER), "vocab.txt"),
    ("clf", "classifier-folder", _remove("classifier_head.safetensors"), "classifier_head"),
    ("clf", "classifier-folder", _drop("classifier_head.safetensors", "bias"), "classifier_head"),
    ("clf", "classifier-folder", _remove(*BERT_TOKENIZER), "vocab.txt"),
    (
        "clf",
        "classifier-folder",
        _drop("model.safetensors", "encoder.layer.1."),
        "model.safetensors",
    ),
    ("clf", "classifier-folder", _remove("config.json"), "config"),
    ("lora", "classifier-folder", _remove("adapter_model.safetensors"), "adapter_model"),
    ("lora", "classifier-folder", _remove("adapter_config.json"), "adapter_config.json"),
    (
        "lora",
        "classifier-folder",
        _drop("adapter_model.safetensors", "base_model.model.score"),
        "adapter_model",
    ),
    (
        "lora",
        "classifier-folder",
        _drop("adapter_model.safetensors", "base_model.model.model.layers.1."),
        "adapter_model",
    ),
    ("lora", "classifier-folder", _remove(*LLAMA_TOKENIZER), "tokenizer"),
]


@pytest.mark.parametrize(
    ("kind", "decided", "change", "named"),
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_a_folder_missing_what_its_kind_needs_is_one_line_naming_the_file(
    folders: dict[str, Path],
    tmp_path: Path,
    kind: str,
    decided: str,
    change: Callable[[Path], None],
    named: str,
) -> None:
    sound = resolve(str(folders[kind]), hf=HFOptions(device="cpu"))
    assert sound.kind == decided
    sound.scorer()  # the sound folder loads: what fails below is the change alone

    folder = tmp_path / kind
    shutil.copytree(folders[kind], folder)
    change(folder)
    with pytest.raises((ModelError, ClassifierError)) as err:
        model = resolve(str(folder), hf=HFOptions(device="cpu"))
        model.check()
        model.scorer()
    message = str(err.value)
    assert "\n" not in message
    assert str(folder) in message and named in message, message


def test_a_classifier_folder_whose_labels_are_not_its_head_outputs_is_refused(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    # Its description names two labels, its head has three outputs.
    folder = tmp_path / "clf"
    shutil.copytree(folders["clf"], folder)
    meta = json.loads((folder / "nlieval_classifier.json").read_text())
    meta["labels"] = ["entailment", "non-entailment"]
    (folder / "nlieval_classifier.json").write_text(json.dumps(meta))
    with pytest.raises(ClassifierError) as err:
        resolve(str(folder), hf=HFOptions(device="cpu")).scorer()
    message = str(err.value)
    assert "\n" not in message and "classifier_head.safetensors" in message, message
    assert "3 outputs" in message and "2 labels" in message


def test_a_sequence_classifier_without_its_label_names_is_refused(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    # No id2label: transformers would name two outputs LABEL_0 and LABEL_1 by default,
    # while the head has three.
    folder = tmp_path / "seq"
    shutil.copytree(folders["seq"], folder)
    config = json.loads((folder / "config.json").read_text())
    del config["id2label"], config["label2id"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="config.json") as err:
        resolve(str(folder), hf=HFOptions(device="cpu")).scorer()
    assert "\n" not in str(err.value)


def test_a_start_the_user_asked_for_is_a_warning_not_an_error(
    folders: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # --init-from a classifier whose encoder lacks a layer: training starts from it, the
    # missing layer at random, and the user is told which file lacked what.
    from nlieval.sci.train_config import TrainConfig
    from nlieval.sci.train_model import build_model

    folder = tmp_path / "clf"
    shutil.copytree(folders["clf"], folder)
    _drop_tensors(folder / "model.safetensors", "encoder.layer.1.")
    config = TrainConfig(str(folders["clf"]), "smoke")
    with caplog.at_level(logging.WARNING, logger="nlieval"):
        model, _ = build_model(config, NLI3, 0, init_from=folder)
    assert model.head.out_features == 3
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(folder / "model.safetensors") in m and "encoder.layer.1." in m for m in warned)
