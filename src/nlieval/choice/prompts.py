"""Few-shot prompts for choice-based evaluation (METHODS.md section 2).

A prompt is k solved blocks and the test block, separated by a blank line. Each block is
rendered by a Jinja template that ends at ``Answer:``; a solved block then gets
`` {letter}``, and the test block's option letters, each with its leading space, are the
continuations whose log-likelihood is scored.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass

import jinja2

from ..data import TemplateSource, read_template_file
from ..ground import BadTemplate, BoundedSandbox, BoundedTemplate
from ..types import LETTERS, Item, Label

NLI3_TEMPLATE = """Premise: {{ premise }}
Hypothesis: {{ hypothesis }}
{% for letter, text in options %}{{ letter }}. {{ text }}
{% endfor %}Answer:"""

# HANS sentences are distributed tokenised, ending in " ."; the template adds its own
# final period, so the sentence's own is dropped to avoid "president .." in the prompt.
NLI2_TEMPLATE = """Premise: {{ premise | strip_period }}.
Hypothesis: {{ hypothesis | strip_period }}.
{% for letter, text in options %}{{ letter }}. {{ text }}
{% endfor %}Answer:"""

ALPHANLI_TEMPLATE = """Observation 1: {{ premise }}
Observation 2: {{ hypothesis }}
{% for letter, text in options %}{{ letter }}. {{ text }}
{% endfor %}Answer:"""

#: Template per task family. SciNLI and RTE reuse the generic lettered layouts.
TEMPLATES: dict[str, str] = {
    "nli3": NLI3_TEMPLATE,
    "nli2": NLI2_TEMPLATE,
    "alphanli": ALPHANLI_TEMPLATE,
    "sci4": NLI3_TEMPLATE,
}


def _strip_period(text: str) -> str:
    return text.rstrip().rstrip(".").rstrip()


#: What a block template may name: the item's fields and its lettered options.
VARIABLES = frozenset({"premise", "hypothesis", "choices", "options", "item"})

#: Filters a template may use: text chores only (no ``format``, ``center`` or ``indent``
#: that take a width, nothing that reaches objects or files).
FILTERS = (
    "capitalize",
    "default",
    "first",
    "join",
    "last",
    "length",
    "lower",
    "replace",
    "string",
    "title",
    "trim",
    "truncate",
    "upper",
)


def _sandbox() -> BoundedSandbox:
    # No globals at all (no range, cycler, joiner, namespace, lipsum, dict): a block
    # template walks the item's own fields and nothing else. The render bounds (time,
    # sizes, depth) are BoundedSandbox's; see docs/choice.md#templates.
    env = BoundedSandbox(
        filters=FILTERS,
        extra_filters={"strip_period": _strip_period},
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
    )
    env.globals.clear()
    return env


_ENV = _sandbox()


def load_template(family: str, template: str | None = None) -> BoundedTemplate:
    """The Jinja template for a family, or the user's: template text, or the path of a
    template file (a regular file of at most 64 KiB, UTF-8).

    Variables: ``premise``, ``hypothesis``, ``choices``, ``options`` (list of
    ``(letter, text)``), ``item`` (the :class:`~nlieval.types.Item`). The block must end
    where the answer letter follows (conventionally ``Answer:``). It renders in
    :class:`~nlieval.ground.sandbox.BoundedSandbox`: bounded in time, size and depth,
    and every failure is one ``ValueError`` line naming the template and its line.

    >>> load_template("nli3").render(premise="P", hypothesis="H",
    ...     options=[("A", "Yes")]).splitlines()[-1]
    'Answer:'
    >>> load_template("nli3", "{{ premise.ljust(10**9) }} Answer:").render(premise="P")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.sandbox.BadTemplate: template line 1: refused: ljust would build 1,000,...
    """
    if template is None:
        if family not in TEMPLATES:
            raise ValueError(f"unknown template family {family!r}; known: {sorted(TEMPLATES)}")
        origin, source = f"{family} template", TEMPLATES[family]
    elif isinstance(template, TemplateSource):
        origin, source = template.origin, str(template)
    elif "{{" not in template and "{%" not in template and os.path.lexists(template):
        # Template text always has {{ or {%; anything else that names a file is one.
        file = read_template_file(template)
        origin, source = file.origin, str(file)
    else:
        origin, source = "template", template
    tpl = _ENV.load(source, origin)
    unknown = tpl.undeclared - VARIABLES
    if unknown:
        raise BadTemplate(
            origin,
            None,
            f"unknown variable(s) {', '.join(sorted(unknown))}; "
            f"a block knows {', '.join(sorted(VARIABLES))}",
        )
    if not tpl.undeclared & VARIABLES:
        raise BadTemplate(
            origin,
            None,
            f"uses none of {', '.join(sorted(VARIABLES))}: every prompt would be the same"
            + ("" if "{" in source else " (no such template file either)"),
        )
    return tpl


def options_for(item: Item, labels: Sequence[Label]) -> list[tuple[str, str]]:
    """``(letter, text)`` per option: the item's choices if it has any, else label names."""
    texts = list(item.choices) if item.choices else [lab.display for lab in labels]
    if len(texts) != len(labels):
        raise ValueError(f"item {item.id}: {len(texts)} choices for {len(labels)} labels")
    return [(LETTERS[i], t) for i, t in enumerate(texts)]


