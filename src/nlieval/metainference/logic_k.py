"""Logic K for the logic module: Kripke models, the decision procedure and the readings.

Part of :mod:`nlieval.metainference.logic`, which imports every public name here, so
``from nlieval.metainference.logic import satisfiable`` keeps working. It holds the
semantics (:class:`KripkeModel`, :func:`holds`), the decision procedure for formulas of
modal depth at most one (:func:`find_model`, :func:`satisfiable`, :func:`valid`) and the
logical readings of the labels as K formulas over ``a`` and ``b`` (:data:`READINGS`,
:class:`Reading`, :func:`load_reading`, :func:`merge_readings`).

>>> satisfiable(And(READINGS["SC"].E, READINGS["SC"].C))  # both hold when no world has a
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .logic_formulas import (
    And,
    Atom,
    Binary,
    Box,
    Const,
    Dia,
    Formula,
    FormulaError,
    Iff,
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

#: The label letters of a reading, in the order used in outputs.
LABELS: tuple[str, ...] = ("E", "C", "N")


# --------------------------------------------------------------------------- Kripke models


@dataclass(frozen=True)
class KripkeModel:
    """A finite Kripke model: ``valuation[w]`` is the set of atoms true at world w,
    ``relation`` the accessible pairs (any relation: K assumes nothing of it).

    >>> m = KripkeModel((frozenset({"a"}), frozenset()), frozenset({(0, 1)}))
    >>> holds(parse("a & dia ~a & box ~a"), m)
    True
    """

    valuation: tuple[frozenset[str], ...]
    relation: frozenset[tuple[int, int]]

    def successors(self, world: int) -> list[int]:
        return sorted(v for u, v in self.relation if u == world)

    def __str__(self) -> str:
        def val(w: int) -> str:
            return "{" + ", ".join(sorted(self.valuation[w])) + "}"

        succ = ", ".join(val(w) for w in self.successors(0))
        return f"w0 = {val(0)}; w0 sees [{succ}]"


def holds(f: Formula, model: KripkeModel, world: int = 0) -> bool:
    """Truth of ``f`` at ``world`` of ``model``, straight from the semantics of K.

    This is the reference the fast procedure is tested against, for any modal depth.

    >>> holds(parse("box false"), KripkeModel((frozenset(),), frozenset()))
    True
    """

    def below(g: Formula) -> tuple[Formula, ...]:  # box and dia look at other worlds
        return () if isinstance(g, (Box, Dia)) else children(g)

    def visit(g: Formula, args: list[bool]) -> bool:
        if isinstance(g, Atom):
            return g.name in model.valuation[world]
        if isinstance(g, Const):
            return g.value
        if isinstance(g, Not):
            return not args[0]
        if isinstance(g, Box):
            return all(holds(g.arg, model, v) for v in model.successors(world))
        if isinstance(g, Dia):
            return any(holds(g.arg, model, v) for v in model.successors(world))
        assert isinstance(g, Binary)
        return _BOOL_OPS[type(g)](args[0], args[1])

    return fold(f, visit, below)


_BOOL_OPS: dict[type[Binary], Callable[[bool, bool], bool]] = {
    And: lambda x, y: x and y,
    Or: lambda x, y: x or y,
    Imp: lambda x, y: (not x) or y,
    Iff: lambda x, y: x == y,
}


# --------------------------------------------------------------------------- decision procedure
#
# Why a finite search is complete for depth-one formulas. Let phi have modal depth <= 1
# over the atoms V (n of them). The body of each box/dia in phi is propositional, so at a
# successor world u it is true or false according to u's valuation of V alone. Hence the
# truth of phi at a world w depends only on (1) w's own valuation of V and (2) the SET S
# of valuations of V found among w's successors: box X holds iff every valuation in S
# satisfies X, dia X iff some does. Conversely any pair (v0, S) is realised by the model
# with a root valued v0 and one successor per element of S (no other edges). So phi is
# K-satisfiable iff some (v0, S), with v0 one of the 2^n valuations and S one of the
# 2^(2^n) subsets of them (the empty set included), makes it true: enumerating those
# models, each of at most 1 + 2^n worlds, is exactly as strong as enumerating every Kripke
# model. Worlds of the original model beyond w's successors never matter, and a self-loop
# at w is just a successor whose valuation equals w's, which some S already contains.
# (Each dia needs at most one witness, so models with at most as many successors as phi
# has dia subformulas would also suffice; enumerating sets of valuations is simpler.)
#
# The enumeration is done all at once: a formula's truth over every (v0, S) pair is one
# integer used as a bit set (bit S * 2^n + v0), and connectives are bitwise operations.
# With n = 3 atoms that is 8 * 256 = 2048 bits.

#: More atoms than this make the bit sets too large (n = 4: a million bits).
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


def _root_truth(f: Formula, sp: _Space) -> int:
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

    return _truth(f, sp.full, leaf)


def _check_decidable(f: Formula) -> _Space:
    if modal_depth(f) > 1:
        nested = next(g for g in subformulas(f) if isinstance(g, (Box, Dia)) and modal_depth(g) > 1)
        raise ModalDepthError(
            f"{show(f)!r} has modal depth {modal_depth(f)} ({show(nested)!r} puts a box or "
            "dia inside another); only formulas of depth one are decided"
        )
    names = tuple(sorted(atoms(f)))
    if len(names) > MAX_ATOMS:
        raise LogicError(
            f"{show(f)!r} has {len(names)} atoms ({', '.join(names)}); "
            f"the decision procedure handles at most {MAX_ATOMS}"
        )
    return _Space(names)


def truth_set(formula: Formula | str, over: Sequence[str] | None = None) -> int:
    """Where a formula of modal depth one is true, as one integer bit set over every
    (root valuation, set of successor valuations) of the atoms ``over`` (default: its
    own, sorted): two formulas over the same atoms are K-equivalent exactly when their
    truth sets are equal (see the comment above :data:`MAX_ATOMS`).

    >>> truth_set("~~a", ["a", "b"]) == truth_set("a", ["a", "b"])
    True
    >>> truth_set("dia a", ["a"]) == truth_set("~box ~a", ["a"]) != truth_set("box a", ["a"])
    True
    """
    f = parse(formula) if isinstance(formula, str) else formula
    sp = _check_decidable(f)
    if over is not None:
        missing = set(sp.atoms) - set(over)
        if missing:
            raise LogicError(f"{show(f)!r} has atoms outside {list(over)}: {sorted(missing)}")
        if len(over) > MAX_ATOMS:
            raise LogicError(f"at most {MAX_ATOMS} atoms, not {len(over)}")
        sp = _Space(tuple(over))
    return _root_truth(f, sp)


def find_model(formula: Formula | str) -> KripkeModel | None:
    """A Kripke model whose world 0 makes the formula true, or None if there is none.

    Decides satisfiability in K for formulas of modal depth at most one (raises
    :class:`ModalDepthError` for deeper ones).

    >>> print(find_model("a & dia ~a & box b"))
    w0 = {a}; w0 sees [{b}]
    """
    f = parse(formula) if isinstance(formula, str) else formula
    sp = _check_decidable(f)
    truth = _root_truth(f, sp)
    if truth == 0:
        return None
    index = (truth & -truth).bit_length() - 1  # the first (v0, S) that works
    root, succ_set = index % sp.nval, index // sp.nval
    worlds = [root] + [v for v in range(sp.nval) if succ_set >> v & 1]

    def true_atoms(v: int) -> frozenset[str]:
        return frozenset(a for i, a in enumerate(sp.atoms) if v >> i & 1)

    valuation = tuple(true_atoms(v) for v in worlds)
    relation = frozenset((0, w) for w in range(1, len(worlds)))
    return KripkeModel(valuation, relation)


def satisfiable(formula: Formula | str) -> bool:
    """Whether the formula is true at some world of some Kripke model (logic K).

    >>> satisfiable("dia a & box ~a"), satisfiable("box a & box ~a")
    (False, True)
    """
    return find_model(formula) is not None


def valid(formula: Formula | str) -> bool:
    """Whether the formula is true at every world of every Kripke model (logic K).

    >>> valid("box(a -> b) -> (box a -> box b)"), valid("box a -> a")
    (True, False)
    """
    f = parse(formula) if isinstance(formula, str) else formula
    return not satisfiable(Not(f))


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
    """A logical reading of the labels: formulas over the atoms ``a`` and ``b``.

    >>> r = Reading.parse("MC", E="a -> b", C="a -> ~b", N="~(a -> b) & ~(a -> ~b)")
    >>> str(r.formula("C"))
    'a -> ~b'
    """

    name: str
    E: Formula
    C: Formula
    N: Formula
    description: str = ""

    @classmethod
    def parse(cls, name: str, E: str, C: str, N: str, description: str = "") -> Reading:
        """A reading from formula strings; every problem is reported with its label."""
        return cls(
            name,
            E=_reading_formula(name, "E", E),
            C=_reading_formula(name, "C", C),
            N=_reading_formula(name, "N", N),
            description=description,
        )

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
        f = parse(text)
    except FormulaError as err:
        raise LogicError(f"reading {name}: {label}: {err}") from None
    extra = atoms(f) - _READING_ATOMS
    if extra:
        raise LogicError(
            f"reading {name}: {label} = {text!r} uses {', '.join(sorted(extra))}; "
            "a reading's formulas use only the atoms a (premise) and b (hypothesis)"
        )
    if modal_depth(f) > 1:
        raise ModalDepthError(
            f"reading {name}: {label} = {text!r} nests box/dia (depth {modal_depth(f)}); "
            "only depth-one readings can be decided"
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
    strings over ``a`` and ``b``) and optionally ``description``.

    A reading named like a built-in one replaces it wherever both are given to
    :func:`merge_readings`.

    >>> path = Path(run_dir) / "strict.yaml"
    >>> _ = path.write_text("name: strict\\nE: box(a -> b)\\nC: box(a -> ~b)\\nN: dia(a & b)\\n")
    >>> from nlieval.metainference.logic import classify
    >>> r = load_reading(path)  # C is symmetric: box(a -> ~b) is box(b -> ~a)
    >>> r.name, str(r.formula("C")), classify("Cab -> Cba", r), list(merge_readings([path]))
    ('strict', 'box(a -> ~b)', 'valid', ['MC', 'SC', 'EI', 'strict'])
    """
    import yaml

    p = Path(path)
    if not p.is_file():
        raise LogicError(f"{p}: no such reading file")
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise LogicError(f"{p}: invalid YAML: {' '.join(str(err).split())}") from None
    if not isinstance(doc, dict):
        raise LogicError(f"{p}: expected a mapping with keys name, E, C, N")
    allowed = {"name", "description", *LABELS}
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
        raise LogicError(f"{p}: {what} (a reading has name, E, C, N and optional description)")
    # YAML reads a bare true/false as a boolean; as a formula it is the constant.
    e, c, n = (str(doc[k]).lower() if isinstance(doc[k], bool) else doc[k] for k in LABELS)
    try:
        return Reading.parse(str(doc["name"]), e, c, n, str(doc.get("description") or ""))
    except LogicError as err:
        raise type(err)(f"{p}: {err}") from None


def merge_readings(
    files: Sequence[str | Path] = (), builtins: Mapping[str, Reading] | None = None
) -> dict[str, Reading]:
    """The built-in readings plus those of ``files`` (same name: the file's wins).

    >>> list(merge_readings())
    ['MC', 'SC', 'EI']
    """
    out = dict(READINGS if builtins is None else builtins)
    for path in files:
        r = load_reading(path)
        out[r.name] = r
    return out
