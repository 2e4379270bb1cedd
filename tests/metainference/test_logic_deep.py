"""Issue 21: the decision procedure at any modal depth and for any number of atoms, over
the frame classes K, KT (reflexive), S4 (reflexive, transitive) and S5 (equivalence).

The oracle here is independent of the library: formulas are built here as tuples and
written out as text for the library's parser; truth in a model is computed by the
evaluator below; small models are enumerated here, relation by relation, with every
valuation of the formula's atoms at once (one bit per valuation of all worlds, in one
Python integer).

What each check proves:

- the procedure says satisfiable: its model is in the frame class (checked here) and
  makes the formula true at world 0 (evaluated here), so the answer is right;
- the procedure says unsatisfiable: no model of the class with at most a few worlds makes
  the formula true (enumerated here), so a wrong "unsatisfiable" whose smallest model is
  that small is caught (put the other way: when brute force finds a model, the procedure
  must have said satisfiable);
- frame classes nest (every S5 frame is S4, every S4 frame KT, every KT frame K), so
  whatever is satisfiable over a narrower class must be over every wider one.

The enumeration only takes relations in which every world is reachable from world 0: a
formula true at w in any model is true at w in the submodel of the worlds reachable from
w, and that submodel keeps reflexivity, transitivity and symmetry, so nothing is missed.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from nlieval.metainference import logic, logic_tableau

Formula = tuple  # ("atom", name) ("const", bool) ("not", f) (op, f, g) ("box", f) ("dia", f)
FRAMES = ("K", "KT", "S4", "S5")
BINARY = {"and": "&", "or": "|", "imp": "->", "iff": "<->"}


# --------------------------------------------------------------------------- the oracle


def render(f: Formula) -> str:
    """The tuple formula in the library's syntax, every subformula in parentheses."""
    tag = f[0]
    if tag == "atom":
        return f[1]
    if tag == "const":
        return "true" if f[1] else "false"
    if tag == "not":
        return f"~({render(f[1])})"
    if tag in ("box", "dia"):
        return f"{tag}({render(f[1])})"
    return f"({render(f[1])}) {BINARY[tag]} ({render(f[2])})"


def letters(f: Formula) -> set[str]:
    if f[0] == "atom":
        return {f[1]}
    if f[0] == "const":
        return set()
    return set().union(*(letters(g) for g in f[1:]))


def depth(f: Formula) -> int:
    if f[0] in ("atom", "const"):
        return 0
    inner = max(depth(g) for g in f[1:])
    return inner + (1 if f[0] in ("box", "dia") else 0)


def truth(f: Formula, worlds: int, succ: list[list[int]], val: list[set[str]]) -> list[bool]:
    """f's truth value at every world of a model (Kripke's definition, nothing more)."""
    tag = f[0]
    if tag == "atom":
        return [f[1] in val[w] for w in range(worlds)]
    if tag == "const":
        return [f[1]] * worlds
    if tag in ("box", "dia"):
        inner = truth(f[1], worlds, succ, val)
        if tag == "box":
            return [all(inner[v] for v in succ[w]) for w in range(worlds)]
        return [any(inner[v] for v in succ[w]) for w in range(worlds)]
    if tag == "not":
        return [not x for x in truth(f[1], worlds, succ, val)]
    xs, ys = truth(f[1], worlds, succ, val), truth(f[2], worlds, succ, val)
    op = {
        "and": lambda x, y: x and y,
        "or": lambda x, y: x or y,
        "imp": lambda x, y: (not x) or y,
        "iff": lambda x, y: x == y,
    }[tag]
    return [op(x, y) for x, y in zip(xs, ys, strict=True)]


def in_class(pairs: set[tuple[int, int]], worlds: int, frames: str) -> bool:
    if frames == "K":
        return True
    if any((w, w) not in pairs for w in range(worlds)):
        return False
    if frames == "KT":
        return True
    if frames == "S5" and any((v, u) not in pairs for u, v in pairs):
        return False
    return all((u, x) in pairs for u, v in pairs for v2, x in pairs if v == v2)


