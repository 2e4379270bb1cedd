"""The trainable classifier: its heads, inputs, labels and checkpoint folder.

Where to start: ``nlieval train`` (:mod:`nlieval.sci`) builds a :class:`PairClassifier`
(an encoder with a linear head, its input :func:`encode_pairs`), a
:class:`LoraPairClassifier` (a decoder under LoRA adapters, :class:`LoraSettings`) or a
multiple-choice model (:func:`choice_logits`), and writes each seed's checkpoint with
:func:`save_classifier`; :class:`ClassifierMeta` is the folder's description
(:func:`read_meta`, :func:`classifier_checkpoints`, :func:`training_seed`). The engines
(:mod:`nlieval.backends`) load such a folder as a model, and both map a classifier's
outputs onto a task's labels with :func:`label_mapping` and :func:`task_labels_of`.

The modules' names that need torch load it on first use, so importing this one loads
neither torch nor transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .adapters import SEPARATOR, LoraSettings
from .folder import (
    CHOICE_HEAD,
    META_FILE,
    PAIR_HEAD,
    ClassifierError,
    ClassifierMeta,
    classifier_checkpoints,
    folder_head,
    head_file,
    head_for,
    is_classifier_folder,
    read_meta,
    training_seed,
)
from .labels import (
    label_map_dict,
    label_mapping,
    label_name,
    parse_label_map,
    scored_record,
    task_labels_of,
)

if TYPE_CHECKING:
    from .model import (
        LoraPairClassifier,
        PairClassifier,
        PairModel,
        choice_logits,
        choice_pairs,
        encode_choices,
        encode_pairs,
        load_head,
        save_classifier,
    )

__all__ = [
    "CHOICE_HEAD",
    "META_FILE",
    "PAIR_HEAD",
    "SEPARATOR",
    "ClassifierError",
    "ClassifierMeta",
    "LoraPairClassifier",
    "LoraSettings",
    "PairClassifier",
    "PairModel",
    "choice_logits",
    "choice_pairs",
    "classifier_checkpoints",
    "encode_choices",
    "encode_pairs",
    "folder_head",
    "head_file",
    "head_for",
    "is_classifier_folder",
    "label_map_dict",
    "label_mapping",
    "label_name",
    "load_head",
    "parse_label_map",
    "read_meta",
    "save_classifier",
    "scored_record",
    "task_labels_of",
    "training_seed",
]

#: The names of :mod:`.model`, which imports torch.
_TORCH = frozenset(
    {
        "LoraPairClassifier",
        "PairClassifier",
        "PairModel",
        "choice_logits",
        "choice_pairs",
        "encode_choices",
        "encode_pairs",
        "load_head",
        "save_classifier",
    }
)


def __getattr__(name: str) -> object:
    # torch is imported only when a classifier is built or loaded, so the settings of
    # `nlieval train` and the records' labels are read without it.
    if name in _TORCH:
        from . import model

        return getattr(model, name)
    raise AttributeError(name)
