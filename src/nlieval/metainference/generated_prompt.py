"""The prompt of generated items (:mod:`nlieval.metainference.generated`): the sentences
to write hypotheses for, the solved examples (drawn from the task's pool, or read from an
exemplar file), and the chat turns that ask for one sentence's hypotheses.

The text is data: a prompt file (:mod:`nlieval.data.prompt_files`, ``kind: generate``)
read into a :class:`GeneratePrompt`; the shipped default is
``resources/prompts/generate.yaml``. Its templates know these variables:

- ``system``: ``examples`` (the solved examples: ``premise``, ``entailment``,
  ``neutral``, ``contradiction``) and ``n``, their number;
- ``user``: ``premise``, the sentence to write hypotheses for;
- ``assistant``: a solved example's answer, from its ``premise``, ``entailment``,
  ``neutral`` and ``contradiction`` (the ``json`` filter writes a JSON string).

:attr:`GeneratePrompt.version` is part of a folder's identity: :data:`PROMPT_VERSION`
for the shipped prompt (its version from before prompt files), else the file's content
hash.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..data import (
    PromptFile,
    read_prompt_file,
    read_solved_examples,
    seeded_rng,
    shipped_prompt,
)
from ..ground import BoundedTemplate, load_prompt_templates
from ..types import NLI3, Item, Label

Message = dict[str, str]

#: The version of the shipped prompt (it was 1 before prompt files; folders made then
#: resume).
PROMPT_VERSION = 1

_HYPS = tuple(lab.value for lab in NLI3)

#: The variables each part of a generate prompt file knows (module docstring).
VARIABLES = {
    "system": ("examples", "n"),
    "user": ("premise",),
    "assistant": ("premise", *_HYPS),
}


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


def read_examples(path: str | Path) -> list[Example]:
    """The solved examples of an exemplar file (jsonl or csv: ``premise``, ``entailment``,
    ``neutral``, ``contradiction`` and an optional ``id``), in file order.

    >>> p = Path(run_dir) / "ex.jsonl"
    >>> _ = p.write_text('{"premise": "A dog runs.", "entailment": "An animal moves.", '
    ...                  '"neutral": "A dog plays.", "contradiction": "A dog sleeps."}\\n')
    >>> read_examples(p)[0].hypotheses[Label.NEUTRAL]
    'A dog plays.'
    """
    rows = read_solved_examples(path, ("premise", *_HYPS))
    return [Example(r["id"], r["premise"], {lab: r[lab.value] for lab in NLI3}) for r in rows]


@dataclass(frozen=True)
class GeneratePrompt:
    """A compiled generate prompt file.

    >>> GeneratePrompt.load().user("A dog runs.")
    'Premise: A dog runs.'
    """

    file: PromptFile
    templates: dict[str, BoundedTemplate] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        compiled = load_prompt_templates(
            self.file.templates(), self.file.origin, VARIABLES, needs={"user": VARIABLES["user"]}
        )
        object.__setattr__(self, "templates", compiled)
        # A template that compiles may still fail when rendered (the sandbox refuses an
        # attribute at render time): try every part once now, before any work is done.
        probe = Example("probe", "A premise.", {lab: f"A {lab.value}." for lab in NLI3})
        self.build_messages("A premise.", [probe])

    @classmethod
    def load(cls, path: str | Path | None = None) -> GeneratePrompt:
        """The prompt file at ``path`` (None: the shipped default), compiled."""
        return cls(
            shipped_prompt("generate") if path is None else read_prompt_file(path, "generate")
        )

    @property
    def version(self) -> int | str:
        """Part of a folder's identity: :data:`PROMPT_VERSION` for the shipped prompt,
        else the file's content hash (12 hex digits)."""
        if self.file.digest == shipped_prompt("generate").digest:
            return PROMPT_VERSION
        return self.file.digest[:12]

    def system(self, examples: Sequence[Example] = ()) -> str:
        """The instructions, for a run with the solved ``examples``."""
        shown = [
            {"premise": ex.premise, **{lab.value: ex.hypotheses[lab] for lab in NLI3}}
            for ex in examples
        ]
        return self.templates["system"].render(examples=shown, n=len(examples))

    def user(self, premise: str) -> str:
        """The user turn asking for one premise's hypotheses."""
        return self.templates["user"].render(premise=premise)

    def answer(self, example: Example) -> str:
        """A solved example's answer turn, as the model should write it."""
        hyps = {lab.value: example.hypotheses[lab] for lab in NLI3}
        return self.templates["assistant"].render(premise=example.premise, **hyps)

    def build_messages(self, premise: str, examples: Sequence[Example] = ()) -> list[Message]:
        """System instructions, the solved examples as earlier turns (unless the file
        says ``exemplar_turns: false``), then the premise."""
        turns: list[Message] = [{"role": "system", "content": self.system(examples)}]
        for ex in examples if self.file.exemplar_turns else ():
            turns.append({"role": "user", "content": self.user(ex.premise)})
            turns.append({"role": "assistant", "content": self.answer(ex)})
        turns.append({"role": "user", "content": self.user(premise)})
        return turns


@functools.cache
def default_prompt() -> GeneratePrompt:
    """The shipped prompt, compiled once.

    >>> default_prompt().version
    1
    """
    return GeneratePrompt.load()


#: The shipped prompt's system message.
SYSTEM_PROMPT = default_prompt().system()


def user_message(premise: str) -> str:
    """The shipped prompt's user turn asking for one premise's hypotheses.

    >>> user_message("A dog runs.")
    'Premise: A dog runs.'
    """
    return default_prompt().user(premise)


def answer_json(hypotheses: Mapping[Label, str]) -> str:
    """A solved example's answer turn under the shipped prompt.

    >>> answer_json({Label.ENTAILMENT: "a", Label.NEUTRAL: "b", Label.CONTRADICTION: "c"})
    '{"entailment": "a", "neutral": "b", "contradiction": "c"}'
    """
    return default_prompt().answer(Example("", "", hypotheses))


def build_messages(
    premise: str, examples: Sequence[Example] = (), prompt: GeneratePrompt | None = None
) -> list[Message]:
    """System instructions, the solved examples as earlier turns, then the premise, under
    ``prompt`` (None: the shipped one).

    >>> ex = Example("7", "A man sleeps.", dict(zip(NLI3, ["A.", "B.", "C."])))
    >>> [m["role"] for m in build_messages("A dog runs.", [ex])]
    ['system', 'user', 'assistant', 'user']
    """
    return (prompt or default_prompt()).build_messages(premise, examples)
