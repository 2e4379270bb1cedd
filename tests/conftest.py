"""Shared fixtures: tiny random-weight causal LMs with a real (trained) BPE tokenizer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_openai import EchoLM

CORPUS = [
    "Premise: A man is playing a guitar on stage.",
    "Hypothesis: A person makes music.",
    "A. Entailment B. Neutral C. Contradiction D. Non-Entailment Answer: A B C",
    "Observation 1: Observation 2: Hypothesis 1 Hypothesis 2",
    "Two dogs run through the snow. A child reads a book in the park.",
    "The woman is sleeping. Nobody is outside. A cat sits on a mat.",
    "Contrasting Reasoning However, Therefore, Specifically, In contrast",
]


def _train_tokenizer(folder: Path) -> None:
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


def _tiny_model(folder: Path, arch: str, seed: int = 0) -> Path:
    import torch
    from transformers import AutoTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    _train_tokenizer(folder)
    vocab = len(AutoTokenizer.from_pretrained(folder))
    torch.manual_seed(seed)
    if arch == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(
            vocab_size=vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=2,
            tie_word_embeddings=False,
        )
        model = LlamaForCausalLM(cfg)
    else:
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig

        cfg = Gemma3TextConfig(
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
        model = Gemma3ForCausalLM(cfg)
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama with a BPE tokenizer trained on a few NLI-like lines."""
    return _tiny_model(tmp_path_factory.mktemp("tiny-llama"), "llama")


@pytest.fixture(scope="session")
def tiny_gemma(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Gemma 3 (sliding-window attention) with the same tokenizer."""
    return _tiny_model(tmp_path_factory.mktemp("tiny-gemma"), "gemma")


@pytest.fixture(scope="session")
def echo_lm(tiny_llama: Path) -> EchoLM:
    """The tiny Llama behind the fake server's ``/v1/completions`` and ``/tokenize``
    (one per session: the two completions test files share it)."""
    return EchoLM(tiny_llama)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real benchmark files (``NLIEVAL_DATA_DIR``); tests using it skip without it."""
    value = os.environ.get("NLIEVAL_DATA_DIR")
    if not value or not Path(value).is_dir():
        pytest.skip("NLIEVAL_DATA_DIR is not set")
    return Path(value)


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keep model conversions made by tests out of the user's cache; setting NLIEVAL_CACHE
    # yourself makes the tests (the real-model ones above all) reuse that cache instead.
    if "NLIEVAL_CACHE" not in os.environ:
        monkeypatch.setenv("NLIEVAL_CACHE", str(tmp_path_factory.getbasetemp() / "nlieval-cache"))
