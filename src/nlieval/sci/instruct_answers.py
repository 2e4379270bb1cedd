"""The answers of ``nlieval instruct`` (:mod:`nlieval.sci.instruct`): the class an answer
text names (:func:`parse_answer`), the one-hot scores recorded for it
(:func:`answer_scores`), :func:`evaluate_instruct`, which asks a chat model about items
and turns its answers into records, and the backend wrappers with which a run keeps the
answers that arrived before a request failed (:class:`ReceivedAnswers`,
:class:`ReplayAnswers`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..backends import Generation, GenerationBackend, stream_answers
from ..types import LETTERS, SCI4, Item, Label, Record
from .instruct_prompt import (
    InstructPrompt,
    Message,
    build_messages,
    default_prompt,
    exclude_items,
    render_conversation,
    select_exemplars,
)

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
#: The options of the shipped prompt: A-D in SCI4 order.
DEFAULT_OPTIONS: tuple[tuple[str, Label], ...] = tuple(
    (LETTERS[n], lab) for n, lab in enumerate(SCI4)
)


@functools.lru_cache(maxsize=64)
def _option_regex(tokens: tuple[str, ...]) -> re.Pattern[str]:
    # A bare option: "B", "(B)", "B.", "B)", "B: Reasoning", "b - reasoning"; not the
    # article in "A reasoning relation". Longest first: "ab" before "a".
    alt = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(rf"^(?:\(({alt})\)|({alt})(?=\s*[.):,\-]|\s*$))", re.I)


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


def _option_class(text: str, options: Sequence[tuple[str, Label]]) -> Label | None:
    by_token = {tok.lower(): lab for tok, lab in options}
    m = _option_regex(tuple(by_token)).match(_LEAD_IN.sub("", text, count=1))
    if m is None:
        return None
    return by_token[(m.group(1) or m.group(2)).lower()]


def parse_answer(
    text: str | None, options: Sequence[tuple[str, Label]] = DEFAULT_OPTIONS
) -> Label | None:
    """The class an answer names, or None when it names none or more than one.

    ``options`` are the prompt's ``(option, class)`` pairs (see
    :attr:`~nlieval.sci.instruct_prompt.InstructPrompt.options`; default A-D in SCI4
    order): an option counts when it opens the answer and stands alone, in parentheses
    or followed by punctuation, in any case; no other letter does. Class words count
    anywhere, in any case, whatever the punctuation, markdown and surrounding words;
    negated ones ("not neutral") are ignored. An option and a word must agree.

    >>> [parse_answer(a) for a in ("**B**", "contrast.", "Neutral or entailment")]
    [<Label.REASONING: 'reasoning'>, <Label.CONTRASTING: 'contrasting'>, None]
    >>> table3 = [("a", Label.ENTAILMENT), ("b", Label.REASONING),
    ...           ("c", Label.CONTRASTING), ("d", Label.NEUTRAL)]
    >>> parse_answer("c. Sentence2 mentions a criticism", table3).value
    'contrasting'
    """
    if not text:
        return None
    clean = re.sub(r"n['’]t\b", " not", text)  # "isn't" is a negation, not "isn" + "t"
    clean = re.sub(r"[*_`\"'“”‘’#>]", " ", clean).strip()
    found = _word_classes(clean)
    option = _option_class(clean, options)
    if option is not None:
        found.add(option)
    return found.pop() if len(found) == 1 else None


# --------------------------------------------------------------------------- evaluation

_EPS = 1e-12  # floor of one-hot probabilities before the log, so NLLs stay finite


def answer_scores(pred: Label | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(loglik, probs)`` of a record of a generated answer, in :data:`SCI4` order:
    one-hot on the parsed class (log-probabilities floored at 1e-12), uniform when the
    answer names no class.

    >>> [round(x, 1) for x in answer_scores(Label.REASONING)[0]]
    [-27.6, 0.0, -27.6, -27.6]
    """
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
    prompt: InstructPrompt | None = None,
) -> list[Record]:
    """Ask a chat model for the class of every item (greedy) and record its answers.

    Exemplars come from ``pool`` less any item with a test item's id, so the pool may be
    the test split itself; or they are given as ``exemplars`` (chosen once for a whole
    run, as :func:`~nlieval.sci.instruct.run_instruct` does; ``pool`` is then ignored).
    ``Record.seed`` is the run index; ``shots`` the exemplar ids; ``answer`` the raw text;
    ``pred`` None when :func:`parse_answer` finds no class (read in the prompt's
    options); ``model`` defaults to the backend's name; ``prompt`` the prompt file
    (None: the shipped prompt). One ``generate`` call holds at most ``batch_size``
    conversations, and no more than the backend declares it takes at once
    (:meth:`~nlieval.backends.Generation.of`).

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
    convs = [build_messages(it, exemplars, system_role, prompt) for it in items]
    answers: list[str] = []
    declared = Generation.of(backend).batch
    batch_size = max(1, batch_size if declared is None else min(batch_size, declared))
    for start in range(0, len(convs), batch_size):
        batch = convs[start : start + batch_size]
        out = backend.generate(batch, max_new_tokens=max_new_tokens, temperature=0.0, seed=run)
        if len(out) != len(batch):
            raise ValueError(f"{backend.name} gave {len(out)} answers for {len(batch)} prompts")
        answers += out
        if progress is not None:
            progress(len(batch))
    options = (prompt or default_prompt()).options
    records = []
    for item, conv, answer in zip(items, convs, answers, strict=True):
        pred = parse_answer(answer, options)
        loglik, probs = answer_scores(pred)
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
                # Every field the task keeps (domain, genre, a task YAML's meta), as a
                # run's records hold them: grid and breakdown group by any of them.
                meta=dict(item.meta),
            )
        )
    return records


# --------------------------------------------------------------------------- received answers


class ReceivedAnswers:
    """A streaming backend (``Generation(streaming=True)``: a server's) whose
    :meth:`generate` drives it through :func:`~nlieval.backends.stream_answers`, the one
    driver of a streaming engine, and keeps the answers that arrived in :attr:`answers`
    (by index) when a request fails for good, so that
    :func:`~nlieval.sci.instruct.run_instruct` saves them before it stops.

    >>> class Flaky:
    ...     name, generation = "flaky", Generation(streaming=True)
    ...     def iter_generate(self, convs, max_new_tokens, temperature, seed):
    ...         yield 1, "B"
    ...         yield 0, RuntimeError("request 0 failed")
    >>> received = ReceivedAnswers(Flaky())
    >>> received.generate([[], []])
    Traceback (most recent call last):
    RuntimeError: request 0 failed
    >>> received.answers
    {1: 'B'}
    """

    #: A chunk is one call: :attr:`answers` are indexed within it.
    generation = Generation(batch=None)

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
        for i, answer in stream_answers(
            self.inner, conversations, max_new_tokens, temperature, seed
        ):
            if isinstance(answer, BaseException):
                failed = failed or answer
            else:
                self.answers[i] = answer
        if failed is not None:
            raise failed
        return [self.answers[i] for i in range(len(conversations))]


class ReplayAnswers:
    """Answers already received, given back in order (to record them)."""

    generation = Generation(batch=None)

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
