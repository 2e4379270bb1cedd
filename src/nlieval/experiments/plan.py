"""The cells of an experiment: each matrix entry expanded over its models and the axes it
splits, each cell one command's run folder under ``DIR/cells/<name>``, its settings built
and checked by the command's own settings classes before anything runs.

>>> from nlieval.experiments.spec import parse_experiment
>>> exp = parse_experiment('''
... models: {a: smollm2-135m, b: gemma3-270m}
... blocks: {base: {command: run, tasks: [smoke], limit: 4}}
... matrix: [{block: base, models: [a, b], shots: [0, 2], each: [shots]}]
... ''', "e.yaml")
>>> [c.name for c in plan_cells(exp, estimate=False)]
['base-a-k0', 'base-a-k2', 'base-b-k0', 'base-b-k2']
>>> plan_cells(exp, estimate=False)[1].argv[:6]
('nlieval', 'run', '--model', 'smollm2-135m', '--task', 'smoke')
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Container, Mapping, Sequence
from dataclasses import Field, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..commands import command_line
from ..ground import DataError
from ..settings import flag_names, flag_of, flat_dict, non_default, read_text, read_value
from .commands import build_config, command, engine_option_keys, setting_fields, takes
from .spec import Experiment, MatrixEntry, ModelEntry, Resources, Setting, suggest

#: The most cells a file may expand to (a typo of a list is not a week of GPU time).
MAX_CELLS = 10_000

#: More cells than this: ``plan`` and ``run`` ask for ``--yes``.
ASK_ABOVE = 100

#: The setting each axis feeds, by preference (a singular one gives a cell per value).
AXIS_FIELDS = {
    "tasks": ("tasks", "task"),
    "shots": ("shots",),
    "seeds": ("seeds", "seed"),
    "checkpoints": ("checkpoints",),
}


@dataclass(frozen=True)
class Cell:
    """One run folder of the experiment: its name (and folder ``cells/<name>``), the
    block and model it comes from, the settings its command is given (the block's, the
    model's engine options, the matrix entry's axes), its command's whole configuration
    (``config``, defaults included, for display) and the part of it that differs from
    the defaults (``given``, what its identity hashes), the equivalent command line and
    the estimate of its work (records and prompt words; None: not estimated)."""

    name: str
    block: str
    command: str
    model_name: str | None
    model: str | None
    settings: tuple[Setting, ...]
    resources: Resources
    source: str
    line: int | None
    config: dict[str, Any]
    argv: tuple[str, ...]
    records: int | None = None
    words: int | None = None
    #: the cells whose folders this one reads (``{cells:BLOCK}`` in its settings): it
    #: runs after them, and not at all when one of them failed
    needs: tuple[str, ...] = ()
    #: the identities of the cells in ``needs``, in that order: a cell reading another
    #: one's folder is another cell when that one's configuration changed
    inputs: tuple[str, ...] = ()
    #: ``config`` less every setting at its default (:func:`nlieval.settings.non_default`)
    given: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> str:
        """A digest of the cell's command, its configuration as chosen (``given``: the
        settings that differ from their defaults, and the fields its run folder checks
        to resume, IDENTITY, at their present values) and the identities of the cells it
        reads: a cell done under another one is run again (its folder then resumes,
        grows or refuses, as the command decides).

        A setting a later version adds with a default leaves the identity as it was, so
        done cells stay done. A default that a later version changes in an IDENTITY
        field changes it: the cell runs again and its folder refuses the other value in
        one line. A changed default of another setting (tasks, shots or limit, whose
        records are their own points) keeps done cells done with the records their
        ``config.json`` describes.
        """
        body = {"command": self.command, "config": self.given, "inputs": self.inputs}
        text = json.dumps(body, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def configs(self, cells_dir: str | Path | None = None) -> tuple[Any, ...]:
        """The command's settings classes of this cell, built again (they are not kept:
        a cell travels to an executor as plain data); ``cells_dir``: the folder of the
        cells, where a setting's ``{cell:NAME}`` points (None: left as written)."""
        settings = self.settings
        if cells_dir is not None:
            settings = tuple(_located(s, Path(cells_dir)) for s in settings)
        return build_config(self.command, self.model, settings, self.source, self.line)

    def to_dict(self) -> dict[str, Any]:
        """The cell as ``experiment.json`` keeps it."""
        return {
            "name": self.name,
            "block": self.block,
            "command": self.command,
            "model": self.model_name,
            "config": self.config,
            "given": self.given,
            "identity": self.identity,
            "argv": list(self.argv),
            "records": self.records,
            "words": self.words,
            "needs": list(self.needs),
            "resources": {
                "gpus": self.resources.gpus,
                "memory": self.resources.memory,
                "time": self.resources.time,
            },
        }


