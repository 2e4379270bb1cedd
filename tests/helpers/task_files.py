"""Small task files written by tests: a jsonl of items and the task YAML that reads it."""

from __future__ import annotations

import json
from pathlib import Path


def premise_task(folder: Path, name: str, premises: dict[str, str]) -> Path:
    """The task YAML of ``name`` in ``folder``: one entailment item per id of ``premises``
    (that premise, the hypothesis "A cat sits."), three NLI labels."""
    with open(folder / "items.jsonl", "w") as f:
        for i, p in premises.items():
            row = {"id": i, "premise": p, "hypothesis": "A cat sits.", "label": "entailment"}
            f.write(json.dumps(row) + "\n")
    yaml = folder / "task.yaml"
    yaml.write_text(
        f"name: {name}\npath: items.jsonl\nlabels: [entailment, neutral, contradiction]\n"
        "fields: {id: id, premise: premise, hypothesis: hypothesis, label: label}\n"
    )
    return yaml


#: The cue word of each label in :func:`cue_task`'s hypotheses, and its nouns.
CUE = {"entailment": "a", "neutral": "the", "contradiction": "no"}
NOUNS = ["cat", "dog", "bird", "fish"]


def cue_task(folder: Path, train: int, test: int) -> str:
    """A task YAML in ``folder`` whose label a tiny encoder can learn from the
    hypothesis' first word (:data:`CUE`): a train split (its pool) of ``train`` items
    and a test split of ``test``, labels in turn."""
    import random

    import yaml

    for name, n, seed in (("train", train, 1), ("test", test, 2)):
        rng = random.Random(seed)
        rows = [
            {"id": f"{name}{i}", "premise": f"{rng.choice(NOUNS)} sees",
             "hypothesis": f"{CUE[list(CUE)[i % 3]]} {rng.choice(NOUNS)}",
             "label": list(CUE)[i % 3]}
            for i in range(n)
        ]  # fmt: skip
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    doc = {"path": "test.jsonl", "pool": "train.jsonl", "labels": list(CUE)}
    (folder / "syn.yaml").write_text(yaml.safe_dump(doc))
    return str(folder / "syn.yaml")
