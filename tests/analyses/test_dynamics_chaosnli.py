"""ChaosNLI divergences over checkpoints: JS distance and KL per checkpoint computed by
hand on a 2-item example, Kendall tau counted by hand, the table, the plots and the CLI."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from nlieval.analyses.dynamics import dynamics, format_dynamics
from nlieval.cli import main
from nlieval.ground import render
from nlieval.plotting import plot_run_dynamics
from nlieval.runs import RunFolder
from nlieval.types import Record
from tests.helpers.figures import hlines_of, record_savefig, series_of

NLI = ("entailment", "neutral", "contradiction")
HUMAN = {"i1": [80, 20, 0], "i2": [0, 50, 50]}
# Per checkpoint, the model's distribution on i1 and i2 (ChaosNLI order e, n, c).
MODEL = {
    "ck0": ([1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]),
    "ck1": ([0.8, 0.2, 0.0], [0.0, 0.5, 0.5]),
    "ck2": ([0.5, 0.5, 0.0], [0.0, 0.5, 0.5]),
}
ORDER = ["ck0", "ck1", "ck2"]


def rec(ck: str, item: str, probs: Sequence[float]) -> Record:
    pred = NLI[max(range(3), key=lambda i: probs[i])]
    meta = {"human_counts": HUMAN[item], "majority_label": "entailment"}
    loglik = tuple(math.log(max(p, 1e-300)) for p in probs)
    return Record("chaosnli_snli", item, "m", 0, 0, NLI, loglik, tuple(probs), pred,
                  "entailment", checkpoint=ck, meta=meta)  # fmt: skip


def records() -> list[Record]:
    return [rec(ck, item, MODEL[ck][j]) for ck in ORDER for j, item in enumerate(HUMAN)]


def by_hand(p: Sequence[float], q: Sequence[float]) -> tuple[float, float]:
    """JS distance and KL(p || q), natural log; q's zeros floored at 1e-15 (renormalised)."""
    q = [max(x, 1e-15) for x in q]
    q = [x / sum(q) for x in q]
    m = [(a + b) / 2 for a, b in zip(p, q, strict=True)]
    kl_pm = sum(a * math.log(a / b) for a, b in zip(p, m, strict=True) if a > 0)
    kl_qm = sum(a * math.log(a / b) for a, b in zip(q, m, strict=True) if a > 0)
    kl_pq = sum(a * math.log(a / b) for a, b in zip(p, q, strict=True) if a > 0)
    return math.sqrt(max(0.0, (kl_pm + kl_qm) / 2)), kl_pq


def test_js_and_kl_per_checkpoint_and_their_tau() -> None:
    (row,) = dynamics(records(), ORDER)
    human = {i: [c / 100 for c in counts] for i, counts in HUMAN.items()}
    for j, ck in enumerate(ORDER):
        pairs = [by_hand(human[i], MODEL[ck][n]) for n, i in enumerate(HUMAN)]
        assert row["js_distance"][j] == pytest.approx((pairs[0][0] + pairs[1][0]) / 2, abs=1e-7)
        assert row["kl"][j] == pytest.approx((pairs[0][1] + pairs[1][1]) / 2, abs=1e-7)
    # ck1 equals the human distributions: JS 0. Series -JS is then (low, 0, middle):
    # pairs (0,1) and (0,2) concordant, (1,2) discordant: tau = (2 - 1) / 3.
    assert row["js_distance"][1] == pytest.approx(0.0, abs=1e-7)
    assert row["js_distance"][0] > row["js_distance"][2] > 0
    assert row["tau_js"] == pytest.approx(1 / 3)
    assert row["kl"][0] > row["kl"][2] > row["kl"][1]
    assert row["tau_kl"] == pytest.approx(1 / 3)
    assert row["n"] == 2
    # Uniform baseline: the ck0 model is uniform, so the two agree.
    assert row["uniform"]["js_distance"] == pytest.approx(row["js_distance"][0], abs=1e-12)
    assert row["human"]["label"] == "human split-half (exact)"
    table = render(format_dynamics([row]), "md")
    assert "| tau(-JS) | tau(-KL) |" in table
    assert f"| m | chaosnli_snli | 0 | 2 | {row['js_distance'][0]:.4f} " in table


def test_plot_has_a_divergence_row_and_cli_writes_both_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = record_savefig(monkeypatch)
    rows = dynamics(records(), ORDER)
    png = plot_run_dynamics(rows, tmp_path / "dyn.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    (folder.path / "config.json").write_text(json.dumps({"model": "m", "checkpoints": ORDER}))
    folder.append(records())
    argv = ["dynamics", str(folder.path), "--plot", str(tmp_path / "a.png")]
    argv += ["--entropy-plot", str(tmp_path / "b.png"), "--bins", "2", "--human-js"]
    assert main([*argv, "chaosnli_snli=0.05"]) == 0
    out = capsys.readouterr().out
    assert "0.0500 (human (published))" in out
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # What is drawn, by hand: the JS distance per checkpoint (by_hand, mean of the two
    # items) as a third row, with the uniform level (ck0 is uniform) and the human line:
    # the split-half estimate, then the published 0.05 given to the CLI.
    human = {i: [c / 100 for c in counts] for i, counts in HUMAN.items()}
    js = [sum(by_hand(human[i], MODEL[ck][n])[0] for n, i in enumerate(HUMAN)) / 2 for ck in ORDER]
    alone, cli, by_entropy = saved.figures
    for fig, human_line in ((alone, "human split-half (exact)"), (cli, "human (published)")):
        assert [ax.get_ylabel() for ax in fig.axes] == [
            "accuracy", "mean gold NLL", "JS distance to human labels"
        ]  # fmt: skip
        divergence = fig.axes[2]
        assert series_of(divergence) == {
            "JS distance": ([0.0, 1.0, 2.0], pytest.approx(js, abs=1e-7))
        }
        (uniform, label), (_, name) = hlines_of(divergence)
        assert (uniform, label) == (pytest.approx(js[0]), "uniform")
        assert name == human_line
        assert [t.get_text() for t in divergence.get_xticklabels()] == ORDER
    assert hlines_of(cli.axes[2])[1][0] == 0.05
    # The entropy figure (--bins 2): i1 (0.72 bits) then i2 (1 bit); every checkpoint
    # says entailment (gold) on i1; on i2 ck0 (uniform: the first label) alone does.
    [ax] = by_entropy.axes
    assert series_of(ax) == {
        "ck0 k=0": ([0.0, 1.0], [1.0, 1.0]),
        "ck1 k=0": ([0.0, 1.0], [1.0, 0.0]),
        "ck2 k=0": ([0.0, 1.0], [1.0, 0.0]),
    }
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("human label entropy (bits)", "accuracy")
