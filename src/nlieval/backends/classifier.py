"""Trained sentence-pair classifiers as an engine: a checkpoint folder loaded, and scored.

A folder written by ``nlieval train`` (its format, heads and labels are the
:mod:`nlieval.classifiers` room's) is loaded by :func:`load_classifier`;
:class:`EncoderClassifier` is the :class:`~nlieval.backends.base.ClassifierBackend` over
it, and :func:`classify_records` turns its log-probabilities into records on any task
whose label set it can answer. Off-the-shelf Hugging Face sequence classifiers (an MNLI
RoBERTa...) are :class:`nlieval.backends.hf_classifier.HFSequenceClassifier`, whose
records are made the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from ..classifiers import (
    PAIR_HEAD,
    ClassifierError,
    ClassifierMeta,
    PairClassifier,
    PairModel,
    encode_pairs,
    head_file,
    label_mapping,
    label_name,
    load_head,
    read_meta,
    scored_record,
)
from ..types import Item, Label, Progress, Record
from .base import ClassifierBackend
from .finite import NonFiniteScore, check_scores
from .lora_classifier import load_lora
from .options import HFOptions
from .placement import pick_device


def load_classifier(
    folder: str | Path, device: str = "cpu"
) -> tuple[PairModel, Any, ClassifierMeta]:
    """Model (in eval mode, on ``device``), tokenizer and metadata of a checkpoint folder.

    >>> from transformers import AutoModel, AutoTokenizer
    >>> from nlieval.classifiers import save_classifier
    >>> model = PairClassifier(AutoModel.from_pretrained(tiny_lm), 2)
    >>> folder = save_classifier(model, AutoTokenizer.from_pretrained(tiny_lm),
    ...                          ClassifierMeta(("entailment", "non-entailment")), run_dir)
    >>> loaded, tok, meta = load_classifier(folder)
    >>> torch.equal(loaded.head.weight, model.head.weight), meta.labels, loaded.training
    (True, ('entailment', 'non-entailment'), False)
    """
    from transformers import AutoModel

    from .weights import ModelError, load_tokenizer, refuse_new_weights

    meta = read_meta(folder)
    if meta.head != PAIR_HEAD:
        raise ClassifierError(f"{folder} holds a {meta.head} head, not a sentence-pair classifier")
    if meta.adapter is not None:
        lora, tok = load_lora(folder, meta.base_model, len(meta.labels), meta.adapter)
        lora.to(torch.device(device)).eval()
        return lora, tok, meta
    # Every file checked before the encoder loads: a folder missing one is one line.
    tokenizer = load_tokenizer(str(folder), str(folder))
    head_file(folder)
    try:
        encoder, info = AutoModel.from_pretrained(str(folder), output_loading_info=True)
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"cannot load the encoder of classifier {folder}: {first}") from None
    refuse_new_weights(info, str(folder), "classifier's encoder")
    model = PairClassifier(encoder, len(meta.labels), pool=meta.pool)
    load_head(model, folder)
    model.to(torch.device(device)).eval()
    return model, tokenizer, meta


def load_encoder(source: str) -> tuple[Any, Any]:
    """(encoder, tokenizer) of the model a training starts from (``nlieval train``'s
    model, or its ``--init-from`` checkpoint): a start the user chose, so what its files
    lack starts at random and a warning says so (where a checkpoint to score refuses it).
    Seed torch's generator first: the missing weights are drawn from it.

    >>> encoder, tokenizer = load_encoder(tiny_lm)
    >>> type(encoder).__name__.endswith("Model"), tokenizer.name_or_path == tiny_lm
    (True, True)
    """
    from transformers import AutoModel, AutoTokenizer

    from .weights import warn_new_weights

    encoder, info = AutoModel.from_pretrained(source, output_loading_info=True)
    warn_new_weights(info, source, "encoder")
    return encoder, AutoTokenizer.from_pretrained(source)


# --------------------------------------------------------------------------- the backend


#: Sentence pairs per forward pass of a classifier when the batch size is ``auto``.
AUTO_BATCH = 32


class EncoderClassifier:
    """A trained pair classifier as a :class:`~nlieval.backends.base.ClassifierBackend`.

    ``labels`` are label values in the head's order; :meth:`classify` returns
    log-probabilities over them. Results do not depend on ``batch_size`` (beyond float
    rounding, well under 1e-5).

    >>> import math
    >>> from transformers import AutoModel, AutoTokenizer
    >>> from nlieval.classifiers import save_classifier
    >>> meta = ClassifierMeta(("entailment", "neutral", "contradiction"))
    >>> folder = save_classifier(PairClassifier(AutoModel.from_pretrained(tiny_lm), 3),
    ...                          AutoTokenizer.from_pretrained(tiny_lm), meta, run_dir)
    >>> pairs = [("A man sleeps.", "Nobody sleeps."), ("Two dogs run.", "Dogs move fast.")]
    >>> one, two = (EncoderClassifier(folder, batch_size=b).classify(pairs) for b in (1, 2))
    >>> [round(sum(map(math.exp, row)), 6) for row in one]  # log-probabilities
    [1.0, 1.0]
    >>> torch.allclose(torch.tensor(one), torch.tensor(two), atol=1e-5)  # batches of 1 and 2
    True
    """

    name: str
    labels: tuple[str, ...]

    def __init__(
        self,
        path: str | Path,
        options: HFOptions | None = None,
        *,
        batch_size: int | str = "auto",
        name: str | None = None,
    ) -> None:
        """The classifier folder at ``path`` on the device of the engine's ``options``
        (their defaults are :class:`~nlieval.backends.options.HFOptions`');
        ``batch_size`` ``auto`` is :data:`AUTO_BATCH` pairs per forward pass."""
        device = pick_device((options or HFOptions()).device)
        model, tokenizer, meta = load_classifier(path, device)
        bs = batch_size if isinstance(batch_size, int) else AUTO_BATCH
        self._attach(model, tokenizer, meta, bs, name or str(path))

    @classmethod
    def from_model(
        cls,
        model: PairModel,
        tokenizer: Any,
        meta: ClassifierMeta,
        *,
        batch_size: int = 32,
        name: str = "in-memory",
    ) -> EncoderClassifier:
        """A backend over a model in memory (used while training; nothing is copied)."""
        self = cls.__new__(cls)
        self._attach(model, tokenizer, meta, batch_size, name)
        return self

    def _attach(
        self,
        model: PairModel,
        tokenizer: Any,
        meta: ClassifierMeta,
        batch_size: int,
        name: str,
    ) -> None:
        if batch_size < 1:
            raise ClassifierError(f"batch_size must be positive, got {batch_size}")
        self.model, self.tokenizer, self.meta = model, tokenizer, meta
        self.labels = meta.labels
        self.batch_size = batch_size
        self.name = name

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        """Per pair, the log-probability of each of :attr:`labels`; a NaN or an infinity
        is refused (:class:`~nlieval.backends.finite.NonFiniteScore`)."""
        pairs = list(pairs)
        # Similar lengths batched together waste less on padding; results go back in order.
        order = sorted(range(len(pairs)), key=lambda i: self._length(pairs[i]))
        out: list[list[float]] = [[] for _ in pairs]
        was_training = self.model.training
        self.model.eval()
        device = next(self.model.parameters()).device
        try:
            with torch.no_grad():
                for start in range(0, len(order), self.batch_size):
                    idx = order[start : start + self.batch_size]
                    enc = encode_pairs(
                        self.tokenizer,
                        [pairs[i] for i in idx],
                        max_length=self.meta.max_length,
                        hypothesis_only=self.meta.hypothesis_only,
                        separator=self.meta.separator,
                    ).to(device)
                    logp = torch.log_softmax(self.model(**enc).float(), dim=-1).cpu()
                    for row, i in enumerate(idx):
                        out[i] = logp[row].tolist()
        finally:
            self.model.train(was_training)
        check_scores(out, self.name, "log-probability")
        return out

    def _length(self, pair: tuple[str, str]) -> int:
        return len(pair[1]) if self.meta.hypothesis_only else len(pair[0]) + len(pair[1])


# --------------------------------------------------------------------------- records


def classify_records(
    backend: ClassifierBackend,
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
    """One :class:`Record` per item: the classifier's log-probabilities mapped onto the
    task's labels (see :func:`label_mapping`), ``probs`` their softmax, ``pred`` the most
    probable label (the first one on a tie). A NaN or infinite log-probability is a
    :class:`~nlieval.backends.finite.NonFiniteScore` naming the item.

    >>> from transformers import AutoModel, AutoTokenizer
    >>> import math
    >>> from nlieval.types import NLI2, NLI3
    >>> clf = EncoderClassifier.from_model(PairClassifier(AutoModel.from_pretrained(tiny_lm), 3),
    ...     AutoTokenizer.from_pretrained(tiny_lm), ClassifierMeta(tuple(x.value for x in NLI3)))
    >>> [rec] = classify_records(clf, [Item("1", "A man sleeps.", "He rests.", None)], NLI2,
    ...                          task="hans", model="m")
    >>> e, n, c = clf.classify([("A man sleeps.", "He rests.")])[0]  # a 3-way model, 2-way task
    >>> rec.labels, math.isclose(rec.probs[1], math.exp(n) + math.exp(c), rel_tol=1e-6)
    (('entailment', 'non-entailment'), True)
    """
    mapping = label_mapping(backend.labels, task_labels)
    names = tuple(label_name(x) for x in task_labels)
    records: list[Record] = []
    for start in range(0, len(items), chunk):
        part = items[start : start + chunk]
        try:
            scores = backend.classify([(it.premise, it.hypothesis) for it in part])
            check_scores(scores, backend.name, "log-probability")  # whatever the engine
        except NonFiniteScore as err:
            raise err.at(f"item {part[err.index].id!r} of task {task}") from None
        for item, logp in zip(part, scores, strict=True):
            records.append(
                scored_record(item, logp, mapping, names, task, model, k, seed, checkpoint)
            )
        if progress is not None:
            progress(len(part))
    return records
