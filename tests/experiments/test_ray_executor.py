"""The ``ray`` executor on a real local Ray cluster of 3 nodes (Ray's own cluster
utilities, started and stopped inside the test): the same cells give the same records as
the local executor, and a cell whose node is killed mid-cell is run again on another node
and completes, its folder resuming what the lost node wrote."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nlieval.experiments import LocalExecutor, read_experiment, run_experiment
from tests.helpers.records import saved_rows

ray = pytest.importorskip("ray")

TEXT = """\
experiment: tiny
backoff: 0
models:
  tiny: {model: MODEL}
blocks:
  base: {command: run, tasks: [smoke], limit: 6, shots: [0, 1], batch_size: 1}
matrix:
  - {block: base, models: [tiny]}
  - {block: base, models: [tiny], seeds: [1, 2], shots: [2], each: [seeds]}
outputs:
  table: {kind: grid, blocks: [base], rows: [model, k]}
"""


@pytest.fixture
def cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    # The head takes no task: the cells run on the two worker nodes only.
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    nodes = [c.add_node(num_cpus=1, resources={f"node{i}": 1}) for i in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    try:
        yield c, nodes
    finally:
        ray.shutdown()
        c.shutdown()


def _records(out: Path) -> dict[tuple[object, ...], dict[str, Any]]:
    got = {}
    for cell in sorted((out / "cells").iterdir()):
        for r in saved_rows(cell):
            key = (cell.name, r["k"], r["seed"], r["item_id"])
            assert key not in got, f"duplicate record {key}"
            got[key] = r
    return got


def test_ray_cells_equal_local_and_survive_a_killed_node(
    cluster: Any, tmp_path: Path, tiny_llama: Path
) -> None:
    from nlieval.experiments.ray_executor import RayExecutor

    c, nodes = cluster
    path = tmp_path / "e.yaml"
    path.write_text(TEXT.replace("MODEL", str(tiny_llama)))
    exp = read_experiment(path)
    run_experiment(exp, tmp_path / "local", executor=LocalExecutor(sleep=lambda s: None))

    out = tmp_path / "ray"
    first = out / "cells" / "base-tiny" / "records.jsonl"
    killed: list[str] = []

    def kill_when_written() -> None:
        # Once the first cell has written records, kill the node whose worker writes it:
        # the PID in the folder's lock file, a child of that node's raylet.
        import psutil

        raylets = {n.all_processes["raylet"][0].process.pid: n for n in nodes}
        deadline = time.time() + 300
        while time.time() < deadline:
            lock = first.parent / ".lock"
            if first.exists() and first.stat().st_size > 0 and lock.exists():
                try:
                    proc: Any = psutil.Process(int(lock.read_text().split()[0]))
                except (ValueError, IndexError, psutil.Error):
                    continue
                while proc is not None and proc.pid not in raylets:
                    proc = proc.parent()
                if proc is not None:
                    c.remove_node(raylets[proc.pid], allow_graceful=False)
                    killed.append(proc.pid)
                    return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_when_written)
    killer.start()
    summary = run_experiment(exp, out, executor=RayExecutor())
    killer.join()
    assert killed, "the first cell ended before its node could be killed"
    assert [(o.state, o.executor) for o in summary.outcomes] == [("done", "ray")] * 3
    # Ray ran the lost task again on the other node: one submission of the driver's.
    assert summary.outcomes[0].attempts == 1
    got, want = _records(out), _records(tmp_path / "local")
    assert sorted(got) == sorted(want)  # none missing, none twice
    for key, r in got.items():
        assert r["pred"] == want[key]["pred"]
        assert max(abs(a - b) for a, b in zip(r["loglik"], want[key]["loglik"], strict=True)) < 1e-4
    assert (out / "report" / "table.md").read_bytes() == (
        tmp_path / "local" / "report" / "table.md"
    ).read_bytes()
