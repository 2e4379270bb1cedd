"""Kripke semantics for the logic module: models, truth, and the frame classes.

Part of :mod:`nlieval.metainference.logic`, which imports every public name here. It
holds the finite Kripke models (:class:`KripkeModel`), truth at a world straight from the
definition (:func:`holds`, :func:`true_worlds`) and the four frame classes a formula can
be decided over (:class:`Frames` values, by name in :data:`FRAME_CLASSES`): K (any
accessibility relation), KT (reflexive), S4 (reflexive and transitive) and S5 (an
equivalence relation), with the check that a model's relation is in a class
(:func:`in_frame_class`). A :class:`Frames` of one's own is decided when its conditions
are among :data:`DECIDED` (also K4 and KB4), and refused in one line otherwise.

Both decision procedures (:mod:`~nlieval.metainference.logic_k`'s bit sets and
:mod:`~nlieval.metainference.logic_tableau`) return models of this type, each checked with
:func:`holds` and :func:`in_frame_class` before it is returned.

>>> from nlieval.metainference.logic_formulas import parse
>>> m = KripkeModel((frozenset({"a"}), frozenset()), frozenset({(0, 0), (0, 1), (1, 1)}))
>>> holds(parse("box(a | ~a) & dia ~a & ~box a"), m), in_frame_class(m, "S4")
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .logic_formulas import (
    And,
    Atom,
    Binary,
    Box,
    Const,
    Dia,
    Formula,
    Iff,
    Imp,
    LogicError,
    Not,
    Or,
    fold,
)


@dataclass(frozen=True)
class Frames:
    """A frame class: its name and the conditions its accessibility relation meets.
    Both decision procedures read the conditions, not the name.

    >>> s4 = FRAME_CLASSES["S4"]
    >>> s4.reflexive, s4.symmetric, s4.transitive, s4.condition, str(s4)
    (True, False, True, 'reflexive and transitive', 'S4')
    """

    name: str
    reflexive: bool = False
    symmetric: bool = False
    transitive: bool = False

    @property
    def condition(self) -> str:
        """The conditions in words (``any accessibility relation`` for none)."""
        on = [
            word
            for word, holds_ in (
                ("reflexive", self.reflexive),
                ("symmetric", self.symmetric),
                ("transitive", self.transitive),
            )
            if holds_
        ]
        if not on:
            return "any accessibility relation"
        return on[0] if len(on) == 1 else ", ".join(on[:-1]) + " and " + on[-1]

    def __str__(self) -> str:
        return self.name


#: The frame classes a formula can be decided over, by name.
FRAME_CLASSES: dict[str, Frames] = {
    f.name: f
    for f in (
        Frames("K"),
        Frames("KT", reflexive=True),
        Frames("S4", reflexive=True, transitive=True),
        Frames("S5", reflexive=True, symmetric=True, transitive=True),
        # Decided too (DECIDED below), so each may be named wherever a class is chosen.
        Frames("K4", transitive=True),
        Frames("KB4", symmetric=True, transitive=True),
    )
}

#: The frame classes, each with the condition on the accessibility relation.
FRAMES: dict[str, str] = {name: f.condition for name, f in FRAME_CLASSES.items()}

#: The conditions (reflexive, symmetric, transitive) both decision procedures are sound
#: and complete for: those of :data:`FRAME_CLASSES`, and K4 (transitive) and KB4
#: (symmetric and transitive), which a :class:`Frames` may name. KB and KTB (symmetric
#: without transitive) are not decided: a symmetric relation makes a world's boxes speak
#: of the world that sees it, which neither procedure follows.
DECIDED: dict[tuple[bool, bool, bool], str] = {
    (False, False, False): "K",
    (True, False, False): "KT",
    (False, False, True): "K4",
    (True, False, True): "S4",
    (False, True, True): "KB4",
    (True, True, True): "S5",
}


def _flags(f: Frames) -> tuple[bool, bool, bool]:
    return (f.reflexive, f.symmetric, f.transitive)


def _choices() -> str:
    return "; ".join(
        f"{name} ({Frames(name, *flags).condition})" for flags, name in DECIDED.items()
    )


def _any_frames(frames: object) -> Frames:
    """``frames`` itself (any :class:`Frames`, decided or not) or the class it names."""
    if isinstance(frames, Frames):
        return frames
    if not isinstance(frames, str) or frames not in FRAME_CLASSES:
        raise LogicError(f"unknown frame class {frames!r}; choose one of {', '.join(FRAMES)}")
    return FRAME_CLASSES[frames]


def frame_class(frames: object) -> Frames:
    """The frame class named ``frames`` (one of :data:`FRAME_CLASSES`), or a
    :class:`Frames` whose conditions both decision procedures decide (:data:`DECIDED`):
    the entry of :data:`FRAME_CLASSES` with those conditions where there is one, else
    ``frames`` itself; otherwise a one-line error naming the choices.

    A :class:`Frames` with conditions not decided (KB, KTB: symmetric but not
    transitive) is refused, not decided as the nearest class, and so is one that takes
    a built-in name with another class's conditions.

    >>> frame_class("KT").reflexive, frame_class(FRAME_CLASSES["S5"]).symmetric
    (True, True)
    >>> frame_class(Frames("T", reflexive=True)).name
    'KT'
    >>> frame_class(Frames("K4", transitive=True)).name
    'K4'
    >>> try:
    ...     frame_class(Frames("B", reflexive=True, symmetric=True))
    ... except LogicError as err:
    ...     print(str(err)[:68])
    frame class 'B' (reflexive and symmetric) is not decided; choose one
    """
    fc = _any_frames(frames)
    if _flags(fc) not in DECIDED:
        raise LogicError(
            f"frame class {fc.name!r} ({fc.condition}) is not decided; choose one of {_choices()}"
        )
    known = next((f for f in FRAME_CLASSES.values() if _flags(f) == _flags(fc)), None)
    usual = DECIDED[_flags(fc)]
    if fc.name in (*FRAME_CLASSES, *DECIDED.values()) and fc.name != usual:
        raise LogicError(
            f"frame class {fc.name!r} is given the conditions of {usual} "
            f"({fc.condition}); choose one of {_choices()}"
        )
    return fc if known is None else known


def check_frames(frames: object) -> str:
    """The name of a frame class, or a one-line error naming the choices.

    >>> check_frames("S4")
    'S4'
    """
    return frame_class(frames).name


@dataclass(frozen=True)
class KripkeModel:
    """A finite Kripke model: ``valuation[w]`` is the set of atoms true at world w,
    ``relation`` the accessible pairs; world 0 is where a formula is evaluated.

    Printed as ``w0 = {a}; w0 sees [{b}]`` when world 0 sees every other world and no
    other pair is related (the shape of the depth-one models), else world by world.

    >>> from nlieval.metainference.logic_formulas import parse
    >>> m = KripkeModel((frozenset({"a"}), frozenset()), frozenset({(0, 1)}))
    >>> holds(parse("a & dia ~a & box ~a"), m)
    True
    >>> print(KripkeModel((frozenset({"a"}), frozenset()), frozenset({(0, 1), (1, 1)})))
    w0 = {a} sees [w1]; w1 = {} sees [w1]
    """

    valuation: tuple[frozenset[str], ...]
    relation: frozenset[tuple[int, int]]

    def successors(self, world: int) -> list[int]:
        return sorted(v for u, v in self.relation if u == world)

    def __str__(self) -> str:
        def val(w: int) -> str:
            return "{" + ", ".join(sorted(self.valuation[w])) + "}"

        n = len(self.valuation)
        if self.relation == {(0, w) for w in range(1, n)}:
            succ = ", ".join(val(w) for w in self.successors(0))
            return f"w0 = {val(0)}; w0 sees [{succ}]"
        return "; ".join(
            f"w{w} = {val(w)} sees [{', '.join(f'w{v}' for v in self.successors(w))}]"
            for w in range(n)
        )


_BOOL_OPS: dict[type[Binary], Callable[[int, int, int], int]] = {
    And: lambda x, y, _full: x & y,
    Or: lambda x, y, _full: x | y,
    Imp: lambda x, y, full: (full ^ x) | y,
    Iff: lambda x, y, full: full ^ (x ^ y),
}


def true_worlds(f: Formula, model: KripkeModel) -> int:
    """The worlds where ``f`` is true, as a bit set (bit w for world w), from the
    definition of truth in a Kripke model: ``box X`` is true at w when X is true at every
    world w sees, ``dia X`` when at some world w sees.

    Computed once per subformula for all worlds together (bottom-up, without recursion),
    so a deep formula costs its size times the model's size, not the number of paths.

    >>> from nlieval.metainference.logic_formulas import parse
    >>> m = KripkeModel((frozenset({"a"}), frozenset()), frozenset({(0, 1)}))
    >>> bin(true_worlds(parse("box ~a"), m))  # world 1 sees nothing: box holds there
    '0b11'
    """
    n = len(model.valuation)
    full = (1 << n) - 1
    sees = [0] * n
    for u, v in model.relation:
        sees[u] |= 1 << v

    def visit(g: Formula, args: list[int]) -> int:
        if isinstance(g, Atom):
            return sum(1 << w for w in range(n) if g.name in model.valuation[w])
        if isinstance(g, Const):
            return full if g.value else 0
        if isinstance(g, Not):
            return full ^ args[0]
        if isinstance(g, Box):
            return sum(1 << w for w in range(n) if sees[w] & ~args[0] == 0)
        if isinstance(g, Dia):
            return sum(1 << w for w in range(n) if sees[w] & args[0])
        assert isinstance(g, Binary)
        return _BOOL_OPS[type(g)](args[0], args[1], full)

    return fold(f, visit)


def holds(f: Formula, model: KripkeModel, world: int = 0) -> bool:
    """Truth of ``f`` at ``world`` of ``model``, straight from the semantics
    (:func:`true_worlds`). The frame class does not enter: it restricts which models
    count (:func:`in_frame_class`), not what a formula means in one.

    This is the reference the decision procedures are tested against, for any modal depth.

    >>> from nlieval.metainference.logic_formulas import Box, Const
    >>> holds(Box(Const(False)), KripkeModel((frozenset(),), frozenset()))  # no successor
    True
    """
    if not 0 <= world < len(model.valuation):
        raise LogicError(f"world {world} is not in a model of {len(model.valuation)} worlds")
    return bool(true_worlds(f, model) >> world & 1)


def in_frame_class(model: KripkeModel, frames: str | Frames) -> bool:
    """Whether the model's relation meets the conditions of the frame class (any
    :class:`Frames`, decided or not).

    >>> loop = KripkeModel((frozenset(),), frozenset({(0, 0)}))
    >>> in_frame_class(loop, "S5"), in_frame_class(KripkeModel((frozenset(),), frozenset()), "KT")
    (True, False)
    """
    fc = _any_frames(frames)  # a check of the conditions, for any class: nothing is decided
    rel = model.relation
    worlds = range(len(model.valuation))
    if any(not (0 <= u < len(worlds) and 0 <= v < len(worlds)) for u, v in rel):
        return False
    if fc.reflexive and any((w, w) not in rel for w in worlds):
        return False
    if fc.symmetric and any((v, u) not in rel for u, v in rel):
        return False
    if not fc.transitive:
        return True
    sees = [0] * len(worlds)  # bit sets: a subset test is one integer operation
    for u, v in rel:
        sees[u] |= 1 << v
    return all(sees[v] & ~sees[u] == 0 for u, v in rel)  # transitive
