"""Scientific NLI training data by distant supervision (METHODS.md section 4).

Explicit relations: an adjacent sentence pair whose second sentence opens with a linking
phrase of :data:`LINKING_PHRASES` gets that phrase's class; the phrase (and the comma or
space after it) is removed and the first letter re-capitalised. Neutral pairs are
non-adjacent sentences of the same document. Classes are balanced by downsampling.

Implicit relations: adjacent pairs with no linking phrase, plus a sample of non-adjacent
pairs of the same documents, are pseudo-labelled by a trained classifier (any callable),
kept above a confidence threshold, then filtered on adjacency: a contrasting, reasoning or
entailment label on a non-adjacent pair, or a neutral label on an adjacent pair, is
dropped. The non-adjacent candidates are what makes that filter do something: without
them every candidate is adjacent and the filter only removes neutral labels.

Documents
---------
* ``.jsonl`` (optionally ``.gz``): one document a line. The text field (``text_field``,
  default ``text``) holds a list of sentences (one paragraph), a list of lists of
  sentences (paragraphs), or a string, split into paragraphs at blank lines and into
  sentences by ``pysbd``. The id comes from ``id_field`` (default ``id``) or else is
  ``{file stem}:{line}``.
* any other file (``.txt``, optionally ``.gz``): one document per file (a paper), id = the
  file stem; blank lines separate paragraphs; single line breaks are hard wrapping.

Adjacent means consecutive sentences of one paragraph: explicit and implicit candidates
never cross a paragraph break. Non-adjacent means at least one sentence in between
(``j >= i + 2`` in document order; sentence 1 always comes first), across paragraphs too.
The second sentence of a neutral (or non-adjacent candidate) pair never opens with a
linking phrase, as in the explicit classes after the phrase is removed: otherwise a kept
"However," would mark neutral pairs. The first sentence is left as it is in every class.

Randomness (neutral pairs, non-adjacent candidates, downsampling) uses a
``random.Random`` per document or per class, seeded from a SHA-256 of the seed and the
document id or class, so a document's pairs do not depend on the order of the corpus.

>>> link = match_linking_phrase("However, the effect vanished at scale.")
>>> link.label.value, link.phrase, link.rest
('contrasting', 'However', 'The effect vanished at scale.')
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from ..data import DataError, seeded_rng, write_task_yaml
from ..runs import atomic_write
from ..types import SCI4, Label

#: Linking phrases per class, as in METHODS.md's table (canonical spelling).
LINKING_PHRASES: dict[Label, tuple[str, ...]] = {
    Label.CONTRASTING: ("However", "On the other hand", "In contrast", "On the contrary"),
    Label.REASONING: (
        "Therefore",
        "Thus",
        "Consequently",
        "As a result",
        "As a consequence",
        "From here, we can infer",
    ),
    Label.ENTAILMENT: (
        "Specifically",
        "Precisely",
        "In particular",
        "Particularly",
        "That is",
        "In other words",
    ),
}

#: The classes that distant supervision reads off linking phrases.
EXPLICIT: tuple[Label, ...] = (Label.CONTRASTING, Label.REASONING, Label.ENTAILMENT)

# A phrase followed by a space (no comma) is not a sentence linker before these words
# ("In contrast to prior work, we ...", "As a result of noise, ...", "Thus far, ...").
_NOT_BEFORE: dict[str, tuple[str, ...]] = {
    "In contrast": ("to", "with"),
    "On the contrary": ("to",),
    "As a result": ("of",),
    "As a consequence": ("of",),
    "Thus": ("far",),
}
# "That is" without a comma is almost always a demonstrative and a verb
# ("That is the largest gain."), so it counts only as "That is,".
_COMMA_ONLY = frozenset({"That is"})
# The phrase ends in a verb whose object clause follows: "we can infer that X" -> "X".
_DROP_THAT = frozenset({"From here, we can infer"})


@dataclass(frozen=True)
class Link:
    """A linking phrase found at the start of a sentence, and the sentence without it."""

    label: Label
    phrase: str
    rest: str


def _phrase_regex(phrase: str) -> re.Pattern[str]:
    body, comma = "", False
    for tok in re.findall(r"\w+|,", phrase):
        if tok == ",":
            comma = True  # "From here we can infer" is the same phrase
            continue
        if body:
            body += r"(?:\s*,\s*|\s+)" if comma else r"\s+"
        body += re.escape(tok)
        comma = False
    tail = r"(?P<sep>\s*,\s*)" if phrase in _COMMA_ONLY else r"(?P<sep>\s*,\s*|\s+)"
    if phrase in _DROP_THAT:
        tail += r"(?:that\s+)?"
    return re.compile(r"^\s*" + body + tail + r"(?P<rest>\S.*)$", re.I | re.S)


def _compile() -> list[tuple[str, Label, re.Pattern[str]]]:
    table = [(p, lab, _phrase_regex(p)) for lab, ps in LINKING_PHRASES.items() for p in ps]
    # Longest first, so a longer phrase wins over a shorter one it starts with.
    table.sort(key=lambda row: -len(row[0]))
    return table


_PATTERNS = _compile()


def recapitalise(text: str) -> str:
    """Upper-case the first letter, unless the first word has capitals of its own.

    Words like ``mRNA`` or ``iOS`` keep their spelling.

    >>> recapitalise("the model fails."), recapitalise("mRNA levels rose.")
    ('The model fails.', 'mRNA levels rose.')
    """
    if not text or not text[0].islower():
        return text
    first_word = text.split(maxsplit=1)[0]
    if any(ch.isupper() for ch in first_word[1:]):
        return text
    return text[0].upper() + text[1:]


def match_linking_phrase(sentence: str) -> Link | None:
    """The linking phrase a sentence opens with (case-insensitive), or None.

    The phrase must be followed by a comma or a space and must start the sentence; the
    longest matching phrase wins. See the module notes for the few phrases that need a
    comma or are not linkers before some words.

    >>> match_linking_phrase("Thus the error drops.").rest
    'The error drops.'
    >>> match_linking_phrase("We show, however, that it fails.") is None
    True
    """
    for phrase, label, pattern in _PATTERNS:
        m = pattern.match(sentence)
        if m is None:
            continue
        rest = m.group("rest").strip()
        if "," not in m.group("sep"):
            next_word = rest.split(maxsplit=1)[0].strip(",;:").lower()
            if next_word in _NOT_BEFORE.get(phrase, ()):
                continue
        return Link(label, phrase, recapitalise(rest))
    return None


# --------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Document:
    """A document (paper) as paragraphs of sentences.

    >>> doc = Document("d", (("A.", "B."), ("C.",)))
    >>> doc.sentences, doc.adjacent_starts()
    (('A.', 'B.', 'C.'), [0])
    """

    id: str
    paragraphs: tuple[tuple[str, ...], ...]

    @property
    def sentences(self) -> tuple[str, ...]:
        return tuple(s for para in self.paragraphs for s in para)

    def adjacent_starts(self) -> list[int]:
        """Indices i (in :attr:`sentences`) such that i and i+1 share a paragraph."""
        starts: list[int] = []
        offset = 0
        for para in self.paragraphs:
            starts.extend(range(offset, offset + len(para) - 1))
            offset += len(para)
        return starts


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    try:
        import pysbd
    except ImportError:
        raise ImportError("splitting text into sentences needs pysbd: pip install pysbd") from None
    return pysbd.Segmenter(language="en", clean=False)


#: Characters of a paragraph given to pysbd at a time. pysbd rescans the whole text for
#: every abbreviation it meets, so its time grows with the square of a paragraph's length
#: (a 2,000-sentence paragraph: 48 s); windows of this size keep it linear.
WINDOW = 2000


def split_sentences(text: str) -> list[str]:
    """Sentences of one paragraph, by pysbd (abbreviations, numbers and citations aware).

    A long paragraph goes to pysbd in windows of about :data:`WINDOW` characters: the
    last two sentences of a window (the last may be cut, the one before it was split with
    a cut look-ahead) are left to the next window, which starts where they start.

    >>> split_sentences("We used e.g. BERT in Fig. 2. However, it failed.")
    ['We used e.g. BERT in Fig. 2.', 'However, it failed.']
    """
    text = " ".join(text.split())  # hard-wrapped lines are one paragraph
    if not text:
        return []
    segment = _segmenter().segment
    out: list[str] = []
    pos, window = 0, WINDOW
    while pos < len(text):
        cut = text.rfind(" ", pos, pos + window) if pos + window < len(text) else -1
        if cut <= pos:  # the rest fits in a window (or has no space to cut at)
            out += segment(text[pos:])
            break
        parts = segment(text[pos:cut])
        if "".join(parts) != text[pos:cut]:  # pysbd changed the text: offsets unknown
            return [s.strip() for s in segment(text) if s.strip()]
        if len(parts) < 3:  # a very long sentence: look further
            window *= 2
            continue
        pos += sum(len(p) for p in parts[:-2])
        out += parts[:-2]
        window = WINDOW
    return [s.strip() for s in out if s.strip()]


def split_paragraphs(text: str) -> tuple[tuple[str, ...], ...]:
    """Paragraphs (separated by blank lines) of sentences.

    >>> split_paragraphs("A cat sat. It slept.\\n\\nThus it rested.")
    (('A cat sat.', 'It slept.'), ('Thus it rested.',))
    """
    paras = (split_sentences(p) for p in re.split(r"\n\s*\n", text))
    return tuple(tuple(p) for p in paras if p)


def _open_bytes(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]  # a GzipFile is IO[bytes]
    return path.open("rb")


def _decode(raw: bytes, path: Path, line: int, first: bool) -> str:
    # A byte-order mark opens many files saved on Windows: accepted, as `stats` does.
    try:
        return raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as err:
        line += raw[: err.start].count(b"\n")
        raise DataError(path, line, None, f"not UTF-8 text ({err.reason})") from None


def _unreadable(path: Path, err: Exception) -> DataError:
    # A .gz cut short (EOFError), not gzip at all, or a failing disk: one line, the file.
    hint = " (a truncated or corrupt .gz file?)" if path.suffix == ".gz" else ""
    return DataError(path, None, None, f"cannot read: {err}{hint}")


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a (gzipped) UTF-8 file; bad bytes are a DataError."""
    try:
        with _open_bytes(path) as fh:
            for line_no, raw in enumerate(fh, 1):
                yield line_no, _decode(raw, path, line_no, line_no == 1)
    except (EOFError, OSError, zlib.error) as err:
        raise _unreadable(path, err) from None


