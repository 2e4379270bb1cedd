"""Running an experiment on a tiny random-weight model and the bundled smoke task: its
cells' records are those of the command run by hand, a second call does no model work
and writes the same report, a failing cell is retried and leaves the others done, a
folder's refusal (another configuration, a lock) is one line naming the cell."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import nlieval.experiments.plan as planning
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.experiments import (
    LocalExecutor,
    driver,
    experiment_status,
    format_status,
    plan_cells,
    read_experiment,
    run_experiment,
)
from nlieval.ground import FolderError
from nlieval.settings import options, setting
from tests.helpers.records import saved_rows

TEXT = """\
experiment: tiny
backoff: 0
models:
  tiny: {model: MODEL}
  missing: {model: MISSING}
blocks:
  base: {command: run, tasks: [smoke], limit: 3, shots: [0, 1]}
matrix:
  - {block: base, models: [tiny]}
  - {block: base, models: [tiny], seeds: [1, 2], shots: [2], each: [seeds]}
outputs:
  table: {kind: grid, label: Table 3, blocks: [base], rows: [model, k]}
  shots: {kind: figure, figure: shots, label: Figure 5, blocks: [base]}
"""


def _file(folder: Path, model: Path, text: str = TEXT) -> Path:
    path = folder / "e.yaml"
    path.write_text(
        text.replace("MISSING", str(folder / "no-such-model")).replace("MODEL", str(model))
    )
    return path


def _records(folder: Path) -> list[dict[str, object]]:
    return sorted(saved_rows(folder), key=lambda r: (r["k"], r["seed"], r["item_id"]))


def _report(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "report").iterdir())}


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("exp")
    path = _file(root, tiny_llama)
    summary = run_experiment(read_experiment(path), root / "out")
    assert not summary.failed
    return path, root / "out"


def test_cells_are_the_command_run_by_hand(
    done: tuple[Path, Path], tiny_llama: Path, tmp_path: Path
) -> None:
    path, out = done
    assert sorted(p.name for p in (out / "cells").iterdir()) == [
        "base-tiny",
        "base-tiny-seed1",
        "base-tiny-seed2",
    ]
    # The same settings, typed as `nlieval run` flags would give them.
    by_hand = {
        "base-tiny": RunConfig(str(tiny_llama), ("smoke",), limit=3, shots=(0, 1)),
        "base-tiny-seed2": RunConfig(str(tiny_llama), ("smoke",), limit=3, shots=(2,), seeds=(2,)),
    }
    for name, cfg in by_hand.items():
        run(cfg, tmp_path / name, progress=False)
        assert _records(out / "cells" / name) == _records(tmp_path / name)
    # 3 items x (k=0 once, k=1 seed 0): 6 records; k=2 seed 2: 3.
    assert len(_records(out / "cells" / "base-tiny")) == 6


def test_second_call_does_no_model_work_and_writes_the_same_report(
    done: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, out = done
    before = _report(out)
    # By hand: bytes.
    records = {p.name: (p / "records.jsonl").read_bytes() for p in (out / "cells").iterdir()}
    assert sorted(before) == [
        "index.md",
        "shots.pdf",
        "shots.png",
        "table.csv",
        "table.md",
        "table.tex",
    ]

    def no_work(job: object) -> None:
        raise AssertionError("a done cell was run again")

    monkeypatch.setattr(driver, "run_cell", no_work)
    summary = run_experiment(read_experiment(path), out)
    assert [o.attempts for o in summary.outcomes] == [0, 0, 0]
    assert _report(out) == before
    assert {
        p.name: (p / "records.jsonl").read_bytes() for p in (out / "cells").iterdir()
    } == records


def test_a_second_call_reads_no_data_for_the_estimates(
    done: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, out = done
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    saved = json.loads((copy / "experiment.json").read_text())["cells"]
    assert [c["records"] for c in saved] == [6, 3, 3]  # counted when the cells ran
    planning.clear_estimates()  # a new process: no estimate in memory

    def count(run_config: object) -> None:
        raise AssertionError("a task's data was read for an estimate")

    monkeypatch.setattr(planning, "_count", count)
    run_experiment(read_experiment(path), copy)
    # A cell not done whose identity the plan saved keeps its estimate, read again.
    (copy / "state" / "base-tiny.json").unlink()
    monkeypatch.setattr(driver, "run_cell", lambda job: None)
    run_experiment(read_experiment(path), copy)
    again = json.loads((copy / "experiment.json").read_text())["cells"]
    assert [c["records"] for c in again] == [6, 3, 3]


def test_index_names_each_artifact_and_its_cells(done: tuple[Path, Path]) -> None:
    _, out = done
    index = (out / "report" / "index.md").read_text()
    assert "## Table 3: table (grid)" in index and "- [table.csv](table.csv)" in index
    assert (
        "## Figure 5: shots (figure)" in index
        and "- [shots.png](shots.png)\n- [shots.pdf](shots.pdf)" in index
    )
    assert index.count("cells: base-tiny, base-tiny-seed1, base-tiny-seed2") == 2
    table = [x for x in (out / "report" / "table.md").read_text().splitlines() if x[:1] == "|"]
    # Rows model x k: k = 0, 1, 2, and no Average: one model, whose mean over models
    # would repeat its rows (never a mean pooling the k; the notes under the table aside).
    assert [line.split("|")[2].strip() for line in table[2:]] == ["0", "1", "2"]


def test_status_of_a_partial_cell_counts_its_records(
    done: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = done
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    # As a driver killed mid-cell leaves it: no outcome, 2 of the 6 records written.
    (copy / "state" / "base-tiny.json").unlink()
    lines = (copy / "cells" / "base-tiny" / "records.jsonl").read_text().splitlines(keepends=True)
    (copy / "cells" / "base-tiny" / "records.jsonl").write_text("".join(lines[:2]))
    rows = {r["cell"]: r for r in experiment_status(copy)}
    assert rows["base-tiny"]["state"] == "partial"
    assert (rows["base-tiny"]["records"], rows["base-tiny"]["expected"]) == (2, 6)
    assert rows["base-tiny-seed1"]["state"] == "done"
    assert "partial  base-tiny  2 of 6 records" in format_status(list(rows.values()))


def test_a_failing_cell_is_retried_and_the_others_complete(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = TEXT.replace("models: [tiny]}", "models: [missing, tiny]}", 1)
    path = _file(tmp_path, tiny_llama, text)
    code = main(["experiment", "run", str(path), "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert code == 1
    # retries: 2 (the default): 3 attempts in all.
    assert "failed  base-missing (3 attempts): cell base-missing: ModelError: " in printed
    assert printed.splitlines()[-1].startswith("3 of 4 cells done (4 run in this call), 1 failed")
    main(["experiment", "status", str(tmp_path / "out")])
    status = capsys.readouterr().out.splitlines()
    failed = [line for line in status if line.startswith("failed   base-missing")]
    assert len(failed) == 1 and "does not exist" in failed[0]
    assert status[-1] == "done: 3, failed: 1" or status[-1] == "failed: 1, done: 3"
    index = (tmp_path / "out" / "report" / "index.md").read_text()
    assert "without (not done): base-missing" in index


def test_retry_waits_with_back_off(
    tmp_path: Path, tiny_llama: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path, tiny_llama, TEXT.replace("backoff: 0", "backoff: 3"))
    exp = read_experiment(path)
    calls: list[str] = []
    real = driver.run_cell

    def flaky(job: driver.CellJob) -> None:
        calls.append(job.cell.name)
        if calls.count(job.cell.name) < 3:
            raise RuntimeError("CUDA error: an illegal memory access")  # as a flaky node says
        real(job)

    monkeypatch.setattr(driver, "run_cell", flaky)
    slept: list[float] = []
    summary = run_experiment(exp, tmp_path / "out", executor=LocalExecutor(sleep=slept.append))
    assert [o.attempts for o in summary.outcomes] == [3, 3, 3]
    assert not summary.failed
    # Exponential: 3 s, then 6 s, per cell.
    assert slept == [3.0, 6.0] * 3


def test_an_edited_cell_is_refused_in_one_line_naming_it(
    done: tuple[Path, Path], tmp_path: Path
) -> None:
    path, out = done
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    before = (copy / "cells" / "base-tiny" / "records.jsonl").read_bytes()  # by hand: bytes
    edited = read_experiment(path, ["base.balanced=true"])
    summary = run_experiment(edited, copy, executor=LocalExecutor(sleep=lambda s: None))
    outcome = {o.cell: o for o in summary.outcomes}["base-tiny"]
    assert outcome.state == "failed" and outcome.attempts == 1  # a refusal: not tried again
    assert outcome.error is not None and "\n" not in outcome.error
    assert outcome.error.startswith("cell base-tiny: ")
    assert "balanced: False -> True" in outcome.error
    # The advice is what to do in an experiment (run has --overwrite; experiment run not).
    assert "--overwrite" not in outcome.error
    assert f"remove {copy / 'cells' / 'base-tiny'} to run the cell again" in outcome.error
    assert (copy / "cells" / "base-tiny" / "records.jsonl").read_bytes() == before


@dataclass(frozen=True)
class Knobs:
    tensor_parallel: int = setting(1, help="GPUs a model is split over")


@dataclass(frozen=True)
class Later(RunConfig):
    """``run`` as a later version may have it: a new setting and new engine options
    (as tensor_parallel_size came to every model), each with a default."""

    new_knob: int = setting(3, help="a setting added later")
    knobs: Knobs = options(Knobs)


@dataclass(frozen=True)
class Flipped(RunConfig):
    """``run`` as a later version may have it: an IDENTITY setting's default changed."""

    balanced: bool = setting(True, help="label-balanced few-shot draws")


