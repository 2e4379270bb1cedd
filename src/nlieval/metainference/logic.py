"""Meta-inferential consistency: NLI labels read as modal formulas, decided in logic K.

An NLI model defines three relations over sentences: E(a,b), C(a,b), N(a,b). A
*reading* gives each a formula over two propositional atoms ``a`` (the premise) and ``b``
(the hypothesis), in the minimal normal modal logic K (METHODS.md section 5), or over a
narrower frame class a user chooses (:attr:`Reading.frames`: KT, reflexive; S4,
reflexive and transitive; S5, an equivalence relation). The three
readings of METHODS.md are data (:data:`READINGS`, parsed from their formula strings when
this module is imported); a user adds one in a YAML file (:func:`load_reading`).

A *meta-inference* (a *relation*) such as ``Eab & Ebc -> Eac`` is written over *label
atoms*: a label letter (E, C or N) followed by two sentence variables (one lower-case
letter each). Under a reading each label atom ``Lxy`` becomes the reading's formula for L
with ``a := x`` and ``b := y``, and the sentence variables become propositional atoms; so
``P -> Q`` becomes a modal formula. Its status (:func:`classify`), over the reading's
frame class:

- ``vacuous``: the premises P are unsatisfiable, so the inference holds for no reason;
- ``valid``: P -> Q is valid (P & ~Q is unsatisfiable);
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
(:func:`satisfiable`, a tableau: :func:`tableau_model`), sound and complete over K, KT,
S4 and S5 for formulas of any modal depth and any number of sentence atoms, each
decision bounded in time (:class:`SolverLimit`).

Syntax (:func:`parse`), loosest binding first: ``<->``; ``->`` (right-associative);
``|`` or ``or``; ``&`` or ``and``; then the prefix operators ``~``/``!``/``not``,
``box``/``[]`` and ``dia``/``<>``, which bind tightest (``box a & b`` is ``(box a) & b``).
Atoms are identifiers; ``true`` and ``false`` are the constants.

This module holds the meta-inferences (:func:`classify`, :func:`table`) and the
conclusions (:func:`conclude`); its parts live beside it and their public names are
importable from here too: :mod:`~nlieval.metainference.logic_formulas` (the formula
types, the walks over them, the parser and the errors),
:mod:`~nlieval.metainference.logic_models` (Kripke models, truth, frame classes),
:mod:`~nlieval.metainference.logic_k` (the decision procedure and the readings),
:mod:`~nlieval.metainference.logic_tableau` (the tableau behind it) and
:mod:`~nlieval.metainference.logic_short` (the short equivalent of a contingent cell).

>>> classify("Cab -> Cba", "SC")
'valid'
>>> classify("Naa", "MC")
'contradictory'
>>> classify("Eab & Ebc & Ecd & Ede -> Eae", READINGS["SC"].with_frames("S4"))
'valid'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..ground import Block, Table
from .logic_formulas import (
    MAX_FORMULA_CHARS,
    MAX_MODAL_DEPTH,
    And,
    Atom,
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
    SolverLimit,
    atoms,
    children,
    conj,
    fold,
    modal_depth,
    parse,
    rebuild,
    show,
    subformulas,
    substitute,
)
from .logic_k import (
    BUILTIN_READINGS,
    LABELS,
    MAX_ATOMS,
    READINGS,
    Reading,
    depth_one_model,
    find_model,
    load_reading,
    merge_readings,
    satisfiable,
    truth_set,
    valid,
)
from .logic_models import (
    FRAME_CLASSES,
    FRAMES,
    Frames,
    KripkeModel,
    check_frames,
    frame_class,
    holds,
    in_frame_class,
    true_worlds,
)
from .logic_short import MAX_SIZE, short_formula
from .logic_tableau import SOLVER_TIMEOUT_S, tableau_model

__all__ = [
    "BUILTIN_READINGS",
    "FRAME_CLASSES",
    "FRAMES",
    "LABELS",
    "MAX_ATOMS",
    "MAX_FORMULA_CHARS",
    "MAX_MODAL_DEPTH",
    "MAX_SIZE",
    "READINGS",
    "RELATIONS",
    "SOLVER_TIMEOUT_S",
    "And",
    "Atom",
    "Box",
    "Check",
    "Conclusion",
    "Const",
    "Dia",
    "Formula",
    "FormulaError",
    "Frames",
    "Iff",
    "Imp",
    "KripkeModel",
    "LogicError",
    "MetaInference",
    "ModalDepthError",
    "Not",
    "Or",
    "Reading",
    "SolverLimit",
    "Status",
    "allowed_labels",
    "atoms",
    "check",
    "check_frames",
    "children",
    "classify",
    "conclude",
    "conclusions",
    "conj",
    "counter_model",
    "depth_one_model",
    "find_model",
    "fold",
    "format_check",
    "format_conclusions",
    "format_table",
    "table_document",
    "aligned",
    "frame_class",
    "frames_note",
    "holds",
    "in_frame_class",
    "inferred_label",
    "load_reading",
    "merge_readings",
    "modal_depth",
    "parse",
    "parse_label_formula",
    "parse_relation",
    "reading_list",
    "readings_summary",
    "relation_formula",
    "satisfiable",
    "short_equivalent",
    "short_formula",
    "show",
    "subformulas",
    "substitute",
    "table",
    "tableau_model",
    "translate",
    "true_worlds",
    "truth_set",
    "valid",
]

Status = Literal["valid", "contradictory", "vacuous", "contingent"]


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


#: The earlier papers that state a relation of :data:`RELATIONS`, by mark: the "Paper"
#: column of the meta-inference study's Table 2 (paper 004), as printed there.
CITED: dict[str, str] = {
    "★": "Minervini & Riedel (2018)",
    "†": "Li et al. (2019)",
    "‡": "Jang et al. (2022)",
}

#: The marks of :data:`CITED` of each relation that one of those papers states (004
#: Table 2); the other relations are the study's own.
CITATIONS: dict[str, tuple[str, ...]] = {
    "Eaa": ("★",),
    "Cab -> Cba": ("★", "†"),
    "Eab -> ~Cba": ("★",),
    "Nab -> ~Cba": ("★",),
    "Eab & Ebc -> Eac": ("★", "†"),
    "Eab & Cbc -> Cac": ("†",),
    "Nab & Ebc -> ~Cac": ("†",),
    "Nab & Cbc -> ~Eac": ("†",),
    "Eab & Cac -> Cbc": ("‡",),
    "Nab & Cac -> ~Ebc": ("‡",),
}


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
            return rebuild(g, args)
        m = _LABEL_ATOM.match(g.name)
        if m is None:
            raise LogicError(f"{g.name!r} is not a label atom (e.g. Eab)")
        label, x, y = m.groups()
        return substitute(r.formula(label), {"a": Atom(x), "b": Atom(y)})

    return fold(f, visit)


def classify(relation: str | MetaInference, reading: Reading | str) -> Status:
    """The status of a meta-inference under a reading, over the reading's frame class
    (see the module docstring).

    >>> classify("Cab -> ~Eba", "EI"), classify("Eab & Ebc -> ~Cca", "SC")
    ('valid', 'contingent')
    >>> mixed = Reading.parse("X", E="box(a -> b)", C="a & ~b", N="false")
    >>> classify("Eab -> ~Cab", mixed), classify("Eab -> ~Cab", mixed.with_frames("KT"))
    ('contingent', 'valid')
    """
    m = parse_relation(relation) if isinstance(relation, str) else relation
    r = _reading(reading)
    fr = r.frames
    q = translate(m.conclusion, r)
    if m.premises is None:
        if valid(q, fr):
            return "valid"
        return "contingent" if satisfiable(q, fr) else "contradictory"
    p = translate(m.premises, r)
    if not satisfiable(p, fr):
        return "vacuous"
    if not satisfiable(And(p, Not(q)), fr):
        return "valid"
    if not satisfiable(And(p, q), fr):
        return "contradictory"
    return "contingent"


def counter_model(relation: str | MetaInference, reading: Reading | str) -> KripkeModel | None:
    """A model of the reading's frame class where the premises hold and the conclusion
    fails (None when valid).

    >>> print(counter_model("Eab -> ~Cba", "SC"))
    w0 = {}; w0 sees []
    >>> print(counter_model("Eab -> ~Cba", READINGS["SC"].with_frames("KT")))  # no a anywhere
    w0 = {} sees [w0]
    """
    m = parse_relation(relation) if isinstance(relation, str) else relation
    r = _reading(reading)
    p = Const(True) if m.premises is None else translate(m.premises, r)
    return find_model(And(p, Not(translate(m.conclusion, r))), r.frames)


def relation_formula(relation: str | MetaInference, reading: Reading | str) -> Formula:
    """The meta-inference as one formula under a reading: premises -> conclusion.

    >>> show(relation_formula("Caa", "MC"))
    'a -> ~a'
    """
    m = parse_relation(relation) if isinstance(relation, str) else relation
    q = translate(m.conclusion, reading)
    return q if m.premises is None else Imp(translate(m.premises, reading), q)


def short_equivalent(
    relation: str | MetaInference, reading: Reading | str, max_size: int = MAX_SIZE
) -> Formula:
    """A shortest formula over the sentence atoms that is equivalent to the
    meta-inference under the reading, over the reading's frame class
    (:func:`~nlieval.metainference.logic_short.short_formula`: found by search and checked
    by the decision procedure), or, when none has at most ``max_size`` symbols (or the
    translation is beyond the search: modal depth above one, more than
    :data:`MAX_ATOMS` atoms), the translated formula itself.

    >>> show(short_equivalent("Eaa", "EI")), show(short_equivalent("Caa", "SC"))
    ('dia a', 'box ~a')
    """
    r = _reading(reading)
    full = relation_formula(relation, r)
    return short_formula(full, max_size, r.frames) or full


def table(
    readings: Mapping[str, Reading] | Sequence[Reading] | None = None,
    relations: Sequence[str] = RELATIONS,
    formulas: bool = False,
) -> list[dict[str, str]]:
    """Every relation under every reading, decided now: ``relation``, ``reading``,
    ``frames`` (the reading's frame class), ``status``; with ``formulas``, a contingent
    cell's ``formula``: the short equivalent the paper prints (:func:`short_equivalent`).

    >>> table([READINGS["MC"]], ["Naa"])
    [{'relation': 'Naa', 'reading': 'MC', 'frames': 'K', 'status': 'contradictory'}]
    >>> table([READINGS["EI"]], ["Eaa"], formulas=True)[0]["formula"]
    'dia a'
    """
    rs = reading_list(readings)
    rows = []
    for rel in relations:
        for r in rs:
            row = {"relation": rel, "reading": r.name, "frames": r.frames}
            row["status"] = classify(rel, r)
            if formulas and row["status"] == "contingent":
                row["formula"] = show(short_equivalent(rel, r))
            rows.append(row)
    return rows


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


def table_document(rows: Sequence[Mapping[str, str]], citations: bool = False) -> list[Block]:
    """The rows of :func:`table` as a report: a table with one line per relation and a
    column per reading, then the frame class of each reading (:func:`frames_note`).
    ``citations`` adds the column ``paper``: the marks of :data:`CITATIONS` (the papers
    that state the relation), and a line naming each mark's paper.

    A contingent cell with a ``formula`` (``table(..., formulas=True)``) shows it: the
    condition under which the meta-inference holds, as the paper prints it.

    >>> doc = table_document(table([READINGS["SC"]], ["Cab -> Cba"]))
    >>> doc[0].header, doc[0].texts(), doc[2][:24]
    (('relation', 'SC'), [['Cab -> Cba', 'valid']], 'decided over K frames (a')
    """
    names = list(dict.fromkeys(r["reading"] for r in rows))
    rels = list(dict.fromkeys(r["relation"] for r in rows))
    status = {
        (r["relation"], r["reading"]): r["status"]
        + (f": {r['formula']}" if r.get("formula") else "")
        for r in rows
    }
    head = ["relation", *names, *(["paper"] if citations else [])]
    body = [
        [rel, *(status[rel, n] for n in names), *([", ".join(CITATIONS.get(rel, ()))] * citations)]
        for rel in rels
    ]
    doc: list[Block] = [Table.of(head, body)]
    if rows:
        doc += ["", _frames_line({r["reading"]: r["frames"] for r in rows}.items())]
    if citations and rows:
        doc.append("paper: " + "; ".join(f"{mark} {paper}" for mark, paper in CITED.items()))
    return doc


def aligned(doc: Sequence[Block]) -> str:
    """``doc`` as plain text, as ``nlieval logic table`` prints it: each table as
    left-aligned columns two spaces apart under a rule of dashes, each line as it is.

    >>> print(aligned([Table.of(["a", "bb"], [["xyz", "1"]]), "", "end"]))
    a    bb
    ---  --
    xyz  1
    <BLANKLINE>
    end
    """
    out: list[str] = []
    for b in doc:
        if not isinstance(b, Table):
            out.append(b)
            continue
        lines = [list(b.header), *b.texts()]
        widths = [max(len(line[i]) for line in lines) for i in range(len(b.header))]
        lines.insert(1, ["-" * w for w in widths])
        out += [*b.title]
        out += [
            "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
            for line in lines
        ]
        out += [*b.notes]
    return "\n".join(out)


def format_table(rows: Sequence[Mapping[str, str]], citations: bool = False) -> str:
    """:func:`table_document` as :func:`aligned` text (``nlieval logic table``).

    >>> print(format_table(table([READINGS["SC"]], ["Cab -> Cba"])))
    relation    SC
    ----------  -----
    Cab -> Cba  valid
    <BLANKLINE>
    decided over K frames (any accessibility relation): SC
    >>> print(format_table(table([READINGS["EI"]], ["Eaa"], formulas=True)).splitlines()[2])
    Eaa       contingent: dia a
    >>> print(format_table(table([READINGS["MC"]], ["Eaa", "Caa"]), citations=True))
    relation  MC          paper
    --------  ----------  -----
    Eaa       valid       ★
    Caa       contingent
    <BLANKLINE>
    decided over K frames (any accessibility relation): MC
    paper: ★ Minervini & Riedel (2018); † Li et al. (2019); ‡ Jang et al. (2022)
    """
    return aligned(table_document(rows, citations))


def _frames_line(pairs: Iterable[tuple[str, str]]) -> str:
    groups: dict[str, list[str]] = {}
    for name, frames in pairs:
        groups.setdefault(frames, []).append(name)
    return "decided " + "; ".join(
        f"over {fr} frames ({FRAMES[fr]}): {', '.join(names)}" for fr, names in groups.items()
    )


def frames_note(readings: Mapping[str, Reading] | Sequence[Reading] | None = None) -> str:
    """One line naming the frame class each reading is decided over, as every output of
    the ``logic`` and ``infer report`` commands states it.

    >>> frames_note([READINGS["MC"], READINGS["SC"].with_frames("KT")])
    'decided over K frames (any accessibility relation): MC; over KT frames (reflexive): SC'
    """
    return _frames_line((r.name, r.frames) for r in reading_list(readings))


@dataclass(frozen=True)
class Check:
    """One reading's verdict on a meta-inference (:func:`check`): the status, the
    translated premises (None for a bare formula) and conclusion, and where the
    inference can fail (contingent, contradictory) a model of the frame class where the
    premises hold and the conclusion does not.

    >>> c = check("Eab -> Eba", [READINGS["SC"]])[0]
    >>> c.status, str(c.premises), str(c.counter_model)
    ('contingent', 'box(a -> b)', 'w0 = {}; w0 sees [{b}]')
    """

    reading: str
    frames: str
    status: Status
    premises: Formula | None
    conclusion: Formula
    counter_model: KripkeModel | None


def check(
    relation: str | MetaInference,
    readings: Mapping[str, Reading] | Sequence[Reading] | None = None,
) -> list[Check]:
    """The verdict of every reading (None: the built-in ones) on one meta-inference.

    >>> [c.status for c in check("Eab & Ebc & Ecd & Ede -> Eae")]
    ['valid', 'valid', 'valid']
    """
    m = parse_relation(relation) if isinstance(relation, str) else relation
    out = []
    for r in reading_list(readings):
        status = classify(m, r)
        failing = status in ("contingent", "contradictory")
        out.append(
            Check(
                r.name,
                r.frames,
                status,
                None if m.premises is None else translate(m.premises, r),
                translate(m.conclusion, r),
                counter_model(m, r) if failing else None,
            )
        )
    return out


def format_check(relation: str | MetaInference, checks: Sequence[Check]) -> str:
    """The verdicts of :func:`check` as text: the relation, one line per reading (with
    the translation, and a counter-model under it where the inference can fail), and the
    frame classes.

    >>> print(format_check("Cab -> Cba", check("Cab -> Cba", [READINGS["SC"]])))
    Cab -> Cba
    SC  valid          box(a -> ~b)  =>  box(b -> ~a)
    <BLANKLINE>
    decided over K frames (any accessibility relation): SC
    """
    m = parse_relation(relation) if isinstance(relation, str) else relation
    lines = [str(m)]
    width = max((len(c.reading) for c in checks), default=0)
    for c in checks:
        premises = "" if c.premises is None else f"{c.premises}  =>  "
        lines.append(f"{c.reading:<{width}}  {c.status:<13}  {premises}{c.conclusion}")
        if c.counter_model is not None:
            lines.append(f"{'':<{width}}  {'':<13}  counter-model: {c.counter_model}")
    lines += ["", _frames_line((c.reading, c.frames) for c in checks)]
    return "\n".join(lines)


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
    ``inputs & L & ~L' & ~L''`` (for the target pair) is satisfiable under the reading,
    over its frame class (the exclusive reading of METHODS.md section 5).

    >>> allowed_labels("Eab & Ebc", "ac", "EI"), allowed_labels("Cab", "ba", "SC")
    (('E',), ('C',))
    """
    r = _reading(reading)
    p = translate(_inputs(inputs), r)
    return tuple(lab for lab in LABELS if satisfiable(And(p, _exclusive(lab, target, r)), r.frames))


@dataclass(frozen=True)
class Conclusion:
    """What a reading says about a target pair given the inputs.

    ``allowed``: :func:`allowed_labels`. ``inferred``, as the report shows it: the one
    allowed label (``"C"``), the negated label when two are allowed (``"~E"``), ``"-"``
    when all three are, ``"vacuous"`` when the inputs are unsatisfiable under the reading
    (consistency is then undefined), and ``"none"`` when the inputs are satisfiable but no
    single answer is (no built-in reading does this on the patterns of ``infer build``).
    ``frames``: the frame class it was decided over.

    >>> conclude("Eab & Cac", "bc", "EI").to_dict()
    {'reading': 'EI', 'frames': 'K', 'inferred': '~E', 'allowed': ['C', 'N']}
    """

    reading: str
    inferred: str
    allowed: tuple[str, ...]
    frames: str = "K"

    def to_dict(self) -> dict[str, str | list[str]]:
        return {
            "reading": self.reading,
            "frames": self.frames,
            "inferred": self.inferred,
            "allowed": list(self.allowed),
        }


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
    elif satisfiable(translate(_inputs(inputs), r), r.frames):
        inferred = "none"
    else:
        inferred = "vacuous"
    return Conclusion(r.name, inferred, allowed, r.frames)


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


def format_conclusions(inputs: str, target: str, found: Sequence[Conclusion]) -> str:
    """The conclusions as text: the question, one line per reading (inferred label and
    allowed labels), and the frame classes.

    >>> print(format_conclusions("Cab", "ba", conclusions("Cab", "ba", [READINGS["SC"]])))
    Cab  =>  ?ba
    SC  C             allowed: C
    <BLANKLINE>
    decided over K frames (any accessibility relation): SC
    """
    lines = [f"{inputs}  =>  ?{target}"]
    width = max((len(c.reading) for c in found), default=0)
    for c in found:
        allowed = "/".join(c.allowed) or "none"
        lines.append(f"{c.reading:<{width}}  {c.inferred:<12}  allowed: {allowed}")
    lines += ["", _frames_line((c.reading, c.frames) for c in found)]
    return "\n".join(lines)


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