def _read_text(path: Path) -> str:
    try:
        with _open_bytes(path) as fh:
            raw = fh.read()
    except (EOFError, OSError, zlib.error) as err:
        raise _unreadable(path, err) from None
    return _decode(raw, path, 1, True)


def _paragraphs_of(value: Any, path: Path, line: int, name: str) -> tuple[tuple[str, ...], ...]:
    if isinstance(value, str):
        return split_paragraphs(value)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return (tuple(s.strip() for s in value if s.strip()),)
    if isinstance(value, list) and all(
        isinstance(p, list) and all(isinstance(s, str) for s in p) for p in value
    ):
        return tuple(tuple(s.strip() for s in p if s.strip()) for p in value)
    raise DataError(
        path, line, name, "expected a text, a list of sentences or a list of paragraphs"
    )


def _read_jsonl(path: Path, text_field: str, id_field: str) -> Iterator[Document]:
    stem = path.name.split(".")[0]
    for line_no, line in _read_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(path, line_no, None, f"invalid JSON: {err.msg}") from None
        if not isinstance(row, dict):
            raise DataError(path, line_no, None, "expected a JSON object")
        if row.get(text_field) is None:
            raise DataError(path, line_no, text_field, "missing field")
        doc_id = str(row[id_field]) if row.get(id_field) is not None else f"{stem}:{line_no}"
        yield Document(doc_id, _paragraphs_of(row[text_field], path, line_no, text_field))


