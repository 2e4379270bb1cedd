"""The folder of a trained classifier: its description (``nlieval_classifier.json``),
its head, and the ``seed{n}`` checkpoints of a train folder. Reads files only: no torch.

A checkpoint folder written by :func:`~nlieval.classifiers.save_classifier`::

    config.json, model.safetensors      the encoder (``save_pretrained``)
    tokenizer files                     the tokenizer (``save_pretrained``)
    classifier_head.safetensors         the head: ``weight`` (labels x hidden), ``bias``
    nlieval_classifier.json             labels in head order, input mode, training config

The folder is a classifier exactly when it holds ``nlieval_classifier.json``
(:func:`is_classifier_folder`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ground import DataError, read_json

META_FILE = "nlieval_classifier.json"
HEAD_FILE = "classifier_head.safetensors"
FORMAT = "nlieval-pair-classifier"
FORMAT_VERSION = 1

#: The heads a classifier folder may hold: a sentence-pair head (an item read as premise
#: and hypothesis) or a multiple-choice head (one score per choice of an item, the
#: choices compared by a softmax: alpha-NLI's hypotheses).
PAIR_HEAD = "pair"
CHOICE_HEAD = "multiple-choice"


def head_for(pairs: bool) -> str:
    """The head that reads items of this shape (:attr:`nlieval.data.Dataset.pairs`): the
    one place that chooses it, for ``nlieval train`` and every check of a folder.

    >>> head_for(True), head_for(False)
    ('pair', 'multiple-choice')
    """
    return PAIR_HEAD if pairs else CHOICE_HEAD


class ClassifierError(ValueError):
    """A classifier folder or label set that cannot be used as asked (the message says why)."""


# --------------------------------------------------------------------------- metadata


@dataclass(frozen=True)
class ClassifierMeta:
    """What a checkpoint needs besides its weights: the head's label order and the input.

    ``pool`` is ``"first"`` (the first token, [CLS]) or ``"last"`` (XLNet's <cls>, a
    decoder's last token); ``separator`` goes before the hypothesis (a decoder reads the
    pair as one text); ``adapter`` describes a LoRA checkpoint (``base_model`` is then
    the model its adapters go on: :mod:`nlieval.backends.lora_classifier`); ``head``
    is :data:`PAIR_HEAD`, or :data:`CHOICE_HEAD` for a transformers multiple-choice model
    saved whole (:mod:`nlieval.backends.multiple_choice`; ``labels`` then name the
    choices in item order); ``extra`` holds the training configuration and scores
    (informative only).

    >>> ClassifierMeta(("entailment", "neutral", "contradiction")).to_dict()["labels"]
    ['entailment', 'neutral', 'contradiction']
    """

    labels: tuple[str, ...]
    hypothesis_only: bool = False
    max_length: int = 128
    pool: str = "first"
    base_model: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    separator: str = ""
    adapter: Mapping[str, Any] | None = None
    head: str = PAIR_HEAD

    def to_dict(self) -> dict[str, Any]:
        return {
            # Written only for another head: a pair folder's description is as it was.
            **({"head": self.head} if self.head != PAIR_HEAD else {}),
            **({"separator": self.separator} if self.separator else {}),
            **({"adapter": dict(self.adapter)} if self.adapter else {}),
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "labels": list(self.labels),
            "hypothesis_only": self.hypothesis_only,
            "max_length": self.max_length,
            "pool": self.pool,
            "base_model": self.base_model,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "<meta>") -> ClassifierMeta:
        if d.get("format") != FORMAT or not d.get("labels"):
            raise ClassifierError(f"{where}: not an nlieval classifier description")
        return cls(
            labels=tuple(str(x) for x in d["labels"]),
            hypothesis_only=bool(d.get("hypothesis_only", False)),
            max_length=int(d.get("max_length", 128)),
            pool=str(d.get("pool", "first")),
            base_model=str(d.get("base_model", "")),
            extra=dict(d.get("extra") or {}),
            separator=str(d.get("separator", "")),
            adapter=dict(d["adapter"]) if isinstance(d.get("adapter"), dict) else None,
            head=_head(d.get("head", PAIR_HEAD), where),
        )


def _head(value: Any, where: str) -> str:
    if value not in (PAIR_HEAD, CHOICE_HEAD):
        raise ClassifierError(
            f"{where}: field 'head' must be {PAIR_HEAD!r} or {CHOICE_HEAD!r}, got {value!r}"
        )
    return str(value)


def is_classifier_folder(path: str | Path) -> bool:
    """True when ``path`` is a checkpoint folder saved by :func:`save_classifier`.

    >>> is_classifier_folder("/nonexistent")
    False
    """
    return (Path(path) / META_FILE).is_file()


def folder_head(path: str | Path) -> str:
    """The head of the classifier folder at ``path``, as its description names it: a
    description that cannot be read is taken for a pair head (its load says what is
    wrong with it).

    >>> folder_head("/nonexistent")
    'pair'
    """
    try:
        return read_meta(path).head
    except ClassifierError:
        return PAIR_HEAD


def classifier_checkpoints(path: str | Path) -> list[Path]:
    """The checkpoint folders at ``path``: itself when it is one, else its ``seed*``
    subfolders that are, in seed order. The output folder of ``nlieval train`` is of the
    second kind: a run folder of test records (``config.json``, ``records.jsonl``, ...)
    holding a ``seed{n}`` checkpoint per seed, so ``nlieval run --model <train folder>``
    scores every seed's checkpoint.

    >>> classifier_checkpoints("/nonexistent")
    []
    """
    root = Path(path)
    if is_classifier_folder(root):
        return [root]
    if not root.is_dir():
        return []
    found = [p for p in root.glob("seed*") if is_classifier_folder(p)]

    def seed_of(p: Path) -> tuple[int, str]:
        digits = p.name[4:]
        return (int(digits) if digits.isdigit() else 1 << 30, p.name)

    return sorted(found, key=seed_of)


def read_meta(folder: str | Path) -> ClassifierMeta:
    """The :class:`ClassifierMeta` of a checkpoint folder."""
    path = Path(folder) / META_FILE
    if not path.is_file():
        raise ClassifierError(f"{folder} is not a classifier folder (no {META_FILE})")
    try:
        raw = read_json(path)
    except DataError as err:
        raise ClassifierError(f"cannot read: {err}") from None
    return ClassifierMeta.from_dict(raw, str(path))


def head_file(folder: str | Path) -> Path:
    """The head file of a classifier folder, refused in one line when it is not there
    (the head would otherwise be drawn at random)."""
    path = Path(folder) / HEAD_FILE
    if not path.is_file():
        raise ClassifierError(f"{path}: missing; the classifier's head is not in its folder")
    return path


def training_seed(model: str, checkpoint: str | None) -> int | None:
    """The training seed ``n`` when ``checkpoint`` is the ``seed{n}`` model of the train
    folder ``model`` (a model string: ``hf:`` before the folder is the same folder), else
    None: such checkpoints are replicates of one classifier, not points of a sweep.

    >>> training_seed("runs/clf", "runs/clf/seed2"), training_seed("hf:runs/clf/", "runs/clf/seed0")
    (2, 0)
    >>> training_seed("org/m", "org/m/step-100") is None, training_seed("m", None) is None
    (True, True)
    """
    if checkpoint is None:
        return None
    path = Path(checkpoint)
    digits = path.name[len("seed") :]
    if not path.name.startswith("seed") or not digits.isdigit():
        return None
    return int(digits) if path.parent == Path(model.removeprefix("hf:")) else None
