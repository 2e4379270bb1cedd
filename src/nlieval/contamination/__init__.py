"""Test-set contamination by a pretraining corpus, and the estimated performance gain (EPG).

METHODS.md section 3. An item's text is its premise, a space, its hypothesis (and, for
alpha-NLI, a space and each choice, space-separated): :func:`item_text`. A token of that
text is *contaminated* when it lies inside at least one of the item's n-grams (default
n = 8) that also occurs in the corpus; the item's score is the share of its tokens that
are contaminated. Items with fewer than n tokens have no n-gram and score 0.

Tokenization (``tokenizer=``):

* ``regex`` (default): the runs of Unicode word characters (Python's ``\\w+``: letters,
  digits, underscore), each lower-cased with :meth:`str.lower`; punctuation is dropped;
* ``whitespace``: the runs of non-whitespace (``\\S+``), each lower-cased; punctuation
  stays attached;
* ``hf:<model-or-folder>``: the token ids of a transformers tokenizer, without special
  tokens, with the tokenizer's own normalization (loaded on first use). Ids depend on
  context (a word opening the item text has no leading space), so an n-gram straddling
  such a difference does not match.

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
so one big file is still read in parallel.

Exactness: every token of a test n-gram gets a small integer id (other corpus tokens and
line breaks get 0); a corpus window counts only if the exact tuple of its n ids is a test
n-gram. A vectorized 64-bit hash of the windows, checked against a bitmap of the test
n-grams' hashes, only preselects the windows looked up, so a hash collision costs time,
never a wrong answer.

>>> from nlieval.types import Item
>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "c.txt").write_text("intro: a b c d e f g h, outro\\n")
>>> item = Item("1", "A b c d e f g h", "i", None)
>>> score_items([item], [folder / "c.txt"], workers=1)[0]["score"]
0.8888888888888888
"""

from __future__ import annotations

import gzip
import json
import logging
import math
import multiprocessing as mp
import os
import re
import time
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import numpy as np

from ..metrics import mean_std
from ..types import Item, Record

log = logging.getLogger(__name__)

DEFAULT_N = 8
#: Contaminated = score above t; the sweep EPG is reported over by default.
DEFAULT_THRESHOLDS: tuple[float, ...] = tuple(i / 10 for i in range(10))
BLOCK_BYTES = 1 << 20
SHARD_BYTES = 64 << 20
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
TOKENIZERS = ("regex", "whitespace", "hf:<model-or-folder>")

Token = Hashable  # a string (regex, whitespace) or a token id (hf)
T = TypeVar("T")

_ITEM_PATTERNS = {"regex": re.compile(r"\w+"), "whitespace": re.compile(r"\S+")}
# The same patterns that also return each line break, which becomes a barrier (id 0).
_CORPUS_PATTERNS = {"regex": re.compile(r"\w+|\n"), "whitespace": re.compile(r"\S+|\n")}
_ASCII_SPACE = (b" ", b"\t", b"\r", b"\x0b", b"\x0c")
_BARRIER = b"\x1c"  # stands for a line break among byte tokens; never inside a token
_NON_ASCII = re.compile(rb"[\x80-\xff]+")
_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplying mod 2**64 loses nothing
_HASH_SEED = 20240607
_MAX_BITMAP_BITS = 28  # 256 MiB at most, for more than 4M test n-grams


def _separator_table(spec: str) -> bytes:
    # ASCII bytes that end a token become spaces; line breaks and non-ASCII bytes stay.
    # (str.isspace, like re's \s, counts \x1c-\x1f as whitespace; bytes.split does not.)
    table = bytearray(range(256))
    for b in range(128):
        c = chr(b)
        sep = c.isspace() if spec == "whitespace" else not (c.isalnum() or c == "_")
        if sep and c != "\n":
            table[b] = ord(" ")
    return bytes(table)


_TABLES = {spec: _separator_table(spec) for spec in _ITEM_PATTERNS}


