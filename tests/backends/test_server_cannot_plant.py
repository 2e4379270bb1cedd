"""A server cannot plant a score (issue 23, class 2): a log-probability that is infinite
or above 0, or a tokenizer that gives different options the same tokens, stops the run
with one line after the retries, and what was scored before stays in the folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import EngineOptions, stand_in
from nlieval.backends.completions import CompletionsLM, checked_logprob
from nlieval.backends.openai import ServerError, ServerOptions
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.runs import RECORDS
from tests.helpers.fake_openai import FakeServer, planted_logprobs
from tests.helpers.records import saved_records


@pytest.mark.parametrize("value", [float("inf"), 2.5, float("-inf"), float("nan")])
@pytest.mark.parametrize("top", [0, 20])
def test_an_impossible_logprob_stops_the_run_and_keeps_what_was_scored(
    tmp_path: Path, server: FakeServer, value: float, top: int
) -> None:
    calls = {"prompts": 0}
    # 48 items = chunks of 32 and 16: the first chunk's answers are sound.
    good = 96 if top == 0 else 32  # echo: 3 prompts an item; per item: one

    def answer(body: dict[str, Any]) -> tuple[Any, ...]:
        calls["prompts"] += len(body["prompt"])
        return ("echo",) if calls["prompts"] <= good else ("echo", planted_logprobs(value))

    server.completions_default = answer
    cfg = RunConfig(
        "openai-completions:tiny",
        ("smoke",),
        engines=EngineOptions(server=ServerOptions(server.url)),
        top_logprobs=top,
    )

    def factory(ck: str | None) -> CompletionsLM:
        return CompletionsLM(
            "tiny", server.url, retries=1, backoff=0.01, sleep=lambda s: None, top_logprobs=top
        )

    with pytest.raises(ServerError, match="impossible log-prob|not a number") as info:
        run(cfg, tmp_path / "r", model=stand_in(cfg, factory), progress=False)
    assert "gave up after 2 tries" in str(info.value)  # retried once, then stopped
    records = saved_records(tmp_path / "r")
    assert len(records) == 32
    assert all(all(v <= 0 and v == v for v in r.loglik) for r in records)


def test_the_cli_says_it_in_one_line(
    tmp_path: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.completions_default = lambda body: ("echo", planted_logprobs(2.5))
    out = tmp_path / "r"
    argv = ["run", "--model", "tiny", "--api-base", server.url, "--task", "smoke"]
    argv += ["--top-logprobs", "0", "--retries", "0", "--out", str(out), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "impossible log-prob: 2.5" in err[0]
    assert not (out / RECORDS).exists() or not (out / RECORDS).read_text()


def test_options_with_the_same_tokens_are_refused(tmp_path: Path, server: FakeServer) -> None:
    # A /tokenize that gives every text the same token ids: which option is which?
    server.tokenize_default = lambda body: (
        "raw",
        json.dumps({"count": 3, "tokens": [5, 6, 7], "max_model_len": 2048}),
    )
    cfg = RunConfig(
        "openai-completions:tiny",
        ("smoke",),
        engines=EngineOptions(server=ServerOptions(server.url)),
    )
    with pytest.raises(ServerError, match="into the same tokens"):
        run(cfg, tmp_path / "r", progress=False)
    assert not (tmp_path / "r" / RECORDS).exists()


@pytest.mark.parametrize("value", [-0.5, 0.0, 5e-7, -1e30])
def test_possible_logprobs_pass(value: float) -> None:
    assert checked_logprob(value) == value
