"""A cell's command line in `nlieval experiment plan` is the command's own: its words
from `commands.command_line`, its flags' names from `settings.flag_names`, and, pasted
into `nlieval`'s parser, it parses to the cell's config."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import build_parser
from nlieval.cli.args import settings_from_args
from nlieval.commands import BLOCKS, command_line, settings_of
from nlieval.experiments import plan_cells
from nlieval.experiments.plan import Cell, format_plan
from nlieval.experiments.spec import parse_experiment
from nlieval.settings import flag_names, flat_dict

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "experiments").glob("*.yaml")) + [ROOT / "docs/examples/experiment.yaml"]

# A block of every command an experiment may name, with the values a flag gives in
# more than one word or with a comma: a lone seed (`--seeds 0` is no seed, `0,` seed
# 0), a switch as YAML text, a switch whose flag turns it off, a repeatable flag and a
# flag of several words (contamination's --run and --corpus).
EVERY_BLOCK = """\
models: {a: smollm2-135m, t: {model: hf-internal-testing/tiny-random-bert}}
blocks:
  run: {command: run, tasks: [smoke], shots: [0, 2], seeds: [0], limit: 4,
        skip_bad: "yes", save_prompts: false, balanced: "no"}
  instruct: {command: instruct, tasks: [smoke], shots: [4], runs: 2, system_role: false}
  train: {command: train, task: smoke, seeds: 2, hypothesis_only: true, skip_test: true}
  generate: {command: generate, task: smoke, limit: 3, skip_bad: true}
  import: {command: import, files: [a.jsonl, b.jsonl], task: smoke}
  items: {command: infer-build, task: smoke, seed: 1, patterns: [chain], name: mine}
  scores: {command: contamination, corpus: [c1.jsonl, c2.jsonl], tasks: [smoke],
           run: [r1, r2]}
matrix:
  - {block: run, models: [a]}
  - {block: instruct, models: [a]}
  - {block: train, models: [t]}
  - {block: generate, models: [a]}
  - {block: import, models: [a]}
  - {block: items}
  - {block: scores}
"""


def _printed(cell: Cell) -> list[str]:
    """The cell's command line as `experiment plan` prints it (its second line)."""
    (line,) = [x for x in format_plan([cell]).splitlines() if x.startswith("  ")]
    return shlex.split(line)


def _planned(text: str, source: str) -> list[Cell]:
    return plan_cells(parse_experiment(text, source), estimate=False)


def _parsed_config(cell: Cell) -> dict[str, Any]:
    argv = _printed(cell)
    assert argv[0] == "nlieval"
    args = build_parser().parse_args(argv[1:])
    config: dict[str, Any] = {}
    for cls in settings_of(cell.command):
        config.update(flat_dict(settings_from_args(cls, args)))
    return json.loads(json.dumps(config, default=str))


def _expected_config(cell: Cell) -> dict[str, Any]:
    # The plan shows a reference to another cell's folder as DIR/cells/<name>.
    text = re.sub(r"\{cell:([^{}]*)\}", r"DIR/cells/\1", json.dumps(cell.config))
    config: dict[str, Any] = json.loads(text)
    # The cell's folder (--out) is the executor's to choose.
    config.pop("out", None)
    return config


def _cells() -> list[Cell]:
    cells = _planned(EVERY_BLOCK, "every.yaml")
    for path in SHIPPED:
        cells += _planned(path.read_text(), str(path))
    return cells


# This test found that a block of `generate` or `instruct` took device_map, max_memory
# and prefix_attention while their command lines left those flags out: the chat engine
# now spreads a model as scoring does, and a setting a command never reads
# (`Command.unused`) is neither a flag nor a block key.
def _case(cell: Cell) -> Any:
    return pytest.param(cell, id=f"{Path(cell.source).name}:{cell.name}")


def test_the_test_plans_a_block_of_every_command() -> None:
    assert {c.command for c in _planned(EVERY_BLOCK, "every.yaml")} == set(BLOCKS)


@pytest.mark.parametrize("cell", [_case(c) for c in _cells()])
def test_a_printed_command_line_parses_to_the_cells_config(cell: Cell) -> None:
    # The command's other settings (its run folder: --out, --overwrite) are the
    # executor's, not the cell's.
    expected = _expected_config(cell)
    parsed = _parsed_config(cell)
    assert {k: parsed.get(k, "(absent)") for k in expected} == expected


@pytest.mark.parametrize("cell", _cells(), ids=lambda c: f"{Path(c.source).name}:{c.name}")
def test_a_command_line_has_the_commands_words_and_its_flags_names(cell: Cell) -> None:
    from nlieval.experiments.commands import setting_fields

    words = command_line(cell.command)
    assert list(cell.argv[: len(words)]) == words
    names = {n for f in setting_fields(cell.command).values() for n in flag_names(f)}
    names.add("--model")
    flags = [a for a in cell.argv[len(words) :] if a.startswith("--")]
    assert flags and set(flags) <= names, set(flags) - names
