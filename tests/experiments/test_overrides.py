"""``--set KEY=VALUE`` reads every value exactly as the flag of the same name reads it:
for every setting of every command an experiment block may run, the value a cell is
given by ``--set`` equals the value ``--KEY VALUE`` gives that command's setting (or both
refuse it), the matrix axes (``tasks``, ``shots``, ``seeds``, ``checkpoints``) included."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from dataclasses import Field
from typing import Any

import pytest

from nlieval.cli.args import add_settings
from nlieval.experiments.commands import COMMAND_NAMES, coerce, command, setting_fields
from nlieval.experiments.overrides import apply_overrides
from nlieval.experiments.plan import AXIS_FIELDS, SINGULAR, plan_cells, read_axis_texts
from nlieval.experiments.spec import AXES, Setting, parse_experiment
from nlieval.ground import DataError
from nlieval.settings import choices_of, flag_of

#: Texts a reader may give any flag: counts, lists, a trailing comma, words, a number.
TEXTS = ("1", "3", "3,", "0,2", "abc", "0.5", "-1")
REFUSED = "refused"


def _flag_value(cmd: str, f: Field[Any], text: str | None) -> Any:
    # The command's own parser of that one setting (every other setting skipped).
    for cls in command(cmd).classes:
        names = {x.name for x in _all_fields(cls)}
        if f.name in names:
            break
    p = argparse.ArgumentParser(exit_on_error=False)
    add_settings(p, cls, skip=names - {f.name})
    flag = flag_of(f)
    assert flag is not None
    name = (flag.names or ("--" + f.name.replace("_", "-"),))[0]
    argv = [name] if text is None else [name, text]
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            parsed = p.parse_args(argv)
    except (argparse.ArgumentError, SystemExit):
        return REFUSED
    value = getattr(parsed, f.name)
    return tuple(value) if isinstance(value, list) else value


def _all_fields(cls: type[Any]) -> list[Field[Any]]:
    # A command's settings and those of the options it holds (an engine's dtype, ...).
    from nlieval.settings import options_of

    out: list[Field[Any]] = []
    for f in cls.__dataclass_fields__.values():
        opt = options_of(f)
        out += _all_fields(opt.cls) if opt is not None else [f]
    return out


def _set_value(cmd: str, key: str, f: Field[Any], text: str) -> Any:
    # The value a cell of a block of `cmd` gets from `--set KEY=TEXT`, as the plan reads it.
    model = command(cmd).model_field is not None
    exp = parse_experiment(
        ("models: {a: smollm2-135m}\n" if model else "")
        + f"blocks: {{b: {{command: {cmd}}}}}\n"
        + ("matrix: [{block: b, models: [a]}]\n" if model else "matrix: [{block: b}]\n"),
        "e.yaml",
    )
    try:
        exp = apply_overrides(exp, [f"{key}={text}"])
        if key in AXES:
            values = dict(exp.matrix[0].axes)[key]
            if f.name in SINGULAR:
                return tuple(coerce(f, Setting(f.name, v, "--set", None)) for v in values)
            return coerce(f, Setting(f.name, list(values), "--set", None))
        [s] = [s for s in exp.block("b").settings if s.key == key]
        return coerce(f, s)
    except DataError:
        return REFUSED


def _cases() -> list[tuple[str, str]]:
    # Every setting with a flag of its own name (a positional one has none to compare).
    return [
        (cmd, key)
        for cmd in COMMAND_NAMES
        for key, f in setting_fields(cmd).items()
        if (flag := flag_of(f)) is not None and not flag.positional
    ]


@pytest.mark.parametrize(("cmd", "key"), _cases())
def test_set_reads_a_value_as_the_flag_of_the_same_name(cmd: str, key: str) -> None:
    f = setting_fields(cmd)[key]
    flag = flag_of(f)
    assert flag is not None
    if isinstance(f.default, bool):
        # A switch (--KEY, or --no-KEY for one on by default): --set KEY=VALUE gives the
        # value the switch gives when given, and the other one.
        given = _flag_value(cmd, f, None)
        assert _set_value(cmd, key, f, str(given).lower()) is given
        assert _set_value(cmd, key, f, str(not given).lower()) is (not given)
        return
    texts = choices_of(flag) or TEXTS
    for text in texts:
        want = _flag_value(cmd, f, text)
        if f.name in SINGULAR and key in AXES and want != REFUSED:
            want = (want,)
        assert _set_value(cmd, key, f, text) == want, (cmd, key, text)


def test_set_seeds_1_is_one_draw_as_run_seeds_1() -> None:
    # The case of the issue, by hand: `nlieval run --seeds 1` draws once, with seed 0.
    f = setting_fields("run")["seeds"]
    assert _set_value("run", "seeds", f, "1") == (0,)
    assert AXIS_FIELDS["seeds"][0] == "seeds"


def _file_value(cmd: str, key: str, f: Field[Any], text: str) -> Any:
    # The value a cell gets from `KEY: TEXT` (one value, not a list) in its matrix entry.
    model = command(cmd).model_field is not None
    entry = f"{{block: b, {'models: [a], ' if model else ''}{key}: {json.dumps(text)}}}"
    try:
        exp = parse_experiment(
            ("models: {a: smollm2-135m}\n" if model else "")
            + f"blocks: {{b: {{command: {cmd}}}}}\nmatrix: [{entry}]\n",
            "e.yaml",
        )
        values = dict(read_axis_texts(exp).matrix[0].axes)[key]
        if f.name in SINGULAR:
            return tuple(coerce(f, Setting(f.name, v, "e.yaml", None)) for v in values)
        return coerce(f, Setting(f.name, list(values), "e.yaml", None))
    except DataError:
        return REFUSED


def _axis_cases() -> list[tuple[str, str, str]]:
    # Each command and axis, with the field the axis feeds (the first the command takes).
    out = []
    for cmd in COMMAND_NAMES:
        for axis in AXES[1:]:
            name = next((n for n in AXIS_FIELDS[axis] if n in setting_fields(cmd)), None)
            if name is not None:
                out.append((cmd, axis, name))
    return out


@pytest.mark.parametrize(("cmd", "axis", "name"), _axis_cases())
def test_an_axis_value_in_the_file_reads_as_set_reads_it(cmd: str, axis: str, name: str) -> None:
    # One reader of values: `seeds: 3` in a matrix entry is what `--set seeds=3` is.
    f = setting_fields(cmd)[name]
    for text in TEXTS:
        assert _file_value(cmd, axis, f, text) == _set_value(cmd, axis, f, text), (cmd, text)


def test_seeds_3_in_a_matrix_entry_is_three_draws() -> None:
    # docs/experiments.md: `seeds: 3` is seeds 0, 1, 2 (as `nlieval run --seeds 3`);
    # a list names the seeds themselves. The same in a block an `each` sweeps.
    head = "models: {a: smollm2-135m}\nblocks: {b: {command: run, tasks: [smoke]"

    def cells(block: str, entry: str) -> list[tuple[str, Any]]:
        exp = parse_experiment(f"{head}{block}}}}}\nmatrix: [{{block: b, models: [a]{entry}}}]\n",
                               "e.yaml")  # fmt: skip
        return [(c.name, c.config["seeds"]) for c in plan_cells(exp, estimate=False)]

    assert cells("", ", seeds: 3") == [("b-a", [0, 1, 2])]
    assert cells("", ", seeds: [3]") == [("b-a", [3])]
    assert cells(", seeds: 3", "") == [("b-a", [0, 1, 2])]
    assert cells(", seeds: 3", ", each: [seeds]") == [
        ("b-a-seed0", [0]),
        ("b-a-seed1", [1]),
        ("b-a-seed2", [2]),
    ]
