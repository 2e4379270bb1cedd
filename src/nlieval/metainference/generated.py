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
premises with a valid answer, or with ``attempts`` invalid ones, are skipped, the others
(server failures, fewer answers, not reached) are asked, so that an interrupted run
(Ctrl-C as kill -9) ends as an uninterrupted one. Folders of older versions that kept the answers in
``answers.jsonl`` are not read: the command refuses them, naming the file (pass
``--overwrite`` to start again).

This module holds the run (:func:`generate_items`); its parts live beside it and their
public names are importable from here too: :mod:`~nlieval.metainference.generated_prompt`
(sentences, solved examples, the chat turns), :mod:`~nlieval.metainference.generated_parse`
(reading an answer), :mod:`~nlieval.metainference.generated_folder` (the answer rows and
the files derived from them) and :mod:`~nlieval.metainference.generated_config` (the
settings).

>>> from nlieval.types import Label
>>> hyps = parse_hypotheses('Sure! {"entailment": "A man sleeps.", '
...                         '"neutral": "A man dreams.", "contradiction": "A man runs."}')
>>> hyps[Label.NEUTRAL]
'A man dreams.'
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import data
from ..backends import GenerationBackend, ResolvedModel, Stop, stream_answers
from ..data import Dataset
from ..ground import atomic_write
from ..runs import RECORDS, RunError, RunFolder, Step, execute
from ..types import NLI3
from .generated_config import GenerateConfig, GenerateFolderConfig
from .generated_folder import (
    ITEM_META,
    ITEMS,
    LEGACY_ANSWERS,
    SUMMARY,
    TASK,
    Answer,
    AnswerState,
    GenerateSummary,
    answer_states,
    first_valid,
    format_summary,
    summarize,
    write_items,
    write_task,
)
from .generated_parse import KEYS, InvalidAnswer, answer_complete, parse_hypotheses
from .generated_prompt import (
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    Example,
    GeneratePrompt,
    Message,
    Sentence,
    answer_json,
    build_messages,
    distinct_sentences,
    read_examples,
    select_examples,
    user_message,
)

__all__ = [
    "ITEM_META",
    "ITEMS",
    "KEYS",
    "LEGACY_ANSWERS",
    "PREMISES_PER_CHUNK",
    "PROMPT_VERSION",
    "SUMMARY",
    "SYSTEM_PROMPT",
    "TASK",
    "Answer",
    "AnswerState",
    "Example",
    "GenerateConfig",
    "GenerateFolderConfig",
    "GeneratePrompt",
    "GenerateSummary",
    "InvalidAnswer",
    "Message",
    "Sentence",
    "answer_complete",
    "answer_json",
    "answer_states",
    "build_messages",
    "distinct_sentences",
    "first_valid",
    "format_summary",
    "generate_items",
    "iter_answers",
    "parse_hypotheses",
    "read_examples",
    "select_examples",
    "summarize",
    "user_message",
    "write_items",
    "write_task",
]

log = logging.getLogger(__name__)

#: Premises per chunk of the run: asked together (as concurrently as the backend allows),
#: invalid answers asked again within the chunk; ``items.jsonl`` is rewritten after each.
PREMISES_PER_CHUNK = 256


def iter_answers(
    backend: GenerationBackend,
    conversations: Sequence[Sequence[Message]],
    max_new_tokens: int,
    temperature: float,
    seed: int,
) -> Iterator[tuple[int, str | Exception]]:
    """``(index, answer)`` as answers arrive; a failed request gives its exception.

    The backend is driven as it declares (:func:`nlieval.backends.stream_answers`): a
    streaming one (a server) concurrently, each answer saved as it arrives; the others
    in the batches they declare (``--batch-size`` for transformers; all at once for vLLM
    and for a backend that declares nothing), each batch's answers saved after it. Every
    answer ends once :func:`answer_complete` holds (a later continuation would parse to
    the same hypotheses).
    """
    stop = Stop(rule=answer_complete)
    yield from stream_answers(backend, conversations, max_new_tokens, temperature, seed, stop)


