"""The n-gram side of the contamination scan: tokenizers, the test items' n-grams, the index.

An item's text is its premise, a space, its hypothesis (and, for alpha-NLI, a space and
each choice, space-separated): :func:`item_text`. :func:`build_index` tokenizes the items'
texts and numbers their distinct n-grams (default n = 8); :func:`contaminated_tokens`
counts an item's tokens that lie inside one of its n-grams found in a corpus.

Tokenization (``tokenizer=``):

* ``regex`` (default): the runs of Unicode word characters (Python's ``\\w+``: letters,
  digits, underscore), each lower-cased with :meth:`str.lower`; punctuation is dropped;
* ``whitespace``: the runs of non-whitespace (``\\S+``), each lower-cased; punctuation
  stays attached;
* ``hf:<model-or-folder>``: the token ids of a transformers tokenizer, without special
  tokens, with the tokenizer's own normalization (loaded on first use). Ids depend on
  context (a word opening the item text has no leading space), so an n-gram straddling
  such a difference does not match.

Exactness: every token of a test n-gram gets a small integer id (other corpus tokens and
line breaks get 0); a corpus window counts only if the exact tuple of its n ids is a test
n-gram. A vectorized 64-bit hash of the windows, checked against a bitmap of the test
n-grams' hashes, only preselects the windows looked up (:func:`scan_ids`), so a hash
collision costs time, never a wrong answer.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..types import Item

DEFAULT_N = 8
TOKENIZERS = ("regex", "whitespace", "hf:<model-or-folder>")

Token = Hashable  # a string (regex, whitespace) or a token id (hf)
T = TypeVar("T")

_ITEM_PATTERNS = {"regex": re.compile(r"\w+"), "whitespace": re.compile(r"\S+")}
# The same patterns that also return each line break, which becomes a barrier (id 0).
_CORPUS_PATTERNS = {"regex": re.compile(r"\w+|\n"), "whitespace": re.compile(r"\S+|\n")}
BARRIER = b"\x1c"  # stands for a line break among byte tokens; never inside a token
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
        return data.replace(b"\n", b" " + BARRIER + b" ").split(), breaks

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
    filter of :func:`scan_ids`.
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


def scan_ids(ids: np.ndarray, index: NgramIndex, found: set[int]) -> None:
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
