"""The files of a ``generate`` folder: one :class:`Answer` row per request
(``records.jsonl``), what the rows say about each sentence, and what is derived from
them: ``items.jsonl``, ``task.yaml`` and the summary counts."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..data import write_task_yaml
from ..ground import atomic_write
from .generated_parse import KEYS, InvalidAnswer, parse_hypotheses
from .generated_prompt import Sentence

ITEMS = "items.jsonl"
TASK = "task.yaml"
SUMMARY = "summary.json"
#: Where older versions kept the answers (now in ``records.jsonl``): such folders are refused.
LEGACY_ANSWERS = "answers.jsonl"

#: Item fields copied to ``Item.meta`` by the task YAML.
ITEM_META = ("generator", "source_id", "attempt")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Answer:
    """One request for a sentence's hypotheses, as saved: one line of ``records.jsonl``.

    ``request`` numbers the requests for one sentence in the folder (1, 2, ... on across
    invocations, answers and server failures alike): ``(source_id, request)`` is the
    row's key. ``attempt`` is the answer asked for, which sets temperature and seed (see
    :meth:`~nlieval.metainference.generated_config.GenerateConfig.sampling`): a server
    failure does not use one up. ``error`` is set when the request failed for good (no
    answer); an answer that parsed has its ``hypotheses`` (by label value), one that did
    not a ``problem``.

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
class AnswerState:
    """What the saved rows say about one sentence: its requests and answers so far, the
    attempt whose answer first parsed, its server failures and why answers were invalid
    (:func:`answer_states` builds one per sentence; the run adds each new row)."""

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


def answer_states(rows: Iterable[Answer]) -> dict[str, AnswerState]:
    """Per source id: requests and answers so far, the attempt that parsed, failures."""
    out: dict[str, AnswerState] = defaultdict(AnswerState)
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
    atomic_write(folder / ITEMS, text, root=folder)
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


@dataclass(frozen=True)
class GenerateSummary:
    """What :func:`~nlieval.metainference.generate_items` returns, and saves (in this
    order) as ``summary.json``: the run (``generator``, ``task``, ``split``, the number
    of solved ``examples``), the counts of :func:`summarize`, its ``seconds`` and
    ``stopped`` (None, or why the run stopped early). ``invalid_reasons`` (the most
    common problems of invalid answers, by count) is read-only, as the rest.

    >>> s = GenerateSummary("m", "t", "dev", 0, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0,
    ...     invalid_reasons={"no JSON object": 1}, seconds=0.1, stopped=None)
    >>> s.invalid_reasons["no JSON object"] = 2
    Traceback (most recent call last):
    TypeError: 'mappingproxy' object does not support item assignment
    >>> s.to_dict()["invalid_reasons"]
    {'no JSON object': 1}
    """

    generator: str
    task: str
    split: str
    examples: int
    premises: int
    parsed_first_try: int
    parsed_after_retries: int
    failed: int
    server_errors: int
    not_attempted: int
    answers: int
    invalid_answers: int
    server_failures: int
    items: int
    invalid_reasons: Mapping[str, int]
    seconds: float
    stopped: str | None

    def __post_init__(self) -> None:
        # A copy of its own behind a read-only view: the caller's dict may change.
        object.__setattr__(self, "invalid_reasons", MappingProxyType(dict(self.invalid_reasons)))

    def to_dict(self) -> dict[str, Any]:
        """The fields as ``summary.json`` holds them."""
        return {
            f.name: dict(self.invalid_reasons)
            if f.name == "invalid_reasons"
            else getattr(self, f.name)
            for f in fields(self)
        }


def summarize(
    targets: Sequence[Sentence], states: Mapping[str, AnswerState], n_items: int
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
        st = states.get(t.source_id, AnswerState())
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


def format_summary(summary: GenerateSummary) -> str:
    """The summary as a few lines of text.

    >>> print(format_summary(GenerateSummary("m", "t", "dev", 0, premises=2,
    ...     parsed_first_try=1, parsed_after_retries=0, failed=1, server_errors=0,
    ...     not_attempted=0, answers=4, invalid_answers=3, server_failures=0, items=3,
    ...     invalid_reasons={"no JSON object": 3}, seconds=0.1, stopped=None)))
    premises              2
    parsed on first try   1
    parsed after retries  0
    failed                1  (every answer invalid)
    server errors         0  (no answer; 0 failed requests)
    not attempted         0
    answers               4  (3 invalid: no JSON object 3)
    items                 3
    """
    reasons = ", ".join(f"{k} {v}" for k, v in summary.invalid_reasons.items())
    lines = [
        ("premises", summary.premises, ""),
        ("parsed on first try", summary.parsed_first_try, ""),
        ("parsed after retries", summary.parsed_after_retries, ""),
        ("failed", summary.failed, "  (every answer invalid)"),
        (
            "server errors",
            summary.server_errors,
            f"  (no answer; {summary.server_failures} failed requests)",
        ),
        ("not attempted", summary.not_attempted, ""),
        (
            "answers",
            summary.answers,
            f"  ({summary.invalid_answers} invalid" + (f": {reasons})" if reasons else ")"),
        ),
        ("items", summary.items, ""),
    ]
    return "\n".join(f"{name:<21} {value}{extra}" for name, value, extra in lines)