def _run_as(monkeypatch: pytest.MonkeyPatch, cls: type[RunConfig]) -> None:
    from nlieval.experiments import commands

    original = commands._classes
    monkeypatch.setattr(
        commands, "_classes", lambda name: (cls,) if name == "run" else original(name)
    )


def test_a_setting_added_with_a_default_runs_no_cell_again(
    done: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, out = done
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    report = _report(copy)
    _run_as(monkeypatch, Later)

    def no_work(job: object) -> None:
        raise AssertionError("a done cell was run again")

    monkeypatch.setattr(driver, "run_cell", no_work)
    summary = run_experiment(read_experiment(path), copy)
    assert [(o.state, o.attempts) for o in summary.outcomes] == [("done", 0)] * 3
    assert _report(copy) == report
    cells = json.loads((copy / "experiment.json").read_text())["cells"]
    assert all(c["config"]["new_knob"] == 3 and "new_knob" not in c["given"] for c in cells)


def test_a_changed_default_of_a_checked_field_is_refused_by_every_cell_folder(
    done: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, out = done
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    cells = sorted(p.name for p in (copy / "cells").iterdir() if p.name.startswith("base-tiny"))
    # By hand: bytes.
    before = {c: (copy / "cells" / c / "records.jsonl").read_bytes() for c in cells}
    # base-tiny stopped half way (no outcome saved) under the old default, balanced False.
    (copy / driver.STATE / "base-tiny.json").unlink()
    _run_as(monkeypatch, Flipped)
    summary = run_experiment(
        read_experiment(path), copy, executor=LocalExecutor(sleep=lambda s: None)
    )
    # `balanced` is a field the run folder checks: the done cells as well as the partial
    # one are other cells now, and each folder refuses the other value in one line, so
    # no report shows records of the old default as the new one's.
    failed = {o.cell: o for o in summary.failed}
    assert sorted(failed) == cells == ["base-tiny", "base-tiny-seed1", "base-tiny-seed2"]
    for name, o in failed.items():
        assert o.error is not None and "\n" not in o.error
        assert o.error.startswith(f"cell {name}: ")
        assert "balanced: False -> True" in o.error
    assert {c: (copy / "cells" / c / "records.jsonl").read_bytes() for c in cells} == before


@pytest.mark.parametrize("changed", [("balanced",), ()])
def test_a_folder_refusal_is_advised_from_its_data_not_its_wording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed: tuple[str, ...]
) -> None:
    # A refusal worded in a way no earlier refusal was: the advice comes from what it carries.
    from nlieval.experiments import commands

    real = commands.command

    class Refusing:
        def __init__(self, name: str) -> None:
            self.real = real(name)

        def __getattr__(self, key: str) -> object:
            return getattr(self.real, key)

        def execute(self, configs: object, folder: Path) -> None:
            raise FolderError(f"{folder} is not this cell's", advice="--overwrite", changed=changed)

    (cell,) = plan_cells(read_experiment(_file(tmp_path, tmp_path / "m")), estimate=False)[:1]
    monkeypatch.setattr(commands, "command", Refusing)
    folder = tmp_path / "cells" / cell.name
    state, error, refusal = driver.cell_outcome(driver.CellJob(cell, str(folder)))
    assert (state, refusal) == ("failed", True)
    old = ", or give the block its old settings" if changed else ""
    assert error == f"{folder} is not this cell's; remove {folder} to run the cell again{old}"


HOLD = """
import sys, time
from nlieval.runs import RunFolder
from nlieval.choice import RunConfig
folder = RunFolder(sys.argv[1])
folder.start(RunConfig.from_dict(__import__("json").load(open(sys.argv[1] + "/config.json"))))
print("locked", flush=True)
time.sleep(600)
"""


def test_a_cell_locked_by_another_process_is_one_line(
    done: tuple[Path, Path], tmp_path: Path
) -> None:
    path, out = done
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    (copy / "state" / "base-tiny.json").unlink()  # not done: the driver goes to its folder
    folder = copy / "cells" / "base-tiny"
    before = (folder / "records.jsonl").read_bytes()  # by hand: bytes
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        summary = run_experiment(
            read_experiment(path), copy, executor=LocalExecutor(sleep=lambda s: None)
        )
    finally:
        proc.kill()
        proc.wait()
    outcome = {o.cell: o for o in summary.outcomes}["base-tiny"]
    assert outcome.state == "failed" and outcome.attempts == 1
    assert outcome.error is not None and "\n" not in outcome.error
    assert outcome.error.startswith("cell base-tiny: ") and f"PID {proc.pid}" in outcome.error
    assert (folder / "records.jsonl").read_bytes() == before


def test_plan_lists_cells_with_their_command_lines(done: tuple[Path, Path]) -> None:
    path, _ = done
    cells = plan_cells(read_experiment(path, ["limit=2"]))
    assert [c.name for c in cells] == ["base-tiny", "base-tiny-seed1", "base-tiny-seed2"]
    assert cells[1].argv[-4:] == ("--shots", "2", "--seeds", "1,")
    # 2 items: k=0 and k=1 -> 4 records; k=2 seed 1 -> 2.
    assert [c.records for c in cells] == [4, 2, 2]


def _all_records(out: Path) -> dict[tuple[object, ...], dict[str, object]]:
    got: dict[tuple[object, ...], dict[str, object]] = {}
    for cell in sorted((out / "cells").iterdir()):
        for r in saved_rows(cell):
            key = (cell.name, r["k"], r["seed"], r["item_id"])
            assert key not in got, f"duplicate record {key}"
            got[key] = r
    return got


def test_kill_9_of_the_driver_at_several_moments_then_it_goes_on(
    tmp_path: Path, tiny_llama: Path
) -> None:
    import signal
    import time

    from tests.helpers.cli_process import start_cli

    path = _file(tmp_path, tiny_llama)
    # One row per forward pass: the cells last long enough to be killed in.
    args = ["experiment", "run", str(path), "--set", "batch_size=1"]
    ref = start_cli(*args, "--out", str(tmp_path / "ref"), cwd=tmp_path, one_thread=True)
    assert ref.wait(timeout=600) == 0, ref.stderr.read() if ref.stderr else ""
    out = tmp_path / "killed"
    cells = out / "cells"
    # The moments: a first record of the first cell, its outcome saved, a first record of
    # the second and of the third cell, the report's folder made.
    moments = [
        cells / "base-tiny" / "records.jsonl",
        out / "state" / "base-tiny.json",
        cells / "base-tiny-seed1" / "records.jsonl",
        cells / "base-tiny-seed2" / "records.jsonl",
        out / "report",
    ]
    killed = 0
    for moment in moments:
        proc = start_cli(*args, "--out", str(out), cwd=tmp_path, one_thread=True)
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            if moment.exists() and (moment.is_dir() or moment.stat().st_size > 0):
                break
            time.sleep(0.005)
        if proc.poll() is None:
            killed += 1
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert killed >= 3, "the driver ended before most of the moments"
    last = start_cli(*args, "--out", str(out), cwd=tmp_path, one_thread=True)
    assert last.wait(timeout=600) == 0, last.stderr.read() if last.stderr else ""
    got, want = _all_records(out), _all_records(tmp_path / "ref")
    assert sorted(got) == sorted(want)  # 0 missing, and (checked above) 0 duplicates
    for key, r in got.items():
        assert r["pred"] == want[key]["pred"]
        diff = max(abs(a - b) for a, b in zip(r["loglik"], want[key]["loglik"], strict=True))  # type: ignore[call-overload]
        assert diff < 1e-4
    assert (out / "report" / "table.md").read_bytes() == (
        tmp_path / "ref" / "report" / "table.md"
    ).read_bytes()
    assert [r["state"] for r in experiment_status(out)] == ["done"] * 3


def test_run_says_each_cell_as_it_starts_and_ends_and_its_log_has_no_escape_code(
    tmp_path: Path, tiny_llama: Path
) -> None:
    # As a user's `nlieval experiment run ... > log 2>&1`: a line when each cell starts
    # and ends, with its records (by hand: 3 items x k = 0, 1 is 6; one shot count x 3
    # items is 3 for each seed cell), the summary with its time, no bar and no escape code.
    path = _file(tmp_path, tiny_llama)
    log = tmp_path / "log"
    argv = [sys.executable, "-m", "nlieval.cli", "experiment", "run", str(path)]
    with log.open("w") as sink:
        code = subprocess.run(
            [*argv, "--out", str(tmp_path / "out")], stdout=sink, stderr=subprocess.STDOUT
        ).returncode
    text = log.read_text()
    assert code == 0, text
    assert "\x1b" not in text and "\r" not in text
    lines = text.splitlines()
    assert lines[0] == "3 cells to run (12 records planned)"
    for at, (cell, n) in enumerate((("base-tiny", 6), ("base-tiny-seed1", 3),
                                    ("base-tiny-seed2", 3)), start=1):  # fmt: skip
        start = lines.index(f"cell {at}/3 {cell}: started ({n} records planned)")
        assert lines[start + 1].startswith(f"cell {at}/3 {cell}: done, {n} records in ")
    assert lines[-1].startswith("3 of 3 cells done (3 run in this call), 0 failed; report: ")
    assert lines[-1].endswith(" s")
    # Again: nothing to run, said so; --json prints the summary alone on standard output.
    again = subprocess.run(
        [*argv, "--out", str(tmp_path / "out"), "--json"], capture_output=True, text=True
    )
    assert again.returncode == 0
    summary = json.loads(again.stdout)
    assert (summary["done"], summary["ran"], summary["failed"]) == (3, 0, 0)
    assert again.stderr.splitlines()[0] == (
        "0 cells to run; 3 done already: base-tiny, base-tiny-seed1, base-tiny-seed2"
    )
    quiet = subprocess.run(
        [*argv, "--out", str(tmp_path / "out"), "--quiet"], capture_output=True, text=True
    )
    assert quiet.stdout.splitlines()[0].startswith("3 of 3 cells done (0 run in this call)")


def test_each_warning_is_said_once(
    tmp_path: Path, tiny_llama: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # smoke's first two items are labelled entailment and neutral: --limit 2 warns of the
    # missing contradiction, in the plan's estimate and again in the cell's run.
    text = (
        f"models: {{tiny: {{model: {tiny_llama}}}}}\n"
        "blocks: {base: {command: run, tasks: [smoke], limit: 2}}\n"
        "matrix: [{block: base, models: [tiny]}]\n"
    )
    (tmp_path / "e.yaml").write_text(text)
    planning.clear_estimates()
    with caplog.at_level("WARNING", logger="nlieval"):
        run_experiment(read_experiment(tmp_path / "e.yaml"), tmp_path / "out", report=False)
    said = [r.getMessage() for r in caplog.records if "takes the first 2 items" in r.getMessage()]
    assert len(said) == 1, said


def test_a_refused_setting_is_not_tried_again(tmp_path: Path) -> None:
    # A setting the command refuses (a SettingError: a packaged model as a checkpoint of
    # another) is refused again on every try: the cell fails once, with no wait.
    from nlieval.experiments import LocalExecutor, read_experiment, run_experiment

    waits: list[float] = []
    (tmp_path / "e.yaml").write_text(
        "retries: 3\nbackoff: 1\nmodels: {a: smollm2-135m}\n"
        "blocks: {b: {command: run, tasks: [smoke], checkpoints: [gemma3-270m]}}\n"
        "matrix: [{block: b, models: [a]}]\n"
    )
    summary = run_experiment(
        read_experiment(tmp_path / "e.yaml"), tmp_path / "x", executor=LocalExecutor(waits.append)
    )
    (outcome,) = summary.outcomes
    assert (outcome.state, outcome.attempts, waits) == ("failed", 1, [])
