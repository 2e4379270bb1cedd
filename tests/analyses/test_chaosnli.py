"""ChaosNLI analyses: hand-checked divergences and accuracies on synthetic records, the
official prediction-file format, and an independent scipy check on the published samples."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial import distance
from scipy.special import softmax
from scipy.stats import entropy

from nlieval.analyses import chaosnli
from nlieval.choice import RunConfig
from nlieval.cli.analyses import CHAOSNLI_JSON, add_commands
from nlieval.ground import render
from nlieval.runs import RunFolder
from nlieval.types import Record

NLI = ("entailment", "neutral", "contradiction")
ALPHA = ("1", "2")


def rec(
    item_id: str,
    probs: Sequence[float],
    pred: str | None,
    gold: str,
    counts: Sequence[int],
    majority: str,
    *,
    model: str = "m",
    k: int = 0,
    seed: int = 0,
    labels: Sequence[str] = NLI,
    task: str = "chaosnli_snli",
) -> Record:
    # A bogus stored entropy: the analyses must compute it from the counts.
    meta = {"human_counts": list(counts), "majority_label": majority, "entropy": 9.9}
    return Record(
        task, item_id, model, k, seed, tuple(labels), (0.0,) * len(labels), tuple(probs),
        pred, gold, meta=meta,
    )  # fmt: skip


# --------------------------------------------------------------------------- divergences


def test_divergences_by_hand_and_clipping() -> None:
    # Human 50/50 against a model sure of the first label: the zero is raised to 1e-15.
    d = chaosnli.divergences([[50, 50]], [[1.0, 0.0]])
    m1 = 1e-15 / (1 + 1e-15)
    kl = 0.5 * math.log(0.5 / (1 - m1)) + 0.5 * math.log(0.5 / m1)
    jsd = 0.5 * (0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25) + math.log(1 / 0.75))
    assert d["kl"] == pytest.approx(kl, abs=1e-9)
    assert d["kl"] == pytest.approx(16.5763, abs=1e-4)
    assert d["js_divergence"] == pytest.approx(jsd, abs=1e-12)
    assert d["js_distance"] == pytest.approx(math.sqrt(jsd), abs=1e-12)
    assert d["n"] == 1


def test_kl_direction_is_human_given_model() -> None:
    # KL(human || model) is ln 2 here; the reverse direction would be huge (zero human mass).
    d = chaosnli.divergences([[100, 0]], [[0.5, 0.5]])
    assert d["kl"] == pytest.approx(math.log(2), abs=1e-12)


def test_counts_and_distributions_agree_and_means_are_per_item() -> None:
    counts = [[30, 70, 0], [10, 10, 80]]
    model = [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]
    a = chaosnli.divergences(counts, model)
    b = chaosnli.divergences(np.asarray(counts) / 100, model)
    assert a == pytest.approx(b)
    per = chaosnli.item_divergences(counts, model)
    assert per["kl"][1] == pytest.approx(0.0, abs=1e-12)
    assert a["kl"] == pytest.approx(per["kl"].mean())
    assert a["js_divergence"] == pytest.approx(float(np.mean(per["js_distance"] ** 2)))


def test_rounding_nan_is_zero_as_in_the_reference() -> None:
    # scipy's JS of equal distributions can be sqrt(-tiny) = nan; the reference uses 0.
    d = chaosnli.item_divergences([[60, 30, 10]] * 2, [[0.6, 0.3, 0.1], [np.nan, 0.5, 0.5]])
    assert d["js_distance"][0] == 0.0
    assert np.isnan(d["js_distance"][1])


def test_uniform_baseline_by_hand() -> None:
    r = rec("1", (0.2, 0.3, 0.5), "entailment", "entailment", (100, 0, 0), "entailment")
    row = chaosnli.score_records([r])[0]
    assert row["uniform"]["kl"] == pytest.approx(math.log(3), abs=1e-12)
    jsd = 0.5 * (math.log(1.5) + math.log(2) / 3)
    assert row["uniform"]["js_divergence"] == pytest.approx(jsd, abs=1e-12)
    assert row["uniform"]["js_distance"] == pytest.approx(math.sqrt(jsd), abs=1e-12)


def test_option_order_is_put_in_chaosnli_order() -> None:
    counts = (20, 30, 50)
    canon = rec("1", (0.1, 0.3, 0.6), "contradiction", "neutral", counts, "contradiction")
    shuffled = rec(
        "1", (0.6, 0.1, 0.3), "contradiction", "neutral", counts, "contradiction",
        labels=("contradiction", "entailment", "neutral"),
    )  # fmt: skip
    a, b = chaosnli.score_records([canon])[0], chaosnli.score_records([shuffled])[0]
    for m in chaosnli.METRICS:
        assert a[m] == pytest.approx(b[m])
    with pytest.raises(ValueError, match="label set"):
        chaosnli.canonical_order(["entailment", "non-entailment"])


# --------------------------------------------------------------------------- accuracies


def test_accuracies_against_both_labels_and_seeds() -> None:
    c = (10, 20, 70)
    seed0 = [
        rec("1", (0.1, 0.1, 0.8), "contradiction", "contradiction", c, "contradiction"),
        rec("2", (0.8, 0.1, 0.1), "entailment", "entailment", c, "contradiction"),
        rec("3", (0.1, 0.8, 0.1), "neutral", "contradiction", c, "neutral"),
        rec("4", (0.1, 0.8, 0.1), None, "neutral", c, "neutral"),  # unparsed: wrong
    ]
    seed1 = [
        rec("1", (0.8, 0.1, 0.1), "entailment", "contradiction", c, "contradiction", seed=1),
        rec("2", (0.8, 0.1, 0.1), "entailment", "entailment", c, "contradiction", seed=1),
        rec("3", (0.1, 0.8, 0.1), "neutral", "contradiction", c, "neutral", seed=1),
    ]
    other = Record("smoke", "9", "m", 0, 0, NLI, (0.0,) * 3, (1 / 3,) * 3, "neutral", "neutral")
    rows = chaosnli.score_records([*seed0, *seed1, other])
    assert len(rows) == 1  # the smoke record has no human labels: ignored
    row = rows[0]
    # Item 4 lacks seed 1, so both seeds are scored on items 1-3.
    assert row["n"] == 3 and row["seeds"] == [0, 1]
    assert row["acc_original"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert row["acc_original_std"] == pytest.approx(math.sqrt(2) / 6)
    assert row["acc_majority"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    only0 = chaosnli.score_records(seed0)[0]
    assert (only0["acc_original"], only0["acc_majority"], only0["n"]) == (0.5, 0.5, 4)
    assert only0["acc_original_std"] == 0.0


def test_groups_by_model_checkpoint_task_and_k() -> None:
    c = (50, 50)
    recs = [
        rec("1", (0.5, 0.5), "1", "1", c, "1", k=k, model=m, labels=ALPHA, task="chaosnli_alphanli")
        for m in ("a", "b")
        for k in (0, 4)
    ]
    rows = chaosnli.score_records(recs)
    assert [(r["model"], r["k"]) for r in rows] == [("a", 0), ("a", 4), ("b", 0), ("b", 4)]
    assert all(r["checkpoint"] is None and r["kl"] == pytest.approx(0.0) for r in rows)


# --------------------------------------------------------------------------- entropy bins


def test_bin_edges_follow_the_reference() -> None:
    edges = chaosnli.bin_edges([0, 0, 0, 1, 1, 2], 2)
    assert edges.tolist() == [0.0, 0.5, 2.0]
    # Left-closed bins, the last one closed on the right as well.
    assert chaosnli.assign_bins([0, 0.5, 1, 2], edges).tolist() == [0, 1, 1, 1]
    with pytest.raises(ValueError):
        chaosnli.bin_edges([1.0], 0)


def test_entropy_bins_from_counts() -> None:
    # Ten alpha-NLI items of rising entropy; the model is right on the five clearest.
    recs = []
    for i in range(10):
        counts = (100 - 5 * i, 5 * i)
        pred = "1" if i < 5 else "2"
        recs.append(
            rec(str(i), (0.9, 0.1), pred, "1", counts, "1", labels=ALPHA, task="chaosnli_alphanli")
        )
    rows = chaosnli.entropy_bins(recs, 5)
    assert [r["n"] for r in rows] == [2, 2, 2, 2, 2]
    assert [r["acc_original"] for r in rows] == [1.0, 1.0, 0.5, 0.0, 0.0]
    assert rows[0]["lo"] == 0.0
    assert rows[-1]["hi"] == pytest.approx(entropy([55, 45], base=2))
    assert [r["bin"] for r in rows] == [0, 1, 2, 3, 4]
    assert len(chaosnli.entropy_bins(recs, 2)) == 2
    # All items share one entropy: one non-empty bin, no rows for empty ones.
    same = [rec(str(i), (0.9, 0.1), "1", "1", (50, 50), "1", labels=ALPHA) for i in range(4)]
    assert [r["n"] for r in chaosnli.entropy_bins(same, 3)] == [4]


def _wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    # The Wilson score interval, by its textbook formula (z: the 97.5% normal quantile).
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_entropy_bins_have_a_wilson_interval_in_rows_table_and_figure(tmp_path: Path) -> None:
    # Six alpha-NLI items in three bins of two: right on 2, 1 and 0 of them.
    recs = [
        rec(str(i), (0.9, 0.1), "1" if i < 3 else "2", "1", (100 - 10 * i, 10 * i), "1",
            labels=ALPHA, task="chaosnli_alphanli")
        for i in range(6)
    ]  # fmt: skip
    rows = chaosnli.entropy_bins(recs, 3)
    assert [(r["n"], r["acc_original"]) for r in rows] == [(2, 1.0), (2, 0.5), (2, 0.0)]
    for r, right in zip(rows, (2, 1, 0), strict=True):
        low, high = _wilson(right, 2)
        assert r["acc_original_low"] == pytest.approx(max(low, 0.0), abs=1e-9)
        assert r["acc_original_high"] == pytest.approx(min(high, 1.0), abs=1e-9)
        assert r["acc_interval"] == "95% Wilson"
    # 2 of 2: the lower end is n / (n + z^2) = 2 / 5.8415 = 0.342; 1 of 2: 0.095 to 0.905.
    table = render(chaosnli.format_bins_table(rows), "md").splitlines()
    head = "| model | task | k | entropy (bits) | n | acc original [95% Wilson] |"
    assert table[0].startswith(head)
    assert "| 2 | 1.000 [0.342, 1.000] | 1.000 [0.342, 1.000] |" in table[2]
    assert "| 2 | 0.500 [0.095, 0.905] |" in table[3]
    assert table[-1].startswith("[ , ]: 95% Wilson interval of the accuracy over the bin's n")
    from matplotlib.image import imread

    from nlieval.plotting import plot_accuracy_by_entropy

    # The figure draws the band (its legend says which interval) and still saves.
    path = plot_accuracy_by_entropy(rows, tmp_path / "bins.png", "original", width=3.3)
    assert imread(path).shape[1] == 990


def test_tables_say_how_many_seeds_are_behind_each_plus_minus() -> None:
    c = (10, 20, 70)

    def point(model: str, seeds: int) -> list[Record]:
        return [
            rec(str(i), (0.1, 0.1, 0.8), ("contradiction", "neutral")[(i + s) % 2],
                "contradiction", c, "contradiction", model=model, seed=s)
            for s in range(seeds)
            for i in range(4)
        ]  # fmt: skip

    # Each seed is right on 2 of 4: accuracy 0.5 ± 0.
    same = render(
        chaosnli.format_table(chaosnli.score_records(point("a", 2) + point("b", 2))), "md"
    )
    assert "| a | chaosnli_snli | 0 | 4 |" in same and "(2 seeds)" not in same
    assert same.splitlines()[-2:] == ["", "± sample standard deviation over 2 seeds"]
    mixed = chaosnli.score_records(point("a", 2) + point("b", 3))
    text = render(chaosnli.format_table(mixed), "md")
    assert "0.5000 ± 0.0000 (2 seeds)" in text and "0.5000 ± 0.0000 (3 seeds)" in text
    assert text.splitlines()[-1] == "± sample standard deviation over the seeds each cell names"
    bins = render(
        chaosnli.format_bins_table(chaosnli.entropy_bins(point("a", 2) + point("b", 3), 1)), "md"
    )
    assert "(3 seeds)" in bins and bins.endswith("over the seeds each cell names")
    # One seed: no ±, no note.
    assert "±" not in render(chaosnli.format_table(chaosnli.score_records(point("a", 1))), "md")


# --------------------------------------------------------------------------- all correct


def test_all_correct_subset() -> None:
    c = (60, 30, 10)

    def model(name: str, right: set[str]) -> list[Record]:
        return [
            rec(i, (0.6, 0.3, 0.1), "entailment" if i in right else "neutral", "entailment",
                c, "neutral" if i == "3" else "entailment", model=name)
            for i in ("1", "2", "3")
        ]  # fmt: skip

    recs = model("a", {"1", "2"}) + model("b", {"2", "3"})
    (subset,) = chaosnli.all_correct_subset(recs)
    assert subset["item_ids"] == ["2"] and subset["n_items"] == 3
    assert subset["n_all_correct"] == 1 and len(subset["systems"]) == 2
    assert [r["acc_original"] for r in subset["rows"]] == [1.0, 1.0]
    (by_majority,) = chaosnli.all_correct_subset(recs, against="majority")
    # Item 3's majority label is neutral: a (neutral there) is right, b is not.
    assert by_majority["item_ids"] == ["2"]
    assert "1 of 3 items" in render(chaosnli.format_all_correct([subset]), "md")


# --------------------------------------------------------------------------- prediction files


def _chaos_rows() -> list[dict[str, Any]]:
    rows = []
    for uid, counts, old, maj in [
        ("a1", [80, 15, 5], "e", "e"),
        ("a2", [10, 50, 40], "c", "n"),
        ("a3", [0, 0, 100], "c", "c"),
    ]:
        rows.append(
            {
                "uid": uid,
                "label_counter": dict(zip("enc", counts, strict=True)),
                "majority_label": maj,
                "label_dist": [x / 100 for x in counts],
                "label_count": counts,
                "entropy": 0.0,
                "example": {"uid": uid, "premise": "P.", "hypothesis": "H.", "source": "t"},
                "old_label": old,
            }
        )
    return rows


@pytest.fixture()
def tiny_chaos(tmp_path: Path) -> Path:
    folder = tmp_path / "data" / "chaosnli"
    folder.mkdir(parents=True)
    lines = "".join(json.dumps(r) + "\n" for r in _chaos_rows())
    (folder / "chaosNLI_snli.jsonl").write_text(lines)
    return tmp_path / "data"


def test_prediction_file_logits_and_probabilities(tiny_chaos: Path, tmp_path: Path) -> None:
    logits = {"a1": [2.0, 0.0, -1.0], "a2": [0.0, 1.0, 1.0], "a3": [-30.0, -30.0, 40.0]}
    preds = {
        "with-logits": {
            u: {"uid": u, "logits": v, "predicted_label": lab}
            for (u, v), lab in zip(logits.items(), ["entailment", "neutral", "c"], strict=True)
        },
        "with-probs": {
            u: {"uid": u, "predicted_probabilities": [1 / 3] * 3, "predicted_label": "entailment"}
            for u in logits
        },
    }
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(preds))
    rows = chaosnli.score_prediction_file(path, "chaosnli_snli", tiny_chaos)
    assert [r["model"] for r in rows] == ["with-logits", "with-probs"]
    first, second = rows
    assert (first["acc_original"], first["acc_majority"], first["n"]) == (2 / 3, 1.0, 3)
    assert (second["acc_original"], second["acc_majority"]) == (1 / 3, 1 / 3)
    human = np.array([r["label_count"] for r in _chaos_rows()]) / 100
    model = np.array([softmax(v) for v in logits.values()])
    model = np.where(model < 1e-15, 1e-15, model)
    model /= model.sum(axis=1, keepdims=True)
    kl = np.mean([entropy(h, m) for h, m in zip(human, model, strict=True)])
    assert first["kl"] == pytest.approx(kl, abs=1e-12)
    assert second["js_distance"] == pytest.approx(second["uniform"]["js_distance"])
    assert first["k"] is None and first["seeds"] == []
    table = render(chaosnli.format_table(rows), "md")
    assert "uniform (baseline)" in table and "with-logits" in table


def test_prediction_file_errors(tiny_chaos: Path, tmp_path: Path) -> None:
    path = tmp_path / "preds.json"
    path.write_text(json.dumps({"m": {"a1": {"logits": [0, 0, 0], "predicted_label": "e"}}}))
    with pytest.raises(ValueError, match="no prediction for 2 of 3"):
        chaosnli.score_prediction_file(path, "chaosnli_snli", tiny_chaos)
    bad = {u: {"logits": [0, 0, 0], "predicted_label": "maybe"} for u in ("a1", "a2", "a3")}
    path.write_text(json.dumps({"m": bad}))
    with pytest.raises(ValueError, match="maybe"):
        chaosnli.score_prediction_file(path, "chaosnli_snli", tiny_chaos)
    path.write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="expected"):
        chaosnli.score_prediction_file(path, "chaosnli_snli", tiny_chaos)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser


def test_cli_chaosnli_on_a_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.start(RunConfig(model="m", tasks=("chaosnli_snli",), shots=(0, 2)))
    c = (60, 30, 10)
    folder.append(
        [
            rec(str(i), (0.6, 0.3, 0.1), "entailment", "entailment" if i % 2 else "neutral", c,
                "entailment", k=k)
            for i in range(6)
            for k in (0, 2)
        ]
    )  # fmt: skip
    before = sorted(p.name for p in folder.path.iterdir())
    args = _parser().parse_args(["chaosnli", str(folder.path), "--bins", "2"])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "JS distance" in out and "uniform (baseline)" in out
    # A report leaves its input folder as it was, unless asked to write (issue 31, point 7).
    assert sorted(p.name for p in folder.path.iterdir()) == before
    assert "written" not in out
    elsewhere = tmp_path / "scores"
    args = _parser().parse_args(
        ["chaosnli", str(folder.path), "--bins", "2", "--out", str(elsewhere)]
    )
    assert args.handler(args) == 0
    assert f"written: {elsewhere / CHAOSNLI_JSON}" in capsys.readouterr().out
    assert sorted(p.name for p in folder.path.iterdir()) == before
    args = _parser().parse_args(["chaosnli", str(folder.path), "--bins", "2", "--write"])
    assert args.handler(args) == 0
    assert json.loads((elsewhere / CHAOSNLI_JSON).read_text()) == json.loads(
        (folder.path / CHAOSNLI_JSON).read_text()
    )
    saved = json.loads((folder.path / CHAOSNLI_JSON).read_text())
    assert [r["k"] for r in saved["scores"]] == [0, 2]
    assert saved["scores"][0]["acc_original"] == 0.5
    assert saved["scores"][0]["acc_majority"] == 1.0
    assert saved["all_correct"][0]["n_all_correct"] == 3


def test_cli_chaosnli_score(
    tiny_chaos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.json"
    preds = {u: {"predicted_probabilities": [0.2, 0.3, 0.5], "predicted_label": "contradiction"}
             for u in ("a1", "a2", "a3")}  # fmt: skip
    path.write_text(json.dumps({"x": preds}))
    argv = ["chaosnli-score", str(path), "--task", "chaosnli_snli", "--data-dir", str(tiny_chaos)]
    args = _parser().parse_args([*argv, "--json", str(tmp_path / "s.json")])
    assert args.handler(args) == 0
    assert "| x | chaosnli_snli | - | 3 |" in capsys.readouterr().out
    saved = json.loads((tmp_path / "s.json").read_text())
    assert saved["scores"][0]["acc_original"] == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- published samples

SAMPLES = [
    ("snli_random_baseline.json", "chaosnli_snli", "chaosNLI_snli.jsonl", 1514),
    ("mnli_random_baseline.json", "chaosnli_mnli", "chaosNLI_mnli_m.jsonl", 1599),
    ("abdnli_random_baseline.json", "chaosnli_alphanli", "chaosNLI_alphanli.jsonl", 1532),
]
NLI_SHORT = {"entailment": "e", "neutral": "n", "contradiction": "c"}


def _find(root: Path, name: str) -> Path:
    found = sorted(root.rglob(name))
    if not found:
        pytest.skip(f"{name} is not under {root}")
    return found[0]


def _independent(pred_path: Path, data_path: Path) -> dict[str, float]:
    """The reference computation, item by item, straight from the raw files."""
    preds = json.loads(pred_path.read_text())["random_baseline"]
    js, kl, old, new = [], [], [], []
    for line in data_path.read_text().splitlines():
        item = json.loads(line)
        p = preds[item["uid"]]
        m = np.asarray(p["predicted_probabilities"], dtype=float)
        m[np.abs(m) < 1e-15] = 1e-15
        m = m / m.sum()
        h = np.asarray(item["label_dist"], dtype=float)
        js.append(float(distance.jensenshannon(h, m)))
        kl.append(float(entropy(h, m)))
        label = p["predicted_label"]
        label = NLI_SHORT.get(label, label)
        old.append(label == item["old_label"])
        new.append(label == item["majority_label"])
    return {
        "js_distance": float(np.mean(js)),
        "js_divergence": float(np.mean(np.square(js))),
        "kl": float(np.mean(kl)),
        "acc_original": float(np.mean(old)),
        "acc_majority": float(np.mean(new)),
        "n": len(js),
    }


@pytest.mark.data
@pytest.mark.parametrize(("pred_file", "task", "data_file", "n"), SAMPLES)
def test_random_baseline_samples_match_scipy(
    data_dir: Path, pred_file: str, task: str, data_file: str, n: int
) -> None:
    pred_path = _find(data_dir, pred_file)
    (row,) = chaosnli.score_prediction_file(pred_path, task, data_dir)
    expected = _independent(pred_path, _find(data_dir, data_file))
    assert row["n"] == expected["n"] == n
    for name in ("js_distance", "js_divergence", "kl", "acc_original", "acc_majority"):
        assert row[name] == pytest.approx(expected[name], abs=1e-6), name
    # Random guesses: near chance accuracy, and worse than a uniform distribution.
    chance = 1 / (2 if task.endswith("alphanli") else 3)
    assert abs(row["acc_original"] - chance) < 0.06
    assert row["js_distance"] > row["uniform"]["js_distance"]


@pytest.mark.data
def test_entropy_bins_on_real_items_are_near_equal(data_dir: Path) -> None:
    frame = chaosnli.prediction_frame(
        _find(data_dir, "snli_random_baseline.json"), "chaosnli_snli", data_dir
    )
    rows = chaosnli.entropy_bins(frame, 5)
    sizes = [r["n"] for r in rows]
    assert sum(sizes) == 1514 and len(sizes) == 5
    assert max(sizes) - min(sizes) < 0.1 * 1514 / 5
    raw = [json.loads(x) for x in _find(data_dir, "chaosNLI_snli.jsonl").read_text().splitlines()]
    stored = np.array([r["entropy"] for r in raw])
    ours = frame.set_index("item_id").loc[[r["uid"] for r in raw], "entropy"].to_numpy()
    assert np.allclose(ours, stored, atol=1e-12)


@pytest.mark.parametrize(
    ("prediction", "message"),
    [
        ({"predicted_probabilities": [-0.2, 0.6, 0.6]}, "must be >= 0 and sum to 1"),
        ({"predicted_probabilities": [float("nan"), 0.5, 0.5]}, "must be finite"),
        ({"predicted_probabilities": [0.2, 0.2, 0.2]}, "sum to 1"),
        ([0.2, 0.3, 0.5], "must be an object"),
        ({"logits": ["a", 1, 2]}, "list of numbers"),
    ],
)
def test_bad_prediction_entries_are_named(prediction: object, message: str) -> None:
    # Before: negative or NaN probabilities made JS and KL inf for the whole model, and a
    # list in place of an object was a traceback.
    from nlieval.analyses.predictions import official_prediction

    with pytest.raises(ValueError, match=message) as err:
        official_prediction(prediction, NLI, "f.json: 'm' 'uid1'")
    assert str(err.value).startswith("f.json: 'm' 'uid1'")


@pytest.mark.parametrize("counts", [[[0, 0, 0]], [[-5, 50, 55]], [[float("nan"), 1, 1]]])
def test_bad_human_counts_are_refused(counts: list[list[float]]) -> None:
    with pytest.raises(ValueError, match="human"):
        chaosnli.human_distribution(counts)
