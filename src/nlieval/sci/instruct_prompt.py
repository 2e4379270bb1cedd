"""The prompt of ``nlieval instruct`` (:mod:`nlieval.sci.instruct`): the system message
that defines the four scientific classes, the user turn of a sentence pair, the
conversation of a test item with its k-shot exemplar turns, and the choice of those
exemplars (``k / 4`` per class, never a test item). :data:`PROMPT_VERSION`, a hash of
the system message and the user turn, is part of a run folder's identity.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..data import seeded_rng
from ..types import LETTERS, SCI4, Item, Label

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


#: Changes whenever the prompt text does: part of a run folder's identity, so a folder
#: made with another prompt is never resumed with this one.
PROMPT_VERSION = hashlib.sha256(
    (SYSTEM_PROMPT + "\x00" + user_message(Item("", "{1}", "{2}", None))).encode()
).hexdigest()[:12]


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
