"""Core types: labels, items, per-item records and run results.

Every benchmark is read into :class:`Item`; every prediction becomes a :class:`Record`.
Both are frozen so that a loaded dataset or a saved record cannot be changed by accident
somewhere downstream (metrics and analyses are recomputed from them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

Progress = Callable[[int], None]
"""Called with the number of requests just finished (drives a progress bar)."""


class Label(str, Enum):
    """Every label any supported benchmark uses.

    A task's *label set* (an ordered tuple of labels) fixes the option order and letters:
    the first label is option A.

    >>> Label.parse("e")
    <Label.ENTAILMENT: 'entailment'>
    """

    ENTAILMENT = "entailment"
    NEUTRAL = "neutral"
    CONTRADICTION = "contradiction"
    NON_ENTAILMENT = "non-entailment"
    HYP1 = "1"
    HYP2 = "2"
    CONTRASTING = "contrasting"
    REASONING = "reasoning"

    @property
    def display(self) -> str:
        """The option text shown to a model, e.g. ``Non-Entailment``."""
        return _DISPLAY[self]

    @classmethod
    def parse(cls, raw: object) -> Label:
        """Map a label as written in some official file to a :class:`Label`.

        Accepts the names in any case, their one-letter forms (``e``/``n``/``c``),
        ``not_entailment`` (GLUE RTE), ``non_entailment``, and 1/2 for alpha-NLI.
        Integers other than 1 and 2 are refused: their meaning differs between
        datasets, so each loader maps them itself. Raises ``ValueError``.

        >>> Label.parse("NOT_ENTAILMENT").value
        'non-entailment'
        """
        if isinstance(raw, Label):
            return raw
        if isinstance(raw, bool):
            raise ValueError(f"unknown label {raw!r}")
        key = str(raw).strip().lower().replace("_", "-").replace(" ", "-")
        try:
            return _ALIASES[key]
        except KeyError:
            raise ValueError(f"unknown label {raw!r}") from None


_DISPLAY = {
    Label.ENTAILMENT: "Entailment",
    Label.NEUTRAL: "Neutral",
    Label.CONTRADICTION: "Contradiction",
    Label.NON_ENTAILMENT: "Non-Entailment",
    Label.HYP1: "Hypothesis 1",
    Label.HYP2: "Hypothesis 2",
    Label.CONTRASTING: "Contrasting",
    Label.REASONING: "Reasoning",
}

_ALIASES: dict[str, Label] = {lab.value: lab for lab in Label}
_ALIASES.update(
    {
        "e": Label.ENTAILMENT,
        "n": Label.NEUTRAL,
        "c": Label.CONTRADICTION,
        "entails": Label.ENTAILMENT,
        "not-entailment": Label.NON_ENTAILMENT,
        "nonentailment": Label.NON_ENTAILMENT,
        "hyp1": Label.HYP1,
        "hyp2": Label.HYP2,
        "contrast": Label.CONTRASTING,
    }
)

#: Ordered label sets; the order is the option order (A, B, C, ...).
NLI3: tuple[Label, ...] = (Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION)
NLI2: tuple[Label, ...] = (Label.ENTAILMENT, Label.NON_ENTAILMENT)
ALPHA: tuple[Label, ...] = (Label.HYP1, Label.HYP2)
SCI4: tuple[Label, ...] = (
    Label.CONTRASTING,
    Label.REASONING,
    Label.ENTAILMENT,
    Label.NEUTRAL,
)

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Item:
    """One test item of any benchmark.

    ``choices`` holds option texts for tasks whose options are sentences (alpha-NLI:
    premise = observation 1, hypothesis = observation 2, choices = the two hypotheses).
    ``meta`` holds what a benchmark adds: genre, round, heuristic, domain, and for
    ChaosNLI ``human_counts`` (100 labels, ordered as the task's label set) and
    ``majority_label``.

    >>> Item("1", "A dog runs.", "An animal moves.", Label.ENTAILMENT).label.value
    'entailment'
    """

    id: str
    premise: str
    hypothesis: str
    label: Label | None
    choices: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True)
class Record:
    """One model's answer to one item at one sweep point; one line of ``records.jsonl``.

    ``labels`` is the option order; ``loglik[i]`` the log-likelihood of option i
    (its letter as continuation, or a classifier's log-probability); ``probs`` the
    softmax over ``loglik``. ``pred`` is None only for generated answers that map to no
    label (counted and scored wrong, never dropped). ``scored_by`` says how a server
    scored the options (``"next-token"``, ``"echo"`` or ``"echo (fallback: WHY)"``; None
    when the backend does not say, and in records written before it existed).
    """

    task: str
    item_id: str
    model: str
    k: int
    seed: int
    labels: tuple[str, ...]
    loglik: tuple[float, ...]
    probs: tuple[float, ...]
    pred: str | None
    gold: str | None
    checkpoint: str | None = None
    prompt: str = ""
    shots: tuple[str, ...] = ()
    answer: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    scored_by: str | None = None

    @property
    def key(self) -> tuple[str, str | None, str, int, int, str]:
        """Identity of the record within a run folder (used to resume without duplicates)."""
        return self.key_of(self.model, self.checkpoint, self.task, self.k, self.seed, self.item_id)

    @staticmethod
    def key_of(
        model: str, checkpoint: str | None, task: str, k: int, seed: int, item_id: str
    ) -> tuple[str, str | None, str, int, int, str]:
        """The :attr:`key` a record of these would have: the one definition of a record's
        identity, also for an item not scored yet (resume skips the items whose key the
        folder holds).

        >>> Record.key_of("m", None, "snli", 5, 0, "17")
        ('m', None, 'snli', 5, 0, '17')
        """
        return (model, checkpoint, task, k, seed, item_id)

    @property
    def correct(self) -> bool:
        return self.gold is not None and self.pred == self.gold

    @property
    def gold_nll(self) -> float:
        """Negative log-likelihood of the gold option (nan without a gold label)."""
        if self.gold is None or self.gold not in self.labels:
            return math.nan
        return -self.loglik[self.labels.index(self.gold)]

    def to_json(self) -> str:
        """One JSON line, without a trailing newline."""
        return json.dumps(asdict(self), ensure_ascii=False, allow_nan=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Record:
        """Inverse of :meth:`to_json` (after ``json.loads``)."""
        return cls(
            task=d["task"],
            item_id=str(d["item_id"]),
            model=d["model"],
            k=int(d["k"]),
            seed=int(d["seed"]),
            labels=tuple(d["labels"]),
            loglik=tuple(float(x) for x in d["loglik"]),
            probs=tuple(float(x) for x in d["probs"]),
            pred=d.get("pred"),
            gold=d.get("gold"),
            checkpoint=d.get("checkpoint"),
            prompt=d.get("prompt", ""),
            shots=tuple(d.get("shots", ())),
            answer=d.get("answer"),
            meta=dict(d.get("meta") or {}),
            scored_by=d.get("scored_by"),
        )


def softmax(values: Sequence[float]) -> tuple[float, ...]:
    """Numerically stable softmax of a short list (the options of one item).

    >>> [round(p, 9) for p in softmax([0.0, math.log(3.0)])]  # e^0 : e^log 3 = 1 : 3
    [0.25, 0.75]
    >>> softmax([1000.0, 1000.0])  # exp(1000) alone would overflow
    (0.5, 0.5)
    """
    # scipy's softmax subtracts the maximum first (stable); imported here, not at the top,
    # so that the core types load without scipy.
    from scipy.special import softmax as scipy_softmax

    return tuple(float(p) for p in scipy_softmax([float(v) for v in values]))
