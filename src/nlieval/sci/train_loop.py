"""The training loop of one seed: epochs over shuffled batches, the dev score after
each, early stopping on the dev macro F1, the best epoch saved as a classifier folder
(:func:`fit`), and the scores of a model in memory (:func:`evaluate`).

Two epochs of a tiny random encoder on the packaged ``smoke`` task; the saved best epoch
scores the dev part as it did during training:

>>> enc = Path(tiny_encoder)  # a tiny random BERT: every word is [UNK] to it
>>> from nlieval.classifiers import read_meta
>>> from nlieval.sci.train_data import load_data
>>> from nlieval.sci.train_model import build_model
>>> cfg = TrainConfig(str(enc), "smoke", epochs=2, seeds=(0,), device="cpu")
>>> data = load_data(cfg)
>>> model, tok = build_model(cfg, data.labels, 0)
>>> result = fit(model, tok, data, cfg, 0, Path(run_dir) / "seed0", progress=False)
>>> result["epochs_run"], [row["epoch"] for row in result["history"]]
(2, [1, 2])
>>> metrics, records = evaluate(model, tok, read_meta(Path(run_dir) / "seed0"), data.dev)
>>> metrics["macro_f1"] == result["best_dev_macro_f1"], len(records)
(True, 3)
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..backends import NonFiniteScore
from .train_config import TrainConfig, TrainError
from .train_data import Part, TrainData
from .train_model import batch_logits, make_optimizer

log = logging.getLogger(__name__)

#: Called after each epoch with its row of the dev curve (seed, epoch, loss, dev scores).
EpochCallback = Callable[[dict[str, Any]], None]


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
    (The module's example scores a saved best epoch with it.)
    """
    from ..backends import backend_from_model, item_records
    from ..metrics import point_metrics

    backend = backend_from_model(model, tokenizer, meta, batch_size=batch_size, name=name)
    records = item_records(
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
    where: str = "",
) -> float:
    """The mean training loss of one epoch; a loss that is not a finite number (the
    run diverged: a learning rate far too high) is a :class:`TrainError` naming the
    step, before the optimizer takes it.

    One optimizer step per ``config.grad_accum`` micro-batches of ``config.batch_size``
    items: their gradients add up, each micro-batch's mean loss weighted by its share of
    the step's items (``1 / grad_accum`` when they are all full), so a step is the step
    of one batch of ``batch_size * grad_accum`` items. With ``precision`` bf16 the
    forward pass runs under :func:`torch.autocast` (bfloat16 matrix products, float32
    weights, gradients and optimizer state)."""
    import torch
    import torch.nn.functional as F

    items = data.train.items
    targets = torch.tensor([data.labels.index(it.label.value) for it in items if it.label])
    device = next(model.parameters()).device
    model.train()
    total = 0.0
    order = torch.randperm(len(items), generator=generator).tolist()
    step_size = config.batch_size * config.grad_accum
    micro = 0
    for step, start in enumerate(range(0, len(order), step_size), 1):
        group = order[start : start + step_size]
        optimizer.zero_grad(set_to_none=True)
        for first in range(0, len(group), config.batch_size):
            idx = group[first : first + config.batch_size]
            micro += 1
            batch = [items[i] for i in idx]
            with _autocast(config, device):
                logits = batch_logits(
                    model, tokenizer, batch, config, data.head, _separator(config)
                )
            loss = F.cross_entropy(logits.float(), targets[idx].to(device))
            value = float(loss.item())
            if not math.isfinite(value):
                at = f"step {step}" + (f" (micro-batch {micro})" if config.grad_accum > 1 else "")
                raise TrainError(
                    f"{where}{at}: the training loss is {value} (the run diverged); "
                    f"train again with a lower --lr (now {config.lr:g})"
                )
            # torch leaves Tensor.backward unannotated; called without arguments it
            # returns None. Unscaled when the step is one micro-batch: the old step, bit
            # for bit.
            scaled = loss if len(idx) == len(group) else loss * (len(idx) / len(group))
            backward: Callable[[], None] = scaled.backward
            backward()
            total += value * len(idx)
            bar.update(1)
            bar.set_postfix(loss=f"{value:.4f}")
        if config.max_grad_norm is not None:
            trainable = [p for p in model.parameters() if p.requires_grad]
            torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
        optimizer.step()
    return total / len(items)


def _autocast(config: TrainConfig, device: Any) -> Any:
    """The forward pass's precision: bfloat16 autocast, or nothing changed (fp32)."""
    import contextlib

    import torch

    if config.precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def _separator(config: TrainConfig) -> str:
    from ..classifiers import SEPARATOR

    return SEPARATOR if config.lora is not None else ""