def read_corpus(
    paths: Iterable[str | Path], text_field: str = "text", id_field: str = "id"
) -> Iterator[Document]:
    """Documents of jsonl files (one a line) and plain text files (one per file).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "paper.txt"
    >>> _ = p.write_text("A cat sat. It slept.\\n\\nThus it rested.")
    >>> [d.id for d in read_corpus([p])], next(read_corpus([p])).sentences[2]
    (['paper'], 'Thus it rested.')
    """
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise DataError(path, None, None, "no such file")
        if path.name.endswith((".jsonl", ".jsonl.gz")):
            yield from _read_jsonl(path, text_field, id_field)
        else:
            yield Document(path.name.split(".")[0], split_paragraphs(_read_text(path)))


# --------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class Pair:
    """Sentences ``i`` < ``j`` of a document, with a class (None while unlabelled).

    ``phrase`` is the linking phrase removed from sentence 2 (explicit pairs only);
    ``confidence`` the classifier's probability of ``label`` (pseudo-labelled pairs only).

    >>> Pair("d1", 3, 4, "A.", "B.", Label.REASONING, "Thus").id
    'd1:3-4'
    """

    doc_id: str
    i: int
    j: int
    sentence1: str
    sentence2: str
    label: Label | None = None
    phrase: str | None = None
    confidence: float | None = None

    @property
    def id(self) -> str:
        return f"{self.doc_id}:{self.i}-{self.j}"

    @property
    def adjacent(self) -> bool:
        """Consecutive in the text (non-adjacent pairs have a sentence in between)."""
        return self.j == self.i + 1

    def to_dict(self) -> dict[str, Any]:
        """One output line: the fields the written task YAML maps."""
        return {
            "id": self.id,
            "sentence1": self.sentence1,
            "sentence2": self.sentence2,
            "label": None if self.label is None else self.label.value,
            "doc_id": self.doc_id,
            "position": [self.i, self.j],
            "adjacent": self.adjacent,
            "phrase": self.phrase,
            "confidence": self.confidence,
        }


