"""Plots: valid PNG files from synthetic rows and from saved run folders (no model)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

from nlieval import plotting as plots
from nlieval.analyses import chaosnli
from nlieval.choice import RunConfig
from nlieval.cli.analyses import PLOTS, add_commands
from nlieval.metrics import summarize
from nlieval.runs import RunFolder
from nlieval.types import Record
from tests.helpers.figures import bars_of, hlines_of, points_of, record_savefig, series_of

NLI = ("entailment", "neutral", "contradiction")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _records(model: str = "org/model-a", task: str = "chaosnli_snli") -> list[Record]:
    out = []
    for k in (0, 2, 4):
        for seed in (0, 1):
            for i in range(12):
                counts = [100 - 8 * i, 8 * i, 0]
                probs = (0.7, 0.2, 0.1) if (i + k + seed) % 3 else (0.1, 0.2, 0.7)
                pred = NLI[probs.index(max(probs))]
                meta = {"human_counts": counts, "majority_label": NLI[int(i > 6)]}
                out.append(
                    Record(task, str(i), model, k, seed, NLI, (0.0,) * 3, probs, pred,
                           NLI[i % 2], meta=meta)
                )  # fmt: skip
    return out


def _assert_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 1000
    assert path.read_bytes()[:8] == PNG_MAGIC
    image = mpimg.imread(path)
    assert image.shape[0] > 100 and image.shape[1] > 100


def _accuracy_by_entropy(recs: list[Record], bins: int) -> dict[str, list[float]]:
    """By hand: the items sorted by their human labels' entropy (bits, scipy) cut into
    ``bins`` groups of equal size (the 12 items have 12 distinct entropies), and in each
    the share right against the original label of each model and k, averaged over seeds."""
    items = sorted({r.item_id for r in recs}, key=lambda i: int(i))
    counts = {r.item_id: r.meta["human_counts"] for r in recs}
    ranked = sorted(items, key=lambda i: entropy(counts[i], base=2))
    size = len(ranked) // bins
    groups = [set(ranked[b * size : (b + 1) * size]) for b in range(bins)]
    out: dict[str, list[float]] = {}
    for name, k in sorted({(r.model.split("/")[-1], r.k) for r in recs}):
        mine = [r for r in recs if r.model.endswith(name) and r.k == k]
        seeds = sorted({r.seed for r in mine})
        out[f"{name} k={k}"] = [
            float(np.mean([
                np.mean([r.pred == r.gold for r in mine if r.seed == s and r.item_id in g])
                for s in seeds
            ]))
            for g in groups
        ]  # fmt: skip
    return out


def _approx(by: dict[str, list[float]]) -> dict[str, Any]:
    return {k: pytest.approx(v) for k, v in by.items()}


def _js_bars(recs: list[Record]) -> list[float]:
    """By hand (scipy): each model and k's mean JS distance from the human labels."""
    keys = sorted({(r.model, r.k) for r in recs})
    return [
        float(np.mean([
            jensenshannon(np.array(r.meta["human_counts"]) / 100, r.probs)
            for r in recs
            if (r.model, r.k) == key
        ]))
        for key in keys
    ]  # fmt: skip


#: Accuracy vs shots of _records, by hand: an item is right when it is even (gold
#: entailment) and the model says entailment ((i + k + seed) % 3 != 0); of the six even
#: items, four are right at every k and seed: 4/12. Chance: half the golds are each of
#: two labels, 0.5^2 + 0.5^2 = 0.5.
SHOTS = ([0.0, 2.0, 4.0], [pytest.approx(1 / 3)] * 3)


