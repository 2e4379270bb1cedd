"""One reader of a setting's value (``settings.read_value``/``read_text``): the class's
real type decides, however its annotation is spelled (an alias, ``Optional``), and the
command line reads a flag's text with the same reader."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Optional

import pytest

from nlieval.cli.args import add_settings
from nlieval.settings import read_text, read_value, setting

#: An alias: the annotation's text names no built-in type.
Count = int


@dataclass(frozen=True)
class Spelled:
    n: Count = setting(3, help="a count under an alias")
    rate: Optional[float] = setting(None, help="a number, Optional spelled out")  # noqa: UP045


def test_an_alias_annotation_reads_as_its_type() -> None:
    n, rate = fields(Spelled)
    # Expected by hand: "5" is the integer 5, "0.5" the number 0.5, null allowed only
    # where the type allows None.
    assert read_value(n, "5") == 5
    assert read_value(rate, "0.5") == 0.5
    assert read_value(rate, None) is None
    with pytest.raises(ValueError, match="expected an integer, found 'five'"):
        read_value(n, "five")
    with pytest.raises(ValueError, match="needs a value"):
        read_value(n, None)


def test_the_command_line_reads_with_the_same_reader() -> None:
    p = argparse.ArgumentParser(exit_on_error=False)
    add_settings(p, Spelled)
    args = p.parse_args(["--n", "7", "--rate", "0.25"])
    assert (args.n, args.rate) == (7, 0.25)
    n, _ = fields(Spelled)
    assert read_text(n, "7") == args.n
    with pytest.raises(argparse.ArgumentError, match="expected an integer, found 'x'"):
        p.parse_args(["--n", "x"])


def _flags(dest: str) -> dict[str, argparse.Action]:
    # The argparse action of setting `dest` in every command of `nlieval` that has it.
    from nlieval.cli import build_parser

    out: dict[str, argparse.Action] = {}

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, f"{path} {name}".strip())
            elif a.dest == dest:
                out[path] = a

    walk(build_parser(), "")
    return out


@pytest.mark.parametrize(
    ("dest", "names", "helps"),
    [
        ("out", ("--out", "--output_path"), None),
        ("data_dir", ("--data-dir",), ("folder of official files", "where the tasks' data is")),
        ("tasks", ("--task", "--tasks"), ("comma-separated task names, task YAML files or data",)),
        ("split", ("--split",), ("split to read",)),
    ],
)
def test_a_shared_setting_is_one_flag_in_every_command(
    dest: str, names: tuple[str, ...], helps: tuple[str, ...] | None
) -> None:
    # Declared once (settings.out_setting, data.data_dir_setting, data.tasks_setting,
    # data.split_setting): the same option strings everywhere, the help the factory's.
    flags = _flags(dest)
    assert len(flags) >= 3, flags
    if dest == "split":
        # stats --split names one split, several or all (data.TasksToRead): not yet a
        # flag of its own name.
        assert flags.pop("stats").help.startswith("splits to read")  # type: ignore[union-attr]
    for command, action in flags.items():
        assert tuple(action.option_strings) == names, command
        if helps is not None:
            assert (action.help or "").startswith(helps), (command, action.help)


def test_every_flag_of_nlieval_has_a_type_the_reader_resolves() -> None:
    # argparse calls the reader on every given text and every text default: a setting
    # whose annotation does not resolve (a name imported for type checking alone) would
    # break its command's every parse.
    import functools

    from nlieval.cli import build_parser
    from nlieval.settings import setting_type

    typed = []

    def walk(p: argparse.ArgumentParser) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    walk(sub)
            elif isinstance(w := getattr(a.type, "__wrapped__", None), functools.partial):
                typed.append(w.args[0])

    walk(build_parser())
    assert len(typed) > 100
    for f in typed:
        setting_type(f)
