"""The ``slurm`` executor: each cell one Slurm job, submitted through submitit (the extra
``cluster``) with the resources its model declares (GPUs, memory, time) and the
partition of ``--partition``. The job calls the same function the local executor does
(:func:`~nlieval.experiments.driver.cell_outcome`), so the same cells write the same
records; the driver waits for it, and a failed job (not a refusal of its folder) is
submitted again after the back-off.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .driver import CellJob, Outcome, cell_outcome, submit_and_wait
from .spec import Resources, memory, minutes

_LIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED"}


def parameters(resources: Resources, partition: str | None) -> dict[str, Any]:
    """submitit's parameters of a cell that needs ``resources``.

    >>> parameters(Resources(gpus=2, memory="40GB", time="4:00:00"), "gpu")
    {'timeout_min': 240, 'slurm_mem': '40G', 'gpus_per_node': 2, 'slurm_partition': 'gpu'}
    """
    out: dict[str, Any] = {"timeout_min": minutes(resources.time)}
    mem = memory(resources.memory)
    if mem is not None:
        out["slurm_mem"] = mem
    if resources.gpus:
        out["gpus_per_node"] = resources.gpus
    if partition:
        out["slurm_partition"] = partition
    return out


def _submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise ValueError(
            "--executor slurm needs submitit: pip install 'nlieval[cluster]'"
        ) from None
    return submitit


class SlurmExecutor:
    """Runs each cell as a Slurm job (one job per cell), waiting for it."""

    name = "slurm"

    def __init__(
        self,
        folder: Path,
        partition: str | None = None,
        *,
        poll: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.submitit = _submitit()
        self.folder = folder
        self.partition = partition
        self.poll = poll
        self.sleep = sleep

    def __call__(self, job: CellJob, retries: int, backoff: float) -> Outcome:
        """One cell: :meth:`run_many` of it alone (one retry loop for both)."""
        return self.run_many([job], retries, backoff)[0]

    def _submit(self, job: CellJob) -> tuple[Any, str]:
        executor = self.submitit.AutoExecutor(folder=self.folder / job.cell.name, cluster="slurm")
        executor.update_parameters(
            name=f"nlieval-{job.cell.name}", **parameters(job.cell.resources, self.partition)
        )
        submitted = executor.submit(cell_outcome, job)
        return submitted, str(submitted.job_id)

    def run_many(self, jobs: Sequence[CellJob], retries: int, backoff: float) -> list[Outcome]:
        """Every ready cell submitted as its own Slurm job at once, then each waited for."""
        return submit_and_wait(
            self.name, jobs, self._submit, self._wait, retries, backoff, self.sleep
        )

    def _wait(self, submitted: Any) -> tuple[str, str | None, bool]:
        # No accounting database is needed: a job that has left the queue without a
        # result file is a failure (submitit alone would wait for sacct).
        while not submitted.done():
            queued = subprocess.run(
                ["squeue", "-h", "-j", str(submitted.job_id), "-o", "%T"],
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout.split()
            if not _LIVE & set(queued):
                self.sleep(1.0)  # the result file is written just before the job ends
                if submitted.done():
                    break
                tail = (submitted.stderr() or "").strip().splitlines()
                last = tail[-1] if tail else f"left the queue ({queued or 'gone'})"
                return "failed", f"Slurm job {submitted.job_id}: {last}", False
            self.sleep(self.poll)
        try:
            result: tuple[str, str | None, bool] = submitted.result()
        except Exception as err:  # noqa: BLE001 - the job's own failure, in one line
            lines = str(err).strip().splitlines()
            return "failed", f"Slurm job {submitted.job_id}: {lines[-1] if lines else err}", False
        return result
