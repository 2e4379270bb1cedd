"""The ``slurm`` executor on a real Slurm (``scripts/setup_slurm.sh``; marked ``slurm``):
the same cells give the same records as the local executor, each cell one job (or, with
``--slurm-array``, one task of its resource shape's job array) whose id
``status`` shows, and a failing cell is submitted again and reported in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlieval.experiments import LocalExecutor, experiment_status, read_experiment, run_experiment
from nlieval.experiments.driver import read_state
from tests.helpers.engines import absent
from tests.helpers.records import saved_rows
from tests.helpers.slurm import require_slurm_node

pytestmark = pytest.mark.slurm

TEXT = """\
experiment: tiny
backoff: 0
retries: 1
models:
  tiny: {model: MODEL, resources: {memory: 1GB, time: "0:10:00"}}
  missing: {model: MISSING}
blocks:
  base: {command: run, tasks: [smoke], limit: 3, shots: [0, 1]}
matrix:
  - {block: base, models: [tiny, missing]}
outputs:
  table: {kind: grid, blocks: [base], rows: [model, k]}
"""


@pytest.fixture(scope="module")
def slurm() -> None:
    require_slurm_node()
    try:
        import submitit  # noqa: F401
    except ImportError:
        absent("Slurm", "NLIEVAL_SLURM", "submitit is not installed (the extra 'cluster')")


def _records(folder: Path) -> list[dict[str, object]]:
    rows = saved_rows(folder)
    return sorted(rows, key=lambda r: (r["k"], r["seed"], r["item_id"]))


def test_slurm_cells_equal_local_cells(slurm: None, tmp_path: Path, tiny_llama: Path) -> None:
    from nlieval.experiments.slurm import SlurmExecutor

    path = tmp_path / "e.yaml"
    missing = tmp_path / "no-such-model"
    path.write_text(TEXT.replace("MISSING", str(missing)).replace("MODEL", str(tiny_llama)))
    exp = read_experiment(path)
    local = run_experiment(exp, tmp_path / "local", executor=LocalExecutor(sleep=lambda s: None))
    slurm_out = tmp_path / "slurm"
    on_slurm = run_experiment(exp, slurm_out, executor=SlurmExecutor(slurm_out / "slurm", poll=0.5))
    for summary in (local, on_slurm):
        assert [(o.cell, o.state) for o in summary.outcomes] == [
            ("base-tiny", "done"),
            ("base-missing", "failed"),
        ]
    assert _records(tmp_path / "local" / "cells" / "base-tiny") == _records(
        slurm_out / "cells" / "base-tiny"
    )
    failed = on_slurm.outcomes[1]
    assert failed.attempts == 2 and failed.executor == "slurm"
    assert (
        failed.error is not None and "\n" not in failed.error and "does not exist" in failed.error
    )
    rows = {r["cell"]: r for r in experiment_status(slurm_out)}
    assert rows["base-tiny"]["executor"] == "slurm"
    assert (
        rows["base-tiny"]["job"] == on_slurm.outcomes[0].job and rows["base-tiny"]["job"].isdigit()
    )
    # The report of either is the same table (the folders' paths are not in it).
    assert (slurm_out / "report" / "table.md").read_bytes() == (
        tmp_path / "local" / "report" / "table.md"
    ).read_bytes()


ARRAY_TEXT = """\
experiment: tiny
backoff: 0
retries: 1
models:
  tiny: {model: MODEL, resources: {memory: 1GB, time: "0:10:00"}}
  same: {model: MODEL, resources: {memory: 1GB, time: "0:10:00"}}
  other: {model: MODEL, resources: {memory: 900MB, time: "0:10:00"}}
  missing: {model: MISSING, resources: {memory: 1GB, time: "0:10:00"}}
blocks:
  base: {command: run, tasks: [smoke], limit: 3, shots: [0, 1]}
matrix:
  - {block: base, models: [tiny, same, other, missing]}
outputs:
  table: {kind: grid, blocks: [base], rows: [model, k]}
"""


def test_job_arrays_one_per_resource_shape_equal_local_cells(
    slurm: None, tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nlieval.cli import main

    path = tmp_path / "e.yaml"
    missing = tmp_path / "no-such-model"
    path.write_text(ARRAY_TEXT.replace("MISSING", str(missing)).replace("MODEL", str(tiny_llama)))
    local = run_experiment(
        read_experiment(path), tmp_path / "local", executor=LocalExecutor(sleep=lambda s: None)
    )
    out = tmp_path / "slurm"
    rc = main(["experiment", "run", str(path), "--out", str(out), "--executor", "slurm",
               "--slurm-array", "--array-parallelism", "1"])  # fmt: skip
    printed = capsys.readouterr().out
    assert rc == 1 and "3 of 4 cells done" in printed, printed
    for cell in ("base-tiny", "base-same", "base-other"):
        assert _records(out / "cells" / cell) == _records(tmp_path / "local" / "cells" / cell)
    assert [(o.cell, o.state) for o in local.outcomes][:3] == [
        ("base-tiny", "done"), ("base-same", "done"), ("base-other", "done")
    ]  # fmt: skip
    rows = {r["cell"]: r for r in experiment_status(out)}
    jobs = {cell: str(r["job"]).split("_") for cell, r in rows.items()}
    assert all(r["executor"] == "slurm" for r in rows.values())
    # tiny and same (1 GB) are tasks 0 and 1 of one array (JOBID_INDEX); other (900 MB)
    # is a shape of its own, and missing (task 2 of the first array) was retried alone:
    # a shape of one cell is a plain job (submitit submits an array of one so).
    assert jobs["base-tiny"][0].isdigit() and jobs["base-tiny"][1:] == ["0"]
    assert jobs["base-same"] == [jobs["base-tiny"][0], "1"]
    assert len(jobs["base-other"]) == len(jobs["base-missing"]) == 1
    ids = {jobs["base-tiny"][0], jobs["base-other"][0], jobs["base-missing"][0]}
    assert len(ids) == 3 and all(i.isdigit() for i in ids)
    assert rows["base-missing"]["state"] == "failed" and "does not exist" in str(
        rows["base-missing"]["error"]
    )
    missing_state = read_state(out, "base-missing")
    assert missing_state is not None and missing_state["attempts"] == 2
    # The array asked Slurm for at most one running task, and the memory of its shape.
    arrays = out / "slurm" / "arrays"
    first = (arrays / f"{jobs['base-tiny'][0]}_submission.sh").read_text()
    other = (arrays / f"{jobs['base-other'][0]}_submission.sh").read_text()
    assert "#SBATCH --array=0-2%1" in first and "#SBATCH --mem=1G" in first
    assert "--array" not in other and "#SBATCH --mem=900M" in other
    assert main(["experiment", "status", str(out)]) == 0
    status = capsys.readouterr().out
    assert f"(slurm {'_'.join(jobs['base-tiny'])})" in status
