"""``nlieval import`` of predictions for any task: labels keyed by item id (the HANS
prediction files of McCoy et al. 2019 as a preset), ids the task lacks and items given
nothing counted and named, and the imported folder beside a language model's run in
``figure shots`` and ``items``."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from nlieval.analyses import predictions
from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.runs import RunFolder
from tests.helpers.hash_lm import HashLM

HANS_LABELS = ("entailment", "non-entailment")
# The official HANS evaluation file's columns (tab-separated, a header line).
HANS_HEAD = (
    "gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
    "sentence2_parse\tsentence1\tsentence2\tpairID\theuristic\tsubcase\ttemplate"
)
GOLD = {
    "ex0": "entailment",
    "ex1": "non-entailment",
    "ex2": "non-entailment",
    "ex3": "entailment",
    "ex4": "non-entailment",
    "ex5": "entailment",
}
# ex5 gets no prediction; ex99 is no item of the task.
PREDS = {
    "ex0": "entailment",
    "ex1": "contradiction",
    "ex2": "entailment",
    "ex3": "neutral",
    "ex4": "neutral",
    "ex99": "entailment",
}


@pytest.fixture()
def hans_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data" / "hans"
    folder.mkdir(parents=True)
    lines = [HANS_HEAD]
    for i, (pid, gold) in enumerate(GOLD.items()):
        s1, s2 = f"The doctor {i} saw the judge .", f"The judge saw the doctor {i} ."
        lines.append(f"{gold}\t-\t-\t-\t-\t{s1}\t{s2}\t{pid}\tlexical_overlap\tln_subject\ttemp{i}")
    (folder / "heuristics_evaluation_set.txt").write_text("\n".join(lines) + "\n")
    return tmp_path / "data"


@pytest.fixture()
def preds_file(tmp_path: Path) -> Path:
    path = tmp_path / "bert_preds.txt"
    path.write_text("pairID,gold_label\n" + "".join(f"{k},{v}\n" for k, v in PREDS.items()))
    return path


def test_real_hans_bert_predictions_read_as_labels() -> None:
    data = Path(os.environ.get("NLIEVAL_DATA_DIR", "../shared/data"))
    path = data / "hans" / "bert_preds.txt"
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    s = predictions.read_labels(path, HANS_LABELS, model="BERT", hans=True)
    # SOURCES.md: 30,000 rows, entailment 27,801 / contradiction 2,018 / neutral 181, so
    # 2,018 + 181 = 2,199 non-entailment on HANS's two labels.
    assert len(s.predictions) == 30000
    assert Counter(p.pred for p in s.predictions) == {"entailment": 27801, "non-entailment": 2199}
    assert s.predictions[0].item_id == "ex0" and s.predictions[0].probs == (1.0, 0.0)
    assert predictions.detect_format(path) == "hans"


def test_import_counts_and_names_what_does_not_match(
    hans_dir: Path, preds_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bert"
    argv = ["import", str(preds_file), "--task", "hans", "--model", "BERT"]
    assert main([*argv, "--data-dir", str(hans_dir), "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| bert_preds.txt | BERT | 0 | hans | 6 | 5 of 6 | 1 (ex99) | 1 (ex5) | - |" in table
    records = {r.item_id: r for r in RunFolder(out).records()}
    assert set(records) == {"ex0", "ex1", "ex2", "ex3", "ex4"}
    # neutral and contradiction are non-entailment on HANS's two labels.
    want = {k: "entailment" if v == "entailment" else "non-entailment" for k, v in PREDS.items()}
    assert {k: r.pred for k, r in records.items()} == {k: want[k] for k in records}
    assert {k: r.gold for k, r in records.items()} == {k: GOLD[k] for k in records}
    # Right by hand: ex0 (e = e), ex1 (c -> non-e = non-e), ex4 (n -> non-e = non-e).
    assert "| BERT | hans | 0 | 5 | 1 | 0.600 |" in table
    assert all(r.meta["label_only"] for r in records.values())
    # The same command again writes nothing new.
    before = (out / "records.jsonl").read_bytes()  # by hand: bytes
    assert main([*argv, "--data-dir", str(hans_dir), "--out", str(out)]) == 0
    assert (out / "records.jsonl").read_bytes() == before


def test_a_file_for_another_copy_of_the_task_is_refused(
    hans_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "preds.csv"
    path.write_text("id,pred\n1,entailment\n2,neutral\n")
    argv = ["import", str(path), "--task", "hans", "--model", "m", "--data-dir", str(hans_dir)]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "none of its 2 ids (first: 1, 2) names an item of hans" in err
    assert not (tmp_path / "r" / "records.jsonl").exists()


def test_imported_folder_joins_figure_shots_and_items(
    hans_dir: Path, preds_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bert = tmp_path / "bert"
    argv = ["import", str(preds_file), "--task", "hans", "--model", "BERT"]
    assert main([*argv, "--data-dir", str(hans_dir), "--out", str(bert)]) == 0
    lm = tmp_path / "lm"
    cfg = RunConfig("org/lm", ("hans",), shots=(0, 1), data_dir=str(hans_dir))
    run(cfg, lm, model=stand_in(cfg, lambda ck: HashLM()), progress=False)
    capsys.readouterr()
    png = tmp_path / "shots.png"
    argv = ["figure", "shots", str(lm), "--baseline", str(bert), "--out", str(png)]
    assert main(argv) == 0 and png.stat().st_size > 0
    capsys.readouterr()
    assert main(["items", str(lm), str(bert), "--max-rows", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert "BERT" in head
    col = head.index("BERT")
    shown = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        shown[cells[0]] = cells[col]
    want = {k: "entailment" if v == "entailment" else "non-entailment" for k, v in PREDS.items()}
    for item_id, cell in shown.items():
        if item_id in want and item_id != "ex99":
            assert cell.lower().startswith(want[item_id][:5])
    assert json.loads((bert / "config.json").read_text())["kind"] == "import"
