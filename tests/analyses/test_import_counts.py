"""Every count ``nlieval import`` prints or records is the count it used (issue 43, rule
2): the rows it read, the items matched by id, the ids the task lacks and the items given
nothing (said with their counts), the records written and the n of its scores, each
compared with the prediction and task files counted with plain json; importing again
(resumed) counts the same and writes nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.cli import main
from tests.helpers.records import saved_records


def _smoke_ids() -> list[str]:
    import nlieval

    path = Path(nlieval.__file__).parent / "resources" / "smoke.jsonl"
    return [json.loads(line)["pairID"] for line in path.read_text().splitlines() if line.strip()]


def _cells(printed: str, file: str) -> list[str]:
    line = next(ln for ln in printed.splitlines() if ln.startswith(f"| {file} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_import_counts_what_it_read_and_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _smoke_ids()
    given = ids[:5] + ["not-here-1", "not-here-2"]
    lines = [json.dumps({"id": i, "probs": [0.6, 0.3, 0.1]}) for i in given]
    (tmp_path / "p.jsonl").write_text("\n".join(lines) + "\n")
    # Counted from the files.
    rows = sum(1 for ln in (tmp_path / "p.jsonl").read_text().splitlines() if ln.strip())
    matched = len(set(given) & set(ids))
    unmatched, missing = rows - matched, len(set(ids) - set(given))
    out = tmp_path / "run"
    argv = ["import", str(tmp_path / "p.jsonl"), "--task", "smoke", "--model", "m"]
    for _ in range(2):  # the second call resumes: the same counts, nothing written twice
        assert main([*argv, "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        cells = _cells(printed, "p.jsonl")
        assert cells[4] == str(rows)
        assert cells[5] == f"{matched} of {len(ids)}"
        assert cells[6].startswith(f"{unmatched} (")
        assert cells[7].startswith(f"{missing} (")
        records = saved_records(out)
        assert sorted(r.item_id for r in records) == sorted(set(given) & set(ids))
        saved = json.loads((out / "results.json").read_text())
        assert [m["n"] for m in saved["metrics"]] == [matched]
        score = next(ln for ln in printed.splitlines() if ln.startswith("| m | smoke |"))
        assert [c.strip() for c in score.strip("|").split("|")][3] == str(matched)
