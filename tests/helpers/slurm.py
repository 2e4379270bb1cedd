"""The one check of the tests marked ``slurm``: a node that takes jobs, or the reason why not.

A node's state moves on its own: "completing" for a moment after a job, "idle*" (not
responding) when a busy 2-core machine answered a ping late, "drained" with a reason when
Slurm gave up on it. So the check waits (bounded) for a state that takes jobs instead of
reading ``sinfo`` once. Where this run owns the cluster (``NLIEVAL_SLURM=1``, which
``.ci/run`` sets and under which ``scripts/test.sh`` started it) and the node is still not
taking jobs, ``scripts/setup_slurm.sh`` (idempotent: it restarts a dead daemon and resumes
a drained node once) runs once, and a warning says what the node's state and reason were,
so that a CI log shows the cause. When no node comes back, the failure (or, outside CI,
the skip) names the states, the reasons of ``sinfo -R`` and the end of the daemons' logs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import warnings
from pathlib import Path

from tests.helpers.engines import absent

ROOT = Path(__file__).resolve().parents[2]
#: The states of a node that Slurm allocates a new job to ("idle*" and "mixed+drain" are not).
TAKES_JOBS = frozenset({"idle", "mixed", "allocated"})
#: How long a node may take to come back from a passing state (completing, not responding).
WAIT_S = 90
LOGS = (Path("/var/log/slurm/slurmctld.log"), Path("/var/log/slurm/slurmd.log"))


def _run(*cmd: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None


def node_states() -> tuple[list[str], str]:
    """The nodes' states as ``sinfo -N -o %T`` prints them, and what went wrong ('' if
    nothing). No Slurm here or one that does not answer gives no states and a reason."""
    if shutil.which("sinfo") is None:
        return [], "no sinfo on PATH"
    out = _run("sinfo", "-h", "-N", "-o", "%T")
    if out is None:
        return [], "sinfo got no answer in 20 s"
    if out.returncode != 0:
        return [], out.stderr.strip() or f"sinfo exited with {out.returncode}"
    return out.stdout.split(), ""


def _takes_jobs(states: list[str]) -> bool:
    return bool(TAKES_JOBS & set(states))


def _wait(deadline: float) -> tuple[list[str], str]:
    while True:
        states, why = node_states()
        if _takes_jobs(states) or time.monotonic() > deadline:
            return states, why
        time.sleep(1)


def _diagnosis(states: list[str], why: str) -> str:
    parts = [why or f"node states {states}"]
    reasons = _run("sinfo", "-h", "-R", "-o", "%n: %T, %E") if shutil.which("sinfo") else None
    if reasons is not None and reasons.stdout.strip():
        parts.append("sinfo -R: " + "; ".join(reasons.stdout.split("\n")).strip("; "))
    for log in LOGS:
        try:
            tail = log.read_text(errors="replace").splitlines()[-3:]
        except OSError:
            continue
        parts.append(f"{log.name}: " + " | ".join(line.strip() for line in tail))
    return "; ".join(parts)


def require_slurm_node() -> None:
    """Return once a Slurm node takes jobs; else fail (in CI) or skip, saying why."""
    states, why = _wait(time.monotonic() + WAIT_S)
    if _takes_jobs(states):
        return
    diagnosis = _diagnosis(states, why)
    owned = os.environ.get("NLIEVAL_SLURM") == "1" and os.geteuid() == 0
    if owned and shutil.which("sinfo") is not None:
        setup = subprocess.run(
            ["bash", str(ROOT / "scripts" / "setup_slurm.sh")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        states, why = _wait(time.monotonic() + WAIT_S)
        if _takes_jobs(states):
            warnings.warn(
                f"the Slurm node took no jobs for {WAIT_S} s ({diagnosis}); "
                "scripts/setup_slurm.sh brought it back",
                stacklevel=2,
            )
            return
        tail = (setup.stdout + setup.stderr).strip().splitlines()[-3:]
        diagnosis += "; scripts/setup_slurm.sh did not bring it back: " + " | ".join(tail)
    absent("Slurm", "NLIEVAL_SLURM", f"no node takes jobs ({diagnosis}); scripts/setup_slurm.sh")
