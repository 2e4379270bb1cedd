"""The one skeleton of every command that writes a run folder.

A command keeps only its plan (the :class:`~nlieval.runs.loop.Step` s, each with every
item it covers and how an item's record key is made) and its chunk function;
:func:`execute` does the rest in one order for all of them: lock and start the folder
(refusing another configuration), read the done keys, leave out of each step the items
whose key the folder holds, append this invocation's provenance when it has work, and
run the steps. The command then writes its results from the records
(:func:`~nlieval.runs.finalize`).

>>> from nlieval.types import Record
>>> from nlieval.choice import RunConfig
>>> def work(backend, step, items, progress):
...     return [Record("t", i, "m", 0, 0, ("a", "b"), (0.0, -1.0), (0.7, 0.3), "a", "a")
...             for i in items]
>>> key = lambda i: Record.key_of("m", None, "t", 0, 0, i)
>>> steps = [Step("|t|0|0", "t", ["1", "2", "3"], done_key=key)]
>>> folder = RunFolder(run_dir)
>>> _ = execute(folder, RunConfig("m", ("t",)), steps, lambda g: None, work, progress=False)
>>> folder.append([]); len(folder.records())
3
>>> execute(folder, RunConfig("m", ("t",)), steps, lambda g: None, work, progress=False) is None
True
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .folder import FolderConfig, Row, RunFolder
from .loop import Progress, Step, run_steps
from .schema import Provenance

log = logging.getLogger(__name__)

W = TypeVar("W")
B = TypeVar("B")
C = TypeVar("C")
R = TypeVar("R", bound=Row)


def execute(
    folder: RunFolder[R],
    config: FolderConfig,
    steps: Sequence[Step[W]] | Callable[[RunFolder[R]], Sequence[Step[W]]],
    make_backend: Callable[[Hashable], B],
    work: Callable[[B, Step[W], Sequence[W], Progress], Iterable[R]],
    *,
    overwrite: bool = False,
    progress: bool = True,
    chunk_size: int | None = None,
    timed_chunks: bool = False,
    stream: bool = False,
    fingerprints: Mapping[str, str] | None = None,
    kept: bool = False,
) -> float | None:
    """Start (or resume) ``folder`` for ``config`` and do what its steps still lack.

    Each step's ``todo`` holds every item of the step; those whose ``done_key`` is among
    the folder's record keys are left out (a step without ``done_key`` is taken as it
    is). ``steps`` may instead be a function of the started folder (its torn last line
    already cut), for a command whose plan depends on what the folder holds: it may check
    the saved records against the plan, or remove those of unfinished work. This invocation's
    provenance is appended when it has work. The rest is
    :func:`~nlieval.runs.loop.run_steps`; returns the seconds spent, or None when there
    was nothing to do. ``fingerprints`` (of the data and prompts the numbers depend on)
    are checked against those the folder was made with (:meth:`RunFolder.start`), also
    before any record when ``kept`` (the folder holds other work made from them).
    """
    folder.start(config, overwrite=overwrite, fingerprints=fingerprints, kept=kept)
    folder.repair()
    planned = steps(folder) if callable(steps) else steps
    done = folder.done_keys()
    todo = [
        dataclasses.replace(s, todo=[w for w in s.todo if s.done_key(w) not in done])
        if s.done_key is not None
        else s
        for s in planned
    ]
    if any(s.todo for s in todo):
        # Only an invocation that writes records is part of their provenance.
        folder.append_provenance(Provenance.now(config.KIND, fingerprints).to_dict())
    if done:
        log.info(
            "resuming %s: %d records already there, %d items to go",
            folder.path,
            len(done),
            sum(len(s.todo) for s in todo),
        )
    return run_steps(
        folder,
        todo,
        make_backend,
        work,
        progress=progress,
        chunk_size=chunk_size,
        timed_chunks=timed_chunks,
        stream=stream,
    )


def fingerprints_of(data_info: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The fingerprints a command's data report holds per task (``fingerprint`` of the
    split as read, ``pool_fingerprint``, ``prompt_fingerprints`` per sweep point), named
    for :meth:`~nlieval.runs.folder.RunFolder.start` and its refusals.

    >>> fingerprints_of({"snli": {"fingerprint": "ab12", "pool_fingerprint": None,
    ...                           "prompt_fingerprints": {"k=0 seed=0": "cd34"}}})
    {'data snli': 'ab12', 'prompt snli k=0 seed=0': 'cd34'}
    """
    out: dict[str, str] = {}
    for task, info in data_info.items():
        if info.get("fingerprint"):
            out[f"data {task}"] = str(info["fingerprint"])
        if info.get("pool_fingerprint"):
            out[f"pool {task}"] = str(info["pool_fingerprint"])
        for point, value in (info.get("prompt_fingerprints") or {}).items():
            out[f"prompt {task} {point}"] = str(value)
    return out


def saved_config(out_dir: str | Path, read: Callable[[dict[str, Any]], C]) -> C | None:
    """The config a run folder holds, as ``read`` (a config class's ``from_dict``) builds
    it; None when the folder has none or this version cannot build it (the folder's own
    check on start then says what differs).

    >>> saved_config(run_dir, dict) is None
    True
    """
    saved = RunFolder(out_dir).read_config()
    try:
        return read(saved) if saved else None
    except (TypeError, ValueError, KeyError):
        return None
