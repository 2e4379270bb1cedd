"""A tableau deciding satisfiability in K, KT, K4, S4, KB4 and S5, for any modal depth
and atoms (the conditions of :data:`~nlieval.metainference.logic_models.DECIDED`).

Part of :mod:`nlieval.metainference.logic`, which imports every public name here.
:mod:`~nlieval.metainference.logic_k` sends here every formula its bit sets cannot take
(modal depth above one, or more atoms than they hold); :func:`tableau_model` is also
public so that the two procedures can be compared.

How it works. The formula is put in negation normal form (``~`` only on atoms) as a
graph of numbered nodes, each subformula once, with the node of its negation beside it.
A *world* is a set of such formulas that must hold together; it is *saturated* by the
propositional rules (``&``: both parts; ``|``: one part, the second branch also asserting
the negation of the first, so branches never overlap; a formula beside its negation, or
``false``, closes the branch), and in KT, S4 and S5 also by the reflexive rule
(``box X`` at a world puts X there). Then each ``dia X`` of a saturated world needs a
world it sees holding X and what the world's boxes demand there:

- K and KT: a new world with X and the body of every ``box`` (modal depth goes down at
  each step, so the search ends; a world holding the same set is decided once);
- S4: a new world with X and every ``box`` formula itself (transitivity carries them
  on), unless a world on the path from the root already holds all of that, which is then
  seen instead (loop checking: a set seen twice on a path is always caught, so the search
  ends, and the model is the reflexive-transitive closure of the edges made);
- K4: as S4 without the reflexive rule, so the new world gets X, every ``box`` formula
  and its body; a world of the path seen again closes a loop, and the model is the
  transitive closure of the edges made (a world sees itself only on a loop, where every
  box it holds was carried to the world it sees, its body with it);
- S5: every world sees every world (a satisfiable formula has such a model: the class of
  its world). Every ``box`` and ``dia`` formula true at one world is true at all, so it
  is added to every world; each ``dia X`` gets one world holding X, unless one already
  does: at most one world more than the formula has ``dia`` subformulas;
- KB4: a world that sees a world sees itself (symmetric, then transitive), so the worlds
  it sees are one S5 cluster, or it sees none: the S5 search, else one world where every
  ``box`` holds and no ``dia`` does.

Soundness: an open, fully expanded tableau is a model (each formula in a world's set is
true there, by induction on the formula), and it is checked against
:func:`~nlieval.metainference.logic_models.holds` and the frame condition before it is
returned. Completeness: if the formula is true at a world w of a model of the class, the
choices that follow w (the true disjunct; for each ``dia`` a true witness) never close, and
the search tries every choice; a loop check only ends a path with success, so it never
hides a model. The search is bounded in time (:data:`SOLVER_TIMEOUT_S`, raising
:class:`~nlieval.metainference.logic_formulas.SolverLimit`) and runs on explicit stacks,
so a formula nested thousands deep does not reach Python's recursion limit.

>>> print(tableau_model("box a & dia ~a", "KT"))
None
>>> print(tableau_model("dia dia a & box ~a", "K"))
w0 = {} sees [w1]; w1 = {} sees [w2]; w2 = {a} sees []
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NoReturn

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
    Not,
    Or,
    SolverLimit,
    fold,
    parse,
    show,
    subformulas,
)
from .logic_models import FRAME_CLASSES, Frames, KripkeModel, frame_class, holds, in_frame_class

#: Seconds one decision may take before it is abandoned with a one-line error. The
#: readings' formulas take milliseconds; the limit is against runaway input.
SOLVER_TIMEOUT_S = 10.0

#: A model found is checked by :func:`~nlieval.metainference.logic_models.holds` and the
#: frame condition, whose work is the formula's symbols times the model's worlds, and its
#: accessible pairs. A model past either bound (each a few seconds of work) is not
#: returned: a one-line error says so. Only formulas nested hundreds deep reach them
#: (``dia`` nested 4,000 deep in K, 1,000 deep in S4, whose relation is transitive).
MAX_CHECK_WORK = 20_000_000
MAX_MODEL_PAIRS = 500_000

# Node kinds of the negation normal form.
_TRUE, _FALSE, _POS, _NEG, _AND, _OR, _BOX, _DIA = range(8)


class _Graph:
    """A formula in negation normal form, as numbered nodes shared by equal subformulas.

    ``kind[x]``; ``left[x]``: the atom number of a literal, the argument of ``box``/``dia``,
    the first part of ``&``/``|``; ``right[x]``: the second part. ``neg[x]``: the node of
    the negation of x (every node :meth:`compile` makes has one; the search still works
    without it, only with overlapping branches).
    """

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.left: list[int] = []
        self.right: list[int] = []
        self.neg: dict[int, int] = {}
        self.names: list[str] = []
        self._atom: dict[str, int] = {}
        self._ids: dict[tuple[int, int, int], int] = {}
        self.true = self._node(_TRUE, 0, 0)
        self.false = self._node(_FALSE, 0, 0)
        self._pair(self.true, self.false)

    def _node(self, kind: int, x: int, y: int) -> int:
        key = (kind, x, y)
        got = self._ids.get(key)
        if got is None:
            got = self._ids[key] = len(self.kind)
            self.kind.append(kind)
            self.left.append(x)
            self.right.append(y)
        return got

    def _pair(self, pos: int, neg: int) -> tuple[int, int]:
        # Every pair made here is a formula and its negation, so any entry is right.
        self.neg.setdefault(pos, neg)
        self.neg.setdefault(neg, pos)
        return pos, neg

    def _and(self, x: int, y: int) -> int:
        return self._join(_AND, self.false, self.true, x, y)

    def _or(self, x: int, y: int) -> int:
        return self._join(_OR, self.true, self.false, x, y)

    def _join(self, kind: int, zero: int, unit: int, x: int, y: int) -> int:
        # And and or are duals: the same simplification with true and false swapped
        # (``zero`` absorbs, ``unit`` is neutral, a formula with its negation gives ``zero``).
        if zero in (x, y) or self.neg.get(x) == y:
            return zero
        if x in (unit, y):
            return y
        if y == unit:
            return x
        return self._node(kind, min(x, y), max(x, y))

    def _modal(self, kind: int, x: int) -> int:
        if kind == _BOX and x == self.true:
            return self.true
        if kind == _DIA and x == self.false:
            return self.false
        return self._node(kind, x, 0)

    def compile(self, f: Formula) -> int:
        """The node of ``f`` (adding the nodes of its subformulas and their negations)."""

        def visit(g: Formula, args: list[tuple[int, int]]) -> tuple[int, int]:
            if isinstance(g, Atom):
                if g.name not in self._atom:
                    self._atom[g.name] = len(self.names)
                    self.names.append(g.name)
                i = self._atom[g.name]
                return self._pair(self._node(_POS, i, 0), self._node(_NEG, i, 0))
            if isinstance(g, Const):
                return (self.true, self.false) if g.value else (self.false, self.true)
            if isinstance(g, Not):
                return args[0][1], args[0][0]
            if isinstance(g, (Box, Dia)):
                (p, n), k = args[0], (_BOX, _DIA) if isinstance(g, Box) else (_DIA, _BOX)
                return self._pair(self._modal(k[0], p), self._modal(k[1], n))
            (xp, xn), (yp, yn) = args
            if isinstance(g, And):
                return self._pair(self._and(xp, yp), self._or(xn, yn))
            if isinstance(g, Or):
                return self._pair(self._or(xp, yp), self._and(xn, yn))
            if isinstance(g, Imp):
                return self._pair(self._or(xn, yp), self._and(xp, yn))
            assert isinstance(g, Iff)
            # (x & y) | (~x & ~y), and its negation (x & ~y) | (~x & y); each part is
            # paired with its own negation too, so that every node has one.
            both, neither = self._and(xp, yp), self._and(xn, yn)
            only_x, only_y = self._and(xp, yn), self._and(xn, yp)
            self._pair(both, self._or(xn, yn))
            self._pair(neither, self._or(xp, yp))
            self._pair(only_x, self._or(xn, yp))
            self._pair(only_y, self._or(xp, yn))
            return self._pair(self._or(both, neither), self._or(only_x, only_y))

        return fold(f, visit)[0]


class _Clock:
    """Raises :class:`SolverLimit` once the time is up (looked at on the first step and
    every 1024 after), or
    when a model is too large to check (:meth:`check_size`)."""

    def __init__(self, timeout_s: float, f: Formula, frames: str) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.f = f
        self.frames = frames
        self.steps = 0
        self.symbols = sum(1 for _ in subformulas(f))

    def tick(self) -> None:
        self.steps += 1
        if self.steps & 1023 == 1 and time.monotonic() >= self.deadline:
            self.fail(f"not decided within the limit of {self.timeout_s:g} s")

    def check_size(self, worlds: int, pairs: int) -> None:
        if self.symbols * worlds > MAX_CHECK_WORK or pairs > MAX_MODEL_PAIRS:
            self.fail(
                f"satisfiable, but its model ({worlds:,} worlds, {pairs:,} accessible pairs "
                f"or more) is too large to check against {self.symbols:,} symbols"
            )

    def fail(self, why: str) -> NoReturn:
        text = show(self.f)
        text = text if len(text) <= 60 else text[:57] + "..."
        raise SolverLimit(
            f"{text!r} over {self.frames} frames: {why} (a bound against runaway input)"
        )


def _saturations(
    g: _Graph, init: Iterable[int], reflexive: bool, clock: _Clock
) -> Iterator[frozenset[int]]:
    """Every clash-free saturation of one world's set, each distinct one once."""
    kind, left, right, neg = g.kind, g.left, g.right, g.neg
    yielded: set[frozenset[int]] = set()
    stack: list[tuple[set[int], list[int]]] = [(set(), sorted(init, reverse=True))]
    while stack:
        label, todo = stack.pop()
        alive = True
        while todo:
            clock.tick()
            x = todo.pop()
            if x in label:
                continue
            k = kind[x]
            if k == _FALSE or neg.get(x, -1) in label:
                alive = False
                break
            label.add(x)  # true too: a need holding it must be found in some world's set
            if k == _AND:
                todo += (right[x], left[x])
            elif k == _OR:
                a, b = left[x], right[x]
                if a in label or b in label:
                    continue
                other = [*todo, neg[a], b] if a in neg else [*todo, b]
                stack.append((set(label), other))
                todo.append(a)
            elif k == _BOX and reflexive:
                todo.append(left[x])
        if alive:
            done = frozenset(label)
            if done not in yielded:
                yielded.add(done)
                yield done


