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
it holds no file of anyone else's.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, overload

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


def _umask() -> int:
    # Linux shows the umask in /proc; elsewhere it can only be read by setting it (set
    # and restored at once: racy only against a thread creating a file in that instant).
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers (and a crash) only ever see a
    complete file: write a temporary file beside it, fsync, rename. A ``path`` that is a
    symbolic link or not a regular file is refused, and a write that fails (a full disk,
    a read-only folder) is a :class:`RunError` naming ``path``; either way the old file
    is left as it was.

    >>> path = Path(run_dir) / "a.txt"
    >>> atomic_write(path, "old"); atomic_write(path, "new"); path.read_text()
    'new'
    >>> sorted(p.name for p in Path(run_dir).iterdir())  # no temporary file left behind
    ['a.txt']
    >>> (Path(run_dir) / "b.txt").symlink_to(path); atomic_write(Path(run_dir) / "b.txt", "x")
    Traceback (most recent call last):
    nlieval.runs.folder.RunError: .../b.txt is a symbolic link (to .../a.txt): ...
    """
    path = Path(path)
    _lstat(path)  # a link is refused, not silently replaced by a file of its own
    try:
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    except OSError as err:
        raise _write_error(path, err) from None
    try:
        try:
            _write_all(fd, text.encode("utf-8"))
            # mkstemp makes the file private (0600); a result file is as readable as
            # any other file the user writes (the umask decides).
            os.fchmod(fd, 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        # The rename replaces a link put there since the check, never its target.
        os.replace(tmp, path)
    except OSError as err:
        raise _write_error(path, err) from None
    finally:
        if os.path.lexists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                log.warning("%s: cannot remove the temporary file %s", path, tmp)


def make_folder(path: str | Path) -> Path:
    """Make the folder ``path`` (and its parents) unless it exists; a path that is a
    file, lies below a file, or cannot be made (a read-only file system, no permission)
    is a :class:`RunError` naming it and why.

    >>> make_folder(Path(run_dir) / "a" / "b").is_dir()
    True
    >>> _ = (Path(run_dir) / "f").write_text("x"); make_folder(Path(run_dir) / "f" / "out")
    Traceback (most recent call last):
    nlieval.runs.folder.RunError: .../f/out: cannot make this folder: .../f is a file
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        if path.is_symlink() and not path.exists():
            why = f"it is a symbolic link to {os.readlink(path)}, which does not exist"
            raise RunError(f"{path}: cannot make this folder: {why}") from None
        if os.path.lexists(path) and not path.is_dir():
            raise RunError(f"{path} is a file, not a folder; choose another --out") from None
        above = next((p for p in path.parents if os.path.lexists(p)), None)
        if above is not None and not above.is_dir():
            raise RunError(f"{path}: cannot make this folder: {above} is a file") from None
        raise _write_error(path, err, "make this folder") from None
    return path


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write less than asked (a signal, a nearly full disk).
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_error(path: Path, err: OSError, action: str = "write") -> RunError:
    """One line for a failed write of ``path``: the OS's reason and what to do."""
    hint = ""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = (
            "; what was written before is kept: free some space, then run the same "
            "command again to resume"
        )
    elif err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "; choose another --out"
    return RunError(f"{path}: cannot {action}: {err.strerror or err}{hint}")