def explicit_pairs(doc: Document) -> list[Pair]:
    """Adjacent pairs of a document whose second sentence opens with a linking phrase.

    >>> doc = Document("d", (("Models grow.", "However, data do not."),))
    >>> [(p.label.value, p.sentence2) for p in explicit_pairs(doc)]
    [('contrasting', 'Data do not.')]
    """
    sents = doc.sentences
    out = []
    for i in doc.adjacent_starts():
        link = match_linking_phrase(sents[i + 1])
        if link is not None:
            out.append(Pair(doc.id, i, i + 1, sents[i], link.rest, link.label, link.phrase))
    return out


def nonadjacent_pairs(doc: Document, n: int, seed: int = 0) -> list[Pair]:
    """``n`` (or as many as there are) random pairs ``i + 2 <= j`` of a document, in
    document order, whose second sentence does not open with a linking phrase.

    Sampled uniformly without replacement and without listing all O(len^2) pairs.

    >>> doc = Document("d", (("A.", "B.", "C."),))
    >>> [(p.i, p.j) for p in nonadjacent_pairs(doc, 5)]
    [(0, 2)]
    """
    sents = doc.sentences
    ends = [j for j in range(2, len(sents)) if match_linking_phrase(sents[j]) is None]
    # Pair number k maps to end ends[t] with cum[t] <= k < cum[t+1], start k - cum[t].
    cum = [0]
    for j in ends:
        cum.append(cum[-1] + j - 1)
    total = cum[-1]
    picks = sorted(seeded_rng(seed, "nonadjacent", doc.id).sample(range(total), min(n, total)))
    out = []
    for k in picks:
        t = bisect_right(cum, k) - 1
        i, j = k - cum[t], ends[t]
        out.append(Pair(doc.id, i, j, sents[i], sents[j]))
    out.sort(key=lambda p: (p.i, p.j))
    return out


def class_counts(pairs: Iterable[Pair]) -> dict[str, int]:
    """Pairs per class, in SCI4 order (unlabelled pairs are not counted)."""
    counts = Counter(p.label for p in pairs if p.label is not None)
    return {lab.value: counts.get(lab, 0) for lab in SCI4}