@dataclass(eq=False)
class _World:
    """A saturated world of an open tableau: its set, the worlds made for its ``dia``
    formulas, and (S4) the worlds on its path it sees instead of new ones."""

    label: frozenset[int]
    children: list[_World] = field(default_factory=list)
    links: list[_World] = field(default_factory=list)


@dataclass(eq=False)
class _Frame:
    """A world being searched, on the explicit stack: its initial set, the saturations
    still to try, the one being tried (``world``) and the sets its ``dia``s need."""

    init: frozenset[int]
    sats: Iterator[frozenset[int]]
    world: _World | None = None
    needs: list[frozenset[int]] = field(default_factory=list)
    next: int = 0


def _needs(g: _Graph, label: frozenset[int], frames: Frames) -> list[frozenset[int]]:
    boxes = [x for x in label if g.kind[x] == _BOX]
    bodies = [g.left[x] for x in boxes]
    # Transitive: the boxes themselves go on. Without the reflexive rule (K4) their
    # bodies go too, so that a world on the path seen again (a loop) holds them.
    carried = (boxes if frames.reflexive else [*boxes, *bodies]) if frames.transitive else bodies
    out: list[frozenset[int]] = []
    for d in sorted(x for x in label if g.kind[x] == _DIA):
        need = frozenset([g.left[d], *carried])
        if need not in out:
            out.append(need)
    return out


