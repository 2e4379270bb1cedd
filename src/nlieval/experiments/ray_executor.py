"""The ``ray`` executor: each cell a Ray task on an existing cluster (``--address``),
with the GPUs its model declares. The task calls the function the local executor calls
(:func:`~nlieval.experiments.driver.cell_outcome`), so the same cells write the same
records. A task whose node is lost is run again by Ray on another node (``max_retries``
of Ray's own, for system failures); there the cell's folder resumes what the lost node
wrote. A cell that fails in its own code (not a refusal of its folder) is submitted
again after the back-off, as with every executor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from .driver import CellJob, Outcome, cell_outcome, submit_and_wait

#: How many times Ray runs a task again whose worker or node died.
NODE_RETRIES = 3


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ValueError("--executor ray needs Ray: pip install 'nlieval[scale]'") from None
    return ray


class RayExecutor:
    """Runs each cell as a Ray task on the cluster at ``address`` (None: Ray's own
    choice, ``RAY_ADDRESS`` or a new local one), waiting for it."""

    name = "ray"

    def __init__(
        self, address: str | None = None, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.ray = _ray()
        if not self.ray.is_initialized():
            try:
                self.ray.init(address=address, log_to_driver=False)
            except (ConnectionError, RuntimeError) as err:
                line = " ".join(str(err).split())
                raise ValueError(f"--executor ray: no Ray cluster at {address}: {line}") from None
        self.sleep = sleep

    def _submit(self, job: CellJob) -> tuple[Any, str]:
        task = self.ray.remote(
            num_gpus=job.cell.resources.gpus, max_retries=NODE_RETRIES, retry_exceptions=False
        )(cell_outcome)
        ref = task.remote(job)
        return ref, ref.task_id().hex()

    def _wait(self, ref: Any) -> tuple[str, str | None, bool]:
        try:
            result: tuple[str, str | None, bool] = self.ray.get(ref)
        except Exception as err:  # noqa: BLE001 - a task Ray gave up on, in one line
            lines = str(err).strip().splitlines()
            return "failed", f"Ray task: {lines[-1] if lines else err}", False
        return result

    def run_many(self, jobs: Sequence[CellJob], retries: int, backoff: float) -> list[Outcome]:
        """Every ready cell launched as a Ray task at once, then each waited for."""
        return submit_and_wait(
            self.name, jobs, self._submit, self._wait, retries, backoff, self.sleep
        )

    def __call__(self, job: CellJob, retries: int, backoff: float) -> Outcome:
        """One cell: :meth:`run_many` of it alone (one retry loop for both)."""
        return self.run_many([job], retries, backoff)[0]
