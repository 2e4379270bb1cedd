"""The real benchmark files under $NLIEVAL_DATA_DIR (see the data's SOURCES.md).

Every count asserted here is one stated in SOURCES.md or METHODS.md.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

from nlieval.data import DataError, load_pool, load_task, read_items
from nlieval.types import ALPHA, NLI2, NLI3, SCI4

DATA = os.environ.get("NLIEVAL_DATA_DIR")

pytestmark = [
    pytest.mark.data,
    pytest.mark.skipif(not DATA, reason="NLIEVAL_DATA_DIR is not set"),
]

E, N, C = "entailment", "neutral", "contradiction"


def test_snli_dev_and_test() -> None:
    # Its reading speed is measured in benchmarks/, not asserted here.
    dev = load_task("snli", DATA)
    assert len(dev) == 9842 and dict(dev.dropped) == {"gold label '-'": 158}
    assert dev.label_counts() == {E: 3329, N: 3235, C: 3278}
    assert len({it.id for it in dev.items}) == 9842
    lengths = Counter(len(it.meta["annotator_labels"]) for it in dev.items)
    assert set(lengths) <= {4, 5}
    test = load_task("snli", DATA, split="test")
    assert len(test) == 9824 and dict(test.dropped) == {"gold label '-'": 176}
    assert test.label_counts() == {E: 3368, N: 3219, C: 3237}
    assert not {it.id for it in dev.items} & {it.id for it in test.items}


def test_mnli_dev_matched() -> None:
    ds = load_task("mnli_m", DATA)
    assert (ds.split, len(ds)) == ("dev_matched", 9815)
    assert ds.label_counts() == {E: 3479, N: 3123, C: 3213}


def test_mnli_mismatched_is_missing_with_a_clear_error() -> None:
    with pytest.raises(DataError, match="no file for mnli_mm dev_mismatched") as info:
        load_task("mnli_mm", DATA)
    assert "multinli_1.0_dev_mismatched.jsonl" in str(info.value)


def test_hans_eval() -> None:
    ds = load_task("hans", DATA)
    assert (ds.labels, len(ds)) == (NLI2, 30000)
    assert ds.label_counts() == {E: 15000, "non-entailment": 15000}
    cells = Counter((it.meta["heuristic"], it.label) for it in ds.items)
    assert len(cells) == 6 and set(cells.values()) == {5000}


@pytest.mark.parametrize(
    ("task", "n", "counts"),
    [
        ("anli_r1", 1000, {E: 334, N: 333, C: 333}),
        ("anli_r2", 1000, {E: 334, N: 333, C: 333}),
        ("anli_r3", 1198, {E: 402, N: 400, C: 396}),
    ],
)
def test_anli_dev(task: str, n: int, counts: dict[str, int]) -> None:
    ds = load_task(task, DATA)
    assert (ds.split, len(ds), ds.label_counts()) == ("dev", n, counts)
    assert len({it.id for it in ds.items}) == n
    assert ds.items[0].meta["round"] == "R" + task[-1]


def test_alphanli_dev() -> None:
    ds = load_task("alphanli", DATA)
    assert (ds.labels, len(ds)) == (ALPHA, 1532)
    assert all(len(it.choices) == 2 for it in ds.items)


@pytest.mark.parametrize(
    ("task", "n", "labels"),
    [
        ("chaosnli_snli", 1514, NLI3),
        ("chaosnli_mnli", 1599, NLI3),
        ("chaosnli_alphanli", 1532, ALPHA),
    ],
)
def test_chaosnli(task: str, n: int, labels: tuple[object, ...]) -> None:
    ds = load_task(task, DATA)
    assert (len(ds), ds.labels) == (n, labels)
    assert len({it.id for it in ds.items}) == n
    for it in ds.items:
        counts = it.meta["human_counts"]
        assert len(counts) == len(labels) and sum(counts) == 100
        # The majority label is the most frequent human label.
        assert counts[[lab.value for lab in labels].index(it.meta["majority_label"])] == max(counts)


def test_chaosnli_snli_matches_snli_dev() -> None:
    dev = {it.id: it for it in load_task("snli", DATA).items}
    for it in load_task("chaosnli_snli", DATA).items:
        assert it.id in dev
        assert it.label == dev[it.id].label
        assert it.meta["old_labels"] == dev[it.id].meta["annotator_labels"]


def test_scinli() -> None:
    test = load_task("scinli", DATA)
    assert (test.labels, len(test)) == (SCI4, 4000)
    assert set(test.label_counts().values()) == {1000}
    dev = load_task("scinli", DATA, split="dev")
    assert len(dev) == 2000 and set(dev.label_counts().values()) == {500}
    assert test.source.endswith("test.jsonl")
    as_csv = read_items(
        test.source.replace(".jsonl", ".csv"),
        labels=SCI4,
        fields={"id": "id", "premise": "sentence1", "hypothesis": "sentence2", "label": "label"},
    )
    assert [(i.id, i.premise, i.hypothesis, i.label) for i in as_csv.items] == [
        (i.id, i.premise, i.hypothesis, i.label) for i in test.items
    ]


def test_sick() -> None:
    test = load_task("sick", DATA)
    assert len(test) == 4906 and test.label_counts() == {E: 1404, N: 2790, C: 712}
    sizes = {s: len(load_task("sick", DATA, split=s)) for s in ("train", "trial")}
    assert sizes == {"train": 4439, "trial": 495}


def test_rte() -> None:
    dev = load_task("rte", DATA)
    assert len(dev) == 277 and dev.label_counts() == {E: 146, "non-entailment": 131}
    test = load_task("rte", DATA, split="test")
    assert len(test) == 3000 and all(it.label is None for it in test.items)
    assert len(load_task("rte", DATA, split="train")) == 2490


@pytest.mark.parametrize(
    ("task", "split", "same"),
    [
        ("snli", "test", False),
        ("mnli_m", "dev_matched", True),
        ("anli_r3", "dev", True),
        ("chaosnli_snli", "dev", True),
        ("scinli", "dev", False),
        ("sick", "train", False),
        ("rte", "train", False),
    ],
)
def test_pools(task: str, split: str, same: bool) -> None:
    pool, is_same = load_pool(task, DATA)
    assert (pool.split, is_same) == (split, same)