def _search_tree(g: _Graph, root: int, frames: Frames, clock: _Clock) -> _World | None:
    """K, KT, K4 and S4: depth-first over worlds, one explicit stack frame per world."""
    reflexive, transitive = frames.reflexive, frames.transitive
    # A set that failed is unsatisfiable whatever the path (a loop check only ever adds
    # success), so failures are kept in S4 too; a success in S4 may lean on a world of
    # its path, so only K and KT keep successes.
    known: dict[frozenset[int], _World | None] = {}
    start = frozenset([root])
    stack = [_Frame(start, _saturations(g, start, reflexive, clock))]
    returned: _World | None = None
    has_returned = False
    while stack:
        clock.tick()
        top = stack[-1]
        if has_returned:
            has_returned = False
            if returned is None:
                top.world = None  # a need failed: try the next saturation
            else:
                assert top.world is not None
                top.world.children.append(returned)
                top.next += 1
        if top.world is None:
            label = next(top.sats, None)
            if label is None:
                stack.pop()
                known[top.init] = None
                returned, has_returned = None, True
                continue
            top.world, top.needs, top.next = _World(label), _needs(g, label, frames), 0
        if top.next < len(top.needs):
            need = top.needs[top.next]
            if transitive:
                seen = next(
                    (fr.world for fr in reversed(stack) if fr.world and need <= fr.world.label),
                    None,
                )
                if seen is not None:
                    top.world.links.append(seen)
                    top.next += 1
                    continue
            if need in known:
                returned, has_returned = known[need], True
                continue
            stack.append(_Frame(need, _saturations(g, need, reflexive, clock)))
            continue
        stack.pop()
        if not transitive:
            known[top.init] = top.world
        returned, has_returned = top.world, True
    return returned


