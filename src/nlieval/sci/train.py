"""Fine-tuning Hugging Face encoders as sentence-pair classifiers (``nlieval train``).

Per seed: a pretrained encoder plus a freshly initialised linear head on the first token
("[CLS] s1 [SEP] s2", or s2 alone in hypothesis-only mode), cross-entropy, Adam or AdamW
(no weight decay on biases and LayerNorm weights), up to ``epochs`` epochs with early
stopping on the dev macro F1 (``patience`` epochs without a strict improvement). The best
epoch is saved to ``out/seed{n}/`` (see :mod:`nlieval.classifiers` for the layout)
and scored on the test split. ``grad_accum`` micro-batches make one optimizer step, and
``precision="bf16"`` runs the training forward passes under bfloat16 autocast
(:func:`~nlieval.sci.train_loop.fit`).

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

This module runs the seeds into the run folder (:func:`train`); the parts it puts
together live beside it and their public names are importable from here too:
:mod:`~nlieval.sci.train_config` (the settings), :mod:`~nlieval.sci.train_data` (the
train, dev and test parts), :mod:`~nlieval.sci.train_model` (encoder, head, optimizer)
and :mod:`~nlieval.sci.train_loop` (the epochs of one seed).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from ..backends import ModelError, resolve
from ..data import items_fingerprint
from ..ground import DataError, check_inside, make_folder, read_json
from ..metrics import UNDEFINED_NOTE, mean_std, point_metrics
from ..runs import Results, RunError, RunFolder, Step, atomic_write, execute, finalize
from ..types import Item, Record
from .train_config import (
    ENCODER_ALIASES,
    OPTIMIZERS,
    TrainConfig,
    TrainError,
    check_encoder,
    resolve_encoder,
)
from .train_data import Part, TrainData, load_data, stratified_split
from .train_loop import EpochCallback, evaluate, fit
from .train_model import (
    build_model,
    encoder_layers,
    freeze_below_top,
    make_optimizer,
    no_decay_names,
    seed_checkpoint,
)

__all__ = [
    "encoder_fingerprints",
    "ENCODER_ALIASES",
    "LEGACY_SEED_FILES",
    "OPTIMIZERS",
    "SEED_RESULTS",
    "EpochCallback",
    "Part",
    "TrainConfig",
    "TrainData",
    "TrainError",
    "TrainResult",
    "build_model",
    "check_encoder",
    "encoder_layers",
    "evaluate",
    "fit",
    "format_results",
    "freeze_below_top",
    "is_legacy_folder",
    "legacy_message",
    "load_data",
    "make_optimizer",
    "no_decay_names",
    "resolve_encoder",
    "seed_checkpoint",
    "stratified_split",
    "summarize_seeds",
    "train",
    "train_seed",
]

log = logging.getLogger(__name__)

#: A seed's own results (dev curve, best epoch, test scores) in ``out/seed{n}/``.
SEED_RESULTS = "train.json"
#: Files of a seed folder written by versions before train folders were run folders.
LEGACY_SEED_FILES = ("results.json", "test_records.jsonl")


def _write_json(path: Path, payload: Any, root: Path) -> None:
    make_folder(path.parent, root=root)
    atomic_write(path, json.dumps(payload, indent=2, allow_nan=True) + "\n", root=root)


def _mean_std(values: Sequence[float]) -> dict[str, float]:
    mean, std = mean_std(values)
    return {"mean": mean, "std": std}


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train` returns: the folder's ``results.json`` (``results``), each
    seed's ``train.json`` in the order of the config's seeds (``seeds``) and their mean
    and std (``summary``, :func:`summarize_seeds`)."""

    results: Results
    seeds: tuple[Mapping[str, Any], ...]
    summary: Mapping[str, Any]

    @classmethod
    def of(cls, results: Results, per_seed: Sequence[Mapping[str, Any]]) -> TrainResult:
        """The result of these results and seeds, their summary computed."""
        return cls(results, tuple(per_seed), summarize_seeds(per_seed))


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
    # What makes a finished seed reusable: the settings that must match to resume. A
    # setting added later is left out at the value older seeds were trained with, so
    # that their saved keys still match.
    d = config.to_dict()
    return {
        name: d[name]
        for name in config.IDENTITY
        if name not in config.ADDED or d[name] != config.ADDED[name]
    }


