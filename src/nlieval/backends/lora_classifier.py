"""Causal language models as pair classifiers, fine-tuned with LoRA adapters (PEFT).

A decoder-only model reads a pair as one text, the premise, a newline and the hypothesis
(the tokenizer's pair encoding with the hypothesis behind a newline, so that truncation
still cuts the longer sentence first), and is classified from its last real token: the
model's own ``...ForSequenceClassification`` class (Llama, Qwen, Gemma, SmolLM, GPT-2,
...), whose ``score`` head is trained in full while LoRA adapters of rank ``r`` and
scale ``alpha / r`` are added to the attention projections (PEFT's defaults for the
model type). Nothing else of the base model changes, so a checkpoint is the adapters and
the head (a few MB) plus the nlieval description; the base model is named there and
loaded again, by the model registry, when the checkpoint is used. The description holds
the base by content: its path made absolute (``base_path``: a checkpoint used from
another directory finds the same base) and its fingerprint (``base_fingerprint``, see
:func:`~nlieval.backends.weights.model_fingerprint`); a base whose weights are not those
any more is refused in one line (:func:`lora_base`), never scored with adapters trained
on other weights.

:class:`~nlieval.classifiers.LoraPairClassifier` (the trainable classifier's room) is
the module the training loop and :class:`~nlieval.backends.classifier.EncoderClassifier`
use; :func:`build_lora` makes one for training on its base model loaded here, and
:func:`load_lora` reads a checkpoint folder that
:func:`~nlieval.classifiers.save_classifier` wrote (called by
:func:`~nlieval.backends.classifier.load_classifier`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ..classifiers import LoraPairClassifier, LoraSettings

if TYPE_CHECKING:
    from .weights import ModelSource

__all__ = [
    "LoraSettings",
    "base_folder",
    "base_identity",
    "build_lora",
    "load_lora",
    "lora_base",
]


def base_folder(name: str) -> str:
    """The local folder (or hub id) of a base model named as the registry names models:
    an alias (``smollm2-135m``) or a GGUF file is converted once and its folder given.

    >>> base_folder("org/some-model")
    'org/some-model'
    """
    from .weights import loadable_source

    return str(loadable_source(name).path)


def base_identity(name: str) -> dict[str, str]:
    """What a LoRA checkpoint records of its base model ``name``: ``base_path``, a local
    folder or file made absolute (an alias or a hub id as given), and ``base_fingerprint``.

    >>> ident = base_identity(tiny_lm)
    >>> ident["base_path"] == str(Path(tiny_lm).resolve()), ident["base_fingerprint"][:6]
    (True, 'files:')
    """
    from .weights import model_fingerprint, resolve_model

    local = Path(name).expanduser()
    path = str(local.resolve()) if local.exists() else name
    return {"base_path": path, "base_fingerprint": model_fingerprint(resolve_model(path))}


def lora_base(base_model: str, adapter: Mapping[str, Any] | None, where: str) -> ModelSource:
    """The base model of a LoRA checkpoint (``where``, for messages) described by
    ``base_model`` and its ``adapter`` entry: the recorded ``base_path`` (else
    ``base_model``), whose fingerprint must still be ``base_fingerprint`` when one is
    recorded; otherwise a :class:`~nlieval.backends.weights.ModelError` in one line.

    >>> lora_base(tiny_lm, base_identity(tiny_lm), "ckpt").path == str(Path(tiny_lm).resolve())
    True
    >>> lora_base(tiny_lm, {"base_fingerprint": "files:0"}, "ckpt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.backends.weights.ModelError: ckpt: its base model ... has other weights than ...
    """
    from .weights import ModelError, model_fingerprint, resolve_model

    recorded = dict(adapter or {})
    name = str(recorded.get("base_path") or base_model)
    source = resolve_model(name)
    want = recorded.get("base_fingerprint")
    if want:
        got = model_fingerprint(source)
        if got != want:
            raise ModelError(
                f"{where}: its base model {name} has other weights than the adapters were "
                f"trained on ({want} then, {got} now); put that model back, or train again"
            )
    return source


#: The files of PEFT's ``save_pretrained`` that a LoRA checkpoint needs: the adapters'
#: configuration and their weights (with the head, PEFT's ``modules_to_save``).
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
#: The heads of transformers' sequence classifiers, fresh on a base model: PEFT's
#: ``modules_to_save`` for a sequence-classification task, loaded from the adapter file.
HEAD_MODULES = ("score", "classifier")


def _tokenizer(folder: str) -> Any:
    from .weights import load_tokenizer

    tok = load_tokenizer(folder, folder)
    if tok.pad_token is None:
        # The classification head reads the last token that is not padding; a decoder's
        # tokenizer often has no pad token, and its end-of-text token never occurs in a pair.
        tok.pad_token = tok.eos_token
    return tok


def _base(folder: str, num_labels: int, pad_token_id: int) -> Any:
    from transformers import AutoModelForSequenceClassification

    from .weights import refuse_new_weights

    model, info = AutoModelForSequenceClassification.from_pretrained(
        folder,
        num_labels=num_labels,
        pad_token_id=pad_token_id,
        dtype=torch.float32,
        output_loading_info=True,
    )
    # The head is new on a base model (trained, or loaded with the adapters); any other
    # parameter missing from the base's files would be random under the adapters.
    refuse_new_weights(info, folder, "LoRA base model", expected=HEAD_MODULES)
    return model


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
    ident = base_identity(base_model)  # after the load: a hub model is in its cache now
    return LoraPairClassifier(get_peft_model(base, config), num_labels, ident), tok


def load_lora(
    folder: str | Path,
    base_model: str,
    num_labels: int,
    adapter: Mapping[str, Any] | None = None,
) -> tuple[LoraPairClassifier, Any]:
    """(model, tokenizer) of a LoRA checkpoint folder written by
    :func:`~nlieval.classifiers.save_classifier` (its tokenizer saved beside it), on top of its
    base model (``base_model`` and the description's ``adapter`` entry:
    :func:`lora_base`) loaded again."""
    import warnings

    from peft import PeftModel

    from .weights import ModelError, loadable_source

    for name in ADAPTER_FILES:
        if not (Path(folder) / name).is_file():
            raise ModelError(f"{Path(folder) / name}: missing; a LoRA checkpoint needs it")
    source = lora_base(base_model, adapter, str(folder))
    tok = _tokenizer(str(folder))
    base = _base(loadable_source(source).path, num_labels, tok.pad_token_id)
    weights = Path(folder) / ADAPTER_FILES[1]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            peft = PeftModel.from_pretrained(base, str(folder))
        except KeyError as err:  # PEFT's word on a head (modules_to_save) not in the file
            raise ModelError(f"{weights}: no weights for {err} (the head)") from None
    for w in seen:
        # PEFT's only word on adapter weights absent from the file: a warning.
        if "missing adapter keys" in str(w.message):
            raise ModelError(
                f"{weights}: does not hold every adapter weight of its adapter_config.json "
                "(PEFT would leave them at their initial values)"
            )
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return LoraPairClassifier(
        peft,
        num_labels,
        {k: str(v) for k, v in (adapter or {}).items() if k in ("base_path", "base_fingerprint")},
    ), tok
