"""Model backends: every engine that scores options, answers chats or classifies pairs.

Where to start: :func:`~nlieval.backends.registry.parse_model` says what a ``--model``
string means (``hf:NAME``, ``server:NAME``, a plain name with or without ``--api-base``),
and :func:`~nlieval.backends.registry.load_scorer` /
:func:`~nlieval.backends.registry.load_generator` make the backend, with the settings of
its engine in :class:`~nlieval.backends.registry.HFOptions` or
:class:`~nlieval.backends.openai.ServerOptions`. Each engine implements the small
protocols of :mod:`.base`; a new engine is one more branch of :mod:`.registry`.
"""

from __future__ import annotations

from .base import (
    ClassifierBackend,
    GenerationBackend,
    LogLikelihoodBackend,
    Progress,
    PromptTooLongError,
    ScoreRequest,
)
from .openai import ServerError, ServerOptions
from .registry import (
    ChatModel,
    HFOptions,
    ModelSpec,
    check_model,
    load_generator,
    load_scorer,
    parse_model,
)

__all__ = [
    "ClassifierBackend",
    "GenerationBackend",
    "LogLikelihoodBackend",
    "Progress",
    "PromptTooLongError",
    "ScoreRequest",
    "ServerError",
    "ServerOptions",
    "ChatModel",
    "HFOptions",
    "ModelSpec",
    "check_model",
    "load_generator",
    "load_scorer",
    "parse_model",
    "HFCausalLM",
    "CompletionsLM",
    "HFSequenceClassifier",
]


def __getattr__(name: str) -> object:
    # transformers is imported only when a model is actually used, so `nlieval stats`
    # and `nlieval report` start quickly.
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
