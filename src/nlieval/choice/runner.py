"""A whole run: config -> items -> predictions -> records -> metrics -> report."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from .. import data
from ..backends.base import (
    ClassifierBackend,
    LogLikelihoodBackend,
    Progress,
    PromptTooLongError,
)
from ..backends.registry import (
    check_model,
    classifier_labels,
    load_scorer,
    model_fingerprints,
    not_a_sequence_classifier,
)
from ..runs import (
    Draws,
    Results,
    RunFolder,
    Step,
    execute,
    finalize,
    fingerprints_of,
    saved_spelling,
)
from ..types import Item, Record
from .config import RunConfig
from .scoring import SweepPoint, make_sweep_point, score_items

log = logging.getLogger(__name__)

AnyBackend = LogLikelihoodBackend | ClassifierBackend
BackendFactory = Callable[[RunConfig, str | None], AnyBackend]
Planned = list[tuple[data.Dataset, list[SweepPoint], dict[str, Any]]]


def default_backend(config: RunConfig, checkpoint: str | None) -> AnyBackend:
    """The backend for the config's model (or one of its checkpoints), made by the model
    registry (:func:`nlieval.backends.registry.load_scorer`): a model on a server, a
    fine-tuned classifier folder (``nlieval train``), an off-the-shelf sequence
    classifier (its outputs named through ``label_map``) or a causal language model."""
    return load_scorer(
        config.spec,
        hf=config.hf,
        server=config.server,
        batch_size=config.batch_size,
        top_logprobs=config.top_logprobs,
        checkpoint=checkpoint,
        label_map=config.label_names,
    )


def plan(config: RunConfig) -> Planned:
    """Load every task, its few-shot pool and the fixed draws of every sweep point.

    Returns per task: the dataset (cut to ``limit``, or its stratified ``sample``), its
    sweep points, and a report of the data (source, items, dropped counts, pool).
    """
    out = []
    for task, spec in zip(config.tasks, data.get_tasks(config.tasks), strict=True):
        ds = data.load_task(task, config.data_dir, config.split, skip_bad=config.skip_bad)
        items = config.select_items(ds.items)
        pool: Sequence[Item] = ()
        pool_is_test = False
        pool_source = None
        if any(k > 0 for k in config.shots):
            pool_ds, pool_is_test = data.load_pool(
                task, config.data_dir, skip_bad=config.skip_bad, split=config.split
            )
            pool, pool_source = pool_ds.items, f"{pool_ds.source} ({pool_ds.split})"
        points = []
        for k in config.shots:
            # k = 0 has no draw: one seed is enough, the others would repeat it exactly.
            for seed in config.seeds if k > 0 else config.seeds[:1]:
                points.append(
                    make_sweep_point(
                        spec.name,
                        spec.family,
                        ds.labels,
                        k,
                        seed,
                        pool,
                        pool_is_test,
                        config.balanced,
                        config.template or spec.template,
                    )
                )
        # The prompt of the split's first item per sweep point: rendering it here makes a
        # template that fails (or is refused by the sandbox) fail before any model is
        # loaded or anything is written, and its fingerprint is part of the identity.
        first = {
            f"k={p.k} seed={p.seed}": data.text_fingerprint(p.prompt(ds.items[0]).text)
            for p in points
            if ds.items
        }
        info = {
            "source": ds.source,
            "split": ds.split,
            "items": len(items),
            "items_in_split": len(ds.items),
            "dropped": dict(ds.dropped),
            "skipped_bad": ds.skipped_bad,
            "pool": pool_source,
            "pool_is_test_split": pool_is_test,
            # Of the whole split and pool as read (none changes when --limit or --sample
            # grows), and the prompts above.
            "fingerprint": data.items_fingerprint(ds.items),
            "pool_fingerprint": data.items_fingerprint(pool) if pool else None,
            "prompt_fingerprints": first,
        }
        out.append((dataclasses.replace(ds, items=tuple(items)), points, info))
    return out


def run(
    config: RunConfig,
    out_dir: str | Path,
    *,
    backend_factory: BackendFactory = default_backend,
    overwrite: bool = False,
    progress: bool = True,
) -> Results:
    """Run (or resume) an evaluation and write the run folder; returns ``results.json``.

    >>> cfg = RunConfig(tiny_lm, ("smoke",), limit=4)  # the bundled 48-item task
    >>> [m["n"] for m in run(cfg, run_dir, progress=False).metrics]
    [4]
    """
    ours = backend_factory is default_backend
    config = _classifier_config(config, off_the_shelf=ours)
    config = saved_spelling(RunFolder(out_dir), config, overwrite=overwrite)
    if ours and not config.checkpoints:
        # Fail on a wrong model name before the folder is made or any data is read.
        check_model(config.spec, config.hf.revision)
    # Data errors surface before anything is written.
    planned = plan(config)
    if ours:
        _check_labels(config, planned)
    model = config.model
    steps: list[Step[Item]] = []
    for ckpt in config.checkpoints or (None,):
        for ds, points, _ in planned:
            for p in points:
                # By length, so that each chunk (and each batch in it) holds items
                # of similar length: less padding. Results do not depend on order.
                items = sorted(ds.items, key=_length)
                key = "|".join(str(x) for x in (ckpt or "", p.task, p.k, p.seed))
                label = f"{p.task} k={p.k} seed={p.seed}" + (f" {ckpt}" if ckpt else "")
                done_key = functools.partial(_record_key, model, ckpt, p)
                steps.append(Step(key, label, items, group=ckpt, point=p, done_key=done_key))

    sources = {ds.task: ds.source for ds, _, _ in planned}

    def make_backend(ckpt: Hashable) -> AnyBackend:
        return backend_factory(config, ckpt if isinstance(ckpt, str) else None)

    def work(
        backend: AnyBackend, step: Step[Item], chunk: Sequence[Item], progress: Progress
    ) -> list[Record]:
        ckpt = step.group if isinstance(step.group, str) else None
        try:
            return _score(backend, step.point, chunk, model, ckpt, config, progress)
        except PromptTooLongError as err:
            # One line naming the file and the item; the chunks before are in the folder.
            point: SweepPoint = step.point
            (first, n), *more = err.lengths.items()
            also = f" (also too long: {', '.join(chunk[r].id for r, _ in more[:5])})"
            raise data.DataError(
                sources[point.task],
                None,
                None,
                f"item {chunk[first].id!r} of task {point.task} at k={point.k}: a prompt of "
                f"{'at least ' if err.at_least else ''}{n} tokens, longer than the model's "
                f"context window of {err.limit}{also if more else ''}; shorten or remove it, "
                "or use fewer --shots",
            ) from None

    prints = fingerprints_of({ds.task: info for ds, _, info in planned})
    if backend_factory is default_backend:
        # The weights behind the name: other weights under one path never share a table.
        prints |= model_fingerprints(config.spec, config.hf.revision, config.checkpoints)
    folder = RunFolder(out_dir)
    elapsed = execute(
        folder,
        config,
        steps,
        make_backend,
        work,
        overwrite=overwrite,
        progress=progress,
        # Chunks of seconds of work: full batches on a GPU, little lost to a kill.
        timed_chunks=True,
        fingerprints=prints,
    )
    data_info, draws = _data_report(planned)
    # The folder's config (grown over invocations) describes all its records.
    return finalize(folder, folder.read_config(), elapsed, data_info=data_info, draws=draws)


def _data_report(planned: Planned) -> tuple[dict[str, dict[str, Any]], Draws]:
    """What ``results.json`` keeps of a plan: the data report per task and the few-shot
    ids per task, k and seed."""
    info = {ds.task: dict(task_info) for ds, _, task_info in planned}
    draws: dict[str, dict[int, dict[int, Sequence[str]]]] = {}
    for ds, points, _ in planned:
        for p in points:
            draws.setdefault(ds.task, {}).setdefault(p.k, {})[p.seed] = p.shot_ids
    return info, draws


def _record_key(model: str, ckpt: str | None, p: SweepPoint, item: Item) -> Hashable:
    return Record.key_of(model, ckpt, p.task, p.k, p.seed, item.id)


def _length(item: Item) -> int:
    return len(item.premise) + len(item.hypothesis) + sum(len(c) for c in item.choices)


def _score(
    backend: AnyBackend,
    point: SweepPoint,
    items: Sequence[Item],
    model: str,
    checkpoint: str | None,
    config: RunConfig,
    progress: Progress,
) -> list[Record]:
    if isinstance(backend, ClassifierBackend):
        from ..backends.classifier import classify_records

        return classify_records(
            backend,
            items,
            point.labels,
            task=point.task,
            model=model,
            k=point.k,
            seed=point.seed,
            checkpoint=checkpoint,
            progress=progress,
        )
    return score_items(
        backend,
        point,
        items,
        model=model,
        checkpoint=checkpoint,
        save_prompt=config.save_prompts,
        progress=progress,
    )


def _check_labels(config: RunConfig, planned: Planned) -> None:
    """Refuse, before anything is written, a sequence classifier whose outputs do not
    name the labels of every task (one line naming the labels left over), and a
    ``label_map`` for any other model."""
    from ..backends.classifier import ClassifierError, label_mapping

    found = classifier_labels(
        config.spec, config.hf.revision, config.checkpoints, config.label_names
    )
    if config.label_map and not found:
        raise ValueError(not_a_sequence_classifier(config.model))
    for model, labels in found.items():
        for ds, _, _ in planned:
            try:
                label_mapping(labels, ds.labels)
            except ClassifierError as err:
                raise ClassifierError(f"--model {model} on task {ds.task}: {err}") from None


def _classifier_config(config: RunConfig, *, off_the_shelf: bool = True) -> RunConfig:
    """Fine-tuned classifiers take no shots; a ``nlieval train`` output folder is run
    as the ordered list of its per-seed checkpoints. With ``off_the_shelf``, a
    transformers sequence classifier (config.json architecture ``*ForSequenceClassification``)
    takes none either."""
    from ..backends.classifier import classifier_checkpoints, is_classifier_folder
    from ..backends.hf_classifier import is_sequence_classifier

    ckpts = classifier_checkpoints(config.model) if Path(config.model).is_dir() else []
    if not ckpts:
        name = config.spec.name
        hf = off_the_shelf and config.engine == "hf"
        if not (hf and is_sequence_classifier(name, config.hf.revision)):
            return config
        if config.shots != (0,):
            log.warning("%s is a sequence classifier: shots %s ignored", name, config.shots)
        return dataclasses.replace(config, shots=(0,), seeds=config.seeds[:1])
    if config.shots != (0,):
        log.warning("%s is a fine-tuned classifier: shots %s ignored", config.model, config.shots)
    new = dataclasses.replace(config, shots=(0,), seeds=config.seeds[:1])
    if not is_classifier_folder(config.model) and not config.checkpoints:
        new = dataclasses.replace(new, checkpoints=tuple(str(c) for c in ckpts))
    return new
