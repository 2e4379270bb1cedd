"""Prompted instruct models on scientific NLI (four classes; METHODS.md section 4).

A system message defines the classes (lettered A-D in :data:`~nlieval.types.SCI4`
order) and asks for the class name. k-shot exemplars are earlier user/assistant turns,
``k / 4`` per class (or per source, or fixed ids: :mod:`~nlieval.sci.instruct_exemplars`);
run ``r`` draws its own set and order, and every test item of that run sees exactly the
same turns. Decoding is greedy with a small ``max_new_tokens``.

The answer text is mapped to a class by :func:`parse_answer`; answers mapped to nothing
get ``pred=None`` and are kept: :func:`nlieval.metrics.point_metrics` scores them wrong
and counts them in ``n_unparsed``.

Records of generated answers have no real log-likelihoods. They carry one-hot
``probs`` on the parsed class and ``loglik = log(max(p, 1e-12))`` (0 for the answer,
about -27.6 for the rest, so the gold NLL stays finite); an unparsed answer gets
uniform probabilities (``log(1/4)`` each).

:func:`run_instruct` (the ``nlieval instruct`` command) runs tasks x shot counts x runs
into a run folder like ``nlieval run``'s, resumable after a crash. Zero-shot is run once:
with no exemplars and greedy decoding the runs would repeat one another exactly.

This module holds the settings and the run; its parts live beside it, their public names
importable from here too: :mod:`~nlieval.sci.instruct_prompt` (messages, exemplars) and
:mod:`~nlieval.sci.instruct_answers` (parsing answers, :func:`evaluate_instruct`).

>>> parse_answer("The relation is: Reasoning.").value
'reasoning'
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .. import data
from ..backends import (
    EngineOptions,
    Generation,
    GenerationBackend,
    NamesAModel,
    ResolvedModel,
    model_setting,
)
from ..data import Dataset, ItemSelection, data_dir_setting, split_setting, tasks_setting
from ..runs import (
    Results,
    RunError,
    RunFolder,
    Step,
    execute,
    finalize,
    fingerprints_of,
    saved_config,
)
from ..settings import (
    flat_dict,
    from_flat_dict,
    options,
    positive_int,
    seed_list,
    setting,
    shot_counts,
)
from ..types import SCI4, Item, Label, Record
from .instruct_answers import (
    ReceivedAnswers,
    ReplayAnswers,
    answer_scores,
    evaluate_instruct,
    parse_answer,
)
from .instruct_exemplars import ExemplarRule, exemplar_ids
from .instruct_prompt import (
    CLASS_DEFINITIONS,
    PROMPT_VERSION,
    SHOTS,
    SYSTEM_PROMPT,
    InstructPrompt,
    Message,
    build_messages,
    exclude_items,
    render_conversation,
    select_exemplars,
    user_message,
)

__all__ = [
    "CLASS_DEFINITIONS",
    "ExemplarRule",
    "PROMPT_VERSION",
    "SHOTS",
    "SYSTEM_PROMPT",
    "InstructConfig",
    "InstructPoint",
    "InstructPrompt",
    "Message",
    "build_messages",
    "evaluate_instruct",
    "exclude_items",
    "instruct_backend",
    "parse_answer",
    "plan_instruct",
    "render_conversation",
    "run_instruct",
    "select_exemplars",
    "take_balanced",
    "user_message",
]

_scores = answer_scores  # its name from before the split (tests import it from here)


@dataclass(frozen=True)
class InstructConfig(ItemSelection, NamesAModel):
    """Everything that defines an ``nlieval instruct`` run folder.

    ``IDENTITY`` fields must match to resume a folder; tasks, shots, runs and limit may
    grow between invocations. ``split`` None is the task's default (test); ``pool_split``
    None is ``dev`` when the task has one, else the task's few-shot pool
    (:func:`nlieval.data.load_pool`). ``balanced_limit`` makes ``limit`` take the
    classes in turn (see :func:`take_balanced`; SciNLI's files are sorted by class, so
    its first 100 items are all contrasting). k = 0 is run once (as run ``runs[0]``):
    its prompt has no exemplars and decoding is greedy, so other runs would repeat it.
    """

    model: str = model_setting()
    tasks: tuple[str, ...] = tasks_setting(("scinli",), note=" with four classes")
    shots: tuple[int, ...] = setting(
        SHOTS,
        help="comma-separated shot counts, multiples of 4 (with --exemplar-ids: at most "
        "their number)",
        parse=shot_counts,
    )
    runs: tuple[int, ...] = setting(
        (0, 1, 2),
        help="runs with different exemplar sets: a count (3 = 0,1,2) or a list",
        parse=seed_list,
    )
    balanced_limit: bool = setting(
        False, help="with --limit, take the classes in turn (SciNLI's files are sorted by class)"
    )
    split: str | None = split_setting("test")
    pool_split: str | None = setting(
        None,
        help="split the exemplars come from, less every item of the evaluated split "
        "[dev, or the task's few-shot pool when it has no dev split]",
    )
    data_dir: str | None = data_dir_setting()
    max_new_tokens: int = setting(16, help="answer length limit", parse=positive_int)
    system_role: bool = setting(
        True,
        help="put the instructions into the first user turn (templates without a system role)",
        names=("--no-system-role",),
    )
    exemplar_seed: int = 0
    save_prompts: bool = setting(
        True, help="do not store prompt texts in records", names=("--no-prompts",)
    )
    prompt: str | None = setting(
        None,
        help="prompt file (YAML: system, user and assistant templates, class definitions "
        "and options; docs/prompts.md), or a shipped prompt's name (mismatched: the "
        "MisMatched study's options a-d) [the shipped four-class prompt]",
    )
    exemplars: str | None = setting(
        None,
        help="exemplar file (jsonl/csv: premise, hypothesis, label[, id]; or sentence1, "
        "sentence2 for the sentences, as nlieval build writes) the k-shot exemplars are "
        "drawn from, instead of --pool-split",
    )
    exemplar_sources: str | None = setting(
        None,
        help="per source: among the k exemplars at least one of each value of this item "
        "field of the pool (the dataset of a combined set such as MSciNLI+, a domain), "
        "k / 4 per class as ever [per class only]",
        metavar="FIELD",
    )
    exemplar_ids: tuple[str, ...] = setting(
        (),
        help="fixed exemplars: exactly these pool ids in this order (k takes the first k; "
        "one run), from a file of ids (one a line) or joined by commas [drawn per class]",
        parse=exemplar_ids,
        metavar="FILE|ID,ID",
    )
    #: The prompt file's content hash (:attr:`InstructPrompt.version`), set by
    #: :func:`run_instruct` from ``prompt``: the identity holds the prompt, not its path.
    prompt_version: str = PROMPT_VERSION
    engines: EngineOptions = options(EngineOptions)

    KIND: ClassVar[str] = "instruct"
    #: Settings that may grow between invocations; the folder keeps their union.
    GROWS: ClassVar[tuple[str, ...]] = ("tasks", "shots", "runs", "limit")
    IDENTITY: ClassVar[tuple[str, ...]] = (
        "kind",
        "model",
        "engine",
        "balanced_limit",
        "sample",
        "sample_seed",
        "split",
        "pool_split",
        "max_new_tokens",
        "system_role",
        "exemplar_seed",
        "exemplar_sources",
        "exemplar_ids",
        "dtype",
        "revision",
        "prompt_version",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.balanced_limit and self.limit is None:
            raise ValueError("--balanced-limit goes with --limit")
        if self.exemplars and self.pool_split:
            raise ValueError("--exemplars replaces --pool-split: give one of them")
        self.exemplar_rule.check_shots(self.shots)
        self.keep_label()  # a model string that means nothing fails here

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, **flat_dict(self), "engine": self.engine}

    @property
    def exemplar_rule(self) -> ExemplarRule:
        """How the exemplars are chosen (:mod:`~nlieval.sci.instruct_exemplars`).

        >>> InstructConfig("m", exemplar_sources="domain").exemplar_rule.name
        'per source'
        """
        return ExemplarRule(self.exemplar_sources, self.exemplar_ids)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> InstructConfig:
        return from_flat_dict(cls, d)


@dataclass(frozen=True)
class InstructPoint:
    """One (task, k, run): its exemplars, the same for every item."""

    task: str
    k: int
    run: int
    exemplars: tuple[Item, ...]

    @property
    def shot_ids(self) -> tuple[str, ...]:
        return tuple(ex.id for ex in self.exemplars)


def take_balanced(items: Sequence[Item], n: int) -> tuple[Item, ...]:
    """The first ``n`` items taking the classes in turn, each class in file order.

    A larger ``n`` keeps every item a smaller one took (so a run folder can grow).

    >>> items = [Item(str(i), "a", "b", lab) for i, lab in enumerate([SCI4[0]] * 3 + [SCI4[1]] * 3)]
    >>> [it.id for it in take_balanced(items, 4)]
    ['0', '3', '1', '4']
    """
    by_class: dict[Label | None, list[Item]] = {}
    for it in items:
        by_class.setdefault(it.label, []).append(it)
    queues = [iter(v) for v in by_class.values()]
    out: list[Item] = []
    while queues and len(out) < n:
        for q in list(queues):
            nxt = next(q, None)
            if nxt is None:
                queues.remove(q)
            elif len(out) < n:
                out.append(nxt)
    return tuple(out)


def plan_instruct(
    config: InstructConfig,
) -> list[tuple[Dataset, list[InstructPoint], dict[str, Any]]]:
    """Load every task and its exemplar pool; fix the exemplars of every (k, run).

    Every item of the evaluated split (not only the first ``limit``) is taken out of the
    pool, so no test item is ever an exemplar and the exemplars do not depend on
    ``limit``. Raises ``ValueError`` for a task whose labels are not the four
    scientific classes, or a pool too small for the largest k.
    """
    if not config.runs:
        raise ValueError("at least one run is needed")
    out = []
    for task, spec in zip(config.tasks, data.get_tasks(config.tasks), strict=True):
        if tuple(spec.labels) != SCI4:
            raise ValueError(
                f"task {spec.name} has the labels {'/'.join(lab.value for lab in spec.labels)}; "
                f"the instruct prompt defines the four classes "
                f"{'/'.join(lab.value for lab in SCI4)}"
            )
        ds = data.load_task(task, config.data_dir, config.split)
        if config.limit and config.balanced_limit:
            where = f"{spec.name} {ds.split}"
            data.warn_if_short(config.limit, f"--limit {config.limit}", len(ds.items), where)
            items = take_balanced(ds.items, config.limit)
        else:
            items = config.choose(ds.items, ds.labels, where := f"{spec.name} {ds.split}")
        points: list[InstructPoint] = []
        info: dict[str, Any] = {
            "source": ds.source,
            "split": ds.split,
            "items": len(items),
            "items_in_split": len(ds.items),
            "dropped": dict(ds.dropped),
            "pool": None,
            # Of the whole split as read (see nlieval.runs.fingerprints_of); the prompt
            # text is in the identity as PROMPT_VERSION.
            "fingerprint": data.items_fingerprint(ds.items),
        }
        if not (config.limit and config.balanced_limit):
            # What --limit or --sample chose, said in every table of the run.
            warned = config.warning(ds.items, items, ds.labels, where)
            if warned is not None:
                info["warnings"] = [warned]
        pool: list[Item] = []
        rule = config.exemplar_rule
        if any(k > 0 for k in config.shots):
            if config.exemplars:
                fields: dict[str, Any] = dict(data.pair_fields(config.exemplars))
                if rule.sources is not None:
                    fields["meta"] = [rule.sources]
                pool_ds = data.read_items(config.exemplars, labels=SCI4, fields=fields)
            elif config.pool_split or ("dev" in spec.splits and ds.split != "dev"):
                pool_ds = data.load_task(task, config.data_dir, config.pool_split or "dev")
            else:
                pool_ds, _ = data.load_pool(task, config.data_dir, split=ds.split)
            labelled = [it for it in pool_ds.items if it.label is not None]
            same_file = pool_ds.split == ds.split and not config.exemplars
            pool = exclude_items(labelled, ds.items, by_id=same_file)
            info["pool"] = f"{pool_ds.source} ({pool_ds.split})"
            info["pool_items"] = len(pool)
            info["pool_items_removed_as_test_items"] = len(labelled) - len(pool)
            info["pool_fingerprint"] = data.items_fingerprint(pool_ds.items)
            _check_pool(rule, pool, labelled, info["pool"])
        for k in config.shots:
            for run in config.runs if k > 0 and rule.varies_by_run else config.runs[:1]:
                exemplars = tuple(rule.select(pool, k, run, config.exemplar_seed))
                points.append(InstructPoint(spec.name, k, run, exemplars))
        out.append((dataclasses.replace(ds, items=tuple(items)), points, info))
    return out


def _check_pool(rule: ExemplarRule, pool: list[Item], labelled: list[Item], where: str) -> None:
    # A fixed id of an evaluated item (taken out of the pool) is named as such.
    left = {it.id for it in pool}
    taken = [i for i in rule.ids if i not in left and i in {it.id for it in labelled}]
    if taken:
        raise ValueError(
            f"{where}: the exemplar id {taken[0]} is an item of the evaluated split "
            "(never an exemplar)"
        )
    rule.check_pool(pool, where)


def instruct_backend(model: ResolvedModel) -> GenerationBackend:
    """The chat model of a resolved model (in process, or on its server).

    >>> from nlieval.backends import ServerOptions
    >>> served = EngineOptions(server=ServerOptions(fake_server))
    >>> instruct_backend(InstructConfig("m", engines=served).resolve()).name
    'm'
    """
    return model.chat()


def run_instruct(
    config: InstructConfig,
    out_dir: str | Path,
    model: ResolvedModel | None = None,
    *,
    overwrite: bool = False,
    progress: bool = True,
) -> Results:
    """Run (or resume) a prompted instruct-model evaluation into a run folder.

    The folder has the files of ``nlieval run`` (config.json, records.jsonl, timing.json,
    results.json, summary.md). Items go to the model in chunks of
    :data:`nlieval.runs.CHUNK`, each chunk appended and fsync'ed: a killed run loses at
    most one chunk, and the same call resumes it without duplicates. ``model`` is the
    config's model resolved (None: :meth:`InstructConfig.resolve`); it is checked before
    anything is read, and its chat backend made only when there is work left. Returns
    ``results.json``. The folder's identity holds the data, pool and prompts by content,
    and the model's fingerprints (see
    :meth:`~nlieval.backends.registry.ResolvedModel.fingerprints`).

    For instance ``run_instruct(InstructConfig("smollm2-135m", limit=40), "runs/sci")``
    asks the packaged SmolLM2 about the first 40 SciNLI test items at k = 0, 4, 8, 12
    and 16 (SciNLI from ``$NLIEVAL_DATA_DIR``).

    >>> cfg = InstructConfig(tiny_lm, shots=(0, 4), limit=2)
    >>> cfg.tasks, cfg.split, cfg.engine
    (('scinli',), 'test', 'hf')
    """
    model = model or config.resolve()
    model.check()  # a wrong model name fails before the folder is made
    prompt = InstructPrompt.load(config.prompt)  # a bad prompt file fails before anything
    config = dataclasses.replace(config, prompt_version=prompt.version)
    spelling = config.saved_spelling(
        None if overwrite else saved_config(out_dir, InstructConfig.from_dict)
    )
    if spelling != config.model:
        config = dataclasses.replace(config, model=spelling)
    planned = plan_instruct(config)  # data errors surface before anything is written
    folder = RunFolder(out_dir)

    def plan_steps(folder: RunFolder[Record]) -> list[Step[Item]]:
        # Records of a sweep point made with other exemplars must not be resumed.
        saved_shots = {(r.task, r.k, r.seed): r.shots for r in folder.iter_records()}
        for _, points, _ in planned:
            for p in points:
                old = saved_shots.get((p.task, p.k, p.run))
                if old is not None and old != p.shot_ids:
                    raise RunError(
                        f"{out_dir}: the records of {p.task} k={p.k} run {p.run} used other "
                        "exemplars (the data changed?)",
                        advice="choose another --out or --overwrite",
                    )
        return steps

    steps = [
        Step(
            f"|{p.task}|{p.k}|{p.run}",
            f"{p.task} k={p.k} run={p.run}",
            ds.items,
            point=p,
            done_key=functools.partial(_record_key, config.model, p),
        )
        for ds, points, _ in planned
        for p in points
    ]

    def ask(
        backend: GenerationBackend,
        p: InstructPoint,
        chunk: Sequence[Item],
        progress: Callable[[int], Any] | None,
    ) -> list[Record]:
        return evaluate_instruct(
            backend,
            chunk,
            (),
            p.k,
            p.run,
            config.max_new_tokens,
            task=p.task,
            seed=config.exemplar_seed,
            system_role=config.system_role,
            batch_size=len(chunk),
            progress=progress,
            exemplars=p.exemplars,
            model=config.model,
            save_prompt=config.save_prompts,
            prompt=prompt,
        )

    def work(
        backend: GenerationBackend,
        step: Step[Item],
        chunk: Sequence[Item],
        progress: Callable[[int], Any],
    ) -> list[Record]:
        p: InstructPoint = step.point
        if not isinstance(backend, ReceivedAnswers):
            return ask(backend, p, chunk, progress)
        try:
            return ask(backend, p, chunk, progress)
        except BaseException:
            # A request failed for good (or Ctrl-C): save the chunk's answers that did
            # arrive before the run stops, so that a resume asks only for the others.
            got = sorted(backend.answers)
            if got:
                replay = ReplayAnswers(backend.name, [backend.answers[i] for i in got])
                folder.append(ask(replay, p, [chunk[i] for i in got], None))
            raise

    def make_backend(_: Any) -> GenerationBackend:
        backend = model.chat()
        # Answers of a server arrive one by one: keep each (see ReceivedAnswers).
        return ReceivedAnswers(backend) if Generation.of(backend).streaming else backend

    # The chat model's weights too (none for a server's model: its answers name it).
    prints = fingerprints_of({ds.task: info for ds, _, info in planned}) | model.fingerprints()
    try:
        elapsed = execute(
            folder,
            config,
            plan_steps,
            make_backend,
            work,
            overwrite=overwrite,
            progress=progress,
            fingerprints=prints,
        )
    finally:
        model.close()  # a server's client: its connections and the thread of its requests
    draws = {
        ds.task: {k: {p.run: p.shot_ids for p in points if p.k == k} for k in config.shots}
        for ds, points, _ in planned
    }
    return finalize(
        folder,
        folder.read_config(),
        elapsed,
        data_info={ds.task: info for ds, _, info in planned},
        draws=draws,
    )


def _record_key(model: str, p: InstructPoint, item: Item) -> Any:
    return Record.key_of(model, None, p.task, p.k, p.run, item.id)
