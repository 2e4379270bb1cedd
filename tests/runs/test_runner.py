"""Run folders: records, results, resume after a crash (also kill -9), determinism."""

from __future__ import annotations

import hashlib
import json
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import ScoreRequest, stand_in
from nlieval.choice import RunConfig, run
from nlieval.ground import render
from nlieval.reports import ReportConfig, report
from nlieval.runs import RECORDS, Results, RunError, RunFolder
from nlieval.types import Progress
from tests.helpers.cli_process import start_cli
from tests.helpers.records import saved_rows


class HashLM:
    """A deterministic fake LM: scores depend only on the text (for fast loop tests)."""

    name = "hash"

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls = 0
        self.fail_after = fail_after
        self.scored = 0

    def loglikelihood(
        self, requests: Sequence[ScoreRequest], progress: Progress | None = None
    ) -> list[list[float]]:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("simulated crash")
        out = []
        for r in requests:
            out.append(
                [
                    -(int(hashlib.sha256((r.context + c).encode()).hexdigest()[:6], 16) % 1000)
                    / 100
                    for c in r.continuations
                ]
            )
            if progress:
                progress(1)
        self.scored += len(requests)
        return out


def _cfg(**kw: object) -> RunConfig:
    base: dict[str, object] = {
        "model": "hash",
        "tasks": ("smoke",),
        "shots": (0, 2),
        "seeds": (0, 1),
    }
    base.update(kw)
    return RunConfig(**base)  # type: ignore[arg-type]


def _run(cfg: RunConfig, out: Path, load: Callable[[str | None], HashLM], **kw: Any) -> Results:
    # A run whose backends are the stand-in's: no model is loaded, checked or hashed.
    return run(cfg, out, model=stand_in(cfg, load), **kw)


def _records(folder: Path) -> list[dict[str, Any]]:
    return saved_rows(folder)


def test_run_writes_records_results_and_summary(tmp_path: Path) -> None:
    res = _run(_cfg(), tmp_path / "r", lambda ck: HashLM(), progress=False)
    recs = _records(tmp_path / "r")
    # 48 items at k=0 (one seed: no draw to vary) + 48 x 2 seeds at k=2.
    assert len(recs) == 48 * 3
    assert {(r["k"], r["seed"]) for r in recs} == {(0, 0), (2, 0), (2, 1)}
    rows = {(m["task"], m["k"]): m for m in res.metrics}
    assert rows[("smoke", 2)]["seeds"] == [0, 1]
    for m in res.metrics:
        assert 0 <= m["accuracy"] <= 1 and 0 <= m["macro_f1"] <= 1
        assert len(m["per_seed"][0]["confusion"]) == 3
    saved = json.loads((tmp_path / "r" / "results.json").read_text())
    assert saved["config"]["shots"] == [0, 2]
    # The smoke pool is its own train file: every item of a sweep point gets the draw
    # written in results.json, and the two seeds draw differently.
    draws = saved["draws"]["smoke"]["2"]
    assert draws["0"] != draws["1"]
    for r in recs:
        if r["k"] == 2:
            assert r["shots"] == draws[str(r["seed"])]
    assert saved["version"] == 2
    (made,) = saved["provenance"]
    assert made["command"] == "run" and "torch" in made["versions"]
    assert "| smoke | 2 |" in (tmp_path / "r" / "summary.md").read_text()


def test_records_carry_prompt_probs_and_shots(tmp_path: Path) -> None:
    _run(_cfg(), tmp_path / "r", lambda ck: HashLM(), progress=False)
    r = [x for x in _records(tmp_path / "r") if x["k"] == 2][0]
    assert r["prompt"].endswith("Answer:") and r["prompt"].count("Answer:") == 3
    assert abs(sum(r["probs"]) - 1) < 1e-9 and len(r["loglik"]) == 3
    assert r["pred"] == r["labels"][max(range(3), key=lambda i: r["loglik"][i])]
    assert len(r["shots"]) == 2 and r["item_id"] not in r["shots"]


def test_interrupted_run_resumes_without_duplicates(tmp_path: Path) -> None:
    full = _run(_cfg(), tmp_path / "full", lambda ck: HashLM(), progress=False)
    with pytest.raises(KeyboardInterrupt):
        _run(
            _cfg(),
            tmp_path / "cut",
            lambda ck: HashLM(fail_after=3),
            progress=False,
        )
    partial = len(_records(tmp_path / "cut"))
    assert 0 < partial < 48 * 3
    # The time spent before the crash is kept with the records it produced.
    timing = RunFolder(tmp_path / "cut").read_timing()
    assert sum(t["items"] for t in timing.values()) == partial
    second = HashLM()
    resumed = _run(_cfg(), tmp_path / "cut", lambda ck: second, progress=False)
    assert second.scored == 48 * 3 - partial  # finished items are not recomputed
    keys = [(r["k"], r["seed"], r["item_id"]) for r in _records(tmp_path / "cut")]
    assert len(keys) == len(set(keys)) == 48 * 3
    assert [m["accuracy"] for m in resumed.metrics] == [m["accuracy"] for m in full.metrics]
    assert [m["macro_f1"] for m in resumed.metrics] == [m["macro_f1"] for m in full.metrics]