def _seed_trained(out: Path, seed: int, key: Mapping[str, Any]) -> dict[str, Any] | None:
    """The saved ``train.json`` of a seed whose training finished with these settings
    (its checkpoint is complete; its test records may still be missing), else None."""
    path = out / f"seed{seed}" / SEED_RESULTS
    if not path.is_file():
        return None
    try:
        done = read_json(path)
    except DataError:
        return None  # unreadable: the seed is trained again
    return done if isinstance(done, dict) and done.get("run_key") == key else None


def _clear_seed(run: RunFolder[Record], seed: int) -> None:
    """Remove what an earlier, unfinished attempt at ``seed`` left: its checkpoint folder,
    the temporary folders of a save cut short, and its records."""
    leftovers = [run.path / f"seed{seed}", *run.path.glob(f".seed{seed}.*")]
    for leftover in leftovers:
        if leftover.is_symlink():
            # Removing it would delete the link's target tree, which is not the run's.
            raise RunError(
                f"{leftover} is a symbolic link (to {os.readlink(leftover)}): a seed folder "
                "of a run is its own",
                advice="remove the link, or choose another --out",
            )
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
        atomic_write(run.records_path, kept, root=run.path)
        run.done_keys()


def _record_key(name: str, task: str, seed: int, item: Item) -> Hashable:
    return Record.key_of(name, None, task, 0, seed, item.id)


def _records_name(run: RunFolder[Record]) -> str:
    # The model name of the records: the one the folder's records already carry (so a
    # renamed folder keeps one name), else the folder's name.
    first = next(run.iter_records(), None)
    return first.model if first is not None else run.path.resolve().name


