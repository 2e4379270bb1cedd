"""A report holds no path of the machine that wrote it: an experiment folder moved
elsewhere and run again does no model work and leaves every report file byte for byte
the same (issue 42, defect 10: the index named the dynamics output's skipped figure and
its cell by absolute paths)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nlieval.experiments import driver, read_experiment, run_experiment
from tests.helpers.tiny_models import tiny_model

TEXT = """\
experiment: moved
backoff: 0
models:
  tiny: {model: MODEL}
blocks:
  base: {command: run, tasks: [smoke], limit: 3, shots: [0, 1]}
  series: {command: run, tasks: [smoke], limit: 2, shots: [0]}
matrix:
  - {block: base, models: [tiny]}
  - {block: series, models: [tiny], checkpoints: [STEP1, STEP2]}
outputs:
  table: {kind: grid, label: Table 3, blocks: [base], rows: [model, k]}
  shots: {kind: figure, figure: shots, label: Figure 5, blocks: [base]}
  listing: {kind: items, blocks: [base]}
  dyn: {kind: dynamics, label: Figure 2, blocks: [series]}
"""


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_moved_report_is_byte_identical_and_names_no_path_of_the_machine(
    tmp_path: Path, tiny_llama: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = [tiny_model(tmp_path / "models" / f"step-{n}", "llama", seed=n) for n in (1, 2)]
    path = tmp_path / "e.yaml"
    text = TEXT.replace("MODEL", str(tiny_llama))
    path.write_text(text.replace("STEP1", str(steps[0])).replace("STEP2", str(steps[1])))
    first = tmp_path / "here" / "exp"
    summary = run_experiment(read_experiment(path), first)
    assert not summary.failed
    report = _files(first / "report")
    # The dynamics output skips its entropy figure (no ChaosNLI records): a note naming
    # the figure and the cell, the case that held absolute paths.
    assert "- skipped report/dyn-series-tiny-entropy.png" in report["index.md"].decode()

    moved = tmp_path / "elsewhere" / "moved-exp"
    shutil.move(first, moved)

    def no_work(job: object) -> None:
        raise AssertionError("a done cell was run again")

    monkeypatch.setattr(driver, "run_cell", no_work)
    again = run_experiment(read_experiment(path), moved)
    assert [o.attempts for o in again.outcomes] == [0] * len(again.outcomes)
    assert _files(moved / "report") == report
    # No file of the folder (report, cells, state) names where the folder was or is.
    for name, data in _files(moved).items():
        for where in (first, moved):
            assert str(where).encode() not in data, f"{name} holds {where}"
