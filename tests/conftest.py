"""Shared fixtures: tiny random-weight causal LMs with a real (trained) BPE tokenizer,
the fake server over one of them, the real data folder, one torch thread for a module of
tiny models.

The models are built by ``helpers/tiny_models.py``; the root ``conftest.py`` keeps model
conversions out of the user's cache (``NLIEVAL_CACHE``) for these tests and the doctests.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_openai import EchoLM, FakeServer, running

# The builders live in helpers (the root conftest's doctest model uses them too).
from tests.helpers.tiny_models import tiny_model as _tiny_model


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama with a BPE tokenizer trained on a few NLI-like lines."""
    return _tiny_model(tmp_path_factory.mktemp("tiny-llama"), "llama")


@pytest.fixture(scope="session")
def tiny_gemma(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Gemma 3 (sliding-window attention) with the same tokenizer."""
    return _tiny_model(tmp_path_factory.mktemp("tiny-gemma"), "gemma")


@pytest.fixture(scope="session")
def echo_lm(tiny_llama: Path) -> EchoLM:
    """The tiny Llama behind the fake server's ``/v1/completions`` and ``/tokenize``
    (one per session: the two completions test files share it)."""
    return EchoLM(tiny_llama)


@pytest.fixture
def server_settings() -> dict[str, Any]:
    """What ``server`` sets on its fake server before the test: ``FakeServer`` attributes
    and their values (``default``, ``max_logprobs``, ``hold``...), and ``"lm"``: whether
    ``/v1/completions`` and ``/tokenize`` answer with ``echo_lm`` (default ``True``; a
    module of chat requests only passes ``False`` and loads no model). A module overrides
    this fixture; it runs per test, so a stateful ``default`` is the test's own."""
    return {}


@pytest.fixture
def server(request: pytest.FixtureRequest, server_settings: dict[str, Any]) -> Iterator[FakeServer]:
    """A fresh fake OpenAI-compatible server per test (``tests/helpers/fake_openai.py``; its
    faults and counters are the test's own), set as ``server_settings`` says: the one
    fixture of the fake server for every test module."""
    settings = dict(server_settings)
    lm = request.getfixturevalue("echo_lm") if settings.pop("lm", True) else None
    with running(lm) as s:
        for name, value in settings.items():
            # A misspelt setting would otherwise be a new attribute nobody reads.
            if not hasattr(s, name):
                raise AttributeError(f"server_settings: FakeServer has no {name!r}")
            setattr(s, name, value)
        yield s


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real benchmark files (``NLIEVAL_DATA_DIR``); tests using it skip without it."""
    value = os.environ.get("NLIEVAL_DATA_DIR")
    if not value or not Path(value).is_dir():
        pytest.skip("NLIEVAL_DATA_DIR is not set")
    return Path(value)


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """torch on one thread for the module's tests, restored after them: the matrices of
    the tiny models are so small that one thread is fastest, the more so on a busy
    machine. A module of tiny-model tests takes it with
    ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def fresh_logging() -> Iterator[None]:
    """No root log handlers during the test: ``main()`` sets logging up once, onto the
    stderr of the test that first calls it, and a later test's warnings would go to that
    closed stream (a "Logging error" trace). Not for tests that use ``caplog``."""
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = []
    yield
    root.handlers = saved
