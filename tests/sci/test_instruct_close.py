"""``nlieval instruct`` closes the server client it made (its connections and the thread
of its requests) where the run ends, whether it finished or a request failed for good,
as ``nlieval generate`` does."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import main
from tests.helpers.fake_openai import clients_made, running
from tests.sci.test_instruct_server_faults import _answer, _argv, _task


def _threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None}


@pytest.mark.parametrize("fail", [False, True], ids=["finished", "failed"])
def test_instruct_closes_its_server_client(tmp_path: Path, fail: bool) -> None:
    yaml, out = _task(tmp_path, 8), tmp_path / "run"

    def answer(body: dict[str, Any]) -> tuple[Any, ...]:
        if fail and "Premise 3." in body["messages"][-1]["content"]:
            return ("status", 400, '{"error": "bad request"}', {})
        return _answer(body)

    with clients_made() as made, running() as server:
        server.default = answer
        before = _threads()
        code = main(_argv(yaml, out, server.url, "--retries", "0"))
        assert code == (2 if fail else 0)
        assert made, "the run made no server client"
        # Closed: its event loop is gone and no thread of its requests is left.
        assert all(c._loop is None for c in made), [(c._loop, c._loop_thread) for c in made]
        assert all(c._loop_thread is None for c in made)
        left = [t for t in threading.enumerate() if t.ident not in before]
        assert not [t.name for t in left if t.name == "openai-io"]


def test_run_instruct_closes_the_client_it_made(tmp_path: Path) -> None:
    from nlieval.backends import EngineOptions, ServerOptions
    from nlieval.sci import InstructConfig, run_instruct

    yaml, out = _task(tmp_path, 8), tmp_path / "run"
    with clients_made() as made, running() as server:
        server.default = _answer
        config = InstructConfig(
            "fake/chat",
            tasks=(str(yaml),),
            shots=(0,),
            engines=EngineOptions(server=ServerOptions(server.url)),
        )
        run_instruct(config, out, progress=False)
        assert made and all(c._loop is None and c._loop_thread is None for c in made)
