"""The files nlieval reads and writes, and the rules they follow.

A writer writes only inside its own folder (the ``root`` every writer names: a run
folder, a site, an experiment folder, a cache): no part of a written path below that
folder may be a symbolic link (:func:`check_inside`), so that nothing is written, made
or appended through a link to somewhere else; the folder itself may be a link (a run
kept on a bigger disk: the user named it). Written files are its own: each is opened
without following a symbolic link (``O_NOFOLLOW``); one that is a link, not a regular
file, or (for a file written in place: appended to, truncated) has a second hard link is
a :class:`FolderError` naming it, before anything is written (a write through it would
change a file elsewhere). A file is replaced whole (:func:`atomic_write`: readers and a
crash see the old file or the new one, never half) or appended to durably
(:func:`append_own`); a line cut short by a crash is cut off again
(:func:`cut_torn_tail`). A write that fails (a full disk, a read-only folder) is a
:class:`FolderError` naming the file and the reason.

Input files are read only when they are regular files outside ``/proc``, ``/sys`` and
``/dev`` (:func:`open_regular`), small ones whole and bounded (:func:`read_small_text`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import IO

from .errors import DataError, FolderError

log = logging.getLogger(__name__)


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


def check_inside(path: str | Path, root: str | Path) -> Path:
    """``path``, which must lie inside the folder ``root``, checked that no part of it
    below ``root`` (``path`` itself included) is a symbolic link: a write there would
    land wherever the link points. A link, or a path outside ``root`` (``..``), is a
    :class:`FolderError` naming it; parts that do not exist yet are made by the writer
    (fresh folders, no links). ``root`` itself is not checked: the user named it.

    >>> root = Path(run_dir); (root / "data").symlink_to(tempfile.mkdtemp())
    >>> check_inside(root / "data" / "meta.js", root)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: .../data is a symbolic link (to ...) inside ...
    >>> check_inside(root / "new" / "a.txt", root) == root / "new" / "a.txt"
    True
    """
    path, root = Path(path), Path(root)
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = None
    if rel is None or ".." in rel.parts:
        raise FolderError(
            f"{path}: not inside {root}: nlieval writes only inside the folder it was given"
        )
    here = root
    for part in rel.parts:
        here = here / part
        try:
            st = os.lstat(here)
        except (FileNotFoundError, NotADirectoryError):
            break  # made by the writer from here on: fresh folders
        except OSError as err:
            raise FolderError(f"{here}: cannot read: {err.strerror or err}") from None
        if stat.S_ISLNK(st.st_mode):
            raise _link_error(here, root)
    return path


def atomic_write(path: str | Path, text: str | bytes, *, root: str | Path | None = None) -> None:
    """Replace ``path`` with ``text`` (UTF-8, or bytes as they are) so that readers (and
    a crash) only ever see a complete file: write a temporary file beside it, fsync,
    rename. A ``path`` that is a symbolic link or not a regular file is refused, and a
    write that fails (a full disk, a read-only folder) is a :class:`FolderError` naming
    ``path``; either way the old file is left as it was.

    >>> path = Path(run_dir) / "a.txt"
    >>> atomic_write(path, "old"); atomic_write(path, "new"); path.read_text()
    'new'
    >>> sorted(p.name for p in Path(run_dir).iterdir())  # no temporary file left behind
    ['a.txt']
    >>> (Path(run_dir) / "b.txt").symlink_to(path); atomic_write(Path(run_dir) / "b.txt", "x")
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: .../b.txt is a symbolic link (to .../a.txt): ...

    ``root`` is the folder of the writer (:func:`check_inside`); without it only ``path``
    itself is checked.
    """
    path = Path(path)
    if root is not None:
        check_inside(path.parent, root)
    stat_own(path)  # a link is refused, not silently replaced by a file of its own
    tmp = ""
    try:
        # Made inside the try: an interrupt (Ctrl-C) right after it still removes it.
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
        try:
            _write_all(fd, text.encode("utf-8") if isinstance(text, str) else text)
            # mkstemp makes the file private (0600); a result file is as readable as
            # any other file the user writes (the umask decides).
            os.fchmod(fd, 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        # The rename replaces a link put there since the check, never its target.
        os.replace(tmp, path)
    except OSError as err:
        raise write_error(path, err) from None
    finally:
        if tmp and os.path.lexists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                log.warning("%s: cannot remove the temporary file %s", path, tmp)


def make_folder(path: str | Path, *, root: str | Path | None = None) -> Path:
    """Make the folder ``path`` (and its parents) unless it exists; a path that is a
    file, lies below a file, or cannot be made (a read-only file system, no permission)
    is a :class:`FolderError` naming it and why; so is one below ``root`` (the writer's
    own folder) through a symbolic link (:func:`check_inside`).

    >>> make_folder(Path(run_dir) / "a" / "b").is_dir()
    True
    >>> _ = (Path(run_dir) / "f").write_text("x"); make_folder(Path(run_dir) / "f" / "out")
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: .../f/out: cannot make this folder: .../f is a file
    """
    path = Path(path)
    if root is not None:
        check_inside(path, root)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        if path.is_symlink() and not path.exists():
            why = f"it is a symbolic link to {os.readlink(path)}, which does not exist"
            raise FolderError(f"{path}: cannot make this folder: {why}") from None
        if os.path.lexists(path) and not path.is_dir():
            raise FolderError(
                f"{path} is a file, not a folder", advice="choose another --out"
            ) from None
        above = next((p for p in path.parents if os.path.lexists(p)), None)
        if above is not None and not above.is_dir():
            raise FolderError(f"{path}: cannot make this folder: {above} is a file") from None
        raise write_error(path, err, "make this folder") from None
    return path


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write less than asked (a signal, a nearly full disk).
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_error(path: Path, err: OSError, action: str = "write") -> FolderError:
    """One line for a failed write of ``path``: the OS's reason and what to do.

    >>> print(write_error(Path("out/a.json"), OSError(errno.EROFS, "Read-only file system")))
    out/a.json: cannot write: Read-only file system; choose another --out
    """
    hint = ""
    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = (
            "; what was written before is kept: free some space, then run the same "
            "command again to resume"
        )
    elif err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "; choose another --out"
    return FolderError(f"{path}: cannot {action}: {err.strerror or err}{hint}")


def stat_own(path: Path, *, in_place: bool = False) -> os.stat_result | None:
    """What ``path`` is, without following a link: None when it does not exist; a
    symbolic link, or anything but a regular file, is a :class:`FolderError` naming it, and
    so is (``in_place``: a file appended to or truncated) one with a second hard link.

    >>> stat_own(Path(run_dir) / "none.json") is None
    True
    >>> stat_own(Path(run_dir))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: ... is not a regular file (a folder, a pipe or a device); ...
    """
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise FolderError(f"{path}: cannot read: {err.strerror or err}") from None
    if stat.S_ISLNK(st.st_mode):
        raise _link_error(path)
    if not stat.S_ISREG(st.st_mode):
        raise FolderError(
            f"{path} is not a regular file (a folder, a pipe or a device)",
            advice="move it away, or choose another --out",
        )
    if in_place:
        _single(path, st)
    return st


def _link_error(path: Path, root: Path | None = None) -> FolderError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    if root is not None and os.path.isdir(path):
        return FolderError(
            f"{path} is a symbolic link (to {target}) inside {root}: nlieval writes only "
            "inside its own folder, never through a link (a write would change the files "
            "where it points)",
            advice="remove the link, or choose another --out",
        )
    return FolderError(
        f"{path} is a symbolic link (to {target}): nlieval reads and writes its own files "
        "only, never through a link (a write would change the file it points to)",
        advice="replace the link with a copy of that file, or choose another --out",
    )


def _single(path: Path, st: os.stat_result) -> None:
    if st.st_nlink > 1:
        raise FolderError(
            f"{path} has {st.st_nlink} hard links: a write here would change the file under "
            "its other names too (a copy made with `cp -l`?)",
            advice="give it a copy of its own (cp FILE FILE.new && mv FILE.new FILE), or "
            "choose another --out",
        )


def open_own(
    path: Path, flags: int, *, in_place: bool = False, root: str | Path | None = None
) -> int:
    """A descriptor of the regular file ``path``, opened without following a link
    (``O_NOFOLLOW`` closes the window between the check and the open). ``in_place``
    (a file appended to or truncated) also refuses a file with a second hard link, whose
    other name a write would change too. Every failure is a :class:`FolderError`.

    >>> p = Path(run_dir) / "a.txt"; _ = p.write_text("x"); os.close(open_own(p, os.O_RDONLY))
    >>> os.link(p, Path(run_dir) / "b.txt"); open_own(p, os.O_WRONLY, in_place=True)
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: .../a.txt has 2 hard links: a write here would ...

    ``root``: the writer's folder, no part of ``path`` below it a link (:func:`check_inside`).
    """
    if root is not None:
        check_inside(path.parent, root)
    stat_own(path, in_place=in_place)
    writing = bool(flags & (os.O_WRONLY | os.O_RDWR))
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP and path.is_symlink():
            raise _link_error(path) from None  # made a link since the check
        if writing:
            raise write_error(path, err) from None
        raise FolderError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FolderError(
                f"{path} is not a regular file", advice="move it away, or choose another --out"
            )
        if in_place:
            _single(path, st)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_own(path: Path, max_bytes: int | None = None) -> bytes:
    """The whole of a file of the folder (opened as :func:`open_own` opens it); one of
    more than ``max_bytes`` bytes is a :class:`FolderError` (not read whole into memory).

    >>> p = Path(run_dir) / "a.txt"; _ = p.write_text("xyz"); read_own(p)
    b'xyz'
    >>> read_own(p, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: .../a.txt: larger than 2 bytes: ...
    """
    with os.fdopen(open_own(path, os.O_RDONLY), "rb") as f:
        try:
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
        except OSError as err:
            raise FolderError(f"{path}: cannot read: {err.strerror or err}") from None
    if max_bytes is not None and len(data) > max_bytes:
        raise FolderError(
            f"{path}: larger than {max_bytes:,} bytes: not a file nlieval wrote; move it away"
        )
    return data


def append_own(path: Path, data: bytes, *, root: str | Path | None = None) -> None:
    """Append ``data`` durably (write, fsync). A failed write (a full disk) is cut off
    again at once, so that no partial line is left behind it. ``root``: the writer's
    folder (:func:`check_inside`).

    >>> p = Path(run_dir) / "a.jsonl"; append_own(p, b"1\\n"); append_own(p, b"2\\n")
    >>> p.read_bytes()
    b'1\\n2\\n'
    """
    fd = open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, in_place=True, root=root)
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
            raise write_error(path, err) from None
    finally:
        os.close(fd)


def cut_torn_tail(p: Path, *, root: str | Path | None = None) -> int:
    """Cut a partial last line (a write cut short by a crash) off an append-only JSONL
    file; return the bytes removed. A last line that is a whole JSON object but lacks its
    newline (a file written by hand or by another tool, or a write stopped just before
    the newline) is complete: it is kept and given its newline. The file is opened for
    writing only when there is a line to cut or end (a folder on a read-only disk can
    still be read), and never through a link (:class:`FolderError`: the cut would
    shorten the file it points to).

    >>> p = Path(run_dir) / "a.jsonl"; _ = p.write_bytes(b'{"a": 1}\\n{"b"')
    >>> cut_torn_tail(p), p.read_bytes()
    (4, b'{"a": 1}\\n')
    >>> _ = p.write_bytes(b'{"a": 1}\\n{"b": 2}'); cut_torn_tail(p), p.read_bytes()
    (0, b'{"a": 1}\\n{"b": 2}\\n')
    """
    if root is not None:
        check_inside(p.parent, root)
    st = stat_own(p)
    if st is None or st.st_size == 0:
        return 0
    with os.fdopen(open_own(p, os.O_RDONLY), "rb") as f:
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
        whole = end < size and _whole_object(f, end, size)
    if whole:
        fd = open_own(p, os.O_WRONLY | os.O_APPEND, in_place=True)
        try:
            _write_all(fd, b"\n")
            os.fsync(fd)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise write_error(p, err, "end its last line") from None
        finally:
            os.close(fd)
        return 0
    if end < size:
        fd = open_own(p, os.O_WRONLY, in_place=True)
        try:
            os.ftruncate(fd, end)
            os.fsync(fd)
        except OSError as err:
            raise write_error(p, err, "cut its torn last line") from None
        finally:
            os.close(fd)
    return size - end


#: The longest last line without a newline that is read to see whether it is whole; a
#: longer one is taken as torn (no row of nlieval's is near this size).
_WHOLE_LINE_BYTES = 1 << 24


def _whole_object(f: IO[bytes], start: int, end: int) -> bool:
    # A line is written with its newline in one write: bytes that parse as one JSON
    # object are all of it (no proper prefix of an object's text is an object).
    if end - start > _WHOLE_LINE_BYTES:
        return False
    f.seek(start)
    try:
        value = json.loads(f.read(end - start).decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict)


#: Folders of the kernel's pseudo-files: they say they are regular files, yet /proc/self/
#: environ holds the environment and /dev/zero never ends. Input is never read there.
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")


def open_regular(path: str | Path) -> IO[bytes]:
    """``path`` opened for reading in binary, if it is a regular file (after links are
    resolved) outside ``/proc``, ``/sys`` and ``/dev``; else :class:`DataError`.

    The file is opened without blocking and checked on the open descriptor, so a FIFO
    (which would block ``open`` until someone writes) or a file swapped after a check
    is refused, not waited on.

    >>> open_regular("/proc/self/environ")
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: /proc/self/environ: not a regular file (under /proc)
    """
    real = os.path.realpath(path)
    for root in _PSEUDO_ROOTS:
        if real == root or real.startswith(root + "/"):
            raise DataError(path, None, None, f"not a regular file (under {root})")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise DataError(path, None, None, "no such file") from None
    except OSError as err:
        raise DataError(path, None, None, f"cannot read: {err.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = (
            "a directory"
            if stat.S_ISDIR(mode)
            else "a FIFO"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device"
        )
        raise DataError(path, None, None, f"not a regular file ({kind})")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_small_text(path: str | Path, max_bytes: int) -> str:
    """The UTF-8 text of a regular file (see :func:`open_regular`) of at most
    ``max_bytes`` bytes; else :class:`DataError` naming the file (and the line of the
    first byte that is not UTF-8).

    >>> read_small_text("/dev/zero", 10)
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: /dev/zero: not a regular file (under /dev)
    """
    with open_regular(path) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise DataError(path, None, None, f"larger than {max_bytes:,} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError(path, line, None, f"not UTF-8 text ({err.reason})") from None
