"""The two packaged real models (SmolLM2-135M-Instruct and Gemma 3 270M, from PyPI).

Marked ``models``: each converts a GGUF file once (15-120 s) and scores real prompts.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends.base import ScoreRequest
from nlieval.backends.weights import ModelError, resolve_model
from nlieval.choice.scoring import make_sweep_point
from nlieval.data import load_pool, load_task
from nlieval.runs import RunFolder
from tests.helpers.engines import absent

pytestmark = pytest.mark.models


#: Per packaged model, its backend and its smoke scores: made once per test run however
#: pytest orders the tests (a module fixture with params is set up again whenever the
#: order interleaves its params, as it did under pytest-xdist: a second load and scoring
#: of Gemma cost 10 minutes of a loaded run).
_MADE: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="module", params=["smollm2-135m", "gemma3-270m"])
def real_lm(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    from nlieval.backends.hf import HFCausalLM

    if request.param not in _MADE:
        try:
            resolve_model(request.param)
        except ModelError as err:
            absent("the packaged models", "NLIEVAL_MODELS", f"{err}; run scripts/setup.sh")
        _MADE[request.param] = {"lm": HFCausalLM(request.param, batch_size=16)}
    return _MADE[request.param]["lm"]


#: Every pairing of batch size and prefix cache; the first is the plain reference.
SETTINGS = [(1, False), (16, False), (1, True), (16, True)]


def _smoke_requests(k: int, n: int) -> list[ScoreRequest]:
    ds = load_task("smoke")
    pool, same = load_pool("smoke")
    point = make_sweep_point("smoke", "nli3", ds.labels, k, 0, pool.items, same)
    prompts = [point.prompt(it) for it in ds.items[:n]]
    return [ScoreRequest(p.text, p.continuations, len(p.prefix)) for p in prompts]


@pytest.fixture(scope="module")
def smoke_scores(real_lm):  # type: ignore[no-untyped-def]
    """The scores of 6 3-shot smoke prompts under each of SETTINGS, computed once per
    model for the tests below (a forward pass of a packaged model on 2 CPU cores is the
    suite's dearest step; 6 prompts of unequal length still pad every batch)."""
    made = next(m for m in _MADE.values() if m["lm"] is real_lm)
    if "scores" not in made:
        reqs = _smoke_requests(3, 6)
        made["scores"] = {}
        for bs, cache in SETTINGS:
            real_lm.batch_size, real_lm.prefix_cache = bs, cache
            made["scores"][bs, cache] = real_lm.loglikelihood(reqs)
    return made["scores"]


def test_option_letters_are_single_tokens(real_lm) -> None:  # type: ignore[no-untyped-def]
    ctx, cont = real_lm.split("Answer:", " B")
    assert len(cont) == 1 and real_lm.tok.decode(cont).strip() == "B"


def test_batch_size_and_prefix_cache_do_not_change_scores(smoke_scores) -> None:  # type: ignore[no-untyped-def]
    ref = smoke_scores[SETTINGS[0]]
    assert len(ref) == 6
    for setting in SETTINGS[1:]:
        got = smoke_scores[setting]
        for a, b in zip(ref, got, strict=True):
            assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
            assert a.index(max(a)) == b.index(max(b))


def test_the_option_letters_carry_most_of_the_next_token_mass(smoke_scores) -> None:  # type: ignore[no-untyped-def]
    # The scores are real log-probabilities of letters: the three options carry most of
    # the next-token mass after "Answer:" in a 3-shot prompt (scored in batches of 16
    # with the prefix cache); a score of another token, or of a whole sequence, would not.
    for scores in smoke_scores[16, True]:
        mass = sum(math.exp(s) for s in scores)
        assert 0.3 < mass <= 1.0 + 1e-6


def test_real_model_scores_a_letter_highest_after_shots_that_gave_it(real_lm) -> None:  # type: ignore[no-untyped-def]
    # Each smoke item is asked again after six shots that are that same item answered
    # with one letter L, for each L: the gold letter of those shots. A letter's share of
    # the options' probability must be highest in the context whose shots gave it (the
    # model copies; SmolLM2 on its own leans to C whatever it is shown, so the comparison
    # is per letter across contexts; measured margins: 0.3-1.9 nats on both models).
    # Scores given to the wrong option (an off-by-one continuation, options in another
    # order) or that are not the letters' log-probabilities fail here.
    ds = load_task("smoke")
    pool, same = load_pool("smoke")
    point = make_sweep_point("smoke", "nli3", ds.labels, 0, 0, pool.items, same)
    for item in ds.items[:2]:
        p = point.prompt(item)
        reqs = [
            ScoreRequest((p.text + letter + "\n\n") * 6 + p.text, p.continuations, 0)
            for letter in p.continuations
        ]
        scores = real_lm.loglikelihood(reqs)  # scores[shots' letter][option]
        share = [[x - math.log(sum(math.exp(y) for y in row)) for x in row] for row in scores]
        for option in range(len(p.continuations)):
            column = [share[given][option] for given in range(len(p.continuations))]
            assert column.index(max(column)) == option, (item.id, option, column)


def test_cli_run_on_real_snli(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "smol-snli"
    cmd = [
        sys.executable,
        "-m",
        "nlieval.cli",
        "run",
        "--model",
        "smollm2-135m",
        "--task",
        "snli",
        "--shots",
        "0,5",
        "--limit",
        "10",
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(RunFolder(out).records()) == 20
    res = json.loads((out / "results.json").read_text())
    assert {m["k"] for m in res["metrics"]} == {0, 5}
    for m in res["metrics"]:
        assert m["n"] == 10 and 0 <= m["accuracy"] <= 1 and 0 <= m["macro_f1"] <= 1
    assert res["data"]["snli"]["dropped"] == {"gold label '-'": 158}
