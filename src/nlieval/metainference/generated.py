"""Generated NLI items: hypotheses written by a chat model (METHODS.md section 5).

For each distinct premise of a task, a chat model is asked, as SNLI's crowd workers
were, for one hypothesis that is definitely true, one that might be true and one that is
definitely false, answering with a JSON object with keys ``entailment`` / ``neutral`` /
``contradiction``. About ten solved examples (earlier user/assistant turns) come from
the task's few-shot pool: premises with all three labels there, drawn by seed, never a
premise being generated for. An answer that does not parse is asked again, sampled
(temperature > 0, another seed) so it can differ; what still fails is counted.

The output folder::

    config.json     settings and the solved examples' ids (checked when re-run)
    answers.jsonl   every answer, valid or not, and every server failure, in order
    items.jsonl     the dataset: one item per hypothesis, label = the intended label
    task.yaml       the task for ``nlieval run / stats --task`` and ``infer build --generated``
    summary.json    premises parsed on the first try, after retries, failed, server errors

Answers are appended and fsync'ed as they arrive, and ``items.jsonl`` is rebuilt from
``answers.jsonl`` when a run starts, so a crash or a server that goes down loses nothing
that arrived. Running the same command again resumes: premises with a valid answer are
skipped, the others (invalid answers, server failures, not reached) are asked again.

>>> hyps = parse_hypotheses('Sure! {"entailment": "A man sleeps.", '
...                         '"neutral": "A man dreams.", "contradiction": "A man runs."}')
>>> hyps[Label.NEUTRAL]
'A man dreams.'
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import data
from ..backends.base import GenerationBackend
from ..data import seeded_rng
from ..runs import RunError, atomic_write
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

CONFIG = "config.json"
ANSWERS = "answers.jsonl"
ITEMS = "items.jsonl"
TASK = "task.yaml"
SUMMARY = "summary.json"

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
    asked concurrently; the others one conversation at a time, so that each answer is
    saved before the next is asked for.
    """
    stream = getattr(backend, "iter_generate", None)
    if callable(stream):
        yield from stream(conversations, max_new_tokens, temperature, seed)
        return
    for i, conv in enumerate(conversations):
        yield i, backend.generate([conv], max_new_tokens, temperature, seed)[0]


# --------------------------------------------------------------------------- the folder


