"""The model of a training run: an encoder with a fresh (or a checkpoint's) head, the
layers frozen below ``top_layers``, and its optimizer. torch and transformers are
imported inside the functions."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..types import Item
from .train_config import TrainConfig, TrainError, resolve_encoder


def seed_checkpoint(init_from: str | Path, seed: int) -> Path:
    """The checkpoint that seed ``seed`` of a second stage starts from: ``init_from`` itself
    when it is a checkpoint folder, else its ``seed{seed}`` subfolder.

    >>> import tempfile
    >>> from nlieval.classifiers import META_FILE
    >>> root = Path(tempfile.mkdtemp())  # a stage-one folder with one seed's checkpoint
    >>> (root / "seed0").mkdir()
    >>> (root / "seed0" / META_FILE).touch()
    >>> seed_checkpoint(root, 0) == root / "seed0" == seed_checkpoint(root / "seed0", 5)
    True
    >>> seed_checkpoint(root, 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.sci.train_config.TrainError: ... has no seed1 checkpoint (it has seed0)
    """
    from ..backends import resolve

    root = Path(init_from)
    model = resolve(str(root), checked=False)  # from its local folders alone
    if model.kind == "classifier-folder":
        return root
    if str(root / f"seed{seed}") in model.seeds:
        return root / f"seed{seed}"
    if model.seeds:
        names = ", ".join(Path(p).name for p in model.seeds)
        raise TrainError(f"{root} has no seed{seed} checkpoint (it has {names})")
    raise TrainError(f"{root} is neither a classifier checkpoint nor a folder of them")


def build_model(
    config: TrainConfig,
    labels: Sequence[str],
    seed: int,
    *,
    init_from: str | Path | None = None,
    fresh_head: bool = True,
    head: str = "pair",
) -> tuple[Any, Any]:
    """(model, tokenizer) for one seed: the encoder of ``config.model`` (or of the
    checkpoint ``init_from``) with a head drawn from ``seed``, frozen below
    ``config.top_layers``; with ``config.lora``, the model with LoRA adapters and a
    fresh head (:func:`nlieval.backends.build_lora`).
    ``fresh_head=False`` keeps the checkpoint's head instead (its labels must be
    ``labels``, in that order). ``head`` ``multiple-choice`` (items with choices, see
    :func:`nlieval.classifiers.head_for`) is the encoder as transformers'
    ``AutoModelForMultipleChoice``: one score per choice from a fresh linear layer on
    the encoder's pooled first token, the choices compared by a softmax.

    >>> enc = Path(tiny_encoder)  # a tiny random BERT: every word is [UNK] to it
    >>> labels = ("entailment", "neutral", "contradiction")
    >>> model, tok = build_model(TrainConfig(str(enc), "smoke", top_layers=1), labels, 0)
    >>> model.head.out_features
    3
    >>> layers = encoder_layers(model.encoder)  # top_layers=1: only the last one trains
    >>> [any(p.requires_grad for p in layer.parameters()) for layer in layers]
    [False, True]
    """
    import torch
    from transformers import AutoTokenizer

    from ..backends import build_lora, load_encoder
    from ..classifiers import CHOICE_HEAD, PairClassifier, load_head, read_meta

    lora = config.lora_settings
    if head == CHOICE_HEAD:
        from transformers import AutoModelForMultipleChoice

        torch.manual_seed(seed)  # the fresh choice head (and a pooler the encoder lacks)
        source = resolve_encoder(config.model)
        auto: Any = AutoModelForMultipleChoice
        # Its report that the head is missing from the encoder's files says only that
        # the head is new, which it is meant to be: not printed.
        quiet = logging.getLogger("transformers.modeling_utils")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            choice_model = auto.from_pretrained(source)
        finally:
            quiet.setLevel(level)
        if config.top_layers is not None:
            freeze_below_top(choice_model, config.top_layers)
        return choice_model, AutoTokenizer.from_pretrained(source)
    if lora is not None:
        return build_lora(config.model, len(labels), lora, seed)
    source = str(init_from) if init_from is not None else resolve_encoder(config.model)
    torch.manual_seed(seed)
    # A start the user chose: what its files lack starts at random, and they are told.
    encoder, tokenizer = load_encoder(source)
    pool = read_meta(source).pool if init_from is not None else None
    model = PairClassifier(encoder, len(labels), pool=pool)
    if init_from is not None and not fresh_head:
        old = read_meta(source).labels
        if tuple(old) != tuple(labels):
            raise TrainError(
                f"{source} has a head for ({', '.join(old)}), this task needs "
                f"({', '.join(labels)}); use a fresh head"
            )
        load_head(model, source)
    if config.top_layers is not None:
        freeze_below_top(model, config.top_layers)
    return model, tokenizer


def batch_logits(
    model: Any,
    tokenizer: Any,
    items: Sequence[Item],
    config: TrainConfig,
    head: str,
    separator: str = "",
) -> Any:
    """The logits of a training batch, (items, labels) for a pair head or (items,
    choices) for a multiple-choice one: the model's inputs made as its head reads them
    (the pair encoding, ``separator`` before each hypothesis, or one input per choice:
    :func:`nlieval.classifiers.choice_pairs`)."""
    from ..classifiers import CHOICE_HEAD, choice_logits, encode_pairs

    if head == CHOICE_HEAD:
        return choice_logits(model, tokenizer, items, max_length=config.max_length)
    enc = encode_pairs(
        tokenizer,
        [(it.premise, it.hypothesis) for it in items],
        max_length=config.max_length,
        hypothesis_only=config.hypothesis_only,
        separator=separator,
    ).to(next(model.parameters()).device)
    return model(**enc)


def encoder_layers(encoder: Any) -> Any:
    """The encoder's stack of layers: the first ``nn.ModuleList`` as long as
    ``config.num_hidden_layers`` (``encoder.layer`` in BERT, RoBERTa, ELECTRA, DeBERTa)."""
    from torch import nn

    n = int(getattr(encoder.config, "num_hidden_layers", 0) or 0)
    for module in encoder.modules():
        if isinstance(module, nn.ModuleList) and n and len(module) == n:
            return module
    raise TrainError(
        f"cannot find the {n} layers of {type(encoder).__name__} to freeze; "
        "train all layers (no top_layers)"
    )


def freeze_below_top(model: Any, n: int) -> None:
    """Train only the top ``n`` encoder layers and the head: embeddings, lower layers and
    anything else in the encoder (e.g. an unused pooler) get ``requires_grad = False``.
    A transformers multiple-choice model's head reads the encoder's pooler, which then
    trains with it.

    >>> from transformers import BertConfig, BertForMultipleChoice
    >>> mc = BertForMultipleChoice(BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=2,
    ...                                       num_attention_heads=2, intermediate_size=16))
    >>> freeze_below_top(mc, 0)
    >>> sorted({n.split(".")[0] + "." + n.split(".")[1] for n, p in mc.named_parameters()
    ...         if p.requires_grad})
    ['bert.pooler', 'classifier.bias', 'classifier.weight']
    """
    from ..classifiers import PairClassifier

    pair = isinstance(model, PairClassifier)
    body = model.encoder if pair else model.base_model
    layers = encoder_layers(body)
    if n > len(layers):
        raise TrainError(f"top_layers={n}, but the encoder has {len(layers)} layers")
    for p in body.parameters():
        p.requires_grad_(False)
    pooler = None if pair else getattr(body, "pooler", None)
    for part in [*list(layers)[len(layers) - n :], *([pooler] if pooler is not None else [])]:
        for p in part.parameters():
            p.requires_grad_(True)


def no_decay_names(model: Any) -> set[str]:
    """Names of the parameters exempt from weight decay: biases and LayerNorm weights
    (any module whose class name ends in ``LayerNorm``/``RMSNorm``, or is named so).

    >>> import torch
    >>> sorted(no_decay_names(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))))
    ['0.bias', '1.bias', '1.weight']
    """
    names: set[str] = set()
    for mod_name, module in model.named_modules():
        cls = type(module).__name__.lower()
        is_norm = cls.endswith(("layernorm", "rmsnorm")) or "layernorm" in mod_name.lower()
        for p_name, _ in module.named_parameters(recurse=False):
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            if is_norm or p_name == "bias":
                names.add(full)
    return names


def make_optimizer(model: Any, config: TrainConfig) -> Any:
    """Adam (no weight decay) or AdamW over the trainable parameters. AdamW gets two
    groups, each with a ``names`` list: decayed, and biases/LayerNorm without decay.

    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    >>> opt = make_optimizer(model, TrainConfig("m", "t", optimizer="adamw"))
    >>> [(g["names"], g["weight_decay"]) for g in opt.param_groups]
    [(['0.weight'], 0.01), (['0.bias', '1.weight', '1.bias'], 0.0)]
    """
    import torch

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if config.optimizer == "adam":
        group = {"params": [p for _, p in named], "names": [n for n, _ in named]}
        return torch.optim.Adam([group], lr=config.lr, weight_decay=0.0)
    exempt = no_decay_names(model)
    groups = [
        {
            "params": [p for n, p in named if (n in exempt) == skip],
            "names": [n for n, _ in named if (n in exempt) == skip],
            "weight_decay": 0.0 if skip else config.weight_decay,
        }
        for skip in (False, True)
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=config.lr)
