"""Commands on selections that miss labels: ``run --limit 12`` and ``train --limit 1000`` on
SciNLI's files (sorted by label) warn with the counts per label, and the printed table's
chance and gold counts are those of the items scored; a data file as ``--task`` keeps its
own ids through a run."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from nlieval.cli import main
from tests.helpers.records import saved_records


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def _table_row(out: str) -> dict[str, str]:
    """The printed table's one row, by column name."""
    table = [line for line in out.splitlines() if line.startswith("|")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    return dict(zip(head, (c.strip() for c in table[-1].strip("|").split("|")), strict=True))


def _labels(path: Path) -> list[str]:
    return [json.loads(line)["label"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_run_limit_12_on_scinli_warns_and_shows_random_chance_and_no_macro_f1(
    data_dir: Path,
    tiny_llama: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    gold = _labels(data_dir / "scinli" / "test.jsonl")
    assert Counter(gold[:12]) == {"contrasting": 12}  # the file is sorted by label
    assert Counter(gold) == dict.fromkeys(
        ["contrasting", "reasoning", "entailment", "neutral"], 1000
    )
    argv = ["run", "--model", str(tiny_llama), "--task", "scinli", "--limit", "12",
            "--shots", "0", "--data-dir", str(data_dir), "--out", str(tmp_path / "run"),
            "--no-progress"]  # fmt: skip
    with caplog.at_level(logging.WARNING):
        assert main(argv) == 0
    assert (
        "scinli test: --limit 12 takes the first 12 items, labelled contrasting=12 reasoning=0 "
        "entailment=0 neutral=0 (the split: contrasting=1,000 reasoning=1,000 entailment=1,000 "
        "neutral=1,000): no item labelled reasoning, entailment, neutral; --sample 12 takes a "
        "seeded sample stratified by label"
    ) in _warnings(caplog)
    row = _table_row(capsys.readouterr().out)
    # 12 items of one label: the random baseline is still the task's 1/K (K = 4 options),
    # never the gold prior of the items (1.0 here); macro F1 over one class is n/a.
    assert (row["n"], row["random (1/K)"], row["gold labels"]) == (
        "12",
        "0.250",
        "contrasting 12 reasoning 0 E 0 N 0",
    )
    assert row["macro F1"] == "n/a"
    # The warning is recorded with the run and said under every table made from it.
    warning = "scinli test: --limit 12 takes the first 12 items, labelled contrasting=12"
    assert warning in (tmp_path / "run" / "summary.md").read_text(encoding="utf-8")
    for command in (["grid"], ["report"], ["sci-report"]):
        assert main([*command, str(tmp_path / "run")]) == 0
        assert warning in capsys.readouterr().out, command


def test_run_sample_on_scinli_is_balanced_and_silent(
    data_dir: Path,
    tiny_llama: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    argv = ["run", "--model", str(tiny_llama), "--task", "scinli", "--sample", "8",
            "--shots", "0", "--data-dir", str(data_dir), "--out", str(tmp_path / "run"),
            "--no-progress"]  # fmt: skip
    with caplog.at_level(logging.WARNING):
        assert main(argv) == 0
    assert not [m for m in _warnings(caplog) if "labelled" in m]
    row = _table_row(capsys.readouterr().out)
    # 4 options: 1/4.
    assert (row["n"], row["random (1/K)"], row["gold labels"]) == (
        "8",
        "0.250",
        "contrasting 2 reasoning 2 E 2 N 2",
    )


def test_a_data_file_as_task_keeps_its_ids_through_a_run(
    tiny_llama: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"id": f"q{i}", "premise": "A dog runs.", "hypothesis": "An animal moves.", "label": lab}
        for i, lab in enumerate(["entailment", "neutral", "contradiction"] * 2)
    ]
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    argv = ["run", "--model", str(tiny_llama), "--task", str(data), "--shots", "0,1",
            "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    records = saved_records(out)
    assert {r.task for r in records} == {"mine"}
    assert sorted({r.item_id for r in records}) == [f"q{i}" for i in range(6)]
    # The one-shot examples come from the file itself, never the item's own.
    one_shot = [r for r in records if r.k == 1]
    assert len(one_shot) == 6 and all(r.item_id not in r.shots for r in one_shot)
    assert "| mine | 0 | 6 |" in capsys.readouterr().out.replace(str(tiny_llama), "M")
