"""Reading rows from files: ``.jsonl``, ``.csv`` and ``.tsv``/``.txt`` (each optionally
``.gz``), members of a zip archive, Arrow streams inside a zip, and alpha-NLI's
one-label-per-line companion files. Each row comes as ``(line, row or DataError)``.
"""

from __future__ import annotations

import csv
import gzip
import io
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any, cast

from ..ground import DataError, bounded_lines, open_regular, read_jsonl

RowOrError = tuple[int, dict[str, Any] | DataError]


def format_of(name: str) -> str:
    """``jsonl``, ``csv``, ``tsv``, ``lst``, ``zip`` or ``arrow``, from a file name (.gz ok)."""
    base = name.lower().removesuffix(".gz")
    suffix = base.rsplit(".", 1)[-1] if "." in base else ""
    formats = {
        "jsonl": "jsonl",
        "json": "jsonl",
        "ndjson": "jsonl",
        "csv": "csv",
        "tsv": "tsv",
        "txt": "tsv",
        "lst": "lst",
        "zip": "zip",
        "arrow": "arrow",
    }
    if suffix not in formats:
        raise DataError(name, None, None, "unknown file type (expected .jsonl, .csv or .tsv)")
    return formats[suffix]


@contextmanager
def _open_text(path: Path, member: str | None = None) -> Iterator[IO[str]]:
    """Text of a file, a ``.gz`` file, or a member of a zip archive."""
    where = f"{path}!{member}" if member else str(path)
    try:
        with ExitStack() as stack:
            raw_file = stack.enter_context(open_regular(path))
            if member is not None:
                zf = stack.enter_context(zipfile.ZipFile(raw_file))
                raw = stack.enter_context(zf.open(member))
                yield io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
            elif path.name.lower().endswith(".gz"):
                yield stack.enter_context(
                    gzip.open(raw_file, "rt", encoding="utf-8-sig", newline="")
                )
            else:
                yield io.TextIOWrapper(raw_file, encoding="utf-8-sig", newline="")
    except UnicodeDecodeError as err:
        line = _bad_utf8_line(path, member)
        raise DataError(where, line, None, f"not UTF-8 text ({err.reason})") from None
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile, KeyError) as err:
        raise DataError(where, None, None, f"cannot read: {err}") from None


def _bad_utf8_line(path: Path, member: str | None) -> int | None:
    # Text is decoded in blocks, so the error does not know its line: find it again in
    # the bytes (only on this error path).
    # Line by line and bounded (not readlines: the file may be gigabytes).
    try:
        with ExitStack() as stack:
            raw: IO[bytes] = stack.enter_context(open_regular(path))
            if member is not None:
                zf = stack.enter_context(zipfile.ZipFile(raw))
                raw = stack.enter_context(zf.open(member))
            elif path.name.lower().endswith(".gz"):
                raw = stack.enter_context(gzip.open(raw, "rb"))  # type: ignore[arg-type]
            for n, raw_line in enumerate(bounded_lines(raw, path), 1):
                try:
                    cast(bytes, raw_line).decode("utf-8-sig" if n == 1 else "utf-8")
                except UnicodeDecodeError:
                    return n
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile, KeyError, DataError):
        pass
    return None


def _json_rows(fh: IO[str], where: str) -> Iterator[RowOrError]:
    seen = False
    for row in read_jsonl(where, fh, errors="yield", finite=True):
        seen = True
        if isinstance(row, DataError):
            yield row.line or 0, row
        else:
            yield row.line, row.value
    if not seen:
        raise DataError(where, None, None, "empty file (no rows)")


def _table_rows(fh: IO[str], where: str, fmt: str) -> Iterator[RowOrError]:
    # The TSV releases (SNLI/MNLI .txt, GLUE, SICK) do not quote fields but their text
    # contains quote characters, so quotes must not be interpreted there.
    # Lines bounded in length: a file of gigabytes without a line break is one error,
    # not read whole into memory.
    lines = cast(Iterator[str], bounded_lines(fh, where))
    if fmt == "tsv":
        reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(lines)
    try:
        header = next(reader, None)
        if header is None:
            raise DataError(where, None, None, "empty file (no header)")
        names = [h.strip() for h in header]
        seen = False
        while True:
            start = reader.line_num + 1  # a quoted csv row may span several lines
            values = next(reader, None)
            if values is None:
                break
            if not values or values == [""]:
                continue
            seen = True
            if len(values) != len(names):
                msg = f"expected {len(names)} columns (as the header), found {len(values)}"
                yield start, DataError(where, start, None, msg)
            else:
                yield start, dict(zip(names, values, strict=True))
    except csv.Error as err:
        raise DataError(where, reader.line_num, None, f"malformed {fmt}: {err}") from None
    if not seen:
        raise DataError(where, None, None, "no data rows after the header")


def text_rows(path: Path, fmt: str, member: str | None = None) -> Iterator[RowOrError]:
    """``(line, row or DataError)`` for each row of a jsonl/csv/tsv file (or zip member)."""
    where = f"{path}!{member}" if member else str(path)
    with _open_text(path, member) as fh:
        if fmt == "jsonl":
            yield from _json_rows(fh, where)
        elif fmt in ("csv", "tsv"):
            yield from _table_rows(fh, where, fmt)
        else:
            raise DataError(where, None, None, f"cannot read rows from a {fmt} file")


def arrow_rows(path: Path, members: Sequence[str]) -> Iterator[RowOrError]:
    """Rows of Arrow stream files inside a zip (a ``datasets.save_to_disk`` folder)."""
    import pyarrow as pa  # optional: only this reader needs it

    n = 0
    with open_regular(path) as raw, zipfile.ZipFile(raw) as zf:
        for member in members:
            try:
                table = pa.ipc.open_stream(pa.py_buffer(zf.read(member))).read_all()
            except (KeyError, pa.ArrowInvalid) as err:
                raise DataError(f"{path}!{member}", None, None, f"cannot read: {err}") from None
            for row in table.to_pylist():
                n += 1  # numbered across members, so ids stay unique
                yield n, row


def _label_lines(path: Path) -> list[tuple[int, str]]:
    with _open_text(path) as fh:
        lines = [(n, t.strip()) for n, t in enumerate(fh, 1) if t.strip()]
    if not lines:
        raise DataError(path, None, None, "empty file (no labels)")
    return lines


def with_label_file(rows: Iterable[RowOrError], lst: Path, key: str) -> Iterator[RowOrError]:
    """Join a jsonl file with its one-label-per-line companion (alpha-NLI ``*-labels.lst``)."""
    rows, labels = list(rows), _label_lines(lst)
    if len(rows) != len(labels):
        raise DataError(
            lst, None, None, f"{len(labels)} labels for {len(rows)} rows of the data file"
        )
    for (n, row), (ln, lab) in zip(rows, labels, strict=True):
        if isinstance(row, DataError):
            yield n, row
        elif lab not in ("1", "2"):
            yield n, DataError(lst, ln, "label", f"unknown label {lab!r} (expected 1 or 2)")
        else:
            yield n, {**row, key: lab}