def balance(pairs: Sequence[Pair], seed: int = 0) -> list[Pair]:
    """Downsample every class to the size of the smallest class present (seeded),
    keeping the input order. Classes with no pair at all are left out of the minimum.

    >>> ps = [Pair("d", i, i + 1, "a", "b", lab) for i, lab in enumerate(SCI4 * 2)]
    >>> len(balance(ps + ps[:1]))
    8
    """
    by_class: dict[Label, list[int]] = {}
    for idx, p in enumerate(pairs):
        if p.label is not None:
            by_class.setdefault(p.label, []).append(idx)
    if not by_class:
        return []
    m = min(len(v) for v in by_class.values())
    keep: set[int] = set()
    for lab, idxs in by_class.items():
        keep.update(seeded_rng(seed, "balance", lab.value).sample(idxs, m))
    return [p for idx, p in enumerate(pairs) if idx in keep]


@dataclass(frozen=True)
class BuildResult:
    """Pairs built, class counts before and after balancing, and what happened.

    ``stats`` holds counts such as documents, sentences, candidates, and per phrase
    (``phrase:However``) or per reason a pair was dropped (``dropped_...``).
    """

    pairs: tuple[Pair, ...]
    before: Mapping[str, int]
    after: Mapping[str, int]
    stats: Mapping[str, int] = field(default_factory=dict)

    def balanced(self, seed: int = 0) -> BuildResult:
        """The same result with classes downsampled to the smallest one."""
        kept = balance(self.pairs, seed)
        return BuildResult(tuple(kept), self.before, class_counts(kept), self.stats)

    def summary(self) -> str:
        """A small plain-text table for the terminal.

        >>> print(BuildResult((), {"neutral": 2}, {"neutral": 1}).summary())
        class          before   after
        neutral             2       1
        """
        lines = [f"{'class':<12}{'before':>9}{'after':>8}"]
        lines += [f"{k:<12}{v:>9}{self.after.get(k, 0):>8}" for k, v in self.before.items()]
        lines += [f"{k}: {v}" for k, v in self.stats.items()]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"before": dict(self.before), "after": dict(self.after), "stats": dict(self.stats)}


def build_distant(
    docs: Iterable[Document],
    seed: int = 0,
    balanced: bool = True,
    neutral_per_doc: int | None = None,
) -> BuildResult:
    """Explicit pairs and neutral pairs of a corpus, classes balanced by downsampling.

    A document gives ``neutral_per_doc`` neutral pairs, by default one per three explicit
    pairs (rounded up), so that neutral is never the smallest class when documents are
    long enough, and comes from the same documents as the explicit pairs.

    >>> doc = Document("d", (("We train.", "Thus, we win.", "A.", "B.", "C."),))
    >>> r = build_distant([doc], balanced=False)
    >>> [(p.label.value, p.i, p.j) for p in r.pairs]
    [('reasoning', 0, 1), ('neutral', 0, 4)]
    """
    pairs: list[Pair] = []
    stats: Counter[str] = Counter()
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            raise ValueError(f"document id {doc.id!r} occurs twice in the corpus")
        seen.add(doc.id)
        explicit = explicit_pairs(doc)
        n_neutral = math.ceil(len(explicit) / len(EXPLICIT))
        neutral = nonadjacent_pairs(
            doc, n_neutral if neutral_per_doc is None else neutral_per_doc, seed
        )
        pairs += explicit + [
            Pair(p.doc_id, p.i, p.j, p.sentence1, p.sentence2, Label.NEUTRAL) for p in neutral
        ]
        stats["documents"] += 1
        stats["sentences"] += len(doc.sentences)
        stats["adjacent_pairs"] += len(doc.adjacent_starts())
        stats.update(f"phrase:{p.phrase}" for p in explicit)
    result = BuildResult(tuple(pairs), class_counts(pairs), class_counts(pairs), dict(stats))
    return result.balanced(seed) if balanced else result


# --------------------------------------------------------------------------- implicit

#: Probabilities over :data:`SCI4` (in that order) for each (sentence 1, sentence 2).
ClassifyFn = Callable[[Sequence[tuple[str, str]]], Sequence[Sequence[float]]]


