"""What the ChaosNLI figures of a report draw (Lost in Inference, Figures 5 a/b and 7) and
the reference line by value of any figure (its BERT lines in Figures 1, 5 b and 6): read
from the figure object (bars, lines and their levels, labels), not from the file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from nlieval.analyses import ChaosnliFigureConfig, chaosnli_figure
from nlieval.experiments import report as rep
from nlieval.experiments.plan import Cell
from nlieval.experiments.spec import Resources, parse_experiment
from nlieval.ground import DataError
from nlieval.reports import FigureConfig, figure_from
from nlieval.runs import RunFolder
from nlieval.types import Record

NLI = ("entailment", "neutral", "contradiction")
#: Three items' human label counts (no zero count, so no smoothing enters the hand values).
COUNTS = ([60, 30, 10], [20, 50, 30], [34, 33, 33])
#: Each model's softmax on every item.
PROBS = {"ma": (0.7, 0.2, 0.1), "mb": (0.2, 0.3, 0.5)}


def _js_distance(p: list[float], q: list[float]) -> float:
    # By hand, natural log (as scipy's jensenshannon and the ChaosNLI reference).
    m = [(a + b) / 2 for a, b in zip(p, q, strict=True)]

    def kl(x: list[float]) -> float:
        return sum(a * math.log(a / c) for a, c in zip(x, m, strict=True) if a > 0)

    return math.sqrt((kl(p) + kl(q)) / 2)


def _folder(root: Path, model: str, task: str = "chaosnli_snli") -> Path:
    folder = root / model
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    records = []
    for i, counts in enumerate(COUNTS):
        meta = {"human_counts": counts, "majority_label": NLI[counts.index(max(counts))]}
        probs = PROBS[model]
        pred = NLI[probs.index(max(probs))]
        records.append(
            Record(
                task,
                f"u{i}",
                model,
                4,
                0,
                NLI,
                tuple(math.log(p) for p in probs),
                probs,
                pred,
                NLI[i],
                meta=meta,
            )  # fmt: skip
        )
    RunFolder(folder).append(records)
    return folder


class Drawn:
    """The figure a plot function saves, kept instead of written."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: str) -> None:
        self.fig: Any = None

        def keep(fig: Any, path: Any) -> Path:
            self.fig = fig
            return Path(path[0] if isinstance(path, tuple) else path)

        monkeypatch.setattr(f"{module}.save", keep)

    def axes(self) -> list[Any]:
        return [ax for ax in self.fig.axes if ax.has_data()]


def _hlines(ax: Any) -> dict[str, float]:
    # Horizontal lines (axhline) by their legend label.
    return {
        str(line.get_label()): float(line.get_ydata()[0])
        for line in ax.get_lines()
        if len(set(line.get_ydata())) == 1
    }


def test_divergence_figure_bars_chance_and_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = Drawn(monkeypatch, "nlieval.plotting.chaosnli")
    runs = tuple(str(_folder(tmp_path, m)) for m in PROBS)
    cfg = ChaosnliFigureConfig(
        runs=runs,
        plot=str(tmp_path / "f.png"),
        figure="divergence",
        reference=(("chaosnli_snli", 0.23),),
        reference_label="BERT-large (Nie et al. 2020b)",
    )
    assert chaosnli_figure(cfg) is not None
    (ax,) = drawn.axes()
    assert ax.get_title() == "chaosnli_snli"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["ma k=4", "mb k=4"]
    human = [[c / 100 for c in counts] for counts in COUNTS]
    for bar, model in zip(ax.patches, PROBS, strict=True):
        want = sum(_js_distance(h, list(PROBS[model])) for h in human) / len(human)
        assert bar.get_height() == pytest.approx(want, abs=1e-6)
    lines = _hlines(ax)
    chance = sum(_js_distance(h, [1 / 3] * 3) for h in human) / len(human)
    assert lines["chance (uniform distribution)"] == pytest.approx(chance, abs=1e-6)
    assert lines["BERT-large (Nie et al. 2020b)"] == 0.23
    assert any("human" in name for name in lines)


def test_entropy_figure_a_curve_per_model_a_panel_per_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = Drawn(monkeypatch, "nlieval.plotting.results")
    runs = (str(_folder(tmp_path, "ma")), str(_folder(tmp_path / "m", "mb", "chaosnli_mnli")))
    cfg = ChaosnliFigureConfig(
        runs=runs, plot=str(tmp_path / "f.png"), figure="entropy", curves="original", bins=2
    )
    chaosnli_figure(cfg)
    axes = drawn.axes()
    assert [ax.get_title() for ax in axes] == ["chaosnli_mnli", "chaosnli_snli"]
    legend = [t.get_text() for leg in drawn.fig.legends for t in leg.get_texts()]
    assert "ma k=4" in legend and "mb k=4" in legend


