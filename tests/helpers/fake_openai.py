"""A fake OpenAI-compatible server for tests, scripted request by request.

Each POST to ``/v1/chat/completions`` takes the next action of :attr:`FakeServer.script`,
or, when the script is empty, the one :attr:`FakeServer.default` returns for the request
body. Actions (tuples):

``("ok", content)``                 200 with one choice whose message content is ``content``
``("status", code, body, headers)`` that HTTP status, body text and extra headers
``("raw", text)``                   200 with ``text`` as the body (not JSON, no choices, ...)
``("slow", seconds, content)``      wait, then answer like ``ok``; a client that leaves
                                    meanwhile is seen at once (counted in
                                    :attr:`FakeServer.abandoned`, nothing computed)
``("drop",)``                       close the connection without answering
``("die",)``                        close every connection and stop listening for good
``("trickle", seconds)``            send an answer's bytes one at a time, ``seconds`` apart
``("huge", n)``                     200 with a JSON body of ``n`` bytes (a long string),
                                    without a Content-Length
``("deep", depth)``                 200 with JSON nested ``depth`` arrays deep

Answers name the model asked for, or :attr:`FakeServer.model_name` when it is set (a
proxy that routes to another model).

``/v1/completions`` (log-likelihood scoring) takes the same script, with
:attr:`FakeServer.completions_default` when it is empty, and answers like vLLM with
``echo``: every prompt token with its text, ``text_offset`` and log-probability, computed
by the transformers model of :class:`EchoLM` (:attr:`FakeServer.lm`). Its own actions:

``("echo",)``                       200 with the prompt log-probs of every prompt
``("echo", change)``                the same body passed through ``change(body)`` first
                                    (drop log-probs, shift offsets, ...; see the helpers)
``("slow", seconds)``               wait, then answer like ``echo`` (a client that
                                    leaves meanwhile is counted in ``abandoned``)

Echo answers hold vLLM's ``top_logprobs`` (the prompt token and the top ``logprobs``
tokens of each position) and, when the request asks for ``return_token_ids``, each
prompt's ``prompt_token_ids``. With :attr:`FakeServer.raw_logits` set to a number, every
value is the model's logit plus that number instead of its log-prob (vLLM's
``--logprobs-mode raw_logits``).

``status``, ``raw``, ``drop`` and ``die`` work as for chat. A prompt of token ids (a list
of ints, or a list of such lists) is answered as vLLM answers ``max_tokens: 1,
logprobs: K``: the greedy next token and the K top log-probs of that position, named
``token_id:N`` when the request asks for ``return_tokens_as_token_ids`` (and
:attr:`FakeServer.token_ids` is True), else by their text; with ``logprob_token_ids`` (and
:attr:`FakeServer.logprob_token_ids` True) those tokens and the greedy one instead of the
top K. A ``logprobs`` above :attr:`FakeServer.max_logprobs` gets vLLM's HTTP 400 (not
checked when ``logprob_token_ids`` is honoured, as in vLLM 0.32). ``POST /tokenize``
answers like vLLM's (``{"count", "tokens", "max_model_len"}``) or acts as
:attr:`FakeServer.tokenize_default` says (``("ok",)`` or any chat action; not scripted);
those requests are kept apart in :attr:`FakeServer.tokenize_requests`. A ``max_tokens`` below
:attr:`FakeServer.min_max_tokens` gets HTTP 400 (servers that refuse 0); otherwise that
many greedy tokens follow the prompt, as a real server does.

With :attr:`FakeServer.not_json_rate` > 0, that share of the requests that reach the
default (seeded, so a test is repeatable) get HTTP 200 with a body that is not JSON: a
proxy's HTML error page or a JSON answer cut short, in turn (counted in
:attr:`FakeServer.not_json_sent`).

The server counts requests in flight (:attr:`max_in_flight`); ``hold`` keeps each request
that long before answering, so concurrent requests overlap.
"""

from __future__ import annotations