def test_partial_last_line_is_cut_on_resume(tmp_path: Path) -> None:
    _run(_cfg(shots=(0,)), tmp_path / "r", lambda ck: HashLM(), progress=False)
    path = tmp_path / "r" / RECORDS
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:10]) + lines[10][: len(lines[10]) // 2])
    fake = HashLM()
    _run(_cfg(shots=(0,)), tmp_path / "r", lambda ck: fake, progress=False)
    assert fake.scored == 48 - 10
    assert len(_records(tmp_path / "r")) == 48


def test_finished_run_does_not_load_the_model(tmp_path: Path) -> None:
    _run(_cfg(), tmp_path / "r", lambda ck: HashLM(), progress=False)

    def boom(ck: str | None) -> HashLM:
        raise AssertionError("model loaded although nothing is left to do")

    _run(_cfg(), tmp_path / "r", boom, progress=False)


def test_incompatible_config_is_refused(tmp_path: Path) -> None:
    _run(_cfg(shots=(0,)), tmp_path / "r", lambda ck: HashLM(), progress=False)
    with pytest.raises(RunError, match="model: 'hash' -> 'other'"):
        _run(_cfg(model="other", shots=(0,)), tmp_path / "r", lambda ck: HashLM())
    # Growing the sweep is allowed and only computes the new points.
    fake = HashLM()
    _run(_cfg(shots=(0, 1)), tmp_path / "r", lambda ck: fake, progress=False)
    assert fake.scored == 48 * 2


def test_report_recomputes_from_records(tmp_path: Path) -> None:
    res = _run(_cfg(), tmp_path / "r", lambda ck: HashLM(), progress=False)
    (tmp_path / "r" / "results.json").unlink()
    table = report(ReportConfig(runs=(str(tmp_path / "r"),)))
    again = RunFolder(tmp_path / "r").read_results()
    assert [m["accuracy"] for m in again["metrics"]] == [m["accuracy"] for m in res.metrics]
    assert "| hash | smoke | 0 | 48 | 1 |" in table


def test_kill_9_then_resume_equals_uninterrupted(tmp_path: Path, tiny_llama: Path) -> None:
    args = [
        "run",
        "--model",
        str(tiny_llama),
        "--task",
        "smoke",
        "--shots",
        "0,3",
        "--seeds",
        "0,1,2",
        "--no-progress",
        # One row per forward pass and several sweep points: the scoring after the first
        # records lasts long enough to be killed in, even on a fast machine.
        "--batch-size",
        "1",
    ]
    ref = start_cli(*args, "--out", str(tmp_path / "ref"), cwd=tmp_path)
    assert ref.wait(timeout=300) == 0, ref.stderr.read() if ref.stderr else ""
    total = len(_records(tmp_path / "ref"))
    out = tmp_path / "killed"
    proc = start_cli(*args, "--out", str(out), cwd=tmp_path)
    deadline = time.time() + 120
    while time.time() < deadline:
        rec = out / RECORDS
        if rec.is_file() and rec.stat().st_size > 0 and proc.poll() is None:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # By hand: torn (a kill may leave half a line).
    n_before = len((out / RECORDS).read_text().splitlines()) if (out / RECORDS).exists() else 0
    assert n_before < total, "the run finished before it could be killed"
    again = start_cli(*args, "--out", str(out), cwd=tmp_path)
    assert again.wait(timeout=300) == 0, again.stderr.read() if again.stderr else ""
    got = _records(out)
    want = _records(tmp_path / "ref")
    key = lambda r: (r["k"], r["seed"], r["item_id"])  # noqa: E731
    assert len(got) == len({key(r) for r in got}) == total
    by_key = {key(r): r for r in want}
    for r in got:
        assert r["pred"] == by_key[key(r)]["pred"]
        assert (
            max(abs(a - b) for a, b in zip(r["loglik"], by_key[key(r)]["loglik"], strict=True))
            < 1e-4
        )
    m_got = json.loads((out / "results.json").read_text())["metrics"]
    m_want = json.loads((tmp_path / "ref" / "results.json").read_text())["metrics"]
    assert [(m["k"], m["accuracy"], m["macro_f1"]) for m in m_got] == [
        (m["k"], m["accuracy"], m["macro_f1"]) for m in m_want
    ]


def test_report_shows_rate_and_wall_time(tmp_path: Path) -> None:
    _run(_cfg(shots=(0,)), tmp_path / "r", lambda ck: HashLM(), progress=False)
    table = report(ReportConfig(runs=(str(tmp_path / "r"),), write=False)).splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    row = [c.strip() for c in table[2].strip("|").split("|")]
    assert head[-2:] == ["items/s", "wall s"] and len(row) == len(head)
    assert float(row[-2]) > 0


# --------------------------------------------------------------------------- --sample


def _scinli(**kw: object) -> RunConfig:
    return _cfg(tasks=("scinli",), shots=(0,), seeds=(0,), **kw)


def _ids(folder: Path) -> list[str]:
    return [r["item_id"] for r in _records(folder)]


@pytest.mark.data
def test_sample_is_stratified_seeded_and_in_file_order(data_dir: Path) -> None:
    from collections import Counter

    from nlieval.choice.runner import plan
    from nlieval.data import load_task, sample_items

    items = load_task("scinli", data_dir).items
    # The file is sorted by class: the first 40 items are all contrasting.
    assert {it.label.value for it in items[:40] if it.label} == {"contrasting"}
    ((ds, _, info),) = plan(_scinli(sample=40, data_dir=str(data_dir)))
    assert Counter(it.label.value for it in ds.items if it.label) == {
        "contrasting": 10,
        "reasoning": 10,
        "entailment": 10,
        "neutral": 10,
    }
    assert info["items"] == 40 and info["items_in_split"] == 4000
    position = {it.id: i for i, it in enumerate(items)}
    assert [position[it.id] for it in ds.items] == sorted(position[it.id] for it in ds.items)
    assert ds.items == sample_items(items, 40, 0)
    other = sample_items(items, 40, 1)
    assert other != ds.items and Counter(it.label for it in other) == Counter(
        it.label for it in ds.items
    )
    # Odd sizes: shares within one item of the file's; all items when n is too large.
    assert sorted(Counter(it.label for it in sample_items(items, 42)).values()) == [10, 10, 11, 11]
    assert sample_items(items[:5], 9) == tuple(items[:5])
    with pytest.raises(ValueError, match="positive"):
        sample_items(items, 0)


@pytest.mark.data
def test_sample_run_resumes_and_refuses_another_sample(tmp_path: Path, data_dir: Path) -> None:
    cfg = _scinli(sample=40, data_dir=str(data_dir))
    _run(cfg, tmp_path / "full", lambda ck: HashLM(), progress=False)
    with pytest.raises(KeyboardInterrupt):
        _run(cfg, tmp_path / "cut", lambda ck: HashLM(1), progress=False)
    partial = len(_records(tmp_path / "cut"))
    assert 0 < partial < 40
    second = HashLM()
    _run(cfg, tmp_path / "cut", lambda ck: second, progress=False)
    assert second.scored == 40 - partial
    assert sorted(_ids(tmp_path / "cut")) == sorted(_ids(tmp_path / "full"))
    assert len(set(_ids(tmp_path / "cut"))) == 40

    def fake(ck: str | None) -> HashLM:
        return HashLM()

    for change, message in (
        ({"sample": 41}, "sample: 40 -> 41"),
        ({"sample": 40, "sample_seed": 1}, "sample_seed: 0 -> 1"),
        ({}, "sample: 40 -> None"),
    ):
        with pytest.raises(RunError, match=message):
            _run(_scinli(data_dir=str(data_dir), **change), tmp_path / "cut", fake)
    assert "sample 40 by label (seed 0)" in (tmp_path / "cut" / "summary.md").read_text()


def test_sample_and_limit_do_not_mix(capsys: pytest.CaptureFixture[str]) -> None:
    from nlieval.cli import main

    with pytest.raises(ValueError, match="cannot be combined"):
        _cfg(limit=10, sample=10)
    with pytest.raises(ValueError, match="--sample must be positive"):
        _cfg(sample=0)
    assert main(["run", "--task", "smoke", "--limit", "5", "--sample", "5", "--out", "x"]) == 2
    err = capsys.readouterr().err
    assert "cannot be combined" in err and len(err.strip().splitlines()) == 1


def test_folder_of_an_older_version_resumes(tmp_path: Path) -> None:
    # config.json written before --sample existed has neither sample nor sample_seed.
    _run(_cfg(shots=(0,)), tmp_path / "r", lambda ck: HashLM(), progress=False)
    path = tmp_path / "r" / "config.json"
    saved = json.loads(path.read_text())
    del saved["sample"], saved["sample_seed"]
    path.write_text(json.dumps(saved))
    fake = HashLM()
    _run(_cfg(shots=(0,)), tmp_path / "r", lambda ck: fake, progress=False)
    assert fake.scored == 0


def test_unlabelled_records_get_a_table_row() -> None:
    # Inferred and generated items have no gold label: the row must still show how many
    # items were scored and what the model predicted, with the scores as n/a.
    from nlieval.metrics import summarize
    from nlieval.runs import metrics_table
    from nlieval.types import Record

    labels = ("entailment", "neutral", "contradiction")
    recs = [
        Record("inf", str(i), "m", 0, 0, labels, (-1.0, -2.0, -3.0), (0.6, 0.3, 0.1),
               "entailment" if i < 3 else "neutral", None)
        for i in range(4)
    ]  # fmt: skip
    (row,) = summarize(recs)
    assert row["n"] == 4 and row["pred_dist"]["entailment"] == 0.75
    table = render(metrics_table([row]), "md")
    assert "| inf | 0 | 4 |" in table and "n/a" in table and "E 75% N 25% C 0%" in table
