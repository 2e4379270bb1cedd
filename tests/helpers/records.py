"""A run folder's records as the package reads them, for tests that check their values."""

from __future__ import annotations

from pathlib import Path

from nlieval.runs import RECORDS, RunFolder
from nlieval.types import Record


def saved_records(folder: str | Path) -> list[Record]:
    """``RunFolder(folder).records()``, after checking that records.jsonl holds one whole
    line per record and nothing else: the reader passes over a second copy, a blank line
    or a torn tail, and a test that counts records must still see any of them."""
    path = Path(folder) / RECORDS
    records = RunFolder(folder).records()
    raw = path.read_bytes() if path.exists() else b""
    lines = raw.count(b"\n")
    assert lines == len(records), f"{path}: {lines} lines, {len(records)} records"
    assert not raw or raw.endswith(b"\n"), f"{path}: a torn last line"
    return records
