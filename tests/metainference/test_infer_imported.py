"""``infer report`` on imported predictions (issue 29): labels of a model nlieval cannot
run, keyed by the ids ``infer build`` gives the inferred items, imported with ``--task
ITEMS/task.yaml``, and the model's labels on the source items imported as the source run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.cli import main
from nlieval.runs import RunFolder

A = "A man sleeps on a couch."
B = "Two dogs run in the snow."
SOURCE = {
    "e1": (A, "A person rests.", "entailment"),
    "n1": (A, "A man sleeps after work.", "neutral"),
    "c1": (A, "A man runs a marathon.", "contradiction"),
    "e2": (B, "Animals are outside.", "entailment"),
    "c2": (B, "Two cats sleep indoors.", "contradiction"),
}
# The model's labels on the reversals (b, a) of the source pairs, and on the source pairs.
ON_REVERSED = {"e1": "entailment", "e2": "contradiction", "n1": "neutral", "c1": "contradiction",
               "c2": "entailment"}  # fmt: skip
# Right on e1, n1, c1; wrong on e2 and c2.
ON_SOURCE = {"e1": "entailment", "e2": "neutral", "n1": "neutral", "c1": "contradiction",
             "c2": "entailment"}  # fmt: skip


@pytest.fixture()
def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    rows = [{"id": k, "premise": p, "hypothesis": h, "label": lab} for k, (p, h, lab) in
            SOURCE.items()]  # fmt: skip
    (tmp_path / "src.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    src = tmp_path / "src.yaml"
    src.write_text(
        "name: src\npath: src.jsonl\nfields: {id: id}\n"
        "labels: [entailment, neutral, contradiction]\n"
    )
    items = tmp_path / "inf"
    argv = ["infer", "build", "--task", str(src), "--patterns", "reversal", "--out", str(items)]
    assert main(argv) == 0
    ids = [json.loads(line)["id"] for line in (items / "items.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(f"inf:reversal:{k}" for k in SOURCE)  # the ids a file keys by
    inferred = tmp_path / "inferred.jsonl"
    inferred.write_text(
        "".join(json.dumps({"id": f"inf:reversal:{k}", "pred": v}) + "\n"
                for k, v in ON_REVERSED.items())
    )  # fmt: skip
    on_source = tmp_path / "source.csv"
    on_source.write_text("id,pred\n" + "".join(f"{k},{v}\n" for k, v in ON_SOURCE.items()))
    out = {"items": items, "run": tmp_path / "imp-inf", "source": tmp_path / "imp-src"}
    for path, task, folder in ((inferred, items / "task.yaml", out["run"]), (on_source, src,
                               out["source"])):  # fmt: skip
        argv = ["import", str(path), "--format", "labels", "--task", str(task)]
        assert main([*argv, "--model", "roberta-se", "--out", str(folder)]) == 0
    capsys.readouterr()
    return out


def _report(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, str], dict]:
    assert main(["infer", "report", *argv, "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "source items" not in captured.err  # no warning of missing source records
    return {(r["input"], r["subset"]): r for r in json.loads(captured.out)}


def test_imported_folder_is_reported_like_a_run(
    imported: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # The records carry the task's own name and the items' provenance, as a run's do.
    records = list(RunFolder(imported["run"]).records())
    assert {r.task for r in records} == {"inferred"}
    assert {r.item_id: r.meta["input"] for r in records}["inf:reversal:c2"] == "Cab"
    rows = _report([str(imported["run"]), "--items", str(imported["items"])], capsys)
    assert set(rows) == {("Eab", "all"), ("Nab", "all"), ("Cab", "all")}
    assert {(r["model"], r["k"], r["seed"]) for r in rows.values()} == {("roberta-se", 0, 0)}
    e = rows["Eab", "all"]
    # rev(e1) answered E, rev(e2) C. MC: E(a,b) leaves E or C for (b, a), both answers
    # allowed; SC: nothing follows; EI: E(a,b) rules out C(b,a), so the C answer is not.
    assert (e["count"], e["pred_E"], e["pred_C"], e["pred_N"]) == (2, 50.0, 50.0, 0.0)
    assert e["consistent"] == {"MC": 100.0, "SC": 100.0, "EI": 50.0}
    c = rows["Cab", "all"]
    # rev(c1) answered C, rev(c2) E. C(a,b) gives C(b,a) under MC and SC (one answer of
    # two right); under EI only E is ruled out: C and N are allowed, E is not.
    assert (c["count"], c["pred_E"], c["pred_C"]) == (2, 50.0, 50.0)
    assert c["consistent"] == {"MC": 50.0, "SC": 50.0, "EI": 50.0}
    n = rows["Nab", "all"]
    # rev(n1) answered N. N is unsatisfiable under MC (no verdict); under SC contradiction
    # is symmetric, so N(a,b) rules out C(b,a) only, and N is allowed; EI: nothing follows.
    assert (n["count"], n["pred_N"]) == (1, 100.0)
    assert n["consistent"] == {"MC": None, "SC": 100.0, "EI": 100.0}


def test_imported_source_folder_filters(
    imported: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(imported["run"]), "--items", str(imported["items"])]
    rows = _report([*argv, "--source-run", str(imported["source"])], capsys)
    assert len(rows) == 6
    assert rows["Eab", "all"]["count"] == rows["Cab", "all"]["count"] == 2
    # e2 and c2 were labelled wrong: what is left are rev(e1), answered E, and rev(c1),
    # answered C, both consistent under every reading, and rev(n1) as before.
    e, c, n = rows["Eab", "filtered"], rows["Cab", "filtered"], rows["Nab", "filtered"]
    assert (e["count"], e["pred_E"], c["count"], c["pred_C"]) == (1, 100.0, 1, 100.0)
    assert e["consistent"] == c["consistent"] == {"MC": 100.0, "SC": 100.0, "EI": 100.0}
    assert (n["count"], n["consistent"]) == (1, {"MC": None, "SC": 100.0, "EI": 100.0})


def test_a_source_folder_of_another_model_name_is_warned_of(
    imported: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same labels imported as "roberta": the filter looks sources up under the
    # inferred records' model (roberta-se), so none is found; the ids alone all match.
    other = tmp_path / "imp-src-other"
    argv = ["import", str(tmp_path / "source.csv"), "--format", "labels"]
    argv += ["--task", str(tmp_path / "src.yaml"), "--model", "roberta", "--out", str(other)]
    assert main(argv) == 0
    capsys.readouterr()
    argv = ["infer", "report", str(imported["run"]), "--items", str(imported["items"])]
    assert main([*argv, "--source-run", str(other), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "has records for 0 of the 5 source items under the run's model" in captured.err
    rows = json.loads(captured.out)
    assert [r["count"] for r in rows if r["subset"] == "filtered"] == [0, 0, 0]
