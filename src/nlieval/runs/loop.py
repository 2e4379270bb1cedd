"""The one resumable loop of every command that writes a run folder.

A command plans its work as :class:`Step` s (a sweep point: one task, shot count and
seed or run, with the items still to do) and gives a chunk function that turns a few
items into rows of ``records.jsonl`` (records). :func:`run_steps` makes the backend
only when there is work, feeds the items in chunks of :data:`CHUNK`, appends each
chunk's records durably and keeps the time spent per step in ``timing.json``: a run
killed at any moment loses at most one chunk, and the same command resumes it without a
duplicate. With ``stream=True`` (``generate``, whose rows are answers of a server that
may arrive one by one over minutes) each row is appended as the chunk function yields
it, so a killed run loses nothing that was yielded.

>>> from nlieval.types import Record
>>> folder = RunFolder(run_dir); folder.done_keys()
set()
>>> def work(backend, step, items, progress):
...     return [Record(task="t", item_id=i, model="m", k=0, seed=0, labels=("a", "b"),
...                    loglik=(0.0, -1.0), probs=(0.7, 0.3), pred="a", gold="a")
...             for i in items]
>>> elapsed = run_steps(folder, [Step("|t|0|0", "t", ["1", "2"])], lambda g: None, work,
...                     progress=False)
>>> len(folder.records()), folder.read_timing()["|t|0|0"]["items"]
(2, 2)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tqdm.auto import tqdm

from .folder import Row, RunFolder

#: Items per durable write: a crash loses at most this many items' work.
CHUNK = 32

W = TypeVar("W")  # a unit of work (an item)
B = TypeVar("B")  # the backend that does it
R = TypeVar("R", bound=Row)  # a row of records.jsonl

Progress = Callable[[int], Any]


@dataclass(frozen=True)
class Step(Generic[W]):
    """One sweep point of a resumable command.

    ``key`` names it in ``timing.json`` (``checkpoint|task|k|seed``), ``label`` in the
    progress bar; ``todo`` holds the work not yet in the folder, in the order to do it;
    consecutive steps of one ``group`` (a checkpoint) share one backend; ``point`` is the
    command's own description of the step, handed back to its chunk function;
    ``done_key(item)`` is the key the item's row will have (:func:`~nlieval.runs.execute`
    leaves out the items whose key the folder already holds).
    """

    key: str
    label: str
    todo: Sequence[W]
    group: Hashable = None
    point: Any = None
    done_key: Callable[[W], Hashable] | None = None


def run_steps(
    folder: RunFolder[R],
    steps: Sequence[Step[W]],
    make_backend: Callable[[Hashable], B],
    work: Callable[[B, Step[W], Sequence[W], Progress], Iterable[R]],
    *,
    progress: bool = True,
    chunk_size: int | None = None,
    stream: bool = False,
) -> float | None:
    """Do every step's ``todo`` in chunks, appending the records as they come.

    ``make_backend(group)`` is called once per group that has work (so a finished run
    resumes without loading a model); ``work(backend, step, chunk, progress)`` returns the
    chunk's records (``progress(n)`` moves the bar by n items). The caller has read the
    folder's done keys (:meth:`RunFolder.done_keys`) and left them out of ``todo``.
    Chunks hold ``chunk_size`` items (:data:`CHUNK` when None). With ``stream`` each
    record is appended (and fsync'ed) as soon as ``work`` yields it, instead of the
    chunk's all at once. Returns the seconds spent, or None when there was nothing to do.
    """
    size = chunk_size or CHUNK
    total = sum(len(s.todo) for s in steps)
    if total == 0:
        return None
    started = time.time()
    timing = folder.read_timing()
    backend: B | None = None
    group: Hashable = None
    bar = tqdm(total=total, unit="item", disable=not progress, dynamic_ncols=True)
    try:
        for step in steps:
            if not step.todo:
                continue
            if backend is None or step.group != group:
                backend = None  # let the previous checkpoint go before loading the next
                backend, group = make_backend(step.group), step.group
            bar.set_description(step.label)
            spent = timing.setdefault(step.key, {"seconds": 0.0, "items": 0})
            for start in range(0, len(step.todo), size):
                chunk = step.todo[start : start + size]
                t0 = time.time()
                rows = work(backend, step, chunk, bar.update)
                if stream:
                    _append_each(folder, rows)
                else:
                    folder.append(list(rows))
                # Kept per chunk so a killed run keeps the time it spent.
                spent["seconds"] = round(spent["seconds"] + time.time() - t0, 3)
                spent["items"] += len(chunk)
                folder.write_timing(timing)
    finally:
        bar.close()
    return time.time() - started


def _append_each(folder: RunFolder[R], rows: Iterable[R]) -> None:
    # One durable append per row; a generator left early (an error while appending) is
    # closed at once, so that it can stop what it has in flight.
    try:
        for row in rows:
            folder.append([row])
    finally:
        close = getattr(rows, "close", None)
        if callable(close):
            close()
