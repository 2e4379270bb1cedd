"""A cancelled request never costs the client a turn. A request is cancelled when its
caller stops (a failure elsewhere, the next-token path switched off) and when it runs past
--timeout; with httpx's httpcore 1.0.9, a cancellation that lands just after the pool
handed the request a new connection leaked that pool slot for good, and with one request
in flight (--concurrency 1) every later request then waited until it timed out. This was
seen in CI: a test's echo requests all timed out after the next-token request in flight
was cancelled."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from nlieval.backends.openai import RequestTimeout, ServerClient, ServerError


class _Answer(BaseHTTPRequestHandler):
    # HTTP/1.0 (the default): the connection closes after each answer, so every request
    # makes a new connection, which is where the cancellation did its damage.
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"ok": 1}'
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up on this one
            pass


@pytest.fixture
def url() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_requests_cancelled_at_any_moment_leave_the_client_working(url: str) -> None:
    client = ServerClient("m", url, "/completions", timeout=30.0, retries=0, concurrency=1)
    rng = random.Random(0)
    timed_out = 0

    def parse(resp: Any, where: str) -> Any:
        return resp.json()

    # Timeouts of 0-3 ms cancel requests at every stage: waiting for a turn, connecting,
    # sending, reading. Before the fix the client was stuck within ~50 of these here.
    for _ in range(300):
        client.timeout = rng.random() * 0.003
        try:
            client.request({"n": 1}, parse)
        except RequestTimeout:
            timed_out += 1
        except ServerError:
            pass
        client.timeout = 30.0
        # A stuck client waits the whole 30 s and raises here.
        assert client.request({"n": 2}, parse) == {"ok": 1}
    assert timed_out > 0  # the cancellations did happen
