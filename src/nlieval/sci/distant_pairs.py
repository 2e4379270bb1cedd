"""Sentence pairs of documents for :mod:`nlieval.sci.distant`: the linking phrases and
how a sentence is matched to one (:func:`match_linking_phrase`), :class:`Document` and
:class:`Pair`, the explicit pairs (a linking phrase) and the neutral ones (non-adjacent
sentences) of a document, balancing by downsampling, :class:`BuildResult` and
:func:`build_distant`. The notes on phrases, adjacency and seeds are in the docstring of
:mod:`nlieval.sci.distant`.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..data import seeded_rng
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


def nonadjacent_pairs(
    doc: Document, n: int, seed: int = 0, *, plain_starts: bool = False
) -> list[Pair]:
    """``n`` (or as many as there are) random pairs ``i + 2 <= j`` of a document, in
    document order, whose second sentence does not open with a linking phrase (with
    ``plain_starts``, nor the first: the rule of implicit pairs).

    Sampled uniformly without replacement and without listing all O(len^2) pairs.

    >>> doc = Document("d", (("A.", "B.", "C."),))
    >>> [(p.i, p.j) for p in nonadjacent_pairs(doc, 5)]
    [(0, 2)]
    >>> nonadjacent_pairs(Document("d", (("Thus, A.", "B.", "C."),)), 5, plain_starts=True)
    []
    """
    sents = doc.sentences
    plain = [match_linking_phrase(s) is None for s in sents]
    ends = [j for j in range(2, len(sents)) if plain[j]]
    # The sentences a pair may start at (all of them: the starts of end j are 0 .. j-2).
    starts = [i for i in range(len(sents)) if plain[i] or not plain_starts]
    # Pair number k maps to end ends[t] with cum[t] <= k < cum[t+1], start
    # starts[k - cum[t]].
    cum = [0]
    for j in ends:
        cum.append(cum[-1] + bisect_right(starts, j - 2))
    total = cum[-1]
    picks = sorted(seeded_rng(seed, "nonadjacent", doc.id).sample(range(total), min(n, total)))
    out = []
    for k in picks:
        t = bisect_right(cum, k) - 1
        i, j = starts[k - cum[t]], ends[t]
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