def test_a_figure_output_draws_its_reference_line_by_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = Drawn(monkeypatch, "nlieval.plotting.results")
    folder = _folder(tmp_path, "ma")
    cfg = FigureConfig(
        kind="shots",
        runs=(str(folder),),
        out=str(tmp_path / "f.png"),
        reference=(("chaosnli_snli", 0.81),),
        reference_label="finetuned BERT (a paper)",
    )
    figure_from(cfg)
    (ax,) = drawn.axes()
    assert _hlines(ax)["finetuned BERT (a paper)"] == 0.81


def test_a_reference_given_twice_for_a_task_is_refused() -> None:
    cfg = FigureConfig(out="f.png", reference=(("snli", 0.8), ("snli", 0.9)))
    with pytest.raises(ValueError, match="task 'snli' given twice"):
        cfg.lines()


TEXT = """\
models: {a: smollm2-135m, b: gemma3-270m}
blocks:
  base: {command: run, tasks: [smoke]}
matrix: [{block: base, models: [a, b]}]
outputs:
  out: {kind: chaosnli-figure, figure: entropy, blocks: [base], models: MODELS}
"""


def _cell(model: str) -> Cell:
    return Cell(f"base-{model}", "base", "run", model, "m", (), Resources(), "e", 1, {}, ())


def test_a_chaosnli_figure_draws_the_cells_of_its_models(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(TEXT.replace("MODELS", json.dumps(["a"])))
    exp = parse_experiment(path.read_text(), str(path))
    cells = [_cell("a"), _cell("b")]
    assert [c.name for c in rep._cells_of(exp.outputs[0], cells)] == ["base-a"]
    # None of them ran (a laptop run of other models): every cell, and a note.
    chosen, note = rep._chosen_models(exp.outputs[0], [_cell("b")])
    assert [c.name for c in chosen] == ["base-b"]
    assert note == "none of its models (a) has a cell here: drawn with b instead"
    path.write_text(TEXT.replace("MODELS", json.dumps(["c"])))
    with pytest.raises(DataError) as err:
        rep.check_outputs(parse_experiment(path.read_text(), str(path)))
    assert str(err.value).startswith(f"{path}:6: field 'models': no model 'c'")


def test_a_stats_output_is_the_dataset_table(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    text = TEXT.replace(
        "{kind: chaosnli-figure, figure: entropy, blocks: [base], models: MODELS}",
        "{kind: stats, label: Table 4, tasks: [smoke], blocks: [base]}",
    )
    path.write_text(text)
    exp = parse_experiment(path.read_text(), str(path))
    report = tmp_path / "report"
    report.mkdir()
    files, _ = rep._write_output(exp, exp.outputs[0], (), report)
    assert files == ["out.md", "out.tex"]
    smoke = Path(__file__).parents[2] / "src/nlieval/resources/smoke.jsonl"
    items = len(smoke.read_text().splitlines())
    row = next(line for line in (report / "out.md").read_text().splitlines() if "smoke" in line)
    assert str(items) in row.split()


def test_figure_6_as_declared_js_over_training_tokens_with_its_bert_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Figure 6 of experiments/lost-in-inference.yaml: a checkpoint run of ChaosNLI records,
    # steps read from the names at 4M tokens a step (003 Appendix D).
    drawn = Drawn(monkeypatch, "nlieval.plotting.results")
    folder = tmp_path / "scratch"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    records = []
    for step, probs in (("step-1000", (0.4, 0.3, 0.3)), ("step-2000", (0.6, 0.3, 0.1))):
        for i, counts in enumerate(COUNTS):
            meta = {"human_counts": counts, "majority_label": NLI[counts.index(max(counts))]}
            records.append(
                Record(
                    "chaosnli_snli",
                    f"u{i}",
                    "scratch",
                    4,
                    0,
                    NLI,
                    (0.0,) * 3,
                    probs,
                    "entailment",
                    NLI[i],
                    checkpoint=step,
                    meta=meta,
                )  # fmt: skip
            )
    RunFolder(folder).append(records)
    cfg = FigureConfig(
        kind="dynamics",
        runs=(str(folder),),
        out=str(tmp_path / "f.png"),
        metric="js_distance",
        pattern=r"step[-_]?(\d+)",
        scale=4_000_000,
        reference=(("chaosnli_snli", 0.23),),
        reference_label="BERT-large (Nie et al. 2020b)",
    )
    figure_from(cfg)
    (ax,) = drawn.axes()
    human = [[c / 100 for c in counts] for counts in COUNTS]
    series = [line for line in ax.get_lines() if len(line.get_xdata()) == 2]
    curve = next(line for line in series if len(set(line.get_ydata())) == 2)
    assert list(curve.get_xdata()) == [4e9, 8e9]  # 1,000 and 2,000 steps of 4M tokens
    for y, probs in zip(curve.get_ydata(), ((0.4, 0.3, 0.3), (0.6, 0.3, 0.1)), strict=True):
        want = sum(_js_distance(h, list(probs)) for h in human) / len(human)
        assert y == pytest.approx(want, abs=1e-6)
    assert _hlines(ax)["BERT-large (Nie et al. 2020b)"] == 0.23
