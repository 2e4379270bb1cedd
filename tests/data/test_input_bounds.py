"""Data files without line breaks (an exemplar file of 4 GB): a line is read up to a
bound, then one DataError line names the file and the line (no MemoryError)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlieval import ground
from nlieval.data import DataError, read_items

FIELDS = {"premise": "premise", "hypothesis": "hypothesis", "label": "label", "id": "id"}


def test_a_sparse_4_gb_exemplar_file_without_newline_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "exemplars.jsonl"
    with p.open("wb") as f:
        f.write(b'{"id": "1", "premise": "A.", "hypothesis": "B.", "label": "entailment"}\n')
        f.truncate(4 << 30)  # the rest: zero bytes, no line break, no disk used
    with pytest.raises(DataError, match=r"exemplars\.jsonl:2: a line longer than 67,108,864"):
        read_items(p, fields=FIELDS)


@pytest.mark.parametrize("suffix", ["csv", "tsv"])
def test_a_table_line_over_the_bound_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    sep = "," if suffix == "csv" else "\t"
    p = tmp_path / f"e.{suffix}"
    head = sep.join(["id", "premise", "hypothesis", "label"])
    p.write_text(f"{head}\n1{sep}A.{sep}B.{sep}entailment\n" + "x" * 3000, encoding="utf-8")
    monkeypatch.setattr(ground.jsonl, "MAX_LINE_BYTES", 1000)
    with pytest.raises(DataError, match=rf"e\.{suffix}:3: a line longer than 1,000 characters"):
        read_items(p, fields=FIELDS)
    # Under the bound the same file reads (the third line is then a bad row, not a crash).
    monkeypatch.setattr(ground.jsonl, "MAX_LINE_BYTES", 10_000)
    p.write_text(f"{head}\n1{sep}A.{sep}B.{sep}entailment\n", encoding="utf-8")
    assert [it.id for it in read_items(p, fields=FIELDS).items] == ["1"]


def test_a_bad_byte_in_a_4_gb_file_is_found_without_reading_it_whole(tmp_path: Path) -> None:
    # The line of a byte that is not UTF-8 is found again in the bytes: line by line,
    # stopping there (reading every line of 4 GB first was a MemoryError).
    p = tmp_path / "e.jsonl"
    with p.open("wb") as f:
        f.write(b'{"id": "1", "premise": "A.", "hypothesis": "B.", "label": "entailment"}\n')
        f.write(b'{"id": "2", "premise": "\xff"}\n')
        f.truncate(4 << 30)
    with pytest.raises(DataError, match=r"e\.jsonl:2: not UTF-8 text"):
        read_items(p, fields=FIELDS)