class Tokenizer:
    """One of :data:`TOKENIZERS`, picklable by its name (hf tokenizers load lazily).

    ``regex`` and ``whitespace`` tokens are the matches of ``\\w+`` / ``\\S+`` in the text,
    each lower-cased (:meth:`str.lower`); their index keys are the tokens' UTF-8 bytes.

    >>> Tokenizer("regex").item_tokens("A dog's bone, 2 x")
    ['a', 'dog', 's', 'bone', '2', 'x']
    """

    def __init__(self, spec: str = "regex") -> None:
        if spec not in _ITEM_PATTERNS and not (spec.startswith("hf:") and len(spec) > 3):
            raise ValueError(f"unknown tokenizer {spec!r}; use one of {', '.join(TOKENIZERS)}")
        self.spec = spec
        self._hf: Any = None

    def __getstate__(self) -> dict[str, str]:
        return {"spec": self.spec}

    def __setstate__(self, state: dict[str, str]) -> None:
        self.spec, self._hf = state["spec"], None

    def __repr__(self) -> str:
        return f"Tokenizer({self.spec!r})"

    def _hf_tokenizer(self) -> Any:
        if self._hf is None:
            from transformers import AutoTokenizer

            self._hf = AutoTokenizer.from_pretrained(self.spec[3:])
        return self._hf

    def item_tokens(self, text: str) -> list[Token]:
        """The tokens of one item's text (strings, or token ids for ``hf:``)."""
        if self.spec in _ITEM_PATTERNS:
            return [t.lower() for t in _ITEM_PATTERNS[self.spec].findall(text)]
        return list(self._hf_tokenizer()(text, add_special_tokens=False)["input_ids"])

    def key(self, token: Token) -> Token:
        """The index key of a token from :meth:`item_tokens`, as :meth:`block_keys` gives it."""
        if isinstance(token, str):
            return token.encode("utf-8", "surrogatepass")  # a lone surrogate: never in a corpus
        return token

    def block_keys(self, block: bytes) -> tuple[list[Any], int]:
        """The keys of the tokens of a block of corpus lines (UTF-8), with a key that is
        never a token's at each line break, and the number of line breaks."""
        breaks = block.count(b"\n")
        if self.spec not in _ITEM_PATTERNS:
            lines = block.decode("utf-8", errors="replace").split("\n")
            keys: list[Any] = []
            for ids in self._hf_tokenizer()(lines, add_special_tokens=False)["input_ids"]:
                keys.extend(ids)
                keys.append(None)
            return keys, len(lines)
        # Fast path, byte-wise: ASCII tokens need only bytes.lower; runs holding other
        # bytes are tokenized as text. Mostly non-ASCII blocks go through text at once.
        text = block.decode("utf-8", errors="replace")
        if (len(block) - len(text)) * 16 > len(block):
            pattern = _CORPUS_PATTERNS[self.spec]
            return [t.lower().encode() for t in pattern.findall(text)], breaks
        data = block.lower().translate(_TABLES[self.spec])
        if not data.isascii():
            data = self._fix_non_ascii(data)
        return data.replace(b"\n", b" " + _BARRIER + b" ").split(), breaks

    def _fix_non_ascii(self, data: bytes) -> bytes:
        # Each run of non-separator bytes that holds non-ASCII bytes is tokenized as text
        # (Unicode \w / whitespace) and written back as its lower-cased tokens.
        parts, pos = [], 0
        for m in _NON_ASCII.finditer(data):
            if m.start() < pos:
                continue  # in the run just rewritten
            start = max(data.rfind(b" ", 0, m.start()), data.rfind(b"\n", 0, m.start())) + 1
            ends = [e for e in (data.find(b" ", m.end()), data.find(b"\n", m.end())) if e >= 0]
            end = min(ends, default=len(data))
            run = data[start:end].decode("utf-8", errors="replace")
            toks = _ITEM_PATTERNS[self.spec].findall(run)
            parts += [data[pos:start], " ".join(t.lower() for t in toks).encode()]
            pos = end
        parts.append(data[pos:])
        return b"".join(parts)

    def corpus_ids(self, block: bytes, vocab: Mapping[Token, int]) -> tuple[np.ndarray, int]:
        """``vocab`` ids of the tokens of a block of corpus lines, 0 for a token not in
        ``vocab`` and for each line break (so no matching window spans one); and the
        number of tokens.

        >>> Tokenizer().corpus_ids(b"A b\\nc", {b"a": 1, b"c": 2})
        (array([1, 0, 0, 2]), 3)
        """
        keys, breaks = self.block_keys(block)
        get = vocab.get
        looked_up = [get(k, 0) for k in keys]  # measured faster than map or fromiter(map)
        ids = np.fromiter(looked_up, dtype=np.int64, count=len(looked_up))
        return ids, len(keys) - breaks


