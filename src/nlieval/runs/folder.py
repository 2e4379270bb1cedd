"""The run folder: configuration, per-item records (append-only JSONL), results.

Layout of a run folder::

    config.json     the configuration that made it, with the command that made it as
                    ``"kind"`` (checked again on resume)
    records.jsonl   one row per line (a :class:`~nlieval.types.Record` unless the command
                    has a row type of its own), appended and fsync'ed while the run goes
    timing.json     scoring wall time and items per sweep point, kept while the run goes
    provenance.jsonl  one line per invocation (and per re-report): command, time, package
                    versions, git commit; appended, never rewritten
    results.json    configuration, provenance, few-shot draws and metrics (versioned:
                    :mod:`nlieval.runs.schema`)
    summary.md      the metrics as a Markdown table
    .lock           held (``flock``) by the one process writing the folder; holds its PID

A run killed at any moment (even mid-write) is resumed by the same command: a partial last
line is cut off, finished items are skipped, and no record is ever duplicated. A write
that fails (a full disk, a read-only folder) is a :class:`RunError` naming the file and
the reason; the records written before it are kept, and a line it cut short is removed
at once, so the same command resumes exactly once the cause is gone.

The files of a folder are its own: each is opened without following a symbolic link
(``O_NOFOLLOW``), and one that is a link, not a regular file, or (for a file written in
place: ``records.jsonl``, ``provenance.jsonl``, ``.lock``) has a second hard link is a
:class:`RunError` naming it, before anything is written: a write through it would change
a file elsewhere (a truncated ``.lock`` target, a records file of another run cut by the
repair of a torn line). The folder itself may be a link (a run kept on a bigger disk):
it holds no file of anyone else's. These rules are the ground's
(:mod:`nlieval.ground.files`), kept for every file nlieval writes.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, overload

from ..ground import (
    MAX_JSON_BYTES,
    DataError,
    FolderError,
    JsonLine,
    append_own,
    atomic_write,
    cut_torn_tail,
    make_folder,
    open_own,
    parse_json,
    read_jsonl,
    read_own,
    stat_own,
    write_error,
)
from ..types import Record

log = logging.getLogger(__name__)

RECORDS = "records.jsonl"
CONFIG = "config.json"
RESULTS = "results.json"
SUMMARY = "summary.md"
TIMING = "timing.json"
PROVENANCE = "provenance.jsonl"
#: The lock file of a folder being written (see :meth:`RunFolder.start`).
LOCK = ".lock"
#: The files written in place (appended to, truncated), not replaced by a rename.
IN_PLACE = (RECORDS, PROVENANCE, LOCK)
#: Fields a row type must have on every line (a missing one would silently count as
#: "no gold label" or "no prediction" and shrink n).
_REQUIRED: dict[type[Any], tuple[str, ...]] = {Record: ("gold", "pred")}
#: The version of the folder layout this code writes into ``config.json`` as
#: ``"folder_format"``.
#: 1 (none written): before it was; a config.json of version 1 without a
#: ``"kind"`` was made by ``nlieval run``.
FOLDER_FORMAT = 2


#: A run folder that cannot be used as asked (the message says why). The errors of its
#: files are the ground's (a link, a failed write): one class, so that whatever a run
#: folder refuses is caught as a RunError.
RunError = FolderError

#: The advice of a folder that refuses a run: the command's flags that get past it.
START_AGAIN = "choose another --out, or pass --overwrite to start it again"


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


class _Lock:
    """An exclusive ``flock`` on a folder's lock file, shared by every :class:`RunFolder`
    of this process on that folder (a second ``flock`` from this process would refuse it)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.users = 0


#: The locks this process holds, by resolved folder path.
_HELD: dict[Path, _Lock] = {}


def _acquire(folder: Path) -> Path:
    """Lock ``folder`` for this process, or raise :class:`RunError` naming the holder.

    An OS lock (``flock``) rather than a PID file: the kernel drops it when the process
    dies, so a kill -9 never leaves a stale lock behind.
    """
    key = folder.resolve()
    held = _HELD.get(key)
    if held is None:
        # Never through a link: the PID written below would truncate its target.
        fd = open_own(key / LOCK, os.O_RDWR | os.O_CREAT, in_place=True, root=key)
        try:
            held = _HELD[key] = _lock(fd, folder, key)
        except BaseException:
            # An interrupt (Ctrl-C) between the open and the bookkeeping would leave this
            # process holding a lock it cannot release (a notebook, a second run in it).
            if key not in _HELD:
                os.close(fd)
            raise
    held.users += 1
    return key


