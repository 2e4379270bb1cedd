"""Loading a split of a task: finding its file under the data directory (or its
Hugging Face hub copy), parsing the rows, counting what was dropped or skipped
(:func:`load_task`, :func:`load_pool`, :func:`read_items`), and the task lookup
(:func:`get_task`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ..ground import DataError
from ..types import NLI3, Item, Label
from .dataset import Dataset
from .parsers import FieldError, RowParser
from .readers import RowOrError, format_of, text_rows
from .rules import FileRule, TaskSpec
from .tasks import TASKS
from .taskyaml import is_data_file, make_parser, task_from_data_file, task_from_yaml

log = logging.getLogger("nlieval.data")  # one logger for the whole package, as before

#: Environment variable naming the data directory when no ``data_dir`` is passed.
ENV_DATA_DIR = "NLIEVAL_DATA_DIR"
#: The data directory when neither ``data_dir`` nor ``$NLIEVAL_DATA_DIR`` names one,
#: relative to the current directory, used where it is a folder: the README's set-up
#: puts the shared data beside the checkout, and the docs run every command from the
#: repository root, so that a command pasted from them finds it with nothing exported.
DEFAULT_DATA_DIR: str | None = "../shared/data"

# How many skipped lines are logged one by one before only the summary is logged.
_MAX_LOGGED_BAD = 5


def resolve_data_dir(data_dir: str | Path | None = None) -> Path | None:
    """The data directory: the argument, else ``$NLIEVAL_DATA_DIR``, else
    :data:`DEFAULT_DATA_DIR` where that is a folder, else None.

    A directory that is named but does not exist raises :class:`DataError`.

    >>> resolve_data_dir("/") == Path("/")
    True
    """
    raw = data_dir if data_dir not in (None, "") else os.environ.get(ENV_DATA_DIR) or None
    if raw is None:
        default = Path(DEFAULT_DATA_DIR) if DEFAULT_DATA_DIR else None
        return default if default is not None and default.is_dir() else None
    path = Path(raw).expanduser()
    if not path.is_dir():
        why = "is not a directory" if path.exists() else "does not exist"
        raise DataError(path, None, None, f"data directory {why}")
    return path


def get_tasks(names_or_paths: Sequence[str]) -> list[TaskSpec]:
    """:func:`get_task` of each, refusing two tasks of one name: in one run their records
    would share keys, and the second task's items would be taken as done.

    >>> [t.name for t in get_tasks(["smoke", "snli"])]
    ['smoke', 'snli']
    >>> get_tasks(["smoke", "smoke"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: --task smoke and smoke are both named 'smoke': give one of them another ...
    """
    named: dict[str, str] = {}
    specs = []
    for task in names_or_paths:
        spec = get_task(task)
        if spec.name in named:
            raise ValueError(
                f"--task {named[spec.name]} and {task} are both named {spec.name!r}: give "
                "one of them another name: in its task YAML"
            )
        named[spec.name] = task
        specs.append(spec)
    return specs


def get_task(name_or_path: str) -> TaskSpec:
    """A built-in task by name, a user task from a YAML file, or a data file (``.jsonl``,
    ``.csv``, ``.tsv``, ``.gz`` ok) read as a task with the default fields
    (:func:`~nlieval.data.taskyaml.task_from_data_file`).

    The YAML keys: ``path`` (the data, relative to the YAML file; jsonl/csv/tsv, .gz ok),
    ``labels`` (the ordered label set), and optionally ``name``, ``pool`` (few-shot
    pool file), ``fields`` (``id``, ``premise``, ``hypothesis``, ``label`` (null: no
    labels), ``choices``, ``meta``: field names in the file; premise, hypothesis and
    label default to their own name; without ``id`` a row's own ``id`` field is its id,
    else its line number; a blank or repeated id is an error),
    ``label_map`` (raw value -> label; keys are compared as text, so ``1`` and ``"1"``
    may not both be there), ``family`` (derived from the label set
    when absent), ``template`` (the Jinja template text itself) or ``template_file``
    (a template file, relative to the YAML file), ``description``. The data is the
    task's ``test`` split and the pool its ``train`` split. A task needs two labels at
    least; data and template files must be regular files (not FIFOs, devices, /proc),
    a template file at most 64 KiB, the YAML file at most 1 MiB and without aliases.

    >>> get_task("snli").family
    'nli3'
    """
    if name_or_path in TASKS:
        return TASKS[name_or_path]
    p = Path(name_or_path).expanduser()
    if is_data_file(p):
        return task_from_data_file(p)
    if p.suffix.lower() in (".yaml", ".yml") or p.is_file():
        return task_from_yaml(p)
    raise DataError(
        None,
        None,
        None,
        f"unknown task {name_or_path!r}; valid tasks: "
        f"{', '.join(TASKS)}, or the path of a task YAML file or of a data file "
        "(.jsonl, .csv, .tsv)",
    )


def load_task(
    name_or_path: str,
    data_dir: str | Path | None = None,
    split: str | None = None,
    skip_bad: bool = False,
) -> Dataset:
    """One split (default: the task's default split) of a task.

    >>> ds = load_task("smoke")
    >>> ds.split, len(ds)
    ('test', 48)
    """
    spec = get_task(name_or_path)
    split = split or spec.default_split
    return _load_split(spec, split, resolve_data_dir(data_dir), skip_bad)


def load_pool(
    name_or_path: str,
    data_dir: str | Path | None = None,
    skip_bad: bool = False,
    split: str | None = None,
) -> tuple[Dataset, bool]:
    """The few-shot pool of a task, and whether it is the evaluated split itself.

    The train split when it is there, else another split with labels (in the task's
    split order), else the evaluated split (``split``, default: the task's default).
    The flag is True when the pool is the evaluated data (also when another split reads
    the same rows, see :func:`same_data`): callers must then keep each test item out of
    its own shots.

    >>> pool, same = load_pool("smoke")
    >>> pool.split, len(pool), same
    ('train', 12, False)
    """
    spec = get_task(name_or_path)
    test_split = split or spec.default_split
    root = resolve_data_dir(data_dir)
    others = [s for s in spec.splits if s != test_split]
    others.sort(key=lambda s: s != "train")  # stable: train first, then the declared order
    for cand in others:
        if not _available(spec, cand, root):
            continue
        pool = _load_split(spec, cand, root, skip_bad)
        if any(it.label is not None for it in pool.items):
            return pool, _same_rows(spec, cand, test_split, root)
    return _load_split(spec, test_split, root, skip_bad), True


def _same_rows(spec: TaskSpec, a: str, b: str, root: Path | None) -> bool:
    plan_a, plan_b = _plan(spec, a, root), _plan(spec, b, root)
    if plan_a is None or plan_b is None:
        return a == b
    (rule_a, path_a), (rule_b, path_b) = plan_a, plan_b
    same_rule = dataclasses.replace(rule_a, path=None) == dataclasses.replace(rule_b, path=None)
    return same_rule and path_a.resolve() == path_b.resolve()


def same_data(
    name_or_path: str, split_a: str, split_b: str, data_dir: str | Path | None = None
) -> bool:
    """True when two splits of a task are the same rows of the same file: a task YAML
    whose ``pool`` is its ``path`` (as ``nlieval build`` writes them). Splits that share
    a file but not its rows (SICK's one file) are not the same data.

    >>> same_data("smoke", "train", "test"), same_data("smoke", "test", "test")
    (False, True)
    """
    return _same_rows(get_task(name_or_path), split_a, split_b, resolve_data_dir(data_dir))


def read_items(
    path: str | Path,
    fmt: str | None = None,
    *,
    labels: Sequence[Label] = NLI3,
    fields: Mapping[str, Any] | None = None,
    label_map: Mapping[Any, Any] | None = None,
    parser: RowParser | None = None,
    skip_bad: bool = False,
) -> Dataset:
    """Read one jsonl/csv/tsv file (``.gz`` ok) with a field map or a row parser.

    ``fmt`` overrides the format guessed from the extension. The dataset's task is the
    file's stem and its split ``"file"``.

    >>> ds = read_items(resources.files("nlieval") / "resources" / "smoke.jsonl",
    ...                 fields={"premise": "sentence1", "hypothesis": "sentence2",
    ...                         "label": "gold_label", "id": "pairID"})
    >>> len(ds)
    48
    """
    path = Path(str(path))
    parser = parser or make_parser(labels, fields, label_map)
    labels = tuple(getattr(parser, "labels", labels))
    rows = text_rows(path, fmt or format_of(path.name))
    items, dropped, bad = _collect(rows, parser, str(path), skip_bad)
    return Dataset(path.name.split(".")[0], "file", labels, items, str(path), dropped, bad)


# --------------------------------------------------------------------------- loading


def _index(root: Path) -> dict[str, list[Path]]:
    """Every file under ``root`` by lower-cased name, paths sorted (hidden folders skipped)."""
    index: dict[str, list[Path]] = {}
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in filenames:
            index.setdefault(fn.lower(), []).append(Path(dirpath) / fn)
    for paths in index.values():
        paths.sort()
    return index


def _fixed_path(rule: FileRule) -> Path | None:
    if rule.path is not None:
        return rule.path
    if rule.resource is not None:
        return Path(str(resources.files("nlieval") / "resources" / rule.resource))
    return None


def _plan(spec: TaskSpec, split: str, root: Path | None) -> tuple[FileRule, Path] | None:
    """The rule and file that would be read for a split, or None."""
    rules = spec.splits.get(split, ())
    for rule in rules:
        fixed = _fixed_path(rule)
        if fixed is not None:
            return rule, fixed
    if root is None:
        return None
    index = _index(root)
    for rule in rules:
        found = rule.locate(index, root)
        if found is not None:
            return rule, found
    return None


def available_splits(name_or_path: str, data_dir: str | Path | None = None) -> tuple[str, ...]:
    """The splits of a task that :func:`load_task` can read here (a file found, or a hub
    copy when no data folder is set), in the task's split order.

    >>> available_splits("smoke")
    ('train', 'test')
    """
    spec = get_task(name_or_path)
    root = resolve_data_dir(data_dir)
    return tuple(s for s in declared_splits(spec) if _available(spec, s, root))


def declared_splits(spec: TaskSpec) -> tuple[str, ...]:
    """The splits a task declares (files, then those only on the hub), in its order.

    >>> declared_splits(get_task("hans"))
    ('train', 'eval')
    """
    hub = spec.hub.splits if spec.hub else ()
    return (*spec.splits, *(s for s in hub if s not in spec.splits))


def _available(spec: TaskSpec, split: str, root: Path | None) -> bool:
    plan = _plan(spec, split, root)
    if plan is not None:
        return plan[1].exists()  # a FIFO is there, and refused when read
    return root is None and spec.hub is not None and split in spec.hub.splits


def _check_split(spec: TaskSpec, split: str) -> None:
    known = declared_splits(spec)
    if split not in known:
        raise DataError(
            None,
            None,
            "split",
            f"task {spec.name} has no split {split!r}; splits: {', '.join(sorted(known))}",
        )


def _load_split(spec: TaskSpec, split: str, root: Path | None, skip_bad: bool) -> Dataset:
    _check_split(spec, split)
    plan = _plan(spec, split, root)
    if plan is not None:
        rule, path = plan
        rows, source = rule.rows(path)
        items, dropped, bad = _collect(rows, rule.parser, source, skip_bad)
    elif root is None and spec.hub is not None and split in spec.hub.splits:
        return _load_hub(spec, split, skip_bad)
    else:
        raise _not_found(spec, split, root)
    log.info(
        "%s %s: %d items from %s (dropped: %s)",
        spec.name,
        split,
        len(items),
        source,
        dropped or "none",
    )
    return Dataset(spec.name, split, spec.labels, items, source, dropped, bad)


def _not_found(spec: TaskSpec, split: str, root: Path | None) -> DataError:
    looked = "; ".join(r.describe() for r in spec.splits.get(split, ()))
    if root is not None:
        return DataError(root, None, None, f"no file for {spec.name} {split}: looked for {looked}")
    return DataError(
        None,
        None,
        None,
        f"no data for {spec.name} {split}: looked for {looked}; "
        f"set --data-dir or {ENV_DATA_DIR} to the folder holding it",
    )


def _load_hub(spec: TaskSpec, split: str, skip_bad: bool) -> Dataset:
    hub = spec.hub
    assert hub is not None
    try:
        import datasets
    except ImportError:
        raise DataError(
            None,
            None,
            None,
            f"{spec.name}: no data dir is set and the 'datasets' package is "
            f"not installed; set --data-dir or {ENV_DATA_DIR}, or pip install "
            "'nlieval[hub]'",
        ) from None
    source = f"hf:{hub.path}" + (f"/{hub.name}" if hub.name else "") + f":{hub.splits[split]}"
    table = datasets.load_dataset(hub.path, hub.name, split=hub.splits[split])
    rows = ((n, dict(r)) for n, r in enumerate(table, 1))
    items, dropped, bad = _collect(rows, hub.parser, source, skip_bad)
    return Dataset(spec.name, split, spec.labels, items, source, dropped, bad)


def _collect(
    rows: Iterable[RowOrError], parser: RowParser, where: str, skip_bad: bool
) -> tuple[tuple[Item, ...], dict[str, int], int]:
    """Parse rows into items, counting drops; bad rows raise, or are skipped and counted."""
    items: list[Item] = []
    dropped: Counter[str] = Counter()
    bad = 0
    # User data names its own ids: a repeated one is an error there (official files that
    # repeat ids get a #n suffix below).
    first_line: dict[str, int] | None = {} if getattr(parser, "strict_ids", False) else None
    for line, row in rows:
        try:
            if isinstance(row, DataError):
                raise row
            try:
                out = parser(row, line)
            except FieldError as err:
                raise DataError(where, line, err.field, err.message) from None
            if first_line is not None and isinstance(out, Item):
                if out.id in first_line:
                    raise DataError(
                        where,
                        line,
                        None,
                        f"id {out.id!r} is the id of line {first_line[out.id]} too: ids "
                        "must be unique",
                    )
                first_line[out.id] = line
        except DataError as err:
            if not skip_bad:
                raise
            bad += 1
            if bad <= _MAX_LOGGED_BAD:
                log.warning("skipped bad line: %s", err)
            continue
        if isinstance(out, str):
            dropped[out] += 1
        elif out is not None:
            items.append(out)
    if bad:
        log.warning("%s: skipped %d bad line(s)", where, bad)
    if not items:
        why = (
            f"{bad} bad line(s) skipped"
            if bad
            else f"dropped: {dict(dropped)}"
            if dropped
            else "no rows"
        )
        raise DataError(where, None, None, f"no usable items ({why})")
    return _unique_ids(items, where), dict(dropped), bad


def _unique_ids(items: list[Item], where: str) -> tuple[Item, ...]:
    # Shots are kept apart from the test item by id, so ids must be unique; some official
    # files reuse one id for several items (alpha-NLI story_id), which then get "#2", "#3".
    # A suffix is never an id the file already has (x, x, x#2 gives x, x#3, x#2): a
    # collision would stop a run midway, at the second record of one key.
    counts = Counter(it.id for it in items)
    if len(counts) == len(items):
        return tuple(items)
    taken = set(counts)
    kept: set[str] = set()
    suffix: Counter[str] = Counter()
    out = []
    for it in items:
        if it.id not in kept:
            kept.add(it.id)
            out.append(it)
            continue
        n = max(suffix[it.id], 1) + 1
        while f"{it.id}#{n}" in taken:
            n += 1
        suffix[it.id] = n
        taken.add(f"{it.id}#{n}")
        out.append(dataclasses.replace(it, id=f"{it.id}#{n}"))
    dup = sum(c - 1 for c in counts.values() if c > 1)
    log.warning("%s: %d repeated id(s) made unique with a #n suffix", where, dup)
    return tuple(out)