# --------------------------------------------------------------------------- the index


def item_text(item: Item) -> str:
    """The text an item is scored on: premise, hypothesis, then any choices.

    >>> item_text(Item("1", "Obs one.", "Obs two.", None, choices=("H1.", "H2.")))
    'Obs one. Obs two. H1. H2.'
    """
    return " ".join((item.premise, item.hypothesis, *item.choices))


def item_ngrams(tokens: Sequence[T], n: int = DEFAULT_N) -> list[tuple[T, ...]]:
    """The n-gram starting at each token position (none when there are fewer than n).

    >>> item_ngrams(["a", "b", "c"], 2)
    [('a', 'b'), ('b', 'c')]
    """
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


@dataclass(frozen=True)
class NgramIndex:
    """What a corpus scan needs: the test n-grams, as tuples of token ids, numbered.

    ``vocab`` maps every token of a test n-gram to an id from 1; ``ngrams`` maps each
    distinct n-gram to its number. ``mix`` (a random 64-bit value per id) and ``bitmap``
    (marking the top bits of the test n-grams' hashes) make the vectorized candidate
    filter of :func:`_scan_ids`.
    """

    n: int
    tokenizer: Tokenizer
    vocab: dict[Token, int]
    ngrams: dict[tuple[int, ...], int]
    mix: np.ndarray
    bitmap: np.ndarray

    def __len__(self) -> int:
        return len(self.ngrams)


@dataclass(frozen=True)
class ItemGrams:
    """One item's token count and the number of the n-gram at each start position."""

    n_tokens: int
    grams: tuple[int, ...]


def _window_hashes(mixed: np.ndarray, n: int) -> np.ndarray:
    # Polynomial hash of each window of n values (uint64 arithmetic wraps around).
    m = len(mixed) - n + 1
    h = mixed[:m].copy()
    for j in range(1, n):
        h *= _HASH_MUL
        h += mixed[j : j + m]
    return h


def _top_bits(h: np.ndarray, bits: int) -> np.ndarray:
    return (h >> np.uint64(64 - bits)).astype(np.intp)


def _row_hashes(mixed: np.ndarray) -> np.ndarray:
    # The same hash as _window_hashes, of each row of a (rows, n) array.
    h = mixed[:, 0].copy()
    for j in range(1, mixed.shape[1]):
        h *= _HASH_MUL
        h += mixed[:, j]
    return h


