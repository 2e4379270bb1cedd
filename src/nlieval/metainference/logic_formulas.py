"""The formulas of the logic module: their types, the walks over them and the parser.

Part of :mod:`nlieval.metainference.logic`, which imports every public name here, so
``from nlieval.metainference.logic import parse`` keeps working. It holds the errors of
the logic module (:class:`LogicError` and its kinds), the formula nodes (:class:`Atom`,
:class:`Not`, :class:`Box`, :class:`And` ...), the walks over a tree (:func:`fold` and
what is built on it) and the parser (:func:`parse`).

Syntax (:func:`parse`), loosest binding first: ``<->``; ``->`` (right-associative);
``|`` or ``or``; ``&`` or ``and``; then the prefix operators ``~``/``!``/``not``,
``box``/``[]`` and ``dia``/``<>``, which bind tightest (``box a & b`` is ``(box a) & b``).
Atoms are identifiers; ``true`` and ``false`` are the constants.

>>> str(parse("[](a -> not b) and <>a"))
'box(a -> ~b) & dia a'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar, TypeVar


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
    """A formula with a box or dia inside another where only depth one is handled (the
    truth sets of :func:`~nlieval.metainference.logic_k.truth_set`)."""


class SolverLimit(LogicError):
    """A formula the decision procedure gave up on: not decided within its time limit,
    or a model found too large to check (a bound against runaway input)."""


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
class Unary(Formula):
    """Base of the prefix operators ~, box and dia: one argument, ``arg``."""

    arg: Formula
    symbol: ClassVar[str] = ""


@dataclass(frozen=True)
class Not(Unary):
    symbol: ClassVar[str] = "~"


@dataclass(frozen=True)
class Box(Unary):
    symbol: ClassVar[str] = "box"


@dataclass(frozen=True)
class Dia(Unary):
    symbol: ClassVar[str] = "dia"


@dataclass(frozen=True)
class Binary(Formula):
    """Base of the binary connectives: ``left`` and ``right``; ``level`` is the binding
    strength (higher binds tighter)."""

    left: Formula
    right: Formula
    symbol: ClassVar[str] = ""
    level: ClassVar[int] = 0


@dataclass(frozen=True)
class Iff(Binary):
    symbol: ClassVar[str] = "<->"
    level: ClassVar[int] = 1


@dataclass(frozen=True)
class Imp(Binary):
    symbol: ClassVar[str] = "->"
    level: ClassVar[int] = 2


@dataclass(frozen=True)
class Or(Binary):
    symbol: ClassVar[str] = "|"
    level: ClassVar[int] = 3


@dataclass(frozen=True)
class And(Binary):
    symbol: ClassVar[str] = "&"
    level: ClassVar[int] = 4


_UNARY_LEVEL = 5
_ATOM_LEVEL = 6

T = TypeVar("T")


def children(f: Formula) -> tuple[Formula, ...]:
    """The direct subformulas: one for ~, box and dia, two for a binary connective."""
    if isinstance(f, Unary):
        return (f.arg,)
    if isinstance(f, Binary):
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
        if isinstance(g, Unary):
            inner, level = args[0]
            if level < _UNARY_LEVEL:
                return f"{g.symbol}({inner})", _UNARY_LEVEL
            return (f"~{inner}" if isinstance(g, Not) else f"{g.symbol} {inner}"), _UNARY_LEVEL
        assert isinstance(g, Binary)
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
        if isinstance(g, Unary):
            return args[0] + (0 if isinstance(g, Not) else 1)
        return max(args, default=0)

    return fold(f, visit)


def rebuild(g: Formula, args: list[Formula]) -> Formula:
    """The node ``g`` over new direct subformulas ``args`` (atoms and constants as they are).

    >>> str(rebuild(parse("a & b"), [Atom("c"), Atom("d")]))
    'c & d'
    """
    if isinstance(g, Unary):
        return type(g)(args[0])
    if isinstance(g, Binary):
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
        return rebuild(g, args)

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

#: Deeper nesting of box and dia in a reading's formula is refused by the parser (asked
#: by the reading, :func:`parse`'s ``max_modal_depth``): a reading enters every relation
#: it translates several times over, and a reading of 3,000 nested boxes ran for minutes;
#: a reading of NLI labels needs a depth of one or two. A formula given to the decision
#: procedures directly may nest deeper (their time limit bounds it).
MAX_MODAL_DEPTH = 100

_EXPECT_OPERATOR = "an operator (&, |, ->, <->) or the end of the formula"
_EXPECT_CLOSE = "')' or an operator (&, |, ->, <->)"


class _Parser:
    """Operator precedence (shunting-yard) over the levels of the module docstring.

    Iterative rather than recursive descent so that nesting depth is bounded by memory,
    not by Python's recursion limit (5,000 nested parentheses parse).
    """

    _BINARY: ClassVar[dict[str, type[Binary]]] = {"<->": Iff, "->": Imp, "|": Or, "&": And}
    _PREFIX: ClassVar[dict[str, type[Unary]]] = {"~": Not, "[]": Box, "<>": Dia}
    _MODAL: ClassVar[frozenset[str]] = frozenset({"[]", "<>"})
    _OPEN = "("

    def __init__(self, text: str, max_modal_depth: int | None = None):
        self.text = text
        self.toks = _tokens(text)
        self.max_modal = max_modal_depth

    def fail(self, tok: _Token, expected: str) -> FormulaError:
        return FormulaError(self.text, tok.pos, expected, tok.describe())

    def formula(self) -> Formula:
        operands: list[Formula] = []
        ops: list[str] = []  # binary and prefix operators in canonical spelling, and "("
        expect_operand = True
        modal = 0  # box and dia on the stack
        for tok in self.toks:
            is_op = tok.kind == "op"
            if expect_operand:
                if is_op and tok.value in self._PREFIX:
                    ops.append(tok.value)
                    if tok.value in self._MODAL:
                        # The boxes and dias on the stack all hold what comes next.
                        modal += 1
                        if self.max_modal is not None and modal > self.max_modal:
                            raise LogicError(
                                f"box and dia nested more than {self.max_modal} deep "
                                f"(column {tok.pos + 1} of {self.text[:40]!r}...)"
                            )
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
                modal -= self._reduce(ops, operands, until=tok.value)
                ops.append(tok.value)
                expect_operand = True
            elif is_op and tok.value == ")" and inside:
                modal -= self._reduce(ops, operands, until=self._OPEN)
                ops.pop()  # the "("
            elif tok.kind == "end" and not inside:
                self._reduce(ops, operands, until=None)
                return operands[0]
            else:
                raise self.fail(tok, _EXPECT_CLOSE if inside else _EXPECT_OPERATOR)
        raise AssertionError("the token list always ends with an end token")

    def _reduce(self, ops: list[str], operands: list[Formula], until: str | None) -> int:
        # Pop what binds tighter than ``until`` (a binary operator about to be pushed),
        # everything down to the innermost "(" (until == "("), or everything (None);
        # return how many of the popped were box or dia.
        modal = 0
        while ops and ops[-1] != self._OPEN:
            top = ops[-1]
            if until in self._BINARY and top in self._BINARY:
                mine, theirs = self._BINARY[until].level, self._BINARY[top].level
                # -> groups to the right: an equal level stays on the stack.
                if theirs < mine or (theirs == mine and until == "->"):
                    break
            ops.pop()
            modal += top in self._MODAL
            if top in self._PREFIX:
                operands.append(self._PREFIX[top](operands.pop()))
            else:
                right = operands.pop()
                operands.append(self._BINARY[top](operands.pop(), right))
        return modal


def parse(text: str, max_modal_depth: int | None = None) -> Formula:
    """Parse a formula; raises :class:`FormulaError` naming the column and what was
    expected, or (box and dia nested deeper than ``max_modal_depth``) :class:`LogicError`
    as soon as the parser meets the operator too many.

    >>> parse("dia a and box(a -> not b)") == parse("<>a & [](a -> ~b)")
    True
    >>> parse("box box dia a", max_modal_depth=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.metainference.logic_formulas.LogicError: box and dia nested more than 2 deep ...)
    """
    if not isinstance(text, str):
        raise LogicError(f"a formula must be a string, not {type(text).__name__}")
    if len(text) > MAX_FORMULA_CHARS:
        raise LogicError(
            f"formula of {len(text):,} characters ({text[:20]!r}...); "
            f"the limit is {MAX_FORMULA_CHARS:,}"
        )
    return _Parser(text, max_modal_depth).formula()
