"""The transformers backend on tiny random models: exact log-likelihoods, batch invariance."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from nlieval.backends import HFOptions
from nlieval.backends.base import ScoreRequest
from nlieval.backends.hf import HFCausalLM

PROMPT = (
    "Premise: A man is playing a guitar on stage.\nHypothesis: A person makes music.\n"
    "A. Entailment\nB. Neutral\nC. Contradiction\nAnswer:"
)


def _requests() -> list[ScoreRequest]:
    reqs = []
    for i in range(11):
        ctx = PROMPT.replace("guitar", "guitar " * (i % 5 + 1)) + ("" if i % 2 else "")
        reqs.append(ScoreRequest("Two dogs run. " * (i % 4) + ctx, (" A", " B", " C")))
    # Multi-token continuations force the one-row-per-option path.
    reqs.append(ScoreRequest("The woman is", (" sleeping", " outside in the snow", " a cat")))
    reqs.append(ScoreRequest("Answer", (": A", ":B", " Contradiction")))
    return reqs


def _brute_force(lm: HFCausalLM, context: str, continuation: str) -> float:
    """Unpadded, unbatched, full-logits reference."""
    ctx, cont = lm.split(context, continuation)
    ids = torch.tensor([ctx + cont])
    with torch.no_grad():
        logits = lm.model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    return sum(float(logp[len(ctx) - 1 + t, tok]) for t, tok in enumerate(cont))


@pytest.fixture(scope="module", params=["tiny_llama", "tiny_gemma"])
def lm(request: pytest.FixtureRequest) -> HFCausalLM:
    folder: Path = request.getfixturevalue(request.param)
    return HFCausalLM(str(folder), batch_size=4)


def test_split_keeps_whole_tokenization(lm: HFCausalLM) -> None:
    for ctx, cont in [(PROMPT, " A"), ("Answer", ": A"), ("The woman is", " sleeping")]:
        a, b = lm.split(ctx, cont)
        whole = lm.tok(ctx + cont)["input_ids"]
        assert a + b == whole
        assert b, "continuation must not be empty"
        assert lm.tok.decode(b).endswith(cont.strip()[-1])


def test_split_handles_merge_across_boundary(lm: HFCausalLM) -> None:
    # "Answ" + "er" is tokenized as one piece when written together; the merged token
    # must go to the continuation so that the context is what the model really sees.
    whole = lm.tok("Answer")["input_ids"]
    # The premise of the test: written together, the boundary falls inside a token.
    assert lm.tok("Answ")["input_ids"] != whole[: len(lm.tok("Answ")["input_ids"])]
    a, b = lm.split("Answ", "er")
    assert a + b == whole
    # The context never holds a character of the continuation; the continuation's
    # tokens cover all of it (here the merged token starts inside "Answ").
    assert "Answ".startswith(lm.tok.decode(a, skip_special_tokens=True))
    assert lm.tok.decode(b).endswith("er") and len(lm.tok.decode(b)) > len("er")


def test_loglikelihood_matches_brute_force(lm: HFCausalLM) -> None:
    reqs = _requests()
    got = lm.loglikelihood(reqs)
    for req, scores in zip(reqs, got, strict=True):
        for cont, s in zip(req.continuations, scores, strict=True):
            assert s == pytest.approx(_brute_force(lm, req.context, cont), abs=1e-4)
            assert s < 0 and math.isfinite(s)


def test_batch_size_does_not_change_scores(lm: HFCausalLM) -> None:
    reqs = _requests()
    lm.batch_size = 1
    one = lm.loglikelihood(reqs)
    lm.batch_size = 16
    many = lm.loglikelihood(reqs)
    lm.batch_size = 4
    for a, b in zip(one, many, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
        assert a.index(max(a)) == b.index(max(b))


def test_progress_counts_every_request(lm: HFCausalLM) -> None:
    seen: list[int] = []
    reqs = _requests()
    lm.loglikelihood(reqs, progress=seen.append)
    assert sum(seen) == len(reqs)


def test_prefix_cache_matches_plain_scoring(lm: HFCausalLM) -> None:
    # A shared few-shot prefix longer than the tiny Gemma's 16-token sliding window, items
    # of different lengths, and single- and multi-token options.
    prefix = (PROMPT + " A\n\n") * 3
    reqs = [
        ScoreRequest(
            prefix + PROMPT.replace("guitar", "guitar " * i), (" A", " B", " C"), len(prefix)
        )
        for i in range(1, 7)
    ]
    reqs.append(
        ScoreRequest(prefix + "The woman is", (" sleeping", " outside in the snow"), len(prefix))
    )
    lm.prefix_cache = False
    plain = lm.loglikelihood(reqs)
    lm.prefix_cache = True
    for bs in (1, 3, 16):
        lm.batch_size = bs
        cached = lm.loglikelihood(reqs)
        for a, b in zip(plain, cached, strict=True):
            assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5
            assert a.index(max(a)) == b.index(max(b))
    lm.batch_size = 4
    assert lm._cached is not None and len(lm._cached[0]) >= lm.MIN_PREFIX


def test_prefix_boundary_merge_is_not_cached(lm: HFCausalLM) -> None:
    # The prefix ends in the middle of a word: the token that straddles the boundary must
    # be recomputed, not read from the cache, and the score must equal plain scoring.
    text = PROMPT + " A\n\n" + PROMPT
    cut = text.index("Answ", len(PROMPT) + 4) + 4 - 0
    req = ScoreRequest(text, (" A", " B", " C"), prefix_len=cut)
    ctx, cont, n_pre = lm._split(req.context, " A", cut)
    offsets = lm.tok(req.context + " A", return_offsets_mapping=True)["offset_mapping"]
    assert offsets[n_pre - 1][1] <= cut < offsets[n_pre][1] or offsets[n_pre][0] >= cut
    lm.prefix_cache = False
    plain = lm.loglikelihood([req])
    lm.prefix_cache = True
    assert max(abs(x - y) for x, y in zip(plain[0], lm.loglikelihood([req])[0], strict=True)) < 1e-5


def test_prefix_cache_computes_fewer_tokens(lm: HFCausalLM) -> None:
    # The counters are what the benchmark reports; with the cache the shared prefix is
    # computed once instead of once per item.
    prefix = (PROMPT + " A\n\n") * 3
    reqs = [ScoreRequest(prefix + PROMPT, (" A", " B", " C"), len(prefix)) for _ in range(5)]
    n_prefix = len(lm.split(prefix, " A")[0])
    totals = {}
    for cached in (False, True):
        lm.prefix_cache, lm._cached = cached, None
        lm.counts.update(tokens=0, padded=0, forward_calls=0)
        lm.loglikelihood(reqs)
        totals[cached] = lm.counts["tokens"]
    lm.prefix_cache = True
    n_whole = len(lm.split(prefix + PROMPT, " A")[0])
    assert totals[False] == 5 * n_whole
    assert totals[True] < totals[False] - 3 * n_prefix


def test_auto_batch_size_follows_free_memory(
    lm: HFCausalLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlieval.backends import hf

    monkeypatch.setattr(hf, "free_memory", lambda device: 10**12)
    assert hf.auto_batch_size(lm.model, lm.device, 64) == hf.CPU_MAX_BATCH
    row = hf.row_bytes(lm.model.config, 64, 64, 4)
    monkeypatch.setattr(hf, "free_memory", lambda device: 2 * 3 * row + 1)
    assert hf.auto_batch_size(lm.model, lm.device, 64) == 3
    monkeypatch.setattr(hf, "free_memory", lambda device: 0)
    assert hf.auto_batch_size(lm.model, lm.device, 64) == 1
    # A longer cached context needs more memory per row, so no more rows.
    big = 2 * 3 * row + 1
    monkeypatch.setattr(hf, "free_memory", lambda device: big)
    assert hf.auto_batch_size(lm.model, lm.device, 64, context=4096) < 3


def _kv_bytes_per_token(lm: HFCausalLM) -> int:
    cfg = lm.model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * head_dim * 4  # float32


def test_prefix_cache_is_copied_once_not_per_batch(lm: HFCausalLM) -> None:
    # 9 items in batches of 2: the prefix's keys/values are copied into the 2 rows once
    # for the whole group; each batch writes only its own suffix positions.
    prefix = (PROMPT + " A\n\n") * 3
    reqs = [
        ScoreRequest(prefix + PROMPT.replace("guitar", "guitar " * i), (" A", " B"), len(prefix))
        for i in range(9)
    ]
    enc = lm.tok(prefix + PROMPT, return_offsets_mapping=True)
    n_prefix = sum(1 for _, e in enc["offset_mapping"] if e <= len(prefix))
    suffix_tokens = []
    for req in reqs:
        whole = lm.tok(req.context)["input_ids"]
        suffix_tokens.append(len(whole) - n_prefix)
    # The per-row copy (the path of architectures shared-prefix attention does not cover).
    lm.batch_size, lm._cached, lm.cascade = 2, None, False
    lm.counts.update(kv_bytes_copied=0, kv_suffix_bytes=0)
    lm.loglikelihood(reqs)
    per_token = _kv_bytes_per_token(lm)
    assert lm.counts["kv_bytes_copied"] == 2 * n_prefix * per_token
    # Batches of 2, longest first, each padded to its longest row.
    widths = sorted(suffix_tokens, reverse=True)[::2]
    expected_suffix = sum(min(2, 9 - 2 * b) * w for b, w in enumerate(widths)) * per_token
    assert lm.counts["kv_suffix_bytes"] == expected_suffix
    # The next call on the same prefix copies nothing at all.
    lm.counts.update(kv_bytes_copied=0)
    lm.loglikelihood(reqs[:5])
    assert lm.counts["kv_bytes_copied"] == 0
    lm.batch_size, lm.cascade = 4, True


def test_device_map_keeps_scores(tiny_llama: Path) -> None:
    # Loaded through accelerate (device_map): the cached path matches plain scoring.
    pytest.importorskip("accelerate")
    lm = HFCausalLM(str(tiny_llama), HFOptions(device_map="cpu"), batch_size=3)
    prefix = (PROMPT + " B\n\n") * 3
    reqs = [
        ScoreRequest(prefix + PROMPT + " x" * i, (" A", " B", " C"), len(prefix)) for i in range(5)
    ]
    lm.prefix_cache = False
    plain = lm.loglikelihood(reqs)
    lm.prefix_cache = True
    cached = lm.loglikelihood(reqs)
    for a, b in zip(plain, cached, strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5
