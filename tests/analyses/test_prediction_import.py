"""Importing classifiers' prediction files into run folders: each format on small
fixture files, bad input named by file, line and field, resuming, the CLI, and the real
Baan et al. (2022) files against counts and divergences computed here."""

from __future__ import annotations

import csv
import gzip
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

from nlieval.analyses import ImportedFile, ImportResult, predictions
from nlieval.analyses.imports import ImportConfig, import_predictions
from nlieval.cli import main
from nlieval.runs import RunFolder
from tests.helpers.records import saved_records

COUNTS = {"a1": [80, 15, 5], "a2": [10, 50, 40], "a3": [0, 0, 100]}
OLD = {"a1": "e", "a2": "c", "a3": "c"}
MAJ = {"a1": "e", "a2": "n", "a3": "c"}


@pytest.fixture()
def chaos_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data" / "chaosnli"
    folder.mkdir(parents=True)
    rows = [
        {
            "uid": uid,
            "label_counter": dict(zip("enc", c, strict=True)),
            "majority_label": MAJ[uid],
            "label_dist": [x / 100 for x in c],
            "label_count": c,
            "entropy": 0.0,
            "example": {"uid": uid, "premise": "P.", "hypothesis": "H.", "source": "t"},
            "old_label": OLD[uid],
        }
        for uid, c in COUNTS.items()
    ]
    (folder / "chaosNLI_snli.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "data"


def write_lines(path: Path, rows: Sequence[Any]) -> Path:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


# Baan et al. order: 0 = entailment, 1 = contradiction, 2 = neutral.
BAAN_ROWS = [
    {"index": 0, "true": 0, "pred": 0, "probs": [0.7, 0.1, 0.2], "uid": "a1"},
    {"index": 1, "true": 1, "pred": 2, "probs": [0.1, 0.3, 0.6], "uid": "a2"},
    {"index": 2, "true": 2, "pred": 2, "probs": [0.2, 0.2, 0.6], "uid": "not-in-chaosnli"},
]


def test_baan_file_is_reordered_and_matched_by_id(chaos_dir: Path, tmp_path: Path) -> None:
    f = write_lines(tmp_path / "SNLI_dev_roberta-base_3.jsonl.gz", BAAN_ROWS)
    out = tmp_path / "run"
    result = import_predictions(ImportConfig((str(f),), data_dir=str(chaos_dir)), out)
    (info,) = result.files
    assert (info.rows, info.matched, info.unmatched) == (3, 2, 1)
    assert (info.task, info.seed, info.model) == (
        "chaosnli_snli",
        3,
        "roberta-base (Baan 2022)",
    )
    # "true" 0 -> entailment (a1's original e), 1 -> contradiction (a2's original c).
    assert (info.gold_checked, info.gold_agree) == (2, 2)
    recs = {r.item_id: r for r in RunFolder(out).records()}
    assert set(recs) == {"a1", "a2"}
    assert recs["a2"].labels == ("entailment", "neutral", "contradiction")
    assert recs["a2"].probs == (0.1, 0.6, 0.3)
    assert recs["a2"].pred == "neutral" and recs["a2"].gold == "contradiction"
    assert recs["a2"].meta["human_counts"] == [10, 50, 40]
    # Scores on the 2 matched items, by hand: a1 right on both labels, a2 right on majority.
    (row,) = result.scores
    assert row["n"] == 2
    assert (row["acc_original"], row["acc_majority"]) == (0.5, 1.0)
    h = np.array([[0.8, 0.15, 0.05], [0.1, 0.5, 0.4]])
    m = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3]])
    assert row["js_distance"] == pytest.approx(np.mean(jensenshannon(h, m, axis=1)), abs=1e-12)
    assert row["kl"] == pytest.approx(np.mean(entropy(h, m, axis=1)), abs=1e-12)
    assert (out / "results.json").is_file()
    # Importing again writes nothing twice.
    import_predictions(ImportConfig((str(f),), data_dir=str(chaos_dir)), out)
    assert len(saved_records(out)) == 2


