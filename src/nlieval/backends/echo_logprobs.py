"""The log-probabilities a server's answer gives, checked before they are scored.

:func:`echo_score` sums an option's log-probabilities out of an echo answer (every
prompt token with its text offset), aligning the answer's tokens on the prompt;
:func:`checked_logprob` refuses any number that cannot be a log-probability, and the top
log-probs of every prompt position must be those of a distribution (raw logits are
refused by name, :class:`RawLogits`). :class:`EchoSizer` sizes echo requests by the time
they took. Used by :class:`~nlieval.backends.completions.CompletionsLM`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .openai import clip

#: What to tell the user when a server returns no prompt log-probs.
NO_PROMPT_LOGPROBS = (
    "returned no prompt log-probs (echo=true with logprobs=1): vLLM and SGLang return "
    "them (vLLM: keep --max-logprobs >= 1); llama.cpp's llama-server does not"
)

#: A log-probability above this is impossible (a probability above 1), beyond rounding.
LOGPROB_TOLERANCE = 1e-6

#: The top log-probs of one position may sum to a probability this much above 1 (fp32
#: rounding of a log-softmax is far below it; raw logits are far above it).
MASS_TOLERANCE = 1e-3

#: How to start vLLM so that it returns log-probs (after a server returned logits).
RAW_LOGITS_HINT = (
    "a vLLM started with --logprobs-mode raw_logits (or processed_logits) returns logits, "
    "not log-probs: start it with --logprobs-mode raw_logprobs (the default) or "
    "processed_logprobs"
)


class ImpossibleLogprob(ValueError):
    """A value a server gave as a log-probability that cannot be one: not a number,
    infinite, or above 0 (beyond :data:`LOGPROB_TOLERANCE`)."""


class RawLogits(ValueError):
    """Top log-probs of one position whose probabilities sum above 1: the server returns
    logits (vLLM's ``--logprobs-mode raw_logits``). Not retried: a setting of the server."""


@dataclass(frozen=True)
class EchoScore:
    """One option scored from an echo answer: its summed ``logprob``; the prompt's token
    ids when the server gave them (``prompt_token_ids``, asked by ``return_token_ids``)
    else None; the continuation's token texts; ``tokens``, the prompt's token count."""

    logprob: float
    ids: tuple[int, ...] | None
    continuation: tuple[str, ...]
    tokens: int

    @property
    def key(self) -> tuple[Any, ...]:
        """What must differ between two options of one item: the prompt's token ids when
        known, else the continuation's token texts."""
        return ("ids", self.ids) if self.ids is not None else ("text", self.continuation)


def checked_logprob(value: Any) -> float:
    """``value`` as a log-probability, or :class:`ImpossibleLogprob`: a server's number
    is never scored unchecked (a planted +inf or +2.5 would win any comparison).

    >>> checked_logprob(-0.25)
    -0.25
    >>> checked_logprob(2.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.backends.echo_logprobs.ImpossibleLogprob: returned an impossible log-prob: 2.5 (...)
    """
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ImpossibleLogprob(f"returned a log-prob that is not a number: {value!r}")
    if not math.isfinite(value) or value > LOGPROB_TOLERANCE:
        why = "; " + RAW_LOGITS_HINT if math.isfinite(value) else ""
        raise ImpossibleLogprob(
            f"returned an impossible log-prob: {value!r} (one must be finite and at most 0{why})"
        )
    return float(value)


def check_distribution(top: Any, value: float, where: str) -> None:
    """Raise when ``top`` (one position's top log-probs, token -> value) cannot be part of
    a probability distribution: probabilities summing above 1 (:class:`RawLogits`), or
    the position's own token ``value`` above the largest of them (ValueError).
    Non-numbers and -inf are left to the other checks.

    >>> check_distribution({"a": -0.1, "b": -3.0}, -3.0, "token 2")
    >>> check_distribution({"a": 4.2, "b": -1.0}, -1.0, "token 2")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.backends.echo_logprobs.RawLogits: returned raw logits, not log-probs: ...
    """
    if not isinstance(top, dict):
        return
    finite = [
        float(v)
        for v in top.values()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]
    if not finite:
        return
    mass = sum(math.exp(min(v, 700.0)) for v in finite)
    if mass > 1 + MASS_TOLERANCE:
        raise RawLogits(
            f"returned raw logits, not log-probs: the top values of {where} sum to a "
            f"probability of {mass:.4g}, above 1 ({clip(str(top), 80)}); {RAW_LOGITS_HINT}"
        )
    if value > max(finite) + MASS_TOLERANCE:
        raise ValueError(
            f"returned a log-prob for {where} ({value!r}) above the top log-prob of its "
            f"position ({max(finite)!r}): the answer contradicts itself"
        )


def continuation_logprob(choice: Any, prompt: str, boundary: int, max_tokens: int = 0) -> float:
    """The summed log-probability of ``prompt[boundary:]`` in one echoed choice (the
    ``logprob`` of :func:`echo_score`).

    >>> lp = {"tokens": ["Answer", ":", " A"], "token_logprobs": [None, -1.0, -2.5],
    ...       "text_offset": [0, 6, 7]}
    >>> continuation_logprob({"logprobs": lp}, "Answer: A", 7)
    -2.5
    """
    return echo_score(choice, prompt, boundary, max_tokens).logprob


def echo_score(choice: Any, prompt: str, boundary: int, max_tokens: int = 0) -> EchoScore:
    """The :class:`EchoScore` of ``prompt[boundary:]`` in one echoed choice.

    The answer's tokens are placed on the prompt from its end (the last of them ends
    where the prompt does, after dropping at most ``max_tokens`` generated ones), which
    also absorbs a leading token outside the prompt (a BOS). Raises ValueError saying
    what is wrong (the message follows "the server at URL").

    The prompt positions' top log-probs must be those of a distribution
    (:func:`check_distribution`), which refuses raw logits.

    >>> lp = {"tokens": ["<s>", "Answer", ":", " A"], "token_logprobs": [None, -3.0, -1.0,
    ...       -2.5], "text_offset": [0, 3, 9, 10]}   # a BOS, as vLLM reports it
    >>> echo_score({"logprobs": lp, "prompt_token_ids": [1, 7, 8, 9]}, "Answer: A", 6)
    EchoScore(logprob=-3.5, ids=(1, 7, 8, 9), continuation=(':', ' A'), tokens=4)
    """
    lp = choice.get("logprobs") if isinstance(choice, dict) else None
    tokens = lp.get("tokens") if isinstance(lp, dict) else None
    values = lp.get("token_logprobs") if isinstance(lp, dict) else None
    offsets = lp.get("text_offset") if isinstance(lp, dict) else None
    if (
        not tokens
        or not isinstance(values, list)
        or all(v is None for v in values)
        or not isinstance(tokens, list)
    ):
        raise ValueError(NO_PROMPT_LOGPROBS)
    if not isinstance(offsets, list) or not len(tokens) == len(values) == len(offsets):
        n_off = len(offsets) if isinstance(offsets, list) else "no"
        raise ValueError(
            f"returned misaligned prompt log-probs: {len(tokens)} tokens, {len(values)} "
            f"token_logprobs, {n_off} text_offset"
        )
    if not all(isinstance(t, str) for t in tokens) or not all(
        isinstance(o, int) and not isinstance(o, bool) for o in offsets
    ):
        raise ValueError("returned prompt log-probs with tokens that are not text or offsets "
                         "that are not integers")  # fmt: skip
    if offsets[0] < 0 or any(b < a for a, b in zip(offsets, offsets[1:], strict=False)):
        raise ValueError(f"returned text offsets that decrease: {clip(str(offsets), 120)}")
    first_error = ""
    tries = list(range(min(max_tokens, len(tokens) - 1), -1, -1))
    if choice.get("text") == prompt:  # nothing generated after all
        tries = [0]
    for generated in tries:
        n = len(tokens) - generated
        try:
            start = _align(tokens[:n], offsets[:n], prompt, boundary)
        except ValueError as err:
            first_error = first_error or str(err)
            continue
        total = 0.0
        for i in range(start, n):
            value = values[i]
            if value is None:
                raise ValueError(
                    f"gave no log-prob to continuation token {tokens[i]!r} (token {i} of "
                    f"the prompt; the first token of a prompt has none)"
                )
            total += checked_logprob(value)
        tops = lp.get("top_logprobs") if isinstance(lp, dict) else None
        if isinstance(tops, list):
            for i in range(1, min(n, len(tops))):
                value = values[i]
                if isinstance(value, int | float) and not isinstance(value, bool):
                    check_distribution(tops[i], float(value), f"token {i} {tokens[i]!r}")
        ids = choice.get("prompt_token_ids")
        known = isinstance(ids, list) and bool(ids) and all(type(t) is int for t in ids)
        return EchoScore(total, tuple(ids) if known else None, tuple(tokens[start:n]), n)
    raise ValueError(first_error)


def _recent() -> deque[float]:
    return deque(maxlen=8)


@dataclass
class EchoSizer:
    """How many prompts the next echo request holds, so that one request takes about
    ``share`` of the ``timeout``: from the seconds per prompt token of requests that
    completed (the largest of the last few, since requests in flight slow each other
    down) and the prompt tokens per character seen so far. Before any request has
    completed, requests hold one prompt; never more than ``most`` (``--batch-size``).
    A request that timed out halves the most prompts a request may hold from then on.

    >>> sizer = EchoSizer(most=16, timeout=60.0)
    >>> sizer.size([100] * 20)  # nothing measured yet: start small
    1
    >>> sizer.done(seconds=3.0, tokens=50, chars=200)  # 0.06 s a token, 4 chars a token
    >>> sizer.size([100] * 20)  # 15 s / (25 tokens * 0.06 s) = 10 prompts
    10
    >>> sizer.timed_out(prompts=10, chars=1000)  # so at least 60 s / 250 tokens
    >>> sizer.size([100] * 20), sizer.most
    (2, 5)
    """

    most: int
    timeout: float
    share: float = 0.25
    rates: deque[float] = field(default_factory=_recent)
    tokens_per_char: float = 0.25

    def size(self, chars: Sequence[int]) -> int:
        """Prompts for the next request, from the characters of the prompts waiting."""
        if not self.rates:
            return 1
        rate = max(self.rates)
        budget = self.share * self.timeout
        n, total = 0, 0.0
        for c in chars[: self.most]:
            total += c * self.tokens_per_char
            if n and total * rate > budget:
                break
            n += 1
        return max(n, 1)

    def done(self, seconds: float, tokens: int, chars: int) -> None:
        """A request of ``chars`` characters and ``tokens`` prompt tokens took ``seconds``."""
        if tokens > 0 and chars > 0:
            self.rates.append(seconds / tokens)
            self.tokens_per_char = tokens / chars

    def timed_out(self, prompts: int, chars: int) -> None:
        """A request of ``prompts`` prompts (``chars`` characters) ran past the timeout."""
        self.most = max(1, prompts // 2)
        self.rates.append(self.timeout / max(1.0, chars * self.tokens_per_char))


def _align(tokens: list[str], offsets: list[int], prompt: str, boundary: int) -> int:
    """The index of the first continuation token (the first that ends after
    ``boundary``), once the tokens' text at their offsets is checked against the prompt.

    The check runs from the prompt's end back to its start (where the tokens must begin),
    or to a token that ends before it (a BOS the server added), or to a token holding a
    U+FFFD (part of a multi-byte character: offsets before it may be counted in other
    units); every continuation token must lie in the checked part.
    """
    n = len(tokens)
    shift = offsets[-1] + len(tokens[-1]) - len(prompt)  # server offset - prompt offset
    checked = n
    split_char = False
    for i in range(n - 1, -1, -1):
        tok = tokens[i]
        s = offsets[i] - shift
        if s + len(tok) <= 0 and i < n - 1:
            break
        if "\ufffd" in tok:
            split_char = True
            break
        if s < 0 or prompt[s : s + len(tok)] != tok:
            raise ValueError(
                "returned prompt log-probs that do not match the prompt (echo=true): token "
                f"{i} {tok!r} at offset {offsets[i]}, the prompt ends "
                f"{clip(prompt[-40:], 40)!r}"
            )
        if i + 1 < n and offsets[i] + len(tok) != offsets[i + 1]:
            raise ValueError(
                f"returned text offsets that skip or overlap prompt text at token {i} "
                f"{tok!r} (offset {offsets[i]}, next {offsets[i + 1]})"
            )
        checked = i
    if not split_char and offsets[checked] - shift != 0:
        raise ValueError(
            f"returned too few prompt log-probs: {n} tokens from character "
            f"{offsets[checked] - shift} of the prompt on, not from its start (echo=true)"
        )
    first = next((i for i in range(n) if offsets[i] - shift + len(tokens[i]) > boundary), n)
    if first == n:
        raise ValueError(
            f"returned no token for the continuation {prompt[boundary:]!r} of the prompt"
        )
    if first < checked:
        raise ValueError(
            f"returned tokens that cannot be placed on the continuation {prompt[boundary:]!r} "
            f"(token {first} {tokens[first]!r} is not the prompt's text)"
        )
    return first
