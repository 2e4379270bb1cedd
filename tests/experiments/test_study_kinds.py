"""The output kinds the MisMatched and meta-inference studies need (``stats``,
``linking-phrases``, ``logic-table``) and the rule that an output over several blocks is
not written when one of them makes no cell. Expected values come from the papers' tables
(002 Table 11, 004 Table 2) and from hand counts."""

from __future__ import annotations

import json
from pathlib import Path

from nlieval.experiments import read_experiment, run_experiment

ITEMS = (
    '{"sentence1": "A dog runs fast.", "sentence2": "A dog moves.", "label": "entailment"}\n'
    '{"sentence1": "The cat sleeps.", "sentence2": "It rains today here.", "label": "neutral"}\n'
)
TASK = """\
name: tiny-stats
path: items.jsonl
fields: {premise: sentence1, hypothesis: sentence2}
labels: [entailment, neutral]
"""
EXPERIMENT = """\
experiment: kinds
backoff: 0
models:
  tiny: {model: MODEL}
blocks:
  base: {command: run, tasks: [smoke], limit: 2, shots: [0]}
  other: {command: run, tasks: [smoke], limit: 2, shots: [0]}
matrix:
  - {block: base, models: [tiny]}
  - {block: other, models: [tiny], tasks: []}
outputs:
  table-2: {kind: stats, label: Table 2, blocks: [other], tasks: [TASK]}
  table-11: {kind: linking-phrases, label: Table 11, blocks: [other]}
  logic: {kind: logic-table, label: Table 2 (004), blocks: [other], formulas: false,
          citations: true}
  both: {kind: grid, label: Table 5, blocks: [base, other]}
  one: {kind: grid, label: one block, blocks: [base]}
"""

# 002 Table 11, as printed.
TABLE_11 = {
    "Contrasting": "'However', 'On the other hand', 'In contrast', 'On the contrary'",
    "Reasoning": "'Therefore', 'Thus', 'Consequently', 'As a result', 'As a consequence', "
    "'From here, we can infer'",
    "Entailment": "'Specifically', 'Precisely', 'In particular', 'Particularly', 'That is', "
    "'In other words'",
}

# 004 Table 2's Paper column, as printed (★ Minervini & Riedel 2018, † Li et al. 2019,
# ‡ Jang et al. 2022); the other eleven relations have none.
PAPER_COLUMN = {
    "Eaa": ["★"],
    "Cab -> Cba": ["★", "†"],
    "Eab -> ~Cba": ["★"],
    "Nab -> ~Cba": ["★"],
    "Eab & Ebc -> Eac": ["★", "†"],
    "Eab & Cbc -> Cac": ["†"],
    "Nab & Ebc -> ~Cac": ["†"],
    "Nab & Cbc -> ~Eac": ["†"],
    "Eab & Cac -> Cbc": ["‡"],
    "Nab & Cac -> ~Ebc": ["‡"],
}


def test_study_kinds_and_outputs_missing_a_block(tmp_path: Path, tiny_llama: Path) -> None:
    (tmp_path / "items.jsonl").write_text(ITEMS)
    (tmp_path / "task.yaml").write_text(TASK)
    path = tmp_path / "e.yaml"
    path.write_text(
        EXPERIMENT.replace("MODEL", str(tiny_llama)).replace("TASK", str(tmp_path / "task.yaml"))
    )
    out = tmp_path / "out"
    assert not run_experiment(read_experiment(path), out).failed
    report = out / "report"

    # Written though their block makes no cell: they read data files, not cells.
    stats = (report / "table-2.md").read_text().splitlines()
    assert stats[0] == "```text"
    row = stats[3].split()
    # By hand: 2 items; premise words 4 and 3, hypothesis words 3 and 4 (means 3.5);
    # hypothesis words in the premise 2 of 3 and 0 of 4 (mean 33.3%).
    assert row[:3] == ["tiny-stats", "test", "2"]
    assert row[-3:] == ["3.5", "3.5", "33.3"]
    assert "\\toprule" in (report / "table-2.tex").read_text()

    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in (report / "table-11.md").read_text().splitlines()[2:]
    ]
    assert dict(rows) == TABLE_11
    assert list(dict(rows)) == list(TABLE_11)  # the paper's order

    logic = json.loads((report / "logic.json").read_text())
    cited = {r["relation"]: r["paper"] for r in logic if r["paper"]}
    assert cited == PAPER_COLUMN
    md = (report / "logic.md").read_text()
    assert "paper: ★ Minervini & Riedel (2018); † Li et al. (2019); ‡ Jang et al. (2022)" in md

    # A table over two blocks is not written from one of them under its label.
    index = (report / "index.md").read_text()
    assert "## Table 5: both (grid)\n\nnot written: skipped: other makes no cell" in index
    assert not (report / "both.md").exists()
    assert (report / "one.md").exists()

    # A second call: the same report, byte for byte.
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    again = run_experiment(read_experiment(path), out)
    assert not any(o.attempts for o in again.outcomes)
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before
