"""The model kinds are objects: :func:`nlieval.backends.registry.resolve` decides a
model's kind once, and every question about it afterwards (its check, fingerprints,
labels, scorer, chat; whether it classifies or chooses) goes to the kind's object in
``KINDS``, never to a comparison with the kind's name."""

from __future__ import annotations

import ast
import inspect
from typing import get_args

from nlieval.backends import registry
from nlieval.backends.registry import KINDS, Checkpoint, Kind, ModelKind, ResolvedModel


def test_every_kind_has_one_object() -> None:
    assert sorted(KINDS) == sorted(get_args(Kind))
    assert all(isinstance(k, ModelKind) for k in KINDS.values())
    assert len({id(k) for k in KINDS.values()}) == len(KINDS)


def _kind_comparisons(cls: type) -> list[str]:
    """The comparisons in ``cls``'s body that name a kind or an engine (``x.kind ==``,
    ``kind in (...)``, ``engine == "vllm"``, ``server is not None``)."""
    tree = ast.parse(inspect.getsource(cls))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        names = {
            n.attr if isinstance(n, ast.Attribute) else n.id
            for n in ast.walk(node)
            if isinstance(n, ast.Attribute | ast.Name)
        }
        if names & {"kind", "engine", "server"}:
            found.append(f"{cls.__name__}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_a_resolved_model_asks_its_kind() -> None:
    bad = _kind_comparisons(ResolvedModel) + _kind_comparisons(Checkpoint)
    assert not bad, "\n".join(bad)


def test_the_classifying_kinds() -> None:
    # By hand, from the kinds' meaning: the three pair classifiers read no prompt, a
    # multiple-choice model reads its items' choices, a language model takes shots.
    classify = {k for k, v in KINDS.items() if v.classifies}
    choose = {k for k, v in KINDS.items() if v.chooses}
    assert classify == {"sequence-classifier", "classifier-folder", "train-folder"}
    assert choose == {"multiple-choice"}
    for kind in get_args(Kind):
        m = ResolvedModel("m", registry.ModelSpec("hf", "m"), kind, ())
        assert m.takes_shots == (kind in ("causal-lm", "server"))
