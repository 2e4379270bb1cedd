"""The log-probabilities a server's answer gives, checked before they are scored.

:func:`continuation_logprob` sums an option's log-probabilities out of an echo answer
(every prompt token with its text offset), aligning the answer's tokens on the prompt;
:func:`checked_logprob` refuses any number that cannot be a log-probability. Used by
:class:`~nlieval.backends.completions.CompletionsLM` for both kinds of request.
"""

from __future__ import annotations

import math
from typing import Any

from .openai import clip

#: What to tell the user when a server returns no prompt log-probs.
NO_PROMPT_LOGPROBS = (
    "returned no prompt log-probs (echo=true with logprobs=1): vLLM and SGLang return "
    "them (vLLM: keep --max-logprobs >= 1); llama.cpp's llama-server does not"
)



#: A log-probability above this is impossible (a probability above 1), beyond rounding.
LOGPROB_TOLERANCE = 1e-6


class ImpossibleLogprob(ValueError):
    """A value a server gave as a log-probability that cannot be one: not a number,
    infinite, or above 0 (beyond :data:`LOGPROB_TOLERANCE`)."""


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
        raise ImpossibleLogprob(
            f"returned an impossible log-prob: {value!r} (one must be finite and at most 0)"
        )
    return float(value)


def continuation_logprob(choice: Any, prompt: str, boundary: int, max_tokens: int = 0) -> float:
    """The summed log-probability of ``prompt[boundary:]`` in one echoed choice.

    The answer's tokens are placed on the prompt from its end (the last of them ends
    where the prompt does, after dropping at most ``max_tokens`` generated ones), which
    also absorbs a leading token outside the prompt (a BOS). Raises ValueError saying
    what is wrong (the message follows "the server at URL").

    >>> lp = {"tokens": ["Answer", ":", " A"], "token_logprobs": [None, -1.0, -2.5],
    ...       "text_offset": [0, 6, 7]}
    >>> continuation_logprob({"logprobs": lp}, "Answer: A", 7)
    -2.5
    >>> lp = {"tokens": ["<s>", "Answer", ":", " A"], "token_logprobs": [None, -3.0, -1.0,
    ...       -2.5], "text_offset": [0, 3, 9, 10]}   # a BOS, as vLLM reports it
    >>> continuation_logprob({"logprobs": lp}, "Answer: A", 6)
    -3.5
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
        return total
    raise ValueError(first_error)


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
