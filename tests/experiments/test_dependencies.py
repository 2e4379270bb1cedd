"""A block that reads another block's folders (``{cells:BLOCK}``): planned after it, run
on what it wrote, and not run when it failed; the ``infer-build`` block and the
``infer-report`` output of the meta-inference study, on a tiny random model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.choice import RunConfig, run
from nlieval.experiments import (
    experiment_status,
    plan_cells,
    read_experiment,
    run_experiment,
)
from nlieval.ground import DataError
from tests.helpers.records import saved_rows

# The dependent block comes first in the matrix: the plan puts its input first.
TEXT = """\
experiment: deps
backoff: 0
retries: 1
models:
  tiny: {model: MODEL}
blocks:
  on-items: {command: run, tasks: ["{cells:items}/task.yaml"], shots: [0]}
  sources: {command: run, tasks: [smoke], shots: [0]}
  items: {command: infer-build, task: smoke, PATTERNS}
matrix:
  - {block: on-items, models: [tiny]}
  - {block: sources, models: [tiny]}
  - {block: items}
outputs:
  consistency: {kind: infer-report, blocks: [on-items], items: items, sources: sources}
"""


def _file(folder: Path, model: Path, patterns: str = "max_per_pattern: 3") -> Path:
    path = folder / "e.yaml"
    path.write_text(TEXT.replace("MODEL", str(model)).replace("PATTERNS", patterns))
    return path


def test_a_dependent_cell_runs_after_its_input_on_its_items(
    tmp_path: Path, tiny_llama: Path
) -> None:
    path = _file(tmp_path, tiny_llama)
    cells = plan_cells(read_experiment(path), estimate=False)
    assert [c.name for c in cells] == ["sources-tiny", "items", "on-items-tiny"]
    assert cells[2].needs == ("items",)
    assert "DIR/cells/items/task.yaml" in cells[2].argv
    out = tmp_path / "out"
    summary = run_experiment(read_experiment(path), out)
    assert not summary.failed
    # The run cell scored exactly the items infer-build wrote (3 per pattern made).
    items = [
        json.loads(line)["id"]
        for line in (out / "cells/items/items.jsonl").read_text().splitlines()
    ]
    records = saved_rows(out / "cells/on-items-tiny")
    assert sorted(r["item_id"] for r in records) == sorted(items)
    # ... and its records are those of `nlieval run` on that task by hand.
    by_hand = tmp_path / "by-hand"
    run(
        RunConfig(model=str(tiny_llama), tasks=(str(out / "cells/items/task.yaml"),), shots=(0,)),
        by_hand,
        progress=False,
    )
    hand = {r["item_id"]: (r["pred"], r["loglik"]) for r in saved_rows(by_hand)}
    assert {r["item_id"]: (r["pred"], r["loglik"]) for r in records} == hand
    report = out / "report"
    assert (report / "consistency-on-items-tiny.md").read_text().count("|") > 0
    assert (report / "consistency-on-items-tiny.tex").exists()
    rows = json.loads((report / "consistency-on-items-tiny.json").read_text())
    assert sum(r["count"] for r in rows if r["subset"] == "all") == len(items)
    index = (report / "index.md").read_text()
    assert "consistency-on-items-tiny.md" in index


def test_a_cell_whose_input_failed_fails_without_running(tmp_path: Path, tiny_llama: Path) -> None:
    # Chains without generated items: infer build makes no item and fails.
    path = _file(tmp_path, tiny_llama, "patterns: [chain]")
    out = tmp_path / "out"
    summary = run_experiment(read_experiment(path), out)
    states = {o.cell: (o.state, o.attempts, o.error) for o in summary.outcomes}
    assert states["items"][0] == "failed" and states["items"][1] == 2
    assert states["on-items-tiny"] == ("failed", 0, "waits for items, which failed")
    assert states["sources-tiny"][0] == "done"
    assert not (out / "cells/on-items-tiny").exists()
    status = {r["cell"]: r for r in experiment_status(out)}
    assert status["on-items-tiny"]["state"] == "failed"
    assert status["on-items-tiny"]["error"] == "waits for items, which failed"
    assert "not written: waiting for on-items-tiny" in (out / "report/index.md").read_text()


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        ("{cells:items}", "{cells:itmes}", "names no block the matrix runs; did you mean 'items'?"),
        ("  - {block: items}\n", "", "names no block the matrix runs"),
    ],
)
def test_a_bad_reference_is_one_line_naming_its_line(
    tmp_path: Path, before: str, after: str, message: str
) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(
        TEXT.replace("MODEL", "m").replace("PATTERNS", "seed: 0").replace(before, after)
    )
    with pytest.raises(DataError) as err:
        plan_cells(read_experiment(path), estimate=False)
    text = str(err.value)
    assert text.startswith(f"{path}:7: field 'tasks':") and message in text
    assert "\n" not in text


def test_a_reference_to_a_block_of_several_cells_of_other_models_is_ambiguous(
    tmp_path: Path,
) -> None:
    text = (
        TEXT.replace("MODEL", "m")
        .replace("PATTERNS", "seed: 0")
        .replace("tiny: {model: m}", "tiny: {model: m}\n  other: {model: m2}\n  third: {model: m3}")
        .replace("{cells:items}", "{cells:sources}")
        .replace("{block: on-items, models: [tiny]}", "{block: on-items, models: [other]}")
    )
    path = tmp_path / "e.yaml"
    # sources has two cells (tiny, third), none of model other: which one on-items-other
    # reads cannot be told.
    path.write_text(
        text.replace("{block: sources, models: [tiny]}", "{block: sources, models: [tiny, third]}")
    )
    with pytest.raises(DataError, match="ambiguous") as err:
        plan_cells(read_experiment(path), estimate=False)
    msg = str(err.value)
    assert msg.startswith(f"{path}:9: field 'tasks':"), msg
    assert "sources-tiny, sources-third" in msg and "\n" not in msg
    # One cell of another model: taken as the block's one cell.
    path.write_text(text)
    (cell,) = [c for c in plan_cells(read_experiment(path), estimate=False) if c.needs]
    assert cell.needs == ("sources-tiny",)


def test_a_cell_reading_an_edited_cell_is_another_cell(tmp_path: Path) -> None:
    def plan(patterns: str) -> dict[str, str]:
        path = tmp_path / "e.yaml"
        path.write_text(TEXT.replace("MODEL", "m").replace("PATTERNS", patterns))
        return {c.name: c.identity for c in plan_cells(read_experiment(path), estimate=False)}

    three, four = plan("max_per_pattern: 3"), plan("max_per_pattern: 4")
    assert three["items"] != four["items"]
    # The run cell's own settings still read "{cell:items}/task.yaml": only its input
    # changed, and that must make it another cell (else it stays done on old items).
    assert three["on-items-tiny"] != four["on-items-tiny"]
    assert three["sources-tiny"] == four["sources-tiny"]


def test_after_its_input_is_edited_a_dependent_cell_is_not_left_done(
    tmp_path: Path, tiny_llama: Path
) -> None:
    out = tmp_path / "out"
    first = run_experiment(read_experiment(_file(tmp_path, tiny_llama, "max_per_pattern: 2")), out)
    assert not first.failed
    records = (out / "cells/on-items-tiny/records.jsonl").read_bytes()  # by hand: bytes
    again = run_experiment(read_experiment(_file(tmp_path, tiny_llama, "max_per_pattern: 3")), out)
    states = {o.cell: (o.state, o.error or "") for o in again.outcomes}
    # Not skipped as done (the report would join 3 new items with 2 old records): the run
    # folder sees its task's contents changed and refuses in one line; nothing is mixed.
    assert states["on-items-tiny"][0] == "failed"
    assert "holds records made from other contents" in states["on-items-tiny"][1]
    assert (out / "cells/on-items-tiny/records.jsonl").read_bytes() == records
    assert states["sources-tiny"] == ("done", "")
