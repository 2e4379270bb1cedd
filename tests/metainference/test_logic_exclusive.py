"""The exclusive reading of a model's answers (METHODS.md section 5, issue 13): answering L
for a pair asserts L and denies the other two labels, so L is allowed for a target pair
when ``inputs & L & ~L' & ~L''`` is satisfiable in K.

The expected allowed sets come from a brute-force enumeration of Kripke models written
here, with the readings as Python predicates transcribed from the table of METHODS.md,
never from the parser, the translation or the bit-set procedure under test.

Why the enumeration is exhaustive: every formula involved has modal depth one over the
sentence atoms a, b, c, so its truth at a world w depends only on w's valuation and on the
SET of valuations found among w's successors (box X: all of them satisfy X; dia X: one
does). Any Kripke model's world w is thus matched by the model made of a root with w's
valuation and one successor per valuation w sees; enumerating every root valuation (8)
and every set of successor valuations (2^8 = 256, the empty set included) covers what any
model can make these formulas say.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from nlieval.metainference import logic
from nlieval.metainference.inferred import build
from nlieval.types import Item, Label

LABELS = ("E", "C", "N")
Valuation = dict[str, bool]
Model = tuple[Valuation, tuple[Valuation, ...]]  # root valuation, successors' valuations
Relation = Callable[[Model, str, str], bool]  # (model, x, y) -> L(x, y) at the root

VALUATIONS: list[Valuation] = [
    dict(zip("abc", bits, strict=True)) for bits in itertools.product((False, True), repeat=3)
]
MODELS: list[Model] = [
    (root, tuple(v for v, keep in zip(VALUATIONS, chosen, strict=True) if keep))
    for root in VALUATIONS
    for chosen in itertools.product((False, True), repeat=len(VALUATIONS))
]


def _box(m: Model, test: Callable[[Valuation], bool]) -> bool:
    return all(test(w) for w in m[1])


def _dia(m: Model, test: Callable[[Valuation], bool]) -> bool:
    return any(test(w) for w in m[1])


def _mc_e(m: Model, x: str, y: str) -> bool:
    return not m[0][x] or m[0][y]


def _mc_c(m: Model, x: str, y: str) -> bool:
    return not m[0][x] or not m[0][y]


def _sc_e(m: Model, x: str, y: str) -> bool:
    return _box(m, lambda w: not w[x] or w[y])


def _sc_c(m: Model, x: str, y: str) -> bool:
    return _box(m, lambda w: not w[x] or not w[y])


def _both(m: Model, x: str, y: str) -> bool:  # dia(x & y) & dia(x & ~y)
    return _dia(m, lambda w: w[x] and w[y]) and _dia(m, lambda w: w[x] and not w[y])


def _ei_n(m: Model, x: str, y: str) -> bool:
    empty = _box(m, lambda w: not w[x])
    return (empty or _dia(m, lambda w: w[x] and w[y])) and (
        empty or _dia(m, lambda w: w[x] and not w[y])
    )


# The readings of METHODS.md section 5, transcribed by hand.
READINGS: dict[str, dict[str, Relation]] = {
    "MC": {
        "E": _mc_e,
        "C": _mc_c,
        "N": lambda m, x, y: not _mc_e(m, x, y) and not _mc_c(m, x, y),
    },
    "SC": {"E": _sc_e, "C": _sc_c, "N": _both},
    "EI": {
        "E": lambda m, x, y: _dia(m, lambda w: w[x]) and _sc_e(m, x, y),
        "C": lambda m, x, y: _dia(m, lambda w: w[x]) and _sc_c(m, x, y),
        "N": _ei_n,
    },
}

# A reading of the user's own, in YAML and as predicates: strict readings that demand a
# witness world for what they claim, and a neutral premise that is true at the root.
USER_YAML = """\
name: SW
description: strict with witnesses
E: box(a -> b) & dia(a & b)
C: box(a -> not b) & dia(a & ~b)
N: a & dia(a & b) & dia(a & ~b)
"""
USER: dict[str, Relation] = {
    "E": lambda m, x, y: _sc_e(m, x, y) and _dia(m, lambda w: w[x] and w[y]),
    "C": lambda m, x, y: _sc_c(m, x, y) and _dia(m, lambda w: w[x] and not w[y]),
    "N": lambda m, x, y: m[0][x] and _both(m, x, y),
}

# Every (input, target) that `infer build` makes: reversals, shared premises (b, c) and
# chains (a, c), (c, a) through a generated item (b, c), for every pair of labels.
PAIRS = [f"{x}{y}" for x in LABELS for y in LABELS]
PATTERNS: list[tuple[str, str]] = (
    [(f"{x}ab", "ba") for x in LABELS]
    + [(f"{x}ab & {y}ac", "bc") for x, y in PAIRS]
    + [(f"{x}ab & {y}bc", "ac") for x, y in PAIRS]
    + [(f"{x}ab & {y}bc", "ca") for x, y in PAIRS]
)

# The 15 patterns of the meta-inference table (logic.RELATIONS): a subset of the above.
PUBLISHED = {
    (str(m.premises), str(m.conclusion).lstrip("~")[1:])
    for m in map(logic.parse_relation, logic.RELATIONS)
    if m.premises is not None
}


def _atoms(inputs: str) -> list[tuple[str, str, str]]:
    return [(a[0], a[1], a[2]) for a in (p.strip() for p in inputs.split("&"))]


def enumerate_allowed(
    relations: dict[str, Relation], inputs: str, target: str
) -> tuple[tuple[str, ...], bool]:
    """(labels answerable exclusively, whether the inputs hold in some model)."""
    needed = _atoms(inputs)
    x, y = target
    allowed: set[str] = set()
    satisfiable = False
    for m in MODELS:
        if not all(relations[lab](m, p, q) for lab, p, q in needed):
            continue
        satisfiable = True
        true = [lab for lab in LABELS if relations[lab](m, x, y)]
        if len(true) == 1:
            allowed.add(true[0])
    return tuple(lab for lab in LABELS if lab in allowed), satisfiable


def expected_inferred(allowed: Sequence[str], satisfiable: bool) -> str:
    if len(allowed) == 3:
        return "-"
    if len(allowed) == 2:
        return "~" + next(lab for lab in LABELS if lab not in allowed)
    if len(allowed) == 1:
        return allowed[0]
    return "none" if satisfiable else "vacuous"


def test_the_patterns_are_those_infer_build_makes() -> None:
    e, n, c = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
    # One premise with two hypotheses of each label (shared premises with equal labels),
    # and a generated item of each label for every hypothesis (chains).
    items = [
        Item(f"s{lab.value}{i}", "p", f"h-{lab.value}-{i}", lab)
        for lab in (e, n, c)
        for i in (1, 2)
    ]
    generated = [
        Item(f"g-{it.id}-{lab.value}", it.hypothesis, f"g-{it.id}-{lab.value}", lab)
        for it in items
        for lab in (e, n, c)
    ]
    made = {(it.meta["input"], it.meta["target"]) for it in build(items, generated)}
    assert made == set(PATTERNS)
    assert len(PATTERNS) == 30 and set(PATTERNS) >= PUBLISHED and len(PUBLISHED) == 15


def test_the_enumeration_on_hand_derived_cases() -> None:
    # Checks of the oracle itself, derived on paper.
    # SC, C(a,b) -> ?(b,a): E(b,a) exclusively needs dia(b & a) (not C(b,a)), against
    # box(a -> ~b); N(b,a) needs it too. Only C.
    assert enumerate_allowed(READINGS["SC"], "Cab", "ba") == (("C",), True)
    # MC: a -> b and b -> c give a -> c; C without E at (a, c) is a & ~c. Only E.
    assert enumerate_allowed(READINGS["MC"], "Eab & Ebc", "ac") == (("E",), True)
    # MC: N is a & ~b & a & b, never true: vacuous.
    assert enumerate_allowed(READINGS["MC"], "Nab", "ba") == ((), False)
    # EI: the a-witness has b and ~c, so E(b, c) fails; C and N can be answered.
    assert enumerate_allowed(READINGS["EI"], "Eab & Cac", "bc") == (("C", "N"), True)
    # SC, E(a,b) alone: anything may be said of (b, a).
    assert enumerate_allowed(READINGS["SC"], "Eab", "ba") == (("E", "C", "N"), True)


@pytest.mark.parametrize("reading", ["MC", "SC", "EI"])
def test_allowed_sets_of_every_pattern(reading: str) -> None:
    for inputs, target in PATTERNS:
        allowed, sat = enumerate_allowed(READINGS[reading], inputs, target)
        found = logic.conclude(inputs, target, reading)
        assert found.allowed == allowed, (reading, inputs, target)
        assert found.inferred == expected_inferred(allowed, sat), (reading, inputs, target)
        # The built-in readings always leave some answer when the inputs can hold.
        assert found.inferred != "none"


def test_issue_example_sc_no_longer_allows_e(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(["logic", "conclude", "Cab", "ba", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got == [
        {"reading": "MC", "frames": "K", "inferred": "C", "allowed": ["C"]},
        {"reading": "SC", "frames": "K", "inferred": "C", "allowed": ["C"]},
        {"reading": "EI", "frames": "K", "inferred": "~E", "allowed": ["C", "N"]},
    ]
    assert _cli(["logic", "conclude", "Cab", "ba"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["SC", "C", "allowed:", "C"]


def test_user_reading_from_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sw.yaml"
    path.write_text(USER_YAML, encoding="utf-8")
    reading = logic.load_reading(path)
    inferred = set()
    for inputs, target in PATTERNS:
        allowed, sat = enumerate_allowed(USER, inputs, target)
        want = {
            "reading": "SW",
            "frames": "K",
            "inferred": expected_inferred(allowed, sat),
            "allowed": allowed,
        }
        inferred.add(want["inferred"])
        assert logic.conclude(inputs, target, reading).to_dict() == {
            **want,
            "allowed": list(allowed),
        }, (inputs, target)
    # The reading is not a copy of a built-in one: its verdicts vary over the patterns.
    assert len(inferred) >= 3
    # And through the command, next to the built-in readings.
    assert (
        _cli(["logic", "conclude", "Nab & Nbc", "ca", "--format", "json", "--reading", str(path)])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert [r["reading"] for r in rows] == ["MC", "SC", "EI", "SW"]
    allowed, sat = enumerate_allowed(USER, "Nab & Nbc", "ca")
    assert rows[3]["allowed"] == list(allowed)


# --------------------------------------------------------------------------- long formulas


def _reading_file(tmp_path: Path, e: str) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(f"name: R\nE: '{e}'\nC: a -> ~b\nN: a & ~a\n", encoding="utf-8")
    return path


def test_deeply_nested_and_long_formulas_are_decided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 14: these ended in RecursionError. The parser and every walk over a formula
    # are iterative now; 5,000 parentheses and 500 conjuncts are ordinary formulas.
    nested = "(" * 5000 + "a -> b" + ")" * 5000
    long_and = " & ".join(["(a -> b)", "(a | ~a)"] * 250)
    for text in (nested, long_and):
        r = logic.load_reading(_reading_file(tmp_path, text))
        # E = a -> b, so the reading is MC with N impossible: after E(a,b), E(b,a) holds
        # with a & b, C(b,a) without E(b,a) with b & ~a.
        assert logic.allowed_labels("Eab", "ba", r) == ("E", "C")
        assert logic.parse(str(r.E)) is not None  # printing and re-parsing work too
    deep = logic.parse("~" * 5000 + "a")
    assert logic.modal_depth(deep) == 0 and logic.satisfiable(deep)
    path = _reading_file(tmp_path, nested)
    assert _cli(["logic", "table", "--reading", str(path)]) == 0
    capsys.readouterr()


def test_formulas_over_the_limit_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = " & ".join(["a"] * (logic.MAX_FORMULA_CHARS // 4 + 1))
    with pytest.raises(logic.LogicError, match="the limit is 100,000"):
        logic.parse(text)
    path = _reading_file(tmp_path, text)
    assert _cli(["logic", "conclude", "Eab", "ba", "--reading", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert str(path) in err and "the limit is 100,000" in err


def _cli(argv: list[str]) -> int:
    from nlieval.cli import main

    return main(argv)
