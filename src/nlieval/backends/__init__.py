"""Model backends. Each engine implements the small protocols in :mod:`.base`."""

from __future__ import annotations

from .base import (
    ClassifierBackend,
    GenerationBackend,
    LogLikelihoodBackend,
    Progress,
    PromptTooLongError,
    ScoreRequest,
)

__all__ = [
    "ClassifierBackend",
    "GenerationBackend",
    "LogLikelihoodBackend",
    "Progress",
    "PromptTooLongError",
    "ScoreRequest",
    "HFCausalLM",
    "CompletionsLM",
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
    raise AttributeError(name)
