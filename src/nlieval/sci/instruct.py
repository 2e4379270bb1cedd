"""Prompted instruct models on scientific NLI (four classes; METHODS.md section 4).

A system message defines the classes (lettered A-D in :data:`~nlieval.types.SCI4`
order) and asks for the class name. k-shot exemplars are earlier user/assistant turns,
``k / 4`` per class; run ``r`` draws its own set and order, and every test item of that
run sees exactly the same turns. Decoding is greedy with a small ``max_new_tokens``.

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

>>> parse_answer("The relation is: Reasoning.").value
'reasoning'
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .. import data
from ..backends.base import GenerationBackend
from ..backends.openai import ServerOptions
from ..backends.registry import HFOptions, ModelSpec, load_generator, model_label, parse_model
from ..backends.weights import DEFAULT_MODEL
from ..data import Dataset, ItemSelection, seeded_rng
from ..runs import Results, RunError, RunFolder, Step, execute, finalize
from ..settings import (
    csv_list,
    flat_dict,
    from_flat_dict,
    int_list,
    options,
    positive_int,
    seed_list,
    setting,
)
from ..types import LETTERS, SCI4, Item, Label, Record

Message = dict[str, str]

#: One line per class, in option (letter) order.
CLASS_DEFINITIONS: dict[Label, str] = {
    Label.CONTRASTING: (
        "Sentence 2 contrasts with Sentence 1: it states something opposed to, or a "
        "limitation of, what Sentence 1 says (as if it began with 'However,')."
    ),
    Label.REASONING: (
        "Sentence 2 is a conclusion or consequence drawn from Sentence 1 "
        "(as if it began with 'Therefore,')."
    ),
    Label.ENTAILMENT: (
        "Sentence 2 restates Sentence 1 more specifically or in other words "
        "(as if it began with 'Specifically,')."
    ),
    Label.NEUTRAL: (
        "None of the above: the sentences may share a topic, but Sentence 2 neither "
        "contrasts with, follows from, nor restates Sentence 1."
    ),
}

SYSTEM_PROMPT = (
    "You classify the relation between two sentences from scientific papers. "
    "The classes are:\n"
    + "\n".join(
        f"{LETTERS[n]}. {lab.display}: {CLASS_DEFINITIONS[lab]}" for n, lab in enumerate(SCI4)
    )
    + "\nAnswer with the class name only: "
    + ", ".join(lab.display for lab in SCI4[:-1])
    + f" or {SCI4[-1].display}."
)

#: Shot counts the methods use (any multiple of 4 is accepted).
SHOTS: tuple[int, ...] = (0, 4, 8, 12, 16)


def user_message(item: Item) -> str:
    """The user turn for one sentence pair.

    >>> print(user_message(Item("1", "A holds.", "B holds.", None)))
    Sentence 1: A holds.
    Sentence 2: B holds.
    Relation:
    """
    return f"Sentence 1: {item.premise}\nSentence 2: {item.hypothesis}\nRelation:"


def build_messages(
    item: Item, exemplars: Sequence[Item] = (), system_role: bool = True
) -> list[Message]:
    """The conversation for one test item: system, exemplar turns, the item.

    ``system_role=False`` puts the instructions at the top of the first user turn, for
    chat templates without a system role.

    >>> ex = Item("e1", "X grows.", "Thus Y grows.", Label.REASONING)
    >>> [m["role"] for m in build_messages(Item("1", "A.", "B.", None), [ex])]
    ['system', 'user', 'assistant', 'user']
    """
    turns: list[Message] = []
    for ex in exemplars:
        if ex.label is None:
            raise ValueError(f"exemplar {ex.id} has no label")
        turns.append({"role": "user", "content": user_message(ex)})
        turns.append({"role": "assistant", "content": ex.label.display})
    turns.append({"role": "user", "content": user_message(item)})
    if system_role:
        return [{"role": "system", "content": SYSTEM_PROMPT}, *turns]
    first = turns[0]
    turns[0] = {"role": "user", "content": f"{SYSTEM_PROMPT}\n\n{first['content']}"}
    return turns


def render_conversation(messages: Sequence[Message]) -> str:
    """Plain text of a conversation, as saved in ``Record.prompt``.

    >>> render_conversation([{"role": "user", "content": "Hi"}])
    '[user]\\nHi'
    """
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


def select_exemplars(pool: Sequence[Item], k: int, run: int, seed: int = 0) -> list[Item]:
    """``k / 4`` exemplars per class, shuffled; the same for every item of a run.

    Each class's pool items are put in one seeded order; run ``r`` takes ``k / 4`` of
    them from position ``4 r`` on (``r k / 4`` beyond k = 16), wrapping around. So a
    run's k = 4 set is part of its k = 8 set, and so on, and runs 0, 1, 2 use disjoint
    sets whenever every class has 12 items (``3 k / 4`` beyond k = 16). The order of the
    k turns is shuffled per run and k.

    >>> pool = [Item(str(n), "a", "b", lab) for n, lab in enumerate(SCI4 * 3)]
    >>> [len(select_exemplars(pool, k, 0)) for k in (0, 4, 8)]
    [0, 4, 8]
    """
    if k < 0 or k % len(SCI4):
        raise ValueError(f"k must be a multiple of {len(SCI4)} (one exemplar per class), got {k}")
    per_class = k // len(SCI4)
    chosen: list[Item] = []
    for lab in SCI4 if per_class else ():
        members = sorted((it for it in pool if it.label is lab), key=lambda it: it.id)
        if len(members) < per_class:
            raise ValueError(
                f"{per_class} exemplars of class {lab.value} needed, the pool has {len(members)}"
            )
        seeded_rng(seed, "exemplars", lab.value).shuffle(members)
        # Blocks as wide as the largest usual k: nested over k, disjoint over runs.
        start = run * max(per_class, max(SHOTS) // len(SCI4))
        chosen += [members[(start + n) % len(members)] for n in range(per_class)]
    seeded_rng(seed, "order", run, k).shuffle(chosen)
    return chosen


def exclude_items(pool: Sequence[Item], items: Sequence[Item], by_id: bool = True) -> list[Item]:
    """``pool`` less every item that is one of ``items``: the same pair of sentences
    (a test item never serves as an exemplar, whatever its id there) or, with ``by_id``,
    the same id (use it when both come from one file: ids of different files may be
    line numbers).

    >>> a, b = Item("1", "A.", "B.", None), Item("2", "C.", "D.", None)
    >>> [it.id for it in exclude_items([a, b, Item("9", "C.", "D.", None)], [b])]
    ['1']
    """
    ids = {it.id for it in items} if by_id else set()
    pairs = {(it.premise, it.hypothesis) for it in items}
    return [p for p in pool if p.id not in ids and (p.premise, p.hypothesis) not in pairs]


# --------------------------------------------------------------------------- answers

# Class words and the inflections taken as safe. Deliberately absent: "contradiction"
# (a different relation, and a sign the model answered another label set), "reason"
# ("the reason is ..."), "cause", "unrelated", "none".
_WORDS: dict[str, Label] = {
    "contrasting": Label.CONTRASTING,
    "contrast": Label.CONTRASTING,
    "contrasts": Label.CONTRASTING,
    "contrastive": Label.CONTRASTING,
    "reasoning": Label.REASONING,
    "entailment": Label.ENTAILMENT,
    "entail": Label.ENTAILMENT,
    "entails": Label.ENTAILMENT,
    "entailed": Label.ENTAILMENT,
    "neutral": Label.NEUTRAL,
}
# A class word with one of these among the three words before it (same clause) is negated
# ("not entailment", "non-entailment", "isn't contrasting") and names no class.
_NEGATORS = frozenset({"not", "no", "non", "never", "neither", "nor", "without"})
_LEAD_IN = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+)?(?:answer|relation|class|label|option|choice)"
    r"(?:\s+is)?\s*[:=\-]?\s*)?(?:option\s+|class\s+)?",
    re.I,
)
# A bare letter: "B", "(B)", "B.", "B)", "B: Reasoning", "b - reasoning"; not the
# article in "A reasoning relation".
_LETTER = re.compile(r"^(?:\(([A-D])\)|([A-D])(?=\s*[.):,\-]|\s*$))", re.I)


def _word_classes(text: str) -> set[Label]:
    found = set()
    # A negation reaches only to the end of its clause: "doesn't entail; neutral".
    for clause in re.split(r"[.;:,!?()\n]+", text.lower()):
        words = re.findall(r"[a-z]+", clause)
        for n, word in enumerate(words):
            label = _WORDS.get(word)
            if label is not None and not _NEGATORS.intersection(words[max(0, n - 3) : n]):
                found.add(label)
    return found


def _letter_class(text: str) -> Label | None:
    m = _LETTER.match(_LEAD_IN.sub("", text, count=1))
    if m is None:
        return None
    return SCI4[LETTERS.index((m.group(1) or m.group(2)).upper())]


def parse_answer(text: str | None) -> Label | None:
    """The class an answer names, or None when it names none or more than one.

    Case, punctuation, markdown and surrounding words do not matter; option letters
    A-D count when they stand alone or are followed by punctuation; negated class words
    ("not neutral") are ignored. A letter and a word must agree.

    >>> [parse_answer(a) for a in ("**B**", "contrast.", "Neutral or entailment")]
    [<Label.REASONING: 'reasoning'>, <Label.CONTRASTING: 'contrasting'>, None]
    """
    if not text:
        return None
    clean = re.sub(r"n['’]t\b", " not", text)  # "isn't" is a negation, not "isn" + "t"
    clean = re.sub(r"[*_`\"'“”‘’#>]", " ", clean).strip()
    found = _word_classes(clean)
    letter = _letter_class(clean)
    if letter is not None:
        found.add(letter)
    return found.pop() if len(found) == 1 else None


# --------------------------------------------------------------------------- evaluation

_EPS = 1e-12  # floor of one-hot probabilities before the log, so NLLs stay finite


def _scores(pred: Label | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if pred is None:
        probs = tuple(1.0 / len(SCI4) for _ in SCI4)
    else:
        probs = tuple(1.0 if lab is pred else 0.0 for lab in SCI4)
    return tuple(math.log(max(p, _EPS)) for p in probs), probs


def evaluate_instruct(
    backend: GenerationBackend,
    items: Sequence[Item],
    pool: Sequence[Item],
    k: int,
    run: int,
    max_new_tokens: int = 16,
    *,
    task: str = "scinli",
    seed: int = 0,
    system_role: bool = True,
    batch_size: int = 32,
    progress: Callable[[int], Any] | None = None,
    exemplars: Sequence[Item] | None = None,
    model: str | None = None,
    save_prompt: bool = True,
) -> list[Record]:
    """Ask a chat model for the class of every item (greedy) and record its answers.

    Exemplars come from ``pool`` less any item with a test item's id, so the pool may be
    the test split itself; or they are given as ``exemplars`` (chosen once for a whole
    run, as :func:`run_instruct` does; ``pool`` is then ignored). ``Record.seed`` is the
    run index; ``shots`` the exemplar ids; ``answer`` the raw text; ``pred`` None when
    :func:`parse_answer` finds no class; ``model`` defaults to the backend's name.

    >>> class Echo:
    ...     name = "echo"
    ...     def generate(self, convs, max_new_tokens=32, temperature=0.0, seed=0):
    ...         return ["Neutral." for _ in convs]
    >>> it = Item("1", "A.", "B.", Label.NEUTRAL)
    >>> evaluate_instruct(Echo(), [it], [], k=0, run=0)[0].pred
    'neutral'
    """
    if exemplars is None:
        exemplars = select_exemplars(exclude_items(pool, items), k, run, seed)
    elif len(exemplars) != k:
        raise ValueError(f"{len(exemplars)} exemplars given for k = {k}")
    elif len(exclude_items(exemplars, items, by_id=False)) != k:
        raise ValueError("an exemplar is also a test item")
    shots = tuple(ex.id for ex in exemplars)
    convs = [build_messages(it, exemplars, system_role) for it in items]
    answers: list[str] = []
    for start in range(0, len(convs), batch_size):
        batch = convs[start : start + batch_size]
        out = backend.generate(batch, max_new_tokens=max_new_tokens, temperature=0.0, seed=run)
        if len(out) != len(batch):
            raise ValueError(f"{backend.name} gave {len(out)} answers for {len(batch)} prompts")
        answers += out
        if progress is not None:
            progress(len(batch))
    records = []
    for item, conv, answer in zip(items, convs, answers, strict=True):
        pred = parse_answer(answer)
        loglik, probs = _scores(pred)
        domain = item.meta.get("domain")
        records.append(
            Record(
                task=task,
                item_id=item.id,
                model=model or backend.name,
                k=k,
                seed=run,
                labels=tuple(lab.value for lab in SCI4),
                loglik=loglik,
                probs=probs,
                pred=None if pred is None else pred.value,
                gold=None if item.label is None else item.label.value,
                prompt=render_conversation(conv) if save_prompt else "",
                shots=shots,
                answer=answer,
                meta={} if domain is None else {"domain": domain},
            )
        )
    return records


# --------------------------------------------------------------------------- whole runs

#: Changes whenever the prompt text does: part of a run folder's identity, so a folder
#: made with another prompt is never resumed with this one.
PROMPT_VERSION = hashlib.sha256(
    (SYSTEM_PROMPT + "\x00" + user_message(Item("", "{1}", "{2}", None))).encode()
).hexdigest()[:12]


def shot_counts_of_4(text: str) -> tuple[int, ...]:
    """Shot counts of ``instruct``: multiples of 4 (one exemplar per class per four).

    >>> shot_counts_of_4("0,4,8")
    (0, 4, 8)
    """
    values = int_list(text)
    bad = [k for k in values if k < 0 or k % len(SCI4)]
    if bad:
        raise ValueError(
            f"--shots takes multiples of 4 (one exemplar per class per four), got {bad}"
        )
    return values


@dataclass(frozen=True)
class InstructConfig(ItemSelection):
    """Everything that defines an ``nlieval instruct`` run folder.

    ``IDENTITY`` fields must match to resume a folder; tasks, shots, runs and limit may
    grow between invocations. ``split`` None is the task's default (test); ``pool_split``
    None is ``dev`` when the task has one, else the task's few-shot pool
    (:func:`nlieval.data.load_pool`). ``balanced_limit`` makes ``limit`` take the
    classes in turn (see :func:`take_balanced`; SciNLI's files are sorted by class, so
    its first 100 items are all contrasting). k = 0 is run once (as run ``runs[0]``):
    its prompt has no exemplars and decoding is greedy, so other runs would repeat it.
    """

    model: str = setting(
        help="chat model run in process (alias, folder, .gguf or hub id); with --api-base "
        "the server's model name",
        cli_default=DEFAULT_MODEL,
    )
    tasks: tuple[str, ...] = setting(
        ("scinli",),
        help="comma-separated four-class tasks (names or task YAML files)",
        names=("--task", "--tasks"),
        parse=csv_list,
    )
    shots: tuple[int, ...] = setting(
        SHOTS, help="comma-separated shot counts, multiples of 4", parse=shot_counts_of_4
    )
    runs: tuple[int, ...] = setting(
        (0, 1, 2),
        help="runs with different exemplar sets: a count (3 = 0,1,2) or a list",
        parse=seed_list,
    )
    balanced_limit: bool = setting(
        False, help="with --limit, take the classes in turn (SciNLI's files are sorted by class)"
    )
    split: str | None = setting("test", help="split to evaluate")
    pool_split: str | None = setting(
        None,
        help="split the exemplars come from, less every item of the evaluated split "
        "[dev, or the task's few-shot pool when it has no dev split]",
    )
    data_dir: str | None = setting(None, help="folder of official files [$NLIEVAL_DATA_DIR]")
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
    prompt_version: str = PROMPT_VERSION
    hf: HFOptions = options(HFOptions)
    server: ServerOptions | None = options(
        ServerOptions, when="api_base", optional=True, title="server"
    )

    KIND: ClassVar[str] = "instruct"
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
        "dtype",
        "prompt_version",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.balanced_limit and self.limit is None:
            raise ValueError("--balanced-limit goes with --limit")
        self.spec  # noqa: B018  (a model string that means nothing fails here)
        object.__setattr__(self, "model", model_label(self.model))

    @property
    def spec(self) -> ModelSpec:
        """What ``model`` names, and which engine runs it."""
        return parse_model(self.model, self.server.api_base if self.server else None)

    @property
    def engine(self) -> str:
        return self.spec.engine

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, **flat_dict(self), "engine": self.engine}

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
    for task in config.tasks:
        spec = data.get_task(task)
        if tuple(spec.labels) != SCI4:
            raise ValueError(
                f"task {spec.name} has the labels {'/'.join(lab.value for lab in spec.labels)}; "
                f"the instruct prompt defines the four classes "
                f"{'/'.join(lab.value for lab in SCI4)}"
            )
        ds = data.load_task(task, config.data_dir, config.split)
        if config.limit and config.balanced_limit:
            items = take_balanced(ds.items, config.limit)
        else:
            items = config.select_items(ds.items)
        points: list[InstructPoint] = []
        info: dict[str, Any] = {
            "source": ds.source,
            "split": ds.split,
            "items": len(items),
            "items_in_split": len(ds.items),
            "dropped": dict(ds.dropped),
            "pool": None,
        }
        pool: list[Item] = []
        if any(k > 0 for k in config.shots):
            if config.pool_split or ("dev" in spec.splits and ds.split != "dev"):
                pool_ds = data.load_task(task, config.data_dir, config.pool_split or "dev")
            else:
                pool_ds, _ = data.load_pool(task, config.data_dir, split=ds.split)
            labelled = [it for it in pool_ds.items if it.label is not None]
            pool = exclude_items(labelled, ds.items, by_id=pool_ds.split == ds.split)
            info["pool"] = f"{pool_ds.source} ({pool_ds.split})"
            info["pool_items"] = len(pool)
            info["pool_items_removed_as_test_items"] = len(labelled) - len(pool)
        for k in config.shots:
            for run in config.runs if k > 0 else config.runs[:1]:
                exemplars = tuple(select_exemplars(pool, k, run, config.exemplar_seed))
                points.append(InstructPoint(spec.name, k, run, exemplars))
        out.append((dataclasses.replace(ds, items=tuple(items)), points, info))
    return out


def instruct_backend(config: InstructConfig) -> GenerationBackend:
    """The chat model of a config, made by the model registry (in process or on the
    server of ``config.server``).

    >>> instruct_backend(InstructConfig("m", server=ServerOptions(fake_server))).name
    'm'
    """
    return load_generator(config.spec, hf=config.hf, server=config.server)


def run_instruct(
    config: InstructConfig,
    out_dir: str | Path,
    backend_factory: Callable[[], GenerationBackend] | None = None,
    *,
    overwrite: bool = False,
    progress: bool = True,
) -> Results:
    """Run (or resume) a prompted instruct-model evaluation into a run folder.

    The folder has the files of ``nlieval run`` (config.json, records.jsonl, timing.json,
    results.json, summary.md). Items go to the model in chunks of
    :data:`nlieval.runs.CHUNK`, each chunk appended and fsync'ed: a killed run loses at
    most one chunk, and the same call resumes it without duplicates. The backend is made
    by ``backend_factory`` (default: the config's model, through the model registry's
    :func:`~nlieval.backends.registry.load_generator`) only when there is work left.
    Returns ``results.json``.

    For instance ``run_instruct(InstructConfig("smollm2-135m", limit=40), "runs/sci")``
    asks the packaged SmolLM2 about the first 40 SciNLI test items at k = 0, 4, 8, 12
    and 16 (SciNLI from ``$NLIEVAL_DATA_DIR``).

    >>> cfg = InstructConfig(tiny_lm, shots=(0, 4), limit=2)
    >>> cfg.tasks, cfg.split, cfg.engine
    (('scinli',), 'test', 'hf')
    """
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
                        "exemplars (the data changed?); choose another --out or --overwrite"
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
        )

    def work(
        backend: GenerationBackend,
        step: Step[Item],
        chunk: Sequence[Item],
        progress: Callable[[int], Any],
    ) -> list[Record]:
        p: InstructPoint = step.point
        if not isinstance(backend, _Received):
            return ask(backend, p, chunk, progress)
        try:
            return ask(backend, p, chunk, progress)
        except BaseException:
            # A request failed for good (or Ctrl-C): save the chunk's answers that did
            # arrive before the run stops, so that a resume asks only for the others.
            got = sorted(backend.answers)
            if got:
                replay = _Replay(backend.name, [backend.answers[i] for i in got])
                folder.append(ask(replay, p, [chunk[i] for i in got], None))
            raise

    def make_backend(_: Any) -> GenerationBackend:
        backend = backend_factory() if backend_factory else instruct_backend(config)
        # Answers of a server arrive one by one: keep each (see _Received).
        return _Received(backend) if callable(getattr(backend, "iter_map", None)) else backend

    elapsed = execute(
        folder,
        config,
        plan_steps,
        make_backend,
        work,
        overwrite=overwrite,
        progress=progress,
    )
    draws = {
        ds.task: {k: {p.run: p.shot_ids for p in points if p.k == k} for k in config.shots}
        for ds, points, _ in planned
    }
    return finalize(
        folder,
        config.to_dict(),
        elapsed,
        data_info={ds.task: info for ds, _, info in planned},
        draws=draws,
    )


def _record_key(model: str, p: InstructPoint, item: Item) -> Any:
    return Record.key_of(model, None, p.task, p.k, p.run, item.id)


class _Received:
    """A server backend (one with ``iter_generate``) whose :meth:`generate` keeps the
    answers that arrived in :attr:`answers` (by index) when a request fails for good, so
    that :func:`run_instruct` saves them before it stops."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name: str = inner.name
        self.answers: dict[int, str] = {}

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        self.answers = {}
        failed: BaseException | None = None
        for i, answer in self.inner.iter_generate(conversations, max_new_tokens, temperature, seed):
            if isinstance(answer, BaseException):
                failed = failed or answer
            else:
                self.answers[i] = answer
        if failed is not None:
            raise failed
        return [self.answers[i] for i in range(len(conversations))]


class _Replay:
    """Answers already received, given back in order (to record them)."""

    def __init__(self, name: str, answers: Sequence[str]) -> None:
        self.name = name
        self._answers = list(answers)

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        out, self._answers = (
            self._answers[: len(conversations)],
            self._answers[len(conversations) :],
        )
        return out
