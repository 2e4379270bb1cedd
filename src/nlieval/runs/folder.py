"""The run folder: configuration, per-item records (append-only JSONL), results.

Layout of a run folder::

    config.json     the configuration that made it, with the command that made it as
                    ``"kind"`` (checked again on resume)
    records.jsonl   one row per line (a :class:`~nlieval.types.Record` unless the command
                    has a row type of its own), appended and fsync'ed while the run goes
    timing.json     scoring wall time and items per sweep point, kept while the run goes
    results.json    configuration, versions, git commit, few-shot draws and metrics
    summary.md      the metrics as a Markdown table

A run killed at any moment (even mid-write) is resumed by the same command: a partial last
line is cut off, finished items are skipped, and no record is ever duplicated.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, overload

from ..types import Record

RECORDS = "records.jsonl"
CONFIG = "config.json"
RESULTS = "results.json"
SUMMARY = "summary.md"
TIMING = "timing.json"
#: The command of a folder whose config.json names none (folders of older versions).
DEFAULT_KIND = "run"


class RunError(RuntimeError):
    """A run folder that cannot be used as asked (the message says why)."""


_Self = TypeVar("_Self", bound="Row")


class Row(Protocol):
    """What a line of ``records.jsonl`` must be: a key that identifies it within the folder
    (a second row with a known key is never written), one JSON line, and back.
    :class:`~nlieval.types.Record` is the row of ``run`` and ``instruct``."""

    @property
    def key(self) -> tuple[Any, ...]: ...

    def to_json(self) -> str: ...

    @classmethod
    def from_dict(cls: type[_Self], d: Mapping[str, Any]) -> _Self: ...


R = TypeVar("R", bound=Row)


class FolderConfig(Protocol):
    """What a run folder needs of the configuration that made it: the command that made
    it (``KIND``, saved as ``"kind"`` in ``config.json``; absent means ``run``), the
    fields that must match to resume it (``IDENTITY``) and a JSON form."""

    KIND: ClassVar[str]
    IDENTITY: ClassVar[tuple[str, ...]]

    def to_dict(self) -> dict[str, Any]: ...


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers (and a crash) only ever see a
    complete file: write a temporary file beside it, fsync, rename.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> atomic_write(d / "a.txt", "hi"); (d / "a.txt").read_text()
    'hi'
    """
    # Write-then-rename: readers (and a crash) only ever see a complete file.
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class RunFolder(Generic[R]):
    """A run folder on disk whose ``records.jsonl`` holds rows of type ``row``
    (:class:`~nlieval.types.Record` by default; see :class:`Row`).

    >>> rf = RunFolder("runs/demo")            # doctest: +SKIP
    >>> done = rf.done_keys()                  # doctest: +SKIP
    """

    @overload
    def __init__(self: RunFolder[Record], path: str | Path) -> None: ...

    @overload
    def __init__(self, path: str | Path, row: type[R]) -> None: ...

    def __init__(self, path: str | Path, row: type[Any] = Record) -> None:
        self.path = Path(path)
        self.row: type[R] = row
        self._keys: set[tuple[Any, ...]] = set()

    @property
    def records_path(self) -> Path:
        return self.path / RECORDS

    def exists(self) -> bool:
        return (self.path / CONFIG).is_file() or self.records_path.is_file()

    def start(self, config: FolderConfig, overwrite: bool = False) -> None:
        """Create the folder, or check that an existing one was made by a compatible config."""
        self.path.mkdir(parents=True, exist_ok=True)
        cfg_path = self.path / CONFIG
        if cfg_path.is_file() and not overwrite:
            old = json.loads(cfg_path.read_text(encoding="utf-8"))
            old_kind = old.get("kind", DEFAULT_KIND)
            if old_kind != config.KIND:
                raise RunError(
                    f"{self.path} holds a run of `nlieval {old_kind}`, not of "
                    f"`nlieval {config.KIND}`; choose another --out"
                )
            # A field that an older version did not save had its default value.
            saved = {f: old.get(f, getattr(type(config), f, None)) for f in config.IDENTITY}
            now = config.to_dict()
            diff = [f for f in config.IDENTITY if saved[f] != now.get(f)]
            if diff:
                detail = ", ".join(f"{f}: {saved[f]!r} -> {now.get(f)!r}" for f in diff)
                raise RunError(
                    f"{self.path} holds a run made with other settings ({detail}); "
                    "choose another --out, or pass --overwrite to start it again"
                )
        if overwrite:
            for name in (RECORDS, RESULTS, SUMMARY, TIMING):
                (self.path / name).unlink(missing_ok=True)
        atomic_write(cfg_path, json.dumps(config.to_dict(), indent=2) + "\n")

    def repair(self) -> int:
        """Cut a partial last line left by a crash mid-write; return bytes removed."""
        p = self.records_path
        if not p.is_file():
            return 0
        size = p.stat().st_size
        if size == 0:
            return 0
        with open(p, "rb+") as f:
            # Scan back for the last newline in blocks: the file may be large.
            pos, block = size, 1 << 16
            while pos > 0:
                start = max(0, pos - block)
                f.seek(start)
                chunk = f.read(pos - start)
                nl = chunk.rfind(b"\n")
                if nl >= 0:
                    end = start + nl + 1
                    break
                pos = start
            else:
                end = 0
            if end < size:
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
            return size - end

    def iter_records(self) -> Iterator[R]:
        """Every row, first occurrence of each key only."""
        p = self.records_path
        if not p.is_file():
            return
        seen: set[tuple[Any, ...]] = set()
        with open(p, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                if not line.endswith("\n"):
                    break  # a partial tail from a crash: not a record yet
                try:
                    rec = self.row.from_dict(json.loads(line))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
                    raise RunError(f"{p}:{lineno}: unreadable record: {err}") from err
                if rec.key not in seen:
                    seen.add(rec.key)
                    yield rec

    def records(self) -> list[R]:
        return list(self.iter_records())

    def done_keys(self) -> set[tuple[Any, ...]]:
        """Keys of the finished records (after repairing a crashed tail)."""
        self.repair()
        self._keys = {r.key for r in self.iter_records()}
        return set(self._keys)

    def append(self, records: Sequence[R]) -> None:
        """Append rows durably (one write, then fsync); keys already present are not
        written again (:meth:`done_keys` reads those of an existing folder)."""
        new = [r for r in records if r.key not in self._keys]
        if not new:
            return
        data = "".join(r.to_json() + "\n" for r in new)
        with open(self.records_path, "a", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        self._keys.update(r.key for r in new)

    def write_results(self, results: Mapping[str, Any], summary: str) -> None:
        atomic_write(self.path / RESULTS, json.dumps(results, indent=2, allow_nan=True) + "\n")
        atomic_write(self.path / SUMMARY, summary)

    def read_timing(self) -> dict[str, dict[str, Any]]:
        """Scoring wall time per sweep point, summed over invocations."""
        p = self.path / TIMING
        return dict(json.loads(p.read_text(encoding="utf-8"))) if p.is_file() else {}

    def write_timing(self, timing: Mapping[str, Any]) -> None:
        atomic_write(self.path / TIMING, json.dumps(timing, indent=1) + "\n")

    def read_results(self) -> dict[str, Any]:
        p = self.path / RESULTS
        if not p.is_file():
            return {}
        return dict(json.loads(p.read_text(encoding="utf-8")))

    def read_config(self) -> dict[str, Any] | None:
        """The saved ``config.json`` as a dict (None when there is none); the command
        that made the folder turns it back into its config class."""
        p = self.path / CONFIG
        if not p.is_file():
            return None
        return dict(json.loads(p.read_text(encoding="utf-8")))


def iter_run_records(folders: Iterable[str | Path]) -> Iterator[Record]:
    """Records of several run folders, in order."""
    for folder in folders:
        rf = RunFolder(folder)
        if not rf.exists():
            raise RunError(f"{folder} is not a run folder (no {CONFIG} or {RECORDS})")
        yield from rf.iter_records()
