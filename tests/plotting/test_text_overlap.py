"""No two texts of a figure run into one another: every figure kind, drawn with data of
the size a study gives it (five tasks, Pythia's 154 log-spaced checkpoints on a token
axis, ten EPG thresholds, four SciNLI classes and the unparsed column), at a column's
width and at the text width."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nlieval.analyses.chaosnli import entropy_bins, score_records
from nlieval.plotting import results, studies
from nlieval.types import Record
from tests.helpers.figures import overlapping_texts

NLI = ("entailment", "neutral", "contradiction")
MODELS = ("EleutherAI/pythia-160m", "EleutherAI/pythia-1.4b", "HuggingFaceTB/SmolLM2-135M")
TASKS = ("alphanli", "anli_r3", "hans", "mnli_m", "snli")
# Pythia's checkpoints: steps 0, 1, 2, 4, ..., 512, then every 1000 to 143000.
STEPS = [0, *(2**i for i in range(10)), *range(1000, 144000, 1000)]
TOKENS_PER_STEP = 2_097_152


def _metrics_rows() -> list[dict[str, Any]]:
    return [
        {"model": m, "checkpoint": None, "task": t, "k": k, "labels": list(NLI), "seeds": [0, 1],
         "accuracy": 0.3 + 0.05 * i + 0.01 * k, "accuracy_std": 0.02}
        for i, m in enumerate(MODELS) for t in TASKS for k in (0, 1, 2, 5, 10)
    ]  # fmt: skip


def _chaos_records() -> list[Record]:
    out = []
    for task in ("chaosnli_snli", "chaosnli_mnli", "chaosnli_alphanli"):
        for m in MODELS:
            for i in range(40):
                meta = {"human_counts": [90 - 2 * i, 2 * i, 10], "majority_label": NLI[int(i > 22)]}
                out.append(Record(task, str(i), m, 0, 0, NLI, (0.0,) * 3, (0.6, 0.3, 0.1),
                                  NLI[i % 3], NLI[i % 2], meta=meta))  # fmt: skip
    return out


def _draw(kind: str, width: float, tmp_path: Path) -> None:
    out = tmp_path / f"{kind}.png"
    if kind == "shots":
        results.plot_accuracy_vs_shots(_metrics_rows(), out, width=width)
    elif kind == "size":
        sizes = dict(zip(MODELS, (1.6e8, 1.4e9, 1.35e8), strict=True))
        results.plot_accuracy_vs_size(_metrics_rows(), sizes, out, width=width)
    elif kind.startswith("dynamics"):
        # Pythia's whole series (6 decades of tokens), or its last 30 checkpoints (under
        # one decade, where matplotlib labels the minor ticks too).
        steps = STEPS if kind == "dynamics" else STEPS[-30:]
        rows = [
            {"model": m, "checkpoint": f"step{s}", "task": t, "k": 0, "labels": list(NLI),
             "accuracy": 0.33 + 0.1 * (s / 143000), "gold_nll": 1.1}
            for m in MODELS[:2] for t in TASKS[:3] for s in steps
        ]  # fmt: skip
        position = {f"step{s}": float(s * TOKENS_PER_STEP) for s in STEPS if s}
        results.plot_dynamics(rows, position, out, width=width)
    elif kind == "entropy":
        results.plot_accuracy_by_entropy(entropy_bins(_chaos_records(), 5), out, width=width)
    elif kind == "divergence":
        results.plot_divergence(score_records(_chaos_records()), out, width=width)
    elif kind == "epg":
        rows = [
            {"task": t, "model": "HuggingFaceTB/SmolLM2-135M", "checkpoint": None, "k": k,
             "threshold": th / 10, "pct_contaminated": 36.0 - 3 * th, "epg": 0.001 * (th - k),
             "metric": "accuracy"}
            for t in ("snli", "mnli_m") for k in (0, 1, 5) for th in range(10)
        ]  # fmt: skip
        studies.plot_epg(rows, out, width=width)
    elif kind == "confusion":
        labels = ["contrasting", "reasoning", "entailment", "neutral"]
        row = {"model": "HuggingFaceTB/SmolLM2-1.7B-Instruct", "checkpoint": None,
               "task": "scinli", "k": 4, "n": 400, "runs": 3, "labels": labels,
               "confusion_columns": [*labels, "<unparsed>"], "macro_f1": 0.412,
               "confusion": [[60, 10, 20, 8, 2], [12, 50, 25, 10, 3], [5, 9, 70, 15, 1],
                             [7, 8, 30, 54, 1]]}  # fmt: skip
        studies.plot_confusion(row, out, ncol=5, width=width)
    elif kind == "run-dynamics":
        rows = [{"task": t, "k": 0, "checkpoints": [f"out/step-{s}" for s in STEPS[-12:]],
                 "accuracy": [0.4] * 12, "gold_nll": [1.0] * 12, "tau_accuracy": 0.5,
                 "tau_nll": 0.5, "chance": 1 / 3, "n_labels": 3} for t in TASKS[:2]]  # fmt: skip
        results.plot_run_dynamics(rows, out, width=width)


KINDS = ("shots", "size", "dynamics", "dynamics-late", "entropy", "divergence", "epg",
         "confusion", "run-dynamics")  # fmt: skip


@pytest.mark.parametrize("width", [3.3, 6.5])
@pytest.mark.parametrize("kind", KINDS)
def test_no_two_texts_of_a_figure_overlap(
    kind: str, width: float, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    kept: list[Any] = []
    for module in (results, studies):
        monkeypatch.setattr(module, "save", lambda fig, path: kept.append(fig) or Path(path))
    _draw(kind, width, tmp_path)
    (fig,) = kept
    assert overlapping_texts(fig) == []
