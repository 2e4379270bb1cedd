"""Checkpoint sweeps on tiny checkpoints that a fixture really trains."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch

from nlieval.analyses.dynamics import checkpoint_order, dynamics, format_dynamics
from nlieval.choice import RunConfig, run
from nlieval.choice.prompts import PromptBuilder, answer_letter
from nlieval.data import load_task
from nlieval.ground import render
from nlieval.plotting import plot_run_dynamics
from nlieval.runs import RunFolder
from tests.helpers.figures import hlines_of, record_savefig, series_of

STEPS = (0, 10, 25, 50)


@pytest.fixture(scope="module")
def checkpoints(tiny_llama: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Full-batch training of the tiny model to answer the smoke items' gold letters."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_llama)
    model = AutoModelForCausalLM.from_pretrained(tiny_llama)
    ds = load_task("smoke")
    builder = PromptBuilder("nli3", ds.labels, [])
    texts = [builder.build(it).text for it in ds.items]
    gold = [tok(" " + answer_letter(it, ds.labels))["input_ids"][-1] for it in ds.items]
    enc = tok(texts, return_tensors="pt", padding=True, padding_side="left")
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    root = tmp_path_factory.mktemp("ckpts")
    saved = []
    for step in range(max(STEPS) + 1):
        if step in STEPS:
            folder = root / f"step{step:03d}"
            model.save_pretrained(folder)
            for f in tiny_llama.glob("*token*"):
                shutil.copy(f, folder)
            saved.append(str(folder))
        logits = model(**enc).logits[:, -1, :]
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor(gold))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return saved


def test_checkpoint_run_and_monotonicity(
    checkpoints: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = RunConfig(model="tiny", tasks=("smoke",), shots=(0,), checkpoints=tuple(checkpoints))
    run(cfg, tmp_path / "r", progress=False)
    records = RunFolder(tmp_path / "r").records()
    assert {r.checkpoint for r in records} == set(checkpoints)
    assert len(records) == 48 * len(checkpoints)
    order = checkpoint_order(tmp_path / "r")
    assert order == checkpoints
    rows = dynamics(records, order)
    assert len(rows) == 1
    row = rows[0]
    # Full-batch training on exactly these answers lowers the gold NLL at every step.
    assert all(a > b for a, b in zip(row["gold_nll"], row["gold_nll"][1:], strict=False))
    assert row["tau_nll"] == pytest.approx(1.0)
    assert row["accuracy"][-1] > row["accuracy"][0]
    assert row["tau_accuracy"] > 0
    assert "| tiny | smoke | 0 | 4 |" in render(format_dynamics(rows), "md")
    saved = record_savefig(monkeypatch)
    png = plot_run_dynamics(rows, tmp_path / "dyn.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # What is drawn, from the records themselves: per checkpoint (x = 0..3 in training
    # order) the share right and the mean -log-likelihood of the gold option; the random
    # baseline 1/3 of a 3-way task, the uniform guess ln 3.
    at = [[r for r in records if r.checkpoint == ck] for ck in checkpoints]
    accuracy = [sum(r.pred == r.gold for r in rs) / len(rs) for rs in at]
    nll = [sum(-r.loglik[r.labels.index(r.gold)] for r in rs) / len(rs) for rs in at]
    [fig] = saved.figures
    acc_ax, nll_ax = fig.axes
    xs = [0.0, 1.0, 2.0, 3.0]
    assert series_of(acc_ax) == {"accuracy": (xs, pytest.approx(accuracy))}
    assert hlines_of(acc_ax) == [(pytest.approx(1 / 3), "random (1/3)")]
    assert acc_ax.get_ylabel() == "accuracy"
    assert series_of(nll_ax) == {"gold NLL": (xs, pytest.approx(nll))}
    assert hlines_of(nll_ax) == [(pytest.approx(math.log(3)), "uniform guess (ln 3)")]
    assert nll_ax.get_ylabel() == "mean gold NLL"
    assert nll_ax.get_xlabel() == "checkpoint (in training order)"


def test_tau_is_nan_for_a_single_checkpoint() -> None:
    from nlieval.types import Record

    r = Record(
        "t",
        "1",
        "m",
        0,
        0,
        ("entailment", "neutral"),
        (-1.0, -2.0),
        (0.7, 0.3),
        "entailment",
        "entailment",
        checkpoint="only",
    )
    assert math.isnan(dynamics([r], ["only"])[0]["tau_accuracy"])