def _targets_and_examples(
    config: GenerateConfig,
) -> tuple[Dataset, list[Sentence], list[Example]]:
    ds = data.load_task(config.task, config.data_dir, config.split, skip_bad=config.skip_bad)
    items = ds.items
    if config.limit is not None:
        where = f"{config.task} {ds.split}"
        data.warn_if_short(config.limit, f"--limit {config.limit}", len(items), where)
        items = items[: config.limit]
    targets = distinct_sentences(items, config.sentences)
    if config.max_sentences is not None:
        where = f"{config.task} {ds.split} (distinct {config.sentences}s)"
        asked = config.max_sentences
        data.warn_if_short(asked, f"--max-sentences {asked}", len(targets), where)
        targets = targets[:asked]
    if not targets:
        raise data.DataError(ds.source, None, None, f"no {config.sentences}s to generate for")
    examples: list[Example] = []
    if config.exemplars:
        examples = read_examples(config.exemplars)
        shared = {t.text for t in targets} & {ex.premise for ex in examples}
        if shared:
            log.warning(
                "%d premise(s) of %s are also solved examples of %s: their answers may copy "
                "the example", len(shared), config.task, config.exemplars
            )  # fmt: skip
    elif config.examples > 0:
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
        where = f"{pool.task} {pool.split} (premises with all three labels)"
        data.warn_if_short(config.examples, f"--examples {config.examples}", len(examples), where)
    return ds, targets, examples


class _Stopped(Exception):
    """The server failed ``max_server_errors`` requests in a row (the message says so)."""


def generate_items(
    chat: ResolvedModel,
    config: GenerateConfig,
    out: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = False,
) -> GenerateSummary:
    """Generate (or resume generating) items into ``out``; returns the summary, which is
    also saved as ``summary.json`` (:meth:`GenerateSummary.to_dict`).

    ``chat`` is the chat model resolved (see :func:`nlieval.backends.resolve`): checked
    before the data is read, and loaded only once the folder is known to be resumable
    (and closed at the end; a stand-in's backend is its caller's to close). The folder's
    identity holds the split as read and the solved examples' text (an edited data file
    is refused on resume), and the chat model's fingerprints.

    The sentences still without a valid answer go through :func:`nlieval.runs.run_steps`
    in chunks of :data:`PREMISES_PER_CHUNK` (asked together, invalid answers asked again
    within the chunk), each answer appended to ``records.jsonl`` as it arrives.
    ``summary.stopped`` is None, or says why the run stopped early (the server failed
    ``config.max_server_errors`` times in a row); everything that arrived is kept.

    A stand-in chat model that writes the same three hypotheses for any premise, asked
    for two premises of the packaged ``smoke`` task:

    >>> import tempfile
    >>> from nlieval.backends import ChatModel, stand_in
    >>> class Echo:
    ...     name = "echo"
    ...     def generate(self, conversations, max_new_tokens=32, temperature=0.0, seed=0):
    ...         return ['{"entailment": "A.", "neutral": "B.", "contradiction": "C."}'
    ...                 for _ in conversations]
    >>> out = Path(tempfile.mkdtemp())
    >>> echo = stand_in(ChatModel("echo"), lambda _: Echo())
    >>> summary = generate_items(echo, GenerateConfig("smoke", limit=2, examples=0), out)
    >>> summary.premises, summary.parsed_first_try, summary.items, summary.stopped
    (2, 2, 6, None)
    >>> print(*sorted(p.name for p in out.iterdir() if not p.name.startswith(".")))
    config.json items.jsonl provenance.jsonl records.jsonl summary.json task.yaml timing.json
    >>> data.load_task(str(out / TASK)).items[0].label.value
    'entailment'
    """
    started = time.perf_counter()
    prompt = GeneratePrompt.load(config.prompt)  # a bad prompt file fails before anything
    chat.check()  # a wrong model string fails before the data is read
    ds, targets, examples = _targets_and_examples(config)
    loaded: list[GenerationBackend] = []

    def backend() -> GenerationBackend:
        if not loaded:
            loaded.append(chat.chat())
        return loaded[0]

    try:
        return _generate(
            backend,
            chat.spec.name,
            config,
            ds,
            targets,
            examples,
            prompt,
            out,
            started,
            overwrite=overwrite,
            progress=progress,
            model_fingerprints=chat.fingerprints(),
        )
    finally:
        chat.close()  # a server's client: its connections and the thread of its requests


def _open(state: AnswerState, attempts: int) -> bool:
    """Whether a sentence is still to ask: no valid answer yet, and fewer than
    ``attempts`` answers in all (a request that got no answer, a server's failure, does
    not count)."""
    return state.valid_attempt is None and state.answers < attempts


