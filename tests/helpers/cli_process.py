"""``nlieval`` in a child process, for the kill -9 tests (one helper for every command)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def start_cli(*args: str, cwd: Path, one_thread: bool = False) -> subprocess.Popen[str]:
    """Start ``python -m nlieval.cli ARGS`` with unbuffered output, pipes for both streams;
    ``one_thread``: torch on one thread, so that two runs do the same arithmetic."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if one_thread:
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, "-m", "nlieval.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A pytest-xdist worker ignores SIGINT, and a child inherits an ignored signal: the
        # command must get Ctrl-C as a user's shell gives it.
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill_once_written(proc: subprocess.Popen[str], path: Path, timeout: float = 300) -> None:
    """SIGKILL ``proc`` as soon as ``path`` is a non-empty file (or when it has ended, or
    after ``timeout`` seconds), and wait for it."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if path.is_file() and path.stat().st_size > 0:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
