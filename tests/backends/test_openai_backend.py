"""OpenAIChat against a fake OpenAI-compatible server: every fault kind, retries,
back-off, the concurrency limit, and answers kept when some requests fail."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from nlieval.backends import resolve
from nlieval.backends.base import GenerationBackend
from nlieval.backends.openai import OpenAIChat, ServerError, ServerOptions, _retry_after
from tests.helpers.fake_openai import FakeServer

CONV = [{"role": "user", "content": "Say hi."}]


@pytest.fixture
def server_settings() -> dict[str, Any]:
    # The shared ``server`` fixture (tests/conftest.py), answering chat requests only.
    return {"lm": False}


def _chat(server: FakeServer, delays: list[float] | None = None, **kw: Any) -> OpenAIChat:
    # Back-off is recorded, not slept: fast tests that still see every delay asked for.
    opts: dict[str, Any] = {"timeout": 5.0, "retries": 2, "backoff": 0.01}
    opts.update(kw)
    sleep = delays.append if delays is not None else (lambda s: None)
    return OpenAIChat("fake-model", server.url, sleep=sleep, **opts)


def _echo(body: dict[str, Any]) -> tuple[Any, ...]:
    return ("ok", "echo " + body["messages"][-1]["content"])


def test_good_answer_and_request_shape(server: FakeServer) -> None:
    server.script.append(("ok", '{"entailment": "x"}'))
    with _chat(server) as chat:
        assert isinstance(chat, GenerationBackend)
        out = chat.generate([CONV], max_new_tokens=7, temperature=0.5, seed=3)
    assert out == ['{"entailment": "x"}']
    body = server.requests[0]
    assert body == {
        "model": "fake-model",
        "messages": CONV,
        "max_tokens": 7,
        "temperature": 0.5,
        "seed": 3,
    }
    assert "authorization" not in server.headers[0]


def test_api_key_goes_into_the_header(server: FakeServer) -> None:
    with OpenAIChat("m", server.url, api_key="sk-test") as chat:
        chat.generate([CONV])
    assert server.headers[0]["authorization"] == "Bearer sk-test"


def test_load_generator_reads_the_key_from_the_environment(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-env")
    opts = ServerOptions(server.url, api_key_env="MY_KEY", timeout=3, retries=1, concurrency=2)
    chat = resolve("served-model", server=opts).chat()
    assert isinstance(chat, OpenAIChat)
    assert (chat.name, chat.timeout, chat.retries, chat.concurrency) == ("served-model", 3, 1, 2)
    assert chat.generate([CONV]) == ["hello"]
    assert server.headers[0]["authorization"] == "Bearer sk-env"


def test_http_500_then_ok_is_retried_with_backoff(server: FakeServer) -> None:
    server.script.extend([("status", 500, '{"error": {"message": "overloaded"}}'), ("ok", "fine")])
    delays: list[float] = []
    with _chat(server, delays, backoff=0.4) as chat:
        assert chat.generate([CONV]) == ["fine"]
    assert len(server.requests) == 2
    assert len(delays) == 1 and 0.2 <= delays[0] <= 0.4  # 0.4 s times jitter in [0.5, 1]


def test_backoff_doubles_and_is_capped(server: FakeServer) -> None:
    server.default = lambda body: ("status", 503, "busy")
    delays: list[float] = []
    chat = _chat(server, delays, retries=5, backoff=1.0, max_backoff=4.0)
    with chat, pytest.raises(ServerError):
        chat.generate([CONV])
    assert len(delays) == 5
    for delay, step in zip(delays, [1, 2, 4, 4, 4], strict=True):
        assert step / 2 <= delay <= step


def test_always_500_fails_with_status_and_message(server: FakeServer) -> None:
    server.default = lambda body: ("status", 500, '{"error": {"message": "GPU on fire"}}')
    with _chat(server, retries=3) as chat:
        results = list(chat.iter_generate([CONV]))
        with pytest.raises(ServerError, match="HTTP 500: GPU on fire"):
            chat.generate([CONV])
    [(index, err)] = results
    assert index == 0 and isinstance(err, ServerError)
    assert (err.status, err.retryable, err.tries) == (500, True, 4)
    assert "gave up after 4 tries" in str(err)
    assert len(server.requests) == 8  # 4 tries, twice


def test_slow_answer_times_out_then_ok(server: FakeServer) -> None:
    server.script.extend([("slow", 1.5, "too late"), ("ok", "in time")])
    with _chat(server, timeout=0.3) as chat:
        assert chat.generate([CONV]) == ["in time"]
    assert len(server.requests) == 2


def test_always_slow_reports_the_timeout(server: FakeServer) -> None:
    server.default = lambda body: ("slow", 1.0, "late")
    with _chat(server, timeout=0.2, retries=1) as chat, pytest.raises(ServerError) as info:
        chat.generate([CONV])
    assert "no answer within 0.2 s" in str(info.value)
    assert info.value.status is None and info.value.retryable


def test_dropped_connection_then_ok(server: FakeServer) -> None:
    server.script.extend([("drop",), ("drop",), ("ok", "back")])
    with _chat(server) as chat:
        assert chat.generate([CONV]) == ["back"]
    assert len(server.requests) == 3


def test_always_dropped_says_so(server: FakeServer) -> None:
    server.default = lambda body: ("drop",)
    with _chat(server, retries=1) as chat, pytest.raises(ServerError, match="dropped|failed"):
        chat.generate([CONV])


def test_429_respects_retry_after(server: FakeServer) -> None:
    server.script.extend(
        [("status", 429, '{"error": "slow down"}', {"Retry-After": "2"}), ("ok", "ok now")]
    )
    delays: list[float] = []
    with _chat(server, delays) as chat:
        assert chat.generate([CONV]) == ["ok now"]
    assert delays == [2.0]


def test_retry_after_is_capped(server: FakeServer) -> None:
    server.script.extend([("status", 503, "down", {"Retry-After": "3600"}), ("ok", "up")])
    delays: list[float] = []
    with _chat(server, delays, max_retry_after=10) as chat:
        assert chat.generate([CONV]) == ["up"]
    assert delays == [10]


@pytest.mark.parametrize("status", [408, 409, 502])
def test_other_retryable_statuses(server: FakeServer, status: int) -> None:
    server.script.append(("status", status, "try again"))
    with _chat(server) as chat:
        assert chat.generate([CONV]) == ["hello"]
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_is_not_retried(server: FakeServer, status: int) -> None:
    message = {"error": {"message": "max_tokens is too large", "type": "invalid_request"}}
    server.default = lambda body: ("status", status, json.dumps(message))
    with _chat(server) as chat, pytest.raises(ServerError) as info:
        chat.generate([CONV])
    assert len(server.requests) == 1
    err = info.value
    assert (err.status, err.retryable, err.tries) == (status, False, 1)
    assert f"HTTP {status}: max_tokens is too large" in str(err)
    assert server.url + "/chat/completions" in str(err)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"object": "chat.completion"}', "no choices"),
        ('{"choices": []}', "no choices"),
        ('{"choices": [{"text": "hi"}]}', "no message"),
    ],
)
def test_malformed_answers_are_clear_errors(server: FakeServer, body: str, message: str) -> None:
    server.default = lambda b: ("raw", body)
    with _chat(server) as chat, pytest.raises(ServerError, match=message):
        chat.generate([CONV])
    assert len(server.requests) == 1


def test_not_json_is_tried_again_and_counted(server: FakeServer) -> None:
    # A proxy's error page or a body cut short: the next try may be fine.
    server.script.extend([("raw", "<html>It works!</html>"), ("raw", '{"choices": [')])
    server.script.append(("ok", "fine"))
    with _chat(server) as chat:
        assert chat.generate([CONV]) == ["fine"]
        assert chat.faults == {"not JSON": 2}
    server.default = lambda b: ("raw", "<html>It works!</html>")
    with _chat(server) as chat, pytest.raises(ServerError, match="not JSON.*gave up after 3"):
        chat.generate([CONV])


def test_null_content_is_an_empty_answer(server: FakeServer) -> None:
    body = {"choices": [{"message": {"role": "assistant", "content": None}}]}
    server.script.append(("raw", json.dumps(body)))
    with _chat(server) as chat:
        assert chat.generate([CONV]) == [""]


def test_concurrency_limit_is_respected(server: FakeServer) -> None:
    server.default = _echo
    server.hold = 0.3  # requests overlap whenever the client allows it
    convs = [[{"role": "user", "content": f"n{i}"}] for i in range(10)]
    with _chat(server, concurrency=3) as chat:
        out = chat.generate(convs)
    assert out == [f"echo n{i}" for i in range(10)]
    assert server.max_in_flight == 3


def test_concurrency_one_is_sequential(server: FakeServer) -> None:
    server.default = _echo
    server.hold = 0.05
    convs = [[{"role": "user", "content": f"n{i}"}] for i in range(4)]
    with _chat(server, concurrency=1) as chat:
        assert [i for i, _ in chat.iter_generate(convs)] == [0, 1, 2, 3]
    assert server.max_in_flight == 1


def test_iter_generate_keeps_answers_when_some_fail(server: FakeServer) -> None:
    def respond(body: dict[str, Any]) -> tuple[Any, ...]:
        content = body["messages"][-1]["content"]
        return ("status", 500, "broken") if content == "n2" else _echo(body)

    server.default = respond
    convs = [[{"role": "user", "content": f"n{i}"}] for i in range(5)]
    with _chat(server, concurrency=2, retries=1) as chat:
        got = dict(chat.iter_generate(convs))
    assert sorted(got) == [0, 1, 2, 3, 4]
    assert isinstance(got[2], ServerError)
    assert [got[i] for i in (0, 1, 3, 4)] == ["echo n0", "echo n1", "echo n3", "echo n4"]


def test_closing_the_iterator_cancels_queued_requests(server: FakeServer) -> None:
    server.default = _echo
    convs = [[{"role": "user", "content": f"n{i}"}] for i in range(20)]
    with _chat(server, concurrency=1) as chat:
        for _ in chat.iter_generate(convs):
            break
    assert len(server.requests) <= 2  # the first, and at most the one already started


def test_dead_server_is_a_retryable_connection_failure(server: FakeServer) -> None:
    server.kill()
    delays: list[float] = []
    with _chat(server, delays, retries=2) as chat, pytest.raises(ServerError) as info:
        chat.generate([CONV])
    assert "connection failed" in str(info.value)
    assert info.value.retryable and info.value.tries == 3 and len(delays) == 2


def test_bad_api_base_and_settings() -> None:
    with pytest.raises(ValueError, match="http"):
        OpenAIChat("m", "localhost:8000/v1")
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIChat("m", "http://localhost:8000/v1", concurrency=0)


def test_retry_after_forms() -> None:
    assert _retry_after("1.5") == 1.5
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past
    assert _retry_after(None) is None and _retry_after("later") is None


def test_empty_conversation_list(server: FakeServer) -> None:
    with _chat(server) as chat:
        assert chat.generate([]) == []
    assert server.requests == []


def test_stopping_wakes_a_request_waiting_to_retry(server: FakeServer) -> None:
    def respond(body: dict[str, Any]) -> tuple[Any, ...]:
        if body["messages"][-1]["content"] == "n1":
            return ("status", 503, "busy", {"Retry-After": "60"})
        return _echo(body)

    server.default = respond
    convs = [[{"role": "user", "content": f"n{i}"}] for i in range(2)]
    # The real wait (no sleep stub): closing the iterator must end it, not sit out 60 s.
    with OpenAIChat("m", server.url, concurrency=2) as chat:
        for i, answer in chat.iter_generate(convs):
            assert (i, answer) == (0, "echo n0")
            while len(server.requests) < 2:  # n1 has had its 503 and waits to retry
                threading.Event().wait(0.01)
            break
    assert [r["messages"][-1]["content"] for r in server.requests].count("n1") == 1
