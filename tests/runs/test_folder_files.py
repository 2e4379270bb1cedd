"""The files of a run folder are its own: never read or written through a link (the file
it points to is left as it was), a hard-linked file is never written in place, an
``--out`` that cannot be a folder or cannot be written is one line naming the path, and a
full disk loses nothing written before it: the same command resumes exactly."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from nlieval.ground import atomic_write, cut_torn_tail
from nlieval.runs import RECORDS, RunError, RunFolder, Step, execute, finalize
from nlieval.runs.folder import LOCK, PROVENANCE, SUMMARY, TIMING
from nlieval.types import Record

ITEMS = [f"i{n}" for n in range(7)]
#: Every file of a finished folder (the lock included).
FILES = ("config.json", RECORDS, "results.json", SUMMARY, TIMING, PROVENANCE, LOCK)
#: Someone else's file: a records file of another run whose last line a crash cut.
OUTSIDE = b'{"task": "other", "item_id": "x"}\n{"task": "oth'


@dataclass(frozen=True)
class Config:
    model: str = "m"

    KIND: ClassVar[str] = "test"
    IDENTITY: ClassVar[tuple[str, ...]] = ("model",)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _record(item: str) -> Record:
    # The prediction depends on the item alone: a resumed run must give the same rows.
    pred = "a" if int(item[1:]) % 2 else "b"
    return Record("t", item, "m", 0, 0, ("a", "b"), (0.0, -1.0), (0.7, 0.3), pred, "a")


def _work(backend: None, step: Step[str], chunk: Sequence[str], progress: Any) -> list[Record]:
    return [_record(i) for i in chunk]


def _key(item: str) -> Any:
    return Record.key_of("m", None, "t", 0, 0, item)


def _run(path: Path, items: Sequence[str] = ITEMS) -> RunFolder[Record]:
    """What a command does with its folder: execute in chunks of 2, then finalize."""
    with RunFolder(path) as folder:
        steps = [Step("|t|0|0", "t", list(items), done_key=_key)]
        elapsed = execute(
            folder, Config(), steps, lambda g: None, _work, progress=False, chunk_size=2
        )
        finalize(folder, Config().to_dict(), elapsed)
    return folder


def _lines(path: Path) -> list[dict[str, Any]]:
    # By hand: independent (these tests check the run folder's own writer and reader).
    return [json.loads(line) for line in (path / RECORDS).read_text().splitlines()]


@pytest.mark.parametrize("name", FILES)
def test_a_linked_file_is_refused_and_its_target_left_as_it_was(tmp_path: Path, name: str) -> None:
    run = tmp_path / "run"
    _run(run, ITEMS[:3])
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(OUTSIDE)
    (run / name).unlink()
    (run / name).symlink_to(outside)
    before = {p.name: p.read_bytes() for p in run.iterdir() if not p.is_symlink()}
    with pytest.raises(RunError, match=rf"{run / name} is a symbolic link \(to {outside}\)"):
        _run(run)  # resumed with more items to do
    assert outside.read_bytes() == OUTSIDE  # not truncated, cut, appended to or replaced
    assert (run / name).is_symlink()  # not replaced by a rename either
    assert {p.name: p.read_bytes() for p in run.iterdir() if not p.is_symlink()} == before


@pytest.mark.parametrize("name", [RECORDS, "config.json", PROVENANCE])
def test_readers_do_not_follow_a_link_either(tmp_path: Path, name: str) -> None:
    run = tmp_path / "run"
    _run(run, ITEMS[:3])
    outside = tmp_path / "outside"
    outside.write_bytes((run / name).read_bytes())
    (run / name).unlink()
    (run / name).symlink_to(outside)
    folder = RunFolder(run)
    with pytest.raises(RunError, match=f"{run / name} is a symbolic link"):
        folder.records(), folder.read_config(), folder.read_provenance()


def test_a_link_made_after_the_check_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # O_NOFOLLOW, not only the check before it: a link that appears between the two.
    p = tmp_path / "records.jsonl"
    outside = tmp_path / "outside"
    outside.write_bytes(OUTSIDE)
    p.symlink_to(outside)
    from nlieval.ground import files

    real = files.stat_own

    def blind(path: Path, **kw: Any) -> os.stat_result | None:
        return None if path == p else real(path, **kw)

    monkeypatch.setattr(files, "stat_own", blind)
    with pytest.raises(RunError, match="is a symbolic link"):
        files.open_own(p, os.O_WRONLY, in_place=True)
    assert outside.read_bytes() == OUTSIDE


def test_cut_torn_tail_refuses_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(OUTSIDE)
    (tmp_path / "a.jsonl").symlink_to(outside)
    with pytest.raises(RunError, match="is a symbolic link"):
        cut_torn_tail(tmp_path / "a.jsonl")
    assert outside.read_bytes() == OUTSIDE


def test_atomic_write_refuses_a_link_and_a_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(OUTSIDE)
    (tmp_path / "a.json").symlink_to(outside)
    with pytest.raises(RunError, match="a.json is a symbolic link"):
        atomic_write(tmp_path / "a.json", "{}")
    assert (tmp_path / "a.json").is_symlink() and outside.read_bytes() == OUTSIDE
    (tmp_path / "b.json").mkdir()
    with pytest.raises(RunError, match="b.json is not a regular file"):
        atomic_write(tmp_path / "b.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "outside"]


@pytest.mark.parametrize("name", [RECORDS, PROVENANCE, LOCK])
def test_a_hard_linked_file_is_not_written_in_place(tmp_path: Path, name: str) -> None:
    run = tmp_path / "run"
    _run(run, ITEMS[:3])
    backup = tmp_path / "backup"
    os.link(run / name, backup)  # `cp -l`, as some backup tools do
    before = backup.read_bytes()
    with pytest.raises(RunError, match=f"{run / name} has 2 hard links"):
        _run(run)
    assert backup.read_bytes() == before


def test_a_folder_that_is_a_link_is_used(tmp_path: Path) -> None:
    # A run kept on a bigger disk: the folder itself may be a link, its files are its own.
    real = tmp_path / "big-disk" / "run"
    real.mkdir(parents=True)
    (tmp_path / "run").symlink_to(real)
    _run(tmp_path / "run", ITEMS[:3])
    _run(tmp_path / "run")
    assert [r["item_id"] for r in _lines(real)] == ITEMS


def test_out_that_is_a_file_or_below_one(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    with pytest.raises(RunError, match=f"^{notes} is a file, not a folder"):
        _run(notes)
    with pytest.raises(
        RunError, match=f"^{notes / 'run'}: cannot make this folder: {notes} is a file"
    ):
        _run(notes / "run")
    assert notes.read_text() == "mine\n"


class FullDisk:
    """``os.write`` on a disk with ``room`` bytes left: a write that does not fit writes
    what fits (as a real disk does), and the next one fails with ENOSPC."""

    def __init__(self, room: int, only: str | None = None) -> None:
        self.room, self.only = room, only
        self.real: Callable[[int, Any], int] = os.write

    def __call__(self, fd: int, data: Any) -> int:
        if self.only and Path(os.readlink(f"/proc/self/fd/{fd}")).name != self.only:
            return self.real(fd, data)  # ``only`` this file is on the full disk
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = self.real(fd, bytes(data)[: self.room])
        self.room -= n
        return n


@pytest.mark.parametrize(
    ("room", "only"),
    # Full before config.json, provenance.jsonl, timing.json, results.json; or in the
    # middle of a record (the disk of records.jsonl only).
    [(0, None), (200, None), (700, None), (1300, None), (2000, None), (150, RECORDS)],
)
def test_a_full_disk_loses_nothing_and_the_resume_is_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: int, only: str | None
) -> None:
    reference = _lines(_run(tmp_path / "reference").path)
    run = tmp_path / "run"
    _run(run, ITEMS[:2])
    kept = _lines(run)
    monkeypatch.setattr(os, "write", FullDisk(room, only))
    with pytest.raises(RunError) as info:
        _run(run)
    monkeypatch.undo()
    message = str(info.value)
    assert "\n" not in message and "No space left on device" in message
    assert message.startswith(str(run)) and "run the same command again to resume" in message
    # No torn line is left behind, and every record written before is still there.
    text = (run / RECORDS).read_text()
    assert text.endswith("}\n")
    assert _lines(run)[: len(kept)] == kept
    assert not [p.name for p in run.iterdir() if p.name.count(".") > 1]  # no temporary files
    _run(run)  # space freed: the same command
    assert _lines(run) == reference
    assert json.loads((run / "results.json").read_text())["metrics"][0]["n"] == len(ITEMS)


def test_a_torn_line_that_cannot_be_cut_at_once_is_cut_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = _lines(_run(tmp_path / "reference").path)
    run = tmp_path / "run"
    truncate = os.ftruncate

    def no_truncate(fd: int, size: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name == RECORDS:
            raise OSError(errno.EIO, "Input/output error")
        truncate(fd, size)

    monkeypatch.setattr(os, "write", FullDisk(300, only=RECORDS))
    monkeypatch.setattr(os, "ftruncate", no_truncate)
    with pytest.raises(RunError, match=f"{run / RECORDS}: cannot write: No space left"):
        _run(run)
    monkeypatch.undo()
    assert not (run / RECORDS).read_text().endswith("\n")  # torn, as a kill would leave it
    _run(run)
    assert _lines(run) == reference


class ReadOnly:
    """``os.open``/``os.mkdir`` on a read-only file system below ``root``."""

    def __init__(self, root: Path, err: int = errno.EROFS) -> None:
        self.root, self.err = str(root), err
        self.open, self.mkdir = os.open, os.mkdir

    def _check(self, path: Any, writing: bool) -> None:
        if writing and os.fspath(path).startswith(self.root):
            raise OSError(self.err, os.strerror(self.err), os.fspath(path))

    def os_open(self, path: Any, flags: int, *args: Any, **kw: Any) -> int:
        self._check(path, bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)))
        return self.open(path, flags, *args, **kw)

    def os_mkdir(self, path: Any, *args: Any, **kw: Any) -> None:
        self._check(path, True)
        self.mkdir(path, *args, **kw)


@pytest.mark.parametrize("err", [errno.EROFS, errno.EACCES])
def test_a_folder_that_cannot_be_written_is_one_line_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    run = tmp_path / "run"
    _run(run, ITEMS[:3])
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    fs = ReadOnly(run, err)
    monkeypatch.setattr(os, "open", fs.os_open)
    with pytest.raises(RunError) as info:
        _run(run)
    message = str(info.value)
    assert message.startswith(str(run)) and os.strerror(err) in message
    assert "\n" not in message and "choose another --out" in message
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    # A new folder there cannot even be made: said as such.
    monkeypatch.setattr(os, "mkdir", fs.os_mkdir)
    with pytest.raises(
        RunError, match=f"{run / 'new'}: cannot make this folder: {os.strerror(err)}"
    ):
        _run(run / "new")


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[str]:
    """``folder`` read-only for whoever runs the test; yields the error text a write
    there gets. As root (CI) a mode of 0o555 stops nothing, so the folder is bind-mounted
    read-only onto itself (root may mount here), which stops root too."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield os.strerror(errno.EACCES)
        finally:
            folder.chmod(0o755)
        return
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True)
        yield os.strerror(errno.EROFS)
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_read_only_folder_for_real(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _run(run, ITEMS[:3])
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    with _read_only(run) as refused:
        with pytest.raises(RunError) as info:
            _run(run)
        assert refused in str(info.value) and "\n" not in str(info.value)
        assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    _run(run)
    assert [r["item_id"] for r in _lines(run)] == ITEMS


def test_the_cli_says_a_full_disk_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from nlieval.cli import main

    run = tmp_path / "run"
    _run(run, ITEMS[:2])
    before = (run / RECORDS).read_bytes()  # by hand: bytes
    monkeypatch.setattr(os, "write", FullDisk(0))
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"nlieval: error: {run}/")
    assert "No space left on device" in err[0]
    assert (run / RECORDS).read_bytes() == before


