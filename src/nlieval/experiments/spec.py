"""The experiment file: what it may say, read into small frozen types.

An experiment file is YAML (read by :func:`nlieval.ground.load_yaml`: no aliases, no key
given twice, bounded) with four sections: ``models`` (a name for each model string, its
engine options and the resources a cell of it needs), ``blocks`` (a command and its
settings, declared once), ``matrix`` (which models, tasks, shots, seeds and checkpoints
each block is run over) and ``outputs`` (the tables and figures made from the blocks'
run folders). :func:`read_experiment` reads one, applies the ``--set`` overrides and
checks every name it can without loading anything; a bad file is one
:class:`~nlieval.ground.DataError` naming the file, the line and the key.

>>> exp = parse_experiment('''
... models:
...   tiny: {model: smollm2-135m, resources: {gpus: 1, memory: 8GB}}
... blocks:
...   base: {command: run, tasks: [smoke], limit: 4}
... matrix:
...   - {block: base, models: [tiny], shots: [0, 2]}
... ''', "e.yaml")
>>> exp.model("tiny").resources.gpus, exp.block("base").value("limit")
(1, 4)
>>> exp.matrix[0].axes
(('shots', (0, 2)),)
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ground import DataError, load_yaml

#: The axes a matrix entry may sweep; ``models`` is the axis every entry has.
AXES = ("models", "tasks", "shots", "seeds", "checkpoints")

#: The keys of a matrix entry besides its axes.
MATRIX_KEYS = ("block", "each")

#: The keys of an output besides the options of its kind.
OUTPUT_KEYS = ("kind", "label", "blocks")

#: The keys of a model besides its engine options.
MODEL_KEYS = ("model", "resources")

#: The keys of the file itself.
TOP_KEYS = (
    "experiment",
    "description",
    "retries",
    "backoff",
    "models",
    "blocks",
    "matrix",
    "outputs",
)

#: A name of a model, block or output: it becomes part of a folder's or file's name.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

#: The most bytes an experiment file may have.
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Setting:
    """One key of a block, a model's engine options or an output: its value as the
    file (or a ``--set``) gives it, and where (``source`` and ``line``, for errors)."""

    key: str
    value: Any
    source: str
    line: int | None

    def error(self, message: str) -> DataError:
        """The one-line error of this setting.

        >>> str(Setting("limit", "x", "e.yaml", 4).error("expected a count"))
        "e.yaml:4: field 'limit': expected a count"
        """
        return DataError(self.source, self.line, self.key, message)


@dataclass(frozen=True)
class Resources:
    """What one cell of a model needs from the machine that runs it (an executor that
    places cells reads these; the local executor runs cells one after another)."""

    gpus: int = 0
    memory: str | None = None
    time: str | None = None


#: How long a cell's job may wait in the queue and run when its model declares no time.
DEFAULT_MINUTES = 60

#: A time limit as Slurm takes it: MM, MM:SS, H:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS.
TIME = re.compile(r"(?:(\d+)-(\d+)(?::(\d+))?(?::(\d+))?|(\d+)(?::(\d+))?(?::(\d+))?)")

#: A memory size with its unit (a bare number is megabytes to Slurm: a silent 8 MB).
MEMORY = re.compile(r"\s*(\d+)\s*([KMGT])i?B?\s*", re.IGNORECASE)


def minutes(time_limit: str | None) -> int:
    """A time limit (:data:`TIME`) in whole minutes, at least 1; ValueError if it is none.

    >>> minutes("1:30:00"), minutes("2-00:00:00"), minutes("45"), minutes("1-2"), minutes(None)
    (90, 2880, 45, 1560, 60)
    """
    if time_limit is None:
        return DEFAULT_MINUTES
    match = TIME.fullmatch(str(time_limit).strip())
    if match is None:
        raise ValueError(
            f"time {time_limit!r} is not a time limit such as 45, 4:00:00 or 2-00:00:00"
        )
    g = [int(x) if x else 0 for x in match.groups()]
    if match.group(1) is not None:  # D-HH[:MM[:SS]]
        total = g[0] * 1440 + g[1] * 60 + g[2] + (1 if g[3] else 0)
    elif match.group(7) is not None:  # H:MM:SS
        total = g[4] * 60 + g[5] + (1 if g[6] else 0)
    else:  # MM[:SS]
        total = g[4] + (1 if g[5] else 0)
    return max(1, total)


def memory(text: str | None) -> str | None:
    """A memory size (:data:`MEMORY`) as Slurm's ``--mem`` writes it; ValueError if it is
    none.

    >>> memory("40GB"), memory("512MB"), memory("8G"), memory(None)
    ('40G', '512M', '8G', None)
    """
    if text is None:
        return None
    match = MEMORY.fullmatch(str(text))
    if match is None:
        raise ValueError(f"memory {text!r} is not a size with its unit, such as 8GB or 512MB")
    return match.group(1) + match.group(2).upper()


@dataclass(frozen=True)
class ModelEntry:
    """A model of the file: its ``name`` in the matrix, the model string, its engine
    options (settings of the engines' option classes) and its resources."""

    name: str
    model: str
    options: tuple[Setting, ...]
    resources: Resources
    line: int | None


@dataclass(frozen=True)
class Block:
    """A command (``run``, ``instruct``, ...) with its settings, declared once."""

    name: str
    command: str
    settings: tuple[Setting, ...]
    line: int | None

    def value(self, key: str, default: Any = None) -> Any:
        """The value the block gives ``key`` (``default`` when it gives none)."""
        for s in self.settings:
            if s.key == key:
                return s.value
        return default


@dataclass(frozen=True)
class MatrixEntry:
    """A block run over models and, optionally, other axes (``tasks``, ``shots``,
    ``seeds``, ``checkpoints``: values of the block's settings of those names). An axis
    named in ``each`` gives one cell per value; the others are swept inside one run
    folder (which resumes and grows on its own). ``texts``: the axes given as one value
    rather than a list (``seeds: 3``), whose text the plan reads as the command's flag
    reads it (:func:`nlieval.experiments.plan.axis_values`), as ``--set`` does."""

    block: str
    models: tuple[str, ...]
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    each: tuple[str, ...]
    line: int | None
    texts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Output:
    """A table or figure of the report: its ``kind`` (``grid``, ``figure``, ...), the
    study's ``label`` (``Table 3``), the blocks whose cells it reads and its options."""

    name: str
    kind: str
    label: str | None
    blocks: tuple[str, ...]
    options: tuple[Setting, ...]
    line: int | None


@dataclass(frozen=True)
class Experiment:
    """An experiment file as read (with its ``--set`` overrides applied)."""

    source: str
    name: str
    description: str
    models: tuple[ModelEntry, ...]
    blocks: tuple[Block, ...]
    matrix: tuple[MatrixEntry, ...]
    outputs: tuple[Output, ...]
    retries: int = 2
    backoff: float = 5.0

    def model(self, name: str) -> ModelEntry:
        """The model named ``name`` (KeyError: none)."""
        return {m.name: m for m in self.models}[name]

    def block(self, name: str) -> Block:
        """The block named ``name`` (KeyError: none)."""
        return {b.name: b for b in self.blocks}[name]


class _Lines:
    """The line of each key and list item of a YAML document, by its path."""

    def __init__(self, text: str) -> None:
        import yaml

        self.lines: dict[tuple[Any, ...], int] = {}
        # load_yaml has refused aliases, duplicate keys and bad YAML already.
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is not None:
            self._walk(root, ())

    def _walk(self, node: Any, path: tuple[Any, ...]) -> None:
        import yaml

        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = (*path, key.value)
                self.lines.setdefault(sub, key.start_mark.line + 1)
                self._walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                self.lines[(*path, i)] = value.start_mark.line + 1
                self._walk(value, (*path, i))

    def __call__(self, *path: Any) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


def suggest(word: str, known: Iterable[str]) -> str:
    """``; did you mean 'x'?`` when a known word is close to ``word``, else ``''``.

    >>> suggest("tsks", ["tasks", "shots"])
    "; did you mean 'tasks'?"
    """
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def parse_experiment(text: str, source: str) -> Experiment:
    """The experiment of the YAML ``text`` (``source`` names it in errors). Checks the
    shape and the names that refer to each other; the settings of each block are
    checked against its command when the cells are planned (:mod:`.plan`).

    >>> parse_experiment("blocks: {b: {command: run}}\\nmatrix: [{block: c, models: []}]", "e.yaml")
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: e.yaml:2: field 'block': no block 'c' in blocks (the blocks: b)
    """
    doc = load_yaml(text, source)
    lines = _Lines(text)
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise DataError(source, 1, None, f"expected a mapping of {', '.join(TOP_KEYS)}")
    _known(doc, TOP_KEYS, source, lines, (), "key of an experiment file")

    def where(*path: Any) -> int | None:
        return lines(*path)

    def section(key: str, kind: type) -> Any:
        value = doc.get(key)
        if value is None:
            return kind()
        if not isinstance(value, kind):
            need = "a mapping" if kind is dict else "a list"
            raise DataError(source, where(key), key, f"expected {need}, found {_type(value)}")
        return value

    models = tuple(
        _model(name, body, source, where, ("models", name))
        for name, body in section("models", dict).items()
    )
    blocks = tuple(
        _block(name, body, source, where, ("blocks", name))
        for name, body in section("blocks", dict).items()
    )
    block_names = [b.name for b in blocks]
    model_names = [m.name for m in models]
    matrix = tuple(
        _entry(i, body, source, where, block_names, model_names)
        for i, body in enumerate(section("matrix", list))
    )
    outputs = tuple(
        _output(name, body, source, where, block_names)
        for name, body in section("outputs", dict).items()
    )
    retries = _int_of(doc.get("retries", 2), source, where("retries"), "retries", 0, 10)
    backoff = doc.get("backoff", 5.0)
    if (
        isinstance(backoff, bool)
        or not isinstance(backoff, (int, float))
        or not 0 <= backoff <= 3600
    ):
        raise DataError(
            source,
            where("backoff"),
            "backoff",
            f"expected seconds from 0 to 3600, found {backoff!r}",
        )
    name = doc.get("experiment", Path(source).stem)
    description = doc.get("description", "")
    for key, value in (("experiment", name), ("description", description)):
        if not isinstance(value, str):
            raise DataError(source, where(key), key, f"expected text, found {_type(value)}")
    return Experiment(
        source,
        str(name),
        str(description),
        models,
        blocks,
        matrix,
        outputs,
        retries,
        float(backoff),
    )


def _type(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _known(
    body: Mapping[Any, Any],
    allowed: Iterable[str],
    source: str,
    lines: Callable[..., int | None],
    path: tuple[Any, ...],
    what: str,
) -> None:
    allowed = list(allowed)
    for key in body:
        if key not in allowed:
            raise DataError(
                source,
                lines(*path, key),
                str(key),
                f"not a {what} (those are: {', '.join(allowed)}){suggest(str(key), allowed)}",
            )


def _name(name: Any, source: str, line: int | None, what: str) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise DataError(
            source,
            line,
            str(name),
            f"a {what} name is 1-64 letters, digits, '.', '_' or '-' (it names folders and files)",
        )
    return name


def _mapping(body: Any, source: str, line: int | None, key: str) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise DataError(source, line, key, f"expected a mapping, found {_type(body)}")
    return body


def _settings(
    body: Mapping[str, Any],
    skip: Iterable[str],
    source: str,
    where: Callable[..., int | None],
    path: tuple[Any, ...],
) -> tuple[Setting, ...]:
    skip = set(skip)
    return tuple(
        Setting(str(k), v, source, where(*path, k)) for k, v in body.items() if k not in skip
    )


def _model(
    name: Any, body: Any, source: str, where: Callable[..., int | None], path: tuple[Any, ...]
) -> ModelEntry:
    line = where(*path)
    name = _name(name, source, line, "model")
    if isinstance(body, str):  # `name: model-string`, the short form
        body = {"model": body}
    body = _mapping(body, source, line, name)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise DataError(source, line, "model", f"model {name!r} needs a model string (model: ...)")
    res = _mapping(body.get("resources"), source, where(*path, "resources"), "resources")
    _known(res, ("gpus", "memory", "time"), source, where, (*path, "resources"), "resource")
    gpus = _int_of(res.get("gpus", 0), source, where(*path, "resources", "gpus"), "gpus", 0, 64)
    text = {}
    for key in ("memory", "time"):
        value = res.get(key)
        if value is not None and not isinstance(value, (str, int)):
            raise DataError(
                source, where(*path, "resources", key), key, f"expected text, found {_type(value)}"
            )
        text[key] = None if value is None else str(value)
        try:
            (memory if key == "memory" else minutes)(text[key])
        except ValueError as err:
            raise DataError(source, where(*path, "resources", key), key, str(err)) from None
    options = _settings(body, MODEL_KEYS, source, where, path)
    return ModelEntry(name, model, options, Resources(gpus, text["memory"], text["time"]), line)


def _block(
    name: Any, body: Any, source: str, where: Callable[..., int | None], path: tuple[Any, ...]
) -> Block:
    line = where(*path)
    name = _name(name, source, line, "block")
    body = _mapping(body, source, line, name)
    command = body.get("command")
    if not isinstance(command, str):
        raise DataError(
            source, line, "command", f"block {name!r} needs a command (command: run, ...)"
        )
    return Block(name, command, _settings(body, ("command",), source, where, path), line)


def _list(value: Any, source: str, line: int | None, key: str) -> tuple[Any, ...]:
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return (value,)
    raise DataError(source, line, key, f"expected a list, found {_type(value)}")


def _entry(
    i: int,
    body: Any,
    source: str,
    where: Callable[..., int | None],
    blocks: Sequence[str],
    models: Sequence[str],
) -> MatrixEntry:
    path = ("matrix", i)
    line = where(*path)
    body = _mapping(body, source, line, f"matrix[{i}]")
    _known(body, (*MATRIX_KEYS, *AXES), source, where, path, "key of a matrix entry")
    block = body.get("block")
    if block not in blocks:
        raise DataError(
            source,
            where(*path, "block"),
            "block",
            f"no block {block!r} in blocks (the blocks: {', '.join(blocks) or 'none'})",
        )
    names = tuple(
        str(m) for m in _list(body.get("models", []), source, where(*path, "models"), "models")
    )
    for j, m in enumerate(names):
        if m not in models:
            raise DataError(
                source,
                where(*path, "models", j),
                "models",
                f"no model {m!r} in models{suggest(m, models)} "
                f"(the models: {', '.join(models) or 'none'})",
            )
    axes = tuple(
        (axis, _list(body[axis], source, where(*path, axis), axis))
        for axis in AXES[1:]
        if axis in body
    )
    each = tuple(str(a) for a in _list(body.get("each", []), source, where(*path, "each"), "each"))
    for a in each:
        if a not in AXES[1:]:
            raise DataError(
                source,
                where(*path, "each"),
                "each",
                f"not an axis: {a!r} (the axes: {', '.join(AXES[1:])})",
            )
    texts = tuple(a for a in AXES[1:] if a in body and not isinstance(body[a], list))
    return MatrixEntry(str(block), names, axes, each, line, texts)


def _output(
    name: Any, body: Any, source: str, where: Callable[..., int | None], blocks: Sequence[str]
) -> Output:
    path = ("outputs", name)
    line = where(*path)
    name = _name(name, source, line, "output")
    body = _mapping(body, source, line, name)
    kind = body.get("kind")
    if not isinstance(kind, str):
        raise DataError(source, line, "kind", f"output {name!r} needs a kind (kind: grid, ...)")
    label = body.get("label")
    if label is not None and not isinstance(label, str):
        raise DataError(
            source, where(*path, "label"), "label", f"expected text, found {_type(label)}"
        )
    used = tuple(
        str(b) for b in _list(body.get("blocks", []), source, where(*path, "blocks"), "blocks")
    )
    if not used:
        raise DataError(source, line, "blocks", f"output {name!r} reads no block (blocks: [...])")
    for j, b in enumerate(used):
        if b not in blocks:
            raise DataError(
                source,
                where(*path, "blocks", j),
                "blocks",
                f"no block {b!r} in blocks{suggest(b, blocks)} "
                f"(the blocks: {', '.join(blocks) or 'none'})",
            )
    return Output(name, kind, label, used, _settings(body, OUTPUT_KEYS, source, where, path), line)


def _int_of(value: Any, source: str, line: int | None, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DataError(
            source, line, key, f"expected an integer from {low} to {high}, found {value!r}"
        )
    return value
