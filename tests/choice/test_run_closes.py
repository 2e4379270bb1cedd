"""``nlieval run`` on a server closes the client it made (its connections and the thread
of its requests) where the run ends, finished or failed: the one rule of every run that
made backends (:meth:`nlieval.backends.ResolvedModel.close`; instruct and generate
follow it too, tests/sci/test_instruct_close.py)."""

from __future__ import annotations

import gc
import threading
import warnings
from pathlib import Path

import pytest

from nlieval.backends import openai
from nlieval.cli import main
from tests.helpers.fake_openai import FakeServer, clients_made


@pytest.mark.parametrize("fail", [False, True], ids=["finished", "failed"])
def test_run_closes_its_server_client(tmp_path: Path, server: FakeServer, fail: bool) -> None:
    if fail:
        server.completions_default = lambda body: ("status", 400, '{"error": "bad"}', {})
    before = {t.ident for t in threading.enumerate()}
    with clients_made() as made:
        argv = ["run", "--model", "m", "--api-base", server.url, "--task", "smoke"]
        argv += ["--limit", "2", "--top-logprobs", "0", "--out", str(tmp_path / "r")]
        code = main([*argv, "--no-progress", "--retries", "0"])
    assert (code != 0) == fail
    assert made, "the run made no server client"
    # Closed: its event loop is gone and no thread of its requests is left.
    assert all(c._loop is None and c._loop_thread is None for c in made)
    left = [t.name for t in threading.enumerate() if t.ident not in before]
    assert "openai-io" not in left, left


def test_a_closed_client_says_so_when_asked_again(server: FakeServer) -> None:
    # A backend kept past the run that closed it fails in one line, not deep in httpx.
    client = openai.OpenAIChat("m", server.url)
    assert client.generate([[{"role": "user", "content": "Hi"}]], max_new_tokens=4)
    client.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="was closed"):
            client.generate([[{"role": "user", "content": "Hi"}]], max_new_tokens=4)
        gc.collect()  # a request made before the refusal would be a coroutine never awaited
    assert not [w for w in caught if "never awaited" in str(w.message)]