def _tree_model(g: _Graph, root: _World, frames: Frames, clock: _Clock) -> KripkeModel:
    number: dict[int, int] = {}
    order: list[_World] = []
    stack = [root]
    while stack:
        w = stack.pop()
        if id(w) in number:
            continue
        number[id(w)] = len(order)
        order.append(w)
        stack.extend(reversed(w.children))
    edges = {(number[id(w)], number[id(v)]) for w in order for v in (*w.children, *w.links)}
    if frames.reflexive:
        edges |= {(i, i) for i in range(len(order))}
    clock.check_size(len(order), len(edges))
    if frames.transitive:
        edges = _closure(edges, len(order), clock)
    return KripkeModel(tuple(_true_atoms(g, w.label) for w in order), frozenset(edges))


def _closure(edges: set[tuple[int, int]], n: int, clock: _Clock) -> set[tuple[int, int]]:
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        succ[u].append(v)
    out: set[tuple[int, int]] = set()
    for u in range(n):
        # u sees itself only by a path back to it (K4) or its reflexive edge (S4)
        seen: set[int] = set()
        todo = [u]
        while todo:
            clock.tick()
            for v in succ[todo.pop()]:
                if v not in seen:
                    seen.add(v)
                    todo.append(v)
        out |= {(u, v) for v in seen}
        clock.check_size(n, len(out))
    return out


def _true_atoms(g: _Graph, label: Iterable[int]) -> frozenset[str]:
    return frozenset(g.names[g.left[x]] for x in label if g.kind[x] == _POS)


# An S5 search state: each world's set and the formulas still to add to it, and the
# box/dia formulas found so far (true at one world of a cluster, so at all).
_State = tuple[list[set[int]], list[list[int]], set[int]]


def _search_cluster(g: _Graph, root: int, clock: _Clock) -> list[frozenset[int]] | None:
    """S5: the worlds of one cluster (each sees each), searched together."""
    kind, left, right, neg = g.kind, g.left, g.right, g.neg
    modal_kinds = (_BOX, _DIA)
    stack: list[_State] = [([set()], [[root]], set())]
    while stack:
        labels, todos, modal = stack.pop()
        busy = [i for i, t in enumerate(todos) if t]  # every world with formulas to add
        while True:
            clock.tick()
            while busy and not todos[busy[-1]]:
                busy.pop()
            if not busy:
                lacking = next(
                    (
                        d
                        for d in sorted(modal)
                        if kind[d] == _DIA and not any(left[d] in lab for lab in labels)
                    ),
                    None,
                )
                if lacking is None:
                    return [frozenset(lab) for lab in labels]
                labels.append(set())
                todos.append([*sorted(modal, reverse=True), left[lacking]])
                busy.append(len(labels) - 1)
                clock.check_size(len(labels), len(labels) ** 2)
                continue
            w = busy[-1]
            label, todo = labels[w], todos[w]
            x = todo.pop()
            if x in label:
                continue
            k = kind[x]
            if k == _FALSE or neg.get(x, -1) in label:
                break  # this branch closes
            label.add(x)
            if k == _AND:
                todo += (right[x], left[x])
            elif k == _OR:
                a, b = left[x], right[x]
                if a in label or b in label:
                    continue
                other = [list(t) for t in todos]
                other[w] += (neg[a], b) if a in neg else (b,)
                stack.append(([set(lab) for lab in labels], other, set(modal)))
                todo.append(a)
            elif k in modal_kinds:
                # box X: X here (reflexive). dia Y with Y itself a box or dia: Y is true
                # at some world, hence at every world, here too; no new world needed.
                if k == _BOX or kind[left[x]] in modal_kinds:
                    todo.append(left[x])
                if x not in modal:
                    modal.add(x)
                    for v, t in enumerate(todos):
                        if v != w:
                            if not t:
                                busy.append(v)
                            t.append(x)
    return None