def render_block(tpl: BoundedTemplate, item: Item, labels: Sequence[Label]) -> str:
    """The block for one item, ending where its answer letter goes."""
    options = options_for(item, labels)
    try:
        text = tpl.render(
            premise=item.premise,
            hypothesis=item.hypothesis,
            choices=list(item.choices),
            options=options,
            item=item,
        )
    except BadTemplate as err:
        raise err.at(f"item {item.id}") from None
    return text.rstrip()


def answer_letter(item: Item, labels: Sequence[Label]) -> str:
    """The letter of the item's gold label."""
    if item.label is None:
        raise ValueError(f"item {item.id} has no gold label and cannot be a solved example")
    return LETTERS[list(labels).index(item.label)]


@dataclass(frozen=True)
class Prompt:
    """The text scored for one item: ``prefix`` (the k solved blocks, shared by every
    item of a sweep point) followed by the test block. ``continuations`` are the option
    letters with their leading space."""

    prefix: str
    block: str
    continuations: tuple[str, ...]
    shots: tuple[str, ...]

    @property
    def text(self) -> str:
        return self.prefix + self.block


class PromptBuilder:
    """Builds the prompts of one sweep point (task, k, seed) from a fixed draw of shots.

    >>> from nlieval.types import NLI3
    >>> shot = Item("s1", "A man sleeps.", "A man is awake.", Label.CONTRADICTION)
    >>> pb = PromptBuilder("nli3", NLI3, [shot])
    >>> p = pb.build(Item("t1", "A cat sits.", "An animal sits.", None))
    >>> p.prefix.endswith("Answer: C\\n\\n"), p.continuations
    (True, (' A', ' B', ' C'))
    """

    def __init__(
        self,
        family: str,
        labels: Sequence[Label],
        shots: Sequence[Item],
        template: str | None = None,
    ) -> None:
        self.labels = tuple(labels)
        self.tpl = load_template(family, template)
        self.shots = tuple(shots)
        self.prefix = self._solved(self.shots)
        self.continuations = tuple(" " + LETTERS[i] for i in range(len(self.labels)))

    def _solved(self, shots: Sequence[Item]) -> str:
        """The solved blocks, each followed by its letter and a blank line."""
        return "".join(
            f"{render_block(self.tpl, s, self.labels)} {answer_letter(s, self.labels)}\n\n"
            for s in shots
        )

    def build(self, item: Item, shots: Sequence[Item] | None = None) -> Prompt:
        """The prompt for ``item``; ``shots`` overrides the sweep point's draw (used only
        when the test item is itself among the drawn shots)."""
        if shots is None:
            prefix, shot_ids = self.prefix, tuple(s.id for s in self.shots)
        else:
            prefix, shot_ids = self._solved(shots), tuple(s.id for s in shots)
        return Prompt(
            prefix, render_block(self.tpl, item, self.labels), self.continuations, shot_ids
        )


def _rng(task: str, k: int, seed: int) -> random.Random:
    # A string seed through sha256 keeps draws identical across Python versions and
    # processes (hash() of str is salted per process).
    digest = hashlib.sha256(f"{task}|{k}|{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def draw_order(
    pool: Sequence[Item], task: str, k: int, seed: int, balanced: bool = False
) -> list[Item]:
    """The pool in a seeded order from which the first k (usable) items are the shots.

    Only labelled pool items take part. With ``balanced`` the order cycles through the
    labels (in a seeded label order), so any prefix of length k is as label-balanced as
    possible.

    >>> from nlieval.types import NLI3
    >>> pool = [Item(str(i), "p", "h", NLI3[i % 3]) for i in range(30)]
    >>> [x.id for x in draw_order(pool, "t", 3, 0)] == [x.id for x in draw_order(pool, "t", 3, 0)]
    True
    """
    rng = _rng(task, k, seed)
    items = [x for x in pool if x.label is not None]
    rng.shuffle(items)
    if not balanced:
        return items
    by_label: dict[Label, list[Item]] = {}
    for x in items:
        assert x.label is not None
        by_label.setdefault(x.label, []).append(x)
    order = sorted(by_label, key=lambda lab: lab.value)
    rng.shuffle(order)
    out: list[Item] = []
    queues = [list(reversed(by_label[lab])) for lab in order]
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop())
    return out


def draw_shots(
    pool: Sequence[Item],
    task: str,
    k: int,
    seed: int,
    balanced: bool = False,
    exclude: str | None = None,
) -> list[Item]:
    """The k shots of a sweep point, never containing the item with id ``exclude``.

    The same (task, k, seed) always gives the same draw. When the pool is the test split
    itself, the item being tested is skipped and the next drawn item takes its place.

    >>> from nlieval.types import NLI3
    >>> pool = [Item(str(i), "p", "h", NLI3[i % 3]) for i in range(30)]
    >>> first = draw_shots(pool, "t", 2, 0)
    >>> first[0].id not in [x.id for x in draw_shots(pool, "t", 2, 0, exclude=first[0].id)]
    True
    """
    if k == 0:
        return []
    order = draw_order(pool, task, k, seed, balanced)
    shots = [x for x in order if x.id != exclude][:k]
    if len(shots) < k:
        raise ValueError(
            f"task {task}: the few-shot pool has only {len(shots)} usable items, k={k}"
        )
    if balanced:
        # Cycled order groups labels as A,B,C,A,B,C...; shuffle so the last shot's label
        # does not leak which label comes next.
        _rng(task, k, seed + 1_000_003).shuffle(shots)
    return shots
