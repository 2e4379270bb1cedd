"""Backend protocols: the few methods every engine implements.

Batching, caching and tokenization stay inside a backend; callers hand over text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

Progress = Callable[[int], None]
"""Called with the number of requests just finished (drives a progress bar)."""


@dataclass(frozen=True)
class ScoreRequest:
    """Score each continuation after ``context``.

    ``prefix_len`` is the length in characters of the start of ``context`` that is shared
    by every request of a sweep point (the few-shot prefix); a backend may compute it
    once. It never changes the result.
    """

    context: str
    continuations: tuple[str, ...]
    prefix_len: int = 0


@runtime_checkable
class LogLikelihoodBackend(Protocol):
    """A language model that scores continuations (choice-based evaluation)."""

    name: str

    def loglikelihood(
        self, requests: Sequence[ScoreRequest], progress: Progress | None = None
    ) -> list[list[float]]:
        """Per request, the summed log-probability of each continuation given the context."""
        ...


@runtime_checkable
class GenerationBackend(Protocol):
    """A chat model that answers conversations (instruct models, item generation)."""

    name: str

    def generate(
        self,
        conversations: Sequence[Sequence[dict[str, str]]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        """One answer per conversation (a list of ``{"role", "content"}`` messages)."""
        ...


@runtime_checkable
class ClassifierBackend(Protocol):
    """A sentence-pair classifier (fine-tuned encoders)."""

    name: str
    labels: tuple[str, ...]

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        """Per pair, the log-probability of each of ``labels``."""
        ...
