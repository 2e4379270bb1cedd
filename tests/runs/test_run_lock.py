"""One writer per run folder: an OS lock that a second process cannot take, and that a
killed holder (kill -9) does not leave behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nlieval.runs import RunError, RunFolder
from tests.helpers.cli_process import start_cli
from tests.helpers.records import saved_rows

HOLD = """
import sys, time
from nlieval.runs import RunFolder
from nlieval.choice import RunConfig
folder = RunFolder(sys.argv[1])  # the lock lives as long as this object
folder.start(RunConfig(model="hash", tasks=("smoke",)))
print("locked", flush=True)
time.sleep(600)
"""


def _holder(folder: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _config() -> object:
    from nlieval.choice import RunConfig

    return RunConfig(model="hash", tasks=("smoke",))


def test_second_process_is_refused_with_the_holder_pid(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    proc = _holder(folder)
    try:
        with pytest.raises(RunError) as err:
            RunFolder(folder).start(_config())  # type: ignore[arg-type]
        msg = str(err.value)
        assert str(folder) in msg and f"PID {proc.pid}" in msg and "\n" not in msg
    finally:
        proc.kill()
        proc.wait()


def test_kill_9_leaves_no_stale_lock(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    proc = _holder(folder)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # The lock file is still there (with the dead PID), the lock is not.
    assert (folder / ".lock").is_file()
    rf = RunFolder(folder)
    rf.start(_config())  # type: ignore[arg-type]
    rf.close()


def test_one_process_may_open_its_own_folder_twice_and_release_it(tmp_path: Path) -> None:
    a, b = RunFolder(tmp_path), RunFolder(tmp_path)
    a.start(_config())  # type: ignore[arg-type]
    b.start(_config())  # type: ignore[arg-type]  # same process: shared, not refused
    a.close()
    b.close()
    # Released: another process can take it now.
    proc = _holder(tmp_path)
    proc.kill()
    proc.wait()


def test_two_concurrent_runs_give_one_record_per_key(tmp_path: Path, tiny_llama: Path) -> None:
    out = tmp_path / "same"
    args = [
        "run",
        "--model",
        str(tiny_llama),
        "--task",
        "smoke",
        "--shots",
        "0,3",
        "--seeds",
        "3",
        "--no-progress",
        "--batch-size",
        "2",
        "--out",
        str(out),
    ]
    first = start_cli(*args, cwd=tmp_path)
    time.sleep(0.3)
    second = start_cli(*args, cwd=tmp_path)
    codes = (first.wait(timeout=600), second.wait(timeout=600))
    errs = [p.stderr.read() if p.stderr else "" for p in (first, second)]
    assert sorted(codes) == [0, 2], errs
    loser = errs[codes.index(2)].strip().splitlines()
    winner = (first, second)[codes.index(0)]
    assert len(loser) == 1 and str(out) in loser[0], loser
    assert f"PID {winner.pid}" in loser[0]
    rows = saved_rows(out)
    keys = [(r["k"], r["seed"], r["item_id"]) for r in rows]
    # 48 smoke items at k=0 (one draw) and at k=3 with 3 seeds.
    assert len(keys) == len(set(keys)) == 48 * 4


def test_a_file_system_without_locks_is_warned_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import errno
    import fcntl
    import logging

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    rf = RunFolder(tmp_path)
    with caplog.at_level(logging.WARNING):
        rf.start(_config())  # type: ignore[arg-type]
    assert "cannot lock .lock (No locks available)" in caplog.text
    rf.close()
