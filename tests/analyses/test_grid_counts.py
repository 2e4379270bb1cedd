"""Each n that ``nlieval grid`` prints or writes is the number of items its cell was
scored on (issue 43, rule 2): the items every seed of the cell's run scored, counted from
records.jsonl with plain json, in the Markdown heading or cell, the CSV n column and the
JSON cells; a run whose second seed was cut short counts only the items both seeds have."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from tests.helpers.hash_lm import HashLM

CUT = ("smoke-01", "smoke-02", "smoke-03")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 smoke items at k 0 and, at two seeds, k 1; seed 1 at k 1 lacks three items."""
    out = tmp_path_factory.mktemp("grid") / "r"
    cfg = RunConfig(model="hash", tasks=("smoke",), shots=(0, 1), seeds=(0, 1), limit=10)
    run(cfg, out, model=stand_in(cfg, lambda _: HashLM()), progress=False)
    path = out / "records.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    kept = [r for r in recs if not (r["k"] == 1 and r["seed"] == 1 and r["item_id"] in CUT)]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    return out


def _used(folder: Path) -> dict[int, int]:
    """k -> the items every seed scored, from the records file (by hand: independent)."""
    by_seed: dict[int, dict[int, set[str]]] = {}
    for line in (folder / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        by_seed.setdefault(r["k"], {}).setdefault(r["seed"], set()).add(r["item_id"])
    return {k: len(set.intersection(*seeds.values())) for k, seeds in by_seed.items()}


def test_grid_n_is_the_items_each_cell_scored(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    used = _used(folder)
    assert used == {0: 10, 1: 7}
    base = ["grid", str(folder), "--allow-mixed"]
    # Markdown: one cell per column, the n in the heading.
    assert main([*base, "--cols", "task,k"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head == f"| model | smoke / 0 (n={used[0]}) | smoke / 1 (n={used[1]}) |"
    # Markdown: one column of two ns, each in its cell.
    assert main([*base, "--rows", "k", "--cols", "task"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for k, n in used.items():
        line = next(ln for ln in lines if ln.startswith(f"| {k} |"))
        assert f"(n={n})" in line, line
    # CSV and JSON.
    assert main([*base, "--cols", "task,k", "--format", "csv"]) == 0
    row = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {k: int(row[f"smoke / {k} n"]) for k in used} == used
    assert main([*base, "--cols", "task,k", "--format", "json"]) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    got = {c["column"][1]: c["n"] for c in cells if c["row"] == ["hash"]}
    assert got == used
