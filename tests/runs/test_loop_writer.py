"""The loop keeps the device busy (issue 22, part 3): a chunk's records are written by a
writer thread while the next chunk computes, an item counts as done only once its
record is durable, whatever was computed is written when the loop stops, and with
``timed_chunks`` the chunks after a step's first hold seconds of work, not a fixed
count."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from nlieval.runs import RunFolder, Step, loop, run_steps
from tests.runs.test_runs_folder import Boom, Note

Work = Callable[[None, Step[str], Sequence[str], Callable[[int], Any]], list[Note]]


def _notes(chunk: Sequence[str]) -> list[Note]:
    return [Note(name, 1) for name in chunk]


def _names(n: int) -> list[str]:
    return [f"i{k:03d}" for k in range(n)]


def test_the_next_chunk_computes_while_the_last_is_written(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path, Note)
    folder.done_keys()
    second_started = threading.Event()
    overlapped: list[bool] = []
    append = folder.append

    def slow_append(rows: Sequence[Note]) -> None:
        if rows[0].name == "i000":
            # Written in the loop's own thread, this would wait for a chunk that cannot
            # start before the write returns.
            overlapped.append(second_started.wait(timeout=60))
        append(rows)

    folder.append = slow_append  # type: ignore[method-assign]

    def work(b: None, step: Step[str], chunk: Sequence[str], p: Any) -> list[Note]:
        if chunk[0] != "i000":
            second_started.set()
        return _notes(chunk)

    run_steps(folder, [Step("|t|0|0", "t", _names(9))], lambda g: None, work,
              progress=False, chunk_size=3)  # fmt: skip
    assert overlapped == [True]
    assert [r.name for r in RunFolder(tmp_path, Note).records()] == _names(9)
    assert folder.read_timing()["|t|0|0"]["items"] == 9


def test_an_error_keeps_every_chunk_computed_before_it(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path, Note)
    folder.done_keys()

    def work(b: None, step: Step[str], chunk: Sequence[str], p: Any) -> list[Note]:
        if "i006" in chunk:
            raise Boom("the third chunk")
        return _notes(chunk)

    with pytest.raises(Boom):
        run_steps(folder, [Step("|t|0|0", "t", _names(12))], lambda g: None, work,
                  progress=False, chunk_size=3)  # fmt: skip
    again = RunFolder(tmp_path, Note)
    assert [r.name for r in again.records()] == _names(6)
    assert again.read_timing()["|t|0|0"]["items"] == 6


def test_a_failed_write_stops_the_loop_and_counts_nothing_unwritten(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path, Note)
    folder.done_keys()
    append = folder.append
    computed: list[str] = []

    def failing_append(rows: Sequence[Note]) -> None:
        if rows[0].name == "i003":
            raise OSError(28, "No space left on device")
        append(rows)

    folder.append = failing_append  # type: ignore[method-assign]

    def work(b: None, step: Step[str], chunk: Sequence[str], p: Any) -> list[Note]:
        computed.append(chunk[0])
        return _notes(chunk)

    with pytest.raises(OSError, match="No space left"):
        run_steps(folder, [Step("|t|0|0", "t", _names(30))], lambda g: None, work,
                  progress=False, chunk_size=3)  # fmt: skip
    # Stopped within a chunk or two of the failure, not after all ten.
    assert len(computed) <= 4
    again = RunFolder(tmp_path, Note)
    assert [r.name for r in again.records()] == _names(3)
    assert again.read_timing()["|t|0|0"]["items"] == 3


class _Clock:
    """time.time() for the loop: each chunk of work takes 0.01 s per item."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now


def test_timed_chunks_hold_seconds_of_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(loop, "time", clock)
    monkeypatch.setattr(loop, "CHUNK_SECONDS", 0.5)  # 100 items/s: 50 items a chunk
    folder = RunFolder(tmp_path, Note)
    folder.done_keys()
    sizes: list[int] = []

    def work(b: None, step: Step[str], chunk: Sequence[str], p: Any) -> list[Note]:
        sizes.append(len(chunk))
        clock.now += 0.01 * len(chunk)
        return _notes(chunk)

    steps = [Step("|a|0|0", "a", _names(130)), Step("|b|0|0", "b", [f"b{n}" for n in range(8)])]
    run_steps(folder, steps, lambda g: None, work, progress=False, chunk_size=4,
              timed_chunks=True)  # fmt: skip
    # Each step starts with chunk_size items, then what 0.5 s holds at the rate seen.
    assert sizes == [4, 50, 50, 26, 4, 4]
    assert len(RunFolder(tmp_path, Note).records()) == 138

    # Never fewer than chunk_size, never more than MAX_CHUNK.
    monkeypatch.setattr(loop, "MAX_CHUNK", 20)
    sizes.clear()
    (tmp_path / "2").mkdir()
    other = RunFolder(tmp_path / "2", Note)
    other.done_keys()
    run_steps(other, [Step("|a|0|0", "a", _names(64))], lambda g: None, work,
              progress=False, chunk_size=4, timed_chunks=True)  # fmt: skip
    assert sizes == [4, 20, 20, 20]
