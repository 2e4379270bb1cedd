"""The trainable classifier as torch modules, and its checkpoint folder written and read.

:class:`PairClassifier` is an encoder with a linear head on one token's final hidden
state ("[CLS] s1 [SEP] s2", the tokenizer's own pair encoding: :func:`encode_pairs`);
:class:`LoraPairClassifier` a decoder as a sequence classifier under LoRA adapters
(PEFT); a multiple-choice model reads each choice of an item as one input
(:func:`choice_pairs`, :func:`choice_logits`). :func:`save_classifier` writes one
checkpoint folder (:mod:`.folder`), :func:`load_head` reads its head back. Loading the
encoder a folder names, and scoring with it, is the engines' (:mod:`nlieval.backends`).
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from ..ground import atomic_write, check_inside, make_folder
from ..types import Item
from .folder import CHOICE_HEAD, HEAD_FILE, META_FILE, ClassifierError, ClassifierMeta, head_file

# Encoders whose summary token is the last one (XLNet puts <cls> at the end, pads left).
_LAST_TOKEN_TYPES = frozenset({"xlnet"})


class PairClassifier(nn.Module):
    """An encoder plus dropout and a linear head on one token's final hidden state.

    >>> from transformers import BertConfig, BertModel
    >>> enc = BertModel(BertConfig(vocab_size=10, hidden_size=32, num_hidden_layers=2,
    ...                            num_attention_heads=2, intermediate_size=64))
    >>> model = PairClassifier(enc, 3)
    >>> model.pool, model(input_ids=torch.tensor([[2, 5, 3], [2, 6, 3]])).shape
    ('first', torch.Size([2, 3]))
    """

    def __init__(self, encoder: Any, num_labels: int, *, pool: str | None = None) -> None:
        super().__init__()
        cfg = encoder.config
        self.encoder: Any = encoder
        self.pool = pool or default_pool(encoder)
        # The encoder's own dropout rate, the usual choice for the classification head.
        rate = next(
            (
                float(v)
                for v in (
                    getattr(cfg, name, None)
                    for name in ("hidden_dropout_prob", "dropout", "hidden_dropout")
                )
                if isinstance(v, (int, float))
            ),
            0.1,
        )
        self.dropout = nn.Dropout(rate)
        self.head = nn.Linear(int(cfg.hidden_size), num_labels)
        self.reset_head()

    def reset_head(self) -> None:
        """Fresh head weights (normal with the encoder's initializer range, zero bias);
        draws from torch's global generator, so seed it first."""
        std = float(getattr(self.encoder.config, "initializer_range", 0.02) or 0.02)
        nn.init.normal_(self.head.weight, mean=0.0, std=std)
        nn.init.zeros_(self.head.bias)

    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(**inputs, return_dict=True).last_hidden_state
        vec = hidden[:, 0] if self.pool == "first" else hidden[:, -1]
        logits: torch.Tensor = self.head(self.dropout(vec))
        return logits


class LoraPairClassifier(nn.Module):
    """A PEFT-wrapped sequence-classification model with the interface of
    :class:`~nlieval.classifiers.PairClassifier`: ``model(**encoded)`` gives
    the logits, ``pool`` is ``"last"``, ``num_labels`` the head's outputs."""

    pool = "last"

    def __init__(
        self, peft_model: Any, num_labels: int, base: Mapping[str, str] | None = None
    ) -> None:
        super().__init__()
        self.peft: Any = peft_model
        self.num_labels = num_labels
        #: The base model's :func:`base_identity`, for the checkpoint's description.
        self.base: dict[str, str] = dict(base or {})

    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.peft(**inputs).logits
        return logits


#: What a checkpoint folder holds: an encoder with a head, or a decoder with LoRA adapters.
PairModel = PairClassifier | LoraPairClassifier


def default_pool(encoder: nn.Module) -> str:
    """``"last"`` for encoders whose summary token ends the input (XLNet), else ``"first"``."""
    return "last" if getattr(encoder.config, "model_type", "") in _LAST_TOKEN_TYPES else "first"


def encode_pairs(
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    *,
    max_length: int,
    hypothesis_only: bool = False,
    separator: str = "",
) -> Any:
    """Padded tensors for a batch: the tokenizer's pair encoding (``separator`` put before
    each hypothesis), or the second sentence alone for a hypothesis-only model. Long pairs
    are cut, the longer sentence first.

    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(tiny_lm)
    >>> premise, hypothesis = "A man is playing a guitar on stage. " * 3, "A person makes music."
    >>> hyp = tok(hypothesis)["input_ids"]  # 7 tokens, the premise some 30
    >>> enc = encode_pairs(tok, [(premise, hypothesis), ("A man sleeps.", "He rests.")],
    ...                    max_length=16)
    >>> enc["input_ids"].shape, enc["input_ids"][0, -len(hyp):].tolist() == hyp  # premise cut
    (torch.Size([2, 16]), True)
    >>> encode_pairs(tok, [("A man sleeps.", "A person makes music.")], max_length=16,
    ...              hypothesis_only=True)["input_ids"][0].tolist() == hyp
    True
    """
    hyps = [separator + h for _, h in pairs] if not hypothesis_only else [h for _, h in pairs]
    if hypothesis_only:
        return tokenizer(
            hyps, truncation=True, max_length=max_length, padding=True, return_tensors="pt"
        )
    return tokenizer(
        [p for p, _ in pairs],
        hyps,
        truncation="longest_first",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


def save_classifier(
    model: PairModel, tokenizer: Any, meta: ClassifierMeta, folder: str | Path
) -> Path:
    """Write a checkpoint folder (replacing any old one only once the new one is complete).

    >>> from transformers import AutoModel, AutoTokenizer
    >>> model = PairClassifier(AutoModel.from_pretrained(tiny_lm), 3)  # a random head
    >>> meta = ClassifierMeta(("entailment", "neutral", "contradiction"))
    >>> folder = save_classifier(model, AutoTokenizer.from_pretrained(tiny_lm), meta,
    ...                          Path(run_dir) / "seed0")
    >>> from nlieval.classifiers import is_classifier_folder
    >>> is_classifier_folder(folder), [p.name for p in Path(run_dir).iterdir()]  # no temp left
    (True, ['seed0'])
    """
    from safetensors.torch import save_file

    if meta.head == CHOICE_HEAD:
        outputs = len(meta.labels)  # one score per choice, whatever their number
    elif isinstance(model, LoraPairClassifier):
        outputs = model.num_labels
    else:
        outputs = model.head.out_features
    if len(meta.labels) != outputs:
        raise ClassifierError(f"{len(meta.labels)} labels for a head with {outputs} outputs")
    folder = Path(folder)
    make_folder(folder.parent)
    # The checkpoint replaces ``folder`` whole: a link there is refused, never removed or
    # written through (its target is not the run's).
    check_inside(folder, folder.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        tokenizer.save_pretrained(tmp)
        if meta.head == CHOICE_HEAD:
            cast(Any, model).save_pretrained(tmp)  # the whole model: it loads as it is, anywhere
        elif isinstance(model, LoraPairClassifier):
            save_lora(model, tmp)  # adapters and head; the base model is named in meta
        else:
            model.encoder.save_pretrained(tmp)
            head = {k: v.detach().cpu().contiguous() for k, v in model.head.state_dict().items()}
            save_file(head, str(tmp / HEAD_FILE))
        atomic_write(tmp / META_FILE, json.dumps(meta.to_dict(), indent=2) + "\n", root=tmp)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return folder


def load_head(model: PairClassifier, folder: str | Path) -> None:
    """Put the saved head of ``folder`` into ``model`` (shapes must match)."""
    from safetensors.torch import load_file

    path = head_file(folder)
    try:
        state = load_file(str(path))
    except (OSError, ValueError) as err:  # safetensors' own error for a damaged file
        raise ClassifierError(f"{path}: cannot read the head: {err}") from None
    want = model.head.state_dict()
    missing = sorted(set(want) - set(state))
    if missing:
        raise ClassifierError(f"{path}: no {', '.join(missing)} of the head")
    for key, tensor in want.items():
        if tuple(state[key].shape) != tuple(tensor.shape):
            # Its first size is the number of outputs; torch's own report is many lines.
            raise ClassifierError(
                f"{path}: the head has {state[key].shape[0]} outputs, {META_FILE} names "
                f"{tensor.shape[0]} labels (or the head is of another encoder: {key} "
                f"{list(state[key].shape)}, the model {list(tensor.shape)})"
            )
    try:
        model.head.load_state_dict(state)
    except RuntimeError as err:
        raise ClassifierError(f"{folder}: head does not fit this model: {err}") from None


def save_lora(model: LoraPairClassifier, folder: Path) -> None:
    """Write the adapters and the head (PEFT's ``save_pretrained``) into ``folder``."""
    model.peft.save_pretrained(str(folder))


# --------------------------------------------------------------------------- choices


#: One item as a multiple-choice model reads it: per choice, the (first, second) segment
#: of the tokenizer's pair encoding.
ChoicePairs = tuple[tuple[str, str], ...]


def choice_pairs(item: Item) -> ChoicePairs:
    """Per choice of ``item``, the two segments of its input.

    The layout is that of the alpha-NLI paper's released fine-tuning code (Bhagavatula et
    al., ICLR 2020, its default option format): the first observation followed by the
    hypothesis, then the second observation as the second segment, so that the
    hypothesis sits between the observations it explains, in story order, and the
    tokenizer's own pair encoding marks where the story's end begins (``[CLS] O1 H
    [SEP] O2 [SEP]`` for BERT, ``<s> O1 H </s></s> O2 </s>`` for RoBERTa).

    >>> item = Item("1", "Ann went out.", "She was wet.", None, ("It rained.", "It was dry."))
    >>> choice_pairs(item)
    (('Ann went out. It rained.', 'She was wet.'), ('Ann went out. It was dry.', 'She was wet.'))
    """
    return tuple((f"{item.premise} {choice}".strip(), item.hypothesis) for choice in item.choices)


def encode_choices(tokenizer: Any, items: Sequence[ChoicePairs], *, max_length: int) -> Any:
    """Padded tensors of shape (items, choices, tokens) for a batch of items with the
    same number of choices: each choice the tokenizer's pair encoding of its two
    segments, the longer segment cut first to ``max_length`` tokens.

    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(tiny_encoder)
    >>> enc = encode_choices(tok, [(("a b", "c"), ("a", "c"))] * 3, max_length=8)
    >>> tuple(enc["input_ids"].shape)  # [CLS] a b [SEP] c [SEP]: 6 tokens, the other padded
    (3, 2, 6)
    """
    sizes = {len(pairs) for pairs in items}
    if len(sizes) != 1:
        raise ValueError(f"one batch holds items of {sorted(sizes)} choices")
    (n,) = sizes
    flat = [pair for pairs in items for pair in pairs]
    enc = tokenizer(
        [a for a, _ in flat],
        [b for _, b in flat],
        truncation="longest_first",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )
    for key in list(enc.keys()):
        enc[key] = enc[key].view(len(items), n, -1)
    return enc


def choice_logits(model: Any, tokenizer: Any, items: Sequence[Item], *, max_length: int) -> Any:
    """The model's logits, (items, choices), for ``items`` with the same number of
    choices (with gradients when the caller trains)."""
    enc = encode_choices(tokenizer, [choice_pairs(it) for it in items], max_length=max_length)
    device = next(model.parameters()).device
    params = inspect.signature(model.forward).parameters
    inputs = {
        k: v.to(device)
        for k, v in enc.items()
        if k != "token_type_ids" or "token_type_ids" in params
    }
    return model(**inputs).logits
