"""The torn-tail repair cuts only an incomplete last line: a whole JSON entry that lacks
its final newline (a file ended by hand or by another tool) is kept and given one, in
records.jsonl on resume and in provenance.jsonl on ``report``."""

from __future__ import annotations

import json
from pathlib import Path

from nlieval.ground import cut_torn_tail
from nlieval.runs import RECORDS, RunFolder, finalize
from nlieval.runs.folder import PROVENANCE
from tests.runs.test_folder_files import ITEMS, _lines, _run


def test_a_whole_last_record_without_its_newline_is_kept_on_resume(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _run(run, ITEMS[:3])
    lines = (run / RECORDS).read_bytes().splitlines(keepends=True)  # by hand: torn
    # The last record as another scorer would have written it (this one's own would be
    # the same bytes again, were it cut and scored anew), its newline lost.
    last = json.loads(lines[-1])
    last["pred"] = "b" if last["pred"] == "a" else "a"
    text = b"".join(lines[:-1]) + json.dumps(last).encode() + b"\n"
    (run / RECORDS).write_bytes(text.rstrip(b"\n"))
    _run(run)
    after = (run / RECORDS).read_bytes()
    assert after.startswith(text)  # the three records as they were, newline restored
    assert [r["item_id"] for r in _lines(run)] == ITEMS  # none twice, none missing


def test_a_whole_last_provenance_entry_is_kept_by_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _run(run, ITEMS[:3])
    text = (run / PROVENANCE).read_bytes()
    first = [json.loads(x) for x in text.splitlines()]
    (run / PROVENANCE).write_bytes(text.rstrip(b"\n"))
    finalize(RunFolder(run), None, invocation="report")  # what `nlieval report` does
    entries = [json.loads(x) for x in (run / PROVENANCE).read_text().splitlines()]
    assert entries[: len(first)] == first and len(entries) == len(first) + 1
    assert entries[-1]["command"] == "report"


def test_only_an_incomplete_last_line_is_cut(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    cases = [
        (b'{"a": 1}\n{"b": 2', 7, b'{"a": 1}\n'),  # cut mid-object
        (b'{"a": 1}\n{"b": {"c": 1}', 14, b'{"a": 1}\n'),  # an inner object closed only
        (b'{"a": 1}\n{"b": 2}', 0, b'{"a": 1}\n{"b": 2}\n'),  # whole: kept
        (b'{"a": 1}\n[1, 2]', 6, b'{"a": 1}\n'),  # not an entry (an object) of the file
        (b'{"a": 1}', 0, b'{"a": 1}\n'),  # the only line, whole
        (b'{"a": 1}\n{"b": "\xff"}', 10, b'{"a": 1}\n'),  # not UTF-8: not whole
    ]
    for data, cut, left in cases:
        p.write_bytes(data)
        assert (cut_torn_tail(p), p.read_bytes()) == (cut, left), data