#: A block's setting that names another block's folders: ``{cells:BLOCK}`` (in a cell,
#: ``{cell:NAME}``, NAME the one cell of BLOCK it reads).
REFERENCE = re.compile(r"\{cells:([^{}]*)\}")
_LOCATED = re.compile(r"\{cell:([^{}]*)\}")


def _texts(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def references(settings: Sequence[Setting]) -> list[tuple[Setting, str]]:
    """Each ``{cells:BLOCK}`` in ``settings``, with its setting.

    >>> references([Setting("tasks", ["{cells:items}/task.yaml"], "e.yaml", 4)])[0][1]
    'items'
    """
    return [(s, m) for s in settings for t in _texts(s.value) for m in REFERENCE.findall(t)]


def _map_texts(value: Any, fn: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [fn(str(v)) if isinstance(v, str) else v for v in value]
    return fn(value) if isinstance(value, str) else value


def _located(s: Setting, cells_dir: Path) -> Setting:
    def fn(text: str) -> str:
        return _LOCATED.sub(lambda m: str(cells_dir / m.group(1)), text)

    return Setting(s.key, _map_texts(s.value, fn), s.source, s.line)


def _resolve(
    settings: list[Setting], model: str | None, planned: dict[str, list[Cell]], blocks: Any
) -> tuple[list[Setting], tuple[str, ...]]:
    """``settings`` with each ``{cells:BLOCK}`` made ``{cell:NAME}``: the cell of BLOCK
    of the same model, or BLOCK's one cell; and the names of those cells."""
    needs: list[str] = []
    out = []
    for s in settings:

        def fn(text: str, s: Setting = s) -> str:
            def one(m: re.Match[str]) -> str:
                block = m.group(1)
                if block not in planned:
                    raise s.error(
                        f"{{cells:{block}}} names no block the matrix runs{suggest(block, blocks)}"
                    )
                cells = planned[block]
                same = [c for c in cells if c.model_name is not None and c.model_name == model]
                found = same if same else cells
                if len(found) != 1:
                    raise s.error(
                        f"{{cells:{block}}} is ambiguous: block {block} has {len(found)} cells "
                        f"({', '.join(c.name for c in found)}) and none of model {model}"
                    )
                if found[0].name not in needs:
                    needs.append(found[0].name)
                return f"{{cell:{found[0].name}}}"

            return REFERENCE.sub(one, text)

        out.append(Setting(s.key, _map_texts(s.value, fn), s.source, s.line))
    return out, tuple(needs)


def _has_input(b: Any) -> bool:
    from .commands import OPTIONAL_INPUT

    keys = OPTIONAL_INPUT.get(b.command)
    return keys is None or any(b.value(k) not in (None, "", [], ()) for k in keys)


def _ordered(exp: Experiment) -> list[MatrixEntry]:
    """The matrix entries, each after those of the blocks its settings name (a cycle is
    one error naming the entry's line)."""
    blocks = {b.name: b for b in exp.blocks}
    left = list(exp.matrix)
    order: list[MatrixEntry] = []
    while left:
        waiting = {e.block for e in left}
        ready = [
            e
            for e in left
            if not ({b for _, b in references(blocks[e.block].settings)} & (waiting - {e.block}))
        ]
        if not ready:
            e = left[0]
            raise DataError(
                exp.source,
                e.line,
                "matrix",
                f"block {e.block} waits for itself through {{cells:...}} references (a cycle)",
            )
        order += ready
        left = [e for e in left if e not in ready]
    return order


#: The fields of an axis that take one value, a cell per value (``--seed``, ``--task``).
SINGULAR = ("task", "seed")


def axis_values(
    command: str, axis: str, text: str, src: str, line: int | None = None
) -> tuple[str, ...]:
    """The values of ``axis`` (not ``models``) that ``--set AXIS=TEXT``, or ``AXIS: TEXT``
    (one value, not a list) in a matrix entry or in the block an ``each`` sweeps, gives
    a matrix entry of ``command``: ``TEXT`` read as the command's flag of that field reads it
    (``--seeds 1`` is one draw, seed 0; ``--shots 0,2``; ``--tasks a,b``), one value per
    cell where the field takes one (``--seed``, ``--task``: each comma-separated value).

    >>> axis_values("run", "seeds", "1", "--set seeds=1"), axis_values("run", "seeds", "3,", "")
    (('0',), ('3',))
    >>> axis_values("infer-build", "seeds", "1,2", ""), axis_values("run", "shots", "0, 2", "")
    (('1', '2'), ('0', '2'))
    >>> axis_values("run", "shots", "-1", "--set shots=-1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: --set shots=-1: field 'shots': shot counts are 0 or more, ...
    """
    each = tuple(v.strip() for v in text.split(",") if v.strip())
    name = next((n for n in AXIS_FIELDS[axis] if takes(command, n)), None)
    if name is None or name in SINGULAR:
        return each
    f = setting_fields(command)[name]
    flag = flag_of(f)
    if flag is None or flag.parse is None:
        return each
    try:
        return tuple(str(v) for v in read_text(f, text))
    except ValueError as err:
        raise DataError(src, line, axis, str(err)) from None


def read_axis_texts(exp: Experiment) -> Experiment:
    """``exp`` with each matrix axis given as one value (``seeds: 3``, ``shots: "0,2"``)
    read by :func:`axis_values`, as ``--set seeds=3`` is: so that a value in the file
    means what the flag means (``seeds: 3`` is seeds 0, 1, 2; ``seeds: [3]`` is seed 3).

    >>> from nlieval.experiments.spec import parse_experiment
    >>> exp = read_axis_texts(parse_experiment('''
    ... models: {a: m1}
    ... blocks: {base: {command: run, tasks: [smoke]}}
    ... matrix: [{block: base, models: [a], seeds: 3, shots: [2]}]
    ... ''', "e.yaml"))
    >>> exp.matrix[0].axes, exp.matrix[0].texts
    ((('shots', (2,)), ('seeds', ('0', '1', '2'))), ())
    """
    if not any(e.texts for e in exp.matrix):
        return exp
    commands = {b.name: b.command for b in exp.blocks}

    def read(e: MatrixEntry) -> MatrixEntry:
        axes = tuple(
            (a, axis_values(commands[e.block], a, str(v[0]), exp.source, e.line))
            if a in e.texts and len(v) == 1
            else (a, v)
            for a, v in e.axes
        )
        return replace(e, axes=axes, texts=())

    return replace(exp, matrix=tuple(read(e) for e in exp.matrix))


def _slug(value: Any) -> str:
    text = Path(str(value)).stem if "/" in str(value) else str(value)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


_PREFIX = {"shots": "k", "seeds": "seed", "tasks": "", "checkpoints": ""}


def _axis_field(cmd: str, axis: str, source: str, line: int | None) -> str:
    for name in AXIS_FIELDS[axis]:
        if takes(cmd, name):
            return name
    raise DataError(source, line, axis, f"command {cmd} has no setting for the axis {axis!r}")


def _check_tasks(s: Setting) -> None:
    from ..data import get_tasks

    tasks = s.value if isinstance(s.value, (list, tuple)) else str(s.value).split(",")
    try:
        get_tasks([str(t).strip() for t in tasks if str(t).strip()])
    except (ValueError, KeyError) as err:
        message = str(err).strip("'\"")
        from ..data import TASKS

        bad = next(
            (str(t) for t in tasks if str(t) not in TASKS and not Path(str(t)).exists()), None
        )
        hint = suggest(bad, TASKS) if bad else ""
        raise s.error(f"{message}{hint}") from None


def count_cells(exp: Experiment) -> int:
    """How many cells the matrix expands to, counted before any is made.

    >>> from nlieval.experiments.spec import parse_experiment
    >>> count_cells(parse_experiment('''
    ... models: {a: m1, b: m2}
    ... blocks: {base: {command: run, tasks: [smoke]}}
    ... matrix: [{block: base, models: [a, b], seeds: [0, 1, 2], each: [seeds]}]
    ... ''', "e.yaml"))
    6
    """
    exp = read_axis_texts(exp)
    total = 0
    for e in exp.matrix:
        total += _entry_count(exp, e)
    return total


def _entry_count(exp: Experiment, e: MatrixEntry) -> int:
    n = max(1, len(e.models))
    for _, _, values in _splits(exp, e):
        n *= max(1, len(values))
    return n


def _splits(exp: Experiment, e: MatrixEntry) -> list[tuple[str, str, tuple[Any, ...]]]:
    """The axes entry ``e`` makes a cell per value of, each with the setting it feeds and
    its values: those in ``each``, and an axis whose setting is singular (``task``,
    ``seed``). Counting and planning both read this, so the count is the plan's."""
    b = exp.block(e.block)
    axes = dict(e.axes)
    splits = []
    for axis in e.each:
        field = _axis_field(b.command, axis, exp.source, e.line)
        value = b.value(field)
        if axis not in axes and value is not None and not isinstance(value, (list, tuple)):
            # The block's one value is its flag's text (seeds: 3 is seeds 0, 1, 2), as the
            # block's own run reads it: a cell per value it gives.
            axes[axis] = axis_values(b.command, axis, str(value), exp.source, b.line)
        splits.append((axis, field, tuple(axes.get(axis, _as_list(value)))))
    for axis, values in e.axes:
        field = _axis_field(b.command, axis, exp.source, e.line)
        if field in SINGULAR and axis not in e.each:
            splits.append((axis, field, tuple(values)))  # a singular setting: one cell each
    return splits


def _as_list(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return tuple(v.strip() for v in str(value).split(",") if v.strip())


def plan_cells(exp: Experiment, *, estimate: bool = True) -> list[Cell]:
    """Every cell of ``exp``, in the file's order; a name collision, a setting its
    command lacks, an unknown task or a matrix of more than :data:`MAX_CELLS` cells is
    one DataError naming the file, the line and the key. ``estimate``: count each run
    cell's records and prompt words from its data (read, never a model)."""
    # An unknown command first: counting reads the settings of each block's command.
    for b in exp.blocks:
        try:
            command(b.command)
        except KeyError:
            from .commands import COMMAND_NAMES

            raise DataError(
                exp.source,
                b.line,
                "command",
                f"no command {b.command!r}{suggest(b.command, COMMAND_NAMES)} "
                f"(the commands: {', '.join(COMMAND_NAMES)})",
            ) from None
    exp = read_axis_texts(exp)
    for i, e in enumerate(exp.matrix):
        n = _entry_count(exp, e)
        if n > MAX_CELLS:
            raise DataError(
                exp.source,
                e.line,
                "matrix",
                f"entry {i + 1} expands to {n} cells; at most {MAX_CELLS}",
            )
    total = count_cells(exp)
    if total > MAX_CELLS:
        raise DataError(exp.source, None, "matrix", f"{total} cells; at most {MAX_CELLS}")
    engine_keys = engine_option_keys()
    for entry in exp.models:
        for s in entry.options:
            if s.key not in engine_keys:
                raise s.error(
                    f"not an engine option of a model (those are: model, resources, "
                    f"{', '.join(engine_keys)}){suggest(s.key, engine_keys)}"
                )
    blocks = {b.name: b for b in exp.blocks}
    cells: list[Cell] = []
    seen: dict[str, int | None] = {}
    planned: dict[str, list[Cell]] = {}
    for e in _ordered(exp):
        b = blocks[e.block]
        axis_settings: list[tuple[str, str, tuple[Any, ...], int | None]] = []
        for axis, values in e.axes:
            field = _axis_field(b.command, axis, exp.source, e.line)
            axis_settings.append((axis, field, values, e.line))
        splits = _splits(exp, e)
        if any(not values for _, values in e.axes) or not _has_input(b):
            continue  # an axis given as [] (or a missing input) leaves the entry out
        command_ = command(b.command)
        models: list[ModelEntry | None] = (
            [exp.model(m) for m in e.models] if command_.model_field else []
        )
        if command_.model_field and not models:
            raise DataError(
                exp.source, e.line, "models", f"matrix entry of block {b.name!r} names no model"
            )
        for m in models or [None]:
            combos: list[list[tuple[str, str, Any]]] = [[]]
            for axis, field, values in splits:
                combos = [c + [(axis, field, v)] for c in combos for v in values]
            for combo in combos:
                settings = list(b.settings)
                if m is not None:
                    settings += [s for s in m.options if takes(b.command, s.key)]
                for _axis, field, values, line in axis_settings:
                    settings = [s for s in settings if s.key != field]
                    settings.append(Setting(field, list(values), exp.source, line))
                name = "-".join(
                    [b.name]
                    + ([m.name] if m else [])
                    + [f"{_PREFIX[a]}{_slug(v)}" for a, _, v in combo]
                )
                for _axis, field, v in combo:
                    settings = [s for s in settings if s.key != field]
                    single = field in SINGULAR
                    settings.append(Setting(field, v if single else [v], exp.source, e.line))
                if name in seen:
                    raise DataError(
                        exp.source,
                        e.line,
                        "matrix",
                        f"cell {name} comes twice (first from line {seen[name]}): "
                        "two cells in one folder would mix their records",
                    )
                seen[name] = e.line
                settings, needs = _resolve(settings, m.name if m else None, planned, blocks)
                by_name = {c.name: c for c in cells}
                inputs = tuple(by_name[n].identity for n in needs)
                for s in settings:
                    if s.key in ("tasks", "task") and not needs:
                        _check_tasks(s)
                cell = _cell(exp, name, b.name, b.command, m, settings, e, needs, inputs)
                cells.append(cell)
                planned.setdefault(b.name, []).append(cell)
    return with_estimates(cells) if estimate else cells


def with_estimates(
    cells: Sequence[Cell],
    known: Mapping[str, tuple[int | None, int | None]] | None = None,
    *,
    skip: Container[str] = (),
) -> list[Cell]:
    """``cells`` with the estimate of each ``run`` cell that reads no other cell (its
    records and prompt words, counted from its data): taken from ``known`` (cell
    identity -> records and words, as an earlier plan saved them) when its identity is
    there, else counted, except for the cells named in ``skip`` (those done: nothing
    shows their estimate), which are left as they are.

    >>> from nlieval.experiments.spec import Resources
    >>> c = Cell("b-a", "b", "run", "a", "m", (), Resources(), "e.yaml", 1, {}, ())
    >>> [(x.records, x.words) for x in with_estimates([c], {c.identity: (12, 300)})]
    [(12, 300)]
    >>> with_estimates([c], skip={"b-a"})[0].records is None
    True
    """
    known = known or {}
    out = []
    for cell in cells:
        if cell.command == "run" and not cell.needs:
            if cell.identity in known:
                records, words = known[cell.identity]
                cell = replace(cell, records=records, words=words)
            elif cell.name not in skip:
                cell = _estimated(cell)
        out.append(cell)
    return out


def _cell(
    exp: Experiment,
    name: str,
    block: str,
    cmd: str,
    m: ModelEntry | None,
    settings: list[Setting],
    e: MatrixEntry,
    needs: tuple[str, ...] = (),
    inputs: tuple[str, ...] = (),
) -> Cell:
    model = m.model if m is not None else None
    configs = build_config(cmd, model, settings, exp.source, e.line)
    config: dict[str, Any] = {}
    for c in configs:
        config.update(flat_dict(c))
    config = json.loads(json.dumps(config, default=str))
    # What the cell's numbers depend on: the settings away from their defaults, and
    # every field the run folder checks to resume (IDENTITY) at its present value, so
    # that a default a later version changes in one of those is a changed cell, which
    # its folder then refuses in one line, never old records reported as new ones.
    chosen = non_default(*configs)
    for c in configs:
        checked = getattr(type(c), "IDENTITY", ())
        to_dict = getattr(c, "to_dict", None)
        if checked and callable(to_dict):
            saved = to_dict()
            chosen.update({f: saved.get(f) for f in checked})
    # Where the data is read from changes no number (contents, never paths): a cell
    # planned with --data-dir is the cell planned without it.
    chosen.pop("data_dir", None)
    given = json.loads(json.dumps(chosen, default=str))
    return Cell(
        name,
        block,
        cmd,
        m.name if m is not None else None,
        model,
        tuple(settings),
        m.resources if m is not None else Resources(),
        exp.source,
        e.line,
        config,
        _argv(cmd, model, settings, command(cmd).model_field),
        needs=needs,
        inputs=inputs,
        given=given,
    )


def _argv(
    cmd: str, model: str | None, settings: Sequence[Setting], model_field: str | None
) -> tuple[str, ...]:
    """The command line of a cell (its ``--out`` left out): each setting as its flag
    gives it (:func:`nlieval.settings.flag_names`, read by
    :func:`nlieval.settings.read_value`), so that the line parses to the cell's config."""
    known = setting_fields(cmd)
    argv = command_line(cmd)
    if model is not None and model_field is not None:
        argv += ["--model", model]
    for s in settings:
        f = known[s.key]
        names = flag_names(f)
        if not names:
            values = s.value if isinstance(s.value, (list, tuple)) else [s.value]
            argv += [str(v) for v in values]
            continue
        if isinstance(f.default, bool):
            # A switch: its flag is given when the value is not its default.
            if read_value(f, s.value) != f.default:
                argv.append(names[0])
            continue
        if s.value is None:
            continue
        argv += _flag_words(f, names[0], s.value)
    return tuple(_LOCATED.sub(lambda m: f"DIR/cells/{m.group(1)}", a) for a in argv)


def _flag_words(f: Field[Any], name: str, value: Any) -> list[str]:
    """The words that give setting ``f`` the (valid) block value ``value``: a repeatable
    flag once per value, a flag of several words with each, else one text, its values
    joined by commas, and a comma after a lone value where the flag reads the text
    without it as another value (``--seeds 3`` is three seeds, ``--seeds 3,`` seed 3)."""
    flag = flag_of(f)
    assert flag is not None
    if not isinstance(value, (list, tuple)):
        return [name, str(value)]
    texts = [str(v) for v in value]
    if flag.action == "append":
        return [w for t in texts for w in (name, t)]
    if flag.nargs in ("+", "*"):
        return [name, *texts]
    text = ",".join(texts)
    if flag.parse is not None and len(texts) == 1 and not _reads(f, text, read_value(f, value)):
        text += ","
    return [name, text]


def _reads(f: Field[Any], text: str, value: Any) -> bool:
    """Whether the flag of ``f`` reads ``text`` as ``value``."""
    try:
        return bool(read_text(f, text) == value)
    except ValueError:
        return False


def _estimated(cell: Cell) -> Cell:
    records, words = _estimate(
        json.dumps({k: v for k, v in cell.config.items() if k != "model"}, sort_keys=True), cell
    )
    return replace(cell, records=records, words=words)


#: The estimates by configuration less its model (the data and prompts do not depend on
#: the model: nine models of one block read the data once).
_ESTIMATES: dict[str, tuple[int, int]] = {}


def _cached(key: str, run_config: Any) -> tuple[int, int]:
    if key not in _ESTIMATES:
        _ESTIMATES[key] = _count(run_config)
    return _ESTIMATES[key]


def clear_estimates() -> None:
    """Forget the estimates read so far (a benchmark's second call pays for them again)."""
    _ESTIMATES.clear()


def _count(run_config: Any) -> tuple[int, int]:
    from ..choice import plan

    records = 0
    words = 0.0
    for ds, points, _ in plan(run_config):
        n = len(ds.items)
        mean = sum(len(i.premise.split()) + len(i.hypothesis.split()) for i in ds.items) / max(1, n)
        for p in points:
            records += n
            # A k-shot prompt holds k solved items of about the same length before the item.
            words += n * (p.k + 1) * mean
    return records, int(math.ceil(words))


def _estimate(key: str, cell: Cell) -> tuple[int | None, int | None]:
    (cfg,) = cell.configs()
    records, words = _cached(key, cfg)
    n_ckpt = max(1, len(cfg.checkpoints))
    return records * n_ckpt, words * n_ckpt


def format_plan(cells: Sequence[Cell]) -> str:
    """The cells as text: each with its estimate and its equivalent command line (the
    folder ``DIR/cells/<name>`` as ``--out``), then the totals.

    >>> from nlieval.experiments.spec import parse_experiment
    >>> text = "models: {a: smollm2-135m}\\nblocks: {b: {command: run, tasks: smoke}}\\n"
    >>> exp = parse_experiment(text + "matrix: [{block: b, models: [a]}]", "e.yaml")
    >>> print(format_plan(plan_cells(exp, estimate=False)))
    b-a  records ?  words ?
      nlieval run --model smollm2-135m --task smoke --out DIR/cells/b-a
    1 cells; records ?, prompt words ? (no cell estimated)
    """
    import shlex

    lines = []
    for c in cells:
        records = "?" if c.records is None else str(c.records)
        words = "?" if c.words is None else str(c.words)
        lines.append(f"{c.name}  records {records}  words {words}")
        lines.append("  " + shlex.join([*c.argv, "--out", f"DIR/cells/{c.name}"]))
    lines.append(plan_total(cells))
    return "\n".join(lines)


def plan_total(cells: Sequence[Cell]) -> str:
    """The totals of a plan: records and prompt words summed over the cells; a cell
    that cannot be estimated (it reads another cell, or is not a run) is unknown, so
    the sums are lower bounds, said as such, and none estimated is no number.

    >>> from nlieval.experiments.spec import Resources
    >>> c = Cell("b-a", "b", "run", "a", "m", (), Resources(), "e.yaml", 1, {}, ())
    >>> plan_total([replace(c, records=12, words=300)] * 2)
    '2 cells; records 24, prompt words 600'
    >>> plan_total([replace(c, records=12, words=300), c])
    '2 cells; records at least 12, prompt words at least 300 (1 cell not estimated)'
    >>> plan_total([c])
    '1 cells; records ?, prompt words ? (no cell estimated)'
    """
    unknown = sum(1 for c in cells if c.records is None)
    total_r = sum(c.records or 0 for c in cells)
    total_w = sum(c.words or 0 for c in cells)
    head = f"{len(cells)} cells; records"
    if cells and unknown == len(cells):
        return f"{head} ?, prompt words ? (no cell estimated)"
    if unknown:
        cell = "cell" if unknown == 1 else "cells"
        return (
            f"{head} at least {total_r}, prompt words at least {total_w} "
            f"({unknown} {cell} not estimated)"
        )
    return f"{head} {total_r}, prompt words {total_w}"
