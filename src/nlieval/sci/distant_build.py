"""The settings of ``nlieval build distant`` / ``build implicit`` and what each does, as
one function of its settings: :func:`build_distant_task` and :func:`build_implicit_task`.

Pseudo-labels of ``build implicit`` come from a scores file (:func:`read_scores`: a jsonl
of probabilities per candidate id, ``{"id": "paper7:3-4", "probs": [c, r, e, n]}`` or
``probs`` as a mapping from class name to probability), or from a classifier trained by
nlieval (:func:`load_classifier`); without either, the candidates are written to be
scored elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import DataError
from ..ground import Table, make_folder, read_jsonl
from ..settings import out_setting, setting, table_format
from ..types import SCI4, Label
from .distant import read_corpus, write_pairs, write_task
from .distant_implicit import (
    classifier_fn,
    implicit_candidates,
    pseudo_label,
    select_pseudo_labelled,
)
from .distant_pairs import LINKING_PHRASES, BuildResult, Pair, build_distant

#: The file of unlabelled candidates that ``build implicit`` writes without scores.
CANDIDATES = "candidates.jsonl"


@dataclass(frozen=True, kw_only=True)
class CorpusSettings:
    """The documents both ``build`` commands read, where they write, and the seed."""

    corpus: tuple[str, ...] = setting(
        help="documents: .jsonl (one a line) or plain text (one per file), .gz ok",
        nargs="+",
        metavar="FILE",
    )
    out: str = out_setting(metavar="FOLDER")
    text_field: str = setting("text", help="jsonl field with the text, sentences or paragraphs")
    id_field: str = setting("id", help="jsonl field with the document id")
    seed: int = setting(0, help="sampling and balancing seed")


@dataclass(frozen=True)
class DistantConfig(CorpusSettings):
    """What ``nlieval build distant`` is asked (see :func:`build_distant_task`)."""

    name: str = setting("distant", help="output file stem")
    balance: bool = setting(True, help="keep all pairs of every class", names=("--no-balance",))


@dataclass(frozen=True)
class ImplicitConfig(CorpusSettings):
    """What ``nlieval build implicit`` is asked (see :func:`build_implicit_task`)."""

    name: str = setting("implicit", help="output file stem")
    scores: str | None = setting(None, help="jsonl: id, probs", metavar="FILE")
    classifier: str | None = setting(
        None,
        help="score the candidates with this classifier: a checkpoint folder or a "
        "`nlieval train` output folder (its lowest seed)",
        metavar="FOLDER",
    )
    threshold: float = setting(0.9, help="minimum confidence")
    nonadjacent_ratio: float = setting(
        1.0, help="non-adjacent (neutral) candidates per adjacent candidate"
    )
    balance: bool = setting(False, help="downsample to the smallest class")


@dataclass(frozen=True, kw_only=True)
class LinkingPhrasesConfig:
    """The table of the linking phrases distant supervision reads a class off
    (:func:`linking_phrase_table`; the MisMatched study's Table 11)."""

    format: str = table_format()


def linking_phrase_table() -> Table:
    """The classes and their linking phrases (:data:`LINKING_PHRASES`, the ones
    ``build distant`` matches), one row per class, each phrase quoted; rendered in a
    :class:`LinkingPhrasesConfig`'s ``format`` by :func:`nlieval.ground.render`.

    >>> from nlieval.ground import render
    >>> print(render(linking_phrase_table(), "md").splitlines()[2])
    | Contrasting | 'However', 'On the other hand', 'In contrast', 'On the contrary' |
    """
    rows = [
        [label.display, ", ".join(repr(p) for p in phrases)]
        for label, phrases in LINKING_PHRASES.items()
    ]
    return Table.of(["Class", "Linking Phrases"], rows)


def build_distant_task(config: DistantConfig) -> tuple[BuildResult, Path]:
    """What ``nlieval build distant`` does: the explicit and neutral pairs of the corpus
    (classes balanced unless ``balance`` is off), written as a task; returns the result
    and the task file.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.txt").write_text("The model is small. Therefore, it runs fast. "
    ...                                   "The sky is blue. Birds sing at dawn.")
    >>> result, path = build_distant_task(DistantConfig(corpus=(str(folder / "a.txt"),),
    ...                                                 out=str(folder / "o"), balance=False))
    >>> len(result.pairs) > 0, path.name
    (True, 'distant.yaml')
    """
    docs = read_corpus(config.corpus, config.text_field, config.id_field)
    result = build_distant(docs, seed=config.seed, balanced=config.balance)
    return result, write_task(result, config.out, config.name, "distant supervision")


def _probs_of(row: Mapping[str, Any], path: Path, line: int) -> list[float]:
    raw = row.get("probs")
    if isinstance(raw, Mapping):
        try:
            by_label = {Label.parse(k): v for k, v in raw.items()}
            raw = [by_label[lab] for lab in SCI4]
        except (KeyError, ValueError):
            raise DataError(
                path, line, "probs", f"expected the classes {[lab.value for lab in SCI4]}"
            ) from None
    if not isinstance(raw, list) or not all(isinstance(x, int | float) for x in raw):
        raise DataError(path, line, "probs", "expected a list of 4 numbers or a mapping")
    return [float(x) for x in raw]


def read_scores(path: str | Path) -> dict[str, list[float]]:
    """Probabilities per candidate id from a scores jsonl.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "s.jsonl"
    >>> _ = path.write_text('{"id": "p:1-2", "probs": [0.1, 0.2, 0.3, 0.4]}\\n')
    >>> read_scores(path)
    {'p:1-2': [0.1, 0.2, 0.3, 0.4]}
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such file")
    scores: dict[str, list[float]] = {}
    for line in read_jsonl(path):
        if "id" not in line.value:
            raise DataError(path, line.line, "id", "missing field")
        scores[str(line.value["id"])] = _probs_of(line.value, path, line.line)
    return scores


def _scored(cands: Sequence[Pair], scores_path: str, threshold: float) -> BuildResult:
    scores = read_scores(scores_path)
    missing = [p.id for p in cands if p.id not in scores]
    if missing:
        raise DataError(
            scores_path,
            None,
            "id",
            f"no scores for {len(missing)} of {len(cands)} candidates (first: {missing[0]}); "
            "were they built from the same corpus and --seed?",
        )
    return select_pseudo_labelled(cands, [scores[p.id] for p in cands], threshold)


def load_classifier(folder: str) -> Any | None:
    """The trained classifier in ``folder`` (a checkpoint, or the lowest seed of a train
    output folder), or None when the classifier backend (torch, transformers) cannot be
    imported here. Says which checkpoint scores the candidates (a long step)."""
    try:
        import torch  # noqa: F401  (the classifier's engine needs it)
    except ImportError:
        return None
    from ..backends import resolve
    from ..classifiers import PAIR_HEAD, ClassifierError, classifier_checkpoints, folder_head

    found = classifier_checkpoints(folder)
    if not found:
        raise DataError(folder, None, None, "not a classifier folder saved by nlieval training")
    head = folder_head(found[0])
    if head != PAIR_HEAD:  # a multiple-choice head reads no candidate pair
        raise ClassifierError(f"{found[0]} holds a {head} head, not a sentence-pair classifier")
    print(f"scoring the candidates with {found[0]}")
    return resolve(str(found[0])).scorer()


def build_implicit_task(config: ImplicitConfig) -> dict[str, Any]:
    """What ``nlieval build implicit`` does. The candidates of the corpus are labelled
    from ``scores`` or by ``classifier`` and written as a task: ``result`` and ``task``
    (the task file). Without either, or when the classifier backend cannot be imported,
    they are written to ``candidates`` (``count`` of them) to be scored elsewhere, with
    ``result`` None and ``no_backend`` saying which case it was.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp()); _ = (folder / "a.txt").write_text("One. Two.")
    >>> got = build_implicit_task(ImplicitConfig(corpus=(str(folder / "a.txt"),),
    ...                                          out=str(folder / "o")))
    >>> got["result"], got["candidates"].name, got["no_backend"]
    (None, 'candidates.jsonl', False)
    """
    docs = read_corpus(config.corpus, config.text_field, config.id_field)
    cands = implicit_candidates(docs, config.seed, config.nonadjacent_ratio)
    out = make_folder(config.out)
    result: BuildResult | None = None
    backend = None
    if config.scores is not None:
        result = _scored(cands, config.scores, config.threshold)
    elif config.classifier is not None:
        backend = load_classifier(config.classifier)
        if backend is not None:
            result = pseudo_label(cands, classifier_fn(backend), config.threshold)
    if result is None:
        n = write_pairs(cands, out / CANDIDATES)
        no_backend = config.classifier is not None
        return {
            "result": None,
            "candidates": out / CANDIDATES,
            "count": n,
            "no_backend": no_backend,
        }
    if config.balance:
        result = result.balanced(config.seed)
    task = write_task(result, out, config.name, "implicit relations, pseudo-labelled")
    return {"result": result, "task": task}