@cache
def relations(worlds: int, frames: str) -> list[list[list[int]]]:
    """Successor lists of every relation of the class on the worlds 0..n-1 in which every
    world is reachable from world 0 (module docstring), one per way of numbering the
    worlds other than 0 (renumbering them changes nothing at world 0)."""
    cells = [(u, v) for u in range(worlds) for v in range(worlds)]
    renumberings = [(0, *p) for p in itertools.permutations(range(1, worlds))]
    out = []
    for bits in itertools.product((False, True), repeat=len(cells)):
        pairs = {c for c, b in zip(cells, bits, strict=True) if b}
        if not in_class(pairs, worlds, frames):
            continue
        if any(sorted((p[u], p[v]) for u, v in pairs) < sorted(pairs) for p in renumberings):
            continue
        seen, todo = {0}, [0]
        while todo:
            u = todo.pop()
            for a, v in pairs:
                if a == u and v not in seen:
                    seen.add(v)
                    todo.append(v)
        if len(seen) == worlds:
            out.append([sorted(v for a, v in pairs if a == u) for u in range(worlds)])
    return out


def truth_bits(f: Formula, succ: list[list[int]], atom: dict[tuple[int, str], int], full: int):
    """f at every world, each as a bit set over all valuations of all worlds at once."""
    tag, worlds = f[0], len(succ)
    if tag == "atom":
        return [atom[w, f[1]] for w in range(worlds)]
    if tag == "const":
        return [full if f[1] else 0] * worlds
    if tag in ("box", "dia"):
        inner = truth_bits(f[1], succ, atom, full)
        out = []
        for w in range(worlds):
            acc = full if tag == "box" else 0
            for v in succ[w]:
                acc = acc & inner[v] if tag == "box" else acc | inner[v]
            out.append(acc)
        return out
    if tag == "not":
        return [full ^ x for x in truth_bits(f[1], succ, atom, full)]
    xs, ys = truth_bits(f[1], succ, atom, full), truth_bits(f[2], succ, atom, full)
    op = {
        "and": lambda x, y: x & y,
        "or": lambda x, y: x | y,
        "imp": lambda x, y: (full ^ x) | y,
        "iff": lambda x, y: full ^ (x ^ y),
    }[tag]
    return [op(x, y) for x, y in zip(xs, ys, strict=True)]


#: Valuations of all worlds enumerated at once: 2^(worlds * atoms) bits, kept <= 2^12.
MAX_VARIABLES = 12


