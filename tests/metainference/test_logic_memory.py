"""A logic decision that runs out of memory ends in one line (issue 43, acceptance 3).

``nlieval logic check`` runs in a child process whose address space is limited to
2 GiB (``RLIMIT_AS``, as ``ulimit -v``). So that the decision reaches the limit in
seconds, not minutes, the child first takes most of the 2 GiB as ballast, leaving about
100 MiB for the decision: a 49-sentence chain over S5 frames needs more than that.
The command's own imports (numpy through the data package, never torch) come first:
they take about 170 MiB of address space, far below the limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import resource, sys
    limit = 2 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from nlieval.cli import main
    import nlieval.cli.logic  # what the command imports (numpy, not torch), before the ballast
    assert "torch" not in sys.modules, "the logic command imports torch"
    size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                if line.startswith("VmSize:"))
    ballast = bytearray(limit - size - 100 * 1024**2)
    letters = "abcdefghijklmnopqrstuvwxyz"
    chain = " & ".join(f"N{x}{y}" for x, y in zip(letters, letters[1:]))
    chain += " & " + " & ".join(f"C{x}{y}" for x, y in zip(letters, letters[2:]))
    sys.exit(main(["logic", "check", chain + " -> Eaz", "--frames", "S5"]))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
def test_a_decision_out_of_memory_is_one_line() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=300
    )
    err = done.stderr.strip()
    assert done.returncode == 2, err[-2000:]
    assert "Traceback" not in err and len(err.splitlines()) == 1, err[-2000:]
    assert err.startswith("nlieval: error: ") and "memory" in err
