"""Runs told apart: every command that reads several run folders shows each folder's
models under a name of their own where two folders hold one model on the same sweep point
(two templates, balanced or not), named by what differs in their ``config.json``
(:func:`run_labels`) or by the user (``--name RUN=NAME``, :class:`NamedRuns`); pooling
their items is asked for, never done by default (:func:`read_named`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any

from ..ground import SettingError
from ..settings import setting
from ..types import Record
from .folder import RunError, RunFolder, iter_run_records
from .output import RunFolders

#: Keys of ``config.json`` that never tell two runs apart: where the folder is, and what
#: follows from the rest (the fingerprints of data and prompts).
_NOT_TELLING = ("out", "fingerprints", "folder_format")
#: At most this many differing keys name a run; more, and its folder name does.
_MOST_KEYS = 3


def _config_value(value: Any) -> str:
    # A path by its file name (prompts/hyp-only.yaml -> hyp-only.yaml), a list joined.
    if isinstance(value, list):
        return ",".join(_config_value(v) for v in value)
    if isinstance(value, str) and ("/" in value or "\\" in value):
        return Path(value).name
    if isinstance(value, bool):
        return str(value).lower()
    return "none" if value is None else str(value)


def _points(records: Iterable[Record]) -> set[tuple[Any, ...]]:
    # With the seed: folders of other seeds of one setup are replicates (an experiment's
    # cells of seed 0 and seed 1), whose records a table averages over seeds, never
    # counts twice.
    return {(r.model, r.checkpoint, r.task, r.k, r.seed) for r in records}


def run_labels(
    folders: Sequence[str | Path],
    records: Sequence[Sequence[Record]],
    configs: Sequence[Mapping[str, Any]],
) -> list[dict[str, str]]:
    """Per folder, the models it names otherwise in a table (model -> name; a model not
    named keeps its name): a model that another folder holds on one of the same sweep
    points (task, checkpoint, k) is ``model (key=value, ...)`` by the keys of
    ``config.json`` whose values differ between those folders (template, balanced,
    prompt, ...), or ``model (folder)`` where no key (or more than three) tells them
    apart. Folders of one model on other points (one per task), or on other seeds of
    one point (replicates), keep one name: their cells fill one row.

    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), "a", "a")
    >>> run_labels(["x", "y", "z"], [[r], [r], [replace(r, task="u")]],
    ...            [{"template": None}, {"template": "p/hyp-only.yaml"}, {"template": "q"}])
    [{'m': 'm (template=none)'}, {'m': 'm (template=hyp-only.yaml)'}, {'m': 'm (template=q)'}]
    >>> run_labels(["x", "z"], [[r], [replace(r, task="u")]], [{}, {"template": "q"}])
    [{}, {}]
    >>> run_labels(["s0", "s1"], [[r], [replace(r, seed=1)]], [{"seeds": [0]}, {"seeds": [1]}])
    [{}, {}]
    >>> run_labels(["runs/x", "runs/y"], [[r], [r]], [{"a": 1, "b": 1, "c": 1, "d": 1}, {}])
    [{'m': 'm (x)'}, {'m': 'm (y)'}]
    """
    points: dict[str, list[set[tuple[Any, ...]]]] = {}
    for i, recs in enumerate(records):
        for r in recs:
            at = points.setdefault(r.model, [set() for _ in folders])
            at[i].add((r.checkpoint, r.task, r.k, r.seed))
    out: list[dict[str, str]] = [{} for _ in folders]
    for model, per_folder in points.items():
        holders = [i for i, pts in enumerate(per_folder) if pts]
        clash = any(per_folder[i] & per_folder[j] for i, j in combinations(holders, 2))
        if not clash:
            continue
        keys = sorted({k for i in holders for k in configs[i]} - set(_NOT_TELLING))
        seen = {k: {json.dumps(configs[i].get(k), sort_keys=True) for i in holders} for k in keys}
        differ = [k for k in keys if len(seen[k]) > 1]
        names = {
            i: ", ".join(f"{k}={_config_value(configs[i].get(k))}" for k in differ) for i in holders
        }
        # More than a few keys (folders made by different commands): the folder names read
        # better than a list of every setting.
        if not differ or len(differ) > _MOST_KEYS or len(set(names.values())) < len(holders):
            names = {i: Path(folders[i]).name for i in holders}
            if len(set(names.values())) < len(holders):
                names = {i: str(folders[i]) for i in holders}
        for i in holders:
            out[i][model] = f"{model} ({names[i]})"
    return out


def run_name(text: str) -> tuple[str, str]:
    """``--name``'s ``RUN=NAME``: a run folder (or a model as a table names it) and the
    name it is shown under; a NAME alone (RUN ``""``) names the run folders in their order.

    >>> run_name("runs/llama=Llama 8B"), run_name("Llama 8B")
    (('runs/llama', 'Llama 8B'), ('', 'Llama 8B'))
    >>> run_name("runs/llama=")
    Traceback (most recent call last):
    nlieval.ground.errors.SettingError: --name: expected RUN=NAME or NAME, got 'runs/llama='
    """
    run, sep, name = text.partition("=")
    if not sep:
        run, name = "", run
    if not name.strip() or (sep and not run.strip()):
        raise SettingError("name", f"--name: expected RUN=NAME or NAME, got {text!r}")
    return run.strip(), name.strip()


def _split(
    text: str,
    where: Sequence[Path],
    models: Sequence[Sequence[str]],
    labels: Sequence[Mapping[str, str]],
) -> tuple[str, str]:
    # A model as a table names it may hold "=" itself (m (template=x)): RUN ends at the
    # first "=" after which the rest names a folder or a model; else at the first "=".
    known = {lab.get(m, m) for ms, lab in zip(models, labels, strict=True) for m in ms}
    known |= {m for ms in models for m in ms}
    cuts = [i for i, c in enumerate(text) if c == "="]
    for i in cuts:
        run, name = text[:i].strip(), text[i + 1 :].strip()
        if name and (run in known or Path(run).resolve() in where):
            return run, name
    return run_name(text)


def given_names(
    folders: Sequence[str | Path],
    records: Sequence[Sequence[Record]],
    labels: Sequence[Mapping[str, str]],
    names: Iterable[tuple[str, str]],
) -> list[dict[str, str]]:
    """``labels`` (per folder, model -> name) with the user's ``names`` (RUN, NAME) put
    over them: RUN is one of ``folders`` (as given or the same folder written otherwise),
    whose model is then NAME, or a model as the table would name it (its label, or the
    model itself), which is NAME wherever it is. A folder of several models is named by
    model; a RUN that is none of these is a ValueError naming what there is.

    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), "a", "a")
    >>> given_names(["runs/a", "runs/b"], [[r], [r]], [{"m": "m (a)"}, {"m": "m (b=1)"}],
    ...             [("runs/a", "Llama 8B"), ("m (b", "1)=Llama 8B, balanced")])
    [{'m': 'Llama 8B'}, {'m': 'Llama 8B, balanced'}]
    >>> given_names(["runs/a", "runs/b"], [[r], [r]], [{}, {}], [("", "A"), ("", "B")])
    [{'m': 'A'}, {'m': 'B'}]
    >>> given_names(["runs/a"], [[r]], [{}], [("runs/c", "C")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval...SettingError: --name runs/c=C: no run folder or model of that name (folders: ...
    """
    out = [dict(lab) for lab in labels]
    where = [Path(f).resolve() for f in folders]
    models = [sorted({r.model for r in recs}) for recs in records]
    names = list(names)
    bare = [name for run, name in names if not run]
    if bare:
        if len(bare) != len(names) or len(bare) != len(folders):
            raise SettingError(
                "name",
                f"--name: {len(bare)} names for {len(folders)} run folders: one NAME per "
                "RUN in their order, or RUN=NAME",
            )
        names = [(str(f), name) for f, name in zip(folders, bare, strict=True)]
    for given, also in names:
        run, name = _split(f"{given}={also}", where, models, labels)
        hit = False
        if Path(run).resolve() in where:
            i = where.index(Path(run).resolve())
            if len(models[i]) != 1:
                held = ", ".join(models[i]) or "no records"
                raise SettingError(
                    "name",
                    f"--name {run}={name}: {folders[i]} holds {held}: name a model of it instead",
                )
            out[i][models[i][0]] = name
            hit = True
        else:
            for i, ms in enumerate(models):
                for m in ms:
                    if run in (m, labels[i].get(m, m)):
                        out[i][m] = name
                        hit = True
        if not hit:
            shown = sorted({labels[i].get(m, m) for i, ms in enumerate(models) for m in ms})
            raise SettingError(
                "name",
                f"--name {run}={name}: no run folder or model of that name "
                f"(folders: {', '.join(map(str, folders))}; models: {', '.join(shown)})",
            )
    return out


def keep_apart(
    folders: Sequence[str | Path], named: Sequence[Iterable[Record]], *, poolable: bool = True
) -> None:
    """Refuse (a RunError in one line) two of ``folders`` whose records (``named``, as a
    table names their models) share a sweep point and seed (model, checkpoint, task, k,
    seed): a table would count their items together without saying so. The error points
    to ``--pool`` where the command has it (``poolable``), and its advice (``--name``) is
    said as far as the command has the flags.

    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), "a", "a")
    >>> keep_apart(["a", "b"], [[r], [replace(r, k=5)]])
    >>> keep_apart(["a", "b"], [[r], [r]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: a and b both hold m on task t, k=0; give them ... --pool ...
    """
    points = [_points(recs) for recs in named]
    for i, j in combinations(range(len(folders)), 2):
        shared = sorted(points[i] & points[j], key=str)
        if shared:
            model, ckpt, task, k, _ = shared[0]
            at = f"{model}" + (f" at {ckpt}" if ckpt else "")
            pool = ", or --pool to count their items together" if poolable else ""
            # The advice in flags: a command without --name (sci-report) says the reason.
            raise RunError(
                f"{folders[i]} and {folders[j]} both hold {at} on task {task}, k={k}",
                advice=f"give them different names (--name RUN=NAME){pool}",
            )


def read_named(
    folders: Sequence[str | Path],
    names: Iterable[tuple[str, str]] = (),
    *,
    pool: bool = False,
    poolable: bool = True,
    held: Sequence[Sequence[Record]] | None = None,
) -> list[list[Record]]:
    """The records of each of ``folders`` (a list per folder), each model under the name
    a table shows it by: :func:`run_labels` where another folder holds the same model on
    the same sweep point, then the user's ``names`` (:func:`given_names`). With ``pool``
    only the user's names apply, and two folders of one model are one model, their items
    counted together. A folder given twice, or two folders left under one name on one
    sweep point (two folders named alike by the user), is a RunError in one line
    (:func:`keep_apart`, which names ``--pool`` where the command has it: ``poolable``).
    ``held``: each folder's records as already read (``RunFolder.records()``, in the
    order of ``folders``), for a caller that reads them once for several tables.

    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), "a", "a")
    >>> a, b = Path(run_dir) / "a", Path(run_dir) / "b"; a.mkdir(); b.mkdir()
    >>> RunFolder(a).append([r]); RunFolder(b).append([r])
    >>> [[x.model for x in recs] for recs in read_named([a, b])]
    [['m (a)'], ['m (b)']]
    >>> [[x.model for x in recs] for recs in read_named([a, b], pool=True)]
    [['m'], ['m']]
    >>> read_named([a, b], [(str(a), "M"), (str(b), "M")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: .../a and .../b both hold M on task t, k=0; ...
    """
    seen: dict[Path, str | Path] = {}
    for folder in folders:
        at = Path(folder).resolve()
        if at in seen:
            raise RunError(f"{folder} is given twice (as {seen[at]})")
        seen[at] = folder
    if held is None:
        held = [list(iter_run_records([f])) for f in folders]
    elif len(held) != len(folders):
        raise ValueError(f"records of {len(held)} folders given for {len(folders)} folders")
    if pool:
        labels: list[dict[str, str]] = [{} for _ in folders]
    else:
        configs = [RunFolder(f).read_config() or {} for f in folders]
        labels = run_labels(folders, held, configs)
    labels = given_names(folders, held, labels, names)
    named = [
        [replace(r, model=lab[r.model]) if r.model in lab else r for r in recs]
        for recs, lab in zip(held, labels, strict=True)
    ]
    if not pool:
        keep_apart(folders, named, poolable=poolable)
    return named


def flat(named: Iterable[Iterable[Record]]) -> list[Record]:
    """The records of :func:`read_named`'s folders as one list, in folder order.

    >>> flat([[1, 2], [3]])
    [1, 2, 3]
    """
    return [r for recs in named for r in recs]


def name_setting() -> Any:
    """The ``--name [RUN=]NAME`` setting (:func:`run_name`), one declaration for every
    command that names runs: :class:`NamedRuns` and the figures, whose folders are not
    their first positional argument.

    >>> name_setting().metadata["flag"].metavar
    '[RUN=]NAME'
    """
    return setting(
        None,
        help="show the model of run folder RUN (or the model a table names RUN) as NAME, "
        "e.g. --name runs/llama='Llama 8B' (repeatable; NAME alone: one per RUN, in their "
        "order); without it, folders of one model on the same task are told apart by what "
        "differs in their config.json",
        parse=run_name,
        action="append",
        metavar="[RUN=]NAME",
    )


@dataclass(frozen=True, kw_only=True)
class NamedRuns(RunFolders):
    """Run folders whose models a table shows under names the user may give
    (``--name RUN=NAME``, repeatable): the settings of every command that reads several
    folders into one table (:func:`read_named`).

    >>> NamedRuns(runs=("a",), name=(("a", "Llama 8B"),)).name
    (('a', 'Llama 8B'),)
    """

    name: tuple[tuple[str, str], ...] | None = name_setting()


@dataclass(frozen=True, kw_only=True)
class PooledRuns(NamedRuns):
    """:class:`NamedRuns` whose folders of one model may be pooled on request (``--pool``):
    the commands whose numbers are sums over items (``report``, ``breakdown``).

    >>> PooledRuns(runs=("a", "b")).pool
    False
    """

    pool: bool = setting(
        False,
        help="count the items of folders of one model on the same task and k together, as "
        "one row (without it: a row per folder)",
    )
