"""Multiple-choice classifiers: any transformers ``AutoModelForMultipleChoice``.

An item whose label picks one of its choices (alpha-NLI: two observations, and the two
hypotheses the label chooses between) is read by a multiple-choice head, never by a
sentence-pair head (which would see the observations alone). Each choice is encoded
with its item's text as one input (:func:`nlieval.classifiers.choice_pairs`), the
encoder gives each input one score, and a softmax over the item's choices compares
them: the log-softmax is the log-likelihood of each option, one per choice, in the
item's order.

A model is such a classifier when its ``config.json`` lists an architecture ending in
``ForMultipleChoice`` (:func:`is_multiple_choice`): a hub model, a folder of one, or a
folder written by ``nlieval train`` on alpha-NLI (a
:mod:`~nlieval.backends.classifier` folder whose description says
``"head": "multiple-choice"``, the model saved whole beside it). The model registry
(:func:`~nlieval.backends.registry.resolve`) calls each the kind ``multiple-choice``
and :class:`HFMultipleChoice` scores it; :func:`choose_records` makes its records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..classifiers import (
    CHOICE_HEAD,
    is_classifier_folder,
    label_name,
    read_meta,
    scored_record,
)
from ..types import Item, Label, Progress, Record
from .base import ChoiceBackend, ClassifierBackend
from .finite import NonFiniteScore, check_scores
from .options import HFOptions
from .placement import pick_placement
from .weights import ModelError, load_tokenizer, refuse_new_weights, resolve_model

#: The end of an architecture name that ``AutoModelForMultipleChoice`` loads.
ARCHITECTURE_SUFFIX = "ForMultipleChoice"

#: Items per forward pass when the batch size is ``auto`` (each holds all its choices).
AUTO_BATCH = 16


def is_multiple_choice(name: str, revision: str | None = None) -> bool:
    """True when ``name`` (a folder or hub id) is a transformers multiple-choice model:
    its ``config.json`` lists an architecture ending in ``ForMultipleChoice``.

    >>> is_multiple_choice("/no/such/folder"), is_multiple_choice(tiny_encoder)
    (False, False)
    """
    from .hf_classifier import config_json

    config = config_json(name, revision)
    arch = config.get("architectures") if config else None
    return isinstance(arch, list) and any(str(a).endswith(ARCHITECTURE_SUFFIX) for a in arch)


class HFMultipleChoice:
    """A transformers multiple-choice model as a
    :class:`~nlieval.backends.base.ChoiceBackend`: :meth:`choose` returns, per item, the
    log-softmax of its choices' logits. Results do not depend on ``batch_size`` (beyond
    float rounding).

    >>> import math
    >>> from transformers import AutoTokenizer, BertForMultipleChoice
    >>> BertForMultipleChoice.from_pretrained(tiny_encoder).save_pretrained(run_dir)
    >>> _ = AutoTokenizer.from_pretrained(tiny_encoder).save_pretrained(run_dir)
    >>> mc = HFMultipleChoice(run_dir, HFOptions(device="cpu"))
    >>> item = Item("1", "O1.", "O2.", None, ("H1.", "H2.", "H3."))
    >>> [round(sum(map(math.exp, row)), 6) for row in mc.choose([item])]
    [1.0]
    """

    name: str

    def __init__(
        self,
        model: str,
        options: HFOptions | None = None,
        *,
        revision: str | None = None,
        batch_size: int | str = "auto",
        name: str | None = None,
    ) -> None:
        """The model ``model`` (a folder or hub id) run with the engine's ``options``
        whole; ``revision`` (a checkpoint's) overrides theirs; ``batch_size`` ``auto``
        is :data:`AUTO_BATCH` items per forward pass. An ``nlieval train`` folder keeps
        the input length it was trained with; any other model takes its longest."""
        import torch
        from transformers import AutoModelForMultipleChoice

        from .hf_classifier import max_pair_length

        options = options or HFOptions()
        source = resolve_model(model, revision or options.revision)
        device, torch_dtype = pick_placement(options.device, options.dtype)
        spread, self._offload = options.spread_kwargs()
        kwargs: dict[str, Any] = {"dtype": torch_dtype, **spread}
        if source.revision:
            kwargs["revision"] = source.revision
        tokenizer: Any = load_tokenizer(source.path, source.name, revision=source.revision)
        try:
            loaded: Any
            loaded, info = AutoModelForMultipleChoice.from_pretrained(
                source.path, output_loading_info=True, **kwargs
            )
        except (OSError, ValueError, RuntimeError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ModelError(
                f"cannot load multiple-choice model {source.name!r}: {first}"
            ) from None
        refuse_new_weights(info, source.path, "multiple-choice model")
        if not spread:
            loaded.to(torch.device(device))
        if tokenizer.pad_token is None:
            raise ModelError(
                f"{source.name}: its tokenizer has no padding token, which a batch of choices needs"
            )
        folder = Path(source.path)
        if is_classifier_folder(folder):
            length = read_meta(folder).max_length
        else:
            length = max_pair_length(tokenizer, loaded.config)
        self._attach(loaded, tokenizer, length, batch_size, name or source.name)

    @classmethod
    def from_model(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        max_length: int,
        batch_size: int | str = "auto",
        name: str = "in-memory",
    ) -> HFMultipleChoice:
        """A backend over a model in memory (used while training; nothing is copied)."""
        self = cls.__new__(cls)
        self._attach(model, tokenizer, max_length, batch_size, name)
        return self

    def _attach(
        self, model: Any, tokenizer: Any, max_length: int, batch_size: int | str, name: str
    ) -> None:
        size = batch_size if isinstance(batch_size, int) else AUTO_BATCH
        if size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.model, self.tokenizer = model, tokenizer
        self.max_length, self.batch_size, self.name = max_length, size, name

    def choose(self, items: Sequence[Item]) -> list[list[float]]:
        """Per item, the log-probability of each of its choices; a NaN or an infinity is
        refused (:class:`~nlieval.backends.finite.NonFiniteScore`)."""
        import torch

        from ..classifiers import choice_logits, choice_pairs  # torch, loaded with the engine

        items = list(items)
        # Items of one number of choices per batch, similar lengths together (less
        # padding); results go back in order.
        order = sorted(
            range(len(items)),
            key=lambda i: (len(items[i].choices), sum(map(len, choice_pairs(items[i])[0]))),
        )
        out: list[list[float]] = [[] for _ in items]
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                start = 0
                while start < len(order):
                    n = len(items[order[start]].choices)
                    idx = [
                        i for i in order[start : start + self.batch_size]
                        if len(items[i].choices) == n
                    ]  # fmt: skip
                    logits = choice_logits(
                        self.model, self.tokenizer, [items[i] for i in idx],
                        max_length=self.max_length,
                    )  # fmt: skip
                    logp = torch.log_softmax(logits.float(), dim=-1).cpu()
                    for row, i in enumerate(idx):
                        out[i] = logp[row].tolist()
                    start += len(idx)
        finally:
            self.model.train(was_training)
        check_scores(out, self.name, "log-probability")
        return out


def choose_records(
    backend: ChoiceBackend,
    items: Sequence[Item],
    task_labels: Sequence[Label | str],
    *,
    task: str,
    model: str,
    k: int = 0,
    seed: int = 0,
    checkpoint: str | None = None,
    chunk: int = 256,
    progress: Progress | None = None,
) -> list[Record]:
    """One :class:`Record` per item: the task label of choice i is ``task_labels[i]``
    (alpha-NLI: ``1``, ``2``), its log-likelihood the log-softmax of the model's score of
    that choice, ``probs`` their softmax, ``pred`` the most probable (the first on a
    tie). An item with another number of choices than labels is refused in one line.

    >>> class Fixed:  # a stand-in backend: log-probabilities log(1/4), log(3/4)
    ...     name = "fixed"
    ...     def choose(self, items):
    ...         return [[math.log(0.25), math.log(0.75)] for _ in items]
    >>> import math
    >>> item = Item("7", "O1.", "O2.", Label.HYP1, ("H1.", "H2."))
    >>> [rec] = choose_records(Fixed(), [item], ("1", "2"), task="alphanli", model="m")
    >>> rec.pred, rec.gold, [round(p, 6) for p in rec.probs]
    ('2', '1', [0.25, 0.75])
    """
    # One record as a pair classifier's: choice i is the group (i,) of the mapping, so
    # each label's log-likelihood is its choice's own (a log-sum-exp of one term).
    names = tuple(label_name(x) for x in task_labels)
    mapping = tuple((i,) for i in range(len(names)))
    records: list[Record] = []
    for start in range(0, len(items), chunk):
        part = items[start : start + chunk]
        for it in part:
            if len(it.choices) != len(names):
                raise ValueError(
                    f"item {it.id!r} of task {task} holds {len(it.choices)} choices, but the "
                    f"task has {len(names)} labels ({', '.join(names)}), one per choice"
                )
        try:
            scores = backend.choose(part)
            check_scores(scores, backend.name, "log-probability")  # whatever the engine
        except NonFiniteScore as err:
            raise err.at(f"item {part[err.index].id!r} of task {task}") from None
        for item, logp in zip(part, scores, strict=True):
            logp = [float(x) for x in logp]
            records.append(
                scored_record(item, logp, mapping, names, task, model, k, seed, checkpoint)
            )
        if progress is not None:
            progress(len(part))
    return records


def item_records(
    backend: ClassifierBackend | ChoiceBackend,
    items: Sequence[Item],
    task_labels: Sequence[Label | str],
    **where: Any,
) -> list[Record]:
    """The records of a classifier of either head: :func:`choose_records` for a
    multiple-choice backend, :func:`~nlieval.backends.classifier.classify_records` for a
    pair classifier; ``where`` are their keywords (``task``, ``model``, ...).

    >>> class Fixed:
    ...     name = "fixed"
    ...     def choose(self, items):
    ...         return [[0.0, float("-inf")] for _ in items]
    >>> item = Item("7", "O1.", "O2.", None, ("H1.", "H2."))
    >>> item_records(Fixed(), [item], ("1", "2"), task="t", model="m")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.backends.finite.NonFiniteScore: fixed computed a -inf ... for item '7' of task t: ...
    """
    if isinstance(backend, ChoiceBackend):
        return choose_records(backend, items, task_labels, **where)
    from .classifier import classify_records

    return classify_records(backend, items, task_labels, **where)


def backend_from_model(
    model: Any, tokenizer: Any, meta: Any, *, batch_size: int, name: str
) -> ClassifierBackend | ChoiceBackend:
    """The backend over a classifier in memory whose description is ``meta`` (a
    :class:`~nlieval.classifiers.ClassifierMeta`): :class:`HFMultipleChoice` for
    a multiple-choice head, else an
    :class:`~nlieval.backends.classifier.EncoderClassifier`."""
    from .classifier import EncoderClassifier

    if meta.head == CHOICE_HEAD:
        return HFMultipleChoice.from_model(
            model, tokenizer, max_length=meta.max_length, batch_size=batch_size, name=name
        )
    return EncoderClassifier.from_model(model, tokenizer, meta, batch_size=batch_size, name=name)
