"""A tiny random BERT for the encoder tests: its vocabulary is exactly a test's words, so
every word is one token and nothing is unknown."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch


def make_tiny_bert(
    folder: Path,
    words: Iterable[str],
    max_positions: int = 32,
    *,
    head: str = "BertModel",
    max_length: int | None = None,
    **config: Any,
) -> Path:
    """Save a 2-layer random BERT (hidden 32, weights drawn after ``torch.manual_seed(0)``)
    and its WordPiece tokenizer in ``folder``: the transformers class ``head`` (such as
    ``BertForSequenceClassification``), ``config`` added to its ``BertConfig`` (labels,
    ``initializer_range``), the tokenizer's ``model_max_length`` ``max_length``."""
    import transformers
    from transformers import BertConfig, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    # transformers 5 names the argument `vocab`; `vocab_file=` is silently ignored there.
    sized = {} if max_length is None else {"model_max_length": max_length}
    tok = BertTokenizer(vocab=str(folder / "vocab.txt"), **sized)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_positions,
        **config,
    )
    getattr(transformers, head)(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
