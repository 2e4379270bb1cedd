"""``--gpus 0,1``: the ready cells run in worker processes, one per GPU id (here fake
ids on a CPU model), and give the records of the sequential run."""

from __future__ import annotations

from pathlib import Path

from nlieval.experiments import LocalExecutor, read_experiment, run_experiment
from nlieval.experiments.driver import read_state
from tests.helpers.records import saved_rows

TEXT = """\
experiment: par
backoff: 0
models:
  tiny: {model: MODEL}
blocks:
  base: {command: run, tasks: [smoke], limit: 3, shots: [0, 1]}
matrix:
  - {block: base, models: [tiny], seeds: [0, 1, 2], each: [seeds]}
outputs:
  table: {kind: grid, blocks: [base], rows: [model, k]}
"""


def _records(cells: Path) -> dict[tuple[str, str, int, int], tuple[str, list[float]]]:
    out = {}
    for folder in sorted(cells.iterdir()):
        for r in saved_rows(folder):
            out[(folder.name, r["item_id"], r["k"], r["seed"])] = (r["pred"], r["loglik"])
    return out


def test_one_worker_per_gpu_gives_the_records_of_the_sequential_run(
    tmp_path: Path, tiny_llama: Path
) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(TEXT.replace("MODEL", str(tiny_llama)))
    seq, par = tmp_path / "seq", tmp_path / "par"
    assert not run_experiment(read_experiment(path), seq).failed
    summary = run_experiment(read_experiment(path), par, executor=LocalExecutor(gpus=("0", "1")))
    assert not summary.failed
    got, want = _records(par / "cells"), _records(seq / "cells")
    assert len(want) == 3 * 2 * 3 and got == want  # 3 cells x k 0, 1 x 3 items
    # Each cell's job is "PID gpu ID": a worker keeps one GPU for its life, two workers
    # never share one, and both GPUs took cells (each cell loads a model for seconds, so
    # the second worker is up long before the first is free again).
    jobs = [str(read_state(par, f"base-tiny-seed{s}")["job"]).split(" gpu ") for s in range(3)]
    gpu_of: dict[str, set[str]] = {}
    for pid, gpu in jobs:
        gpu_of.setdefault(pid, set()).add(gpu)
    assert all(len(g) == 1 for g in gpu_of.values()), gpu_of
    assert len(gpu_of) == 2 and set().union(*gpu_of.values()) == {"0", "1"}, gpu_of
    assert (par / "report/table.md").read_bytes() == (seq / "report/table.md").read_bytes()


def test_a_dead_worker_is_its_cells_failure_not_a_crash() -> None:
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    from nlieval.experiments.driver import CellJob, _outcome_of
    from nlieval.experiments.plan import Cell
    from nlieval.experiments.spec import Resources

    job = CellJob(Cell("base-tiny", "base", "run", None, None, (), Resources(), "e", 1, {}, ()), "")
    # A worker that dies as a killed or out-of-memory GPU worker does: no exception, gone.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        future = pool.submit(os._exit, 1)
        outcome = _outcome_of(job, future, "local")
    assert (outcome.cell, outcome.state) == ("base-tiny", "failed")
    assert outcome.error is not None and outcome.error.startswith("BrokenProcessPool: ")
    assert "\n" not in outcome.error
