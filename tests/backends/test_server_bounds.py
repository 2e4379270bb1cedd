"""What a server can send is bounded (issue 23, class 2, continued): the whole answer
within --timeout, a body no larger than the request can need, JSON no deeper than a
parser can read, the model asked for, options of distinct tokens on the echo path, no raw
logits, echo requests sized by time and split on a timeout, and each record saying how it
was scored."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import EngineOptions, ScoreRequest
from nlieval.backends.completions import (
    ECHO,
    NEXT_TOKEN,
    CompletionsLM,
    PromptLogprobsError,
    fallback,
)
from nlieval.backends.openai import (
    BODY_FLOOR,
    ModelMismatchError,
    OpenAIChat,
    ServerError,
    ServerOptions,
    body_limit,
)
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.types import Record
from tests.helpers.fake_openai import EchoLM, FakeServer, same_token_ids
from tests.helpers.records import saved_rows

REQUESTS = [
    ScoreRequest("Premise: A man plays.\nHypothesis: Music.\nAnswer:", (" A", " B", " C")),
    ScoreRequest("A cat sits on a mat. Answer:", (" Entailment", " Neutral", " Contradiction")),
    ScoreRequest("Two dogs run through the snow. Answer:", (" yes", " no")),
]
CONV = [{"role": "user", "content": "Say hi."}]


def _lm(server: FakeServer, **kw: Any) -> CompletionsLM:
    opts: dict[str, Any] = {"timeout": 5.0, "retries": 0, "top_logprobs": 0}
    opts.update(kw)
    return CompletionsLM("tiny", server.url, **opts)


def _chat(server: FakeServer, **kw: Any) -> OpenAIChat:
    opts: dict[str, Any] = {"timeout": 5.0, "retries": 0}
    opts.update(kw)
    return OpenAIChat("fake-model", server.url, **opts)


def _wait_for(check: Any, seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


# --------------------------------------------------------------------------- 1. tokens


def test_options_of_the_same_token_ids_are_refused_on_the_echo_path(server: FakeServer) -> None:
    server.completions_default = lambda body: ("echo", same_token_ids)
    with _lm(server) as lm, pytest.raises(PromptLogprobsError, match="into the same tokens"):
        lm.loglikelihood(REQUESTS[:1])
    assert all(b.get("return_token_ids") is True for b in server.requests)


def test_distinct_token_ids_pass_on_the_echo_path(server: FakeServer) -> None:
    with _lm(server) as lm:
        scores = lm.loglikelihood(REQUESTS)
    assert [len(s) for s in scores] == [3, 3, 2]


# --------------------------------------------------------------------------- 2. model name


def test_completions_naming_another_model_are_refused(server: FakeServer) -> None:
    server.model_name = "other-model"
    with _lm(server) as lm, pytest.raises(ModelMismatchError) as info:
        lm.loglikelihood(REQUESTS[:1])
    assert "'other-model'" in str(info.value) and "'tiny'" in str(info.value)
    assert len(server.requests) == 1  # not retried: it answers the same way again


def test_a_chat_answer_naming_another_model_is_refused(server: FakeServer) -> None:
    server.model_name = "other-model"
    with _chat(server) as chat, pytest.raises(ModelMismatchError, match="'fake-model'"):
        chat.generate([CONV, CONV])


def test_the_name_asked_for_its_dated_snapshot_or_no_name_pass(server: FakeServer) -> None:
    for answered in ("fake-model", "fake-model-2024-08-06", None):
        server.model_name = answered
        with _chat(server) as chat:
            assert chat.generate([CONV]) == ["hello"]
    server.model_name = "fake-model-large"  # another model, not a snapshot
    with _chat(server) as chat, pytest.raises(ModelMismatchError):
        chat.generate([CONV])


def test_run_stops_with_one_line_naming_both_models(
    tmp_path: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.model_name = "served/other"
    argv = ["run", "--model", "tiny", "--api-base", server.url, "--task", "smoke"]
    assert main([*argv, "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'served/other'" in err[0] and "'tiny'" in err[0]


# --------------------------------------------------------------------------- 3. bounds


def test_a_trickling_body_ends_at_the_timeout(server: FakeServer) -> None:
    # ~150 bytes, one every 0.2 s: 30 s in all, each read well within the timeout.
    server.default = lambda body: ("trickle", 0.2)
    with _chat(server, timeout=1.0) as chat, pytest.raises(ServerError, match="within 1 s"):
        chat.generate([CONV])
    # The request was cancelled: its connection closed while the server was still sending.
    assert _wait_for(lambda: server.abandoned == 1)


def test_a_huge_body_is_refused_while_it_is_read(server: FakeServer) -> None:
    # 50 MB for 16 tokens, without a Content-Length: only the bytes read tell.
    server.default = lambda body: ("huge", 50_000_000)
    with _chat(server) as chat, pytest.raises(ServerError, match="too large") as info:
        chat.complete(CONV, max_new_tokens=16)
    assert "reading stopped there" in str(info.value)  # counted, not from a header


def test_a_huge_echo_body_is_refused_from_its_length(server: FakeServer) -> None:
    def padded(body: dict[str, Any]) -> str:
        return json.dumps(body) + " " * 20_000_000

    server.completions_default = lambda body: ("echo", padded)
    with _lm(server) as lm, pytest.raises(ServerError, match="too large") as info:
        lm.loglikelihood(REQUESTS[:1])
    assert "Content-Length is 200" in str(info.value)  # refused before reading


def test_body_limit_grows_with_the_request() -> None:
    small = body_limit({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16})
    assert BODY_FLOOR < small < 2 * BODY_FLOOR  # a 50 MB answer is far above it
    echo = body_limit({"prompt": ["x" * 4000] * 16, "echo": True, "logprobs": 1})
    assert echo > 16 * 4000 * 1024  # a KiB per character sent


def test_deeply_nested_json_is_one_error_not_a_recursion_error(server: FakeServer) -> None:
    server.default = lambda body: ("deep", 100_000)
    with _chat(server) as chat, pytest.raises(ServerError, match="nested too deep"):
        chat.generate([CONV])
    server.completions_default = lambda body: ("deep", 100_000)
    with _lm(server) as lm, pytest.raises(ServerError, match="nested too deep"):
        lm.loglikelihood(REQUESTS[:1])


# --------------------------------------------------------------------------- 4. --timeout


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e300", "0"])
def test_a_timeout_that_is_not_a_finite_positive_number_is_refused(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--model", "server:m", "--api-base", "http://127.0.0.1:9/v1"]
    argv += ["--task", "smoke", f"--timeout={value}", "--out", str(tmp_path / "r")]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("nlieval run: error: argument --timeout: expected a finite")
    with pytest.raises(ValueError, match="finite"):
        ServerOptions("http://127.0.0.1:9/v1", timeout=float(value))


# --------------------------------------------------------------------------- 5. raw logits


def test_raw_logits_on_the_echo_path_are_refused_by_name(server: FakeServer) -> None:
    # The tiny model's logits lie within [-0.4, 0.5]: shifted down by 0.5 every value is
    # below 0 (each passes as a log-prob), but a position's top values sum above 1.
    server.raw_logits = -0.5
    with _lm(server, retries=2) as lm, pytest.raises(PromptLogprobsError) as info:
        lm.loglikelihood(REQUESTS[:1])
    assert "raw logits" in str(info.value) and "--logprobs-mode raw_logprobs" in str(info.value)
    assert len(server.requests) == 1  # a setting of the server: not asked again


def test_positive_raw_logits_say_how_to_start_the_server(server: FakeServer) -> None:
    server.raw_logits = 1.0  # every value above 0
    with _lm(server) as lm, pytest.raises(ServerError) as info:
        lm.loglikelihood(REQUESTS[:1])
    assert "impossible log-prob" in str(info.value) and "raw_logits" in str(info.value)


def test_log_probs_pass_the_distribution_check(server: FakeServer, echo_lm: EchoLM) -> None:
    # The fake's top log-probs of a position: the prompt token and the top one.
    body = echo_lm.answer({"prompt": ["A cat sits."], "max_tokens": 0, "logprobs": 1})
    tops = body["choices"][0]["logprobs"]["top_logprobs"][1:]
    assert all(sum(math.exp(v) for v in t.values()) <= 1 for t in tops)
    with _lm(server) as lm:
        assert all(v < 0 for row in lm.loglikelihood(REQUESTS) for v in row)


# --------------------------------------------------------------------------- 6. sizing


def test_echo_requests_are_sized_to_stay_under_the_timeout(server: FakeServer) -> None:
    with _lm(server) as lm:
        want = lm.loglikelihood(REQUESTS)
    server.requests.clear()
    # A slow server: 0.3 s a prompt. 16 prompts a request (the old fixed batch) would
    # take 2.4 s, past the 1 s timeout.
    server.completions_default = lambda body: ("slow", 0.3 * len(body["prompt"]))
    with _lm(server, timeout=1.0, batch_size=16, concurrency=2) as lm:
        got = lm.loglikelihood(REQUESTS)
    assert got == want
    sizes = [len(b["prompt"]) for b in server.requests]
    assert sizes[0] == 1 and max(sizes) * 0.3 < 1.0 and sum(sizes) == 8


def test_a_request_that_times_out_is_split_and_sent_again(server: FakeServer) -> None:
    with _lm(server) as lm:
        want = lm.loglikelihood(REQUESTS)
    calls = {"n": 0}

    def slower(body: dict[str, Any]) -> tuple[Any, ...]:
        # Fast for the first request (which sizes the next ones to all that is left),
        # then 0.3 s a prompt: seven prompts take 2.1 s, past the timeout.
        calls["n"] += 1
        return ("slow", (0.001 if calls["n"] == 1 else 0.3) * len(body["prompt"]))

    server.completions_default = slower
    with _lm(server, timeout=1.2, batch_size=16, concurrency=1) as lm:
        got = lm.loglikelihood(REQUESTS)
        splits = lm.counts["echo_splits"]
    assert got == want and splits >= 1
    sizes = [len(b["prompt"]) for b in server.requests]
    assert sizes[:2] == [1, 7] and sizes[2] <= 3  # 7 prompts timed out, then halves


def test_a_failure_cancels_the_requests_in_flight(server: FakeServer) -> None:
    calls = {"n": 0}

    def answer(body: dict[str, Any]) -> tuple[Any, ...]:
        calls["n"] += 1
        if calls["n"] == 1:
            return ("echo",)  # the first request, alone: sizes the others
        if calls["n"] == 4:
            return ("status", 401, '{"error": {"message": "key revoked"}}')
        return ("slow", 30.0)

    server.completions_default = answer
    with _lm(server, batch_size=1, concurrency=4, timeout=60) as lm:  # noqa: SIM117
        with pytest.raises(ServerError, match="key revoked"):
            lm.loglikelihood(REQUESTS)
        # The three slow requests in flight with the failed one were cancelled, not left
        # running (the client is still open): the server saw their connections close.
        assert _wait_for(lambda: server.abandoned == 3, 10), server.abandoned


# --------------------------------------------------------------------------- 7. scored_by


def test_each_record_says_how_it_was_scored(tmp_path: Path, server: FakeServer) -> None:
    opts = ServerOptions(server.url)
    per_item = run(
        RunConfig(
            "openai-completions:tiny", ("smoke",), engines=EngineOptions(server=opts), limit=12
        ),
        tmp_path / "a",
        progress=False,
    )
    assert per_item.metrics
    recs = saved_rows(tmp_path / "a")
    ways = {r["scored_by"] for r in recs}
    assert ways <= {NEXT_TOKEN, fallback("an option is not one token after the context")}
    assert NEXT_TOKEN in ways
    run(
        RunConfig(
            "openai-completions:tiny",
            ("smoke",),
            engines=EngineOptions(server=opts),
            limit=4,
            top_logprobs=0,
        ),
        tmp_path / "b",
        progress=False,
    )
    recs = saved_rows(tmp_path / "b")
    assert [r["scored_by"] for r in recs] == [ECHO] * 4


def test_scored_by_of_a_fallback_and_of_old_records() -> None:
    assert fallback("an option is outside the top K").startswith("echo (fallback: ")
    old = json.loads(
        Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (0.7, 0.3), "a", "a").to_json()
    )
    del old["scored_by"]  # a record written before the field
    assert Record.from_dict(old).scored_by is None
