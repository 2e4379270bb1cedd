"""The human-vs-human split-half estimate: checked against an exact hypergeometric sum and
a direct simulation written here, and its place in the tables, the JSON and the plot."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import hypergeom

from nlieval import plotting as plots
from nlieval.analyses import chaosnli
from nlieval.analyses.chaosnli import HumanBaseline, split_half_exact, split_half_js
from nlieval.ground import render
from nlieval.types import Record
from tests.helpers.figures import bars_of, points_of, record_savefig

NLI = ("entailment", "neutral", "contradiction")


def js_distance(p: Sequence[float], q: Sequence[float]) -> float:
    """JS distance, natural log, written out from its definition."""
    m = [(a + b) / 2 for a, b in zip(p, q, strict=True)]

    def kl(x: Sequence[float], y: Sequence[float]) -> float:
        return sum(a * math.log(a / b) for a, b in zip(x, y, strict=True) if a > 0)

    return math.sqrt(max(0.0, 0.5 * kl(p, m) + 0.5 * kl(q, m)))


def test_split_half_two_labels_equals_the_exact_hypergeometric_expectation() -> None:
    # 50 "e" and 50 "n" labels; half A draws 50 without replacement: its number of "e"
    # labels a is hypergeometric(100, 50, 50), and half B holds 50 - a of them.
    counts = [50, 50]
    exact = sum(
        hypergeom.pmf(a, 100, 50, 50) * js_distance([a / 50, 1 - a / 50], [1 - a / 50, a / 50])
        for a in range(51)
    )
    est, est_div = split_half_js(counts, splits=20000, seed=3, item_id="i")
    assert est == pytest.approx(exact, abs=0.002)
    exact_div = sum(
        hypergeom.pmf(a, 100, 50, 50) * js_distance([a / 50, 1 - a / 50], [1 - a / 50, a / 50]) ** 2
        for a in range(51)
    )
    assert est_div == pytest.approx(exact_div, abs=0.0005)


def test_split_half_exact_on_a_tiny_item_by_hand() -> None:
    # Labels e, e, n, c; a half takes 2 of the 4 labels, each of the C(4, 2) = 6 pairs
    # equally likely: {e,e} once (other half {n,c}), {e,n} twice, {e,c} twice, {n,c} once.
    # {e,e} vs {n,c}: disjoint supports, JS divergence ln 2; {e,n} vs {e,c}: the halves
    # (1/2, 1/2, 0) and (1/2, 0, 1/2), mixture (1/2, 1/4, 1/4), JS divergence (ln 2) / 2.
    ln2 = math.log(2)
    distance, divergence = split_half_exact([2, 1, 1])
    assert distance == pytest.approx(2 / 6 * math.sqrt(ln2) + 4 / 6 * math.sqrt(ln2 / 2), abs=1e-12)
    assert divergence == pytest.approx(2 / 6 * ln2 + 4 / 6 * ln2 / 2, abs=1e-12)
    # An odd total: halves of 1 and 2 labels of (1, 2): {a} w.p. 1/3 vs {b, b}: ln 2;
    # {b} w.p. 2/3 vs {a, b}: halves (0, 1) and (1/2, 1/2), mixture (1/4, 3/4).
    js_ab = js_distance([0, 1], [0.5, 0.5])
    assert split_half_exact([1, 2])[0] == pytest.approx(math.sqrt(ln2) / 3 + 2 / 3 * js_ab)


def test_split_half_exact_equals_the_hypergeometric_sum_and_the_simulation_tends_to_it() -> None:
    exact = sum(
        hypergeom.pmf(a, 100, 50, 50) * js_distance([a / 50, 1 - a / 50], [1 - a / 50, a / 50])
        for a in range(51)
    )
    assert split_half_exact([50, 50])[0] == pytest.approx(exact, abs=1e-12)
    # The default line is the exact one; --human-splits asks for the simulation.
    items = {"a": [60, 30, 10], "b": [34, 33, 33]}
    records = [rec(i, c, (1 / 3, 1 / 3, 1 / 3)) for i, c in items.items()]
    (row,) = chaosnli.score_records(records)
    assert row["human"]["label"] == "human split-half (exact)"
    mean = float(np.mean([split_half_exact(c)[0] for c in items.values()]))
    assert row["human"]["js_distance"] == pytest.approx(mean, abs=1e-15)
    (sim,) = chaosnli.score_records(records, HumanBaseline(splits=4000, seed=1))
    assert sim["human"]["js_distance"] == pytest.approx(mean, abs=0.003)


def test_split_half_three_labels_matches_a_direct_simulation() -> None:
    counts = [60, 30, 10]
    rng = np.random.default_rng(12345)
    labels = np.repeat([0, 1, 2], counts)
    sims = []
    for _ in range(6000):
        shuffled = rng.permutation(labels)
        a = np.bincount(shuffled[:50], minlength=3) / 50
        b = np.bincount(shuffled[50:], minlength=3) / 50
        sims.append(js_distance(a.tolist(), b.tolist()))
    est, _ = split_half_js(counts, splits=6000, seed=0, item_id="x")
    # Two independent Monte Carlo means of a quantity with sd about 0.04.
    assert est == pytest.approx(float(np.mean(sims)), abs=0.003)


def test_split_half_properties() -> None:
    assert split_half_js([100, 0, 0]) == (0.0, 0.0)
    a = split_half_js([40, 35, 25], splits=5, seed=1, item_id="u1")
    assert a == split_half_js([40, 35, 25], splits=5, seed=1, item_id="u1")
    assert a != split_half_js([40, 35, 25], splits=5, seed=2, item_id="u1")
    # An odd total: halves of 50 and 51 labels, still defined.
    assert 0 < split_half_js([51, 50, 0], splits=5)[0] < 0.3
    with pytest.raises(ValueError, match="integer label counts"):
        split_half_js([0.3, 0.7, 0.0])
    with pytest.raises(ValueError, match="splits"):
        split_half_js([50, 50], splits=0)


def rec(item: str, counts: Sequence[int], probs: Sequence[float], model: str = "m") -> Record:
    meta = {"human_counts": list(counts), "majority_label": "entailment"}
    return Record("chaosnli_snli", item, model, 0, 0, NLI, (0.0,) * 3, tuple(probs),
                  "entailment", "entailment", meta=meta)  # fmt: skip


ITEMS = {"a": [70, 20, 10], "b": [34, 33, 33], "c": [0, 90, 10]}


def test_human_line_is_the_item_mean_and_does_not_depend_on_the_other_items() -> None:
    records = [rec(i, c, (1 / 3, 1 / 3, 1 / 3)) for i, c in ITEMS.items()]
    (row,) = chaosnli.score_records(records, HumanBaseline(splits=7, seed=4))
    per_item = [split_half_js(c, 7, 4, i)[0] for i, c in ITEMS.items()]
    assert row["human"]["js_distance"] == pytest.approx(float(np.mean(per_item)), abs=1e-12)
    assert row["human"]["label"] == "human split-half (estimate, 7 splits)"
    # Seeded per item: scoring item "a" alone gives it the same halves.
    (alone,) = chaosnli.score_records(records[:1], HumanBaseline(splits=7, seed=4))
    assert alone["human"]["js_distance"] == pytest.approx(per_item[0], abs=1e-15)


def test_published_value_replaces_the_estimate_in_table_and_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = record_savefig(monkeypatch)
    records = [rec(i, c, (0.5, 0.3, 0.2)) for i, c in ITEMS.items()]
    records += [rec(i, c, (0.2, 0.3, 0.5), model="other") for i, c in ITEMS.items()]
    est_rows = chaosnli.score_records(records)
    table = render(chaosnli.format_table(est_rows), "md")
    assert "| human split-half (exact) | chaosnli_snli | - | 3 |" in table
    pub = chaosnli.score_records(records, HumanBaseline(published={"chaosnli_snli": 0.0712}))
    table = render(chaosnli.format_table(pub), "md")
    assert "| human (published) | chaosnli_snli | - | 3 | 0.0712 | - | - | - | - |" in table
    assert "estimate" not in table
    png = plots.plot_divergence(est_rows, tmp_path / "div.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    png = plots.plot_divergence(pub, tmp_path / "div_pub.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # What is drawn, from scipy on the items: a bar per system (m, other) in each of the
    # three panels, the uniform line on each bar, the human line as a marker per bar.
    humans = [np.array(c) / 100 for c in ITEMS.values()]
    js = {
        name: float(np.mean([jensenshannon(h, p) for h in humans]))
        for name, p in (("m", (0.5, 0.3, 0.2)), ("other", (0.2, 0.3, 0.5)))
    }
    chance = float(np.mean([jensenshannon(h, np.full(3, 1 / 3)) for h in humans]))
    estimate, published = saved.figures
    for fig, human in ((estimate, "human split-half (exact)"), (published, "human (published)")):
        first, *others = fig.axes
        assert [ax.get_ylabel() for ax in fig.axes] == [
            "JS distance", "JS divergence", "KL(human ‖ model)"
        ]  # fmt: skip
        assert [t.get_text() for t in others[-1].get_xticklabels()] == ["m k=0", "other k=0"]
        assert bars_of(first) == pytest.approx([js["m"], js["other"]])
        points = points_of(first)
        assert points["uniform distribution"] == [
            (0, pytest.approx(chance)),
            (1, pytest.approx(chance)),
        ]
        assert [x for x, _ in points[human]] == [0, 1]
    # The published value is the human line where it is given (JS distance), and only there.
    assert [y for _, y in points_of(published.axes[0])["human (published)"]] == [0.0712] * 2
    assert all("human (published)" not in points_of(ax) for ax in published.axes[1:])
    assert all("estimate" not in label for ax in published.axes for label in points_of(ax))


def test_common_items_keeps_only_items_every_system_scored() -> None:
    records = [rec(i, c, (1 / 3, 1 / 3, 1 / 3)) for i, c in ITEMS.items()]
    records.append(rec("a", ITEMS["a"], (0.8, 0.1, 0.1), model="short"))
    frame = chaosnli.common_items(chaosnli.item_frame(records))
    assert sorted(set(frame["item_id"])) == ["a"]
    result = chaosnli.report(records, n_bins=1, common=True)
    assert {r["model"]: r["n"] for r in result["scores"]} == {"m": 1, "short": 1}
    result = chaosnli.report(records, n_bins=1)
    assert {r["model"]: r["n"] for r in result["scores"]} == {"m": 3, "short": 1}
