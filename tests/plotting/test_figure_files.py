"""Figures as a paper needs them: the format of the extension (vector PDF and SVG, PNG at
300 dpi) from every command that draws, the paper's width, one style per model across the
figures of one call, and reference lines that are the quantity of their axis."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread

from nlieval import plotting
from nlieval.choice import RunConfig
from nlieval.cli import main
from nlieval.plotting import results
from nlieval.runs import RunFolder
from nlieval.types import SCI4, Record

NLI = ("entailment", "neutral", "contradiction")
MAGIC = {"pdf": b"%PDF", "png": b"\x89PNG\r\n\x1a\n"}


def _is(fmt: str, path: Path) -> bool:
    data = path.read_bytes()
    if fmt == "svg":  # an XML prologue, then the svg element
        return data.lstrip().startswith(b"<?xml") and b"<svg" in data[:1000]
    return data.startswith(MAGIC[fmt])


def _rec(model: str, item: int, k: int = 0, seed: int = 0, ckpt: str | None = None,
         probs: Sequence[float] = (0.5, 0.3, 0.2), counts: Sequence[int] = (60, 30, 10),
         gold: str = "entailment") -> Record:  # fmt: skip
    meta = {"human_counts": list(counts), "majority_label": NLI[int(counts[1] > counts[0])]}
    pred = NLI[max(range(3), key=lambda i: probs[i])]
    loglik = tuple(math.log(p) for p in probs)
    return Record("chaosnli_snli", str(item), model, k, seed, NLI, loglik, tuple(probs), pred,
                  gold, checkpoint=ckpt, meta=meta)  # fmt: skip


def _run(folder: Path, records: list[Record], **config: Any) -> str:
    run = RunFolder(folder)
    run.start(RunConfig(model=records[0].model, tasks=(records[0].task,), **config))
    run.append(records)
    return str(folder)


def _checkpoint_run(folder: Path, model: str) -> str:
    ckpts = [f"{folder}/step-{s}" for s in (10, 20)]
    records = [
        _rec(model, i, seed=s, ckpt=ck, probs=(0.4 + 0.1 * j, 0.35 - 0.05 * j, 0.25 - 0.05 * j))
        for j, ck in enumerate(ckpts)
        for i in range(6)
        for s in (0, 1)
    ]
    return _run(folder, records, checkpoints=tuple(ckpts))


def js_distance(p: Sequence[float], q: Sequence[float]) -> float:
    """JS distance, natural log, from its definition."""
    m = [(a + b) / 2 for a, b in zip(p, q, strict=True)]

    def kl(x: Sequence[float], y: Sequence[float]) -> float:
        return sum(a * math.log(a / b) for a, b in zip(x, y, strict=True) if a > 0)

    return math.sqrt(0.5 * kl(p, m) + 0.5 * kl(q, m))


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The figures the plots of results save, kept to look into."""
    figures: list[Any] = []
    save = results.save

    def keep(fig: Any, path: Any) -> Path:
        figures.append(fig)
        return save(fig, path)

    monkeypatch.setattr(results, "save", keep)
    return figures


def _hlines(fig: Any) -> dict[str, float]:
    # Each labelled horizontal line of the figure's panels: its label -> its level.
    return {k: v for ax in fig.axes for k, v in _hlines_of(ax).items()}


