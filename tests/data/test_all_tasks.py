"""Every built-in task runs end to end on the real files (tiny model, a few items each)."""

from __future__ import annotations

from pathlib import Path

from nlieval.choice import RunConfig, run
from nlieval.data import TASKS
from tests.helpers.records import saved_records

# mnli_mm has no file in the shared data (see SOURCES.md); smoke needs no data dir.
REAL = tuple(t for t in TASKS if t not in ("mnli_mm",))


def test_every_task_runs_with_shots(tiny_llama: Path, data_dir: Path, tmp_path: Path) -> None:
    cfg = RunConfig(
        model=str(tiny_llama), tasks=REAL, shots=(0, 2), limit=4, data_dir=str(data_dir)
    )
    res = run(cfg, tmp_path / "all", progress=False)
    records = saved_records(tmp_path / "all")
    assert len(records) == len(REAL) * 4 * 2
    for r in records:
        n_opts = len(r.labels)
        assert r.prompt.count("Answer:") == (1 if r.k == 0 else 3)
        assert len(r.loglik) == n_opts and r.pred in r.labels
        assert r.gold in r.labels
        assert r.item_id not in r.shots
    by_task = {r.task: r for r in records if r.k == 2}
    assert "Observation 1:" in by_task["alphanli"].prompt
    assert "B. Non-Entailment" in by_task["hans"].prompt
    assert "D. Neutral" in by_task["scinli"].prompt
    assert by_task["chaosnli_snli"].meta["human_counts"]
    assert {m["task"] for m in res.metrics} == set(REAL)
    assert res.data["hans"]["pool"].endswith("(train)")