def test_a_report_does_not_append_to_a_hard_linked_provenance(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _run(run, ITEMS[:3])
    backup = tmp_path / "backup"
    os.link(run / PROVENANCE, backup)
    before = backup.read_bytes()
    with pytest.raises(RunError, match=f"{run / PROVENANCE} has 2 hard links"):
        finalize(RunFolder(run), None, invocation="report")  # what `nlieval report` does
    assert backup.read_bytes() == before


def test_written_files_follow_the_umask_not_mkstemps_0600(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    # mkstemp alone would leave 0600: group-readable as the umask allows, others not.
    assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o640


def test_train_refuses_a_linked_seed_folder(tmp_path: Path, capsys: Any) -> None:
    from nlieval.cli import main
    from tests.helpers.tiny_bert import make_tiny_bert

    enc = make_tiny_bert(tmp_path / "enc", ["a", "man", "walks"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    out = tmp_path / "out"
    argv = ["train", "--model", str(enc), "--task", "smoke", "--epochs", "1", "--no-progress"]
    argv += ["--max-length", "16", "--device", "cpu", "--out", str(out), "--seeds"]
    assert main([*argv, "0,"]) == 0
    (out / "seed1").symlink_to(outside)  # the leftover of a seed cut short, as a link
    capsys.readouterr()
    assert main([*argv, "0,1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "symbolic link" in err
    assert (outside / "keep.txt").read_text() == "mine"  # the link's target is not removed


def test_inferred_items_are_not_written_through_a_link(tmp_path: Path) -> None:
    from nlieval.metainference.inferred import ITEMS_FILE, write_task
    from nlieval.types import Item

    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    root = tmp_path / "inferred"
    root.mkdir()
    (root / ITEMS_FILE).symlink_to(outside)
    meta = {"pattern": "p", "sources": ["1"], "source_labels": ["e"], "input": "x", "target": "y"}
    items = [Item("1", "A.", "B.", None, meta=meta)]
    with pytest.raises(RunError, match="symbolic link"):
        write_task(items, root, overwrite=True)
    assert outside.read_text() == "precious\n"
