"""The one table of commands (:mod:`nlieval.commands`): every reader takes a command from
it, so a command declared there (and nowhere else) is a command of each: the command
line, an experiment file's blocks and outputs, and the site's command lines."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import nlieval.plotting
import nlieval.reports
from nlieval import commands
from nlieval.cli import build_parser
from nlieval.experiments import report as rep
from nlieval.experiments.commands import COMMAND_NAMES, OPTIONAL_INPUT, command
from nlieval.experiments.spec import parse_experiment
from nlieval.ground import DataError

TABLE = commands.TABLE


def test_the_blocks_and_outputs_are_those_the_table_declares() -> None:
    # The orders are the schema's; the sets are the table's own entries.
    assert sorted(commands.BLOCKS) == sorted(n for n, c in TABLE.items() if c.block)
    assert sorted(commands.OUTPUTS) == sorted(n for n, c in TABLE.items() if c.output)
    assert COMMAND_NAMES == commands.BLOCKS
    assert list(rep.KINDS) == list(commands.OUTPUTS)


def test_every_reference_of_the_table_loads() -> None:
    for name, c in TABLE.items():
        for ref in c.settings + (c.block.classes if c.block else ()):
            assert dataclasses.is_dataclass(commands.load(ref)), (name, ref)
        for ref in [c.block.write if c.block else "", c.output.write if c.output else ""]:
            assert not ref or callable(commands.load(ref)), (name, ref)
        assert not c.function or callable(commands.load(c.function)), name


def test_a_command_declared_in_the_table_is_a_block_an_output_and_a_command_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # One entry, and no other file: a command that prints what a library function
    # returns, whose settings are an existing class (the breakdown's), which an
    # experiment file may also name as an output kind (written by the breakdown's
    # writer) and as a block (the import's cell writer).
    calls: list[Any] = []

    def toy(cfg: Any) -> str:
        calls.append(cfg)
        return f"toy of {','.join(cfg.runs)} by {','.join(cfg.by)}"

    monkeypatch.setattr(nlieval.reports, "toy_from", toy, raising=False)
    toy_entry = commands.Command(
        "across",
        "a toy",
        ("nlieval toy runs/a --by gold",),
        settings=("runs:RunFolders", "reports:BreakdownConfig"),
        function="reports:toy_from",
        output=commands.Output("experiments.report:write_breakdown", ("runs", "format", "out")),
    )
    monkeypatch.setitem(TABLE, "toy", toy_entry)
    monkeypatch.setitem(commands.COMMANDS, "toy", toy_entry)

    parser = build_parser(["across"])
    args = parser.parse_args(["toy", "runs/a", "runs/b", "--by", "gold,genre"])
    assert args.handler(args) == 0
    assert [(c.runs, c.by) for c in calls] == [(("runs/a", "runs/b"), ("gold", "genre"))]
    assert commands.command_line("toy") == ["nlieval", "toy"]
    # The report's kinds are read from the table when the report module is loaded.
    monkeypatch.setitem(rep.KINDS, "toy", rep._kind("toy"))
    assert rep.KINDS["toy"].cls().__name__ == "BreakdownConfig"
    path = tmp_path / "e.yaml"
    path.write_text(
        "models: {m: smollm2-135m}\n"
        "blocks:\n  base: {command: run, tasks: [smoke]}\n"
        "matrix: [{block: base, models: [m]}]\n"
        "outputs:\n  t: {kind: toy, blocks: [base], by: [gold]}\n"
    )
    exp = parse_experiment(path.read_text(), str(path))
    assert rep.output_options(exp, exp.outputs[0]) == {"by": ("gold",)}


def test_a_block_reads_its_command_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    block = commands.Block(
        ("analyses:ImportConfig",),
        "experiments.commands:write_import",
        model_field=None,
        optional_input=("files",),
    )
    monkeypatch.setitem(TABLE, "import", dataclasses.replace(TABLE["import"], block=block))
    got = command("import")
    assert got.model_field is None
    assert [c.__name__ for c in got.classes] == ["ImportConfig"]
    assert OPTIONAL_INPUT == {"contamination": ("corpus", "scores")}


@pytest.mark.parametrize("name", [n for n, c in TABLE.items() if c.group is not None])
def test_each_command_line_of_the_table_is_the_parsers(name: str) -> None:
    # The site of `nlieval view` shows command_line(name): each must parse (--help
    # exits 0 only for a known command).
    words = commands.command_line(name)[1:]
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([*words, "--help"])
    assert done.value.code == 0


def test_the_figures_an_error_lists_are_the_figures(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A figure added to the figure table is named wherever the figures are listed.
    monkeypatch.delitem(nlieval.reports.FIGURES, "dynamics")
    toy = nlieval.plotting.FigureKind("toy", "a toy", lambda d: Path(str(d.path)))
    monkeypatch.setitem(nlieval.reports.FIGURES, "toy", toy)
    path = tmp_path / "e.yaml"
    output = {"kind": "figure", "blocks": ["base"]}
    path.write_text(
        "models: {m: smollm2-135m}\n"
        "blocks:\n  base: {command: run, tasks: [smoke]}\n"
        "matrix: [{block: base, models: [m]}]\n"
        f"outputs:\n  f: {json.dumps(output)}\n"
    )
    exp = parse_experiment(path.read_text(), str(path))
    with pytest.raises(DataError, match=r"figure: shots, size or toy\)"):
        rep.check_outputs(exp)
    with pytest.raises(ValueError, match=r"unknown figure 'nope': shots, size or toy$"):
        nlieval.reports.figure_from(
            nlieval.reports.FigureConfig(kind="nope", out=str(tmp_path / "f.png"))
        )


def test_an_output_of_a_printing_command_writes_its_text(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # write_text: the function's text for the output's cells, in the output's format.
    # (A name of its own: load keeps what it loaded.)
    def toy(cfg: Any) -> str:
        return f"{cfg.format}: {' '.join(cfg.runs)} by {','.join(cfg.by)}"

    monkeypatch.setattr(nlieval.reports, "toy_text", toy, raising=False)
    entry = commands.Command(
        None,
        settings=("reports:BreakdownConfig",),
        function="reports:toy_text",
        output=commands.Output("experiments.report:write_text", ("runs", "out")),
    )
    monkeypatch.setitem(TABLE, "toy", entry)
    monkeypatch.setitem(rep.KINDS, "toy", rep._kind("toy"))
    path = tmp_path / "e.yaml"
    path.write_text(
        "models: {m: smollm2-135m}\n"
        "blocks:\n  base: {command: run, tasks: [smoke]}\n"
        "matrix: [{block: base, models: [m]}]\n"
        "outputs:\n  t: {kind: toy, blocks: [base], by: [gold], format: csv}\n"
    )
    exp = parse_experiment(path.read_text(), str(path))
    report = tmp_path / "report"
    report.mkdir()
    files, notes = rep._write_output(exp, exp.outputs[0], ("c1", "c2"), report)
    assert (files, notes) == (["t.csv"], [])
    assert (report / "t.csv").read_text() == "csv: c1 c2 by gold\n"


@pytest.mark.parametrize("name", [n for n, c in TABLE.items() if c.unused])
def test_a_setting_a_command_never_reads_is_no_flag_and_no_block_key(name: str) -> None:
    # The command line and the experiment block read one declaration (Command.unused),
    # so that a plan never prints a flag the command refuses, nor takes a key it ignores.
    from nlieval.experiments.commands import setting_fields

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    words = TABLE[name].words or (name,)
    command = sub.choices[words[0]]
    flags = {s for a in command._actions for s in a.option_strings}
    for key in TABLE[name].unused:
        assert "--" + key.replace("_", "-") not in flags
        if TABLE[name].block is not None:
            assert key not in setting_fields(name)
