"""Generated NLI items: hypotheses written by a chat model (METHODS.md section 5).

For each distinct premise of a task, a chat model is asked, as SNLI's crowd workers
were, for one hypothesis that is definitely true, one that might be true and one that is
definitely false, answering with a JSON object with keys ``entailment`` / ``neutral`` /
``contradiction``. About ten solved examples (earlier user/assistant turns) come from
the task's few-shot pool: premises with all three labels there, drawn by seed, never a
premise being generated for. An answer that does not parse is asked again, sampled
(temperature > 0, another seed) so it can differ; what still fails is counted.

The output folder is a run folder (:mod:`nlieval.runs`, ``"kind": "generate"``)::

    config.json     settings and the solved examples' ids (the identity ones are checked
                    when re-run)
    records.jsonl   every request, in the order answers arrived: one :class:`Answer` per
                    line, valid or not, or the server's failure
    timing.json     seconds spent and premises done, summed over invocations
    items.jsonl     the dataset: one item per hypothesis, label = the intended label
    task.yaml       the task for ``nlieval run / stats --task`` and ``infer build --generated``
    summary.json    premises parsed on the first try, after retries, failed, server errors

Answers are appended and fsync'ed one by one as they arrive (``run_steps`` with
``stream=True``); ``items.jsonl``, ``task.yaml`` and ``summary.json`` are derived from
``records.jsonl`` and rewritten whole (atomically) when a run starts, after each chunk of
:data:`PREMISES_PER_CHUNK` premises and when it ends, so a crash, a kill -9 or a server
that goes down loses nothing that arrived. Running the same command again resumes:
premises with a valid answer are skipped, the others (invalid answers, server failures,
not reached) are asked again. Folders of older versions that kept the answers in
``answers.jsonl`` are not read: the command refuses them, naming the file (pass
``--overwrite`` to start again).

>>> hyps = parse_hypotheses('Sure! {"entailment": "A man sleeps.", '
...                         '"neutral": "A man dreams.", "contradiction": "A man runs."}')
>>> hyps[Label.NEUTRAL]
'A man dreams.'
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

from .. import data
from ..backends.base import GenerationBackend
from ..backends.generator import LocalChat, json_object_closed
from ..data import Dataset, seeded_rng, write_task_yaml
from ..runs import RECORDS, RunError, RunFolder, Step, atomic_write, run_steps
from ..types import NLI3, Item, Label

Message = dict[str, str]

#: The JSON keys of an answer, in the order of :data:`~nlieval.types.NLI3`.
KEYS: tuple[str, ...] = tuple(lab.value for lab in NLI3)

#: Bumped when the wording below changes: a folder made with another prompt is not resumed.
PROMPT_VERSION = 1

SYSTEM_PROMPT = (
    "You help build a dataset for natural language inference. You are shown a premise, "
    "a sentence that describes a scene. Write three new sentences about the same scene, "
    "each short, plain and complete on its own:\n"
    '- "entailment": a sentence that is definitely true whenever the premise is true;\n'
    '- "neutral": a sentence that might be true or might be false, given the premise;\n'
    '- "contradiction": a sentence that is definitely false whenever the premise is true.\n'
    "Reply with one JSON object that has exactly these three keys, each with a string, "
    "and nothing before or after it."
)

ITEMS = "items.jsonl"
TASK = "task.yaml"
SUMMARY = "summary.json"
#: Where older versions kept the answers (now in ``records.jsonl``): such folders are refused.
LEGACY_ANSWERS = "answers.jsonl"

#: Premises per chunk of the run: asked together (as concurrently as the backend allows),
#: invalid answers asked again within the chunk; ``items.jsonl`` is rewritten after each.
PREMISES_PER_CHUNK = 256

#: Item fields copied to ``Item.meta`` by the task YAML.
ITEM_META = ("generator", "source_id", "attempt")


class InvalidAnswer(ValueError):
    """An answer that is not a JSON object with three non-empty hypotheses (says why)."""


@dataclass(frozen=True)
class Sentence:
    """A sentence to write hypotheses for, and the id of the first item it comes from."""

    source_id: str
    text: str


@dataclass(frozen=True)
class Example:
    """A solved example: a premise and one hypothesis per label, from the pool."""

    source_id: str
    premise: str
    hypotheses: Mapping[Label, str]


# --------------------------------------------------------------------------- the prompt


def distinct_sentences(items: Iterable[Item], field: str = "premise") -> list[Sentence]:
    """Each distinct premise (or hypothesis) of ``items`` once, in data order, with the
    id of the first item that has it.

    >>> items = [Item("1", "A cat naps.", "x", None), Item("2", "A cat naps.", "y", None)]
    >>> distinct_sentences(items)
    [Sentence(source_id='1', text='A cat naps.')]
    """
    if field not in ("premise", "hypothesis"):
        raise ValueError(f"sentences are premises or hypotheses, not {field!r}")
    seen: set[str] = set()
    out = []
    for it in items:
        text = getattr(it, field).strip()
        if text and text not in seen:
            seen.add(text)
            out.append(Sentence(it.id, text))
    return out


def select_examples(
    pool: Iterable[Item], n: int, seed: int = 0, exclude: Iterable[str] = ()
) -> list[Example]:
    """``n`` solved examples drawn by ``seed`` among the premises of ``pool`` that have an
    entailed, a neutral and a contradicting hypothesis (the first of each, in data order),
    leaving out the premises in ``exclude``. Fewer when the pool has fewer.

    >>> pool = [Item(f"{p}{lab.value[0]}", f"Premise {p}.", f"H {lab.value}.", lab)
    ...         for p in range(4) for lab in NLI3]
    >>> [ex.source_id for ex in select_examples(pool, 2, exclude=["Premise 0."])]
    ['1e', '2e']
    """
    skip = {s.strip() for s in exclude}
    groups: dict[str, dict[Label, Item]] = {}
    for it in pool:
        premise = it.premise.strip()
        if premise in skip or it.label not in NLI3 or not it.hypothesis.strip():
            continue
        groups.setdefault(premise, {}).setdefault(it.label, it)
    full = [g for g in groups.values() if len(g) == len(NLI3)]
    chosen = seeded_rng(seed, "generate-examples").sample(full, min(n, len(full)))
    return [
        Example(
            g[NLI3[0]].id,
            g[NLI3[0]].premise.strip(),
            {lab: g[lab].hypothesis.strip() for lab in NLI3},
        )
        for g in chosen
    ]


def user_message(premise: str) -> str:
    """The user turn asking for one premise's hypotheses.

    >>> user_message("A dog runs.")
    'Premise: A dog runs.'
    """
    return f"Premise: {premise}"


def answer_json(hypotheses: Mapping[Label, str]) -> str:
    """A solved example's answer turn, as the model should write it.

    >>> answer_json({Label.ENTAILMENT: "a", Label.NEUTRAL: "b", Label.CONTRADICTION: "c"})
    '{"entailment": "a", "neutral": "b", "contradiction": "c"}'
    """
    return json.dumps({lab.value: hypotheses[lab] for lab in NLI3}, ensure_ascii=False)


def build_messages(premise: str, examples: Sequence[Example] = ()) -> list[Message]:
    """System instructions, the solved examples as earlier turns, then the premise.

    >>> ex = Example("7", "A man sleeps.", dict(zip(NLI3, ["A.", "B.", "C."])))
    >>> [m["role"] for m in build_messages("A dog runs.", [ex])]
    ['system', 'user', 'assistant', 'user']
    """
    turns: list[Message] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for ex in examples:
        turns.append({"role": "user", "content": user_message(ex.premise)})
        turns.append({"role": "assistant", "content": answer_json(ex.hypotheses)})
    turns.append({"role": "user", "content": user_message(premise)})
    return turns


# --------------------------------------------------------------------------- parsing


def _json_objects(text: str) -> Iterator[Any]:
    # Every JSON value that starts at a "{": finds the object inside code fences, after
    # "Sure, here it is:" and before trailing chatter, and nested objects too.
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        yield obj


def _hypotheses(obj: Any) -> dict[Label, str]:
    if not isinstance(obj, dict):
        raise InvalidAnswer("the JSON value is not an object")
    norm = {str(k).strip().lower(): v for k, v in obj.items()}
    missing = [k for k in KEYS if k not in norm]
    if missing:
        raise InvalidAnswer(f"missing key(s): {', '.join(missing)}")
    out = {}
    for lab in NLI3:
        value = norm[lab.value]
        if not isinstance(value, str):
            raise InvalidAnswer(f"{lab.value}: not a string")
        if not value.strip():
            raise InvalidAnswer(f"{lab.value}: empty")
        out[lab] = " ".join(value.split())
    return out


def parse_hypotheses(text: str) -> dict[Label, str]:
    """The three hypotheses of an answer, by label; raises :class:`InvalidAnswer`.

    The first JSON object in the text with all three keys (any case) and non-empty
    string values is taken; code fences and text around it are ignored.

    >>> parse_hypotheses('```json\\n{"Entailment": "x", "neutral": "y", "contradiction": "z"}```')[
    ...     Label.ENTAILMENT]
    'x'
    >>> parse_hypotheses('{"entailment": "x", "neutral": ""}')
    Traceback (most recent call last):
    nlieval.metainference.generated.InvalidAnswer: missing key(s): contradiction
    """
    problems = []
    for obj in _json_objects(text):
        try:
            return _hypotheses(obj)
        except InvalidAnswer as err:
            problems.append(str(err))
    if problems:
        raise InvalidAnswer(problems[0])
    if "{" in text:
        raise InvalidAnswer("no complete JSON object")
    raise InvalidAnswer("no JSON object")


def answer_complete(text: str) -> bool:
    """Whether generation may stop after ``text``: a JSON object has closed and the
    text parses, so any continuation parses to the same hypotheses (the parser takes the
    first valid object, and every object opened so far has closed).

    >>> answer_complete('{"entailment": "a", "neutral": "b", "contradiction": "c"}')
    True
    >>> answer_complete('{"entailment": "a"}'), answer_complete('{"entailment": "a", "ne')
    (False, False)
    """
    if not json_object_closed(text):
        return False
    try:
        parse_hypotheses(text)
    except InvalidAnswer:
        return False
    return True


# --------------------------------------------------------------------------- answers


def iter_answers(
    backend: GenerationBackend,
    conversations: Sequence[Sequence[Message]],
    max_new_tokens: int,
    temperature: float,
    seed: int,
) -> Iterator[tuple[int, str | Exception]]:
    """``(index, answer)`` as answers arrive; a failed request gives its exception.

    Backends with ``iter_generate`` (:class:`~nlieval.backends.openai.OpenAIChat`) are
    asked concurrently, :class:`~nlieval.backends.generator.LocalChat` in batches that
    stop each answer once :func:`answer_complete`; the others one conversation at a
    time, so that each answer is saved before the next is asked for.
    """
    if isinstance(backend, LocalChat):
        yield from backend.iter_generate(
            conversations, max_new_tokens, temperature, seed, stop=answer_complete
        )
        return
    stream = getattr(backend, "iter_generate", None)
    if callable(stream):
        yield from stream(conversations, max_new_tokens, temperature, seed)
        return
    for i, conv in enumerate(conversations):
        yield i, backend.generate([conv], max_new_tokens, temperature, seed)[0]


# --------------------------------------------------------------------------- the folder


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Answer:
    """One request for a sentence's hypotheses, as saved: one line of ``records.jsonl``.

    ``request`` numbers the requests for one sentence in the folder (1, 2, ... on across
    invocations, answers and server failures alike): ``(source_id, request)`` is the
    row's key. ``attempt`` is the answer asked for, which sets temperature and seed (see
    :meth:`GenerateConfig.sampling`): a server failure does not use one up. ``error``
    is set when the request failed for good (no answer); an answer that parsed has its
    ``hypotheses`` (by label value), one that did not a ``problem``.

    >>> ok = '{"entailment": "a", "neutral": "b", "contradiction": "c"}'
    >>> row = Answer.of("m", Sentence("7", "A dog runs."), 1, 1, 0.0, 0, ok)
    >>> row.key, row.kind, row.valid, row.hypotheses["neutral"]
    (('7', 1), 'answer', True, 'b')
    >>> Answer.from_dict(json.loads(row.to_json())) == row
    True
    >>> Answer.of("m", Sentence("7", "A dog runs."), 2, 2, 0.7, 1, "no").problem
    'no JSON object'
    """

    source_id: str
    request: int
    attempt: int
    premise: str
    model: str
    temperature: float
    seed: int
    answer: str | None = None
    hypotheses: Mapping[str, str] | None = field(default=None, hash=False)
    problem: str | None = None
    error: str | None = None
    time: str = ""

    @property
    def key(self) -> tuple[str, int]:
        return (self.source_id, self.request)

    @property
    def kind(self) -> str:
        """``answer``, or ``server_error`` for a request that got none."""
        return "answer" if self.error is None else "server_error"

    @property
    def valid(self) -> bool:
        return self.hypotheses is not None

    @classmethod
    def of(
        cls,
        model: str,
        sentence: Sentence,
        request: int,
        attempt: int,
        temperature: float,
        seed: int,
        answer: str | Exception,
    ) -> Answer:
        """The row of an answer (parsed here) or of a request that failed for good."""
        row = cls(sentence.source_id, request, attempt, sentence.text, model, temperature, seed)
        if isinstance(answer, Exception):
            return replace(row, error=str(answer) or type(answer).__name__, time=_now())
        try:
            hyps = parse_hypotheses(answer)
        except InvalidAnswer as err:
            return replace(row, answer=answer, problem=str(err), time=_now())
        by_key = {lab.value: h for lab, h in hyps.items()}
        return replace(row, answer=answer, hypotheses=by_key, time=_now())

    def to_json(self) -> str:
        """One JSON line (``kind`` and ``valid`` included for readers of the file)."""
        d = {"kind": self.kind, **asdict(self), "valid": self.valid}
        return json.dumps(d, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Answer:
        hyps = d.get("hypotheses")
        if hyps is not None and not all(isinstance(hyps.get(k), str) for k in KEYS):
            raise ValueError(f"hypotheses without all of {', '.join(KEYS)}")
        return cls(
            source_id=str(d["source_id"]),
            request=int(d["request"]),
            attempt=int(d["attempt"]),
            premise=str(d["premise"]),
            model=str(d["model"]),
            temperature=float(d["temperature"]),
            seed=int(d["seed"]),
            answer=d.get("answer"),
            hypotheses=None if hyps is None else {k: hyps[k] for k in KEYS},
            problem=d.get("problem"),
            error=d.get("error"),
            time=str(d.get("time", "")),
        )


@dataclass
class _State:
    """What the saved rows say about one sentence."""

    requests: int = 0
    answers: int = 0
    valid_attempt: int | None = None
    server_failures: int = 0
    problems: list[str] = field(default_factory=list)

    def add(self, row: Answer) -> None:
        self.requests = max(self.requests, row.request)
        if row.error is not None:
            self.server_failures += 1
            return
        self.answers = max(self.answers, row.attempt)
        if row.valid:
            if self.valid_attempt is None:
                self.valid_attempt = row.attempt
        else:
            self.problems.append(str(row.problem))


def answer_states(rows: Iterable[Answer]) -> dict[str, _State]:
    """Per source id: requests and answers so far, the attempt that parsed, failures."""
    out: dict[str, _State] = defaultdict(_State)
    for row in rows:
        out[row.source_id].add(row)
    return out


def first_valid(rows: Iterable[Answer]) -> dict[str, Answer]:
    """The first valid answer of each source id that has one."""
    out: dict[str, Answer] = {}
    for row in rows:
        if row.valid:
            out.setdefault(row.source_id, row)
    return out


def _items_of(row: Answer) -> list[dict[str, Any]]:
    sid = row.source_id
    assert row.hypotheses is not None
    return [
        {
            "id": f"gen:{sid}:{key}",
            "premise": row.premise,
            "hypothesis": row.hypotheses[key],
            "label": key,
            "generator": row.model,
            "source_id": sid,
            "attempt": row.attempt,
        }
        for key in KEYS
    ]


def write_items(folder: Path, answers: Mapping[str, Answer], order: Mapping[str, int]) -> int:
    """Write ``items.jsonl`` (atomically): three items per valid answer in ``answers``
    (source id -> answer), sorted by ``order`` (source id -> position; others last).
    Returns the number of items written."""
    rows = sorted(answers.values(), key=lambda r: order.get(r.source_id, len(order)))
    items = [item for row in rows for item in _items_of(row)]
    text = "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items)
    atomic_write(folder / ITEMS, text)
    return len(items)


def write_task(folder: Path, name: str, description: str) -> Path:
    """The task YAML over ``items.jsonl`` (intended labels, provenance in meta)."""
    spec = {
        "name": name,
        "description": description,
        "path": ITEMS,
        "labels": list(KEYS),
        "fields": {
            "id": "id",
            "premise": "premise",
            "hypothesis": "hypothesis",
            "label": "label",
            "meta": list(ITEM_META),
        },
    }
    return write_task_yaml(folder / TASK, spec)


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class GenerateConfig:
    """What ``nlieval generate`` does; ``limit``, ``attempts``, ``retry_temperature``,
    ``data_dir``, ``skip_bad`` and ``max_server_errors`` may change between runs of one
    folder, the others are its identity (see :attr:`GenerateFolderConfig.IDENTITY`).

    ``attempts`` answers at most per sentence and run: the first at ``temperature`` with
    ``seed``, the n-th at ``max(temperature, retry_temperature)`` with ``seed + n - 1``.
    The run stops after ``max_server_errors`` requests in a row failed for good.
    """

    task: str
    split: str | None = None
    limit: int | None = None
    sentences: str = "premise"
    examples: int = 10
    seed: int = 0
    attempts: int = 3
    temperature: float = 0.0
    retry_temperature: float = 0.7
    max_new_tokens: int = 160
    data_dir: str | None = None
    skip_bad: bool = False
    max_server_errors: int = 3

    def sampling(self, attempt: int) -> tuple[float, int]:
        """Temperature and seed of the ``attempt``-th answer (1-based).

        >>> GenerateConfig("snli").sampling(1), GenerateConfig("snli").sampling(3)
        ((0.0, 0), (0.7, 2))
        """
        if attempt <= 1:
            return self.temperature, self.seed
        return max(self.temperature, self.retry_temperature), self.seed + attempt - 1


@dataclass(frozen=True)
class GenerateFolderConfig:
    """The ``config.json`` of a ``generate`` folder: the settings, with what they resolved
    to (the generator's name, the split, the solved examples' ids, the data file).
    ``IDENTITY`` fields must match to resume the folder.

    >>> cfg = GenerateFolderConfig("m", "snli", "test", "premise", 0, (), 0, 0.0, 160)
    >>> cfg.to_dict()["kind"], cfg.to_dict()["example_ids"]
    ('generate', [])
    """

    generator: str
    task: str
    split: str
    sentences: str
    examples: int
    example_ids: tuple[str, ...]
    seed: int
    temperature: float
    max_new_tokens: int
    prompt_version: int = PROMPT_VERSION
    limit: int | None = None
    attempts: int = 3
    retry_temperature: float = 0.7
    data_dir: str | None = None
    max_server_errors: int = 3
    data: str = ""

    KIND: ClassVar[str] = "generate"
    IDENTITY: ClassVar[tuple[str, ...]] = (
        "generator",
        "task",
        "split",
        "sentences",
        "examples",
        "example_ids",
        "seed",
        "temperature",
        "max_new_tokens",
        "prompt_version",
    )

    def to_dict(self) -> dict[str, Any]:
        # JSON types (a list, not a tuple), as config.json reads back on resume.
        d: dict[str, Any] = {"kind": self.KIND, **asdict(self)}
        d["example_ids"] = list(self.example_ids)
        return d

    @classmethod
    def of(
        cls,
        generator: str,
        config: GenerateConfig,
        ds: Dataset,
        examples: Sequence[Example],
    ) -> GenerateFolderConfig:
        return cls(
            generator=generator,
            task=config.task,
            split=ds.split,
            sentences=config.sentences,
            examples=config.examples,
            example_ids=tuple(ex.source_id for ex in examples),
            seed=config.seed,
            temperature=config.temperature,
            max_new_tokens=config.max_new_tokens,
            limit=config.limit,
            attempts=config.attempts,
            retry_temperature=config.retry_temperature,
            data_dir=config.data_dir,
            max_server_errors=config.max_server_errors,
            data=str(ds.source),
        )


def _targets_and_examples(
    config: GenerateConfig,
) -> tuple[Dataset, list[Sentence], list[Example]]:
    ds = data.load_task(config.task, config.data_dir, config.split, skip_bad=config.skip_bad)
    targets = distinct_sentences(ds.items, config.sentences)
    if config.limit is not None:
        targets = targets[: config.limit]
    if not targets:
        raise data.DataError(ds.source, None, None, f"no {config.sentences}s to generate for")
    examples: list[Example] = []
    if config.examples > 0:
        if not set(NLI3) <= set(ds.labels):
            raise ValueError(
                f"task {ds.task} has no entailment/neutral/contradiction labels to draw solved "
                "examples from; pass --examples 0"
            )
        pool, _ = data.load_pool(config.task, config.data_dir, config.skip_bad, ds.split)
        examples = select_examples(
            pool.items, config.examples, config.seed, [t.text for t in targets]
        )
        if not examples:
            raise ValueError(
                f"no premise of {pool.task} {pool.split} (outside the premises generated for) "
                "has all three labels; pass --examples 0"
            )
    return ds, targets, examples


def summarize(
    targets: Sequence[Sentence], states: Mapping[str, _State], n_items: int
) -> dict[str, Any]:
    """Counts over the target sentences (from the answer log, all runs of the folder).

    Each sentence is in exactly one of ``parsed_first_try``, ``parsed_after_retries``,
    ``failed`` (answers, none valid), ``server_errors`` (no answer, only server
    failures) and ``not_attempted``.
    """
    counts: Counter[str] = Counter()
    problems: Counter[str] = Counter()
    answers = invalid = failures = 0
    for t in targets:
        st = states.get(t.source_id, _State())
        answers += st.answers
        failures += st.server_failures
        invalid += len(st.problems)
        problems.update(st.problems)
        if st.valid_attempt == 1:
            counts["parsed_first_try"] += 1
        elif st.valid_attempt is not None:
            counts["parsed_after_retries"] += 1
        elif st.answers:
            counts["failed"] += 1
        elif st.server_failures:
            counts["server_errors"] += 1
        else:
            counts["not_attempted"] += 1
    keys = ("parsed_first_try", "parsed_after_retries", "failed", "server_errors")
    return {
        "premises": len(targets),
        **{k: counts[k] for k in (*keys, "not_attempted")},
        "answers": answers,
        "invalid_answers": invalid,
        "server_failures": failures,
        "items": n_items,
        "invalid_reasons": dict(problems.most_common(8)),
    }


def format_summary(summary: Mapping[str, Any]) -> str:
    """The summary as a few lines of text.

    >>> print(format_summary({"premises": 2, "parsed_first_try": 1, "parsed_after_retries": 0,
    ...     "failed": 1, "server_errors": 0, "not_attempted": 0, "answers": 4,
    ...     "invalid_answers": 3, "server_failures": 0, "items": 3,
    ...     "invalid_reasons": {"no JSON object": 3}}))
    premises              2
    parsed on first try   1
    parsed after retries  0
    failed                1  (every answer invalid)
    server errors         0  (no answer; 0 failed requests)
    not attempted         0
    answers               4  (3 invalid: no JSON object 3)
    items                 3
    """
    reasons = ", ".join(f"{k} {v}" for k, v in summary["invalid_reasons"].items())
    lines = [
        ("premises", summary["premises"], ""),
        ("parsed on first try", summary["parsed_first_try"], ""),
        ("parsed after retries", summary["parsed_after_retries"], ""),
        ("failed", summary["failed"], "  (every answer invalid)"),
        (
            "server errors",
            summary["server_errors"],
            f"  (no answer; {summary['server_failures']} failed requests)",
        ),
        ("not attempted", summary["not_attempted"], ""),
        (
            "answers",
            summary["answers"],
            f"  ({summary['invalid_answers']} invalid" + (f": {reasons})" if reasons else ")"),
        ),
        ("items", summary["items"], ""),
    ]
    return "\n".join(f"{name:<21} {value}{extra}" for name, value, extra in lines)


class _Stopped(Exception):
    """The server failed ``max_server_errors`` requests in a row (the message says so)."""


def generate_items(
    backend: GenerationBackend,
    config: GenerateConfig,
    out: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Generate (or resume generating) items into ``out``; returns the summary, which is
    also saved as ``summary.json``.

    The sentences still without a valid answer go through :func:`nlieval.runs.run_steps`
    in chunks of :data:`PREMISES_PER_CHUNK` (asked together, invalid answers asked again
    within the chunk), each answer appended to ``records.jsonl`` as it arrives.
    ``summary["stopped"]`` is None, or says why the run stopped early (the server failed
    ``config.max_server_errors`` times in a row); everything that arrived is kept.

    >>> summary = generate_items(load_generator("smollm2-135m"), GenerateConfig("snli", limit=50),
    ...                          "runs/gen-smol")   # doctest: +SKIP
    """
    started = time.perf_counter()
    ds, targets, examples = _targets_and_examples(config)
    path = Path(out)
    legacy = path / LEGACY_ANSWERS
    if legacy.is_file() and not overwrite:
        raise RunError(
            f"{path} was made by an older `nlieval generate` (its answers are in "
            f"{LEGACY_ANSWERS}, now {RECORDS}); choose another --out, or pass --overwrite "
            "to discard it and start again"
        )
    folder = RunFolder(path, Answer)
    folder.start(GenerateFolderConfig.of(backend.name, config, ds, examples), overwrite=overwrite)
    if overwrite:
        for name in (LEGACY_ANSWERS, ITEMS, SUMMARY, TASK):
            (path / name).unlink(missing_ok=True)
    folder.done_keys()  # cuts a line left half-written by a crash; appends skip saved keys
    rows = folder.records()
    states = answer_states(rows)
    valid = first_valid(rows)
    # Items in data order whatever order answers arrived in (concurrent requests).
    order = {t.source_id: n for n, t in enumerate(targets)}
    write_items(path, valid, order)
    name = f"generated-{ds.task}"
    write_task(
        path, name, f"hypotheses written by {backend.name} for {config.sentences}s of {ds.task}"
    )
    todo = [t for t in targets if states[t.source_id].valid_attempt is None]
    in_a_row = 0

    def work(
        chat: GenerationBackend,
        step: Step[Sentence],
        chunk: Sequence[Sentence],
        progress: Callable[[int], Any],
    ) -> Iterator[Answer]:
        # Yields each row as it arrives: run_steps saves it before the next is looked at.
        nonlocal in_a_row
        pending = list(chunk)
        for rnd in range(config.attempts):
            if not pending:
                break
            last_round = rnd == config.attempts - 1
            # Sentences at the same attempt share temperature and seed: one batch each.
            batches: dict[tuple[float, int], list[tuple[Sentence, int]]] = defaultdict(list)
            for t in pending:
                attempt = states[t.source_id].answers + 1
                batches[config.sampling(attempt)].append((t, attempt))
            retry: list[Sentence] = []
            for (temperature, seed), batch in batches.items():
                convs = [build_messages(t.text, examples) for t, _ in batch]
                answers = iter_answers(chat, convs, config.max_new_tokens, temperature, seed)
                try:
                    for i, answer in answers:
                        t, attempt = batch[i]
                        st = states[t.source_id]
                        row = Answer.of(
                            chat.name, t, st.requests + 1, attempt, temperature, seed, answer
                        )
                        st.add(row)
                        yield row
                        if row.error is not None:
                            progress(1)
                            in_a_row += 1
                            if in_a_row >= config.max_server_errors:
                                raise _Stopped(
                                    f"the server failed {in_a_row} requests in a row "
                                    f"(last: {row.error})"
                                )
                            continue
                        in_a_row = 0
                        if row.valid:
                            valid.setdefault(t.source_id, row)
                            progress(1)
                        else:
                            retry.append(t)
                            progress(1 if last_round else 0)
                finally:
                    # Stops the requests still queued when the server is gone.
                    close = getattr(answers, "close", None)
                    if close is not None:
                        close()
            pending = sorted(retry, key=lambda t: order[t.source_id])
        write_items(path, valid, order)  # the chunk's rows are saved by now

    stopped: str | None = None
    step = Step(f"|{ds.task}|{config.sentences}", f"{config.sentences}s", todo)
    try:
        run_steps(
            folder,
            [step],
            lambda _: backend,
            work,
            progress=progress,
            chunk_size=PREMISES_PER_CHUNK,
            stream=True,
        )
    except _Stopped as err:
        stopped = str(err)
    finally:
        rows = folder.records()
        n_items = write_items(path, first_valid(rows), order)
        summary = {
            "generator": backend.name,
            "task": ds.task,
            "split": ds.split,
            "examples": len(examples),
            **summarize(targets, answer_states(rows), n_items),
            "seconds": round(time.perf_counter() - started, 1),
            "stopped": stopped,
        }
        atomic_write(path / SUMMARY, json.dumps(summary, indent=2) + "\n")
    write_task(
        path,
        name,
        f"{n_items // len(KEYS)} premises x 3 hypotheses written by {backend.name} "
        f"for {config.sentences}s of {ds.task} {ds.split} (label = intended label)",
    )
    return summary