def build_index(
    texts: Iterable[str], n: int = DEFAULT_N, tokenizer: str | Tokenizer = "regex"
) -> tuple[NgramIndex, list[ItemGrams]]:
    """Tokenize the items' texts and number their distinct n-grams.

    >>> index, grams = build_index(["a b c", "b c d e"], n=2)
    >>> len(index), grams[1].grams
    (4, (1, 2, 3))
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    tok = tokenizer if isinstance(tokenizer, Tokenizer) else Tokenizer(tokenizer)
    vocab: dict[Token, int] = {}
    ngrams: dict[tuple[int, ...], int] = {}
    items = []
    for text in texts:
        tokens = tok.item_tokens(text)
        if len(tokens) < n:
            ids: list[int] = []
        else:
            ids = [vocab.setdefault(tok.key(t), len(vocab) + 1) for t in tokens]
        grams = tuple(ngrams.setdefault(g, len(ngrams)) for g in item_ngrams(ids, n))
        items.append(ItemGrams(len(tokens), grams))
    mix = np.random.default_rng(_HASH_SEED).integers(
        0, np.iinfo(np.uint64).max, size=len(vocab) + 1, dtype=np.uint64, endpoint=True
    )
    table = np.array(list(ngrams), dtype=np.int64).reshape(len(ngrams), n)
    # ~64 slots per n-gram: about 1 window in 64 passes the filter by chance.
    bits = min(max(int(64 * len(ngrams)).bit_length(), 12), _MAX_BITMAP_BITS)
    bitmap = np.zeros(1 << bits, dtype=np.bool_)
    bitmap[_top_bits(_row_hashes(mix[table]), bits)] = True
    return NgramIndex(n, tok, vocab, ngrams, mix, bitmap), items


def contaminated_tokens(item: ItemGrams, n: int, found: set[int] | frozenset[int]) -> int:
    """How many of the item's tokens lie inside one of its n-grams that was found.

    >>> contaminated_tokens(ItemGrams(6, (0, 1, 2, 3, 4)), 2, {0, 1, 4})
    5
    """
    covered, end = 0, 0
    for start, gram in enumerate(item.grams):
        if gram in found:
            # n-grams come in start order: only the part past the covered end is new.
            covered += start + n - max(start, end)
            end = start + n
    return covered


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
        except ValueError:
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


def _scan_ids(ids: np.ndarray, index: NgramIndex, found: set[int]) -> None:
    """Add to ``found`` the number of every test n-gram among the windows of ``ids``."""
    n = index.n
    if len(ids) < n or not index.ngrams:
        return
    h = _window_hashes(index.mix[ids], n)
    bits = len(index.bitmap).bit_length() - 1
    for i in np.flatnonzero(index.bitmap[_top_bits(h, bits)]).tolist():
        gram = index.ngrams.get(tuple(ids[i : i + n].tolist()))  # the exact check
        if gram is not None:
            found.add(gram)


def scan_shard(shard: Shard, index: NgramIndex, options: ScanOptions = ScanOptions()) -> ScanResult:
    """Scan one shard of one corpus file (serially).

    >>> index, _ = build_index(["a b c"], n=3)
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.txt"
    >>> _ = p.write_text("x a b c\\n")
    >>> scan_shard(Shard(str(p)), index).found
    {0}
    """
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
            _scan_ids(ids, index, result.found)
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

    >>> index, _ = build_index(["a b c"], n=3)
    >>> scan_files([], index).found
    set()
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

    >>> import ray                                          # doctest: +SKIP
    >>> ray.init(num_cpus=2, include_dashboard=False)       # doctest: +SKIP
    >>> scan_ray(["corpus/"], index).found                  # doctest: +SKIP
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


# --------------------------------------------------------------------------- item scores


def score_tasks(
    items_by_task: Mapping[str, Sequence[Item]],
    corpus: Iterable[str | Path],
    n: int = DEFAULT_N,
    tokenizer: str = "regex",
    options: ScanOptions = ScanOptions(),
    workers: int | None = None,
    shard_bytes: int = SHARD_BYTES,
    use_ray: bool = False,
    ray_address: str | None = None,
) -> tuple[list[dict[str, Any]], ScanResult]:
    """Per-item scores of several tasks' items from one pass over the corpus.

    Scans on ``workers`` local cores, or with ``use_ray`` through :func:`scan_ray`
    (``ray_address``: None starts a local Ray). Returns one dict per item (``task``,
    ``item_id``, ``score``, ``n_tokens``, ``n_contaminated_tokens``) and the scan's result.
    """
    keys = [(task, it) for task, items in items_by_task.items() for it in items]
    index, grams = build_index((item_text(it) for _, it in keys), n, tokenizer)
    files = corpus_files(corpus)
    if use_ray:
        result = scan_ray(files, index, ray_address, options, shard_bytes)
    else:
        result = scan_files(files, index, workers, options, shard_bytes)
    rows = []
    for (task, it), g in zip(keys, grams, strict=True):
        hit = contaminated_tokens(g, n, result.found)
        rows.append(
            {
                "task": task,
                "item_id": it.id,
                "score": hit / g.n_tokens if g.n_tokens else 0.0,
                "n_tokens": g.n_tokens,
                "n_contaminated_tokens": hit,
            }
        )
    return rows, result


def score_items(
    items: Sequence[Item],
    corpus_files: Iterable[str | Path],
    n: int = DEFAULT_N,
    tokenizer: str = "regex",
    text_field: str = "text",
    workers: int | None = None,
    task: str = "",
) -> list[dict[str, Any]]:
    """Per-item contamination scores of one list of items (see :func:`score_tasks`).

    >>> score_items([Item("1", "too short", "", None)], [], workers=1)[0]["score"]
    0.0
    """
    options = ScanOptions(text_field=text_field)
    rows, _ = score_tasks({task: items}, corpus_files, n, tokenizer, options, workers)
    return rows


def score_summary(scores: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per task: items, mean score, and the % of items scoring above 0, at least 0.5, and 1.

    >>> score_summary([{"task": "t", "score": 0.0}, {"task": "t", "score": 1.0}])[0]["pct_any"]
    50.0
    """
    by_task: dict[str, list[float]] = {}
    for s in scores:
        by_task.setdefault(s["task"], []).append(float(s["score"]))
    out = []
    for task, vals in by_task.items():
        m = len(vals)
        out.append(
            {
                "task": task,
                "n_items": m,
                "mean_score": sum(vals) / m,
                "pct_any": 100 * sum(v > 0 for v in vals) / m,
                "pct_half": 100 * sum(v >= 0.5 for v in vals) / m,
                "pct_full": 100 * sum(v >= 1 for v in vals) / m,
            }
        )
    return out


