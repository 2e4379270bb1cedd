"""CompletionsLM's one request per item: single-token options scored from the top
log-probs of the token after the context, against the fake server (tiny random Llama,
``/tokenize`` and vLLM's ``token_id:N`` names). Equal to the in-process backend; options
that are not one token after the context, or not among the top K, go to echo requests;
a server that cannot do this is detected and scored by echo instead."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import EchoLM, FakeServer, running

from nlieval.backends import ScoreRequest
from nlieval.backends.completions import CompletionsLM, PromptLogprobsError
from nlieval.backends.hf import HFCausalLM
from nlieval.choice import RunConfig, run
from nlieval.runs import RECORDS

REQUESTS = [
    ScoreRequest("Premise: A man plays.\nHypothesis: Music.\nAnswer:", (" A", " B", " C")),
    ScoreRequest("Two dogs run through the snow. Answer:", (" Entailment", " Neutral", " A")),
    # The context ends in a space that the tokenizer merges into the option.
    ScoreRequest("A cat sits on a mat. Answer: ", ("Contradiction", "A")),
]

VOCAB = 400  # the tiny tokenizer's (tests/conftest.py): K = VOCAB finds every token


@pytest.fixture(scope="session")
def echo_lm(tiny_llama: Path) -> EchoLM:
    return EchoLM(tiny_llama)


@pytest.fixture(scope="module")
def hf(tiny_llama: Path) -> HFCausalLM:
    return HFCausalLM(str(tiny_llama), device="cpu", batch_size=2)


@pytest.fixture
def server(echo_lm: EchoLM) -> Iterator[FakeServer]:
    with running(echo_lm) as s:
        s.max_logprobs = VOCAB
        yield s


def _lm(server: FakeServer, **kw: Any) -> CompletionsLM:
    opts: dict[str, Any] = {"timeout": 5.0, "retries": 2, "backoff": 0.01, "sleep": lambda s: None}
    opts.update(kw)
    return CompletionsLM("tiny", server.url, **opts)


def _one_token_more(hf: HFCausalLM, context: str, option: str) -> bool:
    """Independently of the backend: are the option's tokens the context's plus one?"""
    ctx = hf.tok(context)["input_ids"]
    full = hf.tok(context + option)["input_ids"]
    return len(full) == len(ctx) + 1 and full[:-1] == ctx


def _next_token_bodies(server: FakeServer) -> list[dict[str, Any]]:
    return [b for b in server.requests if b.get("return_tokens_as_token_ids")]


def _echo_bodies(server: FakeServer) -> list[dict[str, Any]]:
    return [b for b in server.requests if b.get("echo")]


def _close(got: list[list[float]], want: list[list[float]]) -> None:
    for g, w in zip(got, want, strict=True):
        assert max(abs(a - b) for a, b in zip(g, w, strict=True)) < 1e-4


def test_single_token_options_come_from_one_request_per_item(
    hf: HFCausalLM, server: FakeServer
) -> None:
    want = hf.loglikelihood(REQUESTS)
    fast = {(r, j) for r, req in enumerate(REQUESTS) for j, c in enumerate(req.continuations)
            if _one_token_more(hf, req.context, c)}  # fmt: skip
    # The texts are built so that both kinds occur: letters after "Answer:" are one
    # token more; the option after a trailing space merges with it.
    assert (0, 0) in fast and (2, 0) not in fast and (2, 1) not in fast
    with _lm(server, top_logprobs=VOCAB) as lm:
        got = lm.loglikelihood(REQUESTS)
        counts = lm.counts.copy()
    _close(got, want)
    assert counts["next_token_options"] == len(fast)
    assert counts["echo_options"] == 8 - len(fast) and counts["top_k_misses"] == 0
    # One prompt per item that has such options, sent as the context's token ids.
    prompts = [p for b in _next_token_bodies(server) for p in b["prompt"]]
    items = sorted({r for r, _ in fast})
    assert prompts == [hf.tok(REQUESTS[r].context)["input_ids"] for r in items]
    body = _next_token_bodies(server)[0]
    assert (body["max_tokens"], body["logprobs"], body["temperature"]) == (1, VOCAB, 0)
    echoed = sorted(p for b in _echo_bodies(server) for p in b["prompt"])
    assert echoed == sorted(
        REQUESTS[r].context + c
        for r, req in enumerate(REQUESTS)
        for j, c in enumerate(req.continuations)
        if (r, j) not in fast
    )
    # The context and each context + option were tokenized by the server.
    assert len(server.tokenize_requests) == 3 + 8


def test_options_outside_the_top_k_are_scored_by_echo(hf: HFCausalLM, server: FakeServer) -> None:
    want = hf.loglikelihood(REQUESTS)
    with _lm(server, top_logprobs=1) as lm:
        got = lm.loglikelihood(REQUESTS)
        counts = lm.counts.copy()
    _close(got, want)
    # K = 1 holds only the most likely token: at most one option per item is in it.
    assert counts["top_k_misses"] >= 3
    assert counts["next_token_options"] + counts["echo_options"] == 8
    assert counts["next_token_options"] + counts["top_k_misses"] == sum(
        _one_token_more(hf, req.context, c) for req in REQUESTS for c in req.continuations
    )


def test_equal_to_in_process_on_a_run_at_k0_and_k5(
    tmp_path: Path, tiny_llama: Path, server: FakeServer
) -> None:
    base: dict[str, Any] = {"tasks": ("smoke",), "shots": (0, 5), "seeds": (0,)}
    ref = run(RunConfig(model=str(tiny_llama), **base), tmp_path / "hf", progress=False)
    cfg = RunConfig(
        model="openai-completions:tiny", api_base=server.url, top_logprobs=VOCAB, **base
    )
    got = run(cfg, tmp_path / "server", progress=False)
    recs = [json.loads(x) for x in (tmp_path / "server" / RECORDS).read_text().splitlines()]
    want = {
        (r["k"], r["item_id"]): r
        for r in map(json.loads, (tmp_path / "hf" / RECORDS).read_text().splitlines())
    }
    assert len(recs) == len(want) == 96
    worst = 0.0
    for r in recs:
        w = want[(r["k"], r["item_id"])]
        assert r["pred"] == w["pred"]
        worst = max(worst, *(abs(a - b) for a, b in zip(r["loglik"], w["loglik"], strict=True)))
    assert worst < 1e-4
    assert [m["accuracy"] for m in got["metrics"]] == [m["accuracy"] for m in ref["metrics"]]
    # The smoke options are letters after "Answer:": every one from a next-token request,
    # one prompt per item, no echo request at all.
    assert sum(len(b["prompt"]) for b in _next_token_bodies(server)) == 96
    assert not _echo_bodies(server)


def test_results_do_not_depend_on_batch_concurrency_or_k(server: FakeServer) -> None:
    with _lm(server, top_logprobs=VOCAB) as lm:
        want = lm.loglikelihood(REQUESTS)
    for bs, conc, k in ((1, 1, VOCAB), (2, 3, 5), ("auto", 8, 0)):
        with _lm(server, batch_size=bs, concurrency=conc, top_logprobs=k) as lm:
            _close(lm.loglikelihood(REQUESTS), want)


# --------------------------------------------------------------------------- servers that cannot


def _fallback(
    server: FakeServer, hf: HFCausalLM, caplog: pytest.LogCaptureFixture, **kw: Any
) -> str:
    """Score REQUESTS; check they equal in-process and that every option went to echo;
    return why the one-request-per-item scoring was switched off."""
    want = hf.loglikelihood(REQUESTS)
    with caplog.at_level(logging.WARNING), _lm(server, **kw) as lm:
        got = lm.loglikelihood(REQUESTS)
        again = lm.loglikelihood(REQUESTS[:1])
        why = lm.next_token_off
        counts = lm.counts.copy()
    _close(got, want)
    _close(again, want[:1])
    assert why is not None
    assert counts["next_token_options"] == 0 and counts["echo_options"] == 8 + 3
    # Said once, not per call.
    assert sum("one request per item is off" in r.message for r in caplog.records) == 1
    return why


def test_a_server_without_tokenize_is_scored_by_echo(
    server: FakeServer, hf: HFCausalLM, caplog: pytest.LogCaptureFixture
) -> None:
    server.tokenize_default = lambda body: ("status", 404, '{"detail": "Not Found"}')
    why = _fallback(server, hf, caplog, top_logprobs=VOCAB)
    assert "HTTP 404" in why and "/tokenize" in why
    assert not _next_token_bodies(server)
    # At most the first call's 11 texts (some are cancelled once the first 404 is in);
    # the second call asked for none.
    assert len(server.tokenize_requests) <= 11


def test_a_server_refusing_k_top_logprobs_is_scored_by_echo(
    server: FakeServer, hf: HFCausalLM, caplog: pytest.LogCaptureFixture
) -> None:
    server.max_logprobs = 20  # vLLM's default --max-logprobs
    why = _fallback(server, hf, caplog, top_logprobs=50)
    assert "HTTP 400" in why and "--max-logprobs" in why and "greater than max allowed" in why


def test_a_server_naming_tokens_by_text_is_scored_by_echo(
    server: FakeServer, hf: HFCausalLM, caplog: pytest.LogCaptureFixture
) -> None:
    server.token_ids = False  # ignores return_tokens_as_token_ids
    why = _fallback(server, hf, caplog, top_logprobs=VOCAB)
    assert "return_tokens_as_token_ids" in why


def test_an_answer_without_top_logprobs_is_scored_by_echo(
    server: FakeServer, hf: HFCausalLM, caplog: pytest.LogCaptureFixture
) -> None:
    def strip(body: dict[str, Any]) -> dict[str, Any]:
        for c in body["choices"]:  # echo answers do not need them
            c["logprobs"]["top_logprobs"] = None
        return body

    server.completions_default = lambda body: ("echo", strip)
    why = _fallback(server, hf, caplog, top_logprobs=VOCAB)
    assert "without top log-probs" in why


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize(
    "fault",
    [("status", 500, "overloaded"), ("status", 503, "busy", {"Retry-After": "0"}), ("drop",)],
    ids=["500", "503", "dropped"],
)
def test_transient_faults_of_both_endpoints_are_retried(
    server: FakeServer, hf: HFCausalLM, fault: tuple[Any, ...]
) -> None:
    want = hf.loglikelihood(REQUESTS)
    server.script.extend([fault])  # the first next-token request
    tokenize_calls = {"n": 0}

    def flaky(body: dict[str, Any]) -> tuple[Any, ...]:
        tokenize_calls["n"] += 1
        return fault if tokenize_calls["n"] == 1 else ("ok",)

    server.tokenize_default = flaky
    with _lm(server, top_logprobs=VOCAB, concurrency=1) as lm:
        got = lm.loglikelihood(REQUESTS)
        assert lm.next_token_off is None
        assert sum(lm.faults.values()) == 2
        assert lm.counts["next_token_options"] > 0
    _close(got, want)


def test_persistent_tokenize_failure_gives_up_by_name(server: FakeServer) -> None:
    from nlieval.backends.openai import ServerError

    server.tokenize_default = lambda body: ("status", 500, '{"error": {"message": "down"}}')
    with _lm(server, top_logprobs=VOCAB, retries=1) as lm, pytest.raises(ServerError) as info:
        lm.loglikelihood(REQUESTS)
    assert "tokenize: HTTP 500: down (gave up after 2 tries)" in str(info.value)


def test_a_top_logprob_above_zero_is_reported(server: FakeServer) -> None:
    def corrupt(body: dict[str, Any]) -> dict[str, Any]:
        for c in body["choices"]:
            top = c["logprobs"]["top_logprobs"][-1]
            for key in top:
                top[key] = 3.5
        return body

    server.completions_default = lambda body: ("echo", corrupt)
    with _lm(server, top_logprobs=VOCAB) as lm, pytest.raises(PromptLogprobsError) as info:
        lm.loglikelihood(REQUESTS[:1])
    assert "not a log-probability" in str(info.value) and "3.5" in str(info.value)


def test_settings() -> None:
    with pytest.raises(ValueError, match="top-logprobs"):
        CompletionsLM("m", "http://127.0.0.1:9/v1", top_logprobs=-1)
    with pytest.raises(ValueError, match="top-logprobs"):
        RunConfig(model="openai-completions:m", tasks=("smoke",), top_logprobs=-1)
    lm = CompletionsLM("m", "http://127.0.0.1:9/v1")
    assert lm.tokenize_url == "http://127.0.0.1:9/tokenize" and lm.top_logprobs == 20
    assert CompletionsLM("m", "http://h:9/v1", top_logprobs=0).next_token_off == "--top-logprobs 0"
    assert "top_logprobs" not in RunConfig.IDENTITY
