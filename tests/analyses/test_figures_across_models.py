"""Figures across models: sizes from weight headers, positions from checkpoint names,
reference lines that really are drawn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from nlieval.backends.weights import parameter_count, resolve_model
from nlieval.plotting import (
    checkpoint_positions,
    plot_accuracy_vs_shots,
    plot_accuracy_vs_size,
    plot_dynamics,
)


def test_parameter_count_is_the_models_own(tiny_llama: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_llama)
    assert parameter_count(resolve_model(str(tiny_llama))) == sum(
        p.numel() for p in model.parameters()
    )


def test_checkpoint_positions_and_bad_names() -> None:
    pos = checkpoint_positions(["pythia/step143000", "step0"], r"step(\d+)", scale=2097152)
    assert pos == {"pythia/step143000": 143000 * 2097152.0, "step0": 0.0}
    with pytest.raises(ValueError, match="does not match"):
        checkpoint_positions(["final"], r"step(\d+)")
    with pytest.raises(ValueError, match="group"):
        checkpoint_positions(["step1"], r"step\d+")


def _rows() -> list[dict[str, object]]:
    return [
        {"model": m, "checkpoint": None, "task": t, "k": k, "accuracy": a, "chance": 1 / 3,
         "accuracy_std": 0.01}
        for m, t, k, a in (
            ("small", "snli", 0, 0.40), ("small", "snli", 5, 0.45),
            ("big", "snli", 0, 0.60), ("big", "snli", 5, 0.72),
            ("small", "anli_r1", 0, 0.33), ("big", "anli_r1", 0, 0.40),
        )
    ]  # fmt: skip


def test_baseline_lines_are_drawn(tmp_path: Path) -> None:
    levels = {"snli": 0.9}  # a reference system's accuracy on snli
    plain = imread(plot_accuracy_vs_shots(_rows(), tmp_path / "a.png"))
    lined = imread(plot_accuracy_vs_shots(_rows(), tmp_path / "b.png", {"fine-tuned": levels}))
    # Same size; the reference line (and its legend entry) change the picture.
    assert plain.shape == lined.shape and not np.array_equal(plain, lined)
    sized = plot_accuracy_vs_size(_rows(), {"small": 1.35e8, "big": 8e9}, tmp_path / "s.png")
    assert imread(sized).shape[1] == 1950  # two panels in the text width, 6.5 in at 300 dpi
    with pytest.raises(ValueError, match="known size"):
        plot_accuracy_vs_size(_rows(), {"other": 1.0}, tmp_path / "x.png")


def test_dynamics_of_two_models_on_a_token_axis(tmp_path: Path) -> None:
    rows = [
        {"model": m, "checkpoint": f"step{s}", "task": "chaosnli_snli", "k": 0,
         "accuracy": a, "chance": 1 / 3}
        for m in ("pythia-160m", "pythia-410m")
        for s, a in ((1000, 0.35), (10000, 0.40), (100000, 0.5))
    ]  # fmt: skip
    pos = checkpoint_positions([f"step{s}" for s in (1000, 10000, 100000)], r"step(\d+)", 2e6)
    out = plot_dynamics(rows, pos, tmp_path / "d.png", lines={"human": {"chaosnli_snli": 0.9}})
    assert imread(out).shape[1] == 1950
    with pytest.raises(ValueError, match="no checkpoint rows"):
        plot_dynamics(rows, {"other": 1.0}, tmp_path / "e.png")