def _lock(fd: int, folder: Path, key: Path) -> _Lock:
    """Take the ``flock`` on the open lock file ``fd`` and write this PID into it (the
    caller closes ``fd`` on any failure)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        if err.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP):
            # Some network file systems have no locks: go on, but say what is lost.
            log.warning(
                "%s: this file system cannot lock %s (%s): nothing stops a second "
                "process from writing the folder at the same time",
                folder,
                LOCK,
                err.strerror,
            )
        else:
            pid = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            if err.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise RunError(
                    f"{folder} is being written by another nlieval process (PID {pid})",
                    advice="wait for it to finish, or choose another --out",
                ) from None
            raise RunError(f"{folder}: cannot lock {LOCK}: {err.strerror}") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as err:
        raise write_error(key / LOCK, err) from None
    return _Lock(fd)


def _release(key: Path) -> None:
    held = _HELD.get(key)
    if held is None:
        return
    held.users -= 1
    if held.users <= 0:
        del _HELD[key]
        os.close(held.fd)  # closing the last descriptor drops the flock


class RunFolder(Generic[R]):
    """A run folder on disk whose ``records.jsonl`` holds rows of type ``row``
    (:class:`~nlieval.types.Record` by default; see :class:`Row`).

    A writer calls :meth:`start`, which locks the folder for this process until
    :meth:`close` (or the object is collected, or the process ends, kill -9 included):
    a second process that starts the same folder gets a :class:`RunError` naming the PID
    that holds it. Readers take no lock.

    >>> rf = RunFolder(run_dir)
    >>> rec = Record("t", "1", "m", 0, 0, ("a", "b"), (0.0, -1.0), (0.7, 0.3), "a", "a")
    >>> rf.append([rec]); rf.append([rec])  # a key already written is not written again
    >>> rf.records_path.read_text().count("\\n"), rf.records() == [rec]
    (1, True)
    """

    @overload
    def __init__(self: RunFolder[Record], path: str | Path) -> None: ...

    @overload
    def __init__(self, path: str | Path, row: type[R]) -> None: ...

    def __init__(self, path: str | Path, row: type[Any] = Record) -> None:
        self.path = Path(path)
        self.row: type[R] = row
        self._keys: set[tuple[Any, ...]] = set()
        self._lock: Path | None = None

    def close(self) -> None:
        """Let other processes write the folder (a no-op when this object holds no lock)."""
        if self._lock is not None:
            _release(self._lock)
            self._lock = None

    def __del__(self) -> None:
        # At interpreter exit the module may be torn down first; the kernel drops the
        # lock with the process anyway.
        try:  # noqa: SIM105  (contextlib may be gone at exit too)
            self.close()
        except Exception:
            pass

    def __enter__(self) -> RunFolder[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def records_path(self) -> Path:
        return self.path / RECORDS

    def has(self, name: str) -> bool:
        """Whether the folder holds the file ``name`` (a link, or anything but a regular
        file, there is a :class:`RunError`: see the module docstring).

        >>> folder = RunFolder(run_dir); folder.has(RECORDS)
        False
        """
        return stat_own(self.path / name) is not None

    def exists(self) -> bool:
        return self.has(CONFIG) or self.has(RECORDS)

    def check_files(self) -> None:
        """Refuse (:class:`RunError` naming the file) a folder whose own files include a
        symbolic link or something other than a regular file, before anything is
        written (see the module docstring)."""
        for name in (CONFIG, RESULTS, SUMMARY, TIMING):
            stat_own(self.path / name)
        for name in IN_PLACE:
            stat_own(self.path / name, in_place=True)

    def start(
        self,
        config: FolderConfig,
        overwrite: bool = False,
        fingerprints: Mapping[str, str] | None = None,
        *,
        kept: bool = False,
    ) -> None:
        """Create the folder, or check that an existing one was made by a compatible config;
        either way lock it for this process first (see the class docstring).

        ``fingerprints`` (name -> fingerprint of what the numbers depend on: the data as
        read, the prompt template) are kept in ``config.json``; once the folder holds
        records, or (``kept``) other work made from them (a trained checkpoint), a name
        saved with another fingerprint is a :class:`RunError` saying what changed. Names
        new to the folder (a task added) are kept beside the saved ones."""
        make_folder(self.path)  # the folder the user named (it may be a link)
        self.check_files()
        if self._lock is None:
            self._lock = _acquire(self.path)
        cfg_path = self.path / CONFIG
        has_config = self.has(CONFIG)
        if not has_config and not overwrite:
            # A kill inside the first write of config.json leaves its temporary file.
            held = sorted(
                p.name for p in self.path.iterdir() if not p.name.startswith((".", CONFIG + "."))
            )
            if held:
                # Without its config.json nothing says what made these files: re-creating
                # it from this command's settings could claim them for another setup.
                raise RunError(
                    f"{self.path} holds files ({', '.join(held[:3])}"
                    f"{', ...' if len(held) > 3 else ''}) but no {CONFIG}: not a run folder "
                    "of nlieval, or its config.json was removed",
                    advice=START_AGAIN,
                )
        if has_config and not overwrite:
            old = _read_json(cfg_path)
            version = _check_format(cfg_path, old)
            old_kind = old.get("kind", "run" if version == 1 else None)
            if old_kind != config.KIND:
                raise RunError(
                    f"{self.path} holds a run of `nlieval {old_kind}`, not of "
                    f"`nlieval {config.KIND}`",
                    advice="choose another --out",
                )
            saved = _identity(type(config), old)
            now = config.to_dict()
            diff = [f for f in config.IDENTITY if saved[f] != now.get(f)]
            if diff:
                detail = ", ".join(f"{f}: {saved[f]!r} -> {now.get(f)!r}" for f in diff)
                raise RunError(
                    f"{self.path} holds a run made with other settings ({detail})",
                    advice=START_AGAIN,
                    changed=tuple(diff),
                )
        known: dict[str, str] = {}
        if has_config and not overwrite:
            old_prints = _read_json(cfg_path).get("fingerprints") or {}
            known = {str(k): str(v) for k, v in old_prints.items()}
            now = dict(fingerprints or {})
            # Before any record exists (a crash or Ctrl-C before scoring, a wrong
            # --data-dir corrected) nothing depends on the saved fingerprints yet.
            records = stat_own(self.records_path)
            has_records = kept or (records is not None and records.st_size > 0)
            changed = [k for k, v in now.items() if has_records and k in known and known[k] != v]
            if changed:
                detail = ", ".join(f"{k}: {known[k]} -> {now[k]}" for k in changed)
                raise RunError(
                    f"{self.path} holds records made from other contents ({detail}): a data "
                    "file, template or the model's weights changed, or the data folder or "
                    "template given names other files",
                    # No `changed`: settings are not what differs, and going back to
                    # other settings would not make these records right.
                    advice=START_AGAIN,
                )
        if overwrite:
            for name in (RECORDS, RESULTS, SUMMARY, TIMING, PROVENANCE):
                try:
                    (self.path / name).unlink(missing_ok=True)
                except OSError as err:
                    raise write_error(self.path / name, err, "remove") from None
        saved = {"folder_format": FOLDER_FORMAT, "kind": config.KIND, **config.to_dict()}
        if has_config and not overwrite:
            # The folder's config describes all its records: what may grow between
            # invocations is kept grown (a later, smaller --limit does not hide items).
            old = _read_json(cfg_path)
            for name in getattr(type(config), "GROWS", ()):
                saved[name] = grown(old.get(name), saved.get(name))
        if known or fingerprints:
            saved["fingerprints"] = {**known, **(fingerprints or {})}
        atomic_write(cfg_path, json.dumps(saved, indent=2) + "\n", root=self.path)

    def repair(self) -> int:
        """Cut a partial last line left by a crash mid-write; return bytes removed."""
        return cut_torn_tail(self.records_path, root=self.path)

    def iter_records(self) -> Iterator[R]:
        """Every row, first occurrence of each key only.

        A line that is not a row (not UTF-8, not JSON, a field missing) is a
        :class:`RunError` naming the file and line; so are two rows with one key that
        differ (which one holds?). A blank line, or a second copy of a row, is skipped
        with a warning naming the line.
        """
        p = self.records_path
        if not self.has(RECORDS):
            return
        # key -> (line, hash of the row) of its first occurrence: a row seen twice is
        # compared by hash, so that a large folder is not held in memory twice.
        seen: dict[tuple[Any, ...], tuple[int, int]] = {}
        blank: list[int] = []
        copies: list[int] = []
        required = _REQUIRED.get(self.row, ())
        with os.fdopen(open_own(p, os.O_RDONLY), "rb") as f:
            try:
                for row in read_jsonl(p, f, whole_lines=True, blank=blank):
                    rec = self._row(row, required)
                    digest = hash(row.text.strip())
                    first = seen.get(rec.key)
                    if first is None:
                        seen[rec.key] = (row.line, digest)
                        yield rec
                    elif first[1] != digest:
                        raise RunError(
                            f"{p}:{row.line}: a second, different record for {rec.key} (the "
                            f"first is on line {first[0]})",
                            advice="remove the wrong one, or pass --overwrite to run again",
                        )
                    else:
                        copies.append(row.line)
            except DataError as err:
                raise RunError(str(err)) from None
        # One warning per kind, not one per line (a folder written twice has thousands).
        if blank:
            log.warning("%s:%d: %d blank line(s) skipped", p, blank[0], len(blank))
        if copies:
            log.warning("%s:%d: %d copies of earlier records skipped", p, copies[0], len(copies))

    def _row(self, row: JsonLine, required: Sequence[str]) -> R:
        """The row a line holds; else the :class:`DataError` of the line."""
        missing = [k for k in required if k not in row.value]
        if missing:
            more = f" (so are {', '.join(map(repr, missing[1:]))})" if missing[1:] else ""
            raise DataError(row.path, row.line, missing[0], "missing" + more)
        try:
            return self.row.from_dict(row.value)
        except KeyError as err:
            raise DataError(row.path, row.line, str(err.args[0]), "missing") from None
        except (TypeError, ValueError) as err:
            raise DataError(row.path, row.line, None, f"unreadable record: {err}") from None

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
        rows = "".join(r.to_json() + "\n" for r in new).encode("utf-8")
        append_own(self.records_path, rows, root=self.path)
        self._keys.update(r.key for r in new)

    def write_results(self, results: Mapping[str, Any], summary: str) -> None:
        text = json.dumps(results, indent=2, allow_nan=True) + "\n"
        atomic_write(self.path / RESULTS, text, root=self.path)
        atomic_write(self.path / SUMMARY, summary, root=self.path)

    def append_provenance(self, entry: Mapping[str, Any]) -> None:
        """Append one invocation's provenance (one JSON line, fsync'ed); lines already
        there are never rewritten. A folder of an older version, whose ``results.json``
        kept one ``environment`` instead, gets that environment as its first line."""
        path = self.path / PROVENANCE
        cut_torn_tail(path, root=self.path)  # a line cut short by a kill would merge with the next
        lines = []
        if not self.has(PROVENANCE):
            env = self.read_results().get("environment")
            if isinstance(env, Mapping):
                lines.append({**env, "command": "unknown (results version 1)"})
        lines.append(dict(entry))
        text = "".join(json.dumps(x, sort_keys=True) + "\n" for x in lines)
        append_own(path, text.encode(), root=self.path)

    def read_provenance(self) -> list[dict[str, Any]]:
        """Every provenance line, oldest first (a torn last line from a crash is left out).

        >>> folder = RunFolder(run_dir); folder.append_provenance({"command": "run"})
        >>> folder.read_provenance()
        [{'command': 'run'}]
        """
        path = self.path / PROVENANCE
        if not self.has(PROVENANCE):
            return []
        # Streamed, each line bounded (read_jsonl): a file of gigabytes without a line
        # break is one line of error, not read whole into memory.
        with os.fdopen(open_own(path, os.O_RDONLY), "rb") as f:
            try:
                return [row.value for row in read_jsonl(path, f, whole_lines=True)]
            except DataError as err:
                raise RunError(str(err)) from None

    def read_timing(self) -> dict[str, dict[str, Any]]:
        """Scoring wall time per sweep point, summed over invocations."""
        return _read_json(self.path / TIMING) if self.has(TIMING) else {}

    def write_timing(self, timing: Mapping[str, Any]) -> None:
        atomic_write(self.path / TIMING, json.dumps(timing, indent=1) + "\n", root=self.path)

    def read_results(self) -> dict[str, Any]:
        return _read_json(self.path / RESULTS) if self.has(RESULTS) else {}

    def read_config(self) -> dict[str, Any] | None:
        """The saved ``config.json`` as a dict (None when there is none); the command
        that made the folder turns it back into its config class."""
        p = self.path / CONFIG
        if not self.has(CONFIG):
            return None
        saved = _read_json(p)
        _check_format(p, saved)
        return saved


def _check_format(path: Path, saved: Mapping[str, Any]) -> int:
    """The folder format of a saved ``config.json``; a newer one is a :class:`RunError`
    (for readers too: a report must not rewrite what it cannot read)."""
    version = saved.get("folder_format", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version > FOLDER_FORMAT:
        raise RunError(
            f"{path}: a run folder of format {version!r}, written by a newer nlieval (this "
            f"one reads up to {FOLDER_FORMAT}): upgrade nlieval"
        )
    return version


def grown(old: Any, new: Any) -> Any:
    """What a folder holds after two invocations of a setting that may grow: the ordered
    union of two lists, the larger of two counts, and None (no limit) over any count.

    >>> grown(["snli"], ["hans", "snli"]), grown(5, 2), grown(None, 3), grown(None, None)
    (['snli', 'hans'], 5, None, None)
    """
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        return list(old) + [x for x in new if x not in old]
    if isinstance(old, int) and isinstance(new, int):
        return max(old, new)
    return None if old is None or new is None else new


def _identity(cls: type[Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """The identity fields of a saved ``config.json``, as the config class reads it back:
    a field an older version did not save takes its default, and a value the class
    derives (the engine of a model) is derived the same way for old and new folders."""
    from_dict = getattr(cls, "from_dict", None)
    if callable(from_dict):
        try:
            d = from_dict(old).to_dict()
        except (TypeError, ValueError, KeyError):
            d = None  # a config this version cannot build: compare what was saved
        if isinstance(d, dict):
            return {f: d.get(f) for f in cls.IDENTITY}
    # A derived value (a property) has no default to stand in for it.
    defaults = {f: getattr(cls, f, None) for f in cls.IDENTITY}
    defaults = {f: None if isinstance(v, property) else v for f, v in defaults.items()}
    return {f: old.get(f, defaults[f]) for f in cls.IDENTITY}


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object file of the folder; anything else is a one-line :class:`RunError`."""
    try:
        # Bounded in size and depth (ground's JSON reader): a hostile file is one line.
        d = parse_json(read_own(path, MAX_JSON_BYTES), path)
    except DataError as err:
        raise RunError(str(err)) from None
    if not isinstance(d, dict):
        raise RunError(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


def iter_run_records(folders: Iterable[str | Path], *, as_points: bool = False) -> Iterator[Record]:
    """Records of several run folders, in order; with ``as_points``, each as
    :func:`as_point` takes it (the readers that pair records of folders by sweep point)."""
    for folder in folders:
        rf = RunFolder(folder)
        if not rf.exists():
            raise RunError(f"{folder} is not a run folder (no {CONFIG} or {RECORDS})")
        records: Iterator[Record] = rf.iter_records()
        yield from map(as_point, records) if as_points else records


@functools.cache
def _task_name(task: str) -> str:
    if not Path(task).is_file():
        return task
    # Imported here: the task registry is needed only by readers of a task file's records.
    from ..data import get_task

    try:
        return get_task(task).name
    except (DataError, OSError, ValueError):
        return task


def as_point(record: Record) -> Record:
    """``record`` under the names of its sweep point (task, checkpoint, k, seed), for a
    reader that pairs the records of several folders by sweep point (``compare``; the
    tables of ``grid``, ``report`` and ``sci-report`` keep their own handling of train
    folders' checkpoints, ``over_checkpoints``). A task is named as
    ``run`` names it: ``nlieval train`` names a task YAML given as ``--test-task`` by its
    path (kept so, for its folders to resume), and here takes the name the file declares.
    A seed model of a train folder (``run --model TRAIN_FOLDER`` scores each as a
    checkpoint, :func:`nlieval.classifiers.training_seed`) is that training seed with no
    checkpoint: a classifier takes one run seed, and its replicates are its training
    seeds.

    >>> r = Record("smoke", "1", "runs/clf", 0, 0, ("a", "b"), (-1.0, -2.0), (0.7, 0.3),
    ...            "a", "a", checkpoint="runs/clf/seed2")
    >>> p = as_point(r); (p.task, p.checkpoint, p.seed)
    ('smoke', None, 2)
    >>> step = replace(r, checkpoint="runs/clf/step-100")  # a checkpoint of a sweep
    >>> as_point(step) == step
    True
    """
    from ..classifiers import training_seed

    seed = training_seed(record.model, record.checkpoint)
    task = _task_name(record.task)
    if seed is None and task == record.task:
        return record
    if seed is None:
        return replace(record, task=task)
    return replace(record, task=task, checkpoint=None, seed=seed)
