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
