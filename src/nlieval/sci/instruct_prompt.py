"""The prompt of ``nlieval instruct`` (:mod:`nlieval.sci.instruct`): the system message
that defines the four scientific classes, the user turn of a sentence pair, the
conversation of a test item with its k-shot exemplar turns, and the choice of those
exemplars (``k / 4`` per class, never a test item).

The text is data: a prompt file (:mod:`nlieval.data.prompt_files`, ``kind: instruct``)
read into an :class:`InstructPrompt`; the shipped default is
``resources/prompts/instruct.yaml``. Its templates know these variables:

- ``system``: ``classes`` (one mapping per class in option order: ``letter``, its option
  from the file's ``options`` (default A-D), ``name``, the display name, ``label``, the
  label value, ``definition``, from the file's ``definitions``), ``exemplars`` (the run's
  exemplars: ``premise``, ``hypothesis``, ``name``, ``label``) and ``k``;
- ``user``: ``premise`` and ``hypothesis`` of one pair (an exemplar's or the test item's);
- ``assistant``: an exemplar's answer, from its class's ``name``, ``label`` and ``letter``
  (its option).

:attr:`InstructPrompt.version`, a hash of the file's content, is part of a run folder's
identity (the shipped prompt keeps :data:`PROMPT_VERSION`, its version from before
prompt files, so older folders resume).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..data import PromptFile, read_prompt, seeded_rng, shipped_prompt
from ..ground import BoundedTemplate, load_prompt_templates
from ..types import LETTERS, SCI4, Item, Label

Message = dict[str, str]

#: The variables each part of an instruct prompt file knows (module docstring).
VARIABLES = {
    "system": ("classes", "exemplars", "k"),
    "user": ("premise", "hypothesis"),
    "assistant": ("name", "label", "letter"),
}

#: The version of the shipped prompt: the hash the prompt text had before it became a
#: file (sha-256 of the system message and the user turn), kept so those folders resume.
PROMPT_VERSION = "dca1150a7dea"


@dataclass(frozen=True)
class InstructPrompt:
    """A compiled instruct prompt file for the classes ``labels`` (option order).

    >>> p = InstructPrompt.load()
    >>> print(p.user(Item("1", "A holds.", "B holds.", None)))
    Sentence 1: A holds.
    Sentence 2: B holds.
    Relation:
    """

    file: PromptFile
    labels: tuple[Label, ...] = SCI4
    templates: dict[str, BoundedTemplate] = field(init=False, compare=False, repr=False)
    #: ``(option, class)`` in the order the prompt lists them: the file's ``options``, or
    #: A, B, C, D in ``labels`` order. The answers are read in exactly these.
    options: tuple[tuple[str, Label], ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        names = {lab.value for lab in self.labels}
        for key, given in (("definitions", self.file.definitions), ("options", self.file.options)):
            if given and set(given) != names:
                missing, extra = sorted(names - set(given)), sorted(set(given) - names)
                raise ValueError(
                    f"{self.file.origin}: {key} must name the classes "
                    f"{', '.join(sorted(names))}"
                    + (f"; missing {', '.join(missing)}" if missing else "")
                    + (f"; unknown {', '.join(extra)}" if extra else "")
                )
        if self.file.options:
            options = tuple((tok, Label(name)) for name, tok in self.file.options.items())
        else:
            options = tuple((LETTERS[n], lab) for n, lab in enumerate(self.labels))
        object.__setattr__(self, "options", options)
        compiled = load_prompt_templates(
            self.file.templates(), self.file.origin, VARIABLES, needs={"user": VARIABLES["user"]}
        )
        object.__setattr__(self, "templates", compiled)
        # A template that compiles may still fail when rendered (the sandbox refuses an
        # attribute at render time): try every part once now, before any work is done.
        probes = [
            Item(f"p{n}", "A premise.", "A hypothesis.", lab) for n, lab in enumerate(self.labels)
        ]
        self.build_messages(Item("probe", "A premise.", "A hypothesis.", None), probes)

    @classmethod
    def load(cls, path: str | Path | None = None, labels: Sequence[Label] = SCI4) -> InstructPrompt:
        """The prompt file at ``path`` (None: the shipped default; a plain name: a shipped
        prompt, see :func:`nlieval.data.read_prompt`), compiled."""
        file = shipped_prompt("instruct") if path is None else read_prompt(path, "instruct")
        return cls(file, tuple(labels))

    @property
    def version(self) -> str:
        """Part of a run folder's identity: the file's content hash (12 hex digits), or
        :data:`PROMPT_VERSION` for the shipped prompt."""
        if self.file.digest == shipped_prompt("instruct").digest:
            return PROMPT_VERSION
        return self.file.digest[:12]

    def classes(self) -> list[dict[str, str]]:
        """The ``classes`` of the system template, in option order."""
        return [
            {
                "letter": option,
                "name": lab.display,
                "label": lab.value,
                "definition": self.file.definitions.get(lab.value, ""),
            }
            for option, lab in self.options
        ]

    def system(self, exemplars: Sequence[Item] = ()) -> str:
        """The instructions, for a run whose exemplars are ``exemplars``."""
        shown = [
            {"premise": ex.premise, "hypothesis": ex.hypothesis, "name": ex.label.display,
             "label": ex.label.value}
            for ex in exemplars
            if ex.label is not None
        ]  # fmt: skip
        return self.templates["system"].render(
            classes=self.classes(), exemplars=shown, k=len(exemplars)
        )

    def user(self, item: Item) -> str:
        """The user turn of one sentence pair."""
        return self.templates["user"].render(premise=item.premise, hypothesis=item.hypothesis)

    def answer(self, label: Label) -> str:
        """An exemplar's answer turn."""
        letter = next(tok for tok, lab in self.options if lab is label)
        return self.templates["assistant"].render(
            name=label.display, label=label.value, letter=letter
        )

    def build_messages(
        self, item: Item, exemplars: Sequence[Item] = (), system_role: bool = True
    ) -> list[Message]:
        """The conversation for one test item: system, exemplar turns, the item.

        ``system_role=False`` puts the instructions at the top of the first user turn,
        for chat templates without a system role. Instructions that render empty are
        left out (no system turn, nothing prepended).
        """
        turns: list[Message] = []
        for ex in exemplars:
            if ex.label is None:
                raise ValueError(f"exemplar {ex.id} has no label")
            if self.file.exemplar_turns:
                turns.append({"role": "user", "content": self.user(ex)})
                turns.append({"role": "assistant", "content": self.answer(ex.label)})
        turns.append({"role": "user", "content": self.user(item)})
        system = self.system(exemplars)
        if not system.strip():
            # A prompt that is one user turn (MisMatched's Table 3) sends no empty system
            # turn and prepends nothing: its text is sent as printed.
            return turns
        if system_role:
            return [{"role": "system", "content": system}, *turns]
        first = turns[0]
        turns[0] = {"role": "user", "content": f"{system}\n\n{first['content']}"}
        return turns


