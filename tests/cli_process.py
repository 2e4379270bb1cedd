"""``nlieval`` in a child process, for the kill -9 tests (one helper for every command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def start_cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """Start ``python -m nlieval.cli ARGS`` with unbuffered output, pipes for both streams."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "nlieval.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
