"""The run folder with a row type of its own, and the loop's ``stream`` and ``chunk_size``:
a row yielded is a row saved, whatever happens next."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from nlieval.runs import RECORDS, RunError, RunFolder, Step, run_steps
from nlieval.types import Record


@dataclass(frozen=True)
class Note:
    """A row type other than Record: key (name, n)."""

    name: str
    n: int
    text: str = ""

    @property
    def key(self) -> tuple[str, int]:
        return (self.name, self.n)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Note:
        return cls(str(d["name"]), int(d["n"]), str(d.get("text", "")))


class Boom(RuntimeError):
    pass


def test_a_row_type_of_its_own(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path, Note)
    assert folder.done_keys() == set()
    folder.append([Note("a", 1, "x"), Note("a", 2)])
    folder.append([Note("a", 1, "again"), Note("b", 1)])  # a saved key is not written again
    assert [r.key for r in folder.records()] == [("a", 1), ("a", 2), ("b", 1)]
    assert folder.records()[0].text == "x"
    with open(tmp_path / RECORDS, "a") as f:
        f.write('{"name": "c", "n"')  # a write cut by a crash
    assert len(RunFolder(tmp_path, Note).records()) == 3  # a partial tail is no row
    again = RunFolder(tmp_path, Note)
    assert again.done_keys() == {("a", 1), ("a", 2), ("b", 1)}  # and cut
    assert (tmp_path / RECORDS).read_text().endswith("}\n")  # by hand: torn
    # Read as Records, the rows are unreadable: said with file and line.
    with pytest.raises(RunError, match=f"{RECORDS}:1: field 'gold': missing"):
        RunFolder(tmp_path).records()


@pytest.mark.parametrize("stream", [False, True])
def test_stream_saves_each_row_as_it_comes(tmp_path: Path, stream: bool) -> None:
    names = [f"i{n}" for n in range(7)]
    folder = RunFolder(tmp_path, Note)
    folder.done_keys()
    calls: list[list[str]] = []

    def work(
        backend: None, step: Step[str], chunk: Sequence[str], progress: Callable[[int], Any]
    ) -> Iterator[Note]:
        calls.append(list(chunk))
        for name in chunk:
            if name == "i4":
                raise Boom(name)  # a crash in the middle of the second chunk
            yield Note(name, 1)

    step = Step("|t|0|0", "t", names)
    with pytest.raises(Boom):
        run_steps(folder, [step], lambda g: None, work, progress=False, chunk_size=3, stream=stream)
    assert calls == [["i0", "i1", "i2"], ["i3", "i4", "i5"]]
    saved = [r.name for r in folder.records()]
    # Per chunk, the second chunk's i3 is lost with the crash; streamed, it is kept.
    assert saved == (["i0", "i1", "i2", "i3"] if stream else ["i0", "i1", "i2"])
    assert RunFolder(tmp_path, Note).read_timing()["|t|0|0"]["items"] == 3

    # The same call again, for what is not saved, finishes without a duplicate.
    again = RunFolder(tmp_path, Note)
    done = again.done_keys()
    todo = [n for n in names if (n, 1) not in done]

    def fine(
        backend: None, step: Step[str], chunk: Sequence[str], progress: Callable[[int], Any]
    ) -> list[Note]:
        return [Note(n, 1) for n in chunk]

    run_steps(again, [Step("|t|0|0", "t", todo)], lambda g: None, fine, progress=False)
    assert [r.name for r in again.records()] == names
    assert again.read_timing()["|t|0|0"]["items"] == 3 + len(todo)


def test_a_stream_left_early_is_closed(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path, Note)
    folder.done_keys()
    closed: list[bool] = []

    def work(
        backend: None, step: Step[str], chunk: Sequence[str], progress: Callable[[int], Any]
    ) -> Iterator[Note]:
        try:
            yield Note("a", 1)
            yield Note("a", 2)
            yield Note("a", 3)
        finally:
            closed.append(True)

    def append(rows: Sequence[Note]) -> None:
        if rows[0].n == 2:
            raise Boom("disk full")
        RunFolder.append(folder, rows)

    folder.append = append  # type: ignore[method-assign]
    with pytest.raises(Boom):
        run_steps(
            folder, [Step("s", "s", ["x"])], lambda g: None, work, progress=False, stream=True
        )
    assert closed == [True]
    assert [r.n for r in RunFolder(tmp_path, Note).records()] == [1]


def test_records_stay_the_default_row(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    folder.done_keys()
    rec = Record("t", "1", "m", 0, 0, ("a", "b"), (0.0, -1.0), (0.7, 0.3), "a", "a")
    folder.append([rec])
    assert folder.records() == [rec] and folder.row is Record
