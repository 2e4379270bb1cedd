"""Reading JSONL (one JSON object a line): :func:`read_jsonl`, the one reader of every
``.jsonl`` file nlieval reads, its own folders' files and the user's alike; and whole
JSON: :func:`read_json` (a small JSON file) and :func:`parse_json` (JSON text from
elsewhere: a model's answer, a server's body).

Each row comes located (:class:`JsonLine`: file, line, object); a line that is not a
row is one :class:`~nlieval.ground.errors.DataError` naming the file, the line and,
where one is to blame, the field. The rules: a byte-order mark may open the file (many
files saved on Windows have one), blank lines are skipped, text is UTF-8, a line holds at
most :data:`MAX_LINE_BYTES` (a file without line breaks is not read whole into memory),
and JSON nested deeper than Python's decoder can follow (about 1,000 levels) is a bad
line, not a ``RecursionError``.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Literal, NamedTuple, overload

from .errors import DataError
from .files import open_regular, read_small_text

#: The longest line a JSONL file may hold (a document of a corpus is well below): a longer
#: one, such as a file of gigabytes without a line break, is refused after reading this much.
MAX_LINE_BYTES = 1 << 26

#: The largest whole JSON file :func:`read_json` reads (a configuration, a table).
MAX_JSON_BYTES = 1 << 24


class JsonLine(NamedTuple):
    """One row of a JSONL file: where it is (``path``, 1-based ``line``), the object it
    holds (``value``) and the line as read (``text``, for comparing two copies)."""

    path: str
    line: int
    value: dict[str, Any]
    text: str


def invalid_json(err: json.JSONDecodeError) -> str:
    """The one wording of text that is not JSON (after the file and line), for every
    JSON file read.

    >>> try:
    ...     json.loads('{"a" 1}')
    ... except json.JSONDecodeError as err:
    ...     print(invalid_json(err))
    invalid JSON: Expecting ':' delimiter (column 6)
    """
    return f"invalid JSON: {err.msg} (column {err.colno})"


class _NonFinite(str):
    """A JSON number that is no finite float (``1e400``, ``NaN``, ``Infinity``), kept as
    its text until the row is checked: Python's json reads them as inf and nan, which
    would turn into the text "inf" of a premise or a label."""


def _non_finite(obj: Any) -> tuple[str | None, str] | None:
    """The field (``a.b[2]``) and text of the first non-finite number in ``obj``."""
    stack: list[tuple[str | None, Any]] = [(None, obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _NonFinite):
            return path, str(value)
        if isinstance(value, dict):
            items = [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
            stack.extend(reversed(items))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path or ''}[{i}]", v) for i, v in enumerate(value)]))
    return None


class _Parser:
    """``json.loads``, or (``finite``) one that marks non-finite numbers for the check."""

    def __init__(self, finite: bool) -> None:
        # One decoder for the file: json.loads with hooks would build one a line.
        self.decoder = (
            json.JSONDecoder(parse_constant=self._constant, parse_float=self._number)
            if finite
            else None
        )
        # Set by the hooks: only a row that holds a non-finite number is walked to find
        # its field (walking every row cost a third of reading SNLI's dev set).
        self.flagged = False

    def _constant(self, text: str) -> _NonFinite:
        self.flagged = True
        return _NonFinite(text)

    def _number(self, text: str) -> float | _NonFinite:
        value = float(text)
        if math.isfinite(value):
            return value
        self.flagged = True
        return _NonFinite(text)

    def value(self, text: str, where: str, n: int | None) -> Any:
        """The JSON value of ``text`` (line ``n`` of ``where``, or the whole file when
        ``n`` is None); else the :class:`DataError` naming it."""
        try:
            if self.decoder is None or text.startswith("\ufeff"):
                obj = json.loads(text)  # (which refuses a byte-order mark inside the file)
            else:
                self.flagged = False
                obj = self.decoder.decode(text)
        except json.JSONDecodeError as err:
            line = err.lineno if n is None else n
            what = "empty" if not err.doc.strip() else invalid_json(err)
            raise DataError(where, line, None, what) from None
        except RecursionError:
            # Python's decoder recurses once a level: ~1,000 levels exhaust the stack.
            raise DataError(
                where, n, None, "invalid JSON: nested too deeply (about 1,000 levels at most)"
            ) from None
        except ValueError as err:  # a 5,000-digit integer
            raise DataError(where, n, None, f"invalid JSON: {type(err).__name__}: {err}") from None
        bad = _non_finite(obj) if self.flagged else None
        if bad is not None:
            raise DataError(where, n, bad[0], f"{bad[1]} is not a finite number")
        return obj

    def row(self, text: str, where: str, n: int) -> dict[str, Any]:
        """The object on line ``n``; else the :class:`DataError` of the line."""
        obj = self.value(text, where, n)
        if not isinstance(obj, dict):
            raise DataError(where, n, None, f"expected a JSON object, found {type(obj).__name__}")
        return obj


@overload
def read_jsonl(
    path: str | Path,
    lines: Iterable[bytes] | Iterable[str] | None = None,
    *,
    errors: Literal["raise"] = "raise",
    whole_lines: bool = False,
    finite: bool = False,
    blank: list[int] | None = None,
) -> Iterator[JsonLine]: ...


@overload
def read_jsonl(
    path: str | Path,
    lines: Iterable[bytes] | Iterable[str] | None = None,
    *,
    errors: Literal["yield"],
    whole_lines: bool = False,
    finite: bool = False,
    blank: list[int] | None = None,
) -> Iterator[JsonLine | DataError]: ...


def read_jsonl(
    path: str | Path,
    lines: Iterable[bytes] | Iterable[str] | None = None,
    *,
    errors: Literal["raise", "yield"] = "raise",
    whole_lines: bool = False,
    finite: bool = False,
    blank: list[int] | None = None,
) -> Iterator[JsonLine | DataError]:
    """The rows of the JSONL file ``path`` (a ``.gz`` one decompressed), or of ``lines``
    (bytes or text, already opened: a zip member, a folder's own file) named ``path``.

    A line that is not a JSON object (not UTF-8, invalid JSON, a list) is a
    :class:`DataError` naming ``path`` and the line: raised, or (``errors="yield"``:
    reading goes on) yielded in its place. ``finite`` refuses a non-finite number
    (``NaN``, ``1e400``), naming its field. ``whole_lines`` stops at a last line without
    its line break (a write cut short by a crash: no row yet). Blank lines are skipped;
    ``blank`` collects their numbers.

    >>> rows = [b'\\xef\\xbb\\xbf{"a": 1}\\n', b"\\n", b'{"a": NaN}\\n', b"[2]\\n"]
    >>> rows += [b"\\xff\\n", b'{"a"']
    >>> [r.value for r in read_jsonl("f.jsonl", rows[:2])]  # a byte-order mark is no text
    [{'a': 1}]
    >>> for row in read_jsonl("f.jsonl", rows, errors="yield", finite=True):
    ...     print(row if isinstance(row, DataError) else row.value)
    {'a': 1}
    f.jsonl:3: field 'a': NaN is not a finite number
    f.jsonl:4: expected a JSON object, found list
    f.jsonl:5: not UTF-8 text (invalid start byte)
    f.jsonl:6: invalid JSON: Expecting ':' delimiter (column 5)
    >>> len(list(read_jsonl("f.jsonl", rows[:2] + rows[-1:], whole_lines=True)))
    1
    """
    where = str(path)
    parse = _Parser(finite)
    with ExitStack() as stack:
        source: Iterable[bytes | str] = _open(Path(path), stack) if lines is None else lines
        try:
            for n, raw in enumerate(bounded_lines(source, where), 1):
                if whole_lines and raw[-1:] not in (b"\n", "\n"):
                    return  # a partial tail from a crash: not a row yet
                try:
                    text = _decoded(raw, where, n) if isinstance(raw, bytes) else raw
                    if n == 1:
                        text = text.removeprefix("\ufeff")
                    if not text.strip():
                        if blank is not None:
                            blank.append(n)
                        continue
                    row = JsonLine(where, n, parse.row(text, where, n), text)
                except DataError as err:
                    if errors == "raise":
                        raise
                    yield err
                    continue
                yield row
        except (OSError, EOFError, zlib.error) as err:
            # A .gz cut short (EOFError), not gzip at all, or a failing disk: the file.
            hint = " (a truncated or corrupt .gz file?)" if where.endswith(".gz") else ""
            raise DataError(path, None, None, f"cannot read: {err}{hint}") from None


def _open(path: Path, stack: ExitStack) -> Iterable[bytes]:
    raw = stack.enter_context(open_regular(path))
    if path.name.endswith(".gz"):
        return stack.enter_context(gzip.open(raw, "rb"))
    return raw


def _decoded(raw: bytes, where: str, n: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(where, n, None, f"not UTF-8 text ({err.reason})") from None


def bounded_lines(
    source: Iterable[bytes] | Iterable[str] | Iterable[bytes | str],
    where: str | Path,
    max_line: int | None = None,
) -> Iterator[bytes | str]:
    """The lines of ``source``; one that is an open file is read a line at a time with at
    most ``max_line`` (default :data:`MAX_LINE_BYTES`) bytes or characters a line, and a
    longer line is a :class:`DataError` naming ``where`` and the line (iterating a file
    would read a line of gigabytes whole). Other iterables are passed through.

    >>> import io
    >>> list(bounded_lines(io.BytesIO(b"ab\\ncd"), "f.txt", 3))
    [b'ab\\n', b'cd']
    >>> list(bounded_lines(io.BytesIO(b"abcd\\n"), "f.txt", 3))
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: f.txt:1: a line longer than 3 bytes (is it a file of lines?)
    """
    limit = MAX_LINE_BYTES if max_line is None else max_line
    readline = getattr(source, "readline", None)
    if readline is None:
        yield from source
        return
    n = 0
    while True:
        line = readline(limit + 1)
        if not line:
            return
        n += 1
        if len(line) > limit:
            unit = "characters" if isinstance(line, str) else "bytes"
            raise DataError(
                where, n, None, f"a line longer than {limit:,} {unit} (is it a file of lines?)"
            )
        yield line


def parse_json(
    text: str | bytes, where: str | Path, line: int | None = None, *, finite: bool = False
) -> Any:
    """The JSON value of ``text``, from ``where`` (a file, with ``line`` where it is one
    line of it; or a model's answer, a server: any name); else one :class:`DataError`
    line naming it: not UTF-8, invalid JSON (its line and column), nested deeper than
    Python's decoder can follow, or (``finite``) a non-finite number (``NaN``, ``1e400``).

    >>> parse_json('{"a": [1, 2]}', "answer")
    {'a': [1, 2]}
    >>> parse_json("[" * 100_000, "answer")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: answer: invalid JSON: nested too deeply (about 1,000 ...)
    >>> parse_json('{"x": NaN}', "t.json", finite=True)
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: t.json: field 'x': NaN is not a finite number
    """
    where = str(where)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            at = err.object[: err.start].count(b"\n") + 1 if line is None else line
            raise DataError(where, at, None, f"not UTF-8 text ({err.reason})") from None
    return _Parser(finite).value(text.removeprefix("\ufeff"), where, line)


def read_json(path: str | Path, max_bytes: int = MAX_JSON_BYTES, *, finite: bool = False) -> Any:
    """The JSON value of the file ``path``: a regular file (no FIFO, no device) of at most
    ``max_bytes``, read as :func:`~nlieval.ground.read_small_text` reads and parsed as
    :func:`parse_json` parses; every failure is one :class:`DataError` line naming it.

    >>> p = Path(run_dir) / "t.json"; _ = p.write_text('{"a":\\n 1,}')
    >>> read_json(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: .../t.json:2: invalid JSON: Expecting property name ...
    """
    return parse_json(read_small_text(path, max_bytes), path, finite=finite)
