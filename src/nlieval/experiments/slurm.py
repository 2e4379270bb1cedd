"""The ``slurm`` executor: each cell one Slurm job, submitted through submitit (the extra
``cluster``) with the resources its model declares (GPUs, memory, time) and the
partition of ``--partition``. With ``array``, the ready cells of one resource shape
(the same Slurm parameters) are one job array instead (submitit's ``map_array``; at
most ``array_parallelism`` of its tasks running at once), each cell one task
(``JOBID_INDEX``). The job calls the same function the local executor does
(:func:`~nlieval.experiments.driver.cell_outcome`), so the same cells write the same
records; the driver waits for it, and a failed job (not a refusal of its folder) is
submitted again after the back-off (the failed cells of one shape as a new array).
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


def shapes(
    jobs: Sequence[CellJob], partition: str | None
) -> list[tuple[dict[str, Any], list[int]]]:
    """The jobs grouped by the Slurm parameters their cells ask for (one job array each):
    each group's parameters and the positions of its jobs, groups in the order of their
    first job.

    >>> from nlieval.experiments.plan import Cell
    >>> def job(name, res):
    ...     return CellJob(Cell(name, "b", "run", None, None, (), res, "e", 1, {}, ()), name)
    >>> small, big = Resources(time="0:10:00"), Resources(gpus=1, time="0:10:00")
    >>> [(p.get("gpus_per_node"), at) for p, at in
    ...  shapes([job("a", small), job("b", big), job("c", small)], None)]
    [(None, [0, 2]), (1, [1])]
    """
    groups: dict[str, tuple[dict[str, Any], list[int]]] = {}
    for i, job in enumerate(jobs):
        params = parameters(job.cell.resources, partition)
        key = repr(sorted(params.items()))
        groups.setdefault(key, (params, []))[1].append(i)
    return list(groups.values())


class SlurmExecutor:
    """Runs each cell as a Slurm job (one job per cell, or with ``array`` one job array
    per resource shape of the ready cells), waiting for it."""

    name = "slurm"

    def __init__(
        self,
        folder: Path,
        partition: str | None = None,
        *,
        array: bool = False,
        array_parallelism: int | None = None,
        poll: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.submitit = _submitit()
        self.folder = folder
        self.partition = partition
        self.array = array
        self.array_parallelism = array_parallelism
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

    def _submit_arrays(self, jobs: Sequence[CellJob]) -> list[tuple[Any, str]]:
        out: list[tuple[Any, str] | None] = [None] * len(jobs)
        for params, at in shapes(jobs, self.partition):
            # One folder for every array: submitit names its files by array job id.
            executor = self.submitit.AutoExecutor(folder=self.folder / "arrays", cluster="slurm")
            if self.array_parallelism is not None:
                params = {**params, "slurm_array_parallelism": self.array_parallelism}
            executor.update_parameters(name=f"nlieval-{jobs[at[0]].cell.block}", **params)
            tasks = executor.map_array(cell_outcome, [jobs[i] for i in at])
            for i, task in zip(at, tasks, strict=True):
                out[i] = (task, str(task.job_id))
        return [h for h in out if h is not None]

    def run_many(self, jobs: Sequence[CellJob], retries: int, backoff: float) -> list[Outcome]:
        """Every ready cell submitted at once, as its own Slurm job or (``array``) as a
        task of its resource shape's job array, then each waited for."""
        return submit_and_wait(
            self.name,
            jobs,
            self._submit,
            self._wait,
            retries,
            backoff,
            self.sleep,
            submit_all=self._submit_arrays if self.array else None,
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
