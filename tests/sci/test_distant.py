"""Distant supervision and implicit-relation data on a small hand-written corpus."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from nlieval.cli import build as build_cli
from nlieval.data import DataError, load_pool, load_task, same_data
from nlieval.sci import distant, distant_build
from nlieval.sci.distant import Document, Pair, match_linking_phrase
from nlieval.types import SCI4, Label

# Six papers. p1, p2, p3, p6: sentence lists (p3 in paragraphs); p4: a text that pysbd
# splits; p5: a plain text file. Every linking phrase of METHODS.md occurs once as a
# linker, plus traps: mid-sentence "however"/"therefore", "In contrast to", "Thus far",
# "That is" without a comma, a linker opening a paragraph (not adjacent to the sentence
# before), and a lowercase "however," / "that is," at the start.
P1 = [
    "Transformer models dominate natural language processing.",
    "However, they require large amounts of training data.",
    "We therefore study data-efficient pretraining.",
    "Thus, smaller corpora may suffice for scientific text.",
    "In particular, abstracts carry most of the signal.",
    "The results, however, vary across domains.",
    "however, the trends are consistent.",
]
P2 = [
    "The detector was calibrated on synthetic events.",
    "However the calibration drifted over time.",
    "From here, we can infer that temperature affects the sensors.",
    "that is, the readings depend on the room climate.",
    "Sensor drift is a known problem.",
    "In contrast to earlier runs, no drift was seen in winter.",
]
P3 = [
    ["Protein folding is hard to simulate.", "Consequently, coarse-grained models are popular."],
    [
        "On the other hand, all-atom models are more accurate.",
        "Specifically, they capture side-chain contacts.",
        "In contrast, coarse models miss these contacts.",
    ],
]
P4 = (
    "We evaluated the method on 3.5 million sentences, e.g. from arXiv. "
    "As a result, the vocabulary grew by 12 percent.\n\n"
    "The error rate stayed flat at 4.2 percent (see Fig. 3). "
    "On the other hand, the runtime doubled. Thus far, no model closed the gap."
)
P5 = (
    "Graph networks scale poorly on long inputs.\nTheir memory grows quadratically.\n\n"
    "Sparse attention scales linearly. Precisely, it stores only local edges. "
    "THEREFORE long inputs become feasible.\n"
)
P6 = [
    "Most annotators agreed on the labels.",
    "On the contrary, agreement was low for rare classes.",
    "Particularly, neutral pairs were confused.",
    "In other words, mRNA-related sentences were the hardest.",
    "As a consequence, we merged two classes.",
    "That is the standard practice.",
]

C, R, E, N = "contrasting", "reasoning", "entailment", "neutral"

# Checked by hand: (doc, i, j, label, phrase, sentence 1, sentence 2).
EXPLICIT = [
    ("p1", 0, 1, C, "However", P1[0], "They require large amounts of training data."),
    ("p1", 2, 3, R, "Thus", P1[2], "Smaller corpora may suffice for scientific text."),
    ("p1", 3, 4, E, "In particular", P1[3], "Abstracts carry most of the signal."),
    ("p1", 5, 6, C, "However", P1[5], "The trends are consistent."),
    ("p2", 0, 1, C, "However", P2[0], "The calibration drifted over time."),
    ("p2", 1, 2, R, "From here, we can infer", P2[1], "Temperature affects the sensors."),
    ("p2", 2, 3, E, "That is", P2[2], "The readings depend on the room climate."),
    ("p3", 0, 1, R, "Consequently", P3[0][0], "Coarse-grained models are popular."),
    ("p3", 2, 3, E, "Specifically", P3[1][0], "They capture side-chain contacts."),
    ("p3", 3, 4, C, "In contrast", P3[1][1], "Coarse models miss these contacts."),
    (
        "p4",
        0,
        1,
        R,
        "As a result",
        "We evaluated the method on 3.5 million sentences, e.g. from arXiv.",
        "The vocabulary grew by 12 percent.",
    ),
    (
        "p4",
        2,
        3,
        C,
        "On the other hand",
        "The error rate stayed flat at 4.2 percent (see Fig. 3).",
        "The runtime doubled.",
    ),
    ("p6", 0, 1, C, "On the contrary", P6[0], "Agreement was low for rare classes."),
    ("p6", 1, 2, E, "Particularly", P6[1], "Neutral pairs were confused."),
    ("p6", 2, 3, E, "In other words", P6[2], "mRNA-related sentences were the hardest."),
    ("p6", 3, 4, R, "As a consequence", P6[3], "We merged two classes."),
    (
        "p5",
        2,
        3,
        E,
        "Precisely",
        "Sparse attention scales linearly.",
        "It stores only local edges.",
    ),
    (
        "p5",
        3,
        4,
        R,
        "Therefore",
        "Precisely, it stores only local edges.",
        "Long inputs become feasible.",
    ),
]

# The seed-0 neutral pairs after balancing, each checked by hand: two sentences of one
# paper with at least one in between, sentence 2 opening with no linker ("That is the"
# has no comma). p3 has none: its sentences 2-4 all open with a linker. Before
# balancing p5 also had (0, 2); downsampling to 6 dropped it.
NEUTRAL_SEED0 = [
    ("p1", 0, 2, N, None, P1[0], P1[2]),
    ("p1", 0, 5, N, None, P1[0], P1[5]),
    ("p2", 0, 4, N, None, P2[0], P2[4]),
    (
        "p4",
        0,
        2,
        N,
        None,
        "We evaluated the method on 3.5 million sentences, e.g. from arXiv.",
        "The error rate stayed flat at 4.2 percent (see Fig. 3).",
    ),
    ("p6", 2, 5, N, None, P6[2], P6[5]),
    ("p6", 3, 5, N, None, P6[3], P6[5]),
]


def _expected_balanced() -> list[tuple[object, ...]]:
    # Output order: documents in corpus order, each one's explicit pairs then neutral.
    docs = ["p1", "p2", "p3", "p4", "p6", "p5"]
    return [
        row
        for doc in docs
        for row in [r for r in EXPLICIT if r[0] == doc] + [r for r in NEUTRAL_SEED0 if r[0] == doc]
    ]


def _tuples(pairs: list[Pair]) -> list[tuple[object, ...]]:
    return [
        (p.doc_id, p.i, p.j, p.label.value if p.label else None, p.phrase, p.sentence1, p.sentence2)
        for p in pairs
    ]


@pytest.fixture()
def corpus(tmp_path: Path) -> list[Path]:
    rows = [
        {"paper": "p1", "body": P1},
        {"paper": "p2", "body": P2},
        {"paper": "p3", "body": P3},
        {"paper": "p4", "body": P4},
        {"paper": "p6", "body": P6},
    ]
    jsonl = tmp_path / "papers.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    txt = tmp_path / "p5.txt"
    txt.write_text(P5, encoding="utf-8")
    return [jsonl, txt]


def _docs(paths: list[Path]) -> list[Document]:
    return list(distant.read_corpus(paths, text_field="body", id_field="paper"))


# --------------------------------------------------------------------------- phrases


@pytest.mark.parametrize(
    ("sentence", "label", "phrase", "rest"),
    [
        ("However, the model fails.", C, "However", "The model fails."),
        ("However the model fails.", C, "However", "The model fails."),
        ("however, the model fails.", C, "However", "The model fails."),
        ("HOWEVER, it fails.", C, "However", "It fails."),
        ("On the other hand, it is slow.", C, "On the other hand", "It is slow."),
        ("In contrast, it is fast.", C, "In contrast", "It is fast."),
        ("On the contrary, it is fast.", C, "On the contrary", "It is fast."),
        ("Thus, we win.", R, "Thus", "We win."),
        ("Therefore the bound holds.", R, "Therefore", "The bound holds."),
        ("Consequently, it holds.", R, "Consequently", "It holds."),
        ("As a result, it holds.", R, "As a result", "It holds."),
        ("As a consequence, it holds.", R, "As a consequence", "It holds."),
        ("From here, we can infer that X holds.", R, "From here, we can infer", "X holds."),
        ("From here we can infer the bound.", R, "From here, we can infer", "The bound."),
        ("Specifically, it holds.", E, "Specifically", "It holds."),
        ("Precisely, it holds.", E, "Precisely", "It holds."),
        ("In  particular , BERT wins.", E, "In particular", "BERT wins."),
        ("Particularly, it holds.", E, "Particularly", "It holds."),
        ("That is, it holds.", E, "That is", "It holds."),
        ("In other words, mRNA decays.", E, "In other words", "mRNA decays."),
        ("Thus,the gap closes.", R, "Thus", "The gap closes."),
    ],
)
def test_linking_phrases(sentence: str, label: str, phrase: str, rest: str) -> None:
    link = match_linking_phrase(sentence)
    assert link is not None
    assert (link.label.value, link.phrase, link.rest) == (label, phrase, rest)


@pytest.mark.parametrize(
    "sentence",
    [
        "We show, however, that it fails.",  # mid-sentence
        "The model therefore fails.",
        "In contrast to prior work, we win.",  # "In contrast to" is not a linker
        "As a result of noise, accuracy drops.",
        "Thus far, no model closed the gap.",
        "That is the largest gain.",  # "That is" needs its comma
        "Thusly, we win.",  # a longer word
        "However.",
        "In other words: it holds.",  # a colon is neither comma nor space
        "Moreover, it holds.",  # not in the table
    ],
)
def test_not_linking(sentence: str) -> None:
    assert match_linking_phrase(sentence) is None


def test_every_table_phrase_is_matched() -> None:
    for label, phrases in distant.LINKING_PHRASES.items():
        for phrase in phrases:
            link = match_linking_phrase(f"{phrase}, the claim holds.")
            assert link is not None and (link.label, link.phrase) == (label, phrase)
            assert link.rest == "The claim holds."


def test_recapitalise() -> None:
    assert distant.recapitalise("the model") == "The model"
    assert distant.recapitalise("mRNA levels") == "mRNA levels"
    assert distant.recapitalise("(i) it holds") == "(i) it holds"
    assert distant.recapitalise("") == ""


# --------------------------------------------------------------------------- corpus


def test_read_corpus(corpus: list[Path]) -> None:
    docs = _docs(corpus)
    assert [d.id for d in docs] == ["p1", "p2", "p3", "p4", "p6", "p5"]
    p4 = docs[3]
    assert p4.paragraphs == (
        (
            "We evaluated the method on 3.5 million sentences, e.g. from arXiv.",
            "As a result, the vocabulary grew by 12 percent.",
        ),
        (
            "The error rate stayed flat at 4.2 percent (see Fig. 3).",
            "On the other hand, the runtime doubled.",
            "Thus far, no model closed the gap.",
        ),
    )
    # Hard-wrapped lines join; the blank line is a paragraph break.
    assert docs[5].paragraphs[0] == (
        "Graph networks scale poorly on long inputs.",
        "Their memory grows quadratically.",
    )
    assert docs[2].adjacent_starts() == [0, 2, 3]  # not 1: sentence 2 opens a paragraph


def test_read_corpus_ids_and_errors(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text('{"text": ["A.", "B."]}\n\n{"text": "C. D."}\n', encoding="utf-8")
    assert [d.id for d in distant.read_corpus([f])] == ["c:1", "c:3"]
    f.write_text('{"body": 3}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"c\.jsonl:1: field 'body'"):
        list(distant.read_corpus([f], text_field="body"))
    with pytest.raises(DataError, match="field 'text': missing"):
        list(distant.read_corpus([f]))
    with pytest.raises(DataError, match="no such file"):
        list(distant.read_corpus([tmp_path / "none.txt"]))
    doc = Document("x", (("A.",),))
    with pytest.raises(ValueError, match="occurs twice"):
        distant.build_distant([doc, doc])


# --------------------------------------------------------------------------- distant


def test_explicit_pairs_exact(corpus: list[Path]) -> None:
    result = distant.build_distant(_docs(corpus), balanced=False)
    explicit = [p for p in result.pairs if p.label is not Label.NEUTRAL]
    assert _tuples(explicit) == EXPLICIT
    assert result.before == {C: 6, R: 6, E: 6, N: 7}
    assert result.stats["documents"] == 6 and result.stats["sentences"] == 34
    assert result.stats["phrase:However"] == 3


def test_distant_output_exact(corpus: list[Path]) -> None:
    result = distant.build_distant(_docs(corpus), seed=0)
    assert _tuples(list(result.pairs)) == _expected_balanced()
    assert result.before == {C: 6, R: 6, E: 6, N: 7}
    assert result.after == {C: 6, R: 6, E: 6, N: 6}


def test_neutral_pairs_rules(corpus: list[Path]) -> None:
    docs = _docs(corpus)
    by_id = {d.id: d for d in docs}
    for seed in range(5):
        result = distant.build_distant(docs, seed=seed, balanced=False)
        neutral = [p for p in result.pairs if p.label is Label.NEUTRAL]
        assert len(neutral) == 7  # ceil(explicit / 3) per paper, p3 has no candidate
        for p in neutral:
            sents = by_id[p.doc_id].sentences
            assert p.j >= p.i + 2 and not p.adjacent
            assert (p.sentence1, p.sentence2) == (sents[p.i], sents[p.j])
            assert match_linking_phrase(p.sentence2) is None
        # A paper's pairs depend on the seed and the paper only, not on corpus order.
        again = distant.build_distant(list(reversed(docs)), seed=seed, balanced=False)
        assert sorted(_tuples(list(again.pairs))) == sorted(_tuples(list(result.pairs)))


def test_nonadjacent_sampling_is_uniform_and_complete() -> None:
    doc = Document("d", (tuple(f"S{n}." for n in range(6)),))
    every = {(i, j) for j in range(6) for i in range(j - 1)}
    assert {(p.i, p.j) for p in distant.nonadjacent_pairs(doc, 100)} == every
    picks = [distant.nonadjacent_pairs(doc, 1, seed)[0] for seed in range(400)]
    assert {(p.i, p.j) for p in picks} == every


def test_balance_keeps_order_and_is_seeded() -> None:
    pairs = [Pair("d", n, n + 1, "a", "b", SCI4[n % 3]) for n in range(10)]
    kept = distant.balance(pairs, seed=1)
    assert distant.class_counts(kept) == {C: 3, R: 3, E: 3, N: 0}
    assert [p.i for p in kept] == sorted(p.i for p in kept)
    assert kept == distant.balance(pairs, seed=1)


def test_write_task_loads(corpus: list[Path], tmp_path: Path) -> None:
    result = distant.build_distant(_docs(corpus))
    yaml_path = distant.write_task(result, tmp_path / "out", "sci")
    ds = load_task(str(yaml_path))
    assert ds.labels == SCI4 and len(ds) == 24
    first = ds.items[0]
    assert (first.id, first.premise, first.label) == ("p1:0-1", P1[0], Label.CONTRASTING)
    assert first.meta["phrase"] == "However" and first.meta["position"] == [0, 1]
    counts = json.loads((tmp_path / "out" / "sci.counts.json").read_text())
    assert counts["after"] == {C: 6, R: 6, E: 6, N: 6}
    # The pairs are also the train split (nlieval train --task), and as a few-shot pool
    # they are the evaluated data itself, so each item is kept out of its own shots.
    assert load_task(str(yaml_path), split="train").items == ds.items
    pool, pool_is_test = load_pool(str(yaml_path))
    assert pool.split == "train" and pool_is_test
    assert same_data(str(yaml_path), "train", "test")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    build_cli.add_commands(parser.add_subparsers(dest="command"))
    return parser


def test_cli_distant(
    corpus: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["build", "distant", "--corpus", *map(str, corpus), "--out", str(out)]
    args = _parser().parse_args([*argv, "--text-field", "body", "--id-field", "paper"])
    assert args.handler(args) == 0
    text = capsys.readouterr().out
    assert "neutral             7       6" in text and "wrote 24 pairs" in text
    lines = (out / "distant.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert [(r["doc_id"], *r["position"], r["label"]) for r in rows] == [
        row[:4] for row in _expected_balanced()
    ]
    assert load_task(str(out / "distant.yaml")).label_counts() == {C: 6, R: 6, E: 6, N: 6}


# --------------------------------------------------------------------------- implicit

# Adjacent pairs with no linker in either sentence, checked by hand. Left out: p1 1-2 and
# 4-5, p2 3-4, p4 3-4 and p6 4-5, whose first sentence opens with a linker (the study's
# rule: no linking phrase in either sentence).
ADJACENT_UNMARKED = [
    ("p2", 4, 5),  # "In contrast to" is no linker
    ("p5", 0, 1),
]


def test_implicit_candidates(corpus: list[Path]) -> None:
    cands = distant.implicit_candidates(_docs(corpus), seed=0)
    adjacent = [(p.doc_id, p.i, p.j) for p in cands if p.adjacent]
    assert adjacent == ADJACENT_UNMARKED
    far = [p for p in cands if not p.adjacent]
    # One non-adjacent candidate per adjacent one, per paper (as far as there are any);
    # p5's only one: its sentences 3 and 4 open with linkers, so (0, 2).
    per_doc = {d: sum(1 for p in far if p.doc_id == d) for d in ("p1", "p2", "p4", "p5", "p6")}
    assert per_doc == {"p1": 0, "p2": 1, "p4": 0, "p5": 1, "p6": 0}
    assert [(p.i, p.j) for p in far if p.doc_id == "p5"] == [(0, 2)]
    assert [p.i for p in far if p.doc_id == "p2"] == [0]  # 0 is p2's only plain start < 3
    assert all(p.j >= p.i + 2 and p.label is None for p in far)
    none = distant.implicit_candidates(_docs(corpus), nonadjacent_ratio=0.0)
    assert all(p.adjacent for p in none) and len(none) == 2


def test_no_implicit_pair_holds_a_sentence_that_opens_with_a_linker() -> None:
    sents = (
        "Therefore, the average effect is small.",
        "The variance across sites is large.",
        "However, few samples were taken.",
        "Costs rose each year.",
        "The budget was fixed.",
        "Staff numbers fell.",
    )
    cands = distant.implicit_candidates([Document("d", (sents,))], seed=0, nonadjacent_ratio=5)
    # By hand: sentences 0 and 2 open with a linker; the adjacent pairs of the others
    # are (3, 4) and (4, 5); the non-adjacent ones (1, 3), (1, 4), (1, 5), (3, 5).
    assert [(p.i, p.j) for p in cands if p.adjacent] == [(3, 4), (4, 5)]
    assert sorted((p.i, p.j) for p in cands if not p.adjacent) == [(1, 3), (1, 4), (1, 5), (3, 5)]


def _fake_probs(pair: Pair) -> list[float]:
    # p2: neutral on its adjacent pair, unsure on the other; p5: confident contrasting.
    if pair.doc_id == "p2":
        return [0.02, 0.02, 0.01, 0.95] if pair.adjacent else [0.4, 0.3, 0.2, 0.1]
    return [0.97, 0.01, 0.01, 0.01]


def test_pseudo_label_threshold_and_adjacency(corpus: list[Path]) -> None:
    cands = distant.implicit_candidates(_docs(corpus), seed=0)
    calls: list[int] = []

    def classify(batch: Sequence[tuple[str, str]]) -> list[list[float]]:
        calls.append(len(batch))
        by_text = {(p.sentence1, p.sentence2): p for p in cands}
        return [_fake_probs(by_text[s]) for s in batch]

    result = distant.pseudo_label(cands, classify, threshold=0.9, batch_size=3)
    assert sum(calls) == len(cands) == 4 and calls == [3, 1]
    kept = {(p.doc_id, p.i, p.j, p.label.value if p.label else None) for p in result.pairs}
    assert kept == {("p5", 0, 1, C)}
    assert result.stats == {
        "candidates": 4,
        "dropped_below_threshold": 1,  # p2's non-adjacent pair
        "dropped_adjacent_neutral": 1,  # p2 4-5 called neutral
        "dropped_nonadjacent_relation": 1,  # p5 0-2 called contrasting
    }
    assert all(p.confidence is not None and p.confidence >= 0.9 for p in result.pairs)
    assert result.after == {C: 1, R: 0, E: 0, N: 0}


def test_pseudo_label_checks_probabilities() -> None:
    pair = Pair("d", 0, 1, "A.", "B.")
    with pytest.raises(ValueError, match="d:0-1"):
        distant.select_pseudo_labelled([pair], [[0.5, 0.5, 0.5, 0.5]], 0.9)
    with pytest.raises(ValueError, match="2 answers for 1"):
        distant.pseudo_label([pair], lambda b: [[1.0, 0, 0, 0]] * 2)


def test_classifier_fn_reorders_labels() -> None:
    class Fake:
        name = "fake"
        labels = ("neutral", "contrasting", "reasoning", "entailment")

        def classify(self, pairs: list[tuple[str, str]]) -> list[list[float]]:
            return [[-0.1, -3.0, -3.0, -3.0] for _ in pairs]

    probs = distant.classifier_fn(Fake())([("a", "b")])[0]
    assert probs.index(max(probs)) == SCI4.index(Label.NEUTRAL)
    assert sum(probs) == pytest.approx(1.0)


def test_cli_implicit_round_trip(
    corpus: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "imp"
    base = ["build", "implicit", "--corpus", *map(str, corpus), "--out", str(out)]
    base += ["--text-field", "body", "--id-field", "paper"]
    args = _parser().parse_args(base)
    assert args.handler(args) == 0
    assert "--scores" in capsys.readouterr().out
    cands = [json.loads(x) for x in (out / "candidates.jsonl").read_text().splitlines()]
    assert len(cands) == 4 and all(c["label"] is None for c in cands)
    scores = tmp_path / "scores.jsonl"
    with scores.open("w") as fh:
        for c in cands:
            probs = [0.97, 0.01, 0.01, 0.01] if c["adjacent"] else [0.01, 0.01, 0.01, 0.97]
            # Both shapes: a list in SCI4 order, or a mapping by class name.
            value = probs if c["adjacent"] else dict(zip([C, R, E, N], probs, strict=True))
            fh.write(json.dumps({"id": c["id"], "probs": value}) + "\n")
    args = _parser().parse_args([*base, "--scores", str(scores)])
    assert args.handler(args) == 0
    ds = load_task(str(out / "implicit.yaml"))
    assert ds.label_counts() == {C: 2, R: 0, E: 0, N: 2}
    assert all(it.meta["adjacent"] == (it.label is Label.CONTRASTING) for it in ds.items)


def _implicit_argv(corpus: list[Path], out: Path) -> list[str]:
    base = ["build", "implicit", "--corpus", *map(str, corpus), "--out", str(out)]
    return [*base, "--text-field", "body", "--id-field", "paper"]


def test_cli_implicit_with_classifier(
    corpus: list[Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Fake:
        name = "fake-clf"
        labels = ("entailment", "neutral", "contrasting", "reasoning")

        def classify(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
            return [[-9.0, -0.001, -9.0, -9.0] for _ in pairs]  # confident neutral

    base = _implicit_argv(corpus, tmp_path / "o")
    monkeypatch.setattr(distant_build, "load_classifier", lambda folder: Fake())
    args = _parser().parse_args([*base, "--classifier", str(tmp_path), "--threshold", "0.5"])
    assert args.handler(args) == 0
    assert "dropped_adjacent_neutral: 2" in capsys.readouterr().out
    assert load_task(str(tmp_path / "o" / "implicit.yaml")).label_counts() == {
        C: 0,
        R: 0,
        E: 0,
        N: 2,
    }
    # Without an importable classifier backend the command says so and fails.
    monkeypatch.setattr(distant_build, "load_classifier", lambda folder: None)
    assert args.handler(args) == 2
    assert "cannot be imported" in capsys.readouterr().out


def test_load_classifier_rejects_other_folders(tmp_path: Path) -> None:
    pytest.importorskip("nlieval.backends.classifier")
    with pytest.raises(DataError, match="not a classifier folder"):
        distant_build.load_classifier(str(tmp_path))


def test_cli_implicit_bad_scores(corpus: list[Path], tmp_path: Path) -> None:
    base = _implicit_argv(corpus, tmp_path / "o")
    scores = tmp_path / "partial.jsonl"
    scores.write_text('{"id": "p2:4-5", "probs": [1, 0, 0, 0]}\n')
    args = _parser().parse_args([*base, "--scores", str(scores)])
    with pytest.raises(DataError, match="no scores for 3 of 4"):
        args.handler(args)
    scores.write_text('{"id": "p2:4-5", "probs": {"contrast": 1}}\n')
    with pytest.raises(DataError, match="field 'probs'"):
        args.handler(args)


def test_the_file_build_implicit_writes_is_an_instruct_exemplar_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlieval.cli import main
    from tests.sci.test_instruct_cli import ShapeChat, _records, _task, _use

    paper = [
        "Therefore, the average effect is small.",  # opens with a linker: in no pair
        "Sites differ in size.",
        "Sizes were measured twice.",
        "Both measures agreed.",
        "The agreement was expected.",
    ]
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps({"id": "d", "text": paper}) + "\n")
    out = tmp_path / "imp"
    argv = ["build", "implicit", "--corpus", str(papers), "--out", str(out)]
    assert main(argv) == 0
    cands = [json.loads(x) for x in (out / "candidates.jsonl").read_text().splitlines()]
    assert all(c["position"][0] != 0 for c in cands)
    # By hand: adjacent 1-2, 2-3, 3-4 become contrasting, reasoning, entailment; the
    # non-adjacent ones neutral (one of each class at least, as k = 4 needs).
    by_start = {1: [1, 0, 0, 0], 2: [0, 1, 0, 0], 3: [0, 0, 1, 0]}
    scores = tmp_path / "scores.jsonl"
    scores.write_text(
        "".join(
            json.dumps(
                {
                    "id": c["id"],
                    "probs": by_start[c["position"][0]] if c["adjacent"] else [0, 0, 0, 1],
                }
            )
            + "\n"
            for c in cands
        )
    )
    assert main([*argv, "--scores", str(scores)]) == 0
    built = out / "implicit.jsonl"
    assert "sentence1" in built.read_text() and "premise" not in built.read_text()
    chat = ShapeChat()
    _use(monkeypatch, chat)
    run = tmp_path / "run"
    argv = ["instruct", "--model", "fake/chat", "--task", str(_task(tmp_path)), "--shots", "4"]
    argv += ["--runs", "1", "--exemplars", str(built), "--out", str(run), "--no-progress"]
    assert main(argv) == 0
    shots = {tuple(r["shots"]) for r in _records(run)}
    ids = {json.loads(x)["id"] for x in built.read_text().splitlines()}
    assert len(shots) == 1 and set(next(iter(shots))) <= ids
    turns = [m["content"] for m in chat.seen[0] if m["role"] == "user"][:-1]
    assert len(turns) == 4 and any("Sites differ in size." in t for t in turns)
