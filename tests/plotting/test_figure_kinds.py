"""A figure kind is its drawing and one entry of the figure table
(:data:`nlieval.plotting.FIGURE_KINDS`): the command's choices and help, its drawing,
the experiment files' check and their schema all follow the entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nlieval.plotting
from nlieval.choice import RunConfig
from nlieval.cli import build_parser, main
from nlieval.experiments import experiment_schema
from nlieval.experiments import report as rep
from nlieval.experiments.spec import parse_experiment
from nlieval.plotting import FigureData, FigureKind
from nlieval.runs import RunFolder
from nlieval.types import Record

NLI = ("entailment", "neutral", "contradiction")


def _run(folder: Path, model: str, right: int, of: int) -> str:
    # `right` of `of` items answered with the gold label, the rest with another.
    records = [
        Record("smoke", str(i), model, 0, 0, NLI, (-0.1, -2.0, -3.0), (0.8, 0.1, 0.1),
               "entailment", "entailment" if i < right else "neutral")
        for i in range(of)
    ]  # fmt: skip
    run = RunFolder(folder)
    run.start(RunConfig(model=model, tasks=("smoke",)))
    run.append(records)
    return str(folder)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> list[FigureData]:
    """A kind `toy` in the table, as a contributor adds it: a drawing and one entry."""
    given: list[FigureData] = []

    def draw(d: FigureData) -> Path:
        given.append(d)
        path = Path(str(d.path))
        path.write_text("<svg/>")
        return path

    kind = FigureKind("toy", "one mark per model", draw)
    monkeypatch.setitem(nlieval.plotting.FIGURE_KINDS, "toy", kind)
    return given


def test_a_kind_in_the_table_is_a_choice_of_the_command_and_drawn(
    tmp_path: Path, toy: list[FigureData], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["figure", "--help"])
    assert "toy: one mark per model" in " ".join(capsys.readouterr().out.split())
    run = _run(tmp_path / "r", "m", right=3, of=4)
    base = _run(tmp_path / "b", "cls", right=1, of=4)
    out = tmp_path / "toy.svg"
    assert main(["figure", "toy", run, "--baseline", base, "--out", str(out)]) == 0
    (d,) = toy
    # Without the option `metric` a kind is drawn at accuracy: 3 of 4 right, and the
    # baseline's line 1 of 4.
    assert d.metric == "accuracy"
    assert [(r["model"], r["accuracy"]) for r in d.rows] == [("m", pytest.approx(0.75))]
    assert d.lines == {"cls": {"smoke": pytest.approx(0.25)}}
    assert d.path == str(out) and out.read_text() == "<svg/>"


def test_a_kind_in_the_table_is_one_an_experiment_may_name(
    tmp_path: Path, toy: list[FigureData]
) -> None:
    assert experiment_schema()["$defs"]["output-figure"]["properties"]["figure"] == {
        "enum": ["shots", "size", "dynamics", "toy"]
    }
    text = (
        "models: {m: smollm2-135m}\n"
        "blocks:\n  base: {command: run, tasks: [smoke]}\n"
        "matrix: [{block: base, models: [m]}]\n"
        "outputs:\n  f: " + json.dumps({"kind": "figure", "blocks": ["base"], "figure": "toy"})
        + "\n  g: " + json.dumps({"kind": "figure", "blocks": ["base"], "figure": "nope"}) + "\n"
    )  # fmt: skip
    exp = parse_experiment(text, str(tmp_path / "e.yaml"))
    assert rep.output_options(exp, exp.outputs[0])["figure"] == "toy"
    with pytest.raises(ValueError, match=r"expected one of shots, size, dynamics, toy"):
        rep.output_options(exp, exp.outputs[1])
