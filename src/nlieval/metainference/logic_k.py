"""Modal logic for the logic module: the decision procedure's front door and the readings.

Part of :mod:`nlieval.metainference.logic`, which imports every public name here, so
``from nlieval.metainference.logic import satisfiable`` keeps working. It holds the
decision procedure (:func:`find_model`, :func:`satisfiable`, :func:`valid`) over a frame
class (K by default; KT, S4, S5: :data:`~nlieval.metainference.logic_models.FRAMES`),
which is the tableau of :mod:`~nlieval.metainference.logic_tableau` (any modal depth,
any number of atoms), and the exact bit sets of depth-one formulas over at most
:data:`MAX_ATOMS` atoms (:func:`truth_set`, :func:`depth_one_model`): the decision
procedure before the tableau, kept for the short-formula search of
:mod:`~nlieval.metainference.logic_short` and as a second procedure to compare with. It
also holds the logical readings of the labels as formulas over ``a`` and ``b``
(:data:`READINGS`, :class:`Reading`, :func:`load_reading`, :func:`merge_readings`), each
decided over its own frame class.

>>> satisfiable(And(READINGS["SC"].E, READINGS["SC"].C))  # both hold when no world has a
True
>>> satisfiable(And(READINGS["SC"].E, READINGS["SC"].C), "KT")  # one world, seeing itself, no a
True
>>> satisfiable("dia a & box(a -> dia b) & box box ~b")  # modal depth two
False
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..ground import DataError, load_yaml, read_small_text
from .logic_formulas import (
    MAX_MODAL_DEPTH,
    And,
    Atom,
    Binary,
    Box,
    Const,
    Dia,
    Formula,
    Imp,
    LogicError,
    ModalDepthError,
    Not,
    Or,
    atoms,
    children,
    fold,
    modal_depth,
    parse,
    show,
    subformulas,
)
from .logic_models import (
    Frames,
    KripkeModel,
    check_frames,
    frame_class,
    holds,
    in_frame_class,
)
from .logic_tableau import tableau_model

#: The largest reading file read (as a task YAML file: a reading is three formulas).
MAX_READING_BYTES = 1_048_576

#: The label letters of a reading, in the order used in outputs.
LABELS: tuple[str, ...] = ("E", "C", "N")


# --------------------------------------------------------------------------- decision procedure
#
# The bit sets. Why a finite search is complete for depth-one formulas. Let phi have
# modal depth <= 1 over the atoms V (n of them). The body of each box/dia in phi is
# propositional, so at a successor world u it is true or false according to u's valuation
# of V alone. Hence the truth of phi at a world w depends only on (1) w's own valuation of
# V and (2) the SET S of valuations of V found among w's successors: box X holds iff every
# valuation in S satisfies X, dia X iff some does. Conversely any pair (v0, S) is realised
# by the model with a root valued v0 and one successor per element of S (no other edges).
# So phi is K-satisfiable iff some (v0, S), with v0 one of the 2^n valuations and S one of
# the 2^(2^n) subsets of them (the empty set included), makes it true: enumerating those
# models, each of at most 1 + 2^n worlds, is exactly as strong as enumerating every Kripke
# model. Worlds of the original model beyond w's successors never matter, and a self-loop
# at w is just a successor whose valuation equals w's, which some S already contains.
#
# Over KT, S4 and S5 frames every world sees itself, so v0 is in S; and any (v0, S) with
# v0 in S is realised by a model of all three classes at once: a root valued v0 and one
# world per other element of S, every world seeing every world (an equivalence relation,
# so reflexive and transitive too). Hence for depth one the three classes agree, and the
# pairs with v0 in S are exactly the ones to enumerate. (Deeper formulas tell them apart:
# box a -> box box a holds in S4, not in KT.)
#
# K4 (transitive) allows every (v0, S), as K does: let the successors see nothing. KB4
# (symmetric and transitive) allows those with v0 in S (one cluster, as above) and the
# root that sees nothing (S empty): a world that sees a world sees itself.
#
# The enumeration is done all at once: a formula's truth over every (v0, S) pair is one
# integer used as a bit set (bit S * 2^n + v0), and connectives are bitwise operations.
# With n = 3 atoms that is 8 * 256 = 2048 bits.

#: Truth sets (:func:`truth_set`) are built for at most this many atoms (n = 4: a
#: million bits; n = 5 would be 2^37).
MAX_ATOMS = 4


@dataclass(frozen=True)
class _Space:
    """The (v0, S) pairs for one ordered list of atoms."""

    atoms: tuple[str, ...]

    @property
    def nval(self) -> int:  # valuations of the atoms
        return 1 << len(self.atoms)

    @property
    def nsets(self) -> int:  # sets of valuations (successor sets)
        return 1 << self.nval

    @property
    def full(self) -> int:
        return (1 << (self.nval * self.nsets)) - 1

    def valuations_with(self, atom: str) -> int:
        """Bit set over valuations: those making ``atom`` true."""
        i = self.atoms.index(atom)
        return sum(1 << v for v in range(self.nval) if v >> i & 1)

    def root_has(self, atom: str) -> int:
        """Bit set over (v0, S): those whose root valuation makes ``atom`` true."""
        block = self.valuations_with(atom)
        repunit = self.full // ((1 << self.nval) - 1)  # bit S * nval set for every S
        return block * repunit

    def sets_within(self, allowed: int) -> int:
        """Bit set over (v0, S): those whose S holds only valuations in ``allowed``."""
        ones, zeros = "1" * self.nval, "0" * self.nval
        blocks = (ones if s & ~allowed == 0 else zeros for s in reversed(range(self.nsets)))
        return int("".join(blocks), 2)

    def frame(self, frames: Frames) -> int:
        """Bit set over (v0, S): the pairs a frame of the class can have (all for K and
        K4; v0 in S for the reflexive classes; for KB4 also S empty: a world that sees
        any world sees itself). Block S of the bit set is S itself."""
        if not (frames.reflexive or frames.symmetric):
            return self.full
        pairs = int("".join(format(s, f"0{self.nval}b") for s in reversed(range(self.nsets))), 2)
        if not frames.reflexive:
            pairs |= (1 << self.nval) - 1  # block S = {}: a world that sees none
        return pairs


def _truth(f: Formula, full: int, leaf: Callable[[Formula], int]) -> int:
    """Bit set where ``f`` is true; ``leaf`` gives it for atoms and modal formulas."""

    def below(g: Formula) -> tuple[Formula, ...]:  # box and dia are leaves here
        return () if isinstance(g, (Box, Dia)) else children(g)

    def visit(g: Formula, args: list[int]) -> int:
        if isinstance(g, Const):
            return full if g.value else 0
        if isinstance(g, Not):
            return full ^ args[0]
        if isinstance(g, Binary):
            x, y = args
            if isinstance(g, And):
                return x & y
            if isinstance(g, Or):
                return x | y
            if isinstance(g, Imp):
                return (full ^ x) | y
            return full ^ (x ^ y)
        return leaf(g)

    return fold(f, visit, below)


def _root_truth(f: Formula, sp: _Space, frames: Frames) -> int:
    full_val = (1 << sp.nval) - 1

    def body(g: Formula) -> int:  # over valuations; depth was checked, so g is an atom
        assert isinstance(g, Atom)
        return sp.valuations_with(g.name)

    def leaf(g: Formula) -> int:
        if isinstance(g, Atom):
            return sp.root_has(g.name)
        assert isinstance(g, (Box, Dia))
        inside = _truth(g.arg, full_val, body)
        if isinstance(g, Box):
            return sp.sets_within(inside)
        return sp.full ^ sp.sets_within(full_val ^ inside)  # dia X = ~box ~X

    return _truth(f, sp.full, leaf) & sp.frame(frames)


def _check_decidable(f: Formula) -> _Space:
    if modal_depth(f) > 1:
        nested = next(g for g in subformulas(f) if isinstance(g, (Box, Dia)) and modal_depth(g) > 1)
        raise ModalDepthError(
            f"{show(f)!r} has modal depth {modal_depth(f)} ({show(nested)!r} puts a box or "
            "dia inside another); truth sets are built for depth one only"
        )
    names = tuple(sorted(atoms(f)))
    if len(names) > MAX_ATOMS:
        raise LogicError(
            f"{show(f)!r} has {len(names)} atoms ({', '.join(names)}); "
            f"truth sets are built for at most {MAX_ATOMS}"
        )
    return _Space(names)


def truth_set(
    formula: Formula | str, over: Sequence[str] | None = None, frames: str | Frames = "K"
) -> int:
    """Where a formula of modal depth one is true, as one integer bit set over every
    (root valuation, set of successor valuations) of the atoms ``over`` (default: its
    own, sorted) that a frame of the class allows: two formulas over the same atoms are
    equivalent over the class exactly when their truth sets are equal (see the comment
    above :data:`MAX_ATOMS`).

    >>> truth_set("~~a", ["a", "b"]) == truth_set("a", ["a", "b"])
    True
    >>> truth_set("dia a", ["a"]) == truth_set("~box ~a", ["a"]) != truth_set("box a", ["a"])
    True
    >>> truth_set("box a -> a", ["a"], "KT") == truth_set("true", ["a"], "KT")
    True
    """
    f = parse(formula) if isinstance(formula, str) else formula
    fc = frame_class(frames)
    sp = _check_decidable(f)
    if over is not None:
        missing = set(sp.atoms) - set(over)
        if missing:
            raise LogicError(f"{show(f)!r} has atoms outside {list(over)}: {sorted(missing)}")
        if len(over) > MAX_ATOMS:
            raise LogicError(f"truth sets are built for at most {MAX_ATOMS} atoms, not {len(over)}")
        sp = _Space(tuple(over))
    return _root_truth(f, sp, fc)


def depth_one_model(formula: Formula | str, frames: str | Frames = "K") -> KripkeModel | None:
    """The model the bit sets find for a formula of modal depth at most one over at most
    :data:`MAX_ATOMS` atoms (first (v0, S) that works), or None: the decision procedure
    before the tableau, exact for its formulas (comment above :data:`MAX_ATOMS`); raises
    :class:`ModalDepthError` for deeper formulas. :func:`find_model` no longer uses it:
    the tableau agrees with it and is as fast or faster (docs/metainference.md).

    >>> print(depth_one_model("a & dia ~a & box b"))
    w0 = {a}; w0 sees [{b}]
    >>> print(depth_one_model("box ~a & dia true & a", "S5"))
    None
    """
    f = parse(formula) if isinstance(formula, str) else formula
    fc = frame_class(frames)
    sp = _check_decidable(f)
    truth = _root_truth(f, sp, fc)
    if truth == 0:
        return None
    index = (truth & -truth).bit_length() - 1  # the first (v0, S) that works
    root, succ_set = index % sp.nval, index // sp.nval

    def true_atoms(v: int) -> frozenset[str]:
        return frozenset(a for i, a in enumerate(sp.atoms) if v >> i & 1)

    if not (fc.reflexive or fc.symmetric):
        worlds = [root] + [v for v in range(sp.nval) if succ_set >> v & 1]
        relation = frozenset((0, w) for w in range(1, len(worlds)))
    elif succ_set == 0:  # KB4: a world that sees none
        worlds, relation = [root], frozenset()
    else:  # root in S: one cluster of the root and the other valuations of S
        worlds = [root] + [v for v in range(sp.nval) if succ_set >> v & 1 and v != root]
        relation = frozenset((u, w) for u in range(len(worlds)) for w in range(len(worlds)))
    model = KripkeModel(tuple(true_atoms(v) for v in worlds), relation)
    if not (holds(f, model) and in_frame_class(model, frames)):
        raise AssertionError(f"bit-set model {model} fails {show(f)!r} over {frames}")
    return model


def find_model(
    formula: Formula | str, frames: str | Frames = "K", timeout_s: float | None = None
) -> KripkeModel | None:
    """A Kripke model of the frame class (K, KT, S4 or S5) whose world 0 makes the
    formula true, or None if there is none; any modal depth, any number of atoms.

    Decided by :func:`~nlieval.metainference.logic_tableau.tableau_model`, bounded by
    ``timeout_s`` seconds (None: :data:`~nlieval.metainference.logic_tableau.
    SOLVER_TIMEOUT_S`), past which it raises :class:`~nlieval.metainference.
    logic_formulas.SolverLimit`; the
    model is checked by :func:`holds` and the frame condition before it is returned.

    >>> print(find_model("a & dia ~a & box b"))
    w0 = {a}; w0 sees [{b}]
    >>> print(find_model("box a & ~a", "KT"))
    None
    """
    return tableau_model(formula, frames, timeout_s)


def satisfiable(
    formula: Formula | str, frames: str | Frames = "K", timeout_s: float | None = None
) -> bool:
    """Whether the formula is true at some world of some model of the frame class.

    >>> satisfiable("dia a & box ~a"), satisfiable("box a & box ~a")
    (False, True)
    >>> satisfiable("box a & box ~a", "KT")
    False
    """
    return find_model(formula, frames, timeout_s) is not None


def valid(
    formula: Formula | str, frames: str | Frames = "K", timeout_s: float | None = None
) -> bool:
    """Whether the formula is true at every world of every model of the frame class.

    >>> valid("box(a -> b) -> (box a -> box b)"), valid("box a -> a")
    (True, False)
    >>> valid("box a -> a", "KT"), valid("dia a -> box dia a", "S4")
    (True, False)
    >>> valid("dia a -> box dia a", "S5")
    True
    """
    f = parse(formula) if isinstance(formula, str) else formula
    return not satisfiable(Not(f), frames, timeout_s)


# --------------------------------------------------------------------------- readings

#: The readings of METHODS.md section 5, as the formula strings written there.
BUILTIN_READINGS: dict[str, dict[str, str]] = {
    "MC": {
        "description": "material",
        "E": "a -> b",
        "C": "a -> not b",
        "N": "not(a -> b) and not(a -> not b)",
    },
    "SC": {
        "description": "strict",
        "E": "box(a -> b)",
        "C": "box(a -> not b)",
        "N": "dia(a and b) and dia(a and not b)",
    },
    "EI": {
        "description": "existential import",
        "E": "dia a and box(a -> b)",
        "C": "dia a and box(a -> not b)",
        "N": "(box not a or dia(a and b)) and (box not a or dia(a and not b))",
    },
}

_READING_ATOMS = frozenset({"a", "b"})


@dataclass(frozen=True)
class Reading:
    """A logical reading of the labels: formulas over the atoms ``a`` and ``b``, decided
    over the frame class ``frames`` (K, KT, S4 or S5; K unless chosen).

    >>> r = Reading.parse("MC", E="a -> b", C="a -> ~b", N="~(a -> b) & ~(a -> ~b)")
    >>> str(r.formula("C")), r.frames, r.with_frames("S4").frames
    ('a -> ~b', 'K', 'S4')
    """

    name: str
    E: Formula
    C: Formula
    N: Formula
    description: str = ""
    frames: str = "K"

    def __post_init__(self) -> None:
        try:
            check_frames(self.frames)
        except LogicError as err:
            raise LogicError(f"reading {self.name}: {err}") from None

    @classmethod
    def parse(
        cls, name: str, E: str, C: str, N: str, description: str = "", frames: str = "K"
    ) -> Reading:
        """A reading from formula strings; every problem is reported with its label."""
        return cls(
            name,
            E=_reading_formula(name, "E", E),
            C=_reading_formula(name, "C", C),
            N=_reading_formula(name, "N", N),
            description=description,
            frames=frames,
        )

    def with_frames(self, frames: str) -> Reading:
        """The same formulas decided over another frame class."""
        return replace(self, frames=frames)

    def formula(self, label: str) -> Formula:
        """The formula of a label letter (E, C or N) over ``a`` and ``b``."""
        if label not in LABELS:
            raise LogicError(f"unknown label {label!r}; a reading defines E, C and N")
        f: Formula = getattr(self, label)
        return f


def _reading_formula(name: str, label: str, text: object) -> Formula:
    if not isinstance(text, str):
        raise LogicError(f"reading {name}: {label} must be a formula string")
    try:
        f = parse(text, MAX_MODAL_DEPTH)
    except LogicError as err:  # FormulaError, or nested too deep
        raise LogicError(f"reading {name}: {label}: {err}") from None
    extra = atoms(f) - _READING_ATOMS
    if extra:
        raise LogicError(
            f"reading {name}: {label} = {text!r} uses {', '.join(sorted(extra))}; "
            "a reading's formulas use only the atoms a (premise) and b (hypothesis)"
        )
    return f


def _builtin_readings() -> dict[str, Reading]:
    return {
        name: Reading.parse(name, spec["E"], spec["C"], spec["N"], spec["description"])
        for name, spec in BUILTIN_READINGS.items()
    }


#: The three readings of METHODS.md, parsed from :data:`BUILTIN_READINGS` at import.
READINGS: dict[str, Reading] = _builtin_readings()


def load_reading(path: str | Path) -> Reading:
    """A user reading from a YAML file with keys ``name``, ``E``, ``C``, ``N`` (formula
    strings over ``a`` and ``b``, of any modal depth) and optionally ``description`` and
    ``frames`` (K, KT, S4 or S5; default K).

    A reading named like a built-in one replaces it wherever both are given to
    :func:`merge_readings`.

    >>> path = Path(run_dir) / "strict.yaml"
    >>> _ = path.write_text("name: strict\\nE: box(a -> b)\\nC: box(a -> ~b)\\nN: dia(a & b)\\n")
    >>> from nlieval.metainference.logic import classify
    >>> r = load_reading(path)  # C is symmetric: box(a -> ~b) is box(b -> ~a)
    >>> r.name, str(r.formula("C")), classify("Cab -> Cba", r), list(merge_readings([path]))
    ('strict', 'box(a -> ~b)', 'valid', ['MC', 'SC', 'EI', 'strict'])
    """
    p = Path(path)
    if not os.path.lexists(p):
        raise LogicError(f"{p}: no such reading file")
    try:
        # Bounded in size, a regular file (a FIFO is refused, not waited on), no aliases.
        doc = load_yaml(read_small_text(p, MAX_READING_BYTES), p)
    except DataError as err:
        raise LogicError(str(err)) from None
    if not isinstance(doc, dict):
        raise LogicError(f"{p}: expected a mapping with keys name, E, C, N")
    allowed = {"name", "description", "frames", *LABELS}
    unknown = sorted(str(k) for k in doc if k not in allowed)
    missing = [k for k in ("name", *LABELS) if k not in doc]
    if unknown or missing:
        what = "; ".join(
            x
            for x in (
                f"missing: {', '.join(missing)}" if missing else "",
                f"unknown keys: {', '.join(unknown)}" if unknown else "",
            )
            if x
        )
        raise LogicError(
            f"{p}: {what} (a reading has name, E, C, N and optional description, frames)"
        )
    # YAML reads a bare true/false as a boolean; as a formula it is the constant.
    e, c, n = (str(doc[k]).lower() if isinstance(doc[k], bool) else doc[k] for k in LABELS)
    try:
        frames = str(doc.get("frames", "K"))
        return Reading.parse(str(doc["name"]), e, c, n, str(doc.get("description") or ""), frames)
    except LogicError as err:
        raise type(err)(f"{p}: {err}") from None


def merge_readings(
    files: Sequence[str | Path] = (),
    builtins: Mapping[str, Reading] | None = None,
    frames: str | None = None,
) -> dict[str, Reading]:
    """The built-in readings plus those of ``files`` (same name: the file's wins); with
    ``frames``, every one of them decided over that frame class instead of its own.

    >>> list(merge_readings())
    ['MC', 'SC', 'EI']
    >>> {r.frames for r in merge_readings(frames="S5").values()}
    {'S5'}
    """
    out = dict(READINGS if builtins is None else builtins)
    for path in files:
        r = load_reading(path)
        out[r.name] = r
    if frames is not None:
        check_frames(frames)
        out = {name: r.with_frames(frames) for name, r in out.items()}
    return out
