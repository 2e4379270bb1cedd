"""The commands a block may name (those of the one table, :data:`nlieval.commands.TABLE`,
with a ``block``), each with the settings classes its flags come from and the function
that writes a cell's folder (calling the library function its ``nlieval`` command calls).

A block's settings are exactly the fields of those classes (the flag's name without
``--``, with ``_``: ``batch_size``, ``save_prompts``); :func:`build_config` builds the
classes from a block's settings the way the command line does (a text is read by the
flag's own parser, so ``shots: "0,5"`` and ``shots: [0, 5]`` mean ``--shots 0,5``).

>>> from nlieval.experiments.spec import Setting
>>> s = [Setting("tasks", ["smoke"], "e.yaml", 3), Setting("shots", [0, 5], "e.yaml", 4)]
>>> cfg, = build_config("run", "smollm2-135m", s, "e.yaml", 2)
>>> cfg.tasks, cfg.shots, cfg.seeds
(('smoke',), (0, 5), (0,))
>>> bad = [Setting("tsks", ["smoke"], "e.yaml", 3)]
>>> build_config("run", "m", bad, "e.yaml", 2)  # doctest: +ELLIPSIS
Traceback (most recent call last):
nlieval.ground.errors.DataError: e.yaml:3: field 'tsks': not a setting of command run...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, Field, dataclass, fields
from pathlib import Path
from typing import Any

from ..commands import BLOCKS, TABLE, Block, load
from ..ground import DataError, SettingError
from ..settings import (
    UNSET,
    flag_names,
    flag_of,
    from_flat_dict,
    options_of,
    read_value,
    value_schema,
)
from .spec import Setting, suggest

#: The fields a cell's folder sets itself: never a block's setting.
DRIVER_FIELDS = ("out", "overwrite", "progress")


def _block(name: str) -> Block:
    # What a block of command `name` runs, from the one table (KeyError: none such).
    block = TABLE[name].block if name in BLOCKS else None
    if block is None:
        raise KeyError(name)
    return block


@dataclass(frozen=True)
class Command:
    """A command of a block: its settings classes (the first holds ``model``), the
    function that runs a cell (its configs, its folder) and which axis of the matrix
    feeds which setting."""

    name: str
    classes: tuple[type[Any], ...]
    execute: Callable[[Sequence[Any], Path], None]
    #: the setting a model's name goes to (None: the command takes no model)
    model_field: str | None = "model"


def write_run(configs: Sequence[Any], out: Path) -> None:
    """A cell of ``run``: the run folder of :func:`nlieval.choice.run`."""
    from ..choice import run

    run(configs[0], out, progress=False)


def write_instruct(configs: Sequence[Any], out: Path) -> None:
    """A cell of ``instruct``: the run folder of :func:`nlieval.sci.run_instruct`."""
    from ..sci import run_instruct

    run_instruct(configs[0], out, progress=False)


def write_train(configs: Sequence[Any], out: Path) -> None:
    """A cell of ``train``: the folder of :func:`nlieval.sci.train_classifier`, resumed."""
    from ..sci import train_classifier

    train_classifier(dataclasses.replace(configs[0], out=str(out)), progress=False, resume=True)


def write_generate(configs: Sequence[Any], out: Path) -> None:
    """A cell of ``generate``: the task folder of
    :func:`nlieval.metainference.generate_items` (RunError: premises left to answer)."""
    from ..metainference import generate_items
    from ..runs import RunError

    chat, config = configs
    summary = generate_items(chat.resolve(), config, out, progress=False)
    if summary.stopped:
        raise RunError(f"stopped: {summary.stopped}")


def write_import(configs: Sequence[Any], out: Path) -> None:
    """A cell of ``import``: the run folder of
    :func:`nlieval.analyses.import_predictions`."""
    from ..analyses import import_predictions

    import_predictions(configs[0], out)


def write_infer_build(configs: Sequence[Any], out: Path) -> None:
    """A cell of ``infer-build``: the items of
    :func:`nlieval.metainference.build_inferred`."""
    from ..metainference import build_inferred

    # The items are a function of the settings: a cell cut short writes them again whole.
    build_inferred(dataclasses.replace(configs[0], out=str(out), overwrite=True))


def write_contamination(configs: Sequence[Any], out: Path) -> None:
    """A cell of ``contamination``: the per-item scores of the scan
    (:data:`SCORES`)."""
    from ..contamination import contamination_report
    from ..runs import make_folder

    make_folder(out)
    # The scan alone: EPG is an output (it joins the scores with the run cells).
    cfg = dataclasses.replace(configs[0], out=str(out / SCORES), run=None, plot=None)
    contamination_report(cfg)


#: The per-item scores in a contamination cell's folder.
SCORES = "scores.jsonl"


#: The commands a block may name (each a command of the table with a ``block``).
COMMAND_NAMES = BLOCKS

#: A setting without which a block of the command makes no cell (the file leaves that
#: part of the study out until it is given, e.g. ``--set contamination.corpus=PATH``).
OPTIONAL_INPUT = {n: _block(n).optional_input for n in BLOCKS if _block(n).optional_input}


def _classes(name: str) -> tuple[type[Any], ...]:
    # Imported when a block names the command: each family loads its own libraries.
    return tuple(load(ref) for ref in _block(name).classes)


def command(name: str) -> Command:
    """The command ``name`` (KeyError: none such).

    >>> command("run").classes[0].__name__
    'RunConfig'
    """
    block = _block(name)
    return Command(name, _classes(name), load(block.write), block.model_field)


def _fields(cls: type[Any], in_options: bool = False) -> Iterator[tuple[Field[Any], bool]]:
    """Each setting field of ``cls`` (and of the options it holds, and theirs), with
    whether it belongs to options."""
    for f in fields(cls):
        opt = options_of(f)
        if opt is not None:
            yield from _fields(opt.cls, in_options=True)
        elif in_options:
            if flag_of(f) is not None:
                yield f, True
        elif f.name not in DRIVER_FIELDS and (
            flag_of(f) is not None or f.name == "runs" or f.name == "files"
        ):
            yield f, False


def setting_fields(name: str) -> dict[str, Field[Any]]:
    """The settings of command ``name`` by key (KeyError: no such command).

    >>> "limit" in setting_fields("run"), "out" in setting_fields("train")
    (True, False)
    """
    out: dict[str, Field[Any]] = {}
    for cls in _classes(name):
        for f, _ in _fields(cls):
            if f.name not in TABLE[name].unused:
                out.setdefault(f.name, f)
    return out


def setting_keys(name: str) -> list[str]:
    """The keys a block of command ``name`` may set."""
    return list(setting_fields(name))


def takes(name: str, key: str) -> bool:
    """Whether command ``name`` has the setting ``key`` (False for an unknown command).

    >>> takes("run", "limit"), takes("train", "shots"), takes("nope", "limit")
    (True, False, False)
    """
    try:
        return key in setting_fields(name)
    except KeyError:
        return False


def engine_option_keys() -> list[str]:
    """The keys a model entry may give besides ``model`` and ``resources``: the engine
    options of every command (dtype, device_map, api_base, ...)."""
    keys: dict[str, None] = {}
    for name in COMMAND_NAMES:
        for cls in _classes(name):
            for f, in_options in _fields(cls):
                if in_options:
                    keys[f.name] = None
    return list(keys)


def coerce(f: Field[Any], s: Setting) -> Any:
    """The value of setting ``s`` for field ``f``, read as its flag reads it; a value the
    flag would refuse is ``s``'s one-line error.

    >>> from nlieval.choice import RunConfig
    >>> shots = {f.name: f for f in fields(RunConfig)}["shots"]
    >>> coerce(shots, Setting("shots", [0, 5], "e.yaml", 3))
    (0, 5)
    >>> coerce(shots, Setting("shots", "0,2", "--set", None))
    (0, 2)
    >>> coerce(shots, Setting("shots", [-1], "e.yaml", 3))
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: e.yaml:3: field 'shots': shot counts are 0 or more, got '-1,'
    >>> from nlieval.reports import GridConfig
    >>> name = {f.name: f for f in fields(GridConfig)}["name"]
    >>> coerce(name, Setting("name", ["smol=SmolLM2 135M", "Gemma"], "e.yaml", 5))
    (('smol', 'SmolLM2 135M'), ('', 'Gemma'))
    """
    try:
        return read_value(f, s.value)
    except ValueError as err:
        raise s.error(str(err)) from None


def build_config(
    name: str,
    model: str | None,
    settings: Sequence[Setting],
    source: str,
    line: int | None,
) -> tuple[Any, ...]:
    """The settings classes of command ``name`` built from ``settings`` (and ``model``),
    as its command line would build them; an unknown key, a bad value or a config the
    class refuses is one DataError naming ``source``, the line and the key (``line``:
    the block's, for what no one key is to blame)."""
    known = setting_fields(name)
    flat: dict[str, Any] = {}
    for s in settings:
        f = known.get(s.key)
        if f is None:
            raise s.error(f"not a setting of command {name}{suggest(s.key, known)}")
        flat[s.key] = coerce(f, s)
    com = command(name)
    if model is not None and com.model_field is not None:
        flat[com.model_field] = model
    out = []
    for cls in com.classes:
        missing = [
            f.name
            for f, in_options in _fields(cls)
            if not in_options
            and f.default is MISSING
            and f.default_factory is MISSING
            and f.name not in flat
            and (flag_of(f) is None or flag_of(f).cli_default is UNSET)  # type: ignore[union-attr]
        ]
        if missing:
            raise DataError(
                source, line, missing[0], f"command {name} needs the setting {missing[0]!r}"
            )
        kw = dict(flat)
        for f in fields(cls):
            if f.name == "out" and f.default is MISSING and f.default_factory is MISSING:
                kw["out"] = "DIR"  # the cell's folder, given when the cell runs
            flag = flag_of(f)
            if (
                f.name not in kw
                and flag is not None
                and flag.cli_default is not UNSET
                and f.default is MISSING
            ):
                kw[f.name] = flag.cli_default
        try:
            out.append(from_flat_dict(cls, kw))
        except (ValueError, TypeError) as err:
            # A setting's check names the settings: here they are the block's keys
            # (the model's flag stays, for the experiment's wording of the model).
            model_field = known.get(com.model_field or "")
            kept = flag_names(model_field) if model_field is not None else ()
            said = err.said_to(kept) if isinstance(err, SettingError) else str(err)
            raise DataError(source, line, None, f"command {name}: {said}") from None
    return tuple(out)


def json_type(f: Field[Any]) -> dict[str, Any]:
    """A JSON Schema for the values of field ``f`` as a block may write them.

    >>> from nlieval.choice import RunConfig
    >>> json_type({f.name: f for f in fields(RunConfig)}["limit"])["type"]
    ['integer', 'null']
    """
    return value_schema(f)