# --------------------------------------------------------------------------- EPG


def _metric(records: Sequence[Record], metric: str) -> float:
    from ..metrics import point_metrics

    if not any(r.gold is not None for r in records):
        return math.nan
    return float(point_metrics(records)[metric])


def epg(
    records: Iterable[Record],
    scores: Iterable[Mapping[str, Any]],
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    metric: str = "accuracy",
) -> list[dict[str, Any]]:
    """EPG(t) = metric on all items minus metric on the items scoring at or below t.

    Records join scores by (task, item_id); records of tasks without scores are left out,
    and those of a scored task whose item has no score are counted in ``n_unscored``.
    One row per (model, checkpoint, task, k, t): means over seeds (on the items every seed
    has, as in :func:`nlieval.metrics.summarize`), ``epg_std`` across seeds.

    >>> from nlieval.types import Record
    >>> def rec(i, ok):
    ...     return Record("t", i, "m", 0, 0, ("entailment", "neutral"), (0.0, 0.0), (.5, .5),
    ...                   "entailment" if ok else "neutral", "entailment")
    >>> rows = epg([rec("a", True), rec("b", False)],
    ...            [{"task": "t", "item_id": "a", "score": 1.0},
    ...             {"task": "t", "item_id": "b", "score": 0.0}], [0.5])
    >>> rows[0]["epg"], rows[0]["pct_contaminated"]
    (0.5, 50.0)
    """
    from ..metrics import group_records

    score_of = {(s["task"], str(s["item_id"])): float(s["score"]) for s in scores}
    tasks = {task for task, _ in score_of}
    kept, unscored = [], dict.fromkeys(tasks, 0)
    for r in records:
        if (r.task, r.item_id) in score_of:
            kept.append(r)
        elif r.task in tasks:
            unscored[r.task] += 1
    rows = []
    for (model, ckpt, task, k), by_seed in sorted(
        group_records(kept).items(), key=lambda kv: (kv[0][0], kv[0][1] or "", *kv[0][2:])
    ):
        common = set.intersection(*({r.item_id for r in recs} for recs in by_seed.values()))
        per_seed = {s: [r for r in recs if r.item_id in common] for s, recs in by_seed.items()}
        base: dict[str, Any] = {"model": model, "checkpoint": ckpt, "task": task, "k": k}
        base |= {"metric": metric, "seeds": sorted(per_seed), "n_unscored": unscored[task]}
        scores_here = {i: sc for (tk, i), sc in score_of.items() if tk == task}
        for t in thresholds:
            rows.append(base | _epg_point(per_seed, scores_here, float(t), metric))
    return rows


