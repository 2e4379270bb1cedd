"""Which items of a task a command takes: the same two settings in every command.

``--limit N`` is always the first N items of the file, and ``--sample N`` always a seeded
random N stratified by gold label (:func:`~nlieval.data.dataset.sample_items`, seed
``--sample-seed``), kept in file order. The two cannot be combined.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..settings import positive_int, setting
from ..types import Item
from .dataset import sample_items


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

    def select_items(self, items: Sequence[Item]) -> tuple[Item, ...]:
        """The selected items, in file order."""
        if self.sample is not None:
            return sample_items(items, self.sample, self.sample_seed)
        return tuple(items[: self.limit] if self.limit else items)
