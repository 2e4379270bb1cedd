"""A fake OpenAI-compatible chat server for tests, scripted request by request.

Each POST to ``/v1/chat/completions`` takes the next action of :attr:`FakeServer.script`,
or, when the script is empty, the one :attr:`FakeServer.default` returns for the request
body. Actions (tuples):

``("ok", content)``                 200 with one choice whose message content is ``content``
``("status", code, body, headers)`` that HTTP status, body text and extra headers
``("raw", text)``                   200 with ``text`` as the body (not JSON, no choices, ...)
``("slow", seconds, content)``      wait, then answer like ``ok`` (the client has left)
``("drop",)``                       close the connection without answering
``("die",)``                        close every connection and stop listening for good

The server counts requests in flight (:attr:`max_in_flight`); ``hold`` keeps each request
that long before answering, so concurrent requests overlap.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Action = tuple[Any, ...]


def completion(content: str) -> dict[str, Any]:
    """An OpenAI chat completion body with one answer."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


class FakeServer:
    """The server; use :func:`running` to get a started one."""

    def __init__(self) -> None:
        self.script: deque[Action] = deque()
        self.default: Callable[[dict[str, Any]], Action] = lambda body: ("ok", "hello")
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.hold = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._dead = False
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
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

    def next_action(self, body: dict[str, Any], headers: dict[str, str]) -> Action:
        with self.lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self.script:
                return self.script.popleft()
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
        action = fake.next_action(body, {k.lower(): v for k, v in self.headers.items()})
        with fake.lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            if fake.hold:
                time.sleep(fake.hold)
            self._act(action)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True  # the client left (slow answers)
        finally:
            with fake.lock:
                fake.in_flight -= 1

    def _act(self, action: Action) -> None:
        kind = action[0]
        if kind == "drop":
            self._drop()
        elif kind == "die":
            threading.Thread(target=self.fake.kill, daemon=True).start()
            self._drop()
        elif kind == "ok":
            self._send(200, json.dumps(completion(action[1])))
        elif kind == "slow":
            time.sleep(action[1])
            self._send(200, json.dumps(completion(action[2])))
        elif kind == "raw":
            self._send(200, action[1])
        elif kind == "status":
            self._send(action[1], action[2], action[3] if len(action) > 3 else {})
        else:
            raise ValueError(f"unknown action {action!r}")

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


@contextmanager
def running() -> Iterator[FakeServer]:
    """A started fake server, killed on exit."""
    server = FakeServer()
    server.start()
    try:
        yield server
    finally:
        server.kill()
