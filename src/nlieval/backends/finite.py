"""Every number a model computes in process is checked as a server's is
(:func:`~nlieval.backends.echo_logprobs.checked_logprob`): a NaN or infinite score never
becomes a prediction. A model whose weights hold a NaN, or whose activations overflow in
half precision, gives every option a NaN, and the first label would win every item.

:func:`check_scores` is called by each in-process engine on what it returns;
:class:`NonFiniteScore` says which request (``index``) of the call; the callers that know
the items (``choice.score_items``, :func:`~nlieval.backends.classifier.classify_records`)
name the item.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .weights import ModelError


class NonFiniteScore(ModelError):
    """A model computed a score that is NaN or infinite: ``index`` is the request (pair,
    conversation) of the call it belongs to, ``value`` the number.

    >>> str(NonFiniteScore("smollm2-135m", "log-likelihood", 3, float("nan")))  # doctest: +ELLIPSIS
    'smollm2-135m computed a NaN log-likelihood for request 3: ...'
    """

    def __init__(self, model: str, what: str, index: int, value: float, where: str = "") -> None:
        self.model, self.what, self.index, self.value = model, what, index, value
        self.where = where or f"request {index}"
        shown = "NaN" if math.isnan(value) else ("+inf" if value > 0 else "-inf")
        super().__init__(
            f"{model} computed a {shown} {what} for {self.where}: its weights or "
            "activations are not finite (a NaN in the weights, or an overflow in float16: "
            "try --dtype float32)"
        )

    def at(self, where: str) -> NonFiniteScore:
        """The same error, naming the item (``where``) instead of the request index."""
        return NonFiniteScore(self.model, self.what, self.index, self.value, where)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.model, self.what, self.index, self.value, self.where))

    @classmethod
    def check(cls, rows: Sequence[Sequence[float]], model: str, what: str) -> None:
        """Raise one for the first row of ``rows`` holding a NaN or an infinity
        (:func:`check_scores`: the one check, for a caller holding any engine's scores).

        >>> NonFiniteScore.check([[-0.5, -1.0]], "m", "log-likelihood")
        """
        check_scores(rows, model, what)


def check_scores(rows: Sequence[Sequence[float]], model: str, what: str) -> None:
    """Raise :class:`NonFiniteScore` for the first row holding a NaN or an infinity.

    >>> check_scores([[-0.5, -1.0]], "m", "log-likelihood")
    >>> check_scores([[-0.5, -1.0], [-float("inf"), -2.0]], "m", "log-probability")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.backends.finite.NonFiniteScore: m computed a -inf log-probability for request 1: ...
    """
    for i, row in enumerate(rows):
        for value in row:
            if not math.isfinite(value):
                raise NonFiniteScore(model, what, i, value)
