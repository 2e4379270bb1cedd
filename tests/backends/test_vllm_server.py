"""A real serving engine: vLLM (CPU build) serving the packaged SmolLM2, against transformers
in process on 20 real SNLI dev items at k = 0 and 5.

Marked ``vllm``. The server is started outside the tests (``scripts/vllm_serve.sh``; the
test command starts one when ``NLIEVAL_VLLM=1``, as ``.ci/run`` does) and named by
``NLIEVAL_VLLM_URL`` (e.g. ``http://127.0.0.1:8011/v1``); without it these tests skip.
vLLM computes the same float32 log-probabilities with other kernels, so agreement is
within its precision (1e-4; 200 items gave at most 5.3e-5, see docs/scale.md), not exact.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from nlieval.backends import EngineOptions, HFOptions, stand_in
from nlieval.backends.completions import CompletionsLM
from nlieval.backends.openai import ServerOptions
from nlieval.choice import RunConfig, run
from tests.helpers.engines import absent
from tests.helpers.records import saved_rows

pytestmark = [pytest.mark.vllm, pytest.mark.data]

SERVED = os.environ.get("NLIEVAL_VLLM_MODEL", "smollm2-135m")


@pytest.fixture(scope="module")
def vllm_url() -> str:
    url = os.environ.get("NLIEVAL_VLLM_URL")
    if not url:
        absent("a vLLM server", "NLIEVAL_VLLM", "no NLIEVAL_VLLM_URL; run scripts/vllm_serve.sh")
    models = httpx.get(f"{url.rstrip('/')}/models", timeout=10).json()
    assert SERVED in [m["id"] for m in models["data"]], models
    return url


def _records(folder: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {(r["k"], r["seed"], r["item_id"]): r for r in saved_rows(folder)}


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("hf")
    cfg = RunConfig(
        model="smollm2-135m",
        engines=EngineOptions(hf=HFOptions(dtype="float32")),
        **_base(data_dir),
    )
    run(cfg, out, progress=False)
    return out


def _base(data_dir: Path) -> dict[str, Any]:
    return {
        "tasks": ("snli",),
        "shots": (0, 5),
        "limit": 20,
        "data_dir": str(data_dir),
    }


# Slow: 40 real items through vLLM (1-2 minutes each way) after a transformers run of them.
@pytest.mark.slow
@pytest.mark.parametrize("top_logprobs", [20, 0], ids=["one-request-per-item", "echo"])
def test_vllm_equals_transformers_on_20_snli_items(
    tmp_path: Path, vllm_url: str, data_dir: Path, hf_run: Path, top_logprobs: int
) -> None:
    cfg = RunConfig(
        model=f"openai-completions:{SERVED}",
        engines=EngineOptions(server=ServerOptions(vllm_url)),
        top_logprobs=top_logprobs,
        **_base(data_dir),
    )
    backend = cfg.resolve().scorer()
    assert isinstance(backend, CompletionsLM)
    run(cfg, tmp_path / "vllm", model=stand_in(cfg, lambda ck: backend), progress=False)
    want, got = _records(hf_run), _records(tmp_path / "vllm")
    assert len(got) == len(want) == 40 and set(got) == set(want)
    worst = 0.0
    for key, r in got.items():
        w = want[key]
        assert r["pred"] == w["pred"], key
        assert r["prompt"] == w["prompt"], key
        worst = max(worst, *(abs(a - b) for a, b in zip(r["loglik"], w["loglik"], strict=True)))
    assert worst < 1e-4
    if top_logprobs:
        # vLLM has /tokenize and names top tokens by id: the letters after "Answer:" are
        # one token more than the context, so they come from one request per item.
        assert backend.next_token_off is None
        counts = backend.counts
        assert counts["next_token_options"] + counts["echo_options"] == 40 * 3
        assert counts["next_token_options"] > counts["echo_options"]
        # vLLM 0.32 honours logprob_token_ids, so no option misses: none needs echo.
        assert counts["echo_options"] == 0 and counts["top_k_misses"] == 0
        assert {r["scored_by"] for r in got.values()} == {"next-token"}
    else:
        assert backend.counts["echo_options"] == 40 * 3
        assert {r["scored_by"] for r in got.values()} == {"echo"}


def test_vllm_answers_an_echo_request_with_prompt_logprobs(vllm_url: str) -> None:
    # The settings the backend relies on, asked directly: max_tokens 0 is accepted, every
    # prompt token comes back with its offset, and only the first has no log-probability.
    body = {
        "model": SERVED,
        "prompt": "Premise: A dog runs.\nAnswer: C",
        "echo": True,
        "logprobs": 1,
        "max_tokens": 0,
        "temperature": 0,
        "return_token_ids": True,
    }
    answer = httpx.post(f"{vllm_url.rstrip('/')}/completions", json=body, timeout=60).json()
    assert answer["model"] == SERVED  # the name asked for (nlieval refuses any other)
    lp = answer["choices"][0]["logprobs"]
    assert "".join(lp["tokens"]) == body["prompt"]
    assert lp["token_logprobs"][0] is None
    assert all(isinstance(x, float) and x <= 0 for x in lp["token_logprobs"][1:])
    assert lp["text_offset"] == sorted(lp["text_offset"])
    # Each position's top log-probs are part of a distribution (raw logits would not be).
    assert all(sum(math.exp(v) for v in top.values()) <= 1.001 for top in lp["top_logprobs"][1:])
    # The prompt's token ids, one per prompt token: options are compared on them.
    assert len(answer["choices"][0]["prompt_token_ids"]) == len(lp["tokens"])
