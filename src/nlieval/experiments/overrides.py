"""The ``--set KEY=VALUE`` overrides of an experiment file, and reading a file with them
(:func:`read_experiment`): so that a study's file runs on a laptop unchanged
(``--set models=smollm2-135m --set limit=20``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..ground import DataError, read_small_text
from .commands import setting_keys, takes
from .plan import AXIS_FIELDS, axis_values, read_axis_texts
from .spec import AXES, MAX_BYTES, Experiment, Setting, parse_experiment, suggest


def read_experiment(path: str | Path, overrides: Sequence[str] = ()) -> Experiment:
    """The experiment file at ``path`` with the ``--set KEY=VALUE`` ``overrides``
    applied (:func:`apply_overrides`); a bad file or override is one DataError."""
    text = read_small_text(path, MAX_BYTES)
    return apply_overrides(parse_experiment(text, str(path)), overrides)


def apply_overrides(exp: Experiment, overrides: Sequence[str]) -> Experiment:
    """``exp`` with each ``KEY=VALUE`` of ``overrides`` applied: ``models=a,b`` (and
    ``tasks``, ``shots``, ``seeds``, ``checkpoints``) replaces that axis in every matrix
    entry (the models must be named in ``models``); ``BLOCK.models=a,b`` replaces the
    models of that block's entries alone; ``BLOCK.KEY=VALUE`` sets one block's
    setting; any other ``KEY=VALUE`` sets it in every block (its text is read as the
    command-line flag of that setting would read it).

    >>> exp = parse_experiment('''
    ... models: {a: smollm2-135m, b: gemma3-270m}
    ... blocks: {base: {command: run, tasks: [snli], limit: 100}}
    ... matrix: [{block: base, models: [a, b]}]
    ... ''', "e.yaml")
    >>> exp = apply_overrides(exp, ["models=b", "limit=5"])
    >>> exp.matrix[0].models, exp.block("base").value("limit")
    (('b',), '5')
    >>> apply_overrides(exp, ["base.models=a"]).matrix[0].models
    ('a',)
    >>> apply_overrides(exp, ["modles=a"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: --set modles=a: ...; did you mean 'models'?
    """
    # The file's own values first, so that an override replaces values read as it is.
    exp = read_axis_texts(exp)
    for text in overrides:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise DataError("--set", None, None, f"expected KEY=VALUE, got {text!r}")
        src = f"--set {text}"
        block_name, dot, setting_key = key.rpartition(".")
        if (
            dot
            and setting_key in AXES[1:]
            and any(e.block == block_name and setting_key in dict(e.axes) for e in exp.matrix)
        ):
            # The block's entries give this axis: the override replaces it there.
            values = axis_values(exp.block(block_name).command, setting_key, value, src)
            exp = replace(
                exp,
                matrix=tuple(
                    replace(
                        e,
                        axes=tuple((a, values if a == setting_key else v) for a, v in e.axes),
                    )
                    if e.block == block_name
                    else e
                    for e in exp.matrix
                ),
            )
            continue
        if key in AXES or (dot and setting_key == "models"):
            values = tuple(v.strip() for v in value.split(",") if v.strip())
            if key == "models" or dot:
                names = [b.name for b in exp.blocks]
                if dot and block_name not in names:
                    raise DataError(
                        src, None, key, f"no block {block_name!r}{suggest(block_name, names)}"
                    )
                known = [m.name for m in exp.models]
                for m in values:
                    if m not in known:
                        raise DataError(
                            src,
                            None,
                            key,
                            f"no model {m!r} in {exp.source}'s models{suggest(m, known)} "
                            f"(the models: {', '.join(known) or 'none'})",
                        )
                exp = replace(
                    exp,
                    matrix=tuple(
                        replace(e, models=values) if not dot or e.block == block_name else e
                        for e in exp.matrix
                    ),
                )
            else:
                # Only where the block's command has the axis (a scan has no shots).
                commands = {b.name: b.command for b in exp.blocks}
                exp = replace(
                    exp,
                    matrix=tuple(
                        replace(
                            e,
                            axes=(
                                *[a for a in e.axes if a[0] != key],
                                (key, axis_values(commands[e.block], key, value, src)),
                            ),
                        )
                        if any(takes(commands.get(e.block, ""), f) for f in AXIS_FIELDS[key])
                        else e
                        for e in exp.matrix
                    ),
                )
            continue
        setting = Setting(setting_key, value, src, None)
        if dot:
            names = [b.name for b in exp.blocks]
            if block_name not in names:
                raise DataError(
                    src, None, key, f"no block {block_name!r}{suggest(block_name, names)}"
                )
            targets = [block_name]
        else:
            targets = [b.name for b in exp.blocks if takes(b.command, setting_key)]
            if not targets:
                known_keys = sorted(
                    {k for b in exp.blocks for k in _keys_of(b.command)} | set(AXES)
                )
                raise DataError(
                    src, None, key, f"no block has a setting {key!r}{suggest(key, known_keys)}"
                )
        exp = replace(
            exp,
            blocks=tuple(
                replace(b, settings=(*[s for s in b.settings if s.key != setting_key], setting))
                if b.name in targets
                else b
                for b in exp.blocks
            ),
        )
    return exp


def _keys_of(command: str) -> tuple[str, ...]:
    try:
        return tuple(setting_keys(command))
    except KeyError:
        return ()
