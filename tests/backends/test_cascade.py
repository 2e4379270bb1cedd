"""Shared-prefix ("cascade") attention (issue 22): the prefix's keys and values held once,
every row attending to them without a copy, merged with the row's own attention through
the log-sum-exp. Checked against attention written out here from its definition (one
softmax over the concatenated keys, repeated key/value heads, masks from positions) and,
on tiny random models of every covered architecture, against scoring each whole text
with no cache at all."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from nlieval.backends import HFOptions, ScoreRequest, hf_cascade
from nlieval.backends.hf import HFCausalLM
from nlieval.backends.hf_cascade import PREFIX_KWARG, cascade_attention, cascade_unsupported
from tests.helpers.tiny_models import tiny_fields, train_tokenizer

# ----------------------------------------------------------------- the function alone


def _reference(
    q: torch.Tensor,
    k_pre: torch.Tensor,
    v_pre: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    scaling: float,
    window: int | None,
    softcap: float | None,
) -> torch.Tensor:
    """Attention by its definition, in float64: each row's keys are the prefix's followed
    by its own, key/value heads repeated for their query heads, a query at position
    ``P + t`` sees key position ``j`` when ``j <= P + t`` and ``P + t - j < window``."""
    rows, heads, width, _ = q.shape
    kv_heads, n_pre = k_pre.shape[1], k_pre.shape[2]
    keys = torch.cat([k_pre.expand(rows, -1, -1, -1), k], dim=2).double()
    values = torch.cat([v_pre.expand(rows, -1, -1, -1), v], dim=2).double()
    keys = keys.repeat_interleave(heads // kv_heads, dim=1)
    values = values.repeat_interleave(heads // kv_heads, dim=1)
    scores = q.double() @ keys.transpose(-1, -2) * scaling
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    out = torch.empty(rows, heads, width, q.shape[-1], dtype=torch.float64)
    for t in range(width):
        for j in range(n_pre + width):
            allowed = j <= n_pre + t and (window is None or n_pre + t - j < window)
            if not allowed:
                scores[:, :, t, j] = -math.inf
    out = torch.softmax(scores, dim=-1) @ values
    return out.transpose(1, 2)  # [rows, width, heads, dim]


class _Layer:
    def __init__(self, idx: int) -> None:
        self.layer_idx = idx


@pytest.mark.parametrize(
    "heads,kv_heads,window,softcap",
    [
        (4, 4, None, None),  # no grouping
        (8, 2, None, None),  # four query heads per key/value head
        (6, 1, 5, None),  # a window shorter than the prefix
        (4, 2, 3, 20.0),  # a window shorter than the suffix, soft-capping
        (4, 2, 40, 5.0),  # a window longer than everything
        (4, 2, 15, None),  # a window that just reaches the first position: no mask
    ],
)
def test_cascade_attention_is_attention_over_prefix_and_suffix(
    heads: int, kv_heads: int, window: int | None, softcap: float | None, monkeypatch: Any
) -> None:
    fused: list[int] = []
    plain = hf_cascade.fused_attention

    def counted(*args: Any) -> Any:
        fused.append(1)
        return plain(*args)

    monkeypatch.setattr(hf_cascade, "fused_attention", counted)
    gen = torch.Generator().manual_seed(heads * 10 + kv_heads)
    rows, n_pre, width, dim = 3, 9, 6, 8
    q = torch.randn(rows, heads, width, dim, generator=gen)
    k_pre, v_pre = (torch.randn(1, kv_heads, n_pre, dim, generator=gen) for _ in range(2))
    k, v = (torch.randn(rows, kv_heads, width, dim, generator=gen) for _ in range(2))
    scaling = 0.3
    prefixes = [(torch.zeros(1), torch.zeros(1)), (k_pre, v_pre)]  # layer 1's is ours
    got, weights = cascade_attention(
        _Layer(1),
        q,
        k,
        v,
        None,
        scaling=scaling,
        sliding_window=window,
        softcap=softcap,
        **{PREFIX_KWARG: prefixes},
    )
    want = _reference(q, k_pre, v_pre, k, v, scaling, window, softcap)
    assert weights is None and got.shape == (rows, width, heads, dim)
    assert torch.allclose(got.double(), want, atol=1e-5)
    # torch's fused kernel takes the prefix part wherever no mask or soft-cap is needed
    # (a window of at least n_pre + width masks nothing).
    unmasked = (window is None or window >= n_pre + width) and softcap is None
    assert bool(fused) == unmasked


# ----------------------------------------------------------------- whole models


def _config(arch: str, vocab: int) -> Any:
    """A 2-layer random config of ``arch`` whose windowed layers (where it has them) see
    16 positions, fewer than the few-shot prefix below."""
    import transformers as tf

    common = tiny_fields(vocab) | {"max_position_embeddings": 1024}
    mixed = ["sliding_attention", "full_attention"]
    if arch == "llama":
        return tf.LlamaConfig(**common)
    if arch == "mistral":
        return tf.MistralConfig(**common, sliding_window=16)
    if arch == "qwen2":
        return tf.Qwen2Config(
            **common, use_sliding_window=True, sliding_window=16, layer_types=mixed
        )
    if arch == "qwen3":
        return tf.Qwen3Config(
            **common, head_dim=8, use_sliding_window=True, sliding_window=16, layer_types=mixed
        )
    if arch == "gemma":
        return tf.GemmaConfig(**common, head_dim=8)
    if arch == "gemma2":
        return tf.Gemma2Config(
            **common, head_dim=8, sliding_window=16, layer_types=mixed, attn_logit_softcapping=5.0
        )
    if arch == "gemma3":
        return tf.Gemma3TextConfig(**common, head_dim=8, sliding_window=16, layer_types=mixed)
    if arch == "olmo":  # not covered: the per-row prefix copy
        return tf.OlmoConfig(**common)
    raise AssertionError(arch)


ARCHS = ["llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3"]


@pytest.fixture(scope="module")
def tokenizer_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tok")
    train_tokenizer(folder)
    return folder


def _model(folder: Path, tokenizer_folder: Path, arch: str) -> Path:
    import shutil

    from transformers import AutoModelForCausalLM, AutoTokenizer

    for f in tokenizer_folder.iterdir():
        shutil.copy(f, folder / f.name)
    vocab = len(AutoTokenizer.from_pretrained(folder))
    torch.manual_seed(7)
    AutoModelForCausalLM.from_config(_config(arch, vocab)).save_pretrained(folder)
    return folder


SHOTS = "".join(
    f"Premise: {p}\nHypothesis: {h}\nAnswer: {a}\n\n"
    for p, h, a in [
        ("A man is playing a guitar on stage.", "A person makes music.", "A"),
        ("Two dogs run through the snow.", "The woman is sleeping.", "C"),
        ("A child reads a book in the park.", "Nobody is outside.", "B"),
    ]
)
REQUESTS = [
    ScoreRequest(f"{SHOTS}Premise: {p}\nHypothesis: {h}\nAnswer:", options, len(SHOTS))
    for p, h, options in [
        ("A cat sits on a mat.", "A cat.", (" A", " B", " C")),
        ("The woman is sleeping.", "Nobody is outside.", (" Entailment", " Contradiction")),
        ("Two dogs run.", "Dogs run through the snow in the park.", (" A", " B", " C")),
        ("A man.", "A person makes music on stage.", (" Neutral", " A")),
        ("Nobody is outside.", "A child reads.", (" B", " Contradiction")),
    ]
]


def _close(a: list[list[float]], b: list[list[float]], tol: float) -> None:
    for x, y in zip(a, b, strict=True):
        assert max(abs(p - q) for p, q in zip(x, y, strict=True)) < tol, (x, y)


@pytest.mark.parametrize("arch", ARCHS)
def test_cascade_scores_as_the_whole_texts_do(
    arch: str, tmp_path: Path, tokenizer_folder: Path
) -> None:
    folder = _model(tmp_path, tokenizer_folder, arch)
    lm = HFCausalLM(str(folder), HFOptions(device="cpu"), batch_size=2)
    assert cascade_unsupported(lm.model) is None
    n_pre = len(lm.split(SHOTS, " A")[0])
    assert n_pre > 16  # the windowed layers cannot see the whole prefix
    cascade = lm.loglikelihood(REQUESTS)
    counts = dict(lm.counts)
    lm.prefix_cache = False
    whole = lm.loglikelihood(REQUESTS)
    _close(cascade, whole, 1e-5)
    assert [max(range(len(s)), key=s.__getitem__) for s in cascade] == [
        max(range(len(s)), key=s.__getitem__) for s in whole
    ]
    # The prefix is held once and copied into no row.
    cfg = lm.model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    one_copy = cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * n_pre * head_dim * 4
    assert counts["kv_prefix_bytes"] == one_copy
    assert counts["kv_bytes_copied"] == 0 and counts["cascade_batches"] >= 3


def test_results_do_not_depend_on_the_batch_size(tmp_path: Path, tokenizer_folder: Path) -> None:
    folder = _model(tmp_path, tokenizer_folder, "gemma3")
    got = [
        HFCausalLM(str(folder), HFOptions(device="cpu"), batch_size=bs).loglikelihood(REQUESTS)
        for bs in (1, 3, 16)
    ]
    _close(got[0], got[1], 1e-5)
    _close(got[0], got[2], 1e-5)


def test_switched_off_it_copies_the_prefix_into_the_rows(
    tmp_path: Path, tokenizer_folder: Path
) -> None:
    folder = _model(tmp_path, tokenizer_folder, "mistral")
    lm = HFCausalLM(str(folder), HFOptions(device="cpu", prefix_attention="rows"), batch_size=2)
    rows = lm.loglikelihood(REQUESTS)
    assert lm.counts["cascade_batches"] == 0 and lm.counts["kv_bytes_copied"] > 0
    _close(
        rows,
        HFCausalLM(str(folder), HFOptions(device="cpu"), batch_size=2).loglikelihood(REQUESTS),
        1e-5,
    )


def test_an_architecture_it_does_not_cover_falls_back_with_one_warning(
    tmp_path: Path, tokenizer_folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _model(tmp_path, tokenizer_folder, "olmo")
    lm = HFCausalLM(str(folder), HFOptions(device="cpu"), batch_size=2)
    with caplog.at_level(logging.WARNING, logger="nlieval.backends.hf"):
        first = lm.loglikelihood(REQUESTS)
        lm.loglikelihood(REQUESTS[:2])
    warnings = [r.getMessage() for r in caplog.records if "shared-prefix" in r.getMessage()]
    assert len(warnings) == 1 and "'olmo'" in warnings[0]
    assert lm.counts["cascade_batches"] == 0 and lm.counts["kv_bytes_copied"] > 0
    lm.prefix_cache = False
    _close(first, lm.loglikelihood(REQUESTS), 1e-5)


def test_a_fused_kernel_that_disagrees_on_first_use_is_not_used_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The fused kernel's log-sum-exp is not public API: its first use is checked against
    # plain attention, and a disagreement (here: plain attention made to differ) turns it
    # off for that device and dtype with one warning.
    monkeypatch.setattr(hf_cascade, "_fused_ok", {})
    q, k, v = torch.randn(2, 5, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 8)
    assert hf_cascade.fused_attention(q, k, v, 0.3) is not None
    assert hf_cascade._fused_ok == {("cpu", "torch.float32"): True}
    monkeypatch.setattr(hf_cascade, "_fused_ok", {})
    plain = hf_cascade._part
    monkeypatch.setattr(hf_cascade, "_part", lambda *a: tuple(t + 1 for t in plain(*a)))
    with caplog.at_level(logging.WARNING, logger="nlieval.backends.hf_cascade"):
        assert hf_cascade.fused_attention(q, k, v, 0.3) is None
        assert hf_cascade.fused_attention(q, k, v, 0.3) is None
    assert sum("disagrees" in r.getMessage() for r in caplog.records) == 1
