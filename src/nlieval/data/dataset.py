"""Loaded data: :class:`Dataset` (one split of one task, as loaded), and seeded
sampling of items (:func:`seeded_rng`, :func:`sample_items`). Its error,
:class:`~nlieval.ground.DataError` (bad input, one line naming the file, the line and
the field), is the ground's, shared by every reader of files.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..types import Item, Label


@dataclass(frozen=True)
class Dataset:
    """One split of one task, as loaded.

    >>> from nlieval.data import load_task
    >>> ds = load_task("smoke")
    >>> ds.task, ds.split, ds.label_counts()["neutral"], dict(ds.dropped)
    ('smoke', 'test', 16, {})
    """

    task: str
    split: str
    labels: tuple[Label, ...]
    items: tuple[Item, ...]
    source: str
    dropped: Mapping[str, int] = field(default_factory=dict)
    skipped_bad: int = 0

    def __len__(self) -> int:
        return len(self.items)

    @property
    def pairs(self) -> bool:
        """Whether every item is one sentence pair whose label names its relation: False
        when items hold choices (alpha-NLI: two observations, and the hypotheses the label
        chooses between), which a reader of (premise, hypothesis) would never see.

        >>> from nlieval.data import load_task
        >>> load_task("smoke").pairs
        True
        """
        return not any(it.choices for it in self.items)

    def require_pairs(self, reader: str) -> None:
        """Refuse, in one line, ``reader`` (something that sees an item as its premise and
        hypothesis alone: a sentence-pair classifier) for a task whose items are not
        pairs (see :attr:`pairs`).

        >>> from nlieval.types import ALPHA, Item
        >>> item = Item("1", "O1.", "O2.", None, ("H1.", "H2."))
        >>> Dataset("alphanli", "dev", ALPHA, (item,), "f").require_pairs("model m,")
        Traceback (most recent call last):
        ValueError: model m, reads each item as one sentence pair ... (item 1: the label ...
        """
        first = next((it for it in self.items if it.choices), None)
        if first is not None:
            raise ValueError(
                f"{reader} reads each item as one sentence pair (premise, hypothesis), but "
                f"the items of task {self.task} hold {len(first.choices)} choices besides "
                f"(item {first.id}: the label picks one of them), which it would never "
                "see: score this task with a language model (--model LM)"
            )

    def require_choices(self, reader: str) -> None:
        """Refuse, in one line, ``reader`` (a multiple-choice classifier: it reads each
        item's choices and picks one) for a task whose items hold none: a sentence pair
        whose label names its relation, which no choice stands for.

        >>> from nlieval.data import load_task
        >>> load_task("smoke").require_choices("--model m, a multiple-choice classifier,")
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: --model m, a multiple-choice classifier, picks one of each item's ...
        """
        first = next((it for it in self.items if not it.choices), None)
        if first is not None:
            raise ValueError(
                f"{reader} picks one of each item's choices, but the items of task "
                f"{self.task} are sentence pairs labelled by their relation (item "
                f"{first.id} holds no choices): score this task with a pair classifier or "
                "a language model"
            )

    def label_counts(self) -> dict[str, int]:
        """Items per label value, in label-set order (plus ``"none"`` for unlabelled items)."""
        counts = Counter(it.label.value if it.label else "none" for it in self.items)
        out = {lab.value: counts.get(lab.value, 0) for lab in self.labels}
        if counts.get("none"):
            out["none"] = counts["none"]
        return out


def seeded_rng(seed: int, *keys: object) -> random.Random:
    """A random generator for one seed and one purpose (a document, a class, a run).

    Seeded from a SHA-256 of ``repr((seed, *keys))``: stable across processes and Python
    versions, unlike ``hash()`` of a string.

    >>> seeded_rng(0, "x").random() == seeded_rng(0, "x").random()
    True
    """
    digest = hashlib.sha256(repr((seed, *keys)).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def sample_items(items: Sequence[Item], n: int, seed: int = 0) -> tuple[Item, ...]:
    """A seeded random subset of ``n`` items, stratified by gold label, in file order.

    Each label (unlabelled items form one group) gets its share of ``n`` by largest
    remainder, so the label shares match the file's (SciNLI test, 1,000 per class and
    sorted by class: ``n = 40`` gives 10 per class). Within a label the items are a
    prefix of a permutation seeded by ``seed`` and the label, so a larger ``n`` mostly
    keeps the items of a smaller one. ``n`` at least the number of items keeps them all.

    >>> from nlieval.types import NLI3
    >>> items = [Item(str(i), "p", "h", NLI3[i // 4]) for i in range(12)]
    >>> picked = sample_items(items, 6, seed=1)
    >>> [it.label.value[0] for it in picked], picked == sample_items(items, 6, seed=1)
    (['e', 'e', 'n', 'n', 'c', 'c'], True)
    """
    if n < 1:
        raise ValueError(f"the sample size must be positive, got {n}")
    if n >= len(items):
        return tuple(items)
    groups: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(it.label.value if it.label is not None else "", []).append(i)
    keys = sorted(groups)
    quota = {k: n * len(groups[k]) // len(items) for k in keys}
    # Largest remainder first (n * size mod total), ties in alphabetical label order.
    by_remainder = sorted(keys, key=lambda k: -(n * len(groups[k]) % len(items)))
    for k in by_remainder[: n - sum(quota.values())]:
        quota[k] += 1
    keep: set[int] = set()
    for k in keys:
        order = list(groups[k])
        random.Random(f"sample:{seed}:{k}").shuffle(order)
        keep.update(order[: quota[k]])
    return tuple(it for i, it in enumerate(items) if i in keep)