def train_seed(
    config: TrainConfig,
    data: TrainData,
    seed: int,
    run: RunFolder[Record],
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
        config, data.labels, seed, init_from=start, fresh_head=config.fresh_head, head=data.head
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
    _write_json(folder / SEED_RESULTS, result, run.path)
    return result, model, tokenizer


def train(
    config: TrainConfig,
    *,
    init_from: str | Path | None = None,
    fresh_head: bool | None = None,
    on_epoch: EpochCallback | None = None,
    progress: bool = True,
    resume: bool = True,
) -> TrainResult:
    """Train every seed of ``config`` into the run folder ``config.out`` (see the module
    docstring) and return a :class:`TrainResult`: its ``results.json``, each seed's
    ``train.json`` and their mean and std.

    The test records go through the one resumable loop of every command
    (:func:`nlieval.runs.run_steps`): one step per seed, whose backend is the seed's
    classifier, trained when the step starts (or loaded from its checkpoint when its
    training finished before). With ``resume``, trained seeds are not trained again and
    only their missing test records are scored; a seed cut short in training starts again
    from scratch. The folder's settings must match (else :class:`~nlieval.runs.RunError`).
    ``resume=False`` discards the folder's records and trains every seed again.
    ``init_from`` and ``fresh_head``, when given, replace the config's.

    Two seeds of a tiny random encoder on the packaged ``smoke`` task, then the same
    command again, which finds both seeds trained and scored:

    >>> enc = Path(tiny_encoder)  # a tiny random BERT: every word is [UNK] to it
    >>> out = Path(run_dir) / "train"
    >>> cfg = TrainConfig(str(enc), "smoke", epochs=1, seeds=(0, 1), device="cpu", out=str(out))
    >>> results = train(cfg, progress=False)
    >>> [r["seed"] for r in results.seeds], sorted(results.summary)
    ([0, 1], ['dev_macro_f1', 'test_accuracy', 'test_macro_f1', 'test_per_class_f1'])
    >>> print(*sorted(p.name for p in out.iterdir() if not p.name.startswith(".")))
    config.json provenance.jsonl records.jsonl results.json seed0 seed1 summary.md timing.json
    >>> train(cfg, progress=False).seeds == results.seeds
    True
    """
    from ..backends import (
        ChoiceBackend,
        ClassifierBackend,
        HFOptions,
        backend_from_model,
        item_records,
    )
    from ..classifiers import read_meta

    if init_from is not None:
        config = replace(config, init_from=str(init_from))
    if fresh_head is not None:
        config = replace(config, fresh_head=fresh_head)
    if config.init_from is None and config.lora is None:
        check_encoder(resolve_encoder(config.model))
    data = load_data(config)  # data errors surface before anything is written
    run = RunFolder(config.out)
    for seed in config.seeds:
        # A seed folder is the run's own: one that is a link (a checkpoint kept elsewhere)
        # is neither reused as this run's seed nor written through.
        check_inside(run.path / f"seed{seed}", run.path)
    if resume and is_legacy_folder(run.path):
        raise RunError(legacy_message(run.path))
    key = _run_key(config)
    trained: dict[int, dict[str, Any]] = {}
    test = data.test
    name = ""

    def plan_steps(run: RunFolder[Record]) -> list[Step[Item]]:
        nonlocal name
        if not resume:
            for legacy in LEGACY_SEED_FILES:
                for old in run.path.glob(f"seed*/{legacy}"):
                    check_inside(old.parent, run.path)  # never removed through a link
                    old.unlink()
        for seed in config.seeds:
            done = _seed_trained(run.path, seed, key) if resume else None
            if done is not None:
                log.info("seed %d already trained with these settings; reusing it", seed)
                trained[seed] = done
            else:
                _clear_seed(run, seed)  # its old records must not count as done below
        if test is None:
            return []
        name = _records_name(run)
        return [
            Step(
                f"|{test.task}|0|{seed}",
                f"{test.task} seed {seed}",
                test.items,
                group=seed,
                done_key=functools.partial(_record_key, name, test.task, seed),
            )
            for seed in config.seeds
        ]

    def make_backend(seed: Hashable) -> ClassifierBackend | ChoiceBackend:
        assert isinstance(seed, int)
        folder = run.path / f"seed{seed}"
        bs = config.eval_batch_size
        if seed in trained:
            # The seed's checkpoint as `run --model` loads it: by the head it holds.
            saved = resolve(str(folder), hf=HFOptions(device=config.device), batch_size=bs)
            return cast(ClassifierBackend | ChoiceBackend, saved.scorer())
        trained[seed], model, tokenizer = train_seed(
            config, data, seed, run, on_epoch=on_epoch, progress=progress
        )
        meta = read_meta(folder)
        return backend_from_model(model, tokenizer, meta, batch_size=bs, name=name)

    def work(
        backend: ClassifierBackend | ChoiceBackend,
        step: Step[Item],
        chunk: Sequence[Item],
        advance: Callable[[int], Any],
    ) -> list[Record]:
        seed = step.group
        assert isinstance(seed, int) and test is not None
        records = item_records(backend, chunk, test.labels, task=test.task, model=name, seed=seed)
        advance(len(chunk))
        return records

    # The items each part was made of: an edited data file is refused, not resumed.
    parts = {"train": data.train, "dev": data.dev, "test": data.test}
    prints = {f"data {k}": items_fingerprint(p.items) for k, p in parts.items() if p is not None}
    prints |= encoder_fingerprints(config)
    elapsed = execute(
        run,
        config,
        plan_steps,
        make_backend,
        work,
        overwrite=not resume,
        progress=progress,
        fingerprints=prints,
        # A trained seed was made from these fingerprints even when no test record is
        # there yet (--no-test): another base or data is refused, not trained beside it.
        kept=any(run.path.glob(f"seed*/{SEED_RESULTS}")),
    )
    if test is None:
        for seed in config.seeds:
            if seed not in trained:
                started = time.time()
                trained[seed] = train_seed(
                    config, data, seed, run, on_epoch=on_epoch, progress=progress
                )[0]
                elapsed = (elapsed or 0.0) + time.time() - started
        # Seeds trained now (no test records): this invocation made part of the folder.
        made = "train" if elapsed is not None else None
        results = finalize(run, config.to_dict(), elapsed, data_info={}, invocation=made)
        return TrainResult.of(results, [trained[seed] for seed in config.seeds])
    # A seed's test scores are those of all its records in the folder, whichever
    # invocation scored them; they complete its train.json.
    by_seed: dict[int, list[Record]] = {}
    for record in run.iter_records():
        by_seed.setdefault(record.seed, []).append(record)
    for seed in config.seeds:
        result = trained[seed]
        result["test"] = {"task": test.task, "split": test.split, **point_metrics(by_seed[seed])}
        _write_json(run.path / f"seed{seed}" / SEED_RESULTS, result, run.path)
    results = finalize(
        run,
        config.to_dict(),
        elapsed,
        data_info={test.task: test.data_info()},
    )
    return TrainResult.of(results, [trained[seed] for seed in config.seeds])


def format_results(results: TrainResult) -> str:
    """A plain-text table: one line per seed, then mean +- std.

    >>> print(format_results(TrainResult(Results(), (), {"dev_macro_f1":
    ...       {"mean": 0.5, "std": 0.0}})).splitlines()[0])
    seed  epochs  best  dev F1  test acc  test F1
    """
    lines = []
    sources = ((results.seeds or [{}])[0].get("data") or {}).get("train", {}).get("sources")
    if sources:
        lines.append(
            "training set: " + " + ".join(f"{n} {name}" for name, n in sources.items())
            + f" = {sum(sources.values())} items"
        )  # fmt: skip
    lines.append("seed  epochs  best  dev F1  test acc  test F1")

    def num(x: float) -> str:
        # n/a: macro F1 of a part holding one gold class (undefined, NaN).
        return "n/a" if math.isnan(x) else f"{x:.4f}"

    for r in results.seeds:
        t = r.get("test") or {}
        acc = num(t["accuracy"]) if t else "-"
        f1 = num(t["macro_f1"]) if t else "-"
        lines.append(
            f"{r['seed']:>4}  {r['epochs_run']:>6}  {r['best_epoch']:>4}  "
            f"{num(r['best_dev_macro_f1']):>6}  {acc:>8}  {f1:>7}"
        )
    s = results.summary
    parts = [f"dev macro F1 {num(s['dev_macro_f1']['mean'])} +- {num(s['dev_macro_f1']['std'])}"]
    for name in ("test_accuracy", "test_macro_f1"):
        if name in s:
            label = name.replace("_", " ").replace("test macro f1", "test macro F1")
            parts.append(f"{label} {num(s[name]['mean'])} +- {num(s[name]['std'])}")
    lines.append("mean over seeds: " + "; ".join(parts))
    if any("n/a" in line for line in lines):
        lines.append(UNDEFINED_NOTE)
    return "\n".join(lines)


def encoder_fingerprints(config: TrainConfig) -> dict[str, str]:
    """The fingerprints of the encoder a run starts from (``model``) and of ``init_from``,
    for the run folder's identity: other weights under the same name are refused on resume
    (see :meth:`nlieval.backends.ResolvedModel.fingerprints`; a folder of ``nlieval train``
    seeds by seed: ``init_from seed0``). A hub id whose commit cannot
    be found yet is left out: its load fails with its own message.

    >>> list(encoder_fingerprints(TrainConfig(tiny_encoder, "smoke")))
    ['model']
    """
    out: dict[str, str] = {}
    for field, name in (("model", config.model), ("init_from", config.init_from)):
        if name is None:
            continue
        resolved = resolve_encoder(name)
        try:
            prints = resolve(resolved).fingerprints()
        except ModelError:
            if Path(resolved).exists():
                raise
            continue  # a hub name such as bert-base-uncased: no local files to hash
        for key, value in prints.items():
            out[key.replace("model", field, 1)] = value
    return out