def _meta_for(model: Any, data: TrainData, config: TrainConfig, extra: Mapping[str, Any]) -> Any:
    from ..classifiers import ClassifierMeta

    lora = config.lora_settings
    # A LoRA model knows its base by absolute path and fingerprint (build_lora): the
    # checkpoint is then used on those weights only, from any directory.
    base = dict(getattr(model, "base", None) or {})
    return ClassifierMeta(
        labels=data.labels,
        hypothesis_only=config.hypothesis_only,
        max_length=config.max_length,
        pool=getattr(model, "pool", "first"),  # a multiple-choice model has its own
        base_model=base.get("base_path", config.model),
        extra=dict(extra),
        separator=_separator(config),
        adapter=None if lora is None else {"method": "lora", **lora.to_dict(), **base},
        head=data.head,
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
    where = f"seed {seed} epoch {epoch} "
    with tqdm(total=n_batches, desc=desc, disable=not progress, leave=False) as bar:
        loss = _train_epoch(model, tokenizer, data, config, optimizer, generator, bar, where)
    meta = _meta_for(model, data, config, {})
    try:
        dev, _ = evaluate(model, tokenizer, meta, data.dev, batch_size=config.eval_batch_size)
    except NonFiniteScore as err:
        # A finite last loss, and yet weights that overflow: diverged all the same.
        raise TrainError(
            f"{where}(after its last step): the model computes a non-finite score for the "
            f"dev {err.where} (the run diverged); train again with a lower --lr (now "
            f"{config.lr:g})"
        ) from None
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
    (See the module's example.)

    The best epoch is that of the highest dev macro F1; where the dev part holds gold
    items of one class only, its macro F1 is undefined (NaN, every epoch: the gold does
    not change), so the dev accuracy selects instead, with a warning that says why. The
    first epoch is always kept until a later one scores strictly higher, so a seed
    always ends with a saved epoch.
    """
    import torch
    from tqdm.auto import tqdm

    from ..backends import HFOptions
    from ..classifiers import save_classifier

    model.to(torch.device(HFOptions(device=config.device).pick_device()))
    optimizer = make_optimizer(model, config)
    generator = torch.Generator().manual_seed(seed)
    best: dict[str, Any] = {"epoch": 0, "dev_macro_f1": -1.0, "dev_accuracy": -1.0}
    best_state: dict[str, Any] = {}
    history: list[dict[str, Any]] = []
    selector = "macro_f1"
    for epoch in range(1, config.epochs + 1):
        started = time.perf_counter()
        args = (model, tokenizer, data, config, optimizer, generator, epoch, seed, progress)
        loss, dev = _epoch(*args)
        if selector == "macro_f1" and math.isnan(dev["macro_f1"]):
            selector = "accuracy"
            log.warning(
                "seed %d: the dev part %s %s holds gold items of one class only, so its "
                "macro F1 is undefined (n/a); the best epoch is chosen by dev accuracy",
                seed,
                data.dev.task,
                data.dev.split,
            )
        # Strict improvement only: a tie keeps the earlier (less trained) epoch. The
        # first epoch stands until beaten (a NaN score never compares as higher).
        improved = not best_state or dev[selector] > best[f"dev_{selector}"]
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
            _save(save_classifier, model, tokenizer, meta, folder)
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
    if not best_state:  # unreachable with epochs >= 1; never load an empty state
        raise TrainError(f"seed {seed}: no epoch was trained, so none could be saved")
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


def _save(
    save: Callable[..., Any], model: Any, tokenizer: Any, meta: Any, folder: str | Path
) -> None:
    """``save`` (:func:`~nlieval.classifiers.save_classifier`) the best epoch; a write that
    fails (a full disk: an OSError, or safetensors' own error carrying the OS error) is
    one line naming the folder. The checkpoint is replaced only once the new one is
    whole, and a seed without its checkpoint is trained again on resume."""
    import re

    from safetensors import SafetensorError

    from ..ground import FolderError, write_error

    try:
        save(model, tokenizer, meta, folder)
    except OSError as err:
        raise write_error(Path(folder), err, "save the checkpoint") from None
    except SafetensorError as err:
        # safetensors reports an OS error as text: "IoError(Os { code: 28, ... })".
        code = re.search(r"\bcode: (\d+)", str(err))
        if code is None:
            raise FolderError(f"{folder}: cannot save the checkpoint: {err}") from None
        errno_ = int(code.group(1))
        raise write_error(
            Path(folder), OSError(errno_, os.strerror(errno_)), "save the checkpoint"
        ) from None
