"""A short formula K-equivalent to a contingent meta-inference, for the table as published.

A contingent cell holds exactly when some condition on the sentences holds; the paper
prints that condition as a short formula (``dia a``, ``~dia a | dia b``, ...). It is found
here, never looked up: formulas over the meta-inference's sentence atoms are enumerated by
size (atoms and constants; ``~``; ``box``/``dia`` of a formula without modalities; ``&``,
``|``, ``->``), each kept only if its truth set (:func:`~nlieval.metainference.logic_k.
truth_set`, exact over every Kripke model that matters for depth one) is new, and the first
whose truth set equals the translated meta-inference's is K-equivalent to it by that
equality; :func:`~nlieval.metainference.logic_k.valid` then checks the biconditional again
by the decision procedure. Where no formula of at most :data:`MAX_SIZE` symbols is
equivalent, the fallback is the translated formula itself (simplified only by the
reading), and the cell says so.

The search is over a frame class: the truth sets of the reflexive classes (KT, S4, S5)
keep only the pairs a reflexive frame allows, which for depth one is exact for all three
(:mod:`~nlieval.metainference.logic_k`). A formula beyond truth sets (modal depth above
one, more than :data:`~nlieval.metainference.logic_k.MAX_ATOMS` atoms) gets no short
form: :func:`short_formula` returns None for it, as for a formula with none small enough.

>>> from nlieval.metainference.logic_formulas import parse
>>> show(short_formula(parse("(dia a & box(a -> b)) -> dia a")))
'true'
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from .logic_formulas import (
    And,
    Atom,
    Box,
    Const,
    Dia,
    Formula,
    Iff,
    Imp,
    Not,
    Or,
    atoms,
    modal_depth,
    show,
)
from .logic_k import MAX_ATOMS, truth_set, valid

#: Symbols (atoms, constants, connectives) of the largest formula tried.
MAX_SIZE = 11
#: Distinct truth sets kept per size at most: a bound on time and memory for 3 atoms.
MAX_PER_SIZE = 20000

# A candidate: the formula, its truth set over (root valuation, successor set) pairs, and
# for a formula without modalities also its truth over plain valuations (None otherwise).
Entry = tuple[Formula, int, "int | None"]


class _Search:
    """Bottom-up enumeration with truth sets combined by bit operations, never by
    re-evaluating a formula: only ``box p``/``dia p`` (p without modalities) need the
    decision procedure's own truth set, once per distinct truth of p over valuations."""

    def __init__(self, names: tuple[str, ...], frames: str) -> None:
        self.names = names
        self.frames = frames
        self.full = truth_set(Const(True), names, frames)
        self.full_val = (1 << (1 << len(names))) - 1
        self.seen: dict[int, Formula] = {}
        self.modal: dict[tuple[str, int], int] = {}

    def atom(self, name: str) -> Entry:
        i = self.names.index(name)
        val = sum(1 << v for v in range(1 << len(self.names)) if v >> i & 1)
        return Atom(name), truth_set(Atom(name), self.names, self.frames), val

    def boxed(self, kind: str, f: Formula, val: int) -> Entry:
        g: Formula = Box(f) if kind == "box" else Dia(f)
        if (kind, val) not in self.modal:
            self.modal[(kind, val)] = truth_set(g, self.names, self.frames)
        return g, self.modal[(kind, val)], None

    def level(self, levels: list[list[Entry]], size: int) -> Iterator[Entry]:
        full, fv = self.full, self.full_val
        if size == 1:
            yield from (self.atom(n) for n in self.names)
            yield Const(True), full, fv
            yield Const(False), 0, 0
            return
        for f, t, v in levels[size - 1]:
            yield Not(f), full ^ t, None if v is None else fv ^ v
            if v is not None:
                yield self.boxed("box", f, v)
                yield self.boxed("dia", f, v)
        for left in range(1, size - 1):
            for f, t, v in levels[left]:
                for g, u, w in levels[size - 1 - left]:
                    if v is None or w is None:
                        yield And(f, g), t & u, None
                        yield Or(f, g), t | u, None
                        yield Imp(f, g), (full ^ t) | u, None
                    else:
                        yield And(f, g), t & u, v & w
                        yield Or(f, g), t | u, v | w
                        yield Imp(f, g), (full ^ t) | u, (fv ^ v) | w

    def find(self, target: int, max_size: int) -> Formula | None:
        levels: list[list[Entry]] = [[]]
        for size in range(1, max_size + 1):
            kept: list[Entry] = []
            for f, t, v in self.level(levels, size):
                if t in self.seen:
                    continue
                self.seen[t] = f
                if t == target:
                    return f
                if len(kept) < MAX_PER_SIZE:
                    kept.append((f, t, v))
            levels.append(kept)
        return None


@lru_cache(maxsize=256)
def _search(target: int, names: tuple[str, ...], max_size: int, frames: str) -> Formula | None:
    return _Search(names, frames).find(target, max_size)


def short_formula(formula: Formula, max_size: int = MAX_SIZE, frames: str = "K") -> Formula | None:
    """The smallest formula (by symbols, up to ``max_size``) equivalent to ``formula``
    over its atoms and the frame class, checked by the decision procedure; None when
    there is none that small, or the formula is beyond truth sets (module docstring).

    >>> from nlieval.metainference.logic_formulas import parse
    >>> show(short_formula(parse("box(a -> ~a) & (a -> a)")))
    'box ~a'
    >>> show(short_formula(parse("box a & a"), frames="KT"))
    'box a'
    """
    names = tuple(sorted(atoms(formula)))
    if modal_depth(formula) > 1 or len(names) > MAX_ATOMS:
        return None
    found = _search(truth_set(formula, names, frames), names, max_size, frames)
    if found is not None and not valid(Iff(formula, found), frames):
        raise AssertionError(f"{show(found)} is not equivalent to {show(formula)}")
    return found


__all__ = ["MAX_SIZE", "short_formula"]
