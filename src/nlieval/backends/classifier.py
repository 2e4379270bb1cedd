"""Fine-tuned sentence-pair classifiers: the model, its checkpoint folder and the backend.

A classifier is any Hugging Face encoder with a linear head on the first token's final
hidden state ("[CLS] s1 [SEP] s2", the tokenizer's own pair encoding). It is trained by
:mod:`nlieval.sci.train` and saved as one folder::

    config.json, model.safetensors      the encoder (``save_pretrained``)
    tokenizer files                     the tokenizer (``save_pretrained``)
    classifier_head.safetensors         the head: ``weight`` (labels x hidden), ``bias``
    nlieval_classifier.json             labels in head order, input mode, training config

The folder is a classifier exactly when it holds ``nlieval_classifier.json``
(:func:`is_classifier_folder`); the encoder part also loads with ``AutoModel``.
:class:`EncoderClassifier` is the :class:`~nlieval.backends.base.ClassifierBackend` over
such a folder; :func:`classify_records` turns its log-probabilities into records on any
task whose label set it can answer. Off-the-shelf Hugging Face sequence classifiers
(an MNLI RoBERTa...) are :class:`nlieval.backends.hf_classifier.HFSequenceClassifier`,
whose records are made the same way.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from ..ground import DataError, atomic_write, check_inside, make_folder, read_json
from ..types import NLI2, NLI3, Item, Label, Record, softmax
from .base import ClassifierBackend, Progress
from .finite import NonFiniteScore, check_scores
from .lora_classifier import LoraPairClassifier, load_lora, save_lora
from .options import HFOptions
from .placement import pick_device

META_FILE = "nlieval_classifier.json"
HEAD_FILE = "classifier_head.safetensors"
FORMAT = "nlieval-pair-classifier"
FORMAT_VERSION = 1

#: The heads a classifier folder may hold: a sentence-pair head (an item read as premise
#: and hypothesis) or a multiple-choice head (one score per choice of an item, the
#: choices compared by a softmax: alpha-NLI's hypotheses).
PAIR_HEAD = "pair"
CHOICE_HEAD = "multiple-choice"


def head_for(pairs: bool) -> str:
    """The head that reads items of this shape (:attr:`nlieval.data.Dataset.pairs`): the
    one place that chooses it, for ``nlieval train`` and every check of a folder.

    >>> head_for(True), head_for(False)
    ('pair', 'multiple-choice')
    """
    return PAIR_HEAD if pairs else CHOICE_HEAD


# Encoders whose summary token is the last one (XLNet puts <cls> at the end, pads left).
_LAST_TOKEN_TYPES = frozenset({"xlnet"})


class ClassifierError(ValueError):
    """A classifier folder or label set that cannot be used as asked (the message says why)."""


# --------------------------------------------------------------------------- metadata


@dataclass(frozen=True)
class ClassifierMeta:
    """What a checkpoint needs besides its weights: the head's label order and the input.

    ``pool`` is ``"first"`` (the first token, [CLS]) or ``"last"`` (XLNet's <cls>, a
    decoder's last token); ``separator`` goes before the hypothesis (a decoder reads the
    pair as one text); ``adapter`` describes a LoRA checkpoint (``base_model`` is then
    the model its adapters go on: :mod:`nlieval.backends.lora_classifier`); ``head``
    is :data:`PAIR_HEAD`, or :data:`CHOICE_HEAD` for a transformers multiple-choice model
    saved whole (:mod:`nlieval.backends.multiple_choice`; ``labels`` then name the
    choices in item order); ``extra`` holds the training configuration and scores
    (informative only).

    >>> ClassifierMeta(("entailment", "neutral", "contradiction")).to_dict()["labels"]
    ['entailment', 'neutral', 'contradiction']
    """

    labels: tuple[str, ...]
    hypothesis_only: bool = False
    max_length: int = 128
    pool: str = "first"
    base_model: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    separator: str = ""
    adapter: Mapping[str, Any] | None = None
    head: str = PAIR_HEAD

    def to_dict(self) -> dict[str, Any]:
        return {
            # Written only for another head: a pair folder's description is as it was.
            **({"head": self.head} if self.head != PAIR_HEAD else {}),
            **({"separator": self.separator} if self.separator else {}),
            **({"adapter": dict(self.adapter)} if self.adapter else {}),
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "labels": list(self.labels),
            "hypothesis_only": self.hypothesis_only,
            "max_length": self.max_length,
            "pool": self.pool,
            "base_model": self.base_model,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "<meta>") -> ClassifierMeta:
        if d.get("format") != FORMAT or not d.get("labels"):
            raise ClassifierError(f"{where}: not an nlieval classifier description")
        return cls(
            labels=tuple(str(x) for x in d["labels"]),
            hypothesis_only=bool(d.get("hypothesis_only", False)),
            max_length=int(d.get("max_length", 128)),
            pool=str(d.get("pool", "first")),
            base_model=str(d.get("base_model", "")),
            extra=dict(d.get("extra") or {}),
            separator=str(d.get("separator", "")),
            adapter=dict(d["adapter"]) if isinstance(d.get("adapter"), dict) else None,
            head=_head(d.get("head", PAIR_HEAD), where),
        )


def _head(value: Any, where: str) -> str:
    if value not in (PAIR_HEAD, CHOICE_HEAD):
        raise ClassifierError(
            f"{where}: field 'head' must be {PAIR_HEAD!r} or {CHOICE_HEAD!r}, got {value!r}"
        )
    return str(value)


def is_classifier_folder(path: str | Path) -> bool:
    """True when ``path`` is a checkpoint folder saved by :func:`save_classifier`.

    >>> is_classifier_folder("/nonexistent")
    False
    """
    return (Path(path) / META_FILE).is_file()


def folder_head(path: str | Path) -> str:
    """The head of the classifier folder at ``path``, as its description names it: a
    description that cannot be read is taken for a pair head (its load says what is
    wrong with it).

    >>> folder_head("/nonexistent")
    'pair'
    """
    try:
        return read_meta(path).head
    except ClassifierError:
        return PAIR_HEAD


def classifier_checkpoints(path: str | Path) -> list[Path]:
    """The checkpoint folders at ``path``: itself when it is one, else its ``seed*``
    subfolders that are, in seed order. The output folder of ``nlieval train`` is of the
    second kind: a run folder of test records (``config.json``, ``records.jsonl``, ...)
    holding a ``seed{n}`` checkpoint per seed, so ``nlieval run --model <train folder>``
    scores every seed's checkpoint.

    >>> classifier_checkpoints("/nonexistent")
    []
    """
    root = Path(path)
    if is_classifier_folder(root):
        return [root]
    if not root.is_dir():
        return []
    found = [p for p in root.glob("seed*") if is_classifier_folder(p)]

    def seed_of(p: Path) -> tuple[int, str]:
        digits = p.name[4:]
        return (int(digits) if digits.isdigit() else 1 << 30, p.name)

    return sorted(found, key=seed_of)


# --------------------------------------------------------------------------- the model


class PairClassifier(nn.Module):
    """An encoder plus dropout and a linear head on one token's final hidden state.

    >>> from transformers import BertConfig, BertModel
    >>> enc = BertModel(BertConfig(vocab_size=10, hidden_size=32, num_hidden_layers=2,
    ...                            num_attention_heads=2, intermediate_size=64))
    >>> model = PairClassifier(enc, 3)
    >>> model.pool, model(input_ids=torch.tensor([[2, 5, 3], [2, 6, 3]])).shape
    ('first', torch.Size([2, 3]))
    """

    def __init__(self, encoder: Any, num_labels: int, *, pool: str | None = None) -> None:
        super().__init__()
        cfg = encoder.config
        self.encoder: Any = encoder
        self.pool = pool or default_pool(encoder)
        # The encoder's own dropout rate, the usual choice for the classification head.
        rate = next(
            (
                float(v)
                for v in (
                    getattr(cfg, name, None)
                    for name in ("hidden_dropout_prob", "dropout", "hidden_dropout")
                )
                if isinstance(v, (int, float))
            ),
            0.1,
        )
        self.dropout = nn.Dropout(rate)
        self.head = nn.Linear(int(cfg.hidden_size), num_labels)
        self.reset_head()

    def reset_head(self) -> None:
        """Fresh head weights (normal with the encoder's initializer range, zero bias);
        draws from torch's global generator, so seed it first."""
        std = float(getattr(self.encoder.config, "initializer_range", 0.02) or 0.02)
        nn.init.normal_(self.head.weight, mean=0.0, std=std)
        nn.init.zeros_(self.head.bias)

    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(**inputs, return_dict=True).last_hidden_state
        vec = hidden[:, 0] if self.pool == "first" else hidden[:, -1]
        logits: torch.Tensor = self.head(self.dropout(vec))
        return logits


#: What a checkpoint folder holds: an encoder with a head, or a decoder with LoRA adapters.
PairModel = PairClassifier | LoraPairClassifier


def default_pool(encoder: nn.Module) -> str:
    """``"last"`` for encoders whose summary token ends the input (XLNet), else ``"first"``."""
    return "last" if getattr(encoder.config, "model_type", "") in _LAST_TOKEN_TYPES else "first"


def encode_pairs(
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    *,
    max_length: int,
    hypothesis_only: bool = False,
    separator: str = "",
) -> Any:
    """Padded tensors for a batch: the tokenizer's pair encoding (``separator`` put before
    each hypothesis), or the second sentence alone for a hypothesis-only model. Long pairs
    are cut, the longer sentence first.

    >>> from transformers import AutoTokenizer
    >>> tok = AutoTokenizer.from_pretrained(tiny_lm)
    >>> premise, hypothesis = "A man is playing a guitar on stage. " * 3, "A person makes music."
    >>> hyp = tok(hypothesis)["input_ids"]  # 7 tokens, the premise some 30
    >>> enc = encode_pairs(tok, [(premise, hypothesis), ("A man sleeps.", "He rests.")],
    ...                    max_length=16)
    >>> enc["input_ids"].shape, enc["input_ids"][0, -len(hyp):].tolist() == hyp  # premise cut
    (torch.Size([2, 16]), True)
    >>> encode_pairs(tok, [("A man sleeps.", "A person makes music.")], max_length=16,
    ...              hypothesis_only=True)["input_ids"][0].tolist() == hyp
    True
    """
    hyps = [separator + h for _, h in pairs] if not hypothesis_only else [h for _, h in pairs]
    if hypothesis_only:
        return tokenizer(
            hyps, truncation=True, max_length=max_length, padding=True, return_tensors="pt"
        )
    return tokenizer(
        [p for p, _ in pairs],
        hyps,
        truncation="longest_first",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


# --------------------------------------------------------------------------- checkpoints


def save_classifier(
    model: PairModel, tokenizer: Any, meta: ClassifierMeta, folder: str | Path
) -> Path:
    """Write a checkpoint folder (replacing any old one only once the new one is complete).

    >>> from transformers import AutoModel, AutoTokenizer
    >>> model = PairClassifier(AutoModel.from_pretrained(tiny_lm), 3)  # a random head
    >>> meta = ClassifierMeta(("entailment", "neutral", "contradiction"))
    >>> folder = save_classifier(model, AutoTokenizer.from_pretrained(tiny_lm), meta,
    ...                          Path(run_dir) / "seed0")
    >>> is_classifier_folder(folder), [p.name for p in Path(run_dir).iterdir()]  # no temp left
    (True, ['seed0'])
    """
    from safetensors.torch import save_file

    if meta.head == CHOICE_HEAD:
        outputs = len(meta.labels)  # one score per choice, whatever their number
    elif isinstance(model, LoraPairClassifier):
        outputs = model.num_labels
    else:
        outputs = model.head.out_features
    if len(meta.labels) != outputs:
        raise ClassifierError(f"{len(meta.labels)} labels for a head with {outputs} outputs")
    folder = Path(folder)
    make_folder(folder.parent)
    # The checkpoint replaces ``folder`` whole: a link there is refused, never removed or
    # written through (its target is not the run's).
    check_inside(folder, folder.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        tokenizer.save_pretrained(tmp)
        if meta.head == CHOICE_HEAD:
            cast(Any, model).save_pretrained(tmp)  # the whole model: it loads as it is, anywhere
        elif isinstance(model, LoraPairClassifier):
            save_lora(model, tmp)  # adapters and head; the base model is named in meta
        else:
            model.encoder.save_pretrained(tmp)
            head = {k: v.detach().cpu().contiguous() for k, v in model.head.state_dict().items()}
            save_file(head, str(tmp / HEAD_FILE))
        atomic_write(tmp / META_FILE, json.dumps(meta.to_dict(), indent=2) + "\n", root=tmp)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return folder


def read_meta(folder: str | Path) -> ClassifierMeta:
    """The :class:`ClassifierMeta` of a checkpoint folder."""
    path = Path(folder) / META_FILE
    if not path.is_file():
        raise ClassifierError(f"{folder} is not a classifier folder (no {META_FILE})")
    try:
        raw = read_json(path)
    except DataError as err:
        raise ClassifierError(f"cannot read: {err}") from None
    return ClassifierMeta.from_dict(raw, str(path))


def head_file(folder: str | Path) -> Path:
    """The head file of a classifier folder, refused in one line when it is not there
    (the head would otherwise be drawn at random)."""
    path = Path(folder) / HEAD_FILE
    if not path.is_file():
        raise ClassifierError(f"{path}: missing; the classifier's head is not in its folder")
    return path


def load_head(model: PairClassifier, folder: str | Path) -> None:
    """Put the saved head of ``folder`` into ``model`` (shapes must match)."""
    from safetensors.torch import load_file

    path = head_file(folder)
    try:
        state = load_file(str(path))
    except (OSError, ValueError) as err:  # safetensors' own error for a damaged file
        raise ClassifierError(f"{path}: cannot read the head: {err}") from None
    want = model.head.state_dict()
    missing = sorted(set(want) - set(state))
    if missing:
        raise ClassifierError(f"{path}: no {', '.join(missing)} of the head")
    for key, tensor in want.items():
        if tuple(state[key].shape) != tuple(tensor.shape):
            # Its first size is the number of outputs; torch's own report is many lines.
            raise ClassifierError(
                f"{path}: the head has {state[key].shape[0]} outputs, {META_FILE} names "
                f"{tensor.shape[0]} labels (or the head is of another encoder: {key} "
                f"{list(state[key].shape)}, the model {list(tensor.shape)})"
            )
    try:
        model.head.load_state_dict(state)
    except RuntimeError as err:
        raise ClassifierError(f"{folder}: head does not fit this model: {err}") from None


def load_classifier(
    folder: str | Path, device: str = "cpu"
) -> tuple[PairModel, Any, ClassifierMeta]:
    """Model (in eval mode, on ``device``), tokenizer and metadata of a checkpoint folder.

    >>> from transformers import AutoModel, AutoTokenizer
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


# --------------------------------------------------------------------------- the backend


#: Sentence pairs per forward pass of a classifier when the batch size is ``auto``.
AUTO_BATCH = 32


class EncoderClassifier:
    """A trained pair classifier as a :class:`~nlieval.backends.base.ClassifierBackend`.

    ``labels`` are label values in the head's order; :meth:`classify` returns
    log-probabilities over them. Results do not depend on ``batch_size`` (beyond float
    rounding, well under 1e-5).

    >>> from transformers import AutoModel, AutoTokenizer
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


def label_mapping(
    model_labels: Sequence[Label | str], task_labels: Sequence[Label | str]
) -> list[tuple[int, ...]]:
    """Per task label, the model labels whose probabilities add up to it.

    Each task label takes the model outputs of its name (one, or several when a label map
    gives several outputs one name); on a 2-way entailment / non-entailment task (HANS) a
    3-way NLI model's neutral and contradiction both count as non-entailment, so
    p(non-entailment) = p(neutral) + p(contradiction). Every model output must go to a
    task label and every task label take one: else :class:`ClassifierError` names the
    labels left over.

    >>> label_mapping(["entailment", "neutral", "contradiction"], NLI2)
    [(0,), (1, 2)]
    >>> label_mapping(["contradiction", "entailment", "neutral"], NLI3)
    [(1,), (2,), (0,)]
    >>> label_mapping(["entailment", "non-entailment"], NLI3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.backends.classifier.ClassifierError: ... no model label for neutral, contradiction; ...
    """
    model = [label_name(x) for x in model_labels]
    task = [label_name(x) for x in task_labels]
    groups = [tuple(i for i, m in enumerate(model) if m == t) for t in task]
    nli3 = {x.value for x in NLI3}
    non_ent = Label.NON_ENTAILMENT.value
    if set(task) == {x.value for x in NLI2} and non_ent not in model and nli3 <= set(model):
        merged = tuple(i for i, m in enumerate(model) if m in nli3 - {Label.ENTAILMENT.value})
        groups[task.index(non_ent)] = merged
    used = {i for g in groups for i in g}
    missing = [t for t, g in zip(task, groups, strict=True) if not g]
    extra = list(dict.fromkeys(m for i, m in enumerate(model) if i not in used))
    if missing or extra:
        why = "; ".join(
            part
            for part in (
                f"no model label for {', '.join(missing)}" if missing else "",
                f"no task label for the model's {', '.join(extra)}" if extra else "",
            )
            if part
        )
        raise ClassifierError(
            f"a classifier trained on ({', '.join(model)}) cannot answer a task labelled "
            f"({', '.join(task)}): {why}; only the same label set, or a 3-way NLI model on "
            "a 2-way entailment/non-entailment task, can be mapped"
        )
    return groups


def label_name(x: Label | str) -> str:
    """A task label as records name it.

    >>> label_name(Label.ENTAILMENT), label_name("1")
    ('entailment', '1')
    """
    return x.value if isinstance(x, Label) else str(x)


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


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


def scored_record(
    item: Item,
    logp: Sequence[float],
    mapping: Sequence[tuple[int, ...]],
    names: tuple[str, ...],
    task: str,
    model: str,
    k: int,
    seed: int,
    checkpoint: str | None,
) -> Record:
    """The record of one item: each task label's log-likelihood the log-sum-exp of the
    model's log-probabilities of its group in ``mapping`` (:func:`label_mapping`; a pair
    classifier's labels, or one choice each for a multiple-choice head), ``probs`` their
    softmax, ``pred`` the most probable (the first on a tie)."""
    loglik = tuple(_logsumexp([logp[i] for i in group]) for group in mapping)
    best = max(range(len(names)), key=lambda i: (loglik[i], -i))
    return Record(
        task=task,
        item_id=item.id,
        model=model,
        k=k,
        seed=seed,
        labels=names,
        loglik=loglik,
        probs=softmax(loglik),
        pred=names[best],
        gold=item.label.value if item.label is not None else None,
        checkpoint=checkpoint,
        meta=dict(item.meta),
    )
