"""Causal language models as pair classifiers, fine-tuned with LoRA adapters (PEFT).

A decoder-only model reads a pair as one text, the premise, a newline and the hypothesis
(the tokenizer's pair encoding with the hypothesis behind a newline, so that truncation
still cuts the longer sentence first), and is classified from its last real token: the
model's own ``...ForSequenceClassification`` class (Llama, Qwen, Gemma, SmolLM, GPT-2,
...), whose ``score`` head is trained in full while LoRA adapters of rank ``r`` and
scale ``alpha / r`` are added to the attention projections (PEFT's defaults for the
model type). Nothing else of the base model changes, so a checkpoint is the adapters and
the head (a few MB) plus the nlieval description; the base model is named there and
loaded again, by the model registry, when the checkpoint is used.

:class:`LoraPairClassifier` is the module the training loop and
:class:`~nlieval.backends.classifier.EncoderClassifier` use; :func:`build_lora` makes
one for training, :func:`save_lora` and :func:`load_lora` write and read the
checkpoint folder (called by :func:`~nlieval.backends.classifier.save_classifier` and
:func:`~nlieval.backends.classifier.load_classifier`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from .adapters import SEPARATOR, LoraSettings

__all__ = [
    "SEPARATOR",
    "LoraPairClassifier",
    "LoraSettings",
    "base_folder",
    "build_lora",
    "load_lora",
    "save_lora",
]


class LoraPairClassifier(nn.Module):
    """A PEFT-wrapped sequence-classification model with the interface of
    :class:`~nlieval.backends.classifier.PairClassifier`: ``model(**encoded)`` gives
    the logits, ``pool`` is ``"last"``, ``num_labels`` the head's outputs."""

    pool = "last"

    def __init__(self, peft_model: Any, num_labels: int) -> None:
        super().__init__()
        self.peft: Any = peft_model
        self.num_labels = num_labels

    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.peft(**inputs).logits
        return logits


def base_folder(name: str) -> str:
    """The local folder (or hub id) of a base model named as the registry names models:
    an alias (``smollm2-135m``) or a GGUF file is converted once and its folder given.

    >>> base_folder("org/some-model")
    'org/some-model'
    """
    from .weights import loadable_source

    return str(loadable_source(name).path)


def _tokenizer(folder: str) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    if tok.pad_token is None:
        # The classification head reads the last token that is not padding; a decoder's
        # tokenizer often has no pad token, and its end-of-text token never occurs in a pair.
        tok.pad_token = tok.eos_token
    return tok


def _base(folder: str, num_labels: int, pad_token_id: int) -> Any:
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification.from_pretrained(
        folder, num_labels=num_labels, pad_token_id=pad_token_id, dtype=torch.float32
    )


def build_lora(
    base_model: str, num_labels: int, settings: LoraSettings, seed: int
) -> tuple[LoraPairClassifier, Any]:
    """(model, tokenizer) for training: ``base_model`` as a sequence classifier with a
    fresh head (drawn from ``seed``) and fresh LoRA adapters (in the top
    ``settings.layers`` layers only, when given), only these trainable.

    >>> model, tok = build_lora(tiny_lm, 3, LoraSettings(4, 8), seed=0)
    >>> trainable = {n.split(".default")[0].split(".")[-1]
    ...              for n, p in model.named_parameters() if p.requires_grad}
    >>> sorted(trainable)  # the adapters, and the head (PEFT's copy of it that trains)
    ['lora_A', 'lora_B', 'modules_to_save']
    """
    from peft import LoraConfig, TaskType, get_peft_model

    folder = base_folder(base_model)
    tok = _tokenizer(folder)
    torch.manual_seed(seed)
    base = _base(folder, num_labels, tok.pad_token_id)
    hidden = getattr(base.config.get_text_config(), "hidden_size", None)
    if isinstance(hidden, int) and settings.r > hidden:
        raise ValueError(
            f"--lora rank {settings.r} is above the hidden size of {folder} ({hidden}): "
            f"an adapter of that rank is no longer low-rank; give a rank of at most "
            f"{hidden} (usual ranks are 4 to 64)"
        )
    top: list[int] | None = None
    if settings.layers is not None:
        n = int(base.config.num_hidden_layers)
        if settings.layers > n:
            raise ValueError(f"--lora-layers {settings.layers}: {folder} has {n} layers")
        top = list(range(n - settings.layers, n))
    config = LoraConfig(
        task_type=TaskType.SEQ_CLS,
        r=settings.r,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        layers_to_transform=top,
    )
    return LoraPairClassifier(get_peft_model(base, config), num_labels), tok


def save_lora(model: LoraPairClassifier, folder: Path) -> None:
    """Write the adapters and the head (PEFT's ``save_pretrained``) into ``folder``."""
    model.peft.save_pretrained(str(folder))


def load_lora(
    folder: str | Path, base_model: str, num_labels: int
) -> tuple[LoraPairClassifier, Any]:
    """(model, tokenizer) of a checkpoint folder written by :func:`save_lora` (its
    tokenizer saved beside it), on top of ``base_model`` loaded again."""
    from peft import PeftModel

    tok = _tokenizer(str(folder))
    base = _base(base_folder(base_model), num_labels, tok.pad_token_id)
    peft = PeftModel.from_pretrained(base, str(folder))
    return LoraPairClassifier(peft, num_labels), tok
