"""Backend protocols: the few methods every engine implements.

Batching, caching and tokenization stay inside a backend; callers hand over text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..types import Item, Progress

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


StopRule = Callable[[str], bool]
"""True once an answer (the text generated so far) is complete."""

#: Stop strings one request may carry: OpenAI's API takes at most 4, so every engine can.
MAX_STOP_STRINGS = 4


@dataclass(frozen=True)
class Stop:
    """Where an answer ends besides EOS and ``max_new_tokens``: before the first of
    ``strings`` (not included, as OpenAI's ``stop``), or at the first token after which
    ``rule`` holds for the answer so far. Every engine gives the same cut: the
    transformers engine checks both while generating, vLLM ends at the strings while
    generating (``SamplingParams(stop=...)``) and applies the rule to the answer's
    tokens after it, a server gets the strings (``"stop"``) and the rule is applied to
    the text it sent (by character: a server sends no tokens). See :func:`cut_answer`.

    >>> Stop(("###",)).strings
    ('###',)
    >>> Stop(("",))
    Traceback (most recent call last):
    ValueError: a stop string must not be empty
    """

    strings: tuple[str, ...] = ()
    rule: StopRule | None = None

    def __post_init__(self) -> None:
        if len(self.strings) > MAX_STOP_STRINGS:
            raise ValueError(
                f"{len(self.strings)} stop strings: at most {MAX_STOP_STRINGS} (OpenAI's limit)"
            )
        if any(not s for s in self.strings):
            raise ValueError("a stop string must not be empty")

    def hit(self, text: str) -> bool:
        """Whether an answer that reads ``text`` so far is over (a string or the rule)."""
        return any(s in text for s in self.strings) or (
            self.rule is not None and bool(self.rule(text))
        )

    def cut_strings(self, text: str) -> str:
        """``text`` up to the first occurrence of any stop string.

        >>> Stop(("b", "cd")).cut_strings("acdb")
        'a'
        """
        ends = [n for n in (text.find(s) for s in self.strings) if n >= 0]
        return text[: min(ends)] if ends else text


def cut_answer(text: str, stop: Stop | None) -> str:
    """An answer that was generated whole, cut as an engine that honours ``stop`` while
    generating cuts it: at the shortest prefix (by character) that ``stop`` ends, then
    before its first stop string.

    >>> cut_answer('{"a": 1} and more', Stop(rule=lambda t: t.endswith("}")))
    '{"a": 1}'
    >>> cut_answer("one. two.", Stop(("two",))), cut_answer("x", None)
    ('one. ', 'x')
    """
    if stop is None:
        return text
    if stop.rule is not None:
        for n in range(1, len(text) + 1):
            if stop.hit(text[:n]):
                return stop.cut_strings(text[:n])
    return stop.cut_strings(text)


def cut_tokens(ids: Sequence[int], decode: Callable[[Sequence[int]], str], stop: Stop) -> str:
    """The answer of tokens ``ids`` cut as a stopping criterion checked after each token
    cuts it: ``decode`` of the tokens up to the first after which ``stop`` holds, then
    before its first stop string.

    >>> cut_tokens([1, 2, 3], lambda ids: "".join("abc"[i - 1] for i in ids), Stop(("c",)))
    'ab'
    """
    for n in range(1, len(ids) + 1):
        text = decode(ids[:n])
        if stop.hit(text):
            return stop.cut_strings(text)
    return stop.cut_strings(decode(ids))


@dataclass(frozen=True)
class Generation:
    """What a :class:`GenerationBackend` declares about how it answers, in its class
    attribute (or instance attribute) ``generation``; callers read it through
    :meth:`Generation.of`, never from the engine's type.

    - ``batch``: the most conversations worth giving one ``generate`` call (the engine
      computes them together, and a caller saves their answers after the call); None
      for any number (the engine schedules them itself, as vLLM; and the protocol's
      default: ``generate`` takes a list).
    - ``streaming``: the backend has ``iter_generate(conversations, max_new_tokens,
      temperature, seed, stop=...)``, which yields ``(index, answer)`` as each answer
      arrives, a request that failed for good giving its exception instead.
    - ``stop``: ``generate`` (and ``iter_generate``) take ``stop=`` (a :class:`Stop`);
      a backend without it gets none, and its caller cuts the answers
      (:func:`cut_answer`).

    >>> Generation.of(object())  # a backend that declares nothing
    Generation(batch=None, streaming=False, stop=False)
    """

    batch: int | None = None
    streaming: bool = False
    stop: bool = False

    @staticmethod
    def of(backend: object) -> Generation:
        """What ``backend`` declares; the defaults when it declares nothing (a stand-in
        of a test or a user's own class)."""
        declared = getattr(backend, "generation", None)
        return declared if isinstance(declared, Generation) else Generation()

    def __post_init__(self) -> None:
        if self.batch is not None and self.batch < 1:
            raise ValueError(f"batch must be at least 1 or None, not {self.batch}")


def stream_answers(
    backend: GenerationBackend,
    conversations: Sequence[Messages],
    max_new_tokens: int = 32,
    temperature: float = 0.0,
    seed: int = 0,
    stop: Stop | None = None,
) -> Iterator[tuple[int, str | Exception]]:
    """``(index, answer)`` as answers arrive, each ended by ``stop``, the backend driven
    as it declares (:meth:`Generation.of`): a streaming one through ``iter_generate``
    (a failed request gives its exception), the others ``batch`` conversations per
    ``generate`` call. Closing the iterator closes a streaming backend's (its queued
    requests are cancelled).

    >>> class Upper:
    ...     name, calls = "upper", []
    ...     generation = Generation(batch=2)  # two conversations per call
    ...     def generate(self, convs, max_new_tokens=32, temperature=0.0, seed=0):
    ...         self.calls.append(len(convs))
    ...         return [c[-1]["content"].upper() for c in convs]
    >>> convs = [[{"role": "user", "content": t}] for t in ("ab. cd", "ef", "gh. ij")]
    >>> list(stream_answers(Upper(), convs, stop=Stop((".",)))), Upper.calls
    ([(0, 'AB'), (1, 'EF'), (2, 'GH')], [2, 1])
    """
    caps = Generation.of(backend)
    kw: dict[str, Any] = {"stop": stop} if stop is not None and caps.stop else {}
    cut = stop if stop is not None and not caps.stop else None
    if caps.streaming:
        stream = backend.iter_generate(  # type: ignore[attr-defined]
            conversations, max_new_tokens, temperature, seed, **kw
        )
        try:
            for i, answer in stream:
                yield i, answer if isinstance(answer, Exception) else cut_answer(answer, cut)
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        return
    size = max(1, caps.batch or len(conversations))
    for start in range(0, len(conversations), size):
        chunk = conversations[start : start + size]
        answers = backend.generate(chunk, max_new_tokens, temperature, seed, **kw)
        if len(answers) != len(chunk):
            raise ValueError(
                f"{backend.name} gave {len(answers)} answers for {len(chunk)} conversations"
            )
        for i, answer in enumerate(answers, start):
            yield i, cut_answer(answer, cut)


@runtime_checkable
class GenerationBackend(Protocol):
    """A chat model that answers conversations (instruct models, item generation).

    It may declare how it is best driven in an attribute ``generation`` (a
    :class:`Generation`: batching, streaming, whether it takes ``stop``); callers read
    that through :meth:`Generation.of`, or drive it through :func:`stream_answers`.
    """

    name: str

    def generate(
        self,
        conversations: Sequence[Sequence[dict[str, str]]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        """One answer per conversation (a list of ``{"role", "content"}`` messages);
        one that declares ``Generation(stop=True)`` also takes ``stop=`` (a
        :class:`Stop`), and ends each answer where it says."""
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
