"""The data of a training run: the train, dev and test parts of a
:class:`~nlieval.sci.train_config.TrainConfig`, loaded, sampled and checked to fit
together (a stratified dev split when no dev split is named)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..data import load_task, same_data, sample_items, warn_if_short
from ..types import Item
from .train_config import Source, TrainConfig, TrainError, parse_sources

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Part:
    """One data part of a training run: the items of one split of one task (``source``,
    ``items_in_split`` and ``dropped`` describe the split as loaded, before any sample)."""

    task: str
    split: str
    labels: tuple[str, ...]
    items: tuple[Item, ...]
    source: str = ""
    items_in_split: int = 0
    dropped: Mapping[str, int] = field(default_factory=dict, compare=False)
    #: A combined training set: items per source (``task@split``), in source order.
    sources: Mapping[str, int] = field(default_factory=dict)
    #: The head that reads its items (:func:`nlieval.classifiers.head_for`).
    head: str = "pair"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"task": self.task, "split": self.split, "n": len(self.items)}
        if self.sources:
            out["sources"] = dict(self.sources)
        return out

    def data_info(self) -> dict[str, Any]:
        """The part as a run folder's ``results.json`` describes a task's data."""
        return {
            "source": self.source,
            "split": self.split,
            "items": len(self.items),
            "items_in_split": self.items_in_split,
            "dropped": dict(self.dropped),
            "pool": None,
        }


@dataclass(frozen=True)
class TrainData:
    """Train, dev and (optionally) test parts; ``labels`` is the model's label order."""

    labels: tuple[str, ...]
    train: Part
    dev: Part
    test: Part | None

    @property
    def head(self) -> str:
        """The head of the model: the one its training items' shape calls for (every
        part has that shape)."""
        return self.train.head


def stratified_split(
    items: Sequence[Item], fraction: float, seed: int = 0
) -> tuple[tuple[Item, ...], tuple[Item, ...]]:
    """(kept, held out): about ``fraction`` of each label held out, drawn with ``seed``;
    both parts keep the input order.

    >>> from nlieval.types import Label
    >>> items = [Item(str(i), "p", "h", Label.ENTAILMENT if i % 2 else Label.NEUTRAL)
    ...          for i in range(20)]
    >>> kept, held = stratified_split(items, 0.2)
    >>> len(kept), len(held), sum(it.label == Label.NEUTRAL for it in held)
    (16, 4, 2)
    """
    rng = np.random.default_rng(seed)
    by_label: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        by_label.setdefault(it.label.value if it.label else "", []).append(i)
    held: set[int] = set()
    for key in sorted(by_label):
        idx = by_label[key]
        n = int(round(len(idx) * fraction))
        if len(idx) >= 2:
            n = min(max(n, 1), len(idx) - 1)  # every label on both sides when possible
        held.update(int(i) for i in rng.permutation(idx)[:n])
    kept = tuple(it for i, it in enumerate(items) if i not in held)
    return kept, tuple(it for i, it in enumerate(items) if i in held)


def _counts(items: Sequence[Item], sources: Mapping[str, int]) -> dict[str, int]:
    # Items per source of a combined set (their ids start with the source's name).
    if not sources:
        return {}
    return {name: sum(it.id.startswith(f"{name}/") for it in items) for name in sources}


def _labelled(part: Part) -> Part:
    missing = sum(it.label is None for it in part.items)
    if missing:
        raise TrainError(f"{part.task} {part.split}: {missing} items have no gold label")
    if not part.items:
        raise TrainError(f"{part.task} {part.split}: no items")
    return part


def _load_part(name: str, split: str | None, data_dir: str | None, head: str | None = None) -> Part:
    """One split as a part; its items must fit ``head`` (None: the head is chosen from
    their shape, :func:`~nlieval.classifiers.head_for`: the first training source's)."""
    from ..classifiers import PAIR_HEAD, head_for

    ds = load_task(name, data_dir, split)
    head = head or head_for(ds.pairs)
    if head == PAIR_HEAD:
        ds.require_pairs("nlieval train, which trains a sentence-pair classifier,")
    else:
        ds.require_choices("nlieval train, which trains a multiple-choice classifier,")
    labels = tuple(lab.value for lab in ds.labels)
    return Part(
        name, ds.split, labels, ds.items, ds.source, len(ds.items), dict(ds.dropped), head=head
    )