@dataclass
class _State:
    """What the answer log says about one sentence."""

    answers: int = 0
    valid_attempt: int | None = None
    server_failures: int = 0
    problems: list[str] = field(default_factory=list)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _append(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    # One write, then fsync: a line is on disk before the next answer is asked for.
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


class GenFolder:
    """The output folder of ``nlieval generate`` (layout in the module docstring).

    >>> folder = GenFolder("runs/gen-smol")      # doctest: +SKIP
    >>> folder.state()["4705552913.jpg#2r1n"]    # doctest: +SKIP
    """

    IDENTITY = (
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

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def start(self, config: Mapping[str, Any], overwrite: bool = False) -> None:
        """Create the folder, or check that it was made with the same identity settings."""
        self.path.mkdir(parents=True, exist_ok=True)
        cfg = self.path / CONFIG
        if overwrite:
            for name in (ANSWERS, ITEMS, SUMMARY, TASK):
                (self.path / name).unlink(missing_ok=True)
        elif cfg.is_file():
            old = json.loads(cfg.read_text(encoding="utf-8"))
            diff = [k for k in self.IDENTITY if old.get(k) != config.get(k)]
            if diff:
                detail = "; ".join(f"{k}: {old.get(k)!r} -> {config.get(k)!r}" for k in diff)
                raise RunError(
                    f"{self.path} holds items generated with other settings ({detail}); "
                    "choose another --out, or pass --overwrite to start again"
                )
        atomic_write(cfg, json.dumps(dict(config), indent=2, ensure_ascii=False) + "\n")

    def repair(self) -> int:
        """Cut a partial last line of the answer log (a crash mid-write); bytes removed."""
        p = self.path / ANSWERS
        if not p.is_file():
            return 0
        raw = p.read_bytes()
        end = raw.rfind(b"\n") + 1
        if end < len(raw):
            with open(p, "rb+") as f:
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
        return len(raw) - end

    def log(self) -> list[dict[str, Any]]:
        """Every line of the answer log."""
        p = self.path / ANSWERS
        if not p.is_file():
            return []
        rows = []
        with open(p, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.endswith("\n"):
                    break  # a partial tail, cut by repair() before anything is appended
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise RunError(f"{p}:{n}: unreadable answer line: {err}") from None
        return rows

    def state(self) -> dict[str, _State]:
        """Per source id: answers so far, the attempt that parsed, server failures."""
        out: dict[str, _State] = defaultdict(_State)
        for row in self.log():
            st = out[row["source_id"]]
            if row["kind"] == "server_error":
                st.server_failures += 1
                continue
            st.answers = max(st.answers, int(row["attempt"]))
            if row["valid"] and st.valid_attempt is None:
                st.valid_attempt = int(row["attempt"])
            elif not row["valid"]:
                st.problems.append(str(row["problem"]))
        return out

    def item_rows(self, order: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
        """The dataset rows: three per sentence, from its first valid answer; sorted by
        ``order`` (source id -> position; others last), else in the log's order."""
        first: dict[str, dict[str, Any]] = {}
        for row in self.log():
            if row["kind"] == "answer" and row["valid"]:
                first.setdefault(row["source_id"], row)
        answers = list(first.values())
        if order is not None:
            answers.sort(key=lambda r: order.get(r["source_id"], len(order)))
        return [item for row in answers for item in _items_of(row)]

    def rebuild_items(self, order: Mapping[str, int] | None = None) -> int:
        """Write ``items.jsonl`` again from the answer log (atomic), sorted by ``order``
        (see :meth:`item_rows`); returns the number of items written."""
        rows = self.item_rows(order)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        atomic_write(self.path / ITEMS, text)
        return len(rows)

    def log_answer(self, row: Mapping[str, Any]) -> None:
        """Append an answer to the log, then (when valid) its items to the dataset."""
        _append(self.path / ANSWERS, [row])
        if row["valid"]:
            _append(self.path / ITEMS, _items_of(row))

    def log_failure(self, source_id: str, premise: str, message: str) -> None:
        _append(
            self.path / ANSWERS,
            [
                {
                    "kind": "server_error",
                    "source_id": source_id,
                    "premise": premise,
                    "error": message,
                    "time": _now(),
                }
            ],
        )

    def write_task(self, name: str, description: str) -> Path:
        """The task YAML over ``items.jsonl`` (intended labels, provenance in meta)."""
        import yaml

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
        path = self.path / TASK
        atomic_write(path, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
        return path


def _items_of(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    sid = row["source_id"]
    return [
        {
            "id": f"gen:{sid}:{key}",
            "premise": row["premise"],
            "hypothesis": row["hypotheses"][key],
            "label": key,
            "generator": row["model"],
            "source_id": sid,
            "attempt": row["attempt"],
        }
        for key in KEYS
    ]


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class GenerateConfig:
    """What ``nlieval generate`` does; ``limit`` and ``attempts`` may change between runs
    of one folder, the others are its identity (see :attr:`GenFolder.IDENTITY`).

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


def _targets_and_examples(
    config: GenerateConfig,
) -> tuple[data.Dataset, list[Sentence], list[Example]]:
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

    ``summary["stopped"]`` is None, or says why the run stopped early (the server failed
    ``config.max_server_errors`` times in a row); everything that arrived is kept.

    >>> summary = generate_items(load_generator("smollm2-135m"), GenerateConfig("snli", limit=50),
    ...                          "runs/gen-smol")   # doctest: +SKIP
    """
    from tqdm import tqdm

    started = time.perf_counter()
    ds, targets, examples = _targets_and_examples(config)
    folder = GenFolder(out)
    identity = {
        "generator": backend.name,
        "task": config.task,
        "split": ds.split,
        "sentences": config.sentences,
        "examples": config.examples,
        "example_ids": [ex.source_id for ex in examples],
        "seed": config.seed,
        "temperature": config.temperature,
        "max_new_tokens": config.max_new_tokens,
        "prompt_version": PROMPT_VERSION,
    }
    folder.start({**identity, **_settings(config), "data": ds.source}, overwrite=overwrite)
    folder.repair()
    # Items in data order whatever order answers arrived in (concurrent requests).
    order = {t.source_id: n for n, t in enumerate(targets)}
    folder.rebuild_items(order)
    name = f"generated-{ds.task}"
    folder.write_task(
        name, f"hypotheses written by {backend.name} for {config.sentences}s of {ds.task}"
    )
    states = folder.state()
    todo = [t for t in targets if states[t.source_id].valid_attempt is None]
    stopped: str | None = None
    in_a_row = 0
    bar = tqdm(total=len(todo), desc="premises", unit="premise", disable=not progress)
    try:
        for rnd in range(config.attempts):
            if not todo or stopped:
                break
            last_round = rnd == config.attempts - 1
            # Sentences at the same attempt share temperature and seed: one batch each.
            batches: dict[tuple[float, int], list[tuple[Sentence, int]]] = defaultdict(list)
            for t in todo:
                attempt = states[t.source_id].answers + 1
                batches[config.sampling(attempt)].append((t, attempt))
            retry: list[Sentence] = []
            for (temperature, seed), batch in batches.items():
                convs = [build_messages(t.text, examples) for t, _ in batch]
                answers = iter_answers(backend, convs, config.max_new_tokens, temperature, seed)
                try:
                    for i, answer in answers:
                        t, attempt = batch[i]
                        st = states[t.source_id]
                        if isinstance(answer, Exception):
                            folder.log_failure(t.source_id, t.text, str(answer))
                            st.server_failures += 1
                            bar.update(1)
                            in_a_row += 1
                            if in_a_row >= config.max_server_errors:
                                stopped = (
                                    f"the server failed {in_a_row} requests in a row "
                                    f"(last: {answer})"
                                )
                                break
                            continue
                        in_a_row = 0
                        row = _answer_row(backend.name, t, attempt, temperature, seed, answer)
                        folder.log_answer(row)
                        st.answers = attempt
                        if row["valid"]:
                            st.valid_attempt = attempt
                            bar.update(1)
                        else:
                            st.problems.append(row["problem"])
                            retry.append(t)
                            bar.update(1 if last_round else 0)
                finally:
                    # Stops the requests still queued when the server is gone.
                    close = getattr(answers, "close", None)
                    if close is not None:
                        close()
                if stopped:
                    break
            todo = sorted(retry, key=lambda t: order[t.source_id])
    finally:
        bar.close()
        n_items = folder.rebuild_items(order)
        summary = {
            "generator": backend.name,
            "task": ds.task,
            "split": ds.split,
            "examples": len(examples),
            **summarize(targets, states, n_items),
            "seconds": round(time.perf_counter() - started, 1),
            "stopped": stopped,
        }
        atomic_write(folder.path / SUMMARY, json.dumps(summary, indent=2) + "\n")
    folder.write_task(
        name,
        f"{n_items // len(KEYS)} premises x 3 hypotheses written by {backend.name} "
        f"for {config.sentences}s of {ds.task} {ds.split} (label = intended label)",
    )
    return summary


def _settings(config: GenerateConfig) -> dict[str, Any]:
    keep = ("limit", "attempts", "retry_temperature", "data_dir", "max_server_errors")
    return {k: v for k, v in asdict(config).items() if k in keep}


def _answer_row(
    model: str, t: Sentence, attempt: int, temperature: float, seed: int, answer: str
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "kind": "answer",
        "source_id": t.source_id,
        "premise": t.text,
        "model": model,
        "attempt": attempt,
        "temperature": temperature,
        "seed": seed,
        "answer": answer,
    }
    try:
        hyps = parse_hypotheses(answer)
    except InvalidAnswer as err:
        row.update(valid=False, problem=str(err), hypotheses=None)
    else:
        row.update(valid=True, problem=None, hypotheses={lab.value: h for lab, h in hyps.items()})
    row["time"] = _now()
    return row
