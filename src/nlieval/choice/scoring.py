"""Choice-based scoring: items of one sweep point -> prompts -> option NLL -> records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..backends import (
    LogLikelihoodBackend,
    NonFiniteScore,
    ScoreRequest,
)
from ..types import Item, Label, Progress, Record, softmax
from .prompts import Prompt, PromptBuilder, draw_shots


@dataclass(frozen=True)
class SweepPoint:
    """One (task, k, seed) of a sweep, with its fixed few-shot draw."""

    task: str
    k: int
    seed: int
    labels: tuple[Label, ...]
    builder: PromptBuilder
    pool: tuple[Item, ...]
    pool_is_test: bool
    balanced: bool

    @property
    def shot_ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.builder.shots)

    def prompt(self, item: Item) -> Prompt:
        """The item's prompt; the sweep point's shots, unless the item is one of them."""
        # Ids are only comparable within one split: a pool from another split may reuse them.
        if self.pool_is_test and item.id in self.shot_ids:
            alt = draw_shots(
                self.pool, self.task, self.k, self.seed, self.balanced, exclude=item.id
            )
            return self.builder.build(item, alt)
        return self.builder.build(item)


def make_sweep_point(
    task: str,
    family: str,
    labels: Sequence[Label],
    k: int,
    seed: int,
    pool: Sequence[Item],
    pool_is_test: bool,
    balanced: bool = False,
    template: str | None = None,
) -> SweepPoint:
    """Draw the shots of (task, k, seed) once and fix the prompt builder.

    >>> from nlieval.types import NLI3
    >>> pool = [Item(str(i), "p", "h", NLI3[i % 3]) for i in range(9)]
    >>> sp = make_sweep_point("t", "nli3", NLI3, 2, 0, pool, True)
    >>> len(sp.shot_ids)
    2
    """
    shots = draw_shots(pool, task, k, seed, balanced)
    builder = PromptBuilder(family, labels, shots, template)
    return SweepPoint(task, k, seed, tuple(labels), builder, tuple(pool), pool_is_test, balanced)


@runtime_checkable
class SaysHowScored(Protocol):
    """A backend that also says how it scored each request (a model on a server:
    :meth:`~nlieval.backends.completions.CompletionsLM.loglikelihood_scored_by`)."""

    def loglikelihood_scored_by(
        self, requests: Sequence[ScoreRequest], progress: Progress | None = None
    ) -> tuple[list[list[float]], list[str]]: ...


def score_items(
    backend: LogLikelihoodBackend,
    point: SweepPoint,
    items: Sequence[Item],
    *,
    model: str,
    checkpoint: str | None = None,
    save_prompt: bool = True,
    progress: Progress | None = None,
) -> list[Record]:
    """Score ``items`` at one sweep point; one :class:`Record` per item, in order (with
    its ``scored_by`` when the backend says how it scored it). A NaN or infinite
    log-likelihood is a :class:`~nlieval.backends.NonFiniteScore` naming the item."""
    prompts = [point.prompt(it) for it in items]
    requests = [ScoreRequest(p.text, p.continuations, prefix_len=len(p.prefix)) for p in prompts]
    how: Sequence[str | None]
    try:
        if isinstance(backend, SaysHowScored):
            scores, how = backend.loglikelihood_scored_by(requests, progress)
        else:
            scores, how = backend.loglikelihood(requests, progress), [None] * len(requests)
        NonFiniteScore.check(scores, backend.name, "log-likelihood")  # whatever the engine
    except NonFiniteScore as err:
        # No record of the chunk is made: a NaN would predict the first label.
        where = f"item {items[err.index].id!r} of task {point.task} at k={point.k}"
        raise err.at(f"{where}, seed {point.seed}") from None
    labels = tuple(lab.value for lab in point.labels)
    records = []
    for it, p, ll, by in zip(items, prompts, scores, how, strict=True):
        best = max(range(len(ll)), key=lambda i: (ll[i], -i))  # ties go to the first option
        records.append(
            Record(
                task=point.task,
                item_id=it.id,
                model=model,
                k=point.k,
                seed=point.seed,
                labels=labels,
                loglik=tuple(ll),
                probs=softmax(ll),
                pred=labels[best],
                gold=it.label.value if it.label is not None else None,
                checkpoint=checkpoint,
                prompt=p.text if save_prompt else "",
                shots=p.shots,
                meta=dict(it.meta),
                scored_by=by,
            )
        )
    return records
