"""results.json is typed and versioned, and a folder's provenance is appended per
invocation, never rewritten by a later report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.reports import ReportConfig, report
from nlieval.runs import RESULTS_VERSION, RunError, RunFolder, read_results
from tests.helpers.hash_lm import HashLM
from tests.helpers.records import saved_records


def _run(out: Path, limit: int) -> Any:
    cfg = RunConfig("hash", ("smoke",), limit=limit)
    return run(cfg, out, model=stand_in(cfg, lambda ck: HashLM()), progress=False)


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def test_provenance_is_appended_per_invocation_and_kept_by_report(tmp_path: Path) -> None:
    out = tmp_path / "r"
    _run(out, 4)
    _run(out, 8)  # resumed: a second invocation
    saved = _json(out / "results.json")
    assert saved["version"] == RESULTS_VERSION == 2
    assert [p["command"] for p in saved["provenance"]] == ["run", "run"]
    first = saved["provenance"][0]
    report(ReportConfig(runs=(str(out),)))
    again = _json(out / "results.json")
    assert [p["command"] for p in again["provenance"]] == ["run", "run", "report"]
    assert again["provenance"][0] == first  # never rewritten
    assert again["metrics"] == saved["metrics"]
    # The summary names what made the records, not the report.
    summary = (out / "summary.md").read_text()
    assert f"commit {first['git_commit']}" in summary


def test_a_results_file_of_a_newer_version_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    _run(out, 2)
    saved = _json(out / "results.json")
    (out / "results.json").write_text(json.dumps({**saved, "version": RESULTS_VERSION + 1}))
    with pytest.raises(RunError, match="newer nlieval"):
        read_results(RunFolder(out))
    assert main(["report", str(out), "--no-write"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "results.json" in err and "upgrade" in err


def test_a_folder_of_version_1_keeps_its_environment_as_provenance(tmp_path: Path) -> None:
    # As written before the schema: one "environment", no version, no provenance.jsonl.
    out = tmp_path / "r"
    _run(out, 3)
    table = report(ReportConfig(runs=(str(out),), write=False))
    saved = _json(out / "results.json")
    env = {
        "versions": {"nlieval": "0.0.9", "torch": "2.0"},
        "python": "3.10.1",
        "platform": "old",
        "git_commit": "abc123",
        "time": "2025-01-01T00:00:00+00:00",
    }
    old = {k: v for k, v in saved.items() if k not in ("version", "provenance")}
    (out / "results.json").write_text(json.dumps({**old, "environment": env}))
    (out / "provenance.jsonl").unlink()
    assert report(ReportConfig(runs=(str(out),))) == table  # the same table
    prov = _json(out / "results.json")["provenance"]
    assert prov[0]["command"] == "unknown (results version 1)"
    assert prov[0]["versions"] == env["versions"] and prov[0]["git_commit"] == "abc123"
    assert prov[-1]["command"] == "report"
    assert "commit abc123" in (out / "summary.md").read_text()


BAD = ['{"version": "2"}', '{"version": 2, "provenance": [{"versions": 3}]}']


@pytest.mark.parametrize("bad", BAD)
def test_a_malformed_results_file_is_one_line(tmp_path: Path, bad: str) -> None:
    out = tmp_path / "r"
    _run(out, 2)
    (out / "results.json").write_text(bad)
    with pytest.raises(RunError, match="results.json"):
        read_results(RunFolder(out))


def test_a_folder_without_its_config_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Re-creating config.json from the current arguments would claim the records for them.
    out = tmp_path / "r"
    _run(out, 3)
    records = (out / "records.jsonl").read_bytes()  # by hand: bytes
    (out / "config.json").unlink()
    with pytest.raises(RunError, match="no config.json"):
        _run(out, 5)
    assert (out / "records.jsonl").read_bytes() == records
    assert not (out / "config.json").exists()
    argv = ["run", "--task", "smoke", "--limit", "5", "--out", str(out), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no config.json" in err
    # An unrelated folder is refused the same way; an empty one is fine.
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(RunError, match="notes.txt"):
        _run(tmp_path / "mine", 2)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"
    (tmp_path / "empty").mkdir()
    _run(tmp_path / "empty", 2)


def test_a_folder_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "r"
    _run(out, 2)
    saved = _json(out / "config.json")
    assert saved["folder_format"] == 2 and saved["kind"] == "run"
    (out / "config.json").write_text(json.dumps({**saved, "folder_format": 3}))
    with pytest.raises(RunError, match="newer nlieval"):
        _run(out, 2)
    # A folder of format 1 (no "folder_format", no "kind": made by `nlieval run`) resumes.
    old = {k: v for k, v in saved.items() if k not in ("folder_format", "kind")}
    (out / "config.json").write_text(json.dumps(old))
    _run(out, 4)
    assert len(saved_records(out)) == 4


def test_a_provenance_line_cut_by_a_kill_does_not_break_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "r"
    _run(out, 2)
    with open(out / "provenance.jsonl", "a", encoding="utf-8") as f:
        f.write('{"command": "run", "ti')  # killed mid-write
    _run(out, 4)
    prov = _json(out / "results.json")["provenance"]
    assert [p["command"] for p in prov] == ["run", "run"]


def test_report_refuses_a_folder_of_a_newer_format(tmp_path: Path) -> None:
    out = tmp_path / "r"
    _run(out, 2)
    saved = _json(out / "config.json")
    (out / "config.json").write_text(json.dumps({**saved, "folder_format": 3}))
    before = (out / "results.json").read_bytes()
    with pytest.raises(RunError, match="newer nlieval"):
        report(ReportConfig(runs=(str(out),)))
    assert (out / "results.json").read_bytes() == before  # not rewritten


def test_an_invocation_with_nothing_to_do_is_no_provenance(tmp_path: Path) -> None:
    out = tmp_path / "r"
    _run(out, 2)
    _run(out, 2)  # nothing left: it made no record
    assert [p["command"] for p in _json(out / "results.json")["provenance"]] == ["run"]


def test_an_old_run_folder_with_an_ignored_api_base_stays_local(tmp_path: Path) -> None:
    # Before one naming rule `run --model m --api-base URL` scored m in process.
    out = tmp_path / "r"
    _run(out, 2)
    saved = _json(out / "config.json")
    old = {k: v for k, v in saved.items() if k not in ("folder_format", "kind", "engine")}
    (out / "config.json").write_text(json.dumps({**old, "api_base": "http://h:1/v1"}))
    _run(out, 4)  # resumed in process, as it was made
    assert len(saved_records(out)) == 4
