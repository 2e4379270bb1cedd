"""Reading a corpus and scanning it for the test n-grams: shards, blocks, local workers, Ray.

Corpus files: plain text, where each line is a document, or JSON lines (``.jsonl``,
``.ndjson``, ``.json``; or ``fmt="jsonl"``) whose ``text_field`` holds the document; either
may be gzip-compressed (detected from the content), all UTF-8 (bad bytes read as U+FFFD).
n-grams never cross a document boundary; inside a jsonl document line breaks are plain
whitespace. Lines are split at ``\\n`` only (a ``\\r`` before it is whitespace). A jsonl
line that is not JSON, not an object, or lacks a string top-level ``text_field`` is skipped
and counted in ``bad_lines``.

The scan is one streaming pass: each worker reads ~1 MiB blocks, cut at line ends (a plain
text line longer than a block is cut at whitespace, and the last n - 1 tokens of each block
carry over, so no window is lost; only a single token longer than a block would be split).
Memory is the test n-grams plus a block per worker; only a jsonl line must be held whole.
Uncompressed files larger than ``shard_bytes`` are split into byte ranges at line starts,
so one big file is still read in parallel. Each block's windows are matched exactly
against the index by :func:`nlieval.contamination.ngrams.scan_ids`.
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import multiprocessing as mp
import os
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import numpy as np

from ..data import DataError
from .ngrams import NgramIndex, scan_ids

log = logging.getLogger("nlieval.contamination")  # one logger for the whole package, as before

BLOCK_BYTES = 1 << 20
SHARD_BYTES = 64 << 20
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
_ASCII_SPACE = (b" ", b"\t", b"\r", b"\x0b", b"\x0c")


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Shard:
    """A byte range of one corpus file: the lines that start in [start, end)."""

    path: str
    start: int = 0
    end: int | None = None  # None: to the end of the file


@dataclass(frozen=True)
class ScanOptions:
    """How corpus files are read: ``fmt`` auto|text|jsonl, the jsonl text field, block size."""

    fmt: str = "auto"
    text_field: str = "text"
    block_bytes: int = BLOCK_BYTES

    def __post_init__(self) -> None:
        if self.fmt not in ("auto", "text", "jsonl"):
            raise ValueError(f"unknown corpus format {self.fmt!r} (auto, text or jsonl)")


@dataclass
class ScanResult:
    """Test n-grams found (by number) and what was read: uncompressed bytes, documents
    (text lines, jsonl records with a text), tokens, bad jsonl lines, shards, seconds."""

    found: set[int] = field(default_factory=set)
    bytes: int = 0
    docs: int = 0
    tokens: int = 0
    bad_lines: int = 0
    shards: int = 0
    seconds: float = 0.0

    def merge(self, other: ScanResult) -> None:
        self.found |= other.found
        self.bytes += other.bytes
        self.docs += other.docs
        self.tokens += other.tokens
        self.bad_lines += other.bad_lines
        self.shards += other.shards

    @property
    def mb_per_s(self) -> float:
        """Throughput in MB (10**6 bytes, uncompressed) per second of wall time."""
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else math.nan

    def stats(self) -> dict[str, Any]:
        """Everything but ``found``, as JSON-ready numbers."""
        return {
            "n_ngrams_found": len(self.found),
            "bytes": self.bytes,
            "docs": self.docs,
            "tokens": self.tokens,
            "bad_lines": self.bad_lines,
            "shards": self.shards,
            "seconds": round(self.seconds, 3),
            "mb_per_s": round(self.mb_per_s, 2),
        }


def corpus_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, and files under folders named (recursively, sorted, hidden skipped).

    >>> corpus_files(["/no/such/file"])
    Traceback (most recent call last):
    ValueError: corpus path not found: /no/such/file
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(
                f
                for f in sorted(p.rglob("*"))
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
        elif p.is_file():
            out.append(p)
        else:
            raise ValueError(f"corpus path not found: {p}")
    return out


def _is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _is_jsonl(path: str, fmt: str) -> bool:
    if fmt != "auto":
        return fmt == "jsonl"
    name = path.lower().removesuffix(".gz")
    return name.endswith(JSONL_SUFFIXES)


def plan_shards(files: Iterable[str | Path], shard_bytes: int = SHARD_BYTES) -> list[Shard]:
    """One shard per file, or byte ranges of ``shard_bytes`` for a big uncompressed file;
    largest first, so that parallel workers finish together."""
    shards, sizes = [], []
    for f in corpus_files(files):
        size = f.stat().st_size
        if size > shard_bytes > 0 and not _is_gzip(f):
            for start in range(0, size, shard_bytes):
                shards.append(Shard(str(f), start, min(start + shard_bytes, size)))
                sizes.append(min(shard_bytes, size - start))
        else:
            shards.append(Shard(str(f)))
            sizes.append(size)
    order = sorted(range(len(shards)), key=lambda i: -sizes[i])
    return [shards[i] for i in order]


def _open_bytes(path: str, gz: bool) -> IO[bytes]:
    return cast(IO[bytes], gzip.open(path, "rb") if gz else open(path, "rb"))


def _line_start(f: IO[bytes], pos: int) -> int:
    """Offset of the first line that starts at or after ``pos``."""
    if pos == 0:
        return 0
    f.seek(pos - 1)
    while True:
        buf = f.read(1 << 16)
        if not buf:
            return f.tell()
        i = buf.find(b"\n")
        if i >= 0:
            return f.tell() - len(buf) + i + 1


def _cut(buf: bytearray, whole_lines: bool) -> int:
    """Where to end a block: after its last line break; inside one long line (unless
    ``whole_lines``) after its last ASCII space, else before a UTF-8 lead byte."""
    i = buf.rfind(b"\n")
    if i >= 0 or whole_lines:
        return i + 1
    i = max(buf.rfind(c) for c in _ASCII_SPACE)
    if i >= 0:
        return i + 1
    k = len(buf) - 1
    while k > 0 and (buf[k] & 0xC0) == 0x80:
        k -= 1
    return k if k > 0 else len(buf)


def _blocks(f: IO[bytes], stop: int | None, size: int, whole_lines: bool) -> Iterator[bytes]:
    """Blocks of about ``size`` bytes from the current position to ``stop`` (None: the
    end), each ending at a line break (see :func:`_cut` for lines longer than a block)."""
    left = None if stop is None else stop - f.tell()
    carry = bytearray()
    while True:
        want = size if left is None else min(size, left)
        data = f.read(want) if want > 0 else b""
        if left is not None:
            left -= len(data)
        if not data:
            if carry:
                yield bytes(carry)
            return
        carry += data
        cut = _cut(carry, whole_lines)
        if cut:
            yield bytes(carry[:cut])
            del carry[:cut]


def _jsonl_text(block: bytes, text_field: str, result: ScanResult) -> str:
    """The documents of a block of jsonl lines, one per line (inner line breaks become spaces)."""
    docs = []
    for line in block.split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
            result.bad_lines += 1
            continue
        text = obj.get(text_field) if isinstance(obj, dict) else None
        if not isinstance(text, str):
            result.bad_lines += 1
            continue
        docs.append(text.replace("\n", " "))
    result.docs += len(docs)
    return "\n".join(docs) + "\n"  # the final break keeps the next block's first doc apart


# --------------------------------------------------------------------------- scanning


def scan_shard(shard: Shard, index: NgramIndex, options: ScanOptions = ScanOptions()) -> ScanResult:
    """Scan one shard of one corpus file (serially).

    >>> from nlieval.contamination.ngrams import build_index
    >>> index, _ = build_index(["a b c", "c d e"], n=3)  # n-grams 0 and 1
    >>> p = Path(run_dir) / "c.txt"
    >>> _ = p.write_text("x A b c\\nc d\\ne\\n")  # "c d e" spans two documents (lines)
    >>> r = scan_shard(Shard(str(p)), index); r.found, r.docs
    ({0}, 3)
    """
    try:
        return _scan_shard(shard, index, options)
    except (EOFError, OSError, zlib.error) as err:
        # A .gz cut short (EOFError) or corrupt, an unreadable disk: one line naming the
        # file, also when the error comes back from a worker process.
        hint = " (a truncated or corrupt .gz file?)" if _is_gzip_safe(shard.path) else ""
        raise DataError(shard.path, None, None, f"cannot read: {err}{hint}") from None


def _is_gzip_safe(path: str) -> bool:
    try:
        return _is_gzip(path)
    except OSError:
        return False


def _scan_shard(shard: Shard, index: NgramIndex, options: ScanOptions) -> ScanResult:
    result = ScanResult(shards=1)
    jsonl = _is_jsonl(shard.path, options.fmt)
    tail = np.zeros(0, dtype=np.int64)
    keep = index.n - 1  # windows that span two blocks need the last n - 1 ids
    gz = _is_gzip(shard.path)
    ends_line = True
    with _open_bytes(shard.path, gz) as f:
        stop = None
        if not gz and (shard.start or shard.end is not None):
            stop = None if shard.end is None else _line_start(f, shard.end)
            f.seek(_line_start(f, shard.start))
        for block in _blocks(f, stop, options.block_bytes, whole_lines=jsonl):
            result.bytes += len(block)
            if jsonl:
                docs = _jsonl_text(block, options.text_field, result)
                data = docs.encode("utf-8", "surrogatepass")
            else:
                data = block
                result.docs += block.count(b"\n")
            ids, n_tokens = index.tokenizer.corpus_ids(data, index.vocab)
            result.tokens += n_tokens
            ids = np.concatenate((tail, ids)) if len(tail) else ids
            scan_ids(ids, index, result.found)
            tail = ids[len(ids) - keep :] if keep else ids[:0]
            ends_line = block.endswith(b"\n")
    if not jsonl and not ends_line:
        result.docs += 1  # a last line without a line break
    return result


def local_cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_WORKER: dict[str, Any] = {}


def _init_worker(index: NgramIndex, options: ScanOptions) -> None:
    _WORKER["index"], _WORKER["options"] = index, options


def _scan_in_worker(shard: Shard) -> ScanResult:
    return scan_shard(shard, _WORKER["index"], _WORKER["options"])


def scan_files(
    files: Iterable[str | Path],
    index: NgramIndex,
    workers: int | None = None,
    options: ScanOptions = ScanOptions(),
    shard_bytes: int = SHARD_BYTES,
) -> ScanResult:
    """Scan corpus files (and folders) in one pass, in parallel over shards on local cores.

    ``workers`` defaults to the local cores; 1 scans in this process. Workers are forked
    where the platform allows (they share the index and the imported modules).

    >>> from nlieval.contamination.ngrams import build_index
    >>> index, _ = build_index(["a b c"], n=3)
    >>> _ = (Path(run_dir) / "c.txt").write_text("x yz\\n" * 30 + "a b c\\n")  # 156 bytes
    >>> r = scan_files([run_dir], index, workers=2, shard_bytes=32)  # 5 shards, 2 processes
    >>> r.found, r.docs, r.shards  # shards cut mid-line: each line is read once
    ({0}, 31, 5)
    """
    shards = plan_shards(files, shard_bytes)
    workers = max(1, min(workers or local_cores(), len(shards)))
    total = ScanResult()
    if not index.ngrams:
        log.warning("no test item has %d tokens: nothing to look for, corpus not read", index.n)
        return total
    t0 = time.perf_counter()
    if workers == 1:
        for shard in shards:
            total.merge(scan_shard(shard, index, options))
    else:
        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(method)
        with ctx.Pool(workers, _init_worker, (index, options)) as pool:
            for res in pool.imap_unordered(_scan_in_worker, shards):
                total.merge(res)
    total.seconds = time.perf_counter() - t0
    _log_scan(total)
    return total


def _log_scan(result: ScanResult) -> None:
    log.info(
        "scanned %d shards, %.1f MB, %d docs in %.1f s (%.1f MB/s); %d test n-grams found",
        result.shards,
        result.bytes / 1e6,
        result.docs,
        result.seconds,
        result.mb_per_s,
        len(result.found),
    )
    if result.bad_lines:
        log.warning("%d corpus jsonl lines skipped (not JSON or no text field)", result.bad_lines)


def scan_ray(
    files: Iterable[str | Path],
    index: NgramIndex,
    address: str | None = None,
    options: ScanOptions = ScanOptions(),
    shard_bytes: int = SHARD_BYTES,
) -> ScanResult:
    """Scan corpus files as Ray tasks, one per shard, for corpora beyond one machine.

    Connects to ``address`` (e.g. ``"auto"`` for a running cluster) or, with None, starts
    a local Ray, unless ``ray.init`` was already called. Every node must see the corpus
    files at the same paths (a shared file system). Needs ``pip install ray``.

    The result is that of :func:`scan_files` on the same files: after
    ``ray.init(num_cpus=2)``, ``scan_ray(files, index, shard_bytes=60).found`` equals
    ``scan_files(files, index, workers=1).found``, as ``tests/contamination/test_contamination.py``
    checks (no example here: starting a local Ray takes many seconds).
    """
    try:
        import ray
    except ImportError as err:
        raise ImportError("scan_ray needs Ray: pip install ray") from err

    if not index.ngrams:
        log.warning("no test item has %d tokens: nothing to look for, corpus not read", index.n)
        return ScanResult()
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False)
    try:
        total = ScanResult()
        t0 = time.perf_counter()
        task: Any = ray.remote(num_cpus=1)(scan_shard)
        index_ref = ray.put(index)  # sent to the object store once, not once per task
        pending = [task.remote(s, index_ref, options) for s in plan_shards(files, shard_bytes)]
        while pending:
            # Merge as tasks finish, so only the union of found n-grams is ever held here.
            done, pending = ray.wait(pending, num_returns=1)
            total.merge(ray.get(done[0]))
        total.seconds = time.perf_counter() - t0
    finally:
        if started:
            ray.shutdown()
    _log_scan(total)
    return total
