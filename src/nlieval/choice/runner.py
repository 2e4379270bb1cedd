"""A whole run: config -> items -> predictions -> records -> metrics -> report."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, cast

from .. import data
from ..backends import (
    ChoiceBackend,
    ClassifierBackend,
    LogLikelihoodBackend,
    PromptTooLongError,
    ResolvedModel,
)
from ..runs import (
    Draws,
    Results,
    RunFolder,
    Step,
    execute,
    finalize,
    fingerprints_of,
    saved_config,
)
from ..types import Item, Progress, Record
from .config import RunConfig
from .scoring import SweepPoint, make_sweep_point, score_items

log = logging.getLogger(__name__)

AnyBackend = LogLikelihoodBackend | ClassifierBackend | ChoiceBackend
Planned = list[tuple[data.Dataset, list[SweepPoint], dict[str, Any]]]


def plan(config: RunConfig) -> Planned:
    """Load every task, its few-shot pool and the fixed draws of every sweep point.

    Returns per task: the dataset (cut to ``limit``, or its stratified ``sample``), its
    sweep points, and a report of the data (source, items, dropped counts, pool).
    """
    out = []
    for task, spec in zip(config.tasks, data.get_tasks(config.tasks), strict=True):
        ds = data.load_task(task, config.data_dir, config.split, skip_bad=config.skip_bad)
        where = f"{spec.name} {ds.split}"
        items = config.choose(ds.items, ds.labels, where)
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
        # What --limit or --sample chose, said in every table of the run (run_warnings).
        warned = config.warning(ds.items, items, ds.labels, where)
        if warned is not None:
            info["warnings"] = [warned]
        out.append((dataclasses.replace(ds, items=tuple(items)), points, info))
    return out


def run(
    config: RunConfig,
    out_dir: str | Path,
    *,
    model: ResolvedModel | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> Results:
    """Run (or resume) an evaluation and write the run folder; returns ``results.json``.

    ``model`` is the config's model resolved (None: :meth:`RunConfig.resolve`); a
    stand-in (:func:`nlieval.backends.stand_in`) gives its own backends.

    >>> cfg = RunConfig(tiny_lm, ("smoke",), limit=4)  # the bundled 48-item task
    >>> [m["n"] for m in run(cfg, run_dir, progress=False).metrics]
    [4]
    """
    model = model or config.resolve()
    config = _fit(config, model)
    spelling = config.saved_spelling(
        None if overwrite else saved_config(out_dir, RunConfig.from_dict)
    )
    if spelling != config.model:
        config = dataclasses.replace(config, model=spelling)
    model.check()  # a wrong model name fails before the folder is made or data is read
    # Data errors surface before anything is written.
    planned = plan(config)
    _check_pairs(model, config, planned)
    _check_labels(model, planned)
    name = config.model
    steps: list[Step[Item]] = []
    for ckpt in config.checkpoints or (None,):
        for ds, points, _ in planned:
            for p in points:
                # By length, so that each chunk (and each batch in it) holds items
                # of similar length: less padding. Results do not depend on order.
                items = sorted(ds.items, key=_length)
                key = "|".join(str(x) for x in (ckpt or "", p.task, p.k, p.seed))
                label = f"{p.task} k={p.k} seed={p.seed}" + (f" {ckpt}" if ckpt else "")
                done_key = functools.partial(_record_key, name, ckpt, p)
                steps.append(Step(key, label, items, group=ckpt, point=p, done_key=done_key))

    sources = {ds.task: ds.source for ds, _, _ in planned}

    def make_backend(ckpt: Hashable) -> AnyBackend:
        return model.scorer(ckpt if isinstance(ckpt, str) else None)

    def work(
        backend: AnyBackend, step: Step[Item], chunk: Sequence[Item], progress: Progress
    ) -> list[Record]:
        ckpt = step.group if isinstance(step.group, str) else None
        try:
            c = model.checkpoint(ckpt)
            classifies = c.classifies or c.chooses
            return _score(backend, classifies, step.point, chunk, name, ckpt, config, progress)
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

    # The weights behind the name too: other weights under one path never share a table.
    prints = fingerprints_of({ds.task: info for ds, _, info in planned}) | model.fingerprints()
    folder = RunFolder(out_dir)
    try:
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
    finally:
        model.close()  # a server's client: its connections and the thread of its requests
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
    classifies: bool,
    point: SweepPoint,
    items: Sequence[Item],
    model: str,
    checkpoint: str | None,
    config: RunConfig,
    progress: Progress,
) -> list[Record]:
    # A classifier's records come from its label (or choice) probabilities.
    if classifies:
        from ..backends import item_records  # torch: only for a classifier

        return item_records(
            cast(ClassifierBackend | ChoiceBackend, backend),
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
        cast(LogLikelihoodBackend, backend),
        point,
        items,
        model=model,
        checkpoint=checkpoint,
        save_prompt=config.save_prompts,
        progress=progress,
    )


def _check_labels(model: ResolvedModel, planned: Planned) -> None:
    """Refuse, before anything is written, a sequence classifier whose outputs do not
    name the labels of every task (one line naming the labels left over), and a
    ``label_map`` for any other model."""
    found = model.labels()
    if not found:
        return
    from ..classifiers import ClassifierError, label_mapping

    for name, labels in found.items():
        for ds, _, _ in planned:
            try:
                label_mapping(labels, ds.labels)
            except ClassifierError as err:
                raise ClassifierError(f"--model {name} on task {ds.task}: {err}") from None


def _check_pairs(model: ResolvedModel, config: RunConfig, planned: Planned) -> None:
    """Refuse, before anything is written, a sentence-pair classifier (any checkpoint)
    for a task whose items are not pairs: it would see only the observations of an
    alpha-NLI item, never its hypotheses; and a multiple-choice classifier for a task
    whose items hold no choices."""
    for ckpt in config.checkpoints or (None,):
        loaded = model.checkpoint(ckpt)
        for ds, _, _ in planned:
            if loaded.classifies:
                ds.require_pairs(f"--model {ckpt or config.model}, a sentence-pair classifier,")
            elif loaded.chooses:
                name = ckpt or config.model
                ds.require_choices(f"--model {name}, a multiple-choice classifier,")


def _fit(config: RunConfig, model: ResolvedModel) -> RunConfig:
    """The config as its model takes it: a classifier takes no shots (one seed), and a
    ``nlieval train`` output folder is run as the ordered list of its per-seed
    checkpoints."""
    if not model.takes_shots:
        if config.shots != (0,):
            what = "sequence" if model.kind == "sequence-classifier" else "fine-tuned"
            name = config.spec.name if what == "sequence" else config.model
            log.warning("%s is a %s classifier: shots %s ignored", name, what, config.shots)
        config = dataclasses.replace(config, shots=(0,), seeds=config.seeds[:1])
    if model.sweep != config.checkpoints:
        config = dataclasses.replace(config, checkpoints=model.sweep)
    return config