def _check_head(config: TrainConfig, part: Part) -> None:
    """Refuse, in one line, the settings a multiple-choice head does not take: LoRA
    (PEFT has no multiple-choice task type: its adapters wrap a sequence-classification
    head), and the pair head's options (a pair checkpoint to start from, hypothesis-only
    input)."""
    from ..classifiers import CHOICE_HEAD

    if part.head != CHOICE_HEAD:
        return
    given = [
        flag
        for flag, value in (
            ("--lora", config.lora),
            ("--init-from", config.init_from),
            ("--hypothesis-only", config.hypothesis_only or None),
        )
        if value is not None
    ]
    if given:
        raise TrainError(
            f"the items of {part.task} hold choices, so nlieval train fine-tunes a "
            f"multiple-choice head, which does not take "
            f"{', '.join(given)}; train without {'them' if len(given) > 1 else 'it'}"
        )


def _key(item: Item) -> tuple[str, str, str]:
    # One item, whatever file or task name it was read through: its id and its text.
    return (item.id, item.premise, item.hypothesis)


def _overlap(a: Part, b: Part, what: str) -> str | None:
    """What is wrong when ``b`` shares items (same id, same text) with ``a``: None when
    they share none; a warning is logged when they share some, and the text of the
    error returned when one holds all of the other (the same file read twice, or one a
    part of the other), which ``what`` (the two parts' names) begins."""
    keys = {_key(it) for it in a.items}
    shared = [it.id for it in b.items if _key(it) in keys]
    if not shared:
        return None
    n = f"{len(shared)} items (e.g. {shared[0]!r})"
    if len(shared) < min(len(a.items), len(b.items)):
        # Short texts under line-number ids can meet by chance: said, not refused.
        log.warning("%s share %s", what, n)
        return None
    whole = "the first" if len(a.items) == len(shared) else "the second"
    return f"{what} share {n}, all of {whole}"


def _load_sources(config: TrainConfig) -> list[tuple[Source, Part]]:
    """Every training source's split, whole (before any sample), its ids its own. Two
    sources one of which holds every item of the other (one given twice, under another
    split name or through a task YAML on the same file) are a :class:`TrainError`: its
    items would be trained on twice.

    >>> _load_sources(TrainConfig("minilm", "smoke@train,smoke"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.sci.train_config.TrainError: --task: the sources smoke@train and smoke share 12 ...
    """
    loaded: list[tuple[Source, Part]] = []
    for src in parse_sources(config.task):
        head = loaded[0][1].head if loaded else None
        part = _load_part(src.task, src.split or config.train_split, config.data_dir, head)
        _check_head(config, part)
        for other, seen in loaded:
            a, b = (f"{x.task}@{x.split}" if x.split else x.task for x in (other, src))
            why = _overlap(seen, part, f"--task: the sources {a} and {b}")
            if why is not None:
                raise TrainError(
                    f"{why}: one source given twice, or one file under two names; give "
                    "each item once"
                )
        loaded.append((src, part))
    return loaded


def load_train(config: TrainConfig) -> Part:
    """The training part: the ``--task`` split, or a combined set of several sources
    (:func:`~nlieval.sci.train_config.parse_sources`), each loaded and sampled on its own
    (``NAME:N``, seeded by ``sample_seed``) and concatenated in source order, with ids
    prefixed by ``task@split/`` so that two sources never share one. Sources must have
    one label set; ``sources`` holds the counts.

    >>> part = load_train(TrainConfig("minilm", "smoke@train:6,smoke@test:9"))
    >>> part.sources, part.items[0].id.split("/")[0]
    ({'smoke@train': 6, 'smoke@test': 9}, 'smoke@train')
    """
    return _combine(_load_sources(config), config)


