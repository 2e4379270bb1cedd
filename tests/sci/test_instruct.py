"""Prompted instruct models: answer parsing, exemplar selection, records (fake backend)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence

import pytest

from nlieval.backends.base import GenerationBackend
from nlieval.metrics import point_metrics
from nlieval.sci import instruct
from nlieval.sci.instruct import evaluate_instruct, parse_answer, select_exemplars
from nlieval.types import SCI4, Item, Label, Record

C, R, E, N = Label.CONTRASTING, Label.REASONING, Label.ENTAILMENT, Label.NEUTRAL


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # class words, any case, punctuation, markdown, surrounding words
        ("Reasoning", R),
        ("reasoning", R),
        ("REASONING.", R),
        (" Neutral\n", N),
        ("**Entailment**", E),
        ('"Contrasting"', C),
        ("The relation is: Reasoning.", R),
        ("Relation: entailment", E),
        ("Label: neutral", N),
        ("I would say contrasting, because the results disagree", C),
        ("Reasoning.\nSentence 1: The next", R),
        # safe inflections
        ("contrast", C),
        ("The sentences contrast.", C),
        ("Sentence 2 entails sentence 1", E),
        # letters (the options are lettered A-D in SCI4 order)
        ("A", C),
        ("b", R),
        ("(C)", E),
        ("D.", N),
        ("B) Reasoning", R),
        ("D - Neutral", N),
        ("Answer: D", N),
        ("The answer is C", E),
        ("Option A", C),
        ("'B'", R),
        ("A reasoning relation.", R),  # the article "A" is no option letter
        # negated mentions name no class
        ("Neutral, not contrasting", N),
        ("It isn't neutral; it is reasoning.", R),
        ("Entailment. It does not contrast.", E),
        # unparseable: nothing, other labels, ambiguity, negation only, conflict
        ("", None),
        ("   ", None),
        (None, None),
        ("I cannot determine the relation.", None),
        ("Contradiction", None),
        ("E", None),
        ("neutrality", None),
        ("Contrasting/Reasoning", None),
        ("Neutral or entailment", None),
        ("Not entailment", None),
        ("non-entailment", None),
        ("A. Reasoning", None),  # letter and word disagree
    ],
)
def test_parse_answer(answer: str | None, expected: Label | None) -> None:
    assert parse_answer(answer) is expected


def _pool(per_class: int) -> list[Item]:
    return [
        Item(f"{lab.value[:3]}{n}", f"P {lab.value} {n}.", f"H {lab.value} {n}.", lab)
        for lab in SCI4
        for n in range(per_class)
    ]


@pytest.mark.parametrize("k", [0, 4, 8, 12, 16])
def test_exemplars_per_class(k: int) -> None:
    for run in range(3):
        shots = select_exemplars(_pool(12), k, run)
        assert len(shots) == k
        counts = Counter(it.label for it in shots)
        assert all(counts[lab] == k // 4 for lab in SCI4) if k else not counts


def test_exemplars_differ_across_runs() -> None:
    pool = _pool(12)
    for k in (4, 8, 12, 16):
        sets = [{it.id for it in select_exemplars(pool, k, run)} for run in range(3)]
        assert sets[0].isdisjoint(sets[1]) and sets[1].isdisjoint(sets[2])
        assert sets[0].isdisjoint(sets[2])
        assert select_exemplars(pool, k, 2) == select_exemplars(pool, k, 2)
    # Within a run, the k-shot set is part of the (k + 4)-shot set.
    for run in range(3):
        sets = [{it.id for it in select_exemplars(pool, k, run)} for k in (4, 8, 12, 16)]
        assert sets[0] < sets[1] < sets[2] < sets[3]
    # Even a pool of 3 per class gives three different 4-shot sets.
    small = [{it.id for it in select_exemplars(_pool(3), 4, run)} for run in range(3)]
    assert small[0].isdisjoint(small[1] | small[2]) and small[1].isdisjoint(small[2])
    # Not grouped by class: a run's order is shuffled.
    orders = {tuple(it.label for it in select_exemplars(pool, 16, run)) for run in range(3)}
    assert len(orders) == 3


def test_exemplar_errors() -> None:
    with pytest.raises(ValueError, match="multiple of 4"):
        select_exemplars(_pool(4), 6, 0)
    with pytest.raises(ValueError, match="2 exemplars of class contrasting"):
        select_exemplars(_pool(1), 8, 0)


def test_messages() -> None:
    item = Item("t", "A holds.", "B holds.", None)
    ex = _pool(1)
    msgs = instruct.build_messages(item, ex)
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * 4 + ["user"]
    assert [m["content"] for m in msgs[2:-1:2]] == [it.label.display for it in ex if it.label]
    assert msgs[-1]["content"] == "Sentence 1: A holds.\nSentence 2: B holds.\nRelation:"
    for lab in SCI4:
        assert lab.display in instruct.SYSTEM_PROMPT
    folded = instruct.build_messages(item, ex, system_role=False)
    assert folded[0]["role"] == "user" and folded[0]["content"].startswith(instruct.SYSTEM_PROMPT)
    assert len(folded) == len(msgs) - 1


class FakeChat:
    """Canned answers in turn; remembers every conversation and setting it was given."""

    name = "fake-chat"

    def __init__(self, answers: Sequence[str]):
        self.answers = list(answers)
        self.seen: list[list[dict[str, str]]] = []
        self.settings: list[tuple[int, float, int]] = []

    def generate(
        self,
        conversations: Sequence[Sequence[dict[str, str]]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        self.settings.append((max_new_tokens, temperature, seed))
        out = []
        for conv in conversations:
            self.seen.append([dict(m) for m in conv])
            out.append(self.answers[(len(self.seen) - 1) % len(self.answers)])
        return out


ANSWERS = [
    "Contrasting",  # right (gold contrasting)
    "The relation is: Reasoning.",  # right
    "I am not sure.",  # unparsed
    "D",  # right (neutral)
    "contrasting/entailment",  # unparsed (two classes)
    "Neutral",  # wrong (gold reasoning)
    "**Entailment**",  # right
    "Contradiction",  # unparsed (another label set)
]


def _items() -> list[Item]:
    golds = [C, R, E, N, C, R, E, N]
    return [
        Item(f"t{n}", f"S1 {n}.", f"S2 {n}.", lab, meta={"domain": "acl"})
        for n, lab in enumerate(golds)
    ]


def test_evaluate_counts_unparsed_and_scores_them_wrong() -> None:
    backend = FakeChat(ANSWERS)
    assert isinstance(backend, GenerationBackend)
    records = evaluate_instruct(backend, _items(), _pool(6), k=8, run=1, batch_size=3)
    assert [r.answer for r in records] == ANSWERS
    assert [r.pred for r in records] == [
        "contrasting",
        "reasoning",
        None,
        "neutral",
        None,
        "neutral",
        "entailment",
        None,
    ]
    m = point_metrics(records)
    assert m["n"] == 8 and m["n_unparsed"] == 3
    assert m["accuracy"] == pytest.approx(4 / 8)
    # Greedy, a small budget, the run as generation seed; batches of 3.
    assert backend.settings == [(16, 0.0, 1)] * 3
    r0, r2 = records[0], records[2]
    assert (r0.k, r0.seed, r0.model, r0.task) == (8, 1, "fake-chat", "scinli")
    assert r0.labels == tuple(lab.value for lab in SCI4)
    assert r0.probs == (1.0, 0.0, 0.0, 0.0) and r0.loglik[0] == 0.0
    assert r0.loglik[1] == pytest.approx(math.log(1e-12))
    assert r2.probs == (0.25,) * 4 and r2.gold_nll == pytest.approx(math.log(4))
    assert all(math.isfinite(r.gold_nll) for r in records)
    assert r0.meta == {"domain": "acl"}
    assert r0.prompt.startswith("[system]\n" + instruct.SYSTEM_PROMPT)
    assert Record.from_dict(json.loads(r2.to_json())) == r2


def test_same_exemplars_for_every_item_of_a_run() -> None:
    pool, items = _pool(6), _items()
    runs = []
    for run in range(3):
        backend = FakeChat(["Neutral"])
        records = evaluate_instruct(backend, items, pool, k=4, run=run)
        prefixes = {json.dumps(conv[:-1]) for conv in backend.seen}
        assert len(prefixes) == 1  # same set, same order, for all 8 items
        assert len({r.shots for r in records}) == 1 and len(records[0].shots) == 4
        assert [conv[-1]["content"] for conv in backend.seen] == [
            instruct.user_message(it) for it in items
        ]
        runs.append(set(records[0].shots))
    assert runs[0] != runs[1] != runs[2] != runs[0]


def test_zero_shot_and_pool_without_test_items() -> None:
    items = _items()
    backend = FakeChat(["neutral"])
    records = evaluate_instruct(backend, items, [], k=0, run=0)
    assert all(r.shots == () for r in records)
    assert [m["role"] for m in backend.seen[0]] == ["system", "user"]
    # The pool may be the test split itself: no item is ever its own (or any) exemplar.
    records = evaluate_instruct(FakeChat(["neutral"]), items, items + _pool(1), k=4, run=0)
    assert not set(records[0].shots) & {it.id for it in items}


def test_backend_answer_count_is_checked() -> None:
    class Short(FakeChat):
        def generate(self, conversations, max_new_tokens=32, temperature=0.0, seed=0):  # type: ignore[no-untyped-def]
            return []

    with pytest.raises(ValueError, match="0 answers for 8 prompts"):
        evaluate_instruct(Short([]), _items(), [], k=0, run=0)