@functools.cache
def default_prompt() -> InstructPrompt:
    """The shipped prompt, compiled once.

    >>> default_prompt().version == PROMPT_VERSION
    True
    """
    return InstructPrompt.load()


#: One line per class, in option (letter) order: the shipped prompt's definitions.
CLASS_DEFINITIONS: dict[Label, str] = {
    lab: default_prompt().file.definitions[lab.value] for lab in SCI4
}

#: The shipped prompt's system message (no exemplars in it).
SYSTEM_PROMPT = default_prompt().system()

#: Shot counts the methods use (any multiple of 4 is accepted).
SHOTS: tuple[int, ...] = (0, 4, 8, 12, 16)


def user_message(item: Item) -> str:
    """The shipped prompt's user turn for one sentence pair.

    >>> print(user_message(Item("1", "A holds.", "B holds.", None)))
    Sentence 1: A holds.
    Sentence 2: B holds.
    Relation:
    """
    return default_prompt().user(item)


def build_messages(
    item: Item,
    exemplars: Sequence[Item] = (),
    system_role: bool = True,
    prompt: InstructPrompt | None = None,
) -> list[Message]:
    """The conversation for one test item under ``prompt`` (None: the shipped one):
    system, exemplar turns, the item (see :meth:`InstructPrompt.build_messages`).

    >>> ex = Item("e1", "X grows.", "Thus Y grows.", Label.REASONING)
    >>> [m["role"] for m in build_messages(Item("1", "A.", "B.", None), [ex])]
    ['system', 'user', 'assistant', 'user']
    """
    return (prompt or default_prompt()).build_messages(item, exemplars, system_role)


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
        chosen += class_walk(pool, lab, per_class, run, seed)[:per_class]
    seeded_rng(seed, "order", run, k).shuffle(chosen)
    return chosen


def class_walk(pool: Sequence[Item], lab: Label, per_class: int, run: int, seed: int) -> list[Item]:
    """Every pool item of class ``lab`` in the order run ``run`` takes them (the order
    :func:`select_exemplars` takes its first ``per_class`` from): one seeded order of the
    class, read from the run's start position, wrapping around. Fewer than
    ``per_class`` items is a ``ValueError``.

    >>> pool = [Item(str(n), "a", "b", lab) for n, lab in enumerate(SCI4 * 3)]
    >>> sorted(it.id for it in class_walk(pool, Label.NEUTRAL, 1, 0, 0))
    ['11', '3', '7']
    """
    members = sorted((it for it in pool if it.label is lab), key=lambda it: it.id)
    if len(members) < per_class:
        raise ValueError(
            f"{per_class} exemplars of class {lab.value} needed, the pool has {len(members)}"
        )
    seeded_rng(seed, "exemplars", lab.value).shuffle(members)
    # Blocks as wide as the largest usual k: nested over k, disjoint over runs.
    start = run * max(per_class, max(SHOTS) // len(SCI4))
    return [members[(start + n) % len(members)] for n in range(len(members))]


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