def _generate(
    backend: Callable[[], GenerationBackend],
    generator: str,
    config: GenerateConfig,
    ds: Dataset,
    targets: list[Sentence],
    examples: list[Example],
    prompt: GeneratePrompt,
    out: str | Path,
    started: float,
    *,
    overwrite: bool,
    progress: bool,
    model_fingerprints: Mapping[str, str] | None,
) -> GenerateSummary:
    path = Path(out)
    legacy = path / LEGACY_ANSWERS
    if legacy.is_file() and not overwrite:
        raise RunError(
            f"{path} was made by an older `nlieval generate` (its answers are in "
            f"{LEGACY_ANSWERS}, now {RECORDS})",
            advice="choose another --out, or pass --overwrite to discard it and start again",
        )
    folder = RunFolder(path, Answer)
    # Items in data order whatever order answers arrived in (concurrent requests).
    order = {t.source_id: n for n, t in enumerate(targets)}
    name = f"generated-{ds.task}"
    states: dict[str, AnswerState] = defaultdict(AnswerState)
    valid: dict[str, Answer] = {}

    began: list[bool] = []

    def plan_steps(folder: RunFolder[Answer]) -> list[Step[Sentence]]:
        # What is still to ask depends on the answers the folder holds (valid or not).
        began.append(True)
        if overwrite:
            for stale in (LEGACY_ANSWERS, ITEMS, SUMMARY, TASK):
                (path / stale).unlink(missing_ok=True)
        rows = folder.records()
        states.update(answer_states(rows))
        valid.update(first_valid(rows))
        write_items(path, valid, order)
        write_task(
            path, name, f"hypotheses written by {generator} for {config.sentences}s of {ds.task}"
        )
        todo = [t for t in targets if _open(states[t.source_id], config.attempts)]
        return [Step(f"|{ds.task}|{config.sentences}", f"{config.sentences}s", todo)]

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
        for _ in range(config.attempts):
            # A sentence's answers count over every invocation of the folder, so that
            # an interrupted run resumes into what an uninterrupted one would have asked.
            pending = [t for t in pending if _open(states[t.source_id], config.attempts)]
            if not pending:
                break
            # Sentences at the same attempt share temperature and seed: one batch each.
            batches: dict[tuple[float, int], list[tuple[Sentence, int]]] = defaultdict(list)
            for t in pending:
                attempt = states[t.source_id].answers + 1
                batches[config.sampling(attempt)].append((t, attempt))
            retry: list[Sentence] = []
            for (temperature, seed), batch in batches.items():
                convs = [build_messages(t.text, examples, prompt) for t, _ in batch]
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
                            progress(1 if attempt >= config.attempts else 0)
                finally:
                    # Stops the requests still queued when the server is gone.
                    close = getattr(answers, "close", None)
                    if close is not None:
                        close()
            pending = sorted(retry, key=lambda t: order[t.source_id])
        write_items(path, valid, order)  # the chunk's rows are saved by now

    shown = [
        [ex.source_id, ex.premise, sorted((k.value, v) for k, v in ex.hypotheses.items())]
        for ex in examples
    ]
    prints = {
        f"data {ds.task}": data.items_fingerprint(ds.items),
        "examples": data.text_fingerprint(json.dumps(shown)),
        **(model_fingerprints or {}),
    }
    stopped: str | None = None
    try:
        execute(
            folder,
            GenerateFolderConfig.of(generator, config, ds, examples, prompt.version),
            plan_steps,
            lambda _: backend(),
            work,
            overwrite=overwrite,
            progress=progress,
            chunk_size=PREMISES_PER_CHUNK,
            stream=True,
            fingerprints=prints,
        )
    except _Stopped as err:
        stopped = str(err)
    finally:
        # A folder refused at its start (another command's, other settings) is not ours:
        # nothing is written into it.
        if began:
            rows = folder.records()
            n_items = write_items(path, first_valid(rows), order)
            summary = GenerateSummary(
                generator=generator,
                task=ds.task,
                split=ds.split,
                examples=len(examples),
                **summarize(targets, answer_states(rows), n_items),
                seconds=round(time.perf_counter() - started, 1),
                stopped=stopped,
            )
            text = json.dumps(summary.to_dict(), indent=2) + "\n"
            atomic_write(path / SUMMARY, text, root=path)
    write_task(
        path,
        name,
        f"{n_items // len(KEYS)} premises x 3 hypotheses written by {generator} "
        f"for {config.sentences}s of {ds.task} {ds.split} (label = intended label)",
    )
    return summary
