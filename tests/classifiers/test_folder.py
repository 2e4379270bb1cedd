"""The classifier room reads a trained folder without torch: its description, its
seeds, which head it holds and the labels it answers are files and names, so the run's
config, the records' seeds and the resolving of a model string (``nlieval report``,
``nlieval run --model TRAIN_FOLDER`` before anything loads) import no model library."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Run in a fresh interpreter (nothing imported before) on a train folder made below.
READ_FOLDER = """
import json, sys
from nlieval.classifiers import (
    classifier_checkpoints, folder_head, label_mapping, parse_label_map, read_meta,
    training_seed,
)
root = sys.argv[1]
seeds = classifier_checkpoints(root)
print(json.dumps({
    "seeds": [p.name for p in seeds],
    "head": folder_head(seeds[0]),
    "labels": list(read_meta(seeds[0]).labels),
    "seed": training_seed(root, str(seeds[1])),
    "mapping": label_mapping(read_meta(seeds[0]).labels, ["entailment", "non-entailment"]),
    "map": parse_label_map("LABEL_0=e"),
    "loaded": sorted({"torch", "transformers", "peft"} & set(sys.modules)),
}))
"""


def _describe(folder: Path, labels: list[str]) -> None:
    folder.mkdir(parents=True)
    meta = {"format": "nlieval-pair-classifier", "version": 1, "labels": labels}
    (folder / "nlieval_classifier.json").write_text(json.dumps(meta))


def test_a_trained_folder_is_read_without_torch(tmp_path: Path) -> None:
    root = tmp_path / "train"
    for seed in (10, 2):  # seed order, not name order: seed2 before seed10
        _describe(root / f"seed{seed}", ["entailment", "neutral", "contradiction"])
    (root / "seed3").mkdir()  # no description: not a checkpoint
    out = subprocess.run(
        [sys.executable, "-c", READ_FOLDER, str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got == {
        "seeds": ["seed2", "seed10"],
        "head": "pair",
        "labels": ["entailment", "neutral", "contradiction"],
        "seed": 10,
        # A 3-way model on a 2-way task: neutral and contradiction are non-entailment.
        "mapping": [[0], [1, 2]],
        "map": ["LABEL_0=entailment"],
        "loaded": [],
    }
