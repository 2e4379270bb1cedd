"""Model backends: every engine that scores options, answers chats or classifies pairs.

Where to start: :func:`~nlieval.backends.registry.resolve` says what a ``--model`` string
is (``hf:NAME``, ``server:NAME``, a plain name with or without ``--api-base``; a causal
LM, a sequence classifier, a classifier folder, a train folder of seeds, a
multiple-choice model or a served model) and returns the one
:class:`~nlieval.backends.registry.ResolvedModel` every command takes: its checkpoints,
labels, fingerprints, early check, and the backend of each checkpoint, made with the
options of its engine whole
(:class:`~nlieval.backends.options.HFOptions` or
:class:`~nlieval.backends.openai.ServerOptions`). Each engine implements the small
protocols of :mod:`.base`; a new engine is one more branch of :mod:`.registry`.

The other packages reach the engines only through this module: its names that need torch
or transformers load them on first use, so importing it loads neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .adapters import SEPARATOR, LoraSettings
from .base import (
    ChoiceBackend,
    ClassifierBackend,
    Generation,
    GenerationBackend,
    LogLikelihoodBackend,
    Progress,
    PromptTooLongError,
    ScoreRequest,
    Stop,
    generation_of,
    stream_answers,
)
from .finite import NonFiniteScore, check_scores
from .hf_classifier import label_map_dict, parse_label_map
from .openai import ServerError, ServerOptions
from .options import HFOptions
from .placement import pick_device
from .registry import (
    CLASSIFIERS,
    NO_PROMPT,
    ChatModel,
    Checkpoint,
    Kind,
    ModelSpec,
    NamesAModel,
    ResolvedModel,
    model_label,
    parse_model,
    resolve,
    stand_in,
    training_seed,
)
from .vllm_engine import NOT_INSTALLED, VLLMError, VLLMOptions
from .weights import DEFAULT_MODEL, ModelError, parameter_count, resolve_model, warn_new_weights

if TYPE_CHECKING:
    from .classifier import (
        CHOICE_HEAD,
        PAIR_HEAD,
        ClassifierError,
        ClassifierMeta,
        EncoderClassifier,
        PairClassifier,
        classifier_checkpoints,
        classify_records,
        encode_pairs,
        head_for,
        label_mapping,
        load_head,
        read_meta,
        save_classifier,
    )
    from .completions import CompletionsLM
    from .generator import LocalChat, json_object_closed
    from .hf import HFCausalLM
    from .hf_classifier import HFSequenceClassifier
    from .lora_classifier import build_lora
    from .multiple_choice import (
        HFMultipleChoice,
        backend_from_model,
        choice_logits,
        choose_records,
        item_records,
        load_checkpoint,
    )

__all__ = [
    "CHOICE_HEAD",
    "CLASSIFIERS",
    "DEFAULT_MODEL",
    "NO_PROMPT",
    "PAIR_HEAD",
    "SEPARATOR",
    "ChatModel",
    "ChoiceBackend",
    "Checkpoint",
    "ClassifierBackend",
    "ClassifierError",
    "ClassifierMeta",
    "CompletionsLM",
    "EncoderClassifier",
    "Generation",
    "GenerationBackend",
    "HFCausalLM",
    "HFMultipleChoice",
    "HFOptions",
    "HFSequenceClassifier",
    "Kind",
    "LocalChat",
    "LogLikelihoodBackend",
    "LoraSettings",
    "ModelError",
    "ModelSpec",
    "NOT_INSTALLED",
    "NamesAModel",
    "NonFiniteScore",
    "PairClassifier",
    "Progress",
    "PromptTooLongError",
    "ResolvedModel",
    "ScoreRequest",
    "ServerError",
    "ServerOptions",
    "Stop",
    "VLLMError",
    "VLLMOptions",
    "backend_from_model",
    "build_lora",
    "choice_logits",
    "choose_records",
    "check_scores",
    "classifier_checkpoints",
    "classify_records",
    "encode_pairs",
    "generation_of",
    "head_for",
    "item_records",
    "json_object_closed",
    "label_map_dict",
    "label_mapping",
    "load_checkpoint",
    "load_head",
    "model_label",
    "parse_label_map",
    "parameter_count",
    "parse_model",
    "pick_device",
    "read_meta",
    "resolve",
    "resolve_model",
    "save_classifier",
    "stand_in",
    "stream_answers",
    "training_seed",
    "warn_new_weights",
]

#: The names of the trained pair classifier (torch is imported with them).
_CLASSIFIER = frozenset(
    {
        "CHOICE_HEAD",
        "PAIR_HEAD",
        "ClassifierError",
        "ClassifierMeta",
        "EncoderClassifier",
        "PairClassifier",
        "head_for",
        "classifier_checkpoints",
        "classify_records",
        "encode_pairs",
        "label_mapping",
        "load_head",
        "read_meta",
        "save_classifier",
    }
)

#: The names of the multiple-choice classifier (torch is imported with them).
_MULTIPLE_CHOICE = frozenset(
    {
        "HFMultipleChoice",
        "backend_from_model",
        "choice_logits",
        "choose_records",
        "item_records",
        "load_checkpoint",
    }
)


def __getattr__(name: str) -> object:
    # torch and transformers are imported only when a model is actually used, so
    # `nlieval stats` and `nlieval report` start quickly.
    if name in _CLASSIFIER:
        from . import classifier

        return getattr(classifier, name)
    if name in _MULTIPLE_CHOICE:
        from . import multiple_choice

        return getattr(multiple_choice, name)
    if name == "build_lora":
        from .lora_classifier import build_lora

        return build_lora
    if name in ("LocalChat", "json_object_closed"):
        from . import generator

        return getattr(generator, name)
    if name == "HFCausalLM":
        from .hf import HFCausalLM

        return HFCausalLM
    if name == "CompletionsLM":
        from .completions import CompletionsLM

        return CompletionsLM
    if name == "HFSequenceClassifier":
        from .hf_classifier import HFSequenceClassifier

        return HFSequenceClassifier
    raise AttributeError(name)
