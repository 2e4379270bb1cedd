"""A real Slurm cluster: submitit submits Python functions to the one-node Slurm of
``scripts/setup_slurm.sh`` (started by ``scripts/test.sh`` when ``NLIEVAL_SLURM=1``, as in
``.ci/run``) and reads back what the jobs returned and printed.

Marked ``slurm``. Without a Slurm that answers these tests skip, and with ``NLIEVAL_SLURM=1``
they fail. The functions are defined inside the tests, so cloudpickle sends them by value:
the job's Python needs only submitit, not this checkout on its path.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.engines import absent
from tests.helpers.slurm import require_slurm_node

pytestmark = pytest.mark.slurm

#: How long a job may take from submission to its result (a job here takes about a second).
WAIT_S = 60


@pytest.fixture(scope="module")
def slurm() -> Any:
    """The submitit module, once ``sinfo`` shows a node that takes jobs."""
    require_slurm_node()
    try:
        import submitit
    except ImportError:
        absent("Slurm", "NLIEVAL_SLURM", "submitit is not installed (the extra 'cluster')")
    return submitit


def _executor(slurm: Any, folder: Path) -> Any:
    executor = slurm.AutoExecutor(folder=folder, cluster="slurm")
    # Time limit 10 min: submitit asks Slurm for SIGUSR2 90 s before the limit, and Slurm
    # may send it up to 60 s early; with a 2 min limit a job got it at its start and died.
    executor.update_parameters(timeout_min=10, cpus_per_task=1, slurm_mem="200M")
    return executor


def _wait(job: Any) -> Any:
    """The job's result, or a failure with its stderr once it has left the queue without
    one (no accounting database here, so submitit alone would wait on) or after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not job.done():
        queued = subprocess.run(
            ["squeue", "-h", "-j", str(job.job_id), "-o", "%T"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.split()
        gone = not {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING"} & set(queued)
        if gone or time.monotonic() > deadline:
            time.sleep(1)  # the result file is written just before the job ends
            if job.done():
                break
            why = f"ended ({queued or 'gone'})" if gone else f"not done after {WAIT_S} s"
            pytest.fail(f"Slurm job {job.job_id} {why} without a result; stderr:\n{job.stderr()}")
        time.sleep(0.5)
    return job.result()


def test_a_job_returns_a_value_computed_from_its_argument_inside_slurm(
    slurm: Any, tmp_path: Path
) -> None:
    def squares_up_to(n: int) -> tuple[int, str | None]:
        import os

        return sum(i * i for i in range(n + 1)), os.environ.get("SLURM_JOB_ID")

    job = _executor(slurm, tmp_path).submit(squares_up_to, 10)
    total, job_id = _wait(job)
    # 1 + 4 + 9 + 16 + 25 + 36 + 49 + 64 + 81 + 100
    assert total == 385
    # It ran as a Slurm job, the one submitit submitted.
    assert job_id == str(job.job_id)


def test_a_jobs_stdout_is_read_back(slurm: Any, tmp_path: Path) -> None:
    def greet(name: str) -> int:
        print(f"hello {name} from the cluster", flush=True)
        return len(name)

    job = _executor(slurm, tmp_path).submit(greet, "nlieval")
    assert _wait(job) == 7
    assert "hello nlieval from the cluster" in (job.stdout() or "")
