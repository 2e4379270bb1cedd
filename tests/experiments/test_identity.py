"""A cell's identity hashes its settings as chosen (those that differ from their
defaults): a setting a later version adds with a default, plain or inside engine
options, leaves every cell's identity as it was; a value set away from its default
changes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from nlieval.backends import EngineOptions, ServerOptions
from nlieval.choice import RunConfig
from nlieval.experiments import commands, plan_cells
from nlieval.experiments.spec import parse_experiment
from nlieval.settings import non_default, options, setting

TEXT = """\
models:
  a: smollm2-135m
  s: {model: gpt-4o-mini, api_base: "http://localhost:8000/v1"}
blocks:
  base: {command: run, tasks: [smoke], limit: 4, shots: [0, 1]}
  items: {command: infer-build, task: smoke}
matrix:
  - {block: base, models: [a, s], seeds: [1, 2], each: [seeds]}
  - {block: items, seeds: [0, 1]}
"""


@dataclass(frozen=True)
class Knobs:
    tensor_parallel: int = setting(1, help="GPUs a model is split over")


@dataclass(frozen=True)
class Later(RunConfig):
    """``run`` as a later version might have it: a new setting and new engine options,
    each with a default."""

    new_knob: int = setting(3, help="a setting added later")
    knobs: Knobs = options(Knobs)


def _identities(text: str = TEXT) -> dict[str, str]:
    return {
        c.name: c.identity for c in plan_cells(parse_experiment(text, "e.yaml"), estimate=False)
    }


def _as_later(monkeypatch: pytest.MonkeyPatch) -> None:
    original = commands._classes

    def classes(name: str) -> tuple[type[Any], ...]:
        return (Later,) if name == "run" else original(name)

    monkeypatch.setattr(commands, "_classes", classes)


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch) -> None:
    _as_later(monkeypatch)


def test_a_setting_added_with_a_default_leaves_every_identity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _identities()
    assert len(before) == 6 and len(set(before.values())) == 6
    _as_later(monkeypatch)
    later = plan_cells(parse_experiment(TEXT, "e.yaml"), estimate=False)
    # The new settings are in each run cell's whole configuration, not in its identity.
    assert [c.name for c in later if c.config.get("new_knob") == 3] == [
        "base-a-seed1",
        "base-a-seed2",
        "base-s-seed1",
        "base-s-seed2",
    ]
    assert all(c.config["tensor_parallel"] == 1 for c in later if c.block == "base")
    assert {c.name: c.identity for c in later} == before


def test_what_a_cell_is_given_is_what_differs_from_the_defaults() -> None:
    (cell, *_) = plan_cells(parse_experiment(TEXT, "e.yaml"), estimate=False)
    # The block's settings, the model, the seed of the axis (RunConfig's defaults are
    # shots (0,), limit None, seeds (0,): each set here differs from them), and the
    # fields a run folder checks to resume (RunConfig.IDENTITY) at their values: a
    # packaged model runs on the transformers engine ("hf"), the rest are defaults.
    assert cell.given == {
        "model": "smollm2-135m",
        "tasks": ["smoke"],
        "limit": 4,
        "shots": [0, 1],
        "seeds": [1],
        "engine": "hf",
        "split": None,
        "template": None,
        "balanced": False,
        "dtype": "auto",
        "revision": None,
        "sample": None,
        "sample_seed": 0,
        "label_map": [],
    }
    server = {c.name: c for c in plan_cells(parse_experiment(TEXT, "e.yaml"), estimate=False)}[
        "base-s-seed1"
    ]
    assert server.given["api_base"] == "http://localhost:8000/v1"
    assert "api_key_env" not in server.given  # a server option at its default


@pytest.mark.usefixtures("later")
@pytest.mark.parametrize(
    "edit",
    [
        "limit: 4, new_knob: 4",  # the new setting away from its default
        "limit: 4, tensor_parallel: 2",  # the new engine option away from its default
        "limit: 5",
        "limit: 4, balanced: true",
        "limit: 4, dtype: float32",  # an engine option of the model
    ],
)
def test_a_value_away_from_its_default_changes_the_identity(edit: str) -> None:
    before = _identities()
    after = _identities(TEXT.replace("limit: 4", edit))
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"base-a-seed1", "base-a-seed2", "base-s-seed1", "base-s-seed2"}


@pytest.mark.usefixtures("later")
def test_a_default_written_out_is_the_default() -> None:
    assert _identities(TEXT.replace("limit: 4", "limit: 4, balanced: false, new_knob: 3")) == (
        _identities()
    )


@dataclass(frozen=True)
class Flipped(RunConfig):
    """``run`` as a later version might have it: ``balanced`` on by default."""

    balanced: bool = setting(True, help="a default changed later")


def test_a_changed_default_of_a_checked_field_changes_the_identity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _identities()
    original = commands._classes
    monkeypatch.setattr(
        commands, "_classes", lambda name: (Flipped,) if name == "run" else original(name)
    )
    after = _identities()
    # `balanced` is checked by the run folder (IDENTITY): the run cells are other cells
    # now, and their folders refuse the other value; the infer-build cells are as before.
    assert {n for n in before if before[n] != after[n]} == {
        "base-a-seed1",
        "base-a-seed2",
        "base-s-seed1",
        "base-s-seed2",
    }


def test_one_configuration_under_another_command_is_another_cell() -> None:
    # A block edited from `run` to `instruct` with the same settings: before, both cells
    # hashed the same settings and the instruct block was reported with run's records.
    text = "models:\n  a: smollm2-135m\nblocks:\n  b: {command: COMMAND, tasks: [smoke]}\n"
    text += "matrix:\n  - {block: b, models: [a]}\n"
    run = _identities(text.replace("COMMAND", "run"))
    instruct = _identities(text.replace("COMMAND", "instruct"))
    assert run.keys() == instruct.keys() and run != instruct


def test_absent_options_are_the_default_and_present_ones_are_not() -> None:
    # Options that are None by default: flat_dict gives their `when` field as None.
    assert non_default(RunConfig("m", ("smoke",))) == {"model": "m", "tasks": ("smoke",)}
    served = RunConfig(
        "m", ("smoke",), engines=EngineOptions(server=ServerOptions("http://h:1/v1"))
    )
    assert non_default(served) == {"model": "m", "tasks": ("smoke",), "api_base": "http://h:1/v1"}