@pytest.mark.parametrize("metric", ["js_distance", "gold_nll", "accuracy"])
def test_dynamics_baseline_lines_are_the_axis_metric_one_per_system(
    tmp_path: Path, drawn: list[Any], metric: str
) -> None:
    run = _checkpoint_run(tmp_path / "ft", "ft")
    # Two classifiers and an LM at k=0 and k=4 in one baseline folder; one item each.
    # Human labels (60, 30, 10); gold entailment.
    a, b = (0.5, 0.3, 0.2), (0.2, 0.2, 0.6)
    lm0, lm4 = (0.1, 0.8, 0.1), (0.7, 0.2, 0.1)
    base = [_rec("org/cls-a", 0, probs=a), _rec("org/cls-b", 0, probs=b),
            _rec("lm", 0, probs=lm0), _rec("lm", 0, k=4, probs=lm4)]  # fmt: skip
    baseline = _run(tmp_path / "base", base, shots=(0, 4))
    out = tmp_path / "d.pdf"
    argv = ["figure", "dynamics", run, "--pattern", r"step-(\d+)", "--metric", metric]
    assert main([*argv, "--baseline", baseline, "--out", str(out)]) == 0
    human = (0.6, 0.3, 0.1)
    expect = {  # written out by hand for each system
        "js_distance": {"cls-a": js_distance(human, a), "cls-b": js_distance(human, b),
                        "lm k=4 (largest k)": js_distance(human, lm4)},
        "gold_nll": {"cls-a": -math.log(0.5), "cls-b": -math.log(0.2),
                     "lm k=4 (largest k)": -math.log(0.7)},
        "accuracy": {"cls-a": 1.0, "cls-b": 0.0, "lm k=4 (largest k)": 1.0},
    }[metric]  # fmt: skip
    (fig,) = drawn
    lines = _hlines(fig)
    for name, level in expect.items():
        assert lines[name] == pytest.approx(level, abs=1e-9)
    # The axis' own reference: ln 3 for a uniform guess's NLL, chance for accuracy.
    if metric == "gold_nll":
        assert lines["uniform guess (ln 3)"] == pytest.approx(math.log(3))
    if metric == "js_distance":
        # The uniform distribution's JS distance to (0.6, 0.3, 0.1) on the run's items.
        assert lines["uniform distribution"] == pytest.approx(js_distance(human, (1 / 3,) * 3))
    assert _is("pdf", out)


