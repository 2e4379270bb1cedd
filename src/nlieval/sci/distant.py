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

This module reads documents (:func:`read_corpus`, sentences split by :func:`split_sentences`)
and writes what was built (:func:`write_task`, :func:`write_pairs`); the pairs are made
beside it, their public names importable from here too: :mod:`~nlieval.sci.distant_pairs`
(linking phrases, documents, explicit and neutral pairs, :func:`build_distant`) and
:mod:`~nlieval.sci.distant_implicit` (candidates and pseudo-labels).

>>> link = match_linking_phrase("However, the effect vanished at scale.")
>>> link.label.value, link.phrase, link.rest
('contrasting', 'However', 'The effect vanished at scale.')
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from ..data import DataError, write_task_yaml
from ..ground import atomic_write, make_folder, open_regular, read_jsonl
from ..types import SCI4
from .distant_implicit import (
    ClassifyFn,
    classifier_fn,
    implicit_candidates,
    pseudo_label,
    select_pseudo_labelled,
)
from .distant_pairs import (
    EXPLICIT,
    LINKING_PHRASES,
    BuildResult,
    Document,
    Link,
    Pair,
    balance,
    build_distant,
    class_counts,
    explicit_pairs,
    match_linking_phrase,
    nonadjacent_pairs,
    recapitalise,
)

__all__ = [
    "EXPLICIT",
    "LINKING_PHRASES",
    "WINDOW",
    "BuildResult",
    "ClassifyFn",
    "Document",
    "Link",
    "Pair",
    "balance",
    "build_distant",
    "class_counts",
    "classifier_fn",
    "explicit_pairs",
    "implicit_candidates",
    "match_linking_phrase",
    "nonadjacent_pairs",
    "pseudo_label",
    "read_corpus",
    "recapitalise",
    "select_pseudo_labelled",
    "split_paragraphs",
    "split_sentences",
    "write_pairs",
    "write_task",
]

# --------------------------------------------------------------------------- documents


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
    raw = open_regular(path)  # a FIFO or a device is refused, not waited on
    if path.suffix == ".gz":
        return gzip.open(raw, "rb")  # type: ignore[return-value]  # a GzipFile is IO[bytes]
    return raw


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
    for line in read_jsonl(path):
        row, n = line.value, line.line
        if row.get(text_field) is None:
            raise DataError(path, n, text_field, "missing field")
        doc_id = str(row[id_field]) if row.get(id_field) is not None else f"{stem}:{n}"
        yield Document(doc_id, _paragraphs_of(row[text_field], path, n, text_field))


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
    make_folder(out)
    # Each file whole or not at all (write, then rename): two builds into one folder
    # leave one build's files, never a mix of lines.
    atomic_write(out / f"{name}.jsonl", _jsonl(result.pairs), root=out)
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
    counts = json.dumps(result.to_json(), indent=2) + "\n"
    atomic_write(out / f"{name}.counts.json", counts, root=out)
    return yaml_path


def _jsonl(pairs: Iterable[Pair]) -> str:
    return "".join(json.dumps(p.to_dict(), ensure_ascii=False) + "\n" for p in pairs)


def write_pairs(pairs: Iterable[Pair], path: str | Path) -> int:
    """Write pairs as jsonl (e.g. unlabelled candidates to score), atomically; return
    how many."""
    pairs = list(pairs)
    atomic_write(Path(path), _jsonl(pairs), root=Path(path).parent)
    return len(pairs)
