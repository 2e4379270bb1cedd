"""The prompt of generated items (:mod:`nlieval.metainference.generated`): the sentences
to write hypotheses for, the solved examples drawn from the task's pool, and the chat
turns that ask for one sentence's hypotheses."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..data import seeded_rng
from ..types import NLI3, Item, Label

Message = dict[str, str]

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
