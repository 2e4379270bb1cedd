"""CompletionsLM (option scoring over the OpenAI completions API) against the fake server,
whose ``/v1/completions`` computes echoed prompt log-probs with the tiny random Llama:
equal to the in-process backend, every fault retried or reported, resume after kill -9.

These tests score by echo requests (``top_logprobs=0``) unless they say otherwise; the
one-request-per-item scoring has its own file (test_completions_next_token.py)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import EngineOptions, HFOptions, LogLikelihoodBackend, ScoreRequest, stand_in
from nlieval.backends.completions import CompletionsLM, PromptLogprobsError
from nlieval.backends.echo_logprobs import continuation_logprob
from nlieval.backends.hf import HFCausalLM
from nlieval.backends.openai import ServerError, ServerOptions
from nlieval.choice import RunConfig, run
from nlieval.runs import RECORDS
from nlieval.types import Record
from tests.helpers.fake_openai import (
    EchoLM,
    FakeServer,
    drop_last_choice,
    generated_only,
    no_logprobs,
    shift_offsets,
)
from tests.helpers.records import saved_records

REQUESTS = [
    ScoreRequest("Premise: A man plays.\nHypothesis: Music.\nAnswer:", (" A", " B", " C")),
    ScoreRequest("Two dogs run through the snow. Answer:", (" Entailment", " Neutral")),
    # A continuation without its leading space: the last context token merges into it.
    ScoreRequest("A cat sits on a mat. Answer: ", ("Contradiction", "A")),
]


def _lm(server: FakeServer, **kw: Any) -> CompletionsLM:
    # Back-off is recorded by a no-op sleep: fast tests.
    opts: dict[str, Any] = {
        "timeout": 5.0,
        "retries": 2,
        "backoff": 0.01,
        "sleep": lambda s: None,
        "top_logprobs": 0,
    }
    opts.update(kw)
    return CompletionsLM("tiny", server.url, **opts)


def _clean(server: FakeServer) -> list[list[float]]:
    with _lm(server) as lm:
        out = lm.loglikelihood(REQUESTS)
    server.requests.clear()
    return out


def _key(r: Record) -> tuple[Any, ...]:
    return (r.k, r.seed, r.item_id)


# --------------------------------------------------------------------------- agreement


def test_same_predictions_and_logliks_as_in_process_at_k0_and_k5(
    tmp_path: Path, tiny_llama: Path, server: FakeServer
) -> None:
    base = {"tasks": ("smoke",), "shots": (0, 5), "seeds": (0,)}
    ref = run(RunConfig(model=str(tiny_llama), **base), tmp_path / "hf", progress=False)
    # Through the runner's own backend choice, as `nlieval run --model openai-completions:`.
    cfg = RunConfig(
        model="openai-completions:tiny",
        engines=EngineOptions(server=ServerOptions(server.url)),
        top_logprobs=0,
        **base,
    )
    assert isinstance(cfg.resolve().scorer(), CompletionsLM)
    got = run(cfg, tmp_path / "server", progress=False)
    want = {_key(r): r for r in saved_records(tmp_path / "hf")}
    recs = saved_records(tmp_path / "server")
    assert len(recs) == len(want) == 96 and {_key(r) for r in recs} == set(want)
    worst = 0.0
    for r in recs:
        w = want[_key(r)]
        assert r.pred == w.pred, _key(r)
        worst = max(worst, *(abs(a - b) for a, b in zip(r.loglik, w.loglik, strict=True)))
    assert worst < 1e-4
    assert [(m["k"], m["accuracy"], m["macro_f1"]) for m in got.metrics] == [
        (m["k"], m["accuracy"], m["macro_f1"]) for m in ref.metrics
    ]
    body = server.requests[0]
    assert body["echo"] is True and body["logprobs"] == 1
    assert body["max_tokens"] == 0 and body["temperature"] == 0 and body["model"] == "tiny"
    assert all(1 <= len(b["prompt"]) <= 16 for b in server.requests)
    assert sum(len(b["prompt"]) for b in server.requests) == 96 * 3


def test_boundary_rule_equals_the_in_process_backend(tiny_llama: Path, server: FakeServer) -> None:
    hf = HFCausalLM(str(tiny_llama), HFOptions(device="cpu"), batch_size=2)
    want = hf.loglikelihood(REQUESTS)
    # The third request's context ends in a space that the tokenizer merges into the
    # continuation: the straddling token must be scored as the continuation's.
    ctx, cont = hf.split(REQUESTS[2].context, REQUESTS[2].continuations[1])
    assert hf.tok.decode(cont).startswith(" ")
    with _lm(server, batch_size=2) as lm:
        assert isinstance(lm, LogLikelihoodBackend)
        got = lm.loglikelihood(REQUESTS)
    for g, w in zip(got, want, strict=True):
        assert max(abs(a - b) for a, b in zip(g, w, strict=True)) < 1e-4


def test_batches_of_prompts_and_progress_per_request(server: FakeServer) -> None:
    ticks: list[int] = []
    with _lm(server, batch_size=3, concurrency=2) as lm:
        lm.loglikelihood(REQUESTS, ticks.append)
    sizes = [len(b["prompt"]) for b in server.requests]
    # One prompt a request until one has been timed, then up to batch_size.
    assert sizes[0] == 1 and max(sizes) == 3
    assert sum(sizes) == sum(len(r.continuations) for r in REQUESTS)
    assert sorted(p for b in server.requests for p in b["prompt"]) == sorted(
        r.context + c for r in REQUESTS for c in r.continuations
    )
    assert ticks == [1, 1, 1]


def test_results_do_not_depend_on_batch_or_concurrency(server: FakeServer) -> None:
    want = _clean(server)
    for bs, conc in ((1, 1), (7, 3), ("auto", 8)):
        with _lm(server, batch_size=bs, concurrency=conc) as lm:
            assert lm.loglikelihood(REQUESTS) == want


def test_concurrency_limit_is_respected(server: FakeServer) -> None:
    server.hold = 0.2
    with _lm(server, batch_size=1, concurrency=3) as lm:
        lm.loglikelihood(REQUESTS)
    assert server.max_in_flight == 3


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize(
    ("fault", "kw"),
    [
        (("status", 500, '{"error": {"message": "overloaded"}}'), {}),
        (("status", 503, "busy", {"Retry-After": "0"}), {}),
        (("status", 429, '{"error": "slow down"}'), {}),
        (("slow", 1.5), {"timeout": 0.4}),
        (("drop",), {}),
    ],
    ids=["500", "503-retry-after", "429", "timeout", "dropped-connection"],
)
def test_transient_faults_are_retried(
    server: FakeServer, fault: tuple[Any, ...], kw: dict[str, Any]
) -> None:
    want = _clean(server)
    server.script.extend([fault, fault])
    delays: list[float] = []
    with _lm(server, batch_size=16, sleep=delays.append, **kw) as lm:
        assert lm.loglikelihood(REQUESTS) == want
    # The first request (one prompt, alone until it is timed) was tried three times.
    first = server.requests[0]["prompt"]
    assert [b["prompt"] for b in server.requests[:3]] == [first] * 3 and len(delays) == 2


def test_retry_after_is_honoured(server: FakeServer) -> None:
    server.script.append(("status", 429, "later", {"Retry-After": "2"}))
    delays: list[float] = []
    with _lm(server, sleep=delays.append) as lm:
        lm.loglikelihood(REQUESTS)
    assert delays == [2.0]


def _mutate(key: str, value: Any) -> Any:
    def change(body: dict[str, Any]) -> dict[str, Any]:
        for c in body["choices"]:
            lp = c["logprobs"]
            if key == "null-last":
                lp["token_logprobs"][-1] = None
            elif key == "short-offsets":
                lp["text_offset"] = lp["text_offset"][:-1]
            elif key == "index":
                c["index"] = value
        return body

    return change


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (("raw", '{"choices": [{"text": "x", "logprobs": '), "the answer is not JSON"),
        (("raw", "<html>It works!</html>"), "the answer is not JSON"),
        (("echo", no_logprobs), "returned no prompt log-probs"),
        (("echo", generated_only), "too few prompt log-probs"),
        (("echo", shift_offsets), "do not match the prompt"),
        (("echo", drop_last_choice), "returned 1 choices for 2 prompts"),
        (("echo", _mutate("null-last", None)), "gave no log-prob to continuation token"),
        (("echo", _mutate("short-offsets", None)), "misaligned prompt log-probs"),
        (("echo", _mutate("index", 0)), "indices are not 0..1"),
        (("status", 400, '{"error": {"message": "bad model"}}'), "HTTP 400: bad model"),
    ],
    ids=[
        "bad-json",
        "html",
        "no-logprobs",
        "generated-only",
        "misaligned-offsets",
        "missing-choice",
        "null-logprob",
        "short-offsets",
        "bad-index",
        "http-400",
    ],
)
def test_bad_answers_are_reported_by_name_without_retry(
    server: FakeServer, fault: tuple[Any, ...], message: str
) -> None:
    # The first request (one prompt) is answered well; the next (the item's two other
    # options) badly.
    server.completions_default = lambda body: fault if len(body["prompt"]) > 1 else ("echo",)
    with _lm(server, batch_size=3) as lm, pytest.raises(ServerError, match=message) as info:
        lm.loglikelihood(REQUESTS[:1])
    assert "\n" not in str(info.value) and server.url in str(info.value)
    # Not retried: the server would answer the same again. (A 400 at max_tokens 0 is
    # asked once more with max_tokens 1: servers that refuse 0.)
    assert len(server.requests) == 1 + (2 if fault[0] == "status" else 1)


def test_no_prompt_logprobs_error_names_the_servers(server: FakeServer) -> None:
    server.completions_default = lambda body: ("echo", no_logprobs)
    with _lm(server) as lm, pytest.raises(PromptLogprobsError) as info:
        lm.loglikelihood(REQUESTS)
    text = str(info.value)
    assert text.startswith(f"the server at {server.url} returned no prompt log-probs")
    assert "vLLM" in text and "llama-server does not" in text


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (("status", 500, '{"error": {"message": "GPU on fire"}}'), "HTTP 500: GPU on fire"),
        (("slow", 1.0), "no answer within 0.3 s"),
        (("drop",), "connection dropped|connection failed"),
    ],
    ids=["500", "timeout", "dropped"],
)
def test_persistent_faults_give_up_by_name(
    server: FakeServer, fault: tuple[Any, ...], message: str
) -> None:
    server.completions_default = lambda body: fault
    with _lm(server, timeout=0.3, retries=1) as lm, pytest.raises(ServerError) as info:
        lm.loglikelihood(REQUESTS[:1])
    assert info.value.tries == 2
    assert "gave up after 2 tries" in str(info.value)
    assert re.search(message, str(info.value))
    if fault[0] == "slow":
        # One prompt that takes longer than the timeout: running the same command again
        # would fail the same way, so the message says which settings to change.
        assert not info.value.retryable
        assert all(f in str(info.value) for f in ("--timeout", "--concurrency", "--batch-size"))
    else:
        assert info.value.retryable


def test_dead_server_is_reported(server: FakeServer) -> None:
    server.kill()
    with _lm(server, retries=1) as lm, pytest.raises(ServerError, match="connection failed"):
        lm.loglikelihood(REQUESTS)


def test_max_tokens_zero_refused_falls_back_to_one(server: FakeServer) -> None:
    want = _clean(server)
    server.min_max_tokens = 1  # HTTP 400 for max_tokens 0; 1 generated token otherwise
    with _lm(server, batch_size=3, concurrency=1) as lm:
        got = lm.loglikelihood(REQUESTS)
        assert lm.max_tokens == 1
    assert got == want
    assert [b["max_tokens"] for b in server.requests] == [0, 1, 1, 1]
    # The generated token came back and was left out.
    assert server.lm is not None
    assert server.lm.choice("Answer:", 0, 1)["text"] != "Answer:"


def test_a_failure_cancels_the_remaining_batches(server: FakeServer) -> None:
    server.completions_default = lambda body: ("echo", no_logprobs)
    many = REQUESTS * 10
    with _lm(server, batch_size=1, concurrency=1) as lm, pytest.raises(PromptLogprobsError):
        lm.loglikelihood(many)
    assert len(server.requests) <= 2


# --------------------------------------------------------------------------- parsing


def _choice(tokens: list[str], values: list[float | None], offsets: list[int]) -> dict[str, Any]:
    return {"index": 0, "logprobs": {"tokens": tokens, "token_logprobs": values,
                                     "text_offset": offsets}}  # fmt: skip


def test_vllm_answer_shape() -> None:
    # As vLLM 0.32 answers (measured): first log-prob null, top_logprobs beside.
    choice = _choice(["Answer", ":", " C"], [None, -3.1, -1.8375], [0, 6, 7])
    choice["logprobs"]["top_logprobs"] = [None, {":": -3.1}, {" C": -1.8375}]
    choice["text"] = "Answer: C"
    assert continuation_logprob(choice, "Answer: C", 7) == -1.8375
    assert continuation_logprob(choice, "Answer: C", 6) == pytest.approx(-4.9375)


def test_a_straddling_token_belongs_to_the_continuation() -> None:
    choice = _choice(["Answer", ":A"], [None, -2.0], [0, 6])
    assert continuation_logprob(choice, "Answer:A", 7) == -2.0
    with pytest.raises(ValueError, match="gave no log-prob"):
        continuation_logprob(choice, "Answer:A", 3)  # "Answer" is the prompt's first token


def test_leading_bos_and_split_characters_are_placed_from_the_end() -> None:
    # A BOS the server added, counted in text_offset as vLLM does.
    choice = _choice(["<s>", "Answer", ":", " A"], [None, -3.0, -1.0, -2.5], [0, 3, 9, 10])
    assert continuation_logprob(choice, "Answer: A", 7) == -2.5
    # A character split over two byte tokens (U+FFFD each) shifts earlier offsets.
    choice = _choice(["caf", "\ufffd", "\ufffd", ":", " A"], [None, -1, -1, -1, -0.5],
                     [0, 3, 4, 5, 6])  # fmt: skip
    assert continuation_logprob(choice, "café: A", 5) == -0.5
    # ... but never inside the continuation.
    choice = _choice(["A", ":", "\ufffd", "\ufffd"], [None, -1, -1, -1], [0, 1, 2, 3])
    with pytest.raises(ValueError, match="cannot be placed"):
        continuation_logprob(choice, "A:é", 2)


def test_generated_token_is_dropped_with_max_tokens_one() -> None:
    choice = _choice(["Answer", ":", " A", " B"], [None, -1.0, -2.0, -0.1], [0, 6, 7, 9])
    assert continuation_logprob(choice, "Answer: A", 7, max_tokens=1) == -2.0
    with pytest.raises(ValueError, match="do not match"):
        continuation_logprob(choice, "Answer: A", 7, max_tokens=0)


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ({"index": 0, "text": "x"}, "no prompt log-probs"),
        (_choice([], [], []), "no prompt log-probs"),
        (_choice(["a", "b"], [None, None], [0, 1]), "no prompt log-probs"),
        (_choice(["a", "b"], [None, -1], [1, 0]), "decrease"),
        (_choice(["a", "b"], [None, -1], [0, 2]), "too few prompt log-probs"),
        (_choice(["ab", "b"], [None, -1], [0, 1]), "skip or overlap"),
        (_choice(["a", "c"], [None, -1], [0, 1]), "do not match the prompt"),
        (_choice(["a", "b"], [None, float("nan")], [0, 1]), "impossible log-prob: nan"),
        (_choice(["a", "b"], [None, float("inf")], [0, 1]), "impossible log-prob: inf"),
        (_choice(["a", "b"], [None, 0.5], [0, 1]), "impossible log-prob: 0.5"),
        (_choice(["a", "b"], [None, "x"], [0, 1]), "not a number"),
    ],
)
def test_malformed_logprobs(choice: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        continuation_logprob(choice, "ab", 1)


def test_model_spelling_and_settings(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="batch-size"):
        CompletionsLM("m", "http://127.0.0.1:9/v1", batch_size=0)
    with pytest.raises(ValueError, match="http"):
        CompletionsLM("m", "127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="--api-base"):
        run(RunConfig(model="openai-completions:m", tasks=("smoke",)), tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_old_config_without_server_fields_loads() -> None:
    old = {"model": "m", "tasks": ["smoke"], "shots": [0]}
    cfg = RunConfig.from_dict(old)
    assert cfg.server is None and cfg.engine == "hf"
    # A folder of a server run, as saved before the settings were grouped, reads back whole.
    old = {**old, "model": "openai-completions:m", "api_base": "http://h:1/v1", "retries": 2}
    cfg = RunConfig.from_dict(old)
    assert cfg.server is not None and (cfg.server.api_base, cfg.server.retries) == (
        "http://h:1/v1",
        2,
    )
    assert cfg.to_dict()["retries"] == 2 and cfg.engine == "server"
    assert "api_base" not in RunConfig.IDENTITY


# --------------------------------------------------------------------------- runs


def test_server_failure_mid_run_keeps_what_was_scored(
    tmp_path: Path, server: FakeServer, echo_lm: EchoLM
) -> None:
    cfg = RunConfig(
        model="openai-completions:tiny",
        tasks=("smoke",),
        engines=EngineOptions(server=ServerOptions(server.url)),
    )
    full = run(cfg, tmp_path / "full", progress=False)
    # 48 items = chunks of 32 and 16: 96 prompts in the first chunk.
    calls = {"prompts": 0}

    def flaky(body: dict[str, Any]) -> tuple[Any, ...]:
        calls["prompts"] += len(body["prompt"])
        return ("echo",) if calls["prompts"] <= 96 else ("status", 500, "GPU lost")

    server.completions_default = flaky

    def factory(ck: str | None) -> CompletionsLM:
        return _lm(server, retries=1, concurrency=1)

    with pytest.raises(ServerError, match="HTTP 500: GPU lost"):
        run(cfg, tmp_path / "cut", model=stand_in(cfg, factory), progress=False)
    assert len(saved_records(tmp_path / "cut")) == 32
    server.completions_default = lambda body: ("echo",)
    before = echo_lm.prompts
    again = run(cfg, tmp_path / "cut", model=stand_in(cfg, factory), progress=False)
    assert echo_lm.prompts - before == 16 * 3  # only what was missing
    recs = saved_records(tmp_path / "cut")
    assert len(recs) == len({_key(r) for r in recs}) == 48
    assert again.metrics[0]["accuracy"] == full.metrics[0]["accuracy"]


def test_cli_stops_with_one_line_when_the_server_has_no_prompt_logprobs(
    tmp_path: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from nlieval.cli import main

    server.completions_default = lambda body: ("echo", no_logprobs)
    out = tmp_path / "r"
    rc = main(["run", "--model", "openai-completions:tiny", "--api-base", server.url,
               "--task", "smoke", "--out", str(out), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith(f"nlieval: error: the server at {server.url}")
    assert "returned no prompt log-probs" in err[0] and "resume" not in err[0]
    assert not (out / RECORDS).exists() or not (out / RECORDS).read_text()
    assert len(server.requests) <= 8  # the first requests in flight, no retries


def _cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "nlieval.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_kill_9_then_resume_equals_uninterrupted(tmp_path: Path, server: FakeServer) -> None:
    server.hold = 0.05  # slow enough to be killed between two chunks
    args = ["run", "--model", "openai-completions:tiny", "--api-base", server.url,
            "--task", "smoke", "--shots", "0,3", "--no-progress", "--batch-size", "4",
            "--concurrency", "2", "--retries", "2"]  # fmt: skip
    ref = _cli(*args, "--out", str(tmp_path / "ref"), cwd=tmp_path)
    assert ref.wait(timeout=300) == 0, ref.stderr.read() if ref.stderr else ""
    out = tmp_path / "killed"
    proc = _cli(*args, "--out", str(out), cwd=tmp_path)
    deadline = time.time() + 120
    while time.time() < deadline:
        rec = out / RECORDS
        if rec.is_file() and rec.stat().st_size > 0 and proc.poll() is None:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_before = len(saved_records(out)) if (out / RECORDS).exists() else 0
    assert 0 < n_before < 96, "the run was not killed mid-way"
    again = _cli(*args, "--out", str(out), cwd=tmp_path)
    assert again.wait(timeout=300) == 0, again.stderr.read() if again.stderr else ""
    got, want = saved_records(out), saved_records(tmp_path / "ref")
    assert len(got) == len({_key(r) for r in got}) == 96
    by_key = {_key(r): r for r in want}
    for r in got:
        assert r.pred == by_key[_key(r)].pred
        assert r.loglik == by_key[_key(r)].loglik
    m_got = json.loads((out / "results.json").read_text())["metrics"]
    m_want = json.loads((tmp_path / "ref" / "results.json").read_text())["metrics"]
    assert [(m["k"], m["accuracy"], m["macro_f1"]) for m in m_got] == [
        (m["k"], m["accuracy"], m["macro_f1"]) for m in m_want
    ]
    saved = json.loads((out / "config.json").read_text())
    assert saved["api_base"] == server.url and saved["model"] == "openai-completions:tiny"