def test_names_replace_paths_and_styles_are_stable_across_one_call(
    tmp_path: Path, drawn: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run_a = _checkpoint_run(tmp_path / "gemma-ft", "runs/gemma-ft/step-0000")
    run_b = _checkpoint_run(tmp_path / "smol-ft", "runs/smol-ft/step-0000")
    out = tmp_path / "d.svg"
    argv = ["figure", "dynamics", run_a, run_b, "--pattern", r"step-(\d+)", "--out", str(out)]
    assert main([*argv, "--name", "Gemma 270M", "--name", "SmolLM2 135M", "--width", "column"]) == 0
    (fig,) = drawn
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "Gemma 270M k=0" in labels and "SmolLM2 135M k=0" in labels
    assert not any("step-" in label for label in labels)
    assert fig.get_figwidth() == pytest.approx(3.3)
    assert _is("svg", out)
    capsys.readouterr()
    assert main([*argv, "--name", "only one"]) != 0  # one name for two folders
    err = capsys.readouterr().err.strip()
    assert err.startswith("nlieval: error: --name: 1 names for 2 run folders")
    assert err.count("\n") == 0
    # A model's colour and marker follow from the sorted names of the call alone.
    one = plotting.styles(["b", "a"])
    assert plotting.styles(["a", "b", "c"])["b"] == one["b"] == {"color": "C1", "marker": "s"}


def test_plots_one_style_per_model_in_all_three_figures(tmp_path: Path, drawn: list[Any]) -> None:
    recs = [_rec(m, i, k=k, seed=s, counts=(100 - 9 * i, 9 * i, 0), gold=NLI[i % 2],
                 probs=(0.6, 0.3, 0.1) if (i + s) % 2 else (0.2, 0.5, 0.3))
            for m in ("zeta", "alpha") for k in (0, 2) for s in (0, 1)
            for i in range(8)]  # fmt: skip
    run = _run(tmp_path / "r", recs, shots=(0, 2))
    base = _run(
        tmp_path / "b", [_rec("org/cls", i, counts=(100 - 9 * i, 9 * i, 0)) for i in range(8)]
    )
    figs = tmp_path / "figs"
    argv = ["plots", run, "--out", str(figs), "--plot-format", "pdf", "--baseline", base]
    assert main([*argv, "--against", "original"]) == 0
    assert sorted(p.name for p in figs.iterdir()) == [
        "accuracy_by_entropy.pdf", "accuracy_vs_shots.pdf", "divergence.pdf"]  # fmt: skip
    assert all(_is("pdf", p) for p in figs.iterdir())
    shots, entropy, divergence = drawn
    # alpha sorts first: C0 and a circle in each figure, zeta C1 and a square; in the
    # entropy figure a model's smaller k is a lighter shade of its colour.
    from matplotlib.colors import to_rgb, to_rgba

    seen = {}
    for fig in (shots, entropy):
        for bars in fig.axes[0].containers:  # an errorbar: its data line, then the bars
            line = bars.lines[0]
            seen[(fig is shots, bars.get_label())] = (to_rgb(line.get_color()), line.get_marker())
    assert seen[(True, "alpha")] == seen[(False, "alpha k=2")] == (to_rgb("C0"), "o")
    assert seen[(True, "zeta")] == seen[(False, "zeta k=2")] == (to_rgb("C1"), "s")
    light, marker = seen[(False, "alpha k=0")]
    assert marker == "o" and all(a >= b for a, b in zip(light, to_rgb("C0"), strict=True))
    assert light != to_rgb("C0")
    bars = [p.get_facecolor() for p in divergence.axes[0].patches]
    assert bars == [to_rgba("C0"), to_rgba("C0"), to_rgba("C1"), to_rgba("C1")]
    # The baseline classifier (accuracy 8/8... its gold is entailment, it says entailment).
    assert _hlines(shots)["cls"] == pytest.approx(1.0)
    legend = [t.get_text() for t in shots.legends[0].get_texts()]
    assert "error bars: ±1 std over seeds" in legend
    # n per entropy bin on the ticks.
    assert all("n=" in t.get_text() for t in entropy.axes[0].get_xticklabels())


def test_every_figure_command_writes_the_format_of_its_extension(tmp_path: Path) -> None:
    run = _checkpoint_run(tmp_path / "ft", "ft")
    plain = [_rec("org/m", i, k=k, seed=s) for i in range(6) for k in (0, 2) for s in (0, 1)]
    shots = _run(tmp_path / "shots", plain, shots=(0, 2))
    for fmt in ("pdf", "svg", "png"):
        figs = tmp_path / fmt
        cmds = [
            ["figure", "shots", shots, "--out", f"{figs}/shots.{fmt}"],
            ["figure", "size", shots, "--sizes", "org/m=1e8", "--out", f"{figs}/size.{fmt}"],
            ["figure", "dynamics", run, "--pattern", r"step-(\d+)", "--out", f"{figs}/dyn.{fmt}"],
            ["dynamics", run, "--plot", f"{figs}/run.{fmt}", "--entropy-plot",
             f"{figs}/bins.{fmt}"],
            ["plots", shots, "--out", f"{figs}/plots", "--plot-format", fmt],
        ]  # fmt: skip
        for argv in cmds:
            assert main(argv) == 0, argv
        written = sorted(figs.rglob(f"*.{fmt}"))
        assert len(written) == 8
        assert all(_is(fmt, p) for p in written), written
    png = imread(tmp_path / "png" / "shots.png")
    assert png.shape[1] == round(6.5 * 300)  # the text width at 300 dpi


def test_epg_of_two_runs_and_confusions_as_vector(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", [_rec("m-a", i, gold=NLI[i % 2]) for i in range(6)])
    b = _run(tmp_path / "b", [_rec("m-b", i, gold=NLI[i % 3]) for i in range(6)])
    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(
        json.dumps({"task": "chaosnli_snli", "item_id": str(i), "score": i / 6}) + "\n"
        for i in range(6)))  # fmt: skip
    epg = tmp_path / "epg.pdf"
    argv = ["contamination", "--scores", str(scores), "--run", a, "--run", b, "--plot", str(epg)]
    assert main([*argv, "--out", str(tmp_path / "c.jsonl")]) == 0
    assert _is("pdf", epg)
    labels = SCI4
    sci = [Record("scinli", f"t{i}", "chat", 0, 0, tuple(x.value for x in labels), (0.0,) * 4,
                  (0.25,) * 4, labels[i % 4].value, labels[(i // 2) % 4].value)
           for i in range(8)]  # fmt: skip
    run = _run(tmp_path / "sci", sci)
    plots = tmp_path / "conf"
    assert main(["sci-report", run, "--plot-dir", str(plots), "--plot-format", "svg"]) == 0
    (conf,) = plots.iterdir()
    assert conf.suffix == ".svg" and _is("svg", conf)


def test_an_unknown_extension_is_one_line_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _checkpoint_run(tmp_path / "ft", "ft")
    assert main(["dynamics", run, "--plot", str(tmp_path / "d.jpg")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown extension '.jpg'" in err and "d.jpg" in err
    with pytest.raises(SystemExit):
        main(["figure", "shots", run, "--out", str(tmp_path / "x.png"), "--width", "wide"])


def test_run_dynamics_has_random_chance_uniform_and_checkpoint_curves_named_by_checkpoint(
    tmp_path: Path, drawn: list[Any]
) -> None:
    run = _checkpoint_run(tmp_path / "ft", str(tmp_path / "ft" / "step-10"))
    out = ["dynamics", run, "--plot", str(tmp_path / "d.png")]
    assert main([*out, "--entropy-plot", str(tmp_path / "b.png"), "--bins", "1"]) == 0
    curves, bins = drawn
    # Gold labels all entailment: the random baseline is still 1/3 (3 options), labelled
    # so, never the gold prior of these items (1.0).
    levels = {ax.get_ylabel(): _hlines_of(ax) for ax in curves.axes}
    assert levels["accuracy"]["random (1/3)"] == pytest.approx(1 / 3)
    assert not [name for name in levels["accuracy"] if "chance" in name]
    assert levels["mean gold NLL"]["uniform guess (ln 3)"] == pytest.approx(math.log(3))
    assert "uniform" in levels["JS distance to human labels"]
    assert curves.axes[-1].get_xlabel() == "checkpoint (in training order)"
    labels = [t.get_text() for t in bins.legends[0].get_texts()]
    assert labels[:2] == ["step-10 k=0", "step-20 k=0"]


def _hlines_of(ax: Any) -> dict[str, float]:
    out = {}
    for line in ax.get_lines():
        y = list(line.get_ydata())
        if len(y) == 2 and y[0] == y[1] and not str(line.get_label()).startswith("_"):
            out[str(line.get_label())] = float(y[0])
    return out


def test_size_figure_under_a_given_name_keeps_the_recorded_models_size(
    tmp_path: Path, drawn: list[Any]
) -> None:
    plain = [_rec("org/m", i, k=k) for i in range(6) for k in (0, 2)]
    run = _run(tmp_path / "r", plain, shots=(0, 2))
    argv = ["figure", "size", run, "--sizes", "org/m=1e8", "--name", "My model"]
    assert main([*argv, "--out", str(tmp_path / "s.pdf")]) == 0
    (fig,) = drawn
    assert "My model" in [t.get_text() for t in fig.legends[0].get_texts()]
    (bars,) = fig.axes[0].containers[:1]
    assert list(bars.lines[0].get_xdata()) == [1e8]


def test_a_baseline_without_the_axis_metric_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _checkpoint_run(tmp_path / "ft", "ft")
    plain = [Record("snli", str(i), "cls", 0, 0, NLI, (0.0,) * 3, (0.5, 0.3, 0.2), "entailment",
                    "entailment") for i in range(3)]  # fmt: skip
    base = _run(tmp_path / "base", plain)
    argv = ["figure", "dynamics", run, "--pattern", r"step-(\d+)", "--metric", "js_distance"]
    assert main([*argv, "--baseline", base, "--out", str(tmp_path / "d.pdf")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no records with a finite js_distance" in err
    assert not (tmp_path / "d.pdf").exists()


def test_an_experiments_palette_keeps_a_models_colour_in_a_figure_without_the_others(
    tmp_path: Path, drawn: list[Any]
) -> None:
    from matplotlib.colors import to_hex

    from nlieval.reports import FigureConfig, figure_from

    run = _run(tmp_path / "z", [_rec("zeta", i, k=k) for i in range(4) for k in (0, 2)])
    # Alone, zeta is the first name (C0); among an experiment's models alpha, zeta it is
    # the second (C1), as in the experiment's other figures that draw alpha too.
    figure_from(FigureConfig(kind="shots", runs=(str(run),), out=str(tmp_path / "alone.png")))
    cfg = FigureConfig(kind="shots", runs=(str(run),), out=str(tmp_path / "in.png"))
    figure_from(cfg, palette=["alpha", "zeta"])
    alone, within = drawn

    def colours(fig: Any) -> set[str]:
        # The model's series: an error-bar container labelled with it, its data line.
        drawn = [c for ax in fig.axes for c in ax.containers if c.get_label() == "zeta"]
        return {to_hex(c.lines[0].get_color()) for c in drawn}

    assert colours(alone) == {"#1f77b4"}  # matplotlib's C0
    assert colours(within) == {"#ff7f0e"}  # C1


def test_no_two_of_a_hundred_names_share_a_colour_and_a_marker() -> None:
    from nlieval.plotting import styles

    # A study's file names 11 models: with colour and marker both cycling by 10, the
    # 1st and 11th were drawn alike (C0, o). 10 colours x 10 markers give 100 looks.
    got = styles(f"model-{i:03d}" for i in range(100))
    assert len({(s["color"], s["marker"]) for s in got.values()}) == 100
    assert got["model-000"] == {"color": "C0", "marker": "o"}
    assert got["model-010"]["color"] == "C0" and got["model-010"]["marker"] != "o"