def test_three_plots_from_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recs = _records() + _records("org/model-b")
    saved = record_savefig(monkeypatch)
    p1 = plots.plot_accuracy_vs_shots(summarize(recs), tmp_path / "a" / "acc.png")
    p2 = plots.plot_accuracy_by_entropy(chaosnli.entropy_bins(recs, 3), tmp_path / "bins.png")
    p3 = plots.plot_divergence(chaosnli.score_records(recs), tmp_path / "div.png")
    assert p1 == tmp_path / "a" / "acc.png"
    for p in (p1, p2, p3):
        _assert_png(p)
    shots, bins, divergence = saved.figures
    [ax] = shots.axes
    assert series_of(ax) == {"model-a": SHOTS, "model-b": SHOTS}
    # Chance is the random baseline 1/K of the 3-way task, not the gold prior (0.5 here).
    assert hlines_of(ax) == [(pytest.approx(1 / 3), "random (1/3)")]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("shots (k)", "accuracy")
    [ax] = bins.axes
    drawn = series_of(ax)
    assert {k: x for k, (x, _) in drawn.items()} == dict.fromkeys(drawn, [0.0, 1.0, 2.0])
    assert {k: y for k, (_, y) in drawn.items()} == _approx(_accuracy_by_entropy(recs, 3))
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("human label entropy (bits)", "accuracy")
    assert [ax.get_ylabel() for ax in divergence.axes] == [
        "JS distance", "JS divergence", "KL(human ‖ model)"
    ]  # fmt: skip
    assert bars_of(divergence.axes[0]) == pytest.approx(_js_bars(recs))
    uniform = np.mean([jensenshannon([100 - 8 * i, 8 * i, 0], [1, 1, 1]) for i in range(12)])
    points = points_of(divergence.axes[0])
    assert [y for _, y in points["uniform distribution"]] == pytest.approx([uniform] * 6)
    assert len(points["human split-half (exact)"]) == 6


def test_plots_refuse_empty_rows(tmp_path: Path) -> None:
    for fn in (plots.plot_accuracy_vs_shots, plots.plot_accuracy_by_entropy, plots.plot_divergence):
        with pytest.raises(ValueError):
            fn([], tmp_path / "x.png")


def _run(tmp_path: Path, name: str, recs: list[Record]) -> Path:
    folder = RunFolder(tmp_path / name)
    folder.start(RunConfig(model=recs[0].model, tasks=(recs[0].task,), shots=(0, 2, 4)))
    folder.append(recs)
    return folder.path


def _plots_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["plots", *argv])
    return int(args.handler(args))


def test_plots_command_from_run_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _run(tmp_path, "a", _records())
    b = _run(tmp_path, "b", _records("org/model-b", "chaosnli_mnli"))
    saved = record_savefig(monkeypatch)
    assert _plots_cli(str(a), str(b), "--out", str(tmp_path / "figs"), "--bins", "4") == 0
    for name in PLOTS:
        _assert_png(tmp_path / "figs" / name)
    assert capsys.readouterr().out.count("written:") == 3
    # A panel (column) per task, each run's model in its own, with --bins 4.
    shots, bins, divergence = saved.figures
    assert [ax.get_title() for ax in shots.axes] == ["chaosnli_mnli", "chaosnli_snli"]
    assert [series_of(ax) for ax in shots.axes] == [{"model-b": SHOTS}, {"model-a": SHOTS}]
    assert [hlines_of(ax) for ax in shots.axes] == [[(pytest.approx(1 / 3), "random (1/3)")]] * 2
    assert [ax.get_title() for ax in bins.axes] == ["chaosnli_mnli", "chaosnli_snli"]
    for ax, recs in zip(bins.axes, (_records("org/model-b"), _records()), strict=True):
        drawn = series_of(ax)
        assert {k: len(x) for k, (x, _) in drawn.items()} == dict.fromkeys(drawn, 4)
        assert {k: y for k, (_, y) in drawn.items()} == _approx(_accuracy_by_entropy(recs, 4))
    assert [ax.get_title() for ax in divergence.axes[:2]] == ["chaosnli_mnli", "chaosnli_snli"]
    assert bars_of(divergence.axes[0]) == pytest.approx(_js_bars(_records("org/model-b")))


def test_plots_command_skips_without_chaosnli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = [
        Record("smoke", str(i), "m", k, 0, NLI, (0.0,) * 3, (0.5, 0.3, 0.2), "entailment",
               NLI[i % 3])
        for i in range(6)
        for k in (0, 1)
    ]  # fmt: skip
    run = _run(tmp_path, "plain", plain)
    saved = record_savefig(monkeypatch)
    assert _plots_cli(str(run), "--out", str(tmp_path / "figs")) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "no ChaosNLI records" in out
    _assert_png(tmp_path / "figs" / PLOTS[0])
    assert not (tmp_path / "figs" / PLOTS[1]).exists()
    # Only accuracy vs shots is drawn: items 0 and 3 of 0-5 are right (gold entailment,
    # the answer every time) at k = 0 and 1; the golds in thirds: chance 3 * (1/3)^2.
    [fig] = saved.figures
    [ax] = fig.axes
    assert series_of(ax) == {"m": ([0.0, 1.0], [pytest.approx(1 / 3)] * 2)}
    assert hlines_of(ax) == [(pytest.approx(1 / 3), "random (1/3)")]
