"""Names the docstring examples of ``src`` may use without defining them, and the cache
isolation every test and doctest runs under.

``python -m pytest --doctest-modules src tests`` runs the package's ``>>>`` examples.
Besides its module's own names, an example may use:

``tiny_lm``
    str, the folder of a tiny random-weight causal LM (a 2-layer Llama of hidden size 32)
    with a BPE tokenizer and a chat template (``tests/helpers/tiny_models.py``); built once per
    session.
``run_dir``
    str, a fresh empty folder, one per docstring.
``tiny_encoder``
    str, the folder of a tiny random BERT (2 layers, hidden size 8) whose vocabulary
    holds only its special tokens, so every word is ``[UNK]`` to it; built once per
    session. Examples must not write into it.
``fake_server``
    str, the base URL ``http://127.0.0.1:PORT/v1`` of the fake OpenAI-compatible server
    of ``tests/helpers/fake_openai.py`` (it answers chat requests ``"hello"``), started once per
    session and stopped at its end. Its ``/v1/completions`` and ``/tokenize`` answer with
    the model of ``tiny_lm``.

Each is made only for a docstring whose examples name it, so the doctests of modules that
use none of them stay fast (no model is built, no server started).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Tests never touch the Hugging Face hub: a hub id in a test (a spelling such as "org/m")
# fails at once instead of retrying the network for seconds and logging each retry.
os.environ["HF_HUB_OFFLINE"] = "1"

# The tests' helpers are the package tests.helpers: this folder, the rootdir, is on sys.path
# (pytest puts a rootdir conftest's folder there), so the doctests of src reach them too.
from tests.helpers.fake_openai import EchoLM, running
from tests.helpers.tiny_models import tiny_model

# In CI (NLIEVAL_STRICT=1, set by .ci/run) an unlisted skip is a failure.
pytest_plugins = ["tests.helpers.skips"]

#: The names, each made by the fixture ``_doctest_<name>``.
DOCTEST_NAMES = ("tiny_lm", "tiny_encoder", "run_dir", "fake_server")
_NAMED = {name: re.compile(rf"\b{name}\b") for name in DOCTEST_NAMES}


@pytest.fixture(scope="session")
def _doctest_tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tiny_model(tmp_path_factory.mktemp("doctest-tiny-lm"), "llama"))


@pytest.fixture(scope="session")
def _doctest_tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    from transformers import BertConfig, BertModel, BertTokenizer

    enc = tmp_path_factory.mktemp("doctest-tiny-encoder")
    (enc / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n")
    BertTokenizer(vocab=str(enc / "vocab.txt")).save_pretrained(enc)
    config = BertConfig(
        vocab_size=4,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
    )
    BertModel(config).save_pretrained(enc)
    return str(enc)


@pytest.fixture
def _doctest_run_dir(tmp_path: Path) -> str:
    return str(tmp_path)


@pytest.fixture(scope="session")
def _doctest_fake_server(_doctest_tiny_lm: str) -> Iterator[str]:
    # The model is loaded now, not on the first completions request: building it can take
    # longer than a client's timeout.
    with running(EchoLM(_doctest_tiny_lm)) as server:
        yield server.url


@pytest.fixture(autouse=True)
def _doctest_names(request: pytest.FixtureRequest, doctest_namespace: dict[str, Any]) -> None:
    """Put the names a doctest's examples use into its namespace (nothing for a test)."""
    dtest = getattr(request.node, "dtest", None)  # a DoctestItem's doctest.DocTest
    if dtest is None:
        return
    source = "".join(example.source for example in dtest.examples)
    for name, pattern in _NAMED.items():
        if pattern.search(source):
            doctest_namespace[name] = request.getfixturevalue(f"_doctest_{name}")
        else:
            doctest_namespace.pop(name, None)


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keep model conversions made by tests and doctests out of the user's cache; setting
    # NLIEVAL_CACHE yourself makes them (the real-model tests above all) reuse that cache.
    if "NLIEVAL_CACHE" not in os.environ:
        monkeypatch.setenv("NLIEVAL_CACHE", str(tmp_path_factory.getbasetemp() / "nlieval-cache"))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group the tests for pytest-xdist's ``--dist loadgroup`` (scripts/test.sh): a file's
    tests on one worker, so that its module fixtures are built once, and every test on the
    packaged models (marker ``models``) on one worker, so that each model is converted once
    into one cache and two conversions never compete for the two cores."""
    groups: dict[str, str] = {}
    for item in items:
        group = "models" if item.get_closest_marker("models") else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
        groups[item.nodeid] = group
    # The groups on a real engine or program first (the packaged models' first of all),
    # then the others, most tests first: a worker takes the next group when it is done
    # with one, and a long group taken last is run while the other worker idles (xdist's
    # own order, by number of tests, put these few-test groups last; scripts/test.sh
    # passes --no-loadscope-reorder so that this order holds).
    heavy = {groups[i.nodeid] for i in items if any(i.get_closest_marker(m) for m in HEAVY)}
    sizes: dict[str, int] = {}
    for group in groups.values():
        sizes[group] = sizes.get(group, 0) + 1

    def rank(item: pytest.Item) -> tuple[int, int]:
        group = groups[item.nodeid]
        return (0 if group == "models" else 1 if group in heavy else 2, -sizes[group])

    items.sort(key=rank)


#: Markers of tests that start a real engine or program (seconds to minutes each).
HEAVY = ("vllm", "vllm_inproc", "slurm", "browser", "latex", "slow")
