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