def test_official_format(chaos_dir: Path, tmp_path: Path) -> None:
    preds = {
        "bert": {
            "a1": {"uid": "a1", "predicted_probabilities": [0.6, 0.3, 0.1], "predicted_label": "e"},
            "a3": {"uid": "a3", "logits": [0.0, 0.0, math.log(2)], "predicted_label": "c"},
        },
        "xlnet": {"a2": {"uid": "a2", "logits": [0, 0, 0], "predicted_label": "neutral"}},
    }
    f = tmp_path / "preds.json"
    f.write_text(json.dumps(preds))
    cfg = ImportConfig((str(f),), task="chaosnli_snli", data_dir=str(chaos_dir))
    result = import_predictions(cfg, tmp_path / "run")
    assert [(i.model, i.matched) for i in result.files] == [("bert", 2), ("xlnet", 1)]
    recs = {(r.model, r.item_id): r for r in RunFolder(tmp_path / "run").records()}
    assert recs[("bert", "a3")].probs == pytest.approx((0.25, 0.25, 0.5))
    assert recs[("xlnet", "a2")].pred == "neutral"


def test_plain_jsonl_with_a_label_order(chaos_dir: Path, tmp_path: Path) -> None:
    f = write_lines(
        tmp_path / "mine.jsonl",
        [{"id": "a1", "probs": [0.5, 0.2, 0.3]}, {"uid": "a3", "logits": [0.0, 0.0, 0.0]}],
    )
    cfg = ImportConfig(
        (str(f),), task="chaosnli_snli", model="my-bert", seed=7,
        label_order=("e", "c", "n"), data_dir=str(chaos_dir),
    )  # fmt: skip
    import_predictions(cfg, tmp_path / "run")
    recs = {r.item_id: r for r in RunFolder(tmp_path / "run").records()}
    # File order e, c, n -> record order e, n, c; pred is the most probable label.
    assert recs["a1"].probs == (0.5, 0.3, 0.2) and recs["a1"].pred == "entailment"
    assert recs["a1"].model == "my-bert" and recs["a1"].seed == 7
    assert recs["a3"].probs == pytest.approx((1 / 3, 1 / 3, 1 / 3))


OK_E = '{"id": "a1", "probs": [1, 0, 0]}'
BAD_INPUT = [
    ("p.jsonl", [OK_E, '{"id": "a2"}'], r"p\.jsonl:2: no probabilities"),
    ("p.jsonl", ['{"id": "a1", "probs": [0.5, 0.6, 0]}'], r"p\.jsonl:1: probs must be >= 0"),
    ("p.jsonl", ['{"id": "a1", "probs": [0.5, 0.5]}'], r"p\.jsonl:1: probs: expected 3"),
    ("p.jsonl", ['{"probs": [0.5, 0.5, 0]}'], r"p\.jsonl:1: no item id"),
    ("p.jsonl", [OK_E, "{oops"], r"p\.jsonl:2: invalid JSON"),
    ("p.jsonl", ['{"id": "a1", "probs": [1, 0, 0], "pred": "x"}'], r"p\.jsonl:1: pred 'x'"),
    ("p.jsonl", [OK_E, OK_E], r"p\.jsonl:2: id 'a1' again"),
    ("SNLI_dev_b_0.jsonl", ['{"uid": "a1", "probs": [1, 0, 0], "pred": 5}'], r":1: pred must"),
    ("SNLI_dev_b_0.jsonl", ['{"uid": "a1", "probs": [1, 0, "x"]}'], r":1: probs must be a list"),
]


@pytest.mark.parametrize(("name", "lines", "message"), BAD_INPUT)
def test_bad_input_names_file_line_and_field(
    chaos_dir: Path, tmp_path: Path, name: str, lines: list[str], message: str
) -> None:
    f = write_lines(tmp_path / name, lines)
    cfg = ImportConfig((str(f),), task="chaosnli_snli", model="m", data_dir=str(chaos_dir))
    with pytest.raises(ValueError, match=message) as err:
        import_predictions(cfg, tmp_path / "run")
    assert "\n" not in str(err.value)
    # Every file is checked before the folder is made: nothing half-imported.
    assert not (tmp_path / "run").exists()


def test_missing_task_or_model_is_asked_for(chaos_dir: Path, tmp_path: Path) -> None:
    f = write_lines(tmp_path / "p.jsonl", ['{"id": "a1", "probs": [1, 0, 0]}'])
    with pytest.raises(ValueError, match="give --task"):
        import_predictions(ImportConfig((str(f),), data_dir=str(chaos_dir)), tmp_path / "r")
    cfg = ImportConfig((str(f),), task="chaosnli_snli", data_dir=str(chaos_dir))
    with pytest.raises(ValueError, match="give --model"):
        import_predictions(cfg, tmp_path / "r")
    assert predictions.detect_format("MNLI_test_roberta-base_2.json") == "baan2022"