def _epg_point(
    per_seed: Mapping[int, Sequence[Record]],
    score_of: Mapping[str, float],
    t: float,
    metric: str,
) -> dict[str, Any]:
    # Seeds hold the same items (epg keeps the common ones); count them on the first.
    items = {r.item_id for r in next(iter(per_seed.values())) if r.gold is not None}
    n_cont = sum(score_of[i] > t for i in items)
    alls, cleans = [], []
    for recs in per_seed.values():
        alls.append(_metric(recs, metric))
        cleans.append(_metric([r for r in recs if score_of[r.item_id] <= t], metric))
    gains = [a - c for a, c in zip(alls, cleans, strict=True)]
    epg_mean, epg_std = mean_std(gains, skip_nan=True)
    return {
        "threshold": t,
        "n_items": len(items),
        "n_contaminated": n_cont,
        "n_clean": len(items) - n_cont,
        "pct_contaminated": 100 * n_cont / len(items) if items else math.nan,
        "metric_all": mean_std(alls, skip_nan=True)[0],
        "metric_clean": mean_std(cleans, skip_nan=True)[0],
        "epg": epg_mean,
        "epg_std": epg_std,
    }


def _short(model: str, ckpt: str | None) -> str:
    name = Path(model).name or model
    return name + (f"@{Path(ckpt).name}" if ckpt else "")


def format_epg(rows: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table of :func:`epg` rows.

    >>> print(format_epg([]))
    (no records joined with contamination scores)
    """
    if not rows:
        return "(no records joined with contamination scores)"
    metric = rows[0]["metric"]
    lines = [
        f"| model | task | k | t | % contaminated | n clean | {metric} all | {metric} clean "
        "| EPG |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        std = f" ± {r['epg_std']:.4f}" if len(r["seeds"]) > 1 else ""
        lines.append(
            f"| {_short(r['model'], r['checkpoint'])} | {r['task']} | {r['k']} "
            f"| {r['threshold']:g} | {r['pct_contaminated']:.1f} | {r['n_clean']} "
            f"| {r['metric_all']:.4f} | {r['metric_clean']:.4f} | {r['epg']:+.4f}{std} |"
        )
    return "\n".join(lines)


def plot_epg(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """EPG against the % of items marked contaminated: one panel per task, one line per
    (model, checkpoint, k), points labelled with their threshold. Writes a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    tasks = sorted({r["task"] for r in rows}) or [""]
    fig = Figure(figsize=(4.8 * len(tasks), 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    for ax, task in zip(axes, tasks, strict=True):
        series: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
        for r in rows:
            if r["task"] == task:
                series.setdefault((_short(r["model"], r["checkpoint"]), r["k"]), []).append(r)
        for i, ((name, k), pts) in enumerate(sorted(series.items())):
            pts = sorted(pts, key=lambda r: r["threshold"])
            x = [p["pct_contaminated"] for p in pts]
            ax.plot(x, [p["epg"] for p in pts], marker="o", label=f"{name} k={k}")
            if i == 0:  # thresholds are shared by the series; label them once
                for p in pts:
                    ax.annotate(
                        f"{p['threshold']:g}",
                        (p["pct_contaminated"], p["epg"]),
                        fontsize=6,
                        xytext=(3, 3),
                        textcoords="offset points",
                    )
        ax.axhline(0.0, color="grey", lw=0.8)
        metric = rows[0]["metric"] if rows else "accuracy"
        ax.set(
            title=task,
            xlabel="% of items contaminated (score > t)",
            ylabel=f"EPG ({metric}: all − clean)",
        )
        if series:
            ax.legend(fontsize=7)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120, format="png")
    return out


def read_scores(path: str | Path) -> list[dict[str, Any]]:
    """Per-item scores written by ``nlieval contamination`` (one JSON object a line)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_scores(scores: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write per-item scores, one JSON object a line."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for s in scores:
            f.write(json.dumps(dict(s), ensure_ascii=False) + "\n")
    return out
