"""A run folder's records as the package reads them, for tests that check their values.

A test reads records through these (the run-folder API, ``nlieval.runs.RunFolder``) and
reads ``records.jsonl`` by hand only where it checks the file's bytes themselves (a torn
tail, bytes left unchanged) or needs a reading independent of the reader under test; a
comment there says which.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar, overload

from nlieval.runs import RECORDS, Row, RunFolder
from nlieval.types import Record

R = TypeVar("R", bound=Row)


@overload
def saved_records(folder: str | Path) -> list[Record]: ...


@overload
def saved_records(folder: str | Path, row: type[R]) -> list[R]: ...


def saved_records(folder: str | Path, row: type[Any] = Record) -> list[Any]:
    """``RunFolder(folder, row).records()``, after checking that records.jsonl holds one
    whole line per record and nothing else: the reader passes over a second copy, a blank
    line or a torn tail, and a test that counts records must still see any of them."""
    path = Path(folder) / RECORDS
    records: list[Any] = RunFolder(folder, row).records()
    raw = path.read_bytes() if path.exists() else b""
    lines = raw.count(b"\n")
    assert lines == len(records), f"{path}: {lines} lines, {len(records)} records"
    assert not raw or raw.endswith(b"\n"), f"{path}: a torn last line"
    return records


def saved_rows(folder: str | Path, row: type[Row] = Record) -> list[dict[str, Any]]:
    """:func:`saved_records` as JSON objects (each row's own ``to_json``), for tests that
    check the saved fields by name."""
    return [json.loads(r.to_json()) for r in saved_records(folder, row)]
