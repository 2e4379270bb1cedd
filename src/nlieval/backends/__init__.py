"""Model backends: every engine that scores options, answers chats or classifies pairs.

Where to start: :func:`~nlieval.backends.registry.resolve` says what a ``--model`` string
is (``hf:NAME``, ``server:NAME``, a plain name with or without ``--api-base``; a causal
LM, a sequence classifier, a classifier folder, a train folder of seeds, a
multiple-choice model or a served model) and returns the one
:class:`~nlieval.backends.registry.ResolvedModel` every command takes: its checkpoints,
labels, fingerprints, early check, and the backend of each checkpoint, made with the
options of its engine whole
(:class:`~nlieval.backends.options.HFOptions`,
:class:`~nlieval.backends.openai.ServerOptions` or
:class:`~nlieval.backends.vllm_engine.VLLMOptions`). Each engine implements the small
protocols of :mod:`.base`; what a model kind means (its check, fingerprints, labels,
scorer and chat) is one object of :mod:`.registry`'s table of kinds.

This module is the engines' one door, kept narrow: the model registry, the option
classes, the protocols and the errors, and the few engine functions the families use
(the records of a classifier's scores, and what ``nlieval train`` loads and builds). The
trainable classifier itself (heads, inputs, its folder, labels) is its own room,
:mod:`nlieval.classifiers`. Everything else stays in its module. The names that need
torch or transformers load them on first use, so importing this module loads neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import (
    ChoiceBackend,
    ClassifierBackend,
    Generation,
    GenerationBackend,
    LogLikelihoodBackend,
    PromptTooLongError,
    ScoreRequest,
    Stop,
    stream_answers,
)
from .finite import NonFiniteScore
from .openai import ServerError, ServerOptions
from .options import HFOptions
from .registry import (
    ChatModel,
    EngineOptions,
    NamesAModel,
    ResolvedModel,
    model_setting,
    resolve,
    stand_in,
)
from .weights import ModelError

if TYPE_CHECKING:
    from .classifier import load_encoder
    from .lora_classifier import build_lora
    from .multiple_choice import backend_from_model, item_records

__all__ = [
    # the model registry
    "ChatModel",
    "NamesAModel",
    "ResolvedModel",
    "resolve",
    "stand_in",
    "model_setting",
    # the options of all engines (a config's one field), and of those a family builds;
    # another engine's options class stays in its module (VLLMOptions in vllm_engine)
    "EngineOptions",
    "HFOptions",
    "ServerOptions",
    # the protocols
    "ChoiceBackend",
    "ClassifierBackend",
    "GenerationBackend",
    "LogLikelihoodBackend",
    "ScoreRequest",
    # the errors
    "ModelError",
    "NonFiniteScore",
    "PromptTooLongError",
    "ServerError",
    # generation: what an engine declares, where an answer stops, the one driver
    "Generation",
    "Stop",
    "stream_answers",
    # a trained classifier: its records, and what `nlieval train` loads and builds
    "backend_from_model",
    "build_lora",
    "item_records",
    "load_encoder",
]


def __getattr__(name: str) -> object:
    # torch and transformers are imported only when a model is actually used, so
    # `nlieval stats` and `nlieval report` start quickly.
    if name == "load_encoder":
        from .classifier import load_encoder

        return load_encoder
    if name == "build_lora":
        from .lora_classifier import build_lora

        return build_lora
    if name in ("backend_from_model", "item_records"):
        from . import multiple_choice

        return getattr(multiple_choice, name)
    raise AttributeError(name)
