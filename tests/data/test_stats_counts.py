"""Every count ``nlieval stats`` prints is the count of the items it read (issue 43,
rule 2): items, items per label, lines dropped or skipped, and the items per split of
the split table, each compared with the data file counted with plain json."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from nlieval.cli import main

LABELS = ("entailment", "neutral", "contradiction")


def _row(line: str) -> dict[str, str]:
    return dict(zip(("task", "split", "items", "labels"), line.split(None, 3), strict=False))


def _label_cells(line: str) -> dict[str, int]:
    return {
        k: int(v.replace(",", ""))
        for k, v in (cell.split("=") for cell in line.split() if "=" in cell)
        if k in LABELS
    }


def test_stats_counts_each_split_as_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test = [
        json.dumps({"id": f"t{i}", "p": "A b.", "h": "B c.", "y": LABELS[i % 3]}) for i in range(7)
    ]
    test.insert(2, "{not json")
    test.insert(5, json.dumps({"id": "nolabel", "p": "A.", "h": "B."}))
    pool = [json.dumps({"id": f"p{i}", "p": "C.", "h": "D.", "y": LABELS[i % 2]}) for i in range(4)]
    (tmp_path / "test.jsonl").write_text("\n".join(test) + "\n")
    (tmp_path / "pool.jsonl").write_text("\n".join(pool) + "\n")
    yaml = tmp_path / "t.yaml"
    yaml.write_text(
        "name: mine\npath: test.jsonl\npool: pool.jsonl\nlabels: [entailment, neutral, "
        "contradiction]\nfields: {id: id, premise: p, hypothesis: h, label: y}\n"
    )
    # Counted from the files: a row is an item when it is JSON with a label of the task.
    expected = {}
    for split, name in (("test", "test.jsonl"), ("train", "pool.jsonl")):
        good, bad = Counter[str](), 0
        for line in (tmp_path / name).read_text().splitlines():
            try:
                good[json.loads(line)["y"]] += 1
            except (ValueError, KeyError):
                bad += 1
        expected[split] = (good, bad)
    assert main(["stats", "--task", str(yaml), "--split", "all", "--skip-bad"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {_row(ln)["split"]: ln for ln in lines[2:4]}
    for split, (good, bad) in expected.items():
        line = rows[split]
        assert int(_row(line)["items"]) == sum(good.values())
        assert _label_cells(line) == {lab: good[lab] for lab in LABELS}
        assert (f"bad lines={bad}" in line) == (bad > 0), line
    assert lines[-1].split() == [
        "mine",
        str(sum(expected["train"][0].values())),
        str(sum(expected["test"][0].values())),
        "n/a",
    ]


@pytest.mark.data
def test_stats_of_snli_counts_the_files(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = {}
    for split in ("dev", "test"):
        path = data_dir / "snli" / f"snli_1.0_{split}.jsonl.gz"
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            golds = Counter(json.loads(line)["gold_label"] for line in fh if line.strip())
        expected[split] = golds
    assert main(["stats", "--task", "snli", "--split", "dev,test"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for line in lines[2:4]:
        golds = expected[_row(line)["split"]]
        assert int(_row(line)["items"].replace(",", "")) == sum(golds[lab] for lab in LABELS)
        assert _label_cells(line) == {lab: golds[lab] for lab in LABELS}
        assert f"gold label '-'={golds['-']:,}" in line
    dev, test = (f"{sum(expected[s][lab] for lab in LABELS):,}" for s in ("dev", "test"))
    assert lines[-1].split() == ["snli", dev, test, "n/a"]
