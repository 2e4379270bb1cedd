"""An error never names a flag its command lacks: each refusal below is brought about
through ``nlieval``'s own entry point, its one line is read back, and every ``--flag`` it
names must be a flag of the command that printed it (parsed by that command's parser).
A refusal whose advice is meant for another command (``grid``'s ``--allow-mixed`` said
by ``view``) fails here; a new refusal of these commands gets a line in ``CASES``.

A second check reads the source: every flag named in a ``raise`` or an ``advice=`` of
the package is a flag of some command (a renamed or removed flag is not advised)."""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nlieval.cli import build_parser, main
from nlieval.runs import RunFolder
from nlieval.types import Record

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "mismatched"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
#: Flags of other programs that an error may name (pip's, in an install hint).
OTHERS = {"--no-deps"}


def _parsers() -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    def walk(
        p: argparse.ArgumentParser, path: tuple[str, ...]
    ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield (*path, name), sub
                    yield from walk(sub, (*path, name))

    yield from walk(build_parser(), ())


FLAGS = {path: {s for a in p._actions for s in a.option_strings} for path, p in _parsers()}


def _rec(model: str, item: str) -> Record:
    return Record("t", item, model, 0, 0, ("a", "b"), (-0.1, -2.0), (0.9, 0.1), "a", "a")


def _mixed(tmp: Path) -> list[str]:
    # Two folders of one task on other items (3 and 1).
    out = []
    for name, items in (("a", ("1", "2", "3")), ("b", ("4",))):
        (tmp / name).mkdir()
        RunFolder(tmp / name).append([_rec(name, i) for i in items])
        out.append(str(tmp / name))
    return out


def _labels(tmp: Path) -> str:
    (tmp / "p.csv").write_text("id,pred\nsmoke-train-01,entailment\n")
    return str(tmp / "p.csv")


def _experiment(tmp: Path, extra: str = "") -> str:
    (tmp / "e.yaml").write_text(
        "models: {a: smollm2-135m}\nblocks: {b: {command: run, tasks: [smoke]}}\n"
        f"matrix: [{{block: b, models: [a]{extra}}}]\n"
    )
    return str(tmp / "e.yaml")


#: Each refusal: a name, and the command line that brings it about (given tmp_path).
CASES: dict[str, Callable[[Path], list[str]]] = {
    "view: folders on other items (shown, not refused)": lambda t: [
        "view", *_mixed(t), "--out", str(t / "site")],
    "view: nothing to show": lambda t: ["view", str(t), "--out", str(t / "site")],
    "grid: folders on other items": lambda t: ["grid", *_mixed(t)],
    "import: another split": lambda t: [
        "import", _labels(t), "--format", "labels", "--model", "m", "--task", "smoke",
        "--out", str(t / "r")],
    "import: two splits": lambda t: [
        "import", _labels(t), "--format", "labels", "--model", "m", "--task", "smoke@train",
        "--split", "test", "--out", str(t / "r")],
    "import: no task": lambda t: [
        "import", _labels(t), "--format", "labels", "--model", "m", "--out", str(t / "r")],
    "import: no model": lambda t: [
        "import", _labels(t), "--format", "labels", "--task", "smoke@train", "--out",
        str(t / "r")],
    "experiment run: --gpus with ray": lambda t: [
        "experiment", "run", _experiment(t), "--out", str(t / "x"), "--executor", "ray",
        "--gpus", "0"],
    "experiment run: --slurm-array without slurm": lambda t: [
        "experiment", "run", _experiment(t), "--out", str(t / "x"), "--slurm-array"],
    "experiment plan: more than 100 cells": lambda t: [
        "experiment", "plan", _experiment(t, ", seeds: [" + ",".join(map(str, range(101)))
                                          + "], each: [seeds]"), "--no-estimate"],
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_a_refusal_names_only_flags_of_its_own_command(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = CASES[case](tmp_path)
    code = main(argv)
    said = capsys.readouterr().err
    command = tuple(argv[:2]) if argv[0] == "experiment" else (argv[0],)
    named = set(FLAG.findall(said))
    assert not named - FLAGS[command] - OTHERS, (case, said)
    if "shown, not refused" in case:
        assert code == 0, said
    else:
        assert code != 0 and said.startswith("nlieval: error: "), said


def test_every_flag_an_error_names_is_a_flag_of_some_command() -> None:
    every = set().union(*FLAGS.values())
    unknown = []
    for path in sorted((ROOT / "src" / "nlieval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            said = (
                node.exc
                if isinstance(node, ast.Raise)
                else node.value
                if isinstance(node, ast.keyword) and node.arg == "advice"
                else None
            )
            if said is None:
                continue
            texts = [n.value for n in ast.walk(said) if isinstance(n, ast.Constant)]
            for text in (t for t in texts if isinstance(t, str)):
                bad = [f for f in FLAG.findall(text) if f not in every | OTHERS]
                unknown += [f"{path.relative_to(ROOT)}: {f}" for f in bad]
    assert not unknown, unknown