def small_model_exists(f: Formula, frames: str, max_worlds: int = 3) -> bool:
    names = sorted(letters(f))
    for worlds in range(1, max_worlds + 1):
        n_vars = worlds * max(len(names), 1)
        if n_vars > MAX_VARIABLES:
            break
        total = 1 << n_vars
        full = (1 << total) - 1
        atom = {}
        for w in range(worlds):
            for i, name in enumerate(names):
                j = w * len(names) + i  # variable j is bit j of the valuation's number
                period = 1 << (j + 1)
                block = ((1 << (1 << j)) - 1) << (1 << j)  # 2^j zeros, then 2^j ones
                atom[w, name] = block * (full // ((1 << period) - 1))
        for succ in relations(worlds, frames):
            if truth_bits(f, succ, atom, full)[0]:
                return True
    return False


def check_answer(f: Formula, frames: str, model: logic.KripkeModel | None) -> None:
    """The soundness checks of the module docstring for one answer of the procedure."""
    if model is None:
        assert not small_model_exists(f, frames), (frames, render(f))
        return
    worlds = len(model.valuation)
    pairs = set(model.relation)
    assert all(0 <= u < worlds and 0 <= v < worlds for u, v in pairs)
    assert in_class(pairs, worlds, frames), (frames, render(f), str(model))
    succ = [sorted(v for u, v in pairs if u == w) for w in range(worlds)]
    val = [set(model.valuation[w]) for w in range(worlds)]
    assert truth(f, worlds, succ, val)[0], (frames, render(f), str(model))


def modal_literal(rng: random.Random, md: int, names: str) -> Formula:
    r = rng.random()
    if md > 0 and r < 0.5:
        return (rng.choice(["box", "dia"]), clause(rng, md - 1, names))
    if r < 0.55:
        return ("iff", ("atom", rng.choice(names)), ("atom", rng.choice(names)))
    if r < 0.57:
        return ("const", rng.random() < 0.5)
    a = ("atom", rng.choice(names))
    return ("not", a) if rng.random() < 0.5 else a


def clause(rng: random.Random, md: int, names: str) -> Formula:
    """One to three modal literals (atoms, their negations, box or dia of a clause) joined
    by | (or as ~x -> y)."""
    parts = [modal_literal(rng, md, names) for _ in range(rng.choice([1, 1, 2, 2, 3]))]
    f = parts[0]
    for p in parts[1:]:
        f = ("imp", ("not", f), p) if rng.random() < 0.3 else ("or", f, p)
    return f


def formulas(seed: int, count: int, max_depth: int, max_letters: int = 6) -> Iterator[Formula]:
    """Seeded conjunctions of 6 to 14 clauses, modal depth 1 to ``max_depth``, over 1 to
    ``max_letters`` letters: about a third of them unsatisfiable, so both answers are tested.
    """
    rng = random.Random(seed)
    for _ in range(count):
        names = "abcdef"[: rng.choice([1, 2, 2, 3, 3, 4, 5, 6][: max_letters + 2])]
        md = rng.randint(1, max_depth)
        f = clause(rng, md, names)
        for _ in range(rng.randint(6, 14) - 1):
            f = ("and", f, clause(rng, md, names))
        yield f


# --------------------------------------------------------------------------- the oracle, checked


def test_the_oracle_on_hand_derived_cases() -> None:
    p = ("atom", "p")
    # box p & ~p: a world without p that sees only p-worlds; K has it, reflexive ones not.
    t_fails = ("and", ("box", p), ("not", p))
    assert small_model_exists(t_fails, "K") and not small_model_exists(t_fails, "KT")
    # box p & dia dia ~p: needs a chain of two steps, i.e. no transitivity.
    four_fails = ("and", ("box", p), ("dia", ("dia", ("not", p))))
    assert small_model_exists(four_fails, "KT") and not small_model_exists(four_fails, "S4")
    # p & dia box ~p: needs an edge with no way back, i.e. no symmetry.
    b_fails = ("and", p, ("dia", ("box", ("not", p))))
    assert small_model_exists(b_fails, "S4") and not small_model_exists(b_fails, "S5")
    # Counting relations with world 1 reachable from 0, i.e. holding 0->1: in K the
    # other three pairs are free (8); in S4 the loops are forced and 1->0 is free (2);
    # in S5 1->0 is forced too (1). One world: with or without its loop. Three worlds in
    # S4, up to swapping 1 and 2: 0 below two incomparable worlds, a chain 0 < 1 < 2,
    # the cluster {0, 1} below 2, 0 below the cluster {1, 2}, one cluster of all (5);
    # in S5 only the one cluster (2 must be reachable from 0).
    assert len(relations(2, "K")) == 8 and len(relations(1, "K")) == 2
    assert len(relations(2, "S4")) == 2 and len(relations(2, "S5")) == 1
    assert len(relations(3, "S4")) == 5 and len(relations(3, "S5")) == 1


# --------------------------------------------------------------------------- random formulas


@pytest.mark.parametrize("frames", FRAMES)
def test_random_formulas_agree_with_brute_force(frames: str) -> None:
    answers = {True: 0, False: 0}
    seen = set()
    for f in formulas(seed=21 + FRAMES.index(frames), count=120, max_depth=3):
        model = logic.find_model(render(f), frames)
        check_answer(f, frames, model)
        answers[model is not None] += 1
        seen.add((depth(f), len(letters(f))))
    # Not vacuous: both answers often, every depth up to 3, up to six letters.
    assert min(answers.values()) >= 30, answers
    assert {d for d, _ in seen} == {1, 2, 3} and max(n for _, n in seen) == 6


def test_satisfiable_in_a_narrower_class_means_in_every_wider_one() -> None:
    for f in formulas(seed=3, count=100, max_depth=3, max_letters=4):
        sat = [logic.satisfiable(render(f), frames) for frames in FRAMES]
        # K, KT, S4, S5: once unsatisfiable, unsatisfiable for every narrower class.
        assert sat == sorted(sat, reverse=True), (render(f), sat)


# --------------------------------------------------------------------------- schemata


@pytest.mark.parametrize(
    ("name", "schema", "valid_in"),
    [
        # Textbook correspondences (e.g. Blackburn, de Rijke & Venema, ch. 3–4).
        ("K", "box(p -> q) -> (box p -> box q)", {"K", "KT", "S4", "S5"}),
        ("T", "box p -> p", {"KT", "S4", "S5"}),
        ("D", "box p -> dia p", {"KT", "S4", "S5"}),
        ("4", "box p -> box box p", {"S4", "S5"}),
        ("4 as an equivalence", "box box p <-> box p", {"S4", "S5"}),
        ("5", "dia p -> box dia p", {"S5"}),
        ("B", "p -> box dia p", {"S5"}),
        ("B dual", "dia box p -> p", {"S5"}),
        (".2", "dia box p -> box dia p", {"S5"}),
        ("Löb", "box(box p -> p) -> box p", set()),  # fails on any reflexive world
        ("dia over |", "dia(p | q) <-> dia p | dia q", {"K", "KT", "S4", "S5"}),
        ("dia over &", "dia p & dia q -> dia(p & q)", set()),
    ],
)
def test_schemata_per_frame_class(name: str, schema: str, valid_in: set[str]) -> None:
    for frames in FRAMES:
        assert logic.valid(schema, frames) is (frames in valid_in), (name, frames)
        counter = logic.find_model(logic.Not(logic.parse(schema)), frames)
        assert (counter is None) is (frames in valid_in)
    # A valid schema stays valid for any formula put for p (and q): uniform substitution.
    for frames in valid_in:
        instance = schema.replace("p", "(a & dia ~b)").replace("q", "box(b | c)")
        assert logic.valid(instance, frames), (name, frames, instance)


def test_schema_counter_models_are_models_of_the_class() -> None:
    p = ("atom", "p")
    cases = {
        "K": ("not", ("imp", ("box", p), p)),  # ~T
        "KT": ("not", ("imp", ("box", p), ("box", ("box", p)))),  # ~4
        "S4": ("not", ("imp", ("dia", p), ("box", ("dia", p)))),  # ~5
    }
    for frames, f in cases.items():
        model = logic.find_model(render(f), frames)
        assert model is not None
        check_answer(f, frames, model)


# --------------------------------------------------------------------------- depth one


@pytest.mark.parametrize("frames", FRAMES)
def test_depth_one_bit_sets_agree_with_the_tableau(frames: str) -> None:
    # The procedure before issue 21 (bit sets, exact for depth one) against the tableau.
    agree = {True: 0, False: 0}
    for f in formulas(seed=100 + FRAMES.index(frames), count=150, max_depth=1, max_letters=3):
        text = render(f)
        old = logic.depth_one_model(text, frames)
        new = logic.tableau_model(text, frames)
        assert (old is None) == (new is None), (frames, text)
        check_answer(f, frames, old)
        agree[new is not None] += 1
    assert min(agree.values()) >= 40, agree


def test_depth_one_agreement_on_the_readings() -> None:
    # Every formula the table decides, both ways, over every class.
    for rel in logic.RELATIONS:
        for r in logic.READINGS.values():
            m = logic.parse_relation(rel)
            q = logic.translate(m.conclusion, r)
            fs = [q, logic.Not(q)]
            if m.premises is not None:
                p = logic.translate(m.premises, r)
                fs += [p, logic.And(p, q), logic.And(p, logic.Not(q))]
            for f in fs:
                for frames in FRAMES:
                    old = logic.depth_one_model(f, frames)
                    assert (old is None) == (logic.tableau_model(f, frames) is None), (rel, r.name)


def test_built_in_table_is_the_same_over_every_frame_class() -> None:
    # MC has no box or dia. Every SC and EI formula is a Boolean combination of box X and
    # dia X with X propositional and no atom outside them, so its truth at a world
    # depends only on the set S of valuations the world sees; K allows any S, the other
    # classes any non-empty S (the world sees itself). Every box/dia there is guarded by a
    # sentence atom (box(x -> ..), dia(x & ..), dia x, box ~x), so S = {all atoms false}
    # gives the same truth values as S empty: the statuses cannot differ.
    k = [row["status"] for row in logic.table()]
    for frames in ("KT", "S4", "S5"):
        rows = logic.table(logic.merge_readings(frames=frames))
        assert [row["status"] for row in rows] == k
        assert {row["frames"] for row in rows} == {frames}


# --------------------------------------------------------------------------- limits


def test_more_than_four_letters_are_decided() -> None:
    # Five sentences: E chains under every reading, by transitivity of -> (MC), boxes
    # distributing over -> (SC), and EI's dia a carried by the first premise.
    rel = "Eab & Ebc & Ecd & Ede -> Eae"
    for frames in FRAMES:
        for r in logic.merge_readings(frames=frames).values():
            assert logic.classify(rel, r) == "valid", (r.name, frames)
    # Breaking the chain makes it fail under every reading: a, b, c true, d, e false.
    assert {logic.classify("Eab & Ebc & Ede -> Eae", r) for r in logic.READINGS.values()} == {
        "contingent"
    }
    # Eight sentence atoms in one formula.
    eight = " & ".join(f"box({x} -> {y})" for x, y in zip("abcdefg", "bcdefgh", strict=True))
    assert logic.valid(f"{eight} -> box(a -> h)") and not logic.valid(f"{eight} -> box(h -> a)")


def test_deep_nesting_is_decided_without_recursion() -> None:
    # Deeper than Python's recursion limit (1,000). In K a chain of 1,200 steps; in S5
    # dia dia X is dia X, so one world does.
    n = 1200
    chain = "dia " * n + "a"
    assert logic.find_model(chain) is not None  # checked by the library's own holds
    assert logic.find_model(chain, "S5") is not None
    for frames in FRAMES:
        assert not logic.satisfiable(f"({chain}) & {'box ' * n}~a", frames)


def _pigeonhole(holes: int) -> str:
    # holes + 1 pigeons, each in some hole, no two in one: unsatisfiable, and slow for
    # any search that splits on clauses.
    pigeons = range(holes + 1)
    clauses = [" | ".join(f"p{i}_{j}" for j in range(holes)) for i in pigeons]
    clauses += [
        f"~(p{i}_{j} & p{k}_{j})" for j in range(holes) for i in pigeons for k in pigeons if i < k
    ]
    return " & ".join(f"({c})" for c in clauses)


def test_a_hard_formula_meets_the_time_limit() -> None:
    with pytest.raises(logic.SolverLimit) as info:
        logic.satisfiable(_pigeonhole(7), "K", timeout_s=0.3)
    message = str(info.value)
    assert "\n" not in message and "limit of 0.3 s" in message and "over K frames" in message


def test_a_model_too_large_to_check_is_a_one_line_error() -> None:
    # S4 makes the chain's relation transitive: 1,101 worlds have ~600,000 pairs.
    with pytest.raises(logic.SolverLimit, match="too large to check") as info:
        logic.satisfiable("dia " * 1100 + "a", "S4")
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- command line


def _cli(argv: list[str]) -> int:
    from nlieval.cli import main

    return main(argv)


def test_cli_check_five_sentences(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["logic", "check", "Eab & Ebc & Ecd & Ede -> Eae"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Eab & Ebc & Ecd & Ede -> Eae"
    assert [line.split()[:2] for line in lines[1:4]] == [
        ["MC", "valid"],
        ["SC", "valid"],
        ["EI", "valid"],
    ]
    assert lines[-1] == "decided over K frames (any accessibility relation): MC, SC, EI"
    assert _cli(["logic", "check", "Eab & Ebc & Ede -> Eae", "--frames", "S4"]) == 0
    out = capsys.readouterr().out
    assert out.count("counter-model") == 3
    assert out.rstrip().endswith("decided over S4 frames (reflexive and transitive): MC, SC, EI")


def test_cli_check_timeout_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(logic_tableau, "SOLVER_TIMEOUT_S", 0.0)
    chain = " & ".join(f"E{x}{y}" for x, y in zip("abcdefghijklm", "bcdefghijklmn", strict=True))
    assert _cli(["logic", "check", f"{chain} -> Ean"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not decided within the limit of 0 s" in err


AXIOMS = (
    "name: AX\ndescription: axioms 4, 5, B as labels\n"
    "E: box a -> box box b\nC: dia a -> box dia b\nN: a -> box dia b\n"
)


def test_cli_frames_for_a_deep_user_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Eaa is axiom 4, Caa axiom 5, Naa axiom B (depth 2: refused before issue 21).
    # Each is satisfiable (true wherever a holds everywhere), so not valid = contingent.
    want = {
        "K": ("contingent", "contingent", "contingent"),
        "KT": ("contingent", "contingent", "contingent"),
        "S4": ("valid", "contingent", "contingent"),
        "S5": ("valid", "valid", "valid"),
    }
    path = tmp_path / "ax.yaml"
    path.write_text(AXIOMS, encoding="utf-8")
    for frames, statuses in want.items():
        argv = ["logic", "table", "--reading", str(path), "--frames", frames, "--format", "json"]
        assert _cli([*argv, "--no-formulas"]) == 0
        rows = json.loads(capsys.readouterr().out)
        got = {r["relation"]: r["status"] for r in rows if r["reading"] == "AX"}
        assert (got["Eaa"], got["Caa"], got["Naa"]) == statuses, frames
        assert {r["frames"] for r in rows} == {frames}
    # The class in the file itself; the built-in readings stay in K; the text says both.
    path.write_text(AXIOMS + "frames: S5\n", encoding="utf-8")
    assert _cli(["logic", "table", "--reading", str(path), "--no-formulas"]) == 0
    out = capsys.readouterr().out
    assert (
        "decided over K frames (any accessibility relation): MC, SC, EI; "
        "over S5 frames (reflexive, symmetric and transitive): AX"
    ) in out
    row = next(line for line in out.splitlines() if line.startswith("Naa "))
    assert row.split()[-1] == "valid"
    # A depth-2 contingent cell has no short form searched: the formula itself is shown.
    rows = logic.table(logic.merge_readings([path], frames="K"), ["Eaa"], formulas=True)
    ax = next(r for r in rows if r["reading"] == "AX")
    assert ax["status"] == "contingent" and ax["formula"] == "box a -> box box a"


def test_cli_conclude_and_bad_frames(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["logic", "conclude", "Cab", "ba", "--frames", "KT", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["frames"] for r in rows] == ["KT"] * 3
    with pytest.raises(SystemExit):
        _cli(["logic", "check", "Eaa", "--frames", "S6"])
    assert "invalid choice: 'S6'" in capsys.readouterr().err
    with pytest.raises(logic.LogicError, match="unknown frame class 'S6'"):
        logic.satisfiable("a", "S6")