def tableau_model(
    formula: Formula | str, frames: str | Frames = "K", timeout_s: float | None = None
) -> KripkeModel | None:
    """A model of the frame class whose world 0 makes the formula true, or None if there
    is none: sound and complete for K, KT, K4, S4, KB4 and S5 at any modal depth (module
    docstring). Raises :class:`SolverLimit` after ``timeout_s`` seconds (None: the
    module's :data:`SOLVER_TIMEOUT_S`, read at each call), or when the search runs out of
    memory (the message names the process's address-space limit where one is set).

    >>> print(tableau_model("a & box dia ~a", "S4"))  # w1 = {} needs no new world: a loop
    w0 = {a} sees [w0, w1]; w1 = {} sees [w1]
    >>> tableau_model("~(box a -> box box a)", "S4") is None  # axiom 4 holds on S4 frames
    True
    """
    f = parse(formula) if isinstance(formula, str) else formula
    fc = frame_class(frames)
    clock = _Clock(SOLVER_TIMEOUT_S if timeout_s is None else timeout_s, f, fc.name)
    try:
        model = _decide(f, fc, clock)
    except MemoryError:
        # Raised where an allocation failed; the search's worlds are freed by now, so
        # there is room to say so in one line, as for the time bound.
        clock.fail(f"ran out of memory ({_memory_bound()}) before it was decided")
    if model is not None and not (holds(f, model) and in_frame_class(model, fc)):
        raise AssertionError(f"tableau model {model} fails {show(f)!r} over {fc} frames")
    return model


def _dead_end_model(f: Formula, clock: _Clock) -> KripkeModel | None:
    """A world that sees no world, making ``f`` true, or None: there every ``box``
    holds and no ``dia`` does."""

    def visit(g: Formula, args: list[Formula]) -> Formula:
        if isinstance(g, (Box, Dia)):
            return Const(isinstance(g, Box))
        if isinstance(g, Not):
            return Not(args[0])
        if isinstance(g, Binary):
            return type(g)(args[0], args[1])
        return g

    found = _decide(fold(f, visit), FRAME_CLASSES["K"], clock)
    return None if found is None else KripkeModel(found.valuation[:1], frozenset())


def _memory_bound() -> str:
    try:
        import resource  # POSIX only
    except ImportError:
        return "the memory this process may use"
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft == resource.RLIM_INFINITY:
        return "the memory this process may use"
    return f"the address-space limit of {soft / 2**30:.3g} GiB, ulimit -v"


def _decide(f: Formula, fc: Frames, clock: _Clock) -> KripkeModel | None:
    if fc.symmetric and not fc.reflexive:
        # KB4: a world that sees any world sees itself (symmetric, then transitive), so
        # the worlds a world reaches are one cluster, an S5 model, or it sees none.
        cluster = _decide(f, FRAME_CLASSES["S5"], clock)
        return cluster if cluster is not None else _dead_end_model(f, clock)
    g = _Graph()
    root = g.compile(f)
    if fc.symmetric:  # S5 (symmetric, reflexive and transitive): one cluster
        worlds = _search_cluster(g, root, clock)
        if worlds is None:
            return None
        n = len(worlds)
        everyone = frozenset((u, v) for u in range(n) for v in range(n))
        model = KripkeModel(tuple(_true_atoms(g, w) for w in worlds), everyone)
    else:
        found = _search_tree(g, root, fc, clock)
        if found is None:
            return None
        model = _tree_model(g, found, fc, clock)
    return model


__all__ = ["MAX_CHECK_WORK", "MAX_MODEL_PAIRS", "SOLVER_TIMEOUT_S", "tableau_model"]
