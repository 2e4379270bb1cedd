"""Every count ``nlieval contamination`` prints or records about its inputs is the count
it used (issue 43, rule 2): items scanned and scored (scores file, summary, printed
table) against the task file counted with plain json, a selection larger than the split
warned with both numbers, EPG's items left out counted per run in items (not records of
every seed and model), and a selection flag that a scores file would ignore refused."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from nlieval import contamination as cont
from nlieval.cli import main as cli_main
from nlieval.ground import render
from nlieval.types import Record


def _smoke_ids() -> list[str]:
    # Counted from the packaged file itself, not through nlieval's reader.
    import nlieval

    path = Path(nlieval.__file__).parent / "resources" / "smoke.jsonl"
    return [json.loads(line)["pairID"] for line in path.read_text().splitlines() if line.strip()]


def test_scan_counts_the_items_it_scored_and_warns_of_a_short_split(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _smoke_ids()
    (tmp_path / "web.txt").write_text("nothing of the task here\n")
    out = tmp_path / "s.jsonl"
    argv = ["contamination", "--task", "smoke", "--corpus", str(tmp_path / "web.txt")]
    with caplog.at_level(logging.WARNING):
        assert cli_main([*argv, "--limit", "500", "--out", str(out), "--workers", "1"]) == 0
    scored = [json.loads(line)["item_id"] for line in out.read_text().splitlines()]
    assert scored == ids
    summary = json.loads((tmp_path / "s.summary.json").read_text())
    assert summary["tasks"][0]["n_items"] == len(ids)
    assert f"| smoke | {len(ids)} |" in capsys.readouterr().out
    assert any(
        "--limit 500" in r.getMessage() and str(len(ids)) in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
    ), caplog.text
    # Within the split: exactly the first N, no warning.
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert cli_main([*argv, "--limit", "5", "--out", str(out), "--workers", "1"]) == 0
    assert [json.loads(line)["item_id"] for line in out.read_text().splitlines()] == ids[:5]
    assert not [r for r in caplog.records if "asks for" in r.getMessage()]


def _rec(item: str, model: str, seed: int, k: int = 0) -> Record:
    labels = ("entailment", "neutral")
    return Record("t", item, model, k, seed, labels, (0.0, 0.0), (0.5, 0.5), labels[0], labels[0])


def test_epg_counts_the_items_each_run_left_out() -> None:
    scores = [{"task": "t", "item_id": i, "score": s} for i, s in (("a", 1.0), ("b", 0.0))]
    # Model m, 3 seeds: items a, b scored, x and y not (2 items, 6 records). Model n,
    # 1 seed: a, b and z (1 item). Model m at k = 1: nothing left out.
    records = [_rec(i, "m", s) for s in range(3) for i in "abxy"]
    records += [_rec(i, "n", 0) for i in "abz"]
    records += [_rec(i, "m", 0, k=1) for i in "ab"]
    rows = cont.epg(records, scores, [0.5])
    left_out = {(r["model"], r["k"]): r["n_unscored"] for r in rows}
    assert left_out == {("m", 0): 2, ("n", 0): 1, ("m", 1): 0}
    assert {(r["model"], r["k"]): r["n_items"] for r in rows} == {
        ("m", 0): 2,
        ("n", 0): 2,
        ("m", 1): 2,
    }
    # The table says what was left out, with its count, under the table.
    table = render(cont.format_epg(rows), "md").splitlines()
    notes = [line for line in table if "without a contamination score" in line]
    assert len(notes) == 2
    assert any(" 2 item" in n and n.startswith("m /") for n in notes), notes
    assert any(" 1 item" in n and n.startswith("n /") for n in notes), notes
    assert table[table.index(notes[0]) - 1] == ""  # not read as a row of the table


@pytest.mark.parametrize("flag", ["--limit", "--sample"])
def test_a_selection_with_a_scores_file_is_refused(tmp_path: Path, flag: str) -> None:
    with pytest.raises(ValueError, match=f"{flag} chooses the items to scan"):
        scores = str(tmp_path / "s.jsonl")
        if flag == "--limit":
            cont.ContaminationConfig(scores=scores, limit=3)
        else:
            cont.ContaminationConfig(scores=scores, sample=3)


@pytest.mark.parametrize(
    ("rows", "line", "field"),
    [
        # An item scored twice would be counted as two items of the summary.
        (
            [{"item_id": "smoke-01", "score": 1.0}, {"item_id": "smoke-01", "score": 0.0}],
            2,
            "item_id",
        ),
        ([{"item_id": "smoke-01", "score": 1.0}, {"score": 0.0}], 2, "item_id"),
        ([{"item_id": "smoke-01", "score": "high"}], 1, "score"),
        ([{"item_id": "smoke-01", "score": 2.0}], 1, "score"),
    ],
)
def test_a_scores_file_counts_each_item_once_or_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rows: list[dict[str, object]],
    line: int,
    field: str,
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"task": "smoke", **r}) + "\n" for r in rows))
    assert cli_main(["contamination", "--scores", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"s.jsonl:{line}: field '{field}'" in err, err


def test_a_scores_file_of_distinct_items_is_counted_as_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = _smoke_ids()[:6]
    path = tmp_path / "s.jsonl"
    path.write_text(
        "".join(json.dumps({"task": "smoke", "item_id": i, "score": 0.0}) + "\n" for i in ids)
    )
    assert cli_main(["contamination", "--scores", str(path)]) == 0
    assert f"| smoke | {len(ids)} |" in capsys.readouterr().out


def test_a_task_the_scores_file_does_not_score_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"task": "smoke", "item_id": "smoke-01", "score": 0.0}) + "\n")
    assert cli_main(["contamination", "--scores", str(path), "--task", "snli"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no score of task snli" in err and "smoke" in err, err
    assert cli_main(["contamination", "--scores", str(path), "--task", "smoke"]) == 0
    assert "| smoke | 1 |" in capsys.readouterr().out
