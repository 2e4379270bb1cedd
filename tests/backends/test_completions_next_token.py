"""CompletionsLM's one request per item: single-token options scored from the top
log-probs of the token after the context, against the fake server (tiny random Llama,
``/tokenize`` and vLLM's ``token_id:N`` names). Equal to the in-process backend; options
that are not one token after the context, or not among the top K, go to echo requests;
a server that cannot do this is detected and scored by echo instead."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import EngineOptions, HFOptions, ScoreRequest
from nlieval.backends.completions import CompletionsLM
from nlieval.backends.hf import HFCausalLM
from nlieval.backends.openai import ServerError, ServerOptions
from nlieval.choice import RunConfig, run
from tests.helpers.fake_openai import FakeServer
from tests.helpers.records import saved_records

REQUESTS = [
    ScoreRequest("Premise: A man plays.\nHypothesis: Music.\nAnswer:", (" A", " B", " C")),
    ScoreRequest("Two dogs run through the snow. Answer:", (" A", " B")),
    ScoreRequest("One dog. Answer:", (" Entailment", " Neutral")),
    # The context ends in a space that the tokenizer merges into the option.
    ScoreRequest("A cat sits on a mat. Answer: ", ("Contradiction", "A")),
]

VOCAB = 400  # the tiny tokenizer's (tests/conftest.py): K = VOCAB finds every token


@pytest.fixture(scope="module")
def hf(tiny_llama: Path) -> HFCausalLM:
    return HFCausalLM(str(tiny_llama), HFOptions(device="cpu"), batch_size=2)


@pytest.fixture
def server_settings() -> dict[str, Any]:
    """The shared fake server (tests/conftest.py), answering up to VOCAB top log-probs."""
    return {"max_logprobs": VOCAB}


def _lm(server: FakeServer, **kw: Any) -> CompletionsLM:
    # --timeout bounds a whole request, queueing included: on a loaded 2-core CI machine
    # the fake server's forward passes alone have taken over 5 s. No test here is about
    # timeouts (tests/backends/test_server_bounds.py is), so the bound is generous.
    opts: dict[str, Any] = {"timeout": 60.0, "retries": 2, "backoff": 0.01, "sleep": lambda s: None}
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


def _eligible(hf: HFCausalLM) -> list[int]:
    """The requests whose every option is one token after the context."""
    return [
        r
        for r, req in enumerate(REQUESTS)
        if all(_one_token_more(hf, req.context, c) for c in req.continuations)
    ]


def test_single_token_items_come_from_one_request_per_item(
    hf: HFCausalLM, server: FakeServer
) -> None:
    want = hf.loglikelihood(REQUESTS)
    fast = _eligible(hf)
    # The texts are built so that both kinds occur: letters after "Answer:" are one
    # token more; the option after a trailing space merges with it.
    assert 0 in fast and 1 in fast and 3 not in fast
    with _lm(server, top_logprobs=VOCAB) as lm:
        got = lm.loglikelihood(REQUESTS)
        counts = lm.counts.copy()
    _close(got, want)
    n_fast = sum(len(REQUESTS[r].continuations) for r in fast)
    assert counts["next_token_options"] == n_fast
    assert counts["echo_options"] == 9 - n_fast and counts["top_k_misses"] == 0
    # One prompt per such item, sent as the context's token ids.
    prompts = [p for b in _next_token_bodies(server) for p in b["prompt"]]
    assert prompts == [hf.tok(REQUESTS[r].context)["input_ids"] for r in fast]
    body = _next_token_bodies(server)[0]
    assert (body["max_tokens"], body["logprobs"], body["temperature"]) == (1, VOCAB, 0)
    # An item is scored one way only: every option of the others by echo.
    echoed = sorted(p for b in _echo_bodies(server) for p in b["prompt"])
    assert echoed == sorted(
        REQUESTS[r].context + c
        for r, req in enumerate(REQUESTS)
        if r not in fast
        for c in req.continuations
    )
    # The context and each context + option were tokenized by the server.
    assert len(server.tokenize_requests) == 4 + 9


def test_options_asked_for_by_id_never_miss(hf: HFCausalLM, server: FakeServer) -> None:
    want = hf.loglikelihood(REQUESTS)
    with _lm(server, top_logprobs=1) as lm:
        got = lm.loglikelihood(REQUESTS)
        counts = lm.counts.copy()
    _close(got, want)
    # K = 1, but the options' ids were asked for by name (vLLM's logprob_token_ids).
    fast = _eligible(hf)
    assert counts["top_k_misses"] == 0
    assert counts["next_token_options"] == sum(len(REQUESTS[r].continuations) for r in fast)
    body = _next_token_bodies(server)[0]
    letters = {hf.tok(REQUESTS[r].context + c)["input_ids"][-1]
               for r in fast for c in REQUESTS[r].continuations}  # fmt: skip
    assert body["logprob_token_ids"] == sorted(letters)


def test_items_with_an_option_outside_the_top_k_are_scored_by_echo(
    hf: HFCausalLM, server: FakeServer
) -> None:
    server.logprob_token_ids = False  # a server that only knows the top K
    want = hf.loglikelihood(REQUESTS)
    with _lm(server, top_logprobs=1) as lm:
        got = lm.loglikelihood(REQUESTS)
        counts = lm.counts.copy()
    _close(got, want)
    # K = 1 holds one token: no item of two or more options has all of them in it.
    assert counts["top_k_misses"] == len(_eligible(hf)) >= 1
    assert counts["next_token_options"] == 0 and counts["echo_options"] == 9


def test_equal_to_in_process_on_a_run_at_k0_and_k5(
    tmp_path: Path, tiny_llama: Path, server: FakeServer
) -> None:
    base: dict[str, Any] = {"tasks": ("smoke",), "shots": (0, 5), "seeds": (0,)}
    ref = run(RunConfig(model=str(tiny_llama), **base), tmp_path / "hf", progress=False)
    cfg = RunConfig(
        model="openai-completions:tiny",
        engines=EngineOptions(server=ServerOptions(server.url)),
        top_logprobs=VOCAB,
        **base,
    )
    got = run(cfg, tmp_path / "server", progress=False)
    recs = saved_records(tmp_path / "server")
    want = {(r.k, r.item_id): r for r in saved_records(tmp_path / "hf")}
    assert len(recs) == len(want) == 96
    worst = 0.0
    for r in recs:
        w = want[(r.k, r.item_id)]
        assert r.pred == w.pred
        worst = max(worst, *(abs(a - b) for a, b in zip(r.loglik, w.loglik, strict=True)))
    assert worst < 1e-4
    assert [m["accuracy"] for m in got.metrics] == [m["accuracy"] for m in ref.metrics]
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
    assert counts["next_token_options"] == 0 and counts["echo_options"] == 9 + 3
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
    # At most the first call's 13 texts (some are cancelled once the first 404 is in);
    # the second call asked for none.
    assert len(server.tokenize_requests) <= 13


def test_a_server_refusing_k_top_logprobs_is_scored_by_echo(
    server: FakeServer, hf: HFCausalLM, caplog: pytest.LogCaptureFixture
) -> None:
    server.max_logprobs = 20  # vLLM's default --max-logprobs
    server.logprob_token_ids = False  # before vLLM 0.32 (which does not check K then)
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


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (("status", 401, '{"error": "only /v1 is open"}'), "HTTP 401"),
        (("status", 415, "unsupported"), "HTTP 415"),
        (("raw", "<html>Welcome</html>"), "not JSON"),
        (("raw", '{"tokens": []}'), "without token ids"),
        (("raw", '{"count": 3}'), "without token ids"),
    ],
    ids=["401", "415", "html", "empty-tokens", "no-tokens"],
)
def test_any_tokenize_refusal_is_scored_by_echo(
    server: FakeServer,
    hf: HFCausalLM,
    caplog: pytest.LogCaptureFixture,
    answer: tuple[Any, ...],
    message: str,
) -> None:
    server.tokenize_default = lambda body: answer
    why = _fallback(server, hf, caplog, top_logprobs=VOCAB)
    assert message in why and "/tokenize" in why


def test_a_refusal_without_logprobs_in_it_does_not_blame_max_logprobs(
    server: FakeServer, hf: HFCausalLM, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(body: dict[str, Any]) -> tuple[Any, ...]:
        if body.get("return_tokens_as_token_ids"):
            return ("status", 400, '{"error": {"message": "unknown field"}}')
        return ("echo",)

    server.completions_default = refuse
    why = _fallback(server, hf, caplog, top_logprobs=VOCAB)
    assert "refused the next-token request" in why and "unknown field" in why
    assert "--max-logprobs" not in why


def test_an_answer_with_more_than_one_position_is_scored_by_echo(
    server: FakeServer, hf: HFCausalLM, caplog: pytest.LogCaptureFixture
) -> None:
    def twice(body: dict[str, Any]) -> dict[str, Any]:
        for c in body["choices"]:
            top = c["logprobs"]["top_logprobs"]
            c["logprobs"]["top_logprobs"] = [top[-1], top[-1]]
        return body

    server.completions_default = lambda body: ("echo", twice)
    why = _fallback(server, hf, caplog, top_logprobs=VOCAB)
    assert "exactly one next token" in why


def test_no_single_token_item_switches_the_path_off(server: FakeServer) -> None:
    words = [ScoreRequest("A cat sits. Answer:", (" Entailment", " Contradiction"))]
    with _lm(server, top_logprobs=VOCAB) as lm:
        lm.loglikelihood(words)
        assert lm.next_token_off is not None and "no item of 1" in lm.next_token_off
        n = len(server.tokenize_requests)
        lm.loglikelihood(REQUESTS)
    assert len(server.tokenize_requests) == n  # not tokenized again: echo from now on


def test_switching_off_cancels_the_next_token_requests_not_yet_sent(
    server: FakeServer, hf: HFCausalLM
) -> None:
    server.token_ids = False
    many = [REQUESTS[0]] * 6
    with _lm(server, top_logprobs=VOCAB, batch_size=1, concurrency=1) as lm:
        got = lm.loglikelihood(many)
    _close(got, hf.loglikelihood(many))
    # The first answer switched the path off: at most the one then running followed.
    assert 1 <= len(_next_token_bodies(server)) <= 2


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
    with _lm(server, top_logprobs=VOCAB) as lm, pytest.raises(ServerError) as info:
        lm.loglikelihood(REQUESTS[:1])
    # Retried (a second answer may be sound), then a one-line error.
    assert "impossible log-prob: 3.5" in str(info.value) and "gave up" in str(info.value)


def test_settings() -> None:
    with pytest.raises(ValueError, match="top-logprobs"):
        CompletionsLM("m", "http://127.0.0.1:9/v1", top_logprobs=-1)
    with pytest.raises(ValueError, match="top-logprobs"):
        server = ServerOptions("http://127.0.0.1:9/v1")
        RunConfig(
            model="openai-completions:m",
            tasks=("smoke",),
            top_logprobs=-1,
            engines=EngineOptions(server=server),
        )
    lm = CompletionsLM("m", "http://127.0.0.1:9/v1")
    assert lm.tokenize_url == "http://127.0.0.1:9/tokenize" and lm.top_logprobs == 20
    assert CompletionsLM("m", "http://h:9/v1", top_logprobs=0).next_token_off == "--top-logprobs 0"
    assert "top_logprobs" not in RunConfig.IDENTITY
