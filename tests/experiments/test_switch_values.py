"""A flag an experiment's message names is said as the `--set KEY=VALUE` (or the output
option) that gives it: a switch's value is the one its flag gives on the command line,
read from the command's argparse parser; a field's type is read from its real type
(settings.setting_type), never its annotation's text; and the flags found are those of
the one pattern of a flag (ground.FLAG)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Any

import pytest

from nlieval.cli import build_parser
from nlieval.commands import BLOCKS, OUTPUTS, TABLE, command_line
from nlieval.experiments import driver
from nlieval.experiments.commands import setting_fields
from nlieval.experiments.driver import as_set
from nlieval.experiments.report import KINDS, option_fields
from nlieval.ground import FLAG
from nlieval.settings import setting

#: Types under other names: their annotations' text says neither bool nor int.
Switch = bool
Size = int


@dataclass(frozen=True)
class Aliased:
    keep: Switch = setting(True, help="keep it", names=("--drop",))
    fresh: Switch = setting(False, help="start afresh")
    width: Size = setting(3, help="columns")
    label: str = setting("x", help="a label")


def _subparser(words: list[str]) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in words[1:]:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[word]
    return parser


def _switches(name: str) -> list[tuple[str, str, str]]:
    """Each switch of command ``name``'s parser: its flag, the field it sets and the
    value it gives, as YAML writes it."""
    out = []
    for action in _subparser(command_line(name))._actions:
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            given = isinstance(action, argparse._StoreTrueAction)
            out.append((action.option_strings[0], action.dest, "true" if given else "false"))
    return out


# The switches a block may set (--overwrite and --no-progress are the executor's).
BLOCK_SWITCHES = [
    (name, *s) for name in BLOCKS for s in _switches(name) if s[1] in setting_fields(name)
]


def test_the_blocks_have_switches_of_both_kinds() -> None:
    assert {v for *_, v in BLOCK_SWITCHES} == {"true", "false"}


@pytest.mark.parametrize(("command", "flag", "key", "value"), BLOCK_SWITCHES)
def test_a_blocks_switch_is_said_with_the_value_its_flag_gives(
    command: str, flag: str, key: str, value: str
) -> None:
    assert as_set(f"pass {flag} to go on", command) == f"pass --set {key}={value} to go on"


# An output kind with a command of its own (chaosnli-figure is drawn by `figure`, its
# options are that command's).
OUTPUT_SWITCHES = [
    (name, field, flag, value)
    for name in OUTPUTS
    if TABLE[name].group is not None
    for flag, key, value in _switches(name)
    for field in [option_fields(KINDS[name]).get(key)]
    if field is not None
]


def test_some_output_has_a_switch() -> None:
    assert OUTPUT_SWITCHES


@pytest.mark.parametrize(
    ("kind", "field", "flag", "value"),
    OUTPUT_SWITCHES,
    ids=[f"{o[0]}-{o[2]}" for o in OUTPUT_SWITCHES],
)
def test_an_output_switch_is_said_with_the_value_its_flag_gives(
    kind: str, field: Any, flag: str, value: str
) -> None:
    assert driver._option(field.name, field, None) == f"the output option {field.name}: {value}"


def test_a_fields_type_is_its_real_type_not_its_annotations_text() -> None:
    keep, fresh, width, label = fields(Aliased)
    p = argparse.ArgumentParser()
    from nlieval.cli.args import add_settings

    add_settings(p, Aliased)
    # The parser's own reading of the switches: --drop gives keep=False, --fresh True.
    assert vars(p.parse_args(["--drop", "--fresh"])) == {
        "keep": False,
        "fresh": True,
        "width": 3,
        "label": "x",
    }
    assert driver._set_value("keep", keep, None) == "false"
    assert driver._set_value("fresh", fresh, None) == "true"
    assert driver._option("keep", keep, None) == "the output option keep: false"
    # A number's placeholder is N, a text's its key.
    assert driver._set_value("width", width, None) == "N"
    assert driver._set_value("label", label, None) == "LABEL"


@pytest.mark.parametrize(
    "text",
    [
        "--limit 4 and --sample",
        "x--y --a_b --A --b- --c-d-e 'q' --no-test 2.5",
        "(--out), --batch-size=3 ---x --9 -- --m1",
    ],
)
def test_the_flags_as_set_reads_are_the_flags_of_the_one_pattern(text: str) -> None:
    assert [m.group(1) for m in driver._FLAG_VALUE.finditer(text)] == FLAG.findall(text)
