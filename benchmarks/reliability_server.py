"""Hostile model servers for ``run``, ``instruct`` and ``generate``: a log-prob that is
infinite or above 0, options the server turns into one token sequence, an answer from
another model, a body that trickles, one of 50 MB, JSON nested 10^5 deep, raw logits, a
prompt slower than --timeout, and --timeout values that are no number of seconds.

One fake vLLM (``tests/helpers/fake_openai.py`` over the tiny Llama of ``reliability.py``) is
started by the first case that needs it; each case sets how it misbehaves.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reliability_kit import Case, sci_task

_SERVER: list[Any] = []


def _server(model: str, **how: Any) -> str:
    """The fake server's URL, made to behave as ``how`` says (FakeServer attributes)."""
    from tests.helpers.fake_openai import EchoLM, FakeServer

    if not _SERVER:
        server = FakeServer(EchoLM(model))
        server.start()
        _SERVER.append(server)
    server = _SERVER[0]
    server.script.clear()
    server.default = lambda body: ("ok", "Answer: reasoning")
    server.completions_default = lambda body: ("echo",)
    server.tokenize_default = lambda body: ("ok",)
    server.model_name = None
    server.raw_logits = None
    for key, value in how.items():
        setattr(server, key, value)
    return str(server.url)


def cases(model: str, bert: str) -> list[Case]:
    """The hostile-server cases (``bert`` is not used)."""

    def case(command: str, args: Callable[[Path], list[str]]) -> Callable[..., Case]:
        # One builder per command: its own arguments, then the server's address, no
        # retries (a bad answer is final), a folder of its own and the case's flags.
        def make(name: str, *extra: str, **how: Any) -> Case:
            def argv(d: Path) -> list[str]:
                out = d / f"srv_{command}_{name.replace(' ', '_')}"
                return [command, *args(d), "--api-base", _server(model, **how),
                        "--retries", "0", "--out", str(out), "--no-progress", *extra]  # fmt: skip

            return Case(command, f"server: {name}", argv)

        return make

    run = case("run", lambda d: ["--model", "tiny", "--task", "smoke", "--limit", "6"])
    instruct = case(
        "instruct",
        lambda d: ["--task", sci_task(d, "srv_sci", 8), "--model", "chat-model", "--shots", "0"],
    )
    generate = case(
        "generate", lambda d: ["--task", "smoke", "--model", "chat-model", "--examples", "0"]
    )

    def always(action: tuple[Any, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
        return lambda body: action

    same_tokens = json.dumps({"count": 3, "tokens": [5, 6, 7], "max_model_len": 2048})
    from tests.helpers.fake_openai import planted_logprobs, same_token_ids

    return [
        # ------------------------------------------------------------------- run
        run("+Infinity log-prob (echo)", "--top-logprobs", "0",
            completions_default=always(("echo", planted_logprobs(float("inf"))))),
        run("log-prob +2.5 (one request per item)",
            completions_default=always(("echo", planted_logprobs(2.5)))),
        run("-Infinity for every option", "--top-logprobs", "0",
            completions_default=always(("echo", planted_logprobs(float("-inf"))))),
        run("same token ids on the echo path", "--top-logprobs", "0",
            completions_default=always(("echo", same_token_ids))),
        run("/tokenize gives every option the same tokens",
            tokenize_default=always(("raw", same_tokens))),
        run("answers as another model", model_name="llama-3-70b"),
        run("body trickles a byte at a time", "--timeout", "2",
            completions_default=always(("trickle", 0.1))),
        run("50 MB body for a small request", completions_default=always(("huge", 50_000_000))),
        run("JSON nested 100000 deep", completions_default=always(("deep", 100_000))),
        run("--timeout inf", "--timeout", "inf"),
        run("raw logits below 0 (echo)", "--top-logprobs", "0", raw_logits=-0.5),
        run("raw logits above 0 (echo)", "--top-logprobs", "0", raw_logits=1.0),
        run("one prompt slower than --timeout", "--timeout", "1", "--top-logprobs", "0",
            completions_default=always(("slow", 3.0))),
        # ------------------------------------------------------------------- instruct
        instruct("answers as another model", model_name="gpt-4o"),
        instruct("body trickles a byte at a time", "--timeout", "2",
                 default=always(("trickle", 0.1))),
        instruct("50 MB body for a small request", default=always(("huge", 50_000_000))),
        instruct("JSON nested 100000 deep", default=always(("deep", 100_000))),
        instruct("--timeout inf", "--timeout", "inf"),
        # ------------------------------------------------------------------- generate
        generate("answers as another model", model_name="other-model"),
        generate("body trickles a byte at a time", "--timeout", "2",
                 default=always(("trickle", 0.1))),
        generate("JSON nested 100000 deep", default=always(("deep", 100_000))),
        generate("--timeout nan", "--timeout", "nan"),
    ]  # fmt: skip
