"""Backend protocols: the few methods every engine implements.

Batching, caching and tokenization stay inside a backend; callers hand over text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..types import Item

Progress = Callable[[int], None]
"""Called with the number of requests just finished (drives a progress bar)."""

Messages = Sequence[dict[str, str]]
"""One conversation: chat messages with a ``role`` and a ``content``."""


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


class PromptTooLongError(ValueError):
    """Some prompts (context + continuation, in tokens) do not fit the model's context
    window: ``lengths`` maps their request index to their length. Raised before anything
    of the call is computed, so that an over-long input costs no memory or time.

    >>> str(PromptTooLongError({2: 5000}, 2048))
    "request 2: 5000 tokens, more than the model's context window of 2048"
    """

    def __init__(self, lengths: dict[int, int], limit: int, *, at_least: bool = False) -> None:
        self.lengths = lengths
        self.limit = limit
        #: True when ``lengths`` are lower bounds found without tokenizing (huge texts).
        self.at_least = at_least
        first, n = next(iter(lengths.items()))
        super().__init__(
            f"request {first}: {'at least ' if at_least else ''}{n} tokens, more than the "
            f"model's context window of {limit}"
            + (f" ({len(lengths) - 1} more requests too long)" if len(lengths) > 1 else "")
        )


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


@runtime_checkable
class ChoiceBackend(Protocol):
    """A multiple-choice classifier (a fine-tuned encoder with a multiple-choice head):
    it reads each item with its choices (alpha-NLI's hypotheses)."""

    name: str

    def choose(self, items: Sequence[Item]) -> list[list[float]]:
        """Per item, the log-probability of each of its choices, in the item's order."""
        ...