import json
import random
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Action = tuple[Any, ...]


def completion(content: str, model: str | None = None) -> dict[str, Any]:
    """An OpenAI chat completion body with one answer (naming ``model`` when given)."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        **({"model": model} if model is not None else {}),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


class EchoLM:
    """What a server answers to ``echo: true, logprobs: 1``, from a transformers causal
    LM folder: the tokenizer's offsets give ``text_offset``, one unpadded forward pass per
    prompt the log-probs (the first token has none)."""

    def __init__(self, folder: str | Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.lock = threading.Lock()  # one forward pass at a time (the CPU is shared)
        self.prompts = 0

    def _scores(self, ids: list[int], raw: float | None) -> Any:
        """Log-probs of every position, or (``raw`` not None) logits plus ``raw``."""
        import torch

        logits = self.model(torch.tensor([ids])).logits[0].float()
        return torch.log_softmax(logits, -1) if raw is None else logits + raw

    def choice(
        self, prompt: str, index: int, max_tokens: int = 0, k: int = 1, raw: float | None = None
    ) -> dict[str, Any]:
        import torch

        enc = self.tok(prompt, return_offsets_mapping=True)
        ids = list(enc["input_ids"])
        prompt_ids = list(ids)
        spans = [tuple(x) for x in enc["offset_mapping"]]
        tokens = [prompt[s:e] for s, e in spans]
        offsets = [s for s, _ in spans]
        with self.lock, torch.inference_mode():
            self.prompts += 1
            lp = self._scores(ids, raw)
            values: list[float | None] = [None]
            values += [float(lp[i - 1, ids[i]]) for i in range(1, len(ids))]
            # vLLM's top log-probs of a prompt position: its own token and the top k.
            top: list[dict[str, float] | None] = [None]
            best_v, best_t = lp[:-1].topk(k, dim=-1)
            for i in range(1, len(ids)):
                pairs = zip(best_t[i - 1].tolist(), best_v[i - 1].tolist(), strict=True)
                entry = {str(self.tok.decode([t])): v for t, v in pairs}
                entry[tokens[i]] = float(lp[i - 1, ids[i]])
                top.append(entry)
            text = prompt
            for _ in range(max_tokens):  # greedy tokens after the prompt (max_tokens > 0)
                nxt = int(lp[-1].argmax())
                piece = str(self.tok.decode([nxt]))
                tokens.append(piece)
                offsets.append(len(text))
                values.append(float(lp[-1, nxt]))
                top.append({piece: float(lp[-1, nxt])})
                text += piece
                ids.append(nxt)
                lp = self._scores(ids, raw)
        return {
            "index": index,
            "text": text,
            "prompt_token_ids": prompt_ids,
            "logprobs": {
                "tokens": tokens,
                "token_logprobs": values,
                "text_offset": offsets,
                "top_logprobs": top,
            },
            "finish_reason": "length",
        }

    def next_token(
        self, ids: list[int], index: int, k: int, as_ids: bool, wanted: list[int] | None = None
    ) -> dict[str, Any]:
        """A choice for a prompt of token ids, ``max_tokens: 1``: the greedy next token and
        the ``k`` top log-probs at that position (no echo); with ``wanted``, the log-probs
        of those tokens and of the greedy one instead (vLLM's ``logprob_token_ids``)."""
        import torch

        with self.lock, torch.inference_mode():
            self.prompts += 1
            lp = torch.log_softmax(self.model(torch.tensor([ids])).logits[0, -1].float(), -1)
        values, top = lp.topk(k)
        if wanted is not None:
            top = torch.tensor([int(top[0]), *(t for t in wanted if t != int(top[0]))])
            values = lp[top]

        def name(t: int) -> str:
            return f"token_id:{t}" if as_ids else str(self.tok.decode([t]))

        nxt = int(top[0])
        return {
            "index": index,
            "text": str(self.tok.decode([nxt])),
            "logprobs": {
                "tokens": [name(nxt)],
                "token_logprobs": [float(values[0])],
                "text_offset": [0],
                "top_logprobs": [
                    {name(int(t)): float(v) for t, v in zip(top, values, strict=True)}
                ],
            },
            "finish_reason": "length",
        }

    def tokenize(self, text: str) -> list[int]:
        return list(self.tok(text)["input_ids"])

    def answer(
        self,
        body: dict[str, Any],
        token_ids: bool = True,
        logprob_token_ids: bool = True,
        raw: float | None = None,
    ) -> dict[str, Any]:
        """The whole ``/v1/completions`` body for a request (a prompt or a list); ``raw``:
        logits plus ``raw`` in place of the echoed log-probs."""
        prompt = body["prompt"]
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
            prompt = [prompt]  # one prompt of token ids
        prompts = prompt if isinstance(prompt, list) else [prompt]
        n = int(body.get("max_tokens", 16))
        as_ids = token_ids and bool(body.get("return_tokens_as_token_ids"))
        wanted = body.get("logprob_token_ids") if logprob_token_ids else None
        k = int(body.get("logprobs") or 1)
        choices = [
            self.next_token(p, i, k, as_ids, wanted)
            if isinstance(p, list)
            else self.choice(p, i, n, k, raw)
            for i, p in enumerate(prompts)
        ]
        if not body.get("return_token_ids"):
            for c in choices:
                c.pop("prompt_token_ids", None)
        return {
            "id": "cmpl-fake",
            "object": "text_completion",
            "model": body.get("model"),
            "choices": choices,
        }


def no_logprobs(body: dict[str, Any]) -> dict[str, Any]:
    """A server that ignores ``echo``/``logprobs`` (as llama.cpp's llama-server)."""
    for c in body["choices"]:
        c["logprobs"] = None
    return body


def shift_offsets(body: dict[str, Any]) -> dict[str, Any]:
    """Offsets one character off from the second token on (a detokenizer bug)."""
    for c in body["choices"]:
        off = c["logprobs"]["text_offset"]
        c["logprobs"]["text_offset"] = off[:1] + [o + 1 for o in off[1:]]
    return body


def generated_only(body: dict[str, Any]) -> dict[str, Any]:
    """Log-probs of the last token only (no echo of the prompt's)."""
    for c in body["choices"]:
        lp = c["logprobs"]
        c["logprobs"] = {k: v[-1:] for k, v in lp.items()}
    return body


def same_token_ids(body: dict[str, Any]) -> dict[str, Any]:
    """A tokenizer that maps every option to one unknown token (the same id for each),
    while the tokens' texts are read off the prompt by offsets (as a server answering
    from a fast tokenizer's offset mapping does)."""
    for c in body["choices"]:
        ids = c.get("prompt_token_ids")
        if ids:
            c["prompt_token_ids"] = ids[:-1] + [0]
    return body


def planted_logprobs(value: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A body change: every log-prob the answer holds (echoed or top) becomes ``value``."""

    def change(body: dict[str, Any]) -> dict[str, Any]:
        for choice in body["choices"]:
            lp = choice["logprobs"]
            lp["token_logprobs"] = [None if v is None else value for v in lp["token_logprobs"]]
            lp["top_logprobs"] = [
                None if t is None else dict.fromkeys(t, value) for t in lp["top_logprobs"]
            ]
        return body

    return change


def drop_last_choice(body: dict[str, Any]) -> dict[str, Any]:
    """One choice fewer than prompts."""
    body["choices"] = body["choices"][:-1]
    return body


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up (a request cancelled, a timeout) is normal here: not a
    traceback on the test process's stderr, which the reliability benchmark reads."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class FakeServer:
    """The server; use :func:`running` to get a started one."""

    def __init__(self, lm: EchoLM | None = None) -> None:
        self.script: deque[Action] = deque()
        self.default: Callable[[dict[str, Any]], Action] = lambda body: ("ok", "hello")
        self.completions_default: Callable[[dict[str, Any]], Action] = lambda body: ("echo",)
        self.tokenize_default: Callable[[dict[str, Any]], Action] = lambda body: ("ok",)
        self.tokenize_requests: list[dict[str, Any]] = []
        self.lm = lm
        self.min_max_tokens = 0
        self.max_logprobs = 20
        self.token_ids = True
        self.logprob_token_ids = True
        self.model_name: str | None = None
        self.raw_logits: float | None = None
        self.abandoned = 0
        self.paths: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.hold = 0.0
        self.not_json_rate = 0.0
        self.not_json_sent = 0
        self._rng = random.Random(0)
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._dead = False
        self.httpd = _QuietServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.fake = self  # type: ignore[attr-defined]
        # A short poll interval: kill() (shutdown) waits for at most one poll.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> None:
        self._thread.start()

    def next_action(
        self, body: dict[str, Any], headers: dict[str, str], path: str = "/v1/chat/completions"
    ) -> Action:
        with self.lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.paths.append(path)
            if self.script:
                return self.script.popleft()
            if self.not_json_rate and self._rng.random() < self.not_json_rate:
                self.not_json_sent += 1
                if self.not_json_sent % 2:
                    return ("raw", "<html><body><h1>502 Bad Gateway</h1></body></html>")
                return ("raw", json.dumps(completion("cut short"))[:25])
        if _is_completions(path):
            return self.completions_default(body)
        return self.default(body)

    def kill(self) -> None:
        """Stop for good: no new connections, and open ones are cut."""
        with self.lock:
            if self._dead:
                return
            self._dead = True
            conns = list(self._conns)
        self.httpd.shutdown()
        self.httpd.server_close()
        for conn in conns:
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers: a drop hits a pooled socket

    def setup(self) -> None:
        super().setup()
        with self.fake.lock:
            self.fake._conns.add(self.connection)

    def finish(self) -> None:
        with suppress(OSError):  # the client may be gone
            super().finish()
        with self.fake.lock:
            self.fake._conns.discard(self.connection)

    @property
    def fake(self) -> FakeServer:
        return self.server.fake  # type: ignore[attr-defined, no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # keep test output clean

    def do_POST(self) -> None:  # noqa: N802
        fake = self.fake
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path.rstrip("/") == "/tokenize":
            with fake.lock:
                fake.tokenize_requests.append(body)
            action = fake.tokenize_default(body)
            if action[0] != "ok":
                self._act(action)
            elif fake.lm is None:
                raise ValueError("/tokenize needs FakeServer(lm=EchoLM(folder))")
            else:
                tokens = fake.lm.tokenize(body["prompt"])
                answer = {"count": len(tokens), "tokens": tokens, "max_model_len": 2048}
                self._send(200, json.dumps(answer))
            return
        action = fake.next_action(body, headers, self.path)
        with fake.lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            if fake.hold:
                time.sleep(fake.hold)
            if _is_completions(self.path):
                self._act_completions(action, body)
            else:
                self._act(action, body)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True  # the client left (slow answers)
        finally:
            with fake.lock:
                fake.in_flight -= 1

    def _model(self, body: dict[str, Any]) -> Any:
        return self.fake.model_name if self.fake.model_name is not None else body.get("model")

    def _wait(self, seconds: float) -> bool:
        """Wait ``seconds``, or until the client closes the connection (then False, the
        request counted in ``abandoned``): a server aborts what nobody waits for."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([self.connection], [], [], min(left, 0.02))
            if ready:
                try:
                    gone = not self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    gone = True
                if gone:
                    with self.fake.lock:
                        self.fake.abandoned += 1
                    self.close_connection = True
                    return False
        return True

    def _act(self, action: Action, body: dict[str, Any] | None = None) -> None:
        kind = action[0]
        model = self._model(body or {})
        if kind == "drop":
            self._drop()
        elif kind == "die":
            threading.Thread(target=self.fake.kill, daemon=True).start()
            self._drop()
        elif kind == "ok":
            self._send(200, json.dumps(completion(action[1], model)))
        elif kind == "slow":
            if self._wait(action[1]):
                self._send(200, json.dumps(completion(action[2], model)))
        elif kind == "trickle":
            raw = json.dumps(completion("hello", model)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            for i in range(len(raw)):
                self.wfile.write(raw[i : i + 1])
                self.wfile.flush()
                if not self._wait(action[1]):
                    return
        elif kind == "huge":
            # Sent in pieces, as a real body: a client that stops reading ends it.
            n = int(action[1])
            head, tail = b'{"choices": [], "padding": "', b'"}'
            # No Content-Length: the body runs until the connection closes, so only the
            # bytes read can tell its size.
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(head)
            left = n - len(head) - len(tail)
            piece = b"x" * 65536
            while left > 0:
                self.wfile.write(piece[: min(left, len(piece))])
                left -= len(piece)
            self.wfile.write(tail)
            self.wfile.flush()
        elif kind == "deep":
            self._send(200, "[" * int(action[1]) + "]" * int(action[1]))
        elif kind == "raw":
            self._send(200, action[1])
        elif kind == "status":
            self._send(action[1], action[2], action[3] if len(action) > 3 else {})
        else:
            raise ValueError(f"unknown action {action!r}")

    def _act_completions(self, action: Action, body: dict[str, Any]) -> None:
        kind = action[0]
        if kind in ("echo", "slow"):
            fake = self.fake
            if kind == "slow":
                if not self._wait(action[1]):
                    return  # the client left: nothing to compute
                if fake._dead:  # no model run in a thread left behind by a finished test
                    self._drop()
                    return
            if int(body.get("max_tokens", 16)) < fake.min_max_tokens:
                error = {
                    "object": "error",
                    "message": f"max_tokens must be at least {fake.min_max_tokens}, "
                    f"got {body.get('max_tokens')}.",
                    "type": "BadRequestError",
                    "code": 400,
                }
                self._send(400, json.dumps(error))
                return
            by_id = fake.logprob_token_ids and body.get("logprob_token_ids")
            if int(body.get("logprobs") or 0) > fake.max_logprobs and not by_id:
                error = {
                    "error": {
                        "message": f"Requested sample logprobs of {body['logprobs']}, which is "
                        f"greater than max allowed: {fake.max_logprobs}",
                        "type": "BadRequestError",
                        "param": "logprobs",
                        "code": 400,
                    }
                }
                self._send(400, json.dumps(error))
                return
            if fake.lm is None:
                raise ValueError("/v1/completions needs FakeServer(lm=EchoLM(folder))")
            answer = fake.lm.answer(body, fake.token_ids, fake.logprob_token_ids, fake.raw_logits)
            if fake.model_name is not None:
                answer["model"] = fake.model_name
            if kind == "echo" and len(action) > 1:
                answer = action[1](answer)
            self._send(200, answer if isinstance(answer, str) else json.dumps(answer))
        else:
            self._act(action, body)

    def _drop(self) -> None:
        self.close_connection = True
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        raw = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)
        self.wfile.flush()


def _is_completions(path: str) -> bool:
    return path.rstrip("/").endswith("/completions") and "/chat/" not in path


@contextmanager
def running(lm: EchoLM | None = None) -> Iterator[FakeServer]:
    """A started fake server (answering ``/v1/completions`` with ``lm``), killed on exit."""
    server = FakeServer(lm)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@contextmanager
def clients_made() -> Iterator[list[Any]]:
    """Every server client (:class:`nlieval.backends.openai.ServerClient`, chat or
    completions) made inside the block, in the list it yields: for the tests that a run
    closes what it made."""
    import pytest

    from nlieval.backends import openai

    made: list[Any] = []
    real_init = openai.ServerClient.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        made.append(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(openai.ServerClient, "__init__", init)
        yield made
