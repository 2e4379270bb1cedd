"""The one resumable loop of every command that writes a run folder.

A command plans its work as :class:`Step` s (a sweep point: one task, shot count and
seed or run, with the items still to do) and gives a chunk function that turns a few
items into rows of ``records.jsonl`` (records). :func:`run_steps` makes the backend
only when there is work, feeds the items in chunks of :data:`CHUNK`, appends each
chunk's records durably and keeps the time spent per step in ``timing.json``: a run
killed at any moment loses at most the chunk being computed and the one being written,
and the same command resumes it without a duplicate. The records of a chunk are written
(and fsync'ed) by a writer thread while the next chunk computes, so the device does not
wait for the disk; an item counts as done (in ``timing.json``) only once its record is
durable. With ``timed_chunks`` (``nlieval run``) the chunks after a step's first are
sized to :data:`CHUNK_SECONDS` of work at the rate measured so far: large enough that the
backend fills its batches, short enough that a kill loses little. With ``stream=True``
(``generate``, whose rows are answers of a server that may arrive one by one over
minutes) each row is appended as the chunk function yields it, so a killed run loses
nothing that was yielded.

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

import queue
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tqdm.auto import tqdm

from .folder import Row, RunFolder

#: Items per durable write (the first chunk of a step, or every chunk without
#: ``timed_chunks``): a crash loses at most two chunks' work.
CHUNK = 32
#: Seconds of work per chunk with ``timed_chunks``, and the most items of such a chunk.
CHUNK_SECONDS = 10.0
MAX_CHUNK = 8192

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
    timed_chunks: bool = False,
    stream: bool = False,
) -> float | None:
    """Do every step's ``todo`` in chunks, appending the records as they come.

    ``make_backend(group)`` is called once per group that has work (so a finished run
    resumes without loading a model); ``work(backend, step, chunk, progress)`` returns the
    chunk's records (``progress(n)`` moves the bar by n items). The caller has read the
    folder's done keys (:meth:`RunFolder.done_keys`) and left them out of ``todo``.
    Chunks hold ``chunk_size`` items (:data:`CHUNK` when None); with ``timed_chunks``,
    the chunks after a step's first hold what the last chunk's rate does in
    :data:`CHUNK_SECONDS` (at least ``chunk_size``, at most :data:`MAX_CHUNK`). A
    chunk's records are appended by a writer thread while the next chunk computes (every
    computed chunk is written before this returns or raises). With ``stream`` each
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
    writer: _Writer[R] | None = None if stream else _Writer(folder, timing)
    failed = True
    try:
        for step in steps:
            if not step.todo:
                continue
            if backend is None or step.group != group:
                backend = None  # let the previous checkpoint go before loading the next
                backend, group = make_backend(step.group), step.group
            bar.set_description(step.label)
            start, n = 0, size
            while start < len(step.todo):
                chunk = step.todo[start : start + n]
                start += len(chunk)
                t0 = time.time()
                rows = work(backend, step, chunk, bar.update)
                if writer is not None:
                    rows = list(rows)
                    seconds = time.time() - t0
                    writer.put(rows, step.key, seconds, len(chunk))
                else:
                    _append_each(folder, rows)
                    seconds = time.time() - t0
                    _count(timing, step.key, seconds, len(chunk))
                    folder.write_timing(timing)
                if timed_chunks:
                    rate = len(chunk) / max(seconds, 1e-6)
                    n = int(min(MAX_CHUNK, max(size, rate * CHUNK_SECONDS)))
        failed = False
    finally:
        bar.close()
        if writer is not None:
            # Whatever was computed is written, also when the loop stops on an error (its
            # own error then wins over the writer's).
            writer.close(raise_error=not failed)
    return time.time() - started


def _count(timing: dict[str, Any], key: str, seconds: float, items: int) -> None:
    # Only the thread that writes timing.json changes it (the writer's, when there is one).
    spent = timing.setdefault(key, {"seconds": 0.0, "items": 0})
    spent["seconds"] = round(spent["seconds"] + seconds, 3)
    spent["items"] += items


class _Writer(Generic[R]):
    """Appends the chunks' records to the folder in a thread of its own, one chunk
    behind the computation, then counts them in ``timing.json``: an item counts as done
    only once its record is durable. At most one chunk waits to be written.

    Hand-written: a single-worker executor would do the threading but not the
    one-chunk-in-waiting bound that keeps memory and the work a kill loses small."""

    def __init__(self, folder: RunFolder[R], timing: dict[str, Any]) -> None:
        self.folder, self.timing = folder, timing
        self.jobs: queue.Queue[tuple[list[R], str, float, int] | None] = queue.Queue(maxsize=1)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="records-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (job := self.jobs.get()) is not None:
            if self.error is not None:
                continue  # nothing more is written after a failed write: drain only
            rows, key, seconds, items = job
            try:
                self.folder.append(rows)
                _count(self.timing, key, seconds, items)
                self.folder.write_timing(self.timing)
            except BaseException as err:  # noqa: BLE001 - handed to the computing thread
                self.error = err

    def put(self, rows: list[R], key: str, seconds: float, items: int) -> None:
        """Queue a chunk (waiting while the one before it is still queued); a failed
        write of an earlier chunk is raised here, so the run stops at once."""
        if self.error is not None:
            raise self.error
        self.jobs.put((rows, key, seconds, items))

    def close(self, *, raise_error: bool = True) -> None:
        """Write every queued chunk, stop the thread and raise a failed write.

        A Ctrl-C while waiting is raised only once the thread has stopped: returning
        earlier would let the caller release the folder's lock while a chunk is still
        being appended, and a second run started then (in this process: a notebook)
        would write that chunk again."""
        interrupted: BaseException | None = None
        stopped = False
        while True:
            try:
                if not stopped:
                    self.jobs.put(None)
                    stopped = True
                self.thread.join()
                break
            except KeyboardInterrupt as err:  # at most one chunk's write to wait for
                interrupted = err
        if interrupted is not None:
            raise interrupted
        if raise_error and self.error is not None:
            raise self.error


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