def implicit_candidates(
    docs: Iterable[Document], seed: int = 0, nonadjacent_ratio: float = 1.0
) -> list[Pair]:
    """Unlabelled candidates for pseudo-labelling: every adjacent pair with no linking
    phrase, plus per document ``round(nonadjacent_ratio * adjacent)`` non-adjacent pairs.

    The non-adjacent pairs are the neutral candidates; the adjacency filter of
    :func:`select_pseudo_labelled` drops those the classifier calls a relation.

    >>> doc = Document("d", (("A.", "B.", "Thus, C.", "D."),))
    >>> [(p.i, p.j) for p in implicit_candidates([doc])]
    [(0, 1), (2, 3), (0, 3), (1, 3)]
    """
    out: list[Pair] = []
    for doc in docs:
        sents = doc.sentences
        adjacent = [
            Pair(doc.id, i, i + 1, sents[i], sents[i + 1])
            for i in doc.adjacent_starts()
            if match_linking_phrase(sents[i + 1]) is None
        ]
        n_far = math.floor(nonadjacent_ratio * len(adjacent) + 0.5)
        out += adjacent + nonadjacent_pairs(doc, n_far, seed)
    return out


def _check_probs(pair: Pair, probs: Sequence[float]) -> None:
    ok = len(probs) == len(SCI4) and all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in probs)
    if not ok or abs(sum(probs) - 1.0) > 1e-3:
        raise ValueError(
            f"pair {pair.id}: expected {len(SCI4)} probabilities summing to 1 "
            f"({', '.join(lab.value for lab in SCI4)}), got {list(probs)}"
        )


def select_pseudo_labelled(
    pairs: Sequence[Pair], probs: Sequence[Sequence[float]], threshold: float
) -> BuildResult:
    """Label each pair with its most probable class; keep it when that probability is at
    least ``threshold`` and the label agrees with adjacency (a relation on an adjacent
    pair, neutral on a non-adjacent one). Every drop is counted by reason.

    >>> far = Pair("d", 0, 2, "A.", "C.")
    >>> r = select_pseudo_labelled([far], [[0.95, 0.02, 0.02, 0.01]], 0.9)
    >>> len(r.pairs), r.stats["dropped_nonadjacent_relation"]
    (0, 1)
    """
    if len(probs) != len(pairs):
        raise ValueError(f"{len(probs)} probability vectors for {len(pairs)} pairs")
    kept: list[Pair] = []
    stats: Counter[str] = Counter()
    for pair, vec in zip(pairs, probs, strict=True):
        _check_probs(pair, vec)
        best = max(range(len(SCI4)), key=lambda c: vec[c])
        label, conf = SCI4[best], float(vec[best])
        if conf < threshold:
            stats["dropped_below_threshold"] += 1
        elif label is Label.NEUTRAL and pair.adjacent:
            stats["dropped_adjacent_neutral"] += 1
        elif label is not Label.NEUTRAL and not pair.adjacent:
            stats["dropped_nonadjacent_relation"] += 1
        else:
            kept.append(
                Pair(pair.doc_id, pair.i, pair.j, pair.sentence1, pair.sentence2, label, None, conf)
            )
    reasons = ("below_threshold", "adjacent_neutral", "nonadjacent_relation")
    # Always the same keys in the same order, whatever happened first.
    summary = {"candidates": len(pairs)} | {f"dropped_{r}": stats[f"dropped_{r}"] for r in reasons}
    counts = class_counts(kept)
    return BuildResult(tuple(kept), counts, counts, summary)


def pseudo_label(
    pairs: Sequence[Pair], classify_fn: ClassifyFn, threshold: float = 0.9, batch_size: int = 256
) -> BuildResult:
    """:func:`select_pseudo_labelled` with probabilities from ``classify_fn``, called on
    batches of ``(sentence1, sentence2)``.

    >>> fn = lambda batch: [[0.0, 0.0, 0.0, 1.0] for _ in batch]
    >>> r = pseudo_label([Pair("d", 0, 2, "A.", "C."), Pair("d", 0, 1, "A.", "B.")], fn)
    >>> [p.label.value for p in r.pairs], r.stats["dropped_adjacent_neutral"]
    (['neutral'], 1)
    """
    probs: list[Sequence[float]] = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        out = classify_fn([(p.sentence1, p.sentence2) for p in batch])
        if len(out) != len(batch):
            raise ValueError(f"the classifier gave {len(out)} answers for {len(batch)} pairs")
        probs.extend(out)
    return select_pseudo_labelled(pairs, probs, threshold)


