"""Meta-inferential consistency: NLI labels read as modal formulas, decided in logic K.

An NLI model defines three relations over sentences: E(a,b), C(a,b), N(a,b). A
*reading* gives each a formula over two propositional atoms ``a`` (the premise) and ``b``
(the hypothesis), in the minimal normal modal logic K (METHODS.md section 5). The three
readings of METHODS.md are data (:data:`READINGS`, parsed from their formula strings when
this module is imported); a user adds one in a YAML file (:func:`load_reading`).

A *meta-inference* (a *relation*) such as ``Eab & Ebc -> Eac`` is written over *label
atoms*: a label letter (E, C or N) followed by two sentence variables (one lower-case
letter each). Under a reading each label atom ``Lxy`` becomes the reading's formula for L
with ``a := x`` and ``b := y``, and the sentence variables become propositional atoms; so
``P -> Q`` becomes a K formula. Its status (:func:`classify`):

- ``vacuous``: the premises P are unsatisfiable, so the inference holds for no reason;
- ``valid``: P -> Q is K-valid (P & ~Q is unsatisfiable);
- ``contradictory``: P & Q is unsatisfiable (whenever the premises hold the conclusion
  fails);
- ``contingent``: none of these.

A relation without premises (``Eaa``) is just its formula: valid, contradictory
(unsatisfiable) or contingent.

For a target pair and input labels, :func:`conclude` gives the labels a model may answer.
A model answers one label per pair, so answering L asserts L and denies the other two:
L is allowed when the inputs, L and the negations of the other two labels (all for the
target pair) are satisfiable together. This is stricter than the table's relations: under
SC, ``Cab -> Cba`` is valid yet ``Cab -> ~Eba`` is not (E(b,a) and C(b,a) both hold when
no world has b), but E(b,a) without C(b,a) contradicts C(a,b), so only C is allowed.

Nothing is looked up: every answer comes from the decision procedure
(:func:`satisfiable`), which is sound and complete for formulas of modal depth at most
one (no box or dia inside another), the depth of every formula here, and refuses deeper
ones with :class:`ModalDepthError`.

Syntax (:func:`parse`), loosest binding first: ``<->``; ``->`` (right-associative);
``|`` or ``or``; ``&`` or ``and``; then the prefix operators ``~``/``!``/``not``,
``box``/``[]`` and ``dia``/``<>``, which bind tightest (``box a & b`` is ``(box a) & b``).
Atoms are identifiers; ``true`` and ``false`` are the constants.

>>> classify("Cab -> Cba", "SC")
'valid'
>>> classify("Naa", "MC")
'contradictory'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, TypeVar

Status = Literal["valid", "contradictory", "vacuous", "contingent"]

#: The label letters of a reading, in the order used in outputs.
LABELS: tuple[str, ...] = ("E", "C", "N")


class LogicError(ValueError):
    """Bad input to the logic module; ``str(err)`` is one line."""


class FormulaError(LogicError):
    """A formula that does not parse: ``text``, ``pos`` (0-based), ``expected``, ``found``.

    >>> try:
    ...     parse("box(a ->)")
    ... except FormulaError as err:
    ...     print(err)
    column 9 of 'box(a ->)': expected a formula (an atom, ~, box, dia or '('), found ')'
    """

    def __init__(self, text: str, pos: int, expected: str, found: str):
        self.text = text
        self.pos = pos
        self.expected = expected
        self.found = found
        super().__init__(f"column {pos + 1} of {text!r}: expected {expected}, found {found}")

    def pointer(self) -> str:
        """The formula and a caret under the error, on two lines."""
        return f"{self.text}\n{' ' * self.pos}^"


class ModalDepthError(LogicError):
    """A formula with a box or dia inside another: beyond the decision procedure."""


# --------------------------------------------------------------------------- formulas


@dataclass(frozen=True)
class Formula:
    """Base of the formula nodes; ``str(f)`` writes it back in the input syntax.

    >>> str(parse("box(a -> ~b) & dia a"))
    'box(a -> ~b) & dia a'
    """

    def __str__(self) -> str:
        return show(self)


@dataclass(frozen=True)
class Atom(Formula):
    name: str


@dataclass(frozen=True)
class Const(Formula):
    value: bool


@dataclass(frozen=True)
class _Unary(Formula):
    arg: Formula
    symbol: ClassVar[str] = ""


@dataclass(frozen=True)
class Not(_Unary):
    symbol: ClassVar[str] = "~"


@dataclass(frozen=True)
class Box(_Unary):
    symbol: ClassVar[str] = "box"


@dataclass(frozen=True)
class Dia(_Unary):
    symbol: ClassVar[str] = "dia"


@dataclass(frozen=True)
class _Binary(Formula):
    left: Formula
    right: Formula
    symbol: ClassVar[str] = ""
    level: ClassVar[int] = 0


@dataclass(frozen=True)
class Iff(_Binary):
    symbol: ClassVar[str] = "<->"
    level: ClassVar[int] = 1


@dataclass(frozen=True)
class Imp(_Binary):
    symbol: ClassVar[str] = "->"
    level: ClassVar[int] = 2


@dataclass(frozen=True)
class Or(_Binary):
    symbol: ClassVar[str] = "|"
    level: ClassVar[int] = 3


@dataclass(frozen=True)
class And(_Binary):
    symbol: ClassVar[str] = "&"
    level: ClassVar[int] = 4


_UNARY_LEVEL = 5
_ATOM_LEVEL = 6

T = TypeVar("T")


def children(f: Formula) -> tuple[Formula, ...]:
    """The direct subformulas: one for ~, box and dia, two for a binary connective."""
    if isinstance(f, _Unary):
        return (f.arg,)
    if isinstance(f, _Binary):
        return (f.left, f.right)
    return ()


def fold(
    f: Formula,
    visit: Callable[[Formula, list[T]], T],
    below: Callable[[Formula], tuple[Formula, ...]] = children,
) -> T:
    """Bottom-up over the tree: ``visit(node, results of below(node))``, children first.

    Every walk over a formula goes through here, with an explicit stack rather than
    recursion: a user's formula may nest thousands deep (5,000 parentheses), beyond
    Python's recursion limit.

    >>> fold(parse("~(a & b) | c"), lambda g, sizes: 1 + sum(sizes))
    6
    """
    results: list[T] = []
    stack: list[tuple[Formula, bool]] = [(f, False)]
    while stack:
        node, expanded = stack.pop()
        kids = below(node)
        if expanded or not kids:
            n = len(kids)
            args = results[len(results) - n :] if n else []
            if n:
                del results[len(results) - n :]
            results.append(visit(node, args))
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids))
    return results[0]


def show(f: Formula) -> str:
    """The formula in the input syntax, with only the parentheses it needs.

    >>> show(Imp(And(Atom("a"), Atom("b")), Imp(Atom("c"), Atom("a"))))
    'a & b -> c -> a'
    """

    def visit(g: Formula, args: list[tuple[str, int]]) -> tuple[str, int]:
        if isinstance(g, Atom):
            return g.name, _ATOM_LEVEL
        if isinstance(g, Const):
            return ("true" if g.value else "false"), _ATOM_LEVEL
        if isinstance(g, _Unary):
            inner, level = args[0]
            if level < _UNARY_LEVEL:
                return f"{g.symbol}({inner})", _UNARY_LEVEL
            return (f"~{inner}" if isinstance(g, Not) else f"{g.symbol} {inner}"), _UNARY_LEVEL
        assert isinstance(g, _Binary)
        # -> groups to the right, the others to the left: the grouping side may hold its
        # own operator unbracketed, the other side needs a tighter one.
        right_assoc = isinstance(g, Imp)
        left = _wrap(args[0], g.level + (1 if right_assoc else 0))
        right = _wrap(args[1], g.level + (0 if right_assoc else 1))
        return f"{left} {g.symbol} {right}", g.level

    return fold(f, visit)[0]


def _wrap(shown: tuple[str, int], min_level: int) -> str:
    text, level = shown
    return text if level >= min_level else f"({text})"


def atoms(f: Formula) -> frozenset[str]:
    """The atom names of a formula.

    >>> sorted(atoms(parse("box(a -> b) | c")))
    ['a', 'b', 'c']
    """
    return frozenset(x.name for x in subformulas(f) if isinstance(x, Atom))


def subformulas(f: Formula) -> Iterator[Formula]:
    """Every subformula, the formula itself first (pre-order)."""
    stack = [f]
    while stack:
        g = stack.pop()
        yield g
        stack.extend(reversed(children(g)))


def modal_depth(f: Formula) -> int:
    """The nesting depth of box and dia.

    >>> modal_depth(parse("dia a & box(a -> dia b)"))
    2
    """

    def visit(g: Formula, args: list[int]) -> int:
        if isinstance(g, _Unary):
            return args[0] + (0 if isinstance(g, Not) else 1)
        return max(args, default=0)

    return fold(f, visit)


def _rebuild(g: Formula, args: list[Formula]) -> Formula:
    if isinstance(g, _Unary):
        return type(g)(args[0])
    if isinstance(g, _Binary):
        return type(g)(args[0], args[1])
    return g


def substitute(f: Formula, mapping: Mapping[str, Formula]) -> Formula:
    """Replace atoms at once (simultaneously: ``{a: b, b: a}`` swaps them).

    >>> str(substitute(parse("a -> ~b"), {"a": Atom("b"), "b": Atom("a")}))
    'b -> ~a'
    """

    def visit(g: Formula, args: list[Formula]) -> Formula:
        if isinstance(g, Atom):
            return mapping.get(g.name, g)
        return _rebuild(g, args)

    return fold(f, visit)


def conj(parts: Iterable[Formula]) -> Formula:
    """The conjunction of the parts, ``true`` for none.

    >>> str(conj([Atom("a"), Atom("b"), Atom("c")]))
    'a & b & c'
    """
    out: Formula | None = None
    for p in parts:
        out = p if out is None else And(out, p)
    return Const(True) if out is None else out


# --------------------------------------------------------------------------- parser

_TOKEN = re.compile(
    r"\s*(?:(?P<op><->|->|\[\]|<>|[~!&|()¬∧∨→↔□◇])|(?P<name>[A-Za-z_][A-Za-z0-9_]*))"
)
_SYMBOLS = {"!": "~", "¬": "~", "∧": "&", "∨": "|", "→": "->", "↔": "<->", "□": "[]", "◇": "<>"}
_KEYWORDS = {"not": "~", "and": "&", "or": "|", "box": "[]", "dia": "<>"}
_CONSTANTS = {"true": True, "false": False}
_EXPECT_FORMULA = "a formula (an atom, ~, box, dia or '(')"


@dataclass(frozen=True)
class _Token:
    kind: str  # "op", "atom", "const" or "end"
    value: str  # operators in their canonical spelling ("and" -> "&")
    pos: int
    raw: str = ""  # as written, for error messages

    def describe(self) -> str:
        if self.kind == "end":
            return "the end of the formula"
        return f"atom {self.raw!r}" if self.kind == "atom" else repr(self.raw)


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if not text[pos:].strip():
                break
            bad = pos + len(text[pos:]) - len(text[pos:].lstrip())
            raise FormulaError(text, bad, _EXPECT_FORMULA + " or an operator", repr(text[bad]))
        op, word = m.group("op"), m.group("name")
        start = m.start("op") if op else m.start("name")
        if op:
            out.append(_Token("op", _SYMBOLS.get(op, op), start, op))
        elif word in _KEYWORDS:
            out.append(_Token("op", _KEYWORDS[word], start, word))
        else:
            out.append(_Token("const" if word in _CONSTANTS else "atom", word, start, word))
        pos = m.end()
    out.append(_Token("end", "", len(text)))
    return out


#: Longer formula strings are refused (a reading is a few dozen characters; this bounds
#: the time and memory a hostile file can take).
MAX_FORMULA_CHARS = 100_000

_EXPECT_OPERATOR = "an operator (&, |, ->, <->) or the end of the formula"
_EXPECT_CLOSE = "')' or an operator (&, |, ->, <->)"


class _Parser:
    """Operator precedence (shunting-yard) over the levels of the module docstring.

    Iterative rather than recursive descent so that nesting depth is bounded by memory,
    not by Python's recursion limit (5,000 nested parentheses parse).
    """

    _BINARY: ClassVar[dict[str, type[_Binary]]] = {"<->": Iff, "->": Imp, "|": Or, "&": And}
    _PREFIX: ClassVar[dict[str, type[_Unary]]] = {"~": Not, "[]": Box, "<>": Dia}
    _OPEN = "("

    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)

    def fail(self, tok: _Token, expected: str) -> FormulaError:
        return FormulaError(self.text, tok.pos, expected, tok.describe())

    def formula(self) -> Formula:
        operands: list[Formula] = []
        ops: list[str] = []  # binary and prefix operators in canonical spelling, and "("
        expect_operand = True
        for tok in self.toks:
            is_op = tok.kind == "op"
            if expect_operand:
                if is_op and tok.value in self._PREFIX:
                    ops.append(tok.value)
                elif is_op and tok.value == self._OPEN:
                    ops.append(self._OPEN)
                elif tok.kind == "atom":
                    operands.append(Atom(tok.value))
                    expect_operand = False
                elif tok.kind == "const":
                    operands.append(Const(_CONSTANTS[tok.value]))
                    expect_operand = False
                else:
                    raise self.fail(tok, _EXPECT_FORMULA)
                continue
            inside = self._OPEN in ops
            if is_op and tok.value in self._BINARY:
                self._reduce(ops, operands, until=tok.value)
                ops.append(tok.value)
                expect_operand = True
            elif is_op and tok.value == ")" and inside:
                self._reduce(ops, operands, until=self._OPEN)
                ops.pop()  # the "("
            elif tok.kind == "end" and not inside:
                self._reduce(ops, operands, until=None)
                return operands[0]
            else:
                raise self.fail(tok, _EXPECT_CLOSE if inside else _EXPECT_OPERATOR)
        raise AssertionError("the token list always ends with an end token")

    def _reduce(self, ops: list[str], operands: list[Formula], until: str | None) -> None:
        # Pop what binds tighter than ``until`` (a binary operator about to be pushed),
        # everything down to the innermost "(" (until == "("), or everything (None).
        while ops and ops[-1] != self._OPEN:
            top = ops[-1]
            if until in self._BINARY and top in self._BINARY:
                mine, theirs = self._BINARY[until].level, self._BINARY[top].level
                # -> groups to the right: an equal level stays on the stack.
                if theirs < mine or (theirs == mine and until == "->"):
                    break
            ops.pop()
            if top in self._PREFIX:
                operands.append(self._PREFIX[top](operands.pop()))
            else:
                right = operands.pop()
                operands.append(self._BINARY[top](operands.pop(), right))


def parse(text: str) -> Formula:
    """Parse a formula; raises :class:`FormulaError` naming the column and what was expected.

    >>> parse("dia a and box(a -> not b)") == parse("<>a & [](a -> ~b)")
    True
    """
    if not isinstance(text, str):
        raise LogicError(f"a formula must be a string, not {type(text).__name__}")
    if len(text) > MAX_FORMULA_CHARS:
        raise LogicError(
            f"formula of {len(text):,} characters ({text[:20]!r}...); "
            f"the limit is {MAX_FORMULA_CHARS:,}"
        )
    return _Parser(text).formula()


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
        assert isinstance(g, _Binary)
        return _BOOL_OPS[type(g)](args[0], args[1])

    return fold(f, visit, below)


_BOOL_OPS: dict[type[_Binary], Callable[[bool, bool], bool]] = {
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
        if isinstance(g, _Binary):
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


def _reading(reading: Reading | str) -> Reading:
    if isinstance(reading, Reading):
        return reading
    if reading not in READINGS:
        raise LogicError(f"unknown reading {reading!r}; built-in: {', '.join(READINGS)}")
    return READINGS[reading]


# --------------------------------------------------------------------------- meta-inferences

_LABEL_ATOM = re.compile(r"^([ECN])([a-z])([a-z])$")

#: The relations of the ``logic table`` command, in its order.
RELATIONS: tuple[str, ...] = (
    "Eaa",
    "Caa",
    "Naa",
    "Cab -> Cba",
    "Cab -> ~Eba",
    "Eab -> ~Cba",
    "Nab -> ~Cba",
    "Eab & Ebc -> Eac",
    "Eab & Cbc -> Cac",
    "Nab & Ebc -> ~Cac",
    "Nab & Cbc -> ~Eac",
    "Cab & Nbc -> ~Eca",
    "Eab & Ebc -> ~Cca",
    "Eab & Cbc -> Cca",
    "Eab & Cbc -> ~Eca",
    "Nab & Ebc -> ~Cca",
    "Eab & Cac -> ~Ebc",
    "Eab & Cac -> Cbc",
    "Eab & Nac -> Nbc",
    "Nab & Eac -> ~Cbc",
    "Nab & Cac -> ~Ebc",
)


@dataclass(frozen=True)
class MetaInference:
    """``premises -> conclusion`` over label atoms; ``premises`` None for a bare formula.

    >>> m = parse_relation("Eab & Ebc -> Eac")
    >>> str(m.premises), str(m.conclusion)
    ('Eab & Ebc', 'Eac')
    """

    premises: Formula | None
    conclusion: Formula

    def __str__(self) -> str:
        if self.premises is None:
            return show(self.conclusion)
        return show(Imp(self.premises, self.conclusion))


def parse_label_formula(text: str) -> Formula:
    """A formula over label atoms (``Eab``, ``Nca``: label letter, two sentence variables).

    >>> str(parse_label_formula("Eab & ~Cba"))
    'Eab & ~Cba'
    """
    f = parse(text)
    for g in subformulas(f):
        if isinstance(g, (Box, Dia)):
            raise LogicError(
                f"{text!r}: box and dia belong in readings; relations combine label atoms"
            )
        if isinstance(g, Atom) and not _LABEL_ATOM.match(g.name):
            raise LogicError(
                f"{text!r}: {g.name!r} is not a label atom: write a label (E, C or N) "
                "followed by two sentence variables, e.g. Eab"
            )
    return f


def parse_relation(text: str) -> MetaInference:
    """A meta-inference: ``P -> Q`` at the top is premises and conclusion, else no premises.

    >>> print(parse_relation("Cab -> ~Eba").premises)
    Cab
    """
    f = parse_label_formula(text)
    if isinstance(f, Imp):
        return MetaInference(f.left, f.right)
    return MetaInference(None, f)


def translate(f: Formula, reading: Reading | str) -> Formula:
    """A label formula as a K formula: ``Lxy`` is the reading's L with a := x, b := y.

    >>> str(translate(parse_label_formula("Cab -> Cba"), "SC"))
    'box(a -> ~b) -> box(b -> ~a)'
    """
    r = _reading(reading)

    def visit(g: Formula, args: list[Formula]) -> Formula:
        if not isinstance(g, Atom):
            return _rebuild(g, args)
        m = _LABEL_ATOM.match(g.name)
        if m is None:
            raise LogicError(f"{g.name!r} is not a label atom (e.g. Eab)")
        label, x, y = m.groups()
        return substitute(r.formula(label), {"a": Atom(x), "b": Atom(y)})

    return fold(f, visit)


def classify(relation: str | MetaInference, reading: Reading | str) -> Status:
    """The status of a meta-inference under a reading (see the module docstring).

    >>> classify("Cab -> ~Eba", "EI"), classify("Eab & Ebc -> ~Cca", "SC")
    ('valid', 'contingent')
    """
    m = parse_relation(relation) if isinstance(relation, str) else relation
    r = _reading(reading)
    q = translate(m.conclusion, r)
    if m.premises is None:
        if valid(q):
            return "valid"
        return "contingent" if satisfiable(q) else "contradictory"
    p = translate(m.premises, r)
    if not satisfiable(p):
        return "vacuous"
    if not satisfiable(And(p, Not(q))):
        return "valid"
    if not satisfiable(And(p, q)):
        return "contradictory"
    return "contingent"


def counter_model(relation: str | MetaInference, reading: Reading | str) -> KripkeModel | None:
    """A model where the premises hold and the conclusion fails (None when valid).

    >>> print(counter_model("Eab -> ~Cba", "SC"))
    w0 = {}; w0 sees []
    """
    m = parse_relation(relation) if isinstance(relation, str) else relation
    r = _reading(reading)
    p = Const(True) if m.premises is None else translate(m.premises, r)
    return find_model(And(p, Not(translate(m.conclusion, r))))


def table(
    readings: Mapping[str, Reading] | Sequence[Reading] | None = None,
    relations: Sequence[str] = RELATIONS,
) -> list[dict[str, str]]:
    """Every relation under every reading, decided now: ``relation``, ``reading``, ``status``.

    >>> table([READINGS["MC"]], ["Naa"])
    [{'relation': 'Naa', 'reading': 'MC', 'status': 'contradictory'}]
    """
    rs = reading_list(readings)
    return [
        {"relation": rel, "reading": r.name, "status": classify(rel, r)}
        for rel in relations
        for r in rs
    ]


def reading_list(readings: Mapping[str, Reading] | Sequence[Reading] | None) -> list[Reading]:
    """The readings as a list; None means the built-in ones.

    >>> [r.name for r in reading_list(None)]
    ['MC', 'SC', 'EI']
    """
    if readings is None:
        return list(READINGS.values())
    if isinstance(readings, Mapping):
        return list(readings.values())
    return list(readings)


def format_table(rows: Sequence[Mapping[str, str]]) -> str:
    """The rows of :func:`table` as a text table, one line per relation.

    >>> print(format_table(table([READINGS["SC"]], ["Cab -> Cba"])))
    relation    SC
    ----------  -----
    Cab -> Cba  valid
    """
    names = list(dict.fromkeys(r["reading"] for r in rows))
    rels = list(dict.fromkeys(r["relation"] for r in rows))
    status = {(r["relation"], r["reading"]): r["status"] for r in rows}
    lines = [["relation", *names]] + [[rel, *(status[rel, n] for n in names)] for rel in rels]
    widths = [max(len(line[i]) for line in lines) for i in range(len(names) + 1)]
    lines.insert(1, ["-" * w for w in widths])
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


# --------------------------------------------------------------------------- conclusions


def _inputs(inputs: str | Sequence[str]) -> Formula:
    text = inputs if isinstance(inputs, str) else " & ".join(inputs)
    return parse_label_formula(text) if text.strip() else Const(True)


def _target_atom(label: str, target: str) -> Formula:
    if not re.fullmatch(r"[a-z]{2}", target):
        raise LogicError(f"target {target!r}: expected two sentence variables, e.g. 'ac'")
    return Atom(f"{label}{target}")


def _exclusive(label: str, target: str, r: Reading) -> Formula:
    # Answering L for a pair asserts L and denies the other two labels (METHODS.md 5).
    return conj(
        translate(_target_atom(lab, target), r)
        if lab == label
        else Not(translate(_target_atom(lab, target), r))
        for lab in LABELS
    )


def allowed_labels(
    inputs: str | Sequence[str], target: str, reading: Reading | str
) -> tuple[str, ...]:
    """The labels a model may answer for the target pair, given the inputs (E, C, N order).

    Answering L asserts L(target) and denies the other two labels, so L is allowed when
    ``inputs & L & ~L' & ~L''`` (for the target pair) is satisfiable in K under the
    reading (the exclusive reading of METHODS.md section 5).

    >>> allowed_labels("Eab & Ebc", "ac", "EI"), allowed_labels("Cab", "ba", "SC")
    (('E',), ('C',))
    """
    r = _reading(reading)
    p = translate(_inputs(inputs), r)
    return tuple(lab for lab in LABELS if satisfiable(And(p, _exclusive(lab, target, r))))


@dataclass(frozen=True)
class Conclusion:
    """What a reading says about a target pair given the inputs.

    ``allowed``: :func:`allowed_labels`. ``inferred``, as the report shows it: the one
    allowed label (``"C"``), the negated label when two are allowed (``"~E"``), ``"-"``
    when all three are, ``"vacuous"`` when the inputs are unsatisfiable under the reading
    (consistency is then undefined), and ``"none"`` when the inputs are satisfiable but no
    single answer is (no built-in reading does this on the patterns of ``infer build``).

    >>> conclude("Eab & Cac", "bc", "EI").to_dict()
    {'reading': 'EI', 'inferred': '~E', 'allowed': ['C', 'N']}
    """

    reading: str
    inferred: str
    allowed: tuple[str, ...]

    def to_dict(self) -> dict[str, str | list[str]]:
        return {"reading": self.reading, "inferred": self.inferred, "allowed": list(self.allowed)}


def conclude(inputs: str | Sequence[str], target: str, reading: Reading | str) -> Conclusion:
    """The allowed labels for the target pair and the inferred label (:class:`Conclusion`).

    >>> conclude("Nab", "ba", "MC").inferred, conclude("Eab", "ba", "SC").inferred
    ('vacuous', '-')
    """
    r = _reading(reading)
    allowed = allowed_labels(inputs, target, r)
    if len(allowed) == len(LABELS):
        inferred = "-"
    elif len(allowed) == 1:
        inferred = allowed[0]
    elif allowed:
        inferred = " & ".join(f"~{lab}" for lab in LABELS if lab not in allowed)
    elif satisfiable(translate(_inputs(inputs), r)):
        inferred = "none"
    else:
        inferred = "vacuous"
    return Conclusion(r.name, inferred, allowed)


def conclusions(
    inputs: str | Sequence[str],
    target: str,
    readings: Mapping[str, Reading] | Sequence[Reading] | None = None,
) -> list[Conclusion]:
    """:func:`conclude` under every reading (None: the built-in ones), in their order.

    >>> [c.inferred for c in conclusions("Cab", "ba")]
    ['C', 'C', '~E']
    """
    return [conclude(inputs, target, r) for r in reading_list(readings)]


def inferred_label(inputs: str | Sequence[str], target: str, reading: Reading | str) -> str:
    """The inferred label of :func:`conclude`: label, negated label, ``-``, ``vacuous``.

    >>> inferred_label(["Eab", "Cbc"], "ca", "SC"), inferred_label("Eab", "ba", "EI")
    ('C', '~C')
    """
    return conclude(inputs, target, reading).inferred


def readings_summary(readings: Mapping[str, Reading] | Sequence[Reading] | None = None) -> str:
    """One line per reading: its name and formulas.

    >>> print(readings_summary([READINGS["MC"]]).splitlines()[0])
    MC (material): E = a -> b; C = a -> ~b; N = ~(a -> b) & ~(a -> ~b)
    """
    out = []
    for r in reading_list(readings):
        head = f"{r.name} ({r.description})" if r.description else r.name
        out.append(f"{head}: " + "; ".join(f"{lab} = {r.formula(lab)}" for lab in LABELS))
    return "\n".join(out)