def _lstat(path: Path, *, in_place: bool = False) -> os.stat_result | None:
    """What ``path`` is, without following a link: None when it does not exist; a
    symbolic link, or anything but a regular file, is a :class:`RunError` naming it, and
    so is (``in_place``: a file appended to or truncated) one with a second hard link."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise RunError(f"{path}: cannot read: {err.strerror or err}") from None
    if stat.S_ISLNK(st.st_mode):
        raise _link_error(path)
    if not stat.S_ISREG(st.st_mode):
        raise RunError(
            f"{path} is not a regular file (a folder, a pipe or a device); move it away, "
            "or choose another --out"
        )
    if in_place:
        _single(path, st)
    return st


def _link_error(path: Path) -> RunError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return RunError(
        f"{path} is a symbolic link (to {target}): nlieval reads and writes its own files "
        "only, never through a link (a write would change the file it points to); replace "
        "the link with a copy of that file, or choose another --out"
    )


def _single(path: Path, st: os.stat_result) -> None:
    if st.st_nlink > 1:
        raise RunError(
            f"{path} has {st.st_nlink} hard links: a write here would change the file under "
            "its other names too (a copy made with `cp -l`?); give it a copy of its own "
            "(cp FILE FILE.new && mv FILE.new FILE), or choose another --out"
        )


def _open(path: Path, flags: int, *, in_place: bool = False) -> int:
    """A descriptor of the regular file ``path``, opened without following a link
    (``O_NOFOLLOW`` closes the window between the check and the open). ``in_place``
    (a file appended to or truncated) also refuses a file with a second hard link, whose
    other name a write would change too. Every failure is a :class:`RunError`."""
    _lstat(path, in_place=in_place)
    writing = bool(flags & (os.O_WRONLY | os.O_RDWR))
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP and path.is_symlink():
            raise _link_error(path) from None  # made a link since the check
        if writing:
            raise _write_error(path, err) from None
        raise RunError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RunError(f"{path} is not a regular file; move it away, or choose another --out")
        if in_place:
            _single(path, st)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_bytes(path: Path) -> bytes:
    """The whole of a file of the folder (see :func:`_open`)."""
    with os.fdopen(_open(path, os.O_RDONLY), "rb") as f:
        try:
            return f.read()
        except OSError as err:
            raise RunError(f"{path}: cannot read: {err.strerror or err}") from None


def _append(path: Path, data: bytes) -> None:
    """Append ``data`` durably (write, fsync). A failed write (a full disk) is cut off
    again at once, so that no partial line is left behind it."""
    fd = _open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, in_place=True)
    try:
        before = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except OSError as err:
            # Freeing blocks needs no space; should it fail all the same, the next
            # start cuts the torn line (cut_torn_tail).
            with contextlib.suppress(OSError):
                os.ftruncate(fd, before)
            raise _write_error(path, err) from None
    finally:
        os.close(fd)


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
        fd = _open(key / LOCK, os.O_RDWR | os.O_CREAT, in_place=True)
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
                try:
                    pid = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
                finally:
                    os.close(fd)
                if err.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise RunError(
                        f"{folder} is being written by another nlieval process (PID {pid}); "
                        "wait for it to finish, or choose another --out"
                    ) from None
                raise RunError(f"{folder}: cannot lock {LOCK}: {err.strerror}") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as err:
            os.close(fd)
            raise _write_error(key / LOCK, err) from None
        held = _HELD[key] = _Lock(fd)
    held.users += 1
    return key


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
        return _lstat(self.path / name) is not None

    def exists(self) -> bool:
        return self.has(CONFIG) or self.has(RECORDS)

    def check_files(self) -> None:
        """Refuse (:class:`RunError` naming the file) a folder whose own files include a
        symbolic link or something other than a regular file, before anything is
        written (see the module docstring)."""
        for name in (CONFIG, RESULTS, SUMMARY, TIMING):
            _lstat(self.path / name)
        for name in IN_PLACE:
            _lstat(self.path / name, in_place=True)

    def start(
        self,
        config: FolderConfig,
        overwrite: bool = False,
        fingerprints: Mapping[str, str] | None = None,
    ) -> None:
        """Create the folder, or check that an existing one was made by a compatible config;
        either way lock it for this process first (see the class docstring).

        ``fingerprints`` (name -> fingerprint of what the numbers depend on: the data as
        read, the prompt template) are kept in ``config.json``; a name saved with another
        fingerprint is a :class:`RunError` saying what changed. Names new to the folder
        (a task added) are kept beside the saved ones."""
        make_folder(self.path)
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
                    "of nlieval, or its config.json was removed; choose another --out, or "
                    "pass --overwrite to start it again"
                )
        if has_config and not overwrite:
            old = _read_json(cfg_path)
            version = _check_format(cfg_path, old)
            old_kind = old.get("kind", "run" if version == 1 else None)
            if old_kind != config.KIND:
                raise RunError(
                    f"{self.path} holds a run of `nlieval {old_kind}`, not of "
                    f"`nlieval {config.KIND}`; choose another --out"
                )
            saved = _identity(type(config), old)
            now = config.to_dict()
            diff = [f for f in config.IDENTITY if saved[f] != now.get(f)]
            if diff:
                detail = ", ".join(f"{f}: {saved[f]!r} -> {now.get(f)!r}" for f in diff)
                raise RunError(
                    f"{self.path} holds a run made with other settings ({detail}); "
                    "choose another --out, or pass --overwrite to start it again"
                )
        known: dict[str, str] = {}
        if has_config and not overwrite:
            old_prints = _read_json(cfg_path).get("fingerprints") or {}
            known = {str(k): str(v) for k, v in old_prints.items()}
            now = dict(fingerprints or {})
            # Before any record exists (a crash or Ctrl-C before scoring, a wrong
            # --data-dir corrected) nothing depends on the saved fingerprints yet.
            records = _lstat(self.records_path)
            has_records = records is not None and records.st_size > 0
            changed = [k for k, v in now.items() if has_records and k in known and known[k] != v]
            if changed:
                detail = ", ".join(f"{k}: {known[k]} -> {now[k]}" for k in changed)
                raise RunError(
                    f"{self.path} holds records made from other contents ({detail}): a data "
                    "file, template or the model's weights changed, or --data-dir/--template "
                    "names other files; choose another --out, or pass --overwrite to start "
                    "it again"
                )
        if overwrite:
            for name in (RECORDS, RESULTS, SUMMARY, TIMING, PROVENANCE):
                try:
                    (self.path / name).unlink(missing_ok=True)
                except OSError as err:
                    raise _write_error(self.path / name, err, "remove") from None
        saved = {"folder_format": FOLDER_FORMAT, "kind": config.KIND, **config.to_dict()}
        if has_config and not overwrite:
            # The folder's config describes all its records: what may grow between
            # invocations is kept grown (a later, smaller --limit does not hide items).
            old = _read_json(cfg_path)
            for name in getattr(type(config), "GROWS", ()):
                saved[name] = grown(old.get(name), saved.get(name))
        if known or fingerprints:
            saved["fingerprints"] = {**known, **(fingerprints or {})}
        atomic_write(cfg_path, json.dumps(saved, indent=2) + "\n")

    def repair(self) -> int:
        """Cut a partial last line left by a crash mid-write; return bytes removed."""
        return cut_torn_tail(self.records_path)

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
        with os.fdopen(_open(p, os.O_RDONLY), "rb") as f:
            for lineno, raw in enumerate(f, 1):
                if not raw.endswith(b"\n"):
                    break  # a partial tail from a crash: not a record yet
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError as err:
                    raise RunError(f"{p}:{lineno}: not UTF-8 text ({err.reason})") from None
                if not line.strip():
                    blank.append(lineno)
                    continue
                try:
                    d = json.loads(line)
                    if not isinstance(d, dict):
                        raise TypeError(f"expected a JSON object, got {type(d).__name__}")
                    missing = [k for k in required if k not in d]
                    if missing:
                        raise KeyError(", ".join(missing))
                    rec = self.row.from_dict(d)
                except json.JSONDecodeError as err:
                    raise RunError(f"{p}:{lineno}: unreadable record: {err.msg}") from None
                except KeyError as err:
                    raise RunError(f"{p}:{lineno}: unreadable record: no field {err}") from None
                except (TypeError, ValueError) as err:
                    raise RunError(f"{p}:{lineno}: unreadable record: {err}") from None
                digest = hash(raw.strip())
                first = seen.get(rec.key)
                if first is None:
                    seen[rec.key] = (lineno, digest)
                    yield rec
                elif first[1] != digest:
                    raise RunError(
                        f"{p}:{lineno}: a second, different record for {rec.key} (the first is "
                        f"on line {first[0]}); remove the wrong one, or pass --overwrite to run "
                        "again"
                    )
                else:
                    copies.append(lineno)
        # One warning per kind, not one per line (a folder written twice has thousands).
        if blank:
            log.warning("%s:%d: %d blank line(s) skipped", p, blank[0], len(blank))
        if copies:
            log.warning("%s:%d: %d copies of earlier records skipped", p, copies[0], len(copies))

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
        _append(self.records_path, "".join(r.to_json() + "\n" for r in new).encode("utf-8"))
        self._keys.update(r.key for r in new)

    def write_results(self, results: Mapping[str, Any], summary: str) -> None:
        atomic_write(self.path / RESULTS, json.dumps(results, indent=2, allow_nan=True) + "\n")
        atomic_write(self.path / SUMMARY, summary)

    def append_provenance(self, entry: Mapping[str, Any]) -> None:
        """Append one invocation's provenance (one JSON line, fsync'ed); lines already
        there are never rewritten. A folder of an older version, whose ``results.json``
        kept one ``environment`` instead, gets that environment as its first line."""
        path = self.path / PROVENANCE
        cut_torn_tail(path)  # a line cut short by a kill would merge with the next
        lines = []
        if not self.has(PROVENANCE):
            env = self.read_results().get("environment")
            if isinstance(env, Mapping):
                lines.append({**env, "command": "unknown (results version 1)"})
        lines.append(dict(entry))
        _append(path, "".join(json.dumps(x, sort_keys=True) + "\n" for x in lines).encode())

    def read_provenance(self) -> list[dict[str, Any]]:
        """Every provenance line, oldest first (a torn last line from a crash is left out).

        >>> folder = RunFolder(run_dir); folder.append_provenance({"command": "run"})
        >>> folder.read_provenance()
        [{'command': 'run'}]
        """
        path = self.path / PROVENANCE
        if not self.has(PROVENANCE):
            return []
        try:
            text = _read_bytes(path).decode("utf-8")
        except UnicodeDecodeError as err:
            raise RunError(f"{path}: not UTF-8 text ({err.reason})") from None
        out = []
        for lineno, line in enumerate(text.splitlines(True), 1):
            if not line.endswith("\n") or not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as err:
                raise RunError(f"{path}:{lineno}: unreadable provenance: {err.msg}") from None
            if not isinstance(entry, dict):
                raise RunError(f"{path}:{lineno}: expected a JSON object")
            out.append(entry)
        return out

    def read_timing(self) -> dict[str, dict[str, Any]]:
        """Scoring wall time per sweep point, summed over invocations."""
        return _read_json(self.path / TIMING) if self.has(TIMING) else {}

    def write_timing(self, timing: Mapping[str, Any]) -> None:
        atomic_write(self.path / TIMING, json.dumps(timing, indent=1) + "\n")

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


def cut_torn_tail(p: Path) -> int:
    """Cut a partial last line (a write cut short by a crash) off an append-only JSONL
    file; return the bytes removed. The file is opened for writing only when there is a
    line to cut (a folder on a read-only disk can still be read), and never through a
    link (:class:`RunError`: the cut would shorten the file it points to).

    >>> p = Path(run_dir) / "a.jsonl"; _ = p.write_bytes(b'{"a": 1}\\n{"b"')
    >>> cut_torn_tail(p), p.read_bytes()
    (4, b'{"a": 1}\\n')
    """
    st = _lstat(p)
    if st is None or st.st_size == 0:
        return 0
    with os.fdopen(_open(p, os.O_RDONLY), "rb") as f:
        size = os.fstat(f.fileno()).st_size
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
        fd = _open(p, os.O_WRONLY, in_place=True)
        try:
            os.ftruncate(fd, end)
            os.fsync(fd)
        except OSError as err:
            raise _write_error(p, err, "cut its torn last line") from None
        finally:
            os.close(fd)
    return size - end


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
        d = json.loads(_read_bytes(path).decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        raise RunError(f"{path}: not UTF-8 text ({err.reason})") from None
    except json.JSONDecodeError as err:
        what = "empty" if not err.doc.strip() else f"invalid JSON ({err.msg})"
        raise RunError(f"{path}:{err.lineno}: {what}") from None
    if not isinstance(d, dict):
        raise RunError(f"{path}: expected a JSON object, got {type(d).__name__}")
    return d


def iter_run_records(folders: Iterable[str | Path]) -> Iterator[Record]:
    """Records of several run folders, in order."""
    for folder in folders:
        rf = RunFolder(folder)
        if not rf.exists():
            raise RunError(f"{folder} is not a run folder (no {CONFIG} or {RECORDS})")
        yield from rf.iter_records()