def classifier_fn(backend: Any) -> ClassifyFn:
    """Adapt a :class:`~nlieval.backends.base.ClassifierBackend` (log-probabilities over
    its own ``labels``) to a :data:`ClassifyFn` (probabilities in SCI4 order).

    >>> class Fake:
    ...     labels = ("neutral", "entailment", "reasoning", "contrasting")
    ...     def classify(self, pairs): return [[0.0, -99.0, -99.0, -99.0] for _ in pairs]
    >>> [round(x, 3) for x in classifier_fn(Fake())([("a", "b")])[0]]
    [0.0, 0.0, 0.0, 1.0]
    """
    order = [Label.parse(lab) for lab in backend.labels]
    missing = [lab.value for lab in SCI4 if lab not in order]
    if missing:
        raise ValueError(f"the classifier has no class {', '.join(missing)}")
    index = [order.index(lab) for lab in SCI4]

    def fn(batch: Sequence[tuple[str, str]]) -> list[list[float]]:
        out = []
        for logp in backend.classify(batch):
            p = [math.exp(logp[k]) for k in index]
            total = sum(p)
            out.append([x / total for x in p])
        return out

    return fn


# --------------------------------------------------------------------------- output


def write_task(result: BuildResult, out_dir: str | Path, name: str, description: str = "") -> Path:
    """Write ``{name}.jsonl`` (one pair a line), ``{name}.yaml`` (a task file that
    ``nlieval`` loads: ``--tasks out/{name}.yaml``) and ``{name}.counts.json``; return
    the YAML path.

    The pairs are the task's ``train`` split (its ``pool``: what ``nlieval train --task``
    trains on) and its ``test`` split (its ``path``: what ``nlieval run`` scores, each
    item kept out of its own shots). ``nlieval train`` refuses to test on them: give it
    another ``--test-task`` or ``--no-test``.

    >>> import tempfile
    >>> r = build_distant([Document("d", (("A b.", "Thus, c d.", "E.", "F."),))], balanced=False)
    >>> from nlieval.data import load_task
    >>> len(load_task(str(write_task(r, tempfile.mkdtemp(), "demo"))))
    2
    """
    out = Path(out_dir)
    if not result.pairs:
        # A task of no items would load, and fail later far from its cause.
        found = ", ".join(f"{k} {v}" for k, v in result.stats.items()) or "no documents"
        raise ValueError(
            f"no pairs to write ({found}): the corpus has no sentence pair to keep; "
            f"nothing written to {out}"
        )
    out.mkdir(parents=True, exist_ok=True)
    # Each file whole or not at all (write, then rename): two builds into one folder
    # leave one build's files, never a mix of lines.
    atomic_write(out / f"{name}.jsonl", _jsonl(result.pairs))
    spec = {
        "name": name,
        "description": description or f"scientific NLI pairs built by nlieval ({name})",
        "path": f"{name}.jsonl",
        "pool": f"{name}.jsonl",
        "labels": [lab.value for lab in SCI4],
        "fields": {
            "id": "id",
            "premise": "sentence1",
            "hypothesis": "sentence2",
            "label": "label",
            "meta": ["doc_id", "position", "adjacent", "phrase", "confidence"],
        },
    }
    yaml_path = write_task_yaml(out / f"{name}.yaml", spec)
    atomic_write(out / f"{name}.counts.json", json.dumps(result.to_json(), indent=2) + "\n")
    return yaml_path


def _jsonl(pairs: Iterable[Pair]) -> str:
    return "".join(json.dumps(p.to_dict(), ensure_ascii=False) + "\n" for p in pairs)


def write_pairs(pairs: Iterable[Pair], path: str | Path) -> int:
    """Write pairs as jsonl (e.g. unlabelled candidates to score), atomically; return
    how many."""
    pairs = list(pairs)
    atomic_write(Path(path), _jsonl(pairs))
    return len(pairs)
