"""Tiny random-weight causal LMs with a real (trained) BPE tokenizer and a chat template.

Shared by the tests' fixtures (``tests/conftest.py``) and the doctest names of the root
``conftest.py`` (``tiny_lm``), as ``tests.helpers.tiny_models``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CORPUS = [
    "Premise: A man is playing a guitar on stage.",
    "Hypothesis: A person makes music.",
    "A. Entailment B. Neutral C. Contradiction D. Non-Entailment Answer: A B C",
    "Observation 1: Observation 2: Hypothesis 1 Hypothesis 2",
    "Two dogs run through the snow. A child reads a book in the park.",
    "The woman is sleeping. Nobody is outside. A cat sits on a mat.",
    "Contrasting Reasoning However, Therefore, Specifically, In contrast",
]


def train_tokenizer(folder: Path) -> None:
    """Save a byte-level BPE tokenizer (400 tokens, trained on :data:`CORPUS`) with
    ``<bos>``/``<eos>``/``<pad>`` and a one-line-per-message chat template in ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<bos>", "<eos>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS * 5, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>"
    )
    fast.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    fast.save_pretrained(folder)


def tiny_fields(vocab: int) -> dict[str, Any]:
    """The config fields every tiny decoder shares, whatever its architecture: 2 layers,
    hidden size 32, 4 heads (2 of keys and values), the token ids of
    :func:`train_tokenizer` (``<bos>`` 0, ``<eos>`` 1, ``<pad>`` 2), ``vocab`` tokens."""
    return {
        "vocab_size": vocab,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "pad_token_id": 2,
    }


def llama_config(vocab: int, **changes: Any) -> Any:
    """The ``LlamaConfig`` of the tiny Llamas (:func:`tiny_fields`); ``changes`` set other
    fields or replace those."""
    from transformers import LlamaConfig

    return LlamaConfig(**(tiny_fields(vocab) | changes))


def tiny_model(folder: Path, arch: str, seed: int = 0) -> Path:
    """Save a 2-layer random ``"llama"`` (or else Gemma 3, with sliding-window attention)
    of hidden size 32, weights drawn after ``torch.manual_seed(seed)``, and the tokenizer
    of :func:`train_tokenizer` in ``folder``; returns ``folder``."""
    import torch
    from transformers import AutoTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    train_tokenizer(folder)
    vocab = len(AutoTokenizer.from_pretrained(folder))
    torch.manual_seed(seed)
    model: Any
    if arch == "llama":
        from transformers import LlamaForCausalLM

        model = LlamaForCausalLM(llama_config(vocab, tie_word_embeddings=False))
    else:
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig

        model = Gemma3ForCausalLM(
            Gemma3TextConfig(
                vocab_size=vocab,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=1,
                head_dim=8,
                sliding_window=16,
                max_position_embeddings=2048,
                bos_token_id=0,
                eos_token_id=1,
                pad_token_id=2,
            )
        )
    model.save_pretrained(folder)
    return folder
