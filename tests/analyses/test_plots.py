"""Plots: valid PNG files from synthetic rows and from saved run folders (no model)."""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib.image as mpimg
import pytest

from nlieval import plotting as plots
from nlieval.analyses import chaosnli
from nlieval.choice import RunConfig
from nlieval.cli.analyses import PLOTS, add_commands
from nlieval.metrics import summarize
from nlieval.runs import RunFolder
from nlieval.types import Record

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


def test_three_plots_from_rows(tmp_path: Path) -> None:
    recs = _records() + _records("org/model-b")
    p1 = plots.plot_accuracy_vs_shots(summarize(recs), tmp_path / "a" / "acc.png")
    p2 = plots.plot_accuracy_by_entropy(chaosnli.entropy_bins(recs, 3), tmp_path / "bins.png")
    p3 = plots.plot_divergence(chaosnli.score_records(recs), tmp_path / "div.png")
    assert p1 == tmp_path / "a" / "acc.png"
    for p in (p1, p2, p3):
        _assert_png(p)


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


def test_plots_command_from_run_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _run(tmp_path, "a", _records())
    b = _run(tmp_path, "b", _records("org/model-b", "chaosnli_mnli"))
    assert _plots_cli(str(a), str(b), "--out", str(tmp_path / "figs"), "--bins", "4") == 0
    for name in PLOTS:
        _assert_png(tmp_path / "figs" / name)
    assert capsys.readouterr().out.count("written:") == 3


def test_plots_command_skips_without_chaosnli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = [
        Record("smoke", str(i), "m", k, 0, NLI, (0.0,) * 3, (0.5, 0.3, 0.2), "entailment",
               NLI[i % 3])
        for i in range(6)
        for k in (0, 1)
    ]  # fmt: skip
    run = _run(tmp_path, "plain", plain)
    assert _plots_cli(str(run), "--out", str(tmp_path / "figs")) == 0
    out = capsys.readouterr().out
    assert "skipped" in out and "no ChaosNLI records" in out
    _assert_png(tmp_path / "figs" / PLOTS[0])
    assert not (tmp_path / "figs" / PLOTS[1]).exists()
