"""Which items of a task a command takes: the same two settings in every command.

``--limit N`` is always the first N items of the file, and ``--sample N`` always a seeded
random N stratified by gold label (:func:`~nlieval.data.dataset.sample_items`, seed
``--sample-seed``), kept in file order. The two cannot be combined.

A selection whose gold labels are far from the task's is said where it is made
(:meth:`ItemSelection.choose`, by the rule of :func:`label_imbalance`): the first N items
of a file sorted by label hold one label, and their scores would say nothing of the rest.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..settings import positive_int, setting
from ..types import Item, Label
from .dataset import sample_items

log = logging.getLogger("nlieval.data")


def _label_counts(labels: Sequence[str], items: Sequence[Item]) -> dict[str, int]:
    counts = Counter(it.label.value for it in items if it.label is not None)
    return {lab: counts.get(lab, 0) for lab in labels}


def warn_if_short(asked: int, flag: str, have: int, where: str) -> None:
    """A one-line warning (logger ``nlieval.data``) when ``flag`` asks for ``asked`` items
    of ``where`` and it holds only ``have``: every count written afterwards is ``have``,
    the items used, and the user is told both numbers rather than reading the one they
    typed. The one rule of every selection of items (``--limit``, ``--sample``,
    ``--balanced-limit``, a training source's ``NAME:N``).

    >>> warn_if_short(50, "--limit 50", 12, "smoke train")  # logs: 50 asked, 12 used
    """
    if asked > have:
        log.warning(
            "%s: %s asks for %s items, it has %s: all %s are used",
            where,
            flag,
            f"{asked:,}",
            f"{have:,}",
            f"{have:,}",
        )


def label_imbalance(
    labels: Sequence[str | Label], split: Sequence[Item], chosen: Sequence[Item]
) -> str | None:
    """Why the gold labels of ``chosen`` (items of ``split``) are far from the task's
    label balance, or None when they are not (or no item is labelled).

    The rule, decided here only: a label of the task with no chosen item, or a label
    whose share of the chosen labelled items is below half its share of the split's.

    >>> from nlieval.types import NLI3
    >>> split = [Item(str(i), "p", "h", NLI3[i % 3]) for i in range(30)]
    >>> label_imbalance(NLI3, split, split[:6]) is None
    True
    >>> label_imbalance(NLI3, split, split[:2])
    'no item labelled contradiction'
    >>> label_imbalance(NLI3, split, split[0:18:3] + split[1:2] + split[2:9:3])  # 6, 1, 3
    'neutral is 10% of the items, 33% of the split'
    """
    names = [lab.value if isinstance(lab, Label) else lab for lab in labels]
    have, full = _label_counts(names, chosen), _label_counts(names, split)
    n, n_split = sum(have.values()), sum(full.values())
    if n == 0:
        return None
    missing = [lab for lab in names if have[lab] == 0]
    if missing:
        return "no item labelled " + ", ".join(missing)
    # have / n < (full / n_split) / 2, in integers: exact at the boundary.
    low = [lab for lab in names if 2 * have[lab] * n_split < full[lab] * n]
    shares = (
        f"{lab} is {have[lab] / n:.0%} of the items, {full[lab] / n_split:.0%} of the split"
        for lab in low
    )
    return "; ".join(shares) or None


@dataclass(frozen=True, kw_only=True)
class ItemSelection:
    """``limit`` (the first N) or ``sample`` (a seeded, label-stratified N) of the items.

    The configuration of every command that reads a task derives from it, so that the
    two settings are declared once (keyword-only, so a subclass keeps its own positional
    fields).

    >>> items = [Item(str(i), "p", "h", None) for i in range(10)]
    >>> [it.id for it in ItemSelection(limit=3).select_items(items)]
    ['0', '1', '2']
    >>> len(ItemSelection(sample=4, sample_seed=1).select_items(items))
    4
    >>> ItemSelection(limit=3, sample=3)
    Traceback (most recent call last):
    ValueError: --limit (the first N items) and --sample (a random N) cannot be combined
    """

    limit: int | None = setting(None, help="the first N items of each task", parse=positive_int)
    sample: int | None = setting(
        None,
        help="a seeded random N items of each task, stratified by gold label, in file order",
        parse=positive_int,
        metavar="N",
    )
    sample_seed: int = setting(0, help="seed of --sample")

    def __post_init__(self) -> None:
        """Refuse a selection that means nothing."""
        if self.limit is not None and self.sample is not None:
            raise ValueError(
                "--limit (the first N items) and --sample (a random N) cannot be combined"
            )
        for name in ("limit", "sample"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be positive, got {value}")

    def select_items(self, items: Sequence[Item], where: str = "the split") -> tuple[Item, ...]:
        """The selected items, in file order; asking for more items than ``where`` holds
        is a warning naming both numbers (:func:`warn_if_short`)."""
        if self.sample is not None:
            warn_if_short(self.sample, f"--sample {self.sample}", len(items), where)
        elif self.limit is not None:
            warn_if_short(self.limit, f"--limit {self.limit}", len(items), where)
        if self.sample is not None:
            return sample_items(items, self.sample, self.sample_seed)
        return tuple(items[: self.limit] if self.limit else items)

    def choose(
        self, items: Sequence[Item], labels: Sequence[str | Label], where: str
    ) -> tuple[Item, ...]:
        """:meth:`select_items`, with a one-line warning (logger ``nlieval.data``) when
        the selected items' gold labels are far from the task's (:func:`label_imbalance`):
        ``where`` (task and split) and how they were chosen, the counts per label, and
        the flag that gives a stratified sample.

        >>> from nlieval.types import NLI3
        >>> split = [Item(str(i), "p", "h", NLI3[i // 4]) for i in range(12)]
        >>> len(ItemSelection(limit=4).choose(split, NLI3, "mine test"))  # warns
        4
        >>> print(_balance_warning(ItemSelection(limit=4), split, split[:4], NLI3, "mine test"))
        ... # doctest: +NORMALIZE_WHITESPACE
        mine test: --limit 4 takes the first 4 items, labelled entailment=4 neutral=0
        contradiction=0 (the split: entailment=4 neutral=4 contradiction=4): no item
        labelled neutral, contradiction; --sample 4 takes a seeded sample stratified by label
        """
        chosen = self.select_items(items, where)
        message = _balance_warning(self, items, chosen, labels, where)
        if message is not None:
            log.warning("%s", message)
        return chosen

    def warning(
        self,
        items: Sequence[Item],
        chosen: Sequence[Item],
        labels: Sequence[str | Label],
        where: str,
    ) -> str | None:
        """The warning :meth:`choose` logged for ``chosen`` of ``items`` (None: none), for
        a run to record beside its data (``warnings`` of its ``results.json``), so that
        every table made from the run says it (:func:`nlieval.runs.run_warnings`)."""
        return _balance_warning(self, items, chosen, labels, where)


def _balance_warning(
    selection: ItemSelection,
    split: Sequence[Item],
    chosen: Sequence[Item],
    labels: Sequence[str | Label],
    where: str,
) -> str | None:
    """The warning :meth:`ItemSelection.choose` gives for ``chosen`` (None: no warning)."""
    why = label_imbalance(labels, split, chosen)
    if why is None:
        return None
    names = [lab.value if isinstance(lab, Label) else lab for lab in labels]

    def counts(items: Sequence[Item]) -> str:
        return " ".join(f"{lab}={n:,}" for lab, n in _label_counts(names, items).items())

    if len(chosen) == len(split):
        # The whole split: no other selection of it does better.
        return f"{where}: all {len(chosen):,} items, labelled {counts(chosen)}: {why}"
    if selection.sample is not None:
        how = f"--sample {selection.sample} (stratified by label) takes {len(chosen):,} items"
        fix = "a larger --sample holds every label in the split's shares"
    else:
        how = f"--limit {selection.limit} takes the first {len(chosen):,} items"
        fix = f"--sample {selection.limit} takes a seeded sample stratified by label"
    return f"{where}: {how}, labelled {counts(chosen)} (the split: {counts(split)}): {why}; {fix}"