def _combine(loaded: Sequence[tuple[Source, Part]], config: TrainConfig) -> Part:
    """The training part of :func:`load_train` out of the loaded sources."""
    sources = [src for src, _ in loaded]
    if len(sources) == 1 and sources[0].n is None:
        return loaded[0][1]
    parts = []
    for src, part in loaded:
        items = part.items
        if src.n is not None:
            labelled = [it for it in items if it.label is not None]
            where = f"training source {src.task}@{part.split} (its labelled items)"
            warn_if_short(src.n, f"{src.task}:{src.n}", len(labelled), where)
            items = sample_items(labelled, src.n, config.sample_seed)
        # A task YAML is named by its file's stem (the name its items carry elsewhere).
        name = Path(src.task).stem if src.task.endswith((".yaml", ".yml")) else src.task
        if len(sources) > 1:
            items = tuple(replace(it, id=f"{name}@{part.split}/{it.id}") for it in items)
        parts.append(replace(part, task=name, items=tuple(items)))
    first = parts[0]
    for part in parts[1:]:
        if set(part.labels) != set(first.labels):
            raise TrainError(
                f"--task: {part.task} is labelled ({', '.join(part.labels)}), {first.task} "
                f"({', '.join(first.labels)}); a combined training set needs one label set"
            )
    return Part(
        loaded[0][0].task,
        "+".join(f"{p.task}@{p.split}" for p in parts),
        first.labels,
        tuple(it for p in parts for it in p.items),
        "; ".join(p.source for p in parts),
        sum(p.items_in_split for p in parts),
        sources={f"{p.task}@{p.split}": len(p.items) for p in parts},
        head=first.head,
    )


def load_data(config: TrainConfig) -> TrainData:
    """The train, dev and test parts of ``config``, checked to fit together.

    The packaged ``smoke`` task has a train split of 12 items (4 per label) and a test
    split of 48; without ``dev_split`` a stratified tenth of train is held out, at least
    one item per label:

    >>> data = load_data(TrainConfig("minilm", "smoke"))
    >>> len(data.train.items), len(data.dev.items), data.dev.split, len(data.test.items)
    (9, 3, 'train[held-out 0.1]', 48)
    """
    from ..classifiers import label_mapping

    loaded = _load_sources(config)
    train = _combine(loaded, config)
    labels = train.labels
    if config.dev_split is not None:
        dev_task = config.dev_task or config.first_task
        dev = _load_part(dev_task, config.dev_split, config.data_dir, train.head)
        if set(dev.labels) != set(labels):
            raise TrainError(
                f"dev task {dev.task} is labelled ({', '.join(dev.labels)}), the training "
                f"task ({', '.join(labels)}); they must match"
            )
    else:
        kept, held = stratified_split(train.items, config.dev_fraction, config.split_seed)
        held_out = f"{train.split}[held-out {config.dev_fraction:g}]"
        dev = Part(train.task, held_out, labels, held, head=train.head)
        train = replace(train, items=kept, sources=_counts(kept, train.sources))
    test = None
    if not config.skip_test:
        test_task = config.test_task or config.first_task
        test = _load_part(test_task, config.test_split, config.data_dir, train.head)
        label_mapping(labels, test.labels)  # fail now, not after hours of training
        same = any(
            src.task == test_task
            and same_data(src.task, src.split or config.train_split, test.split, config.data_dir)
            for src in parse_sources(config.task)
        )
        if same:
            raise TrainError(
                f"the test split {test.task} {test.split} is the training data; give "
                "another --test-task (e.g. scinli) or --no-test"
            )
        for src, part in loaded:
            # The same items read through another name (a task YAML on the test file).
            what = f"the training source {src.task}@{part.split} and the test split {test.task}"
            why = _overlap(part, test, f"{what} {test.split}")
            if why is not None:
                raise TrainError(
                    f"{why}: the model would be tested on items it was trained on; give "
                    "another --test-task (e.g. scinli) or --no-test"
                )
    chosen = config.choose(train.items, labels, f"training part {train.task} {train.split}")
    train = _labelled(replace(train, items=chosen, sources=_counts(chosen, train.sources)))
    present = sorted({it.label.value for it in train.items if it.label is not None})
    if len(present) < 2:
        # A warning, not an error: a pipeline stage may yield one class on small data,
        # and its encoder can still be the start of another stage (a fresh head).
        log.warning(
            "%s %s: every item is labelled %r; the classifier can only learn that one class",
            train.task,
            train.split,
            present[0],
        )
    dev = _labelled(
        replace(dev, items=config.choose(dev.items, labels, f"dev part {dev.task} {dev.split}"))
    )
    if test is not None:
        where = f"test part {test.task} {test.split}"
        test = _labelled(replace(test, items=config.choose(test.items, test.labels, where)))
    return TrainData(labels, train, dev, test)