def test_cli_import_then_chaosnli(
    chaos_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write_lines(tmp_path / "SNLI_test_bert-base-uncased_1.jsonl", BAAN_ROWS)
    out = tmp_path / "run"
    assert main(["chaosnli-import", str(f), "--out", str(out), "--data-dir", str(chaos_dir)]) == 0
    text = capsys.readouterr().out
    assert "| SNLI_test_bert-base-uncased_1.jsonl | bert-base-uncased (Baan 2022) | 1 |" in text
    assert "| 3 | 2 of 3 | 1 (not-in-chaosnli) | 1 (a3) | 2/2 |" in text
    assert main(["chaosnli", str(out), "--bins", "1", "--human-splits", "3"]) == 0
    text = capsys.readouterr().out
    assert "| bert-base-uncased (Baan 2022) | chaosnli_snli | 0 | 2 |" in text
    assert "human split-half (estimate, 3 splits)" in text
    bad = write_lines(tmp_path / "x.jsonl", ['{"id": "a1"}'])
    argv = ["chaosnli-import", str(bad), "--out", str(tmp_path / "r2"), "--task", "chaosnli_snli"]
    assert main([*argv, "--model", "m", "--data-dir", str(chaos_dir)]) == 2
    assert "x.jsonl:1: no probabilities" in capsys.readouterr().err


# --------------------------------------------------------------------------- real files


@pytest.mark.data
def test_real_baan_files_match_an_independent_count_and_divergence(
    data_dir: Path, tmp_path: Path
) -> None:
    folder = data_dir / "chaosnli" / "predictions_baan2022"
    files = [
        folder / "SNLI_dev_roberta-base_0.jsonl.gz",
        folder / "SNLI_test_roberta-base_0.jsonl.gz",
    ]
    chaos = {}
    with open(data_dir / "chaosnli" / "chaosNLI_snli.jsonl") as fh:
        for line in fh:
            row = json.loads(line)
            chaos[row["uid"]] = row["label_count"]
    probs = {}
    for f in files:
        with gzip.open(f, "rt") as fh:
            for line in fh:
                row = json.loads(line)
                probs[row["uid"]] = row["probs"]
    shared = set(probs) & set(chaos)
    result = import_predictions(ImportConfig(tuple(map(str, files))), tmp_path / "baan")
    assert sum(i.matched for i in result.files) == len(shared)
    assert all(i.gold_agree == i.gold_checked for i in result.files)
    (row,) = result.scores
    assert row["n"] == len(shared)
    ids = sorted(shared)
    human = np.array([chaos[u] for u in ids], dtype=float) / 100
    # Baan order e, c, n -> ChaosNLI order e, n, c; floor 1e-15 and renormalise.
    model = np.array([[probs[u][0], probs[u][2], probs[u][1]] for u in ids])
    model = np.where(model < 1e-15, 1e-15, model)
    model /= model.sum(axis=1, keepdims=True)
    assert row["js_distance"] == pytest.approx(
        np.mean(jensenshannon(human, model, axis=1)), abs=1e-9
    )
    assert row["kl"] == pytest.approx(np.mean(entropy(human, model, axis=1)), abs=1e-9)


def test_import_returns_a_typed_result_of_the_files_counts(tmp_path: Path) -> None:
    """The result is an ImportResult of one ImportedFile per prediction set, its counts
    those of the input files, counted here with the csv and json modules."""
    examples = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mismatched"
    with open(examples / "bert.csv", newline="") as fh:
        preds = {row["id"]: row["pred"] for row in csv.DictReader(fh)}
    with open(examples / "items.jsonl") as fh:
        gold = {row["id"]: row["label"] for row in map(json.loads, fh)}
    cfg = ImportConfig(
        (str(examples / "bert.csv"),), format="labels", task=str(examples / "task.yaml"),
        model="bert",
    )  # fmt: skip
    result = import_predictions(cfg, tmp_path / "run")
    assert isinstance(result, ImportResult)
    (info,) = result.files
    assert isinstance(info, ImportedFile)
    shared = set(preds) & set(gold)
    assert (info.file, info.model, info.seed, info.task) == (
        str(examples / "bert.csv"), "bert", 0, "mismatched-mini",
    )  # fmt: skip
    assert (info.rows, info.matched, info.task_items) == (len(preds), len(shared), len(gold))
    assert (info.unmatched, info.missing) == (len(set(preds) - shared), len(set(gold) - shared))
    assert result.scores == []  # not a ChaosNLI task: its scores are the results rows
    (row,) = result.rows
    right = sum(preds[i] == gold[i] for i in shared)
    assert (row["n"], row["accuracy"]) == (len(shared), pytest.approx(right / len(shared)))
