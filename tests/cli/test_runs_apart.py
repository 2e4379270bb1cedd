"""Two run folders of one model (two templates) are two systems in every table command
that reads several folders: report, breakdown, items, chaosnli and grid show a row or
column per folder named by what differs in config.json, or by --name; report and
breakdown pool them only with --pool; what cannot be told apart is refused in one line.

The folders are written by hand: four smoke items, all gold entailment, the ChaosNLI
human counts 80/10/10. Folder ``plain`` predicts E, E, E, N (3 of 4 right: 0.750), folder
``hyp`` E, N, N, N (1 of 4: 0.250); pooled, 4 of 8 records are right (0.500, n=8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.cli import main
from nlieval.runs import RunFolder
from nlieval.types import Record

LABELS = ("entailment", "neutral", "contradiction")
PLAIN = ("entailment", "entailment", "entailment", "neutral")
HYP = ("entailment", "neutral", "neutral", "neutral")


def _folder(folder: Path, template: str, preds: tuple[str, ...], k: int = 0) -> str:
    folder.mkdir()
    config = {"model": "m", "tasks": ["smoke"], "template": template, "shots": [k]}
    (folder / "config.json").write_text(json.dumps(config))
    meta = {"human_counts": [80, 10, 10], "majority_label": "entailment"}
    RunFolder(folder).append(
        [
            Record("smoke", f"smoke-0{i + 1}", "m", k, 0, LABELS, (-1.0, -2.0, -3.0),
                   (0.6, 0.3, 0.1), pred, "entailment", meta=meta)
            for i, pred in enumerate(preds)
        ]
    )  # fmt: skip
    return str(folder)


@pytest.fixture
def two(tmp_path: Path) -> tuple[str, str]:
    return _folder(tmp_path / "plain", "plain.yaml", PLAIN), _folder(
        tmp_path / "hyp", "prompts/hyp.yaml", HYP
    )


def _rows(out: str) -> list[list[str]]:
    # The table's rows are the lines that open with |: notes may follow the table.
    lines = [line for line in out.splitlines()[2:] if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


def test_report_shows_a_row_per_folder_pools_on_request_and_takes_names(
    two: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    plain, hyp = two
    assert main(["report", plain, hyp, "--no-write"]) == 0
    # model, task, k, n, seeds, accuracy: each folder on its own 4 items.
    assert [r[:6] for r in _rows(capsys.readouterr().out)] == [
        ["m (template=hyp.yaml)", "smoke", "0", "4", "1", "0.250"],
        ["m (template=plain.yaml)", "smoke", "0", "4", "1", "0.750"],
    ]
    assert main(["report", plain, hyp, "--no-write", "--pool"]) == 0
    assert [r[:6] for r in _rows(capsys.readouterr().out)] == [
        ["m", "smoke", "0", "8", "1", "0.500"]
    ]
    names = ["--name", f"{plain}=Llama 8B", "--name", "m (template=hyp.yaml)=Llama 8B, hyp"]
    assert main(["report", plain, hyp, "--no-write", *names]) == 0
    assert [r[0] for r in _rows(capsys.readouterr().out)] == ["Llama 8B", "Llama 8B, hyp"]
    # A NAME alone names the folders in their order.
    assert main(["report", hyp, plain, "--no-write", "--name", "H", "--name", "P"]) == 0
    assert [(r[0], r[5]) for r in _rows(capsys.readouterr().out)] == [
        ("H", "0.250"),
        ("P", "0.750"),
    ]


def test_report_keeps_one_name_for_folders_on_other_points(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One model at k=0 in one folder and at k=2 in another: nothing to tell apart.
    a = _folder(tmp_path / "a", "plain.yaml", PLAIN)
    b = _folder(tmp_path / "b", "plain.yaml", HYP, k=2)
    assert main(["report", a, b, "--no-write"]) == 0
    assert [r[:6] for r in _rows(capsys.readouterr().out)] == [
        ["m", "smoke", "0", "4", "1", "0.750"],
        ["m", "smoke", "2", "4", "1", "0.250"],
    ]


def test_what_cannot_be_told_apart_is_refused_in_one_line(
    two: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, hyp = two
    alike = ["--name", f"{plain}=X", "--name", f"{hyp}=X"]
    for command in (["report", "--no-write"], ["breakdown", "--by", "gold"], ["chaosnli"]):
        assert main([command[0], plain, hyp, *command[1:], *alike]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert f"{plain} and {hyp} both hold X on task smoke, k=0" in err
        assert ("--pool" in err) == (command[0] != "chaosnli")  # only where it exists
    for command in (["items"], ["sci-report"], ["plots", "--out", str(tmp_path / "figs")]):
        assert main([command[0], plain, plain, *command[1:]]) == 2
        assert capsys.readouterr().err == f"nlieval: error: {plain} is given twice (as {plain})\n"
    assert not (tmp_path / "figs").exists()
    assert main(["report", plain, "--no-write", "--name", "nowhere=N"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--name nowhere=N: no run folder or model" in err
    assert not (Path(plain) / "results.json").exists()  # refused before anything is written


def test_chaosnli_scores_each_folder_whatever_their_order(
    two: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, hyp = two
    scores = []
    for order, out in (((plain, hyp), tmp_path / "ab"), ((hyp, plain), tmp_path / "ba")):
        assert main(["chaosnli", *order, "--out", str(out)]) == 0
        rows = json.loads((out / "chaosnli.json").read_text())["scores"]
        scores.append({r["model"]: r["acc_original"] for r in rows if r["k"] is not None})
    assert (
        scores[0] == scores[1] == {"m (template=plain.yaml)": 0.75, "m (template=hyp.yaml)": 0.25}
    )
    capsys.readouterr()
    assert main(["chaosnli", plain, hyp, "--name", f"{plain}=Plain"]) == 0
    assert "| Plain | smoke | 0 | 4 |" in capsys.readouterr().out


def test_items_a_column_per_folder_and_filters_across_them(
    two: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    plain, hyp = two
    assert main(["items", plain, hyp, "--filter", "disagree"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("| m (template=hyp.yaml) | m (template=plain.yaml) |")
    # Items 2 and 3: plain says entailment, hyp neutral; items 1 and 4 agree.
    assert [(r[3], r[-2], r[-1]) for r in _rows(out)] == [
        ("smoke-02", "neutral", "entailment"),
        ("smoke-03", "neutral", "entailment"),
    ]
    assert main(["items", plain, hyp, "--filter", "all-wrong", "--name", f"{hyp}=H"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("| H | m (template=plain.yaml) |")
    assert [r[3] for r in _rows(out)] == ["smoke-04"]  # the one both got wrong


def test_breakdown_and_grid_rows_per_folder_and_names(
    two: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    plain, hyp = two
    assert main(["breakdown", plain, hyp, "--by", "gold"]) == 0
    assert [(r[0], r[4], r[5]) for r in _rows(capsys.readouterr().out)] == [
        ("m (template=hyp.yaml)", "4", "0.250"),
        ("m (template=plain.yaml)", "4", "0.750"),
    ]
    assert main(["breakdown", plain, hyp, "--by", "gold", "--pool"]) == 0
    assert [(r[0], r[4], r[5]) for r in _rows(capsys.readouterr().out)] == [("m", "8", "0.500")]
    argv = ["grid", plain, hyp, "--name", f"{plain}=Llama 8B", "--no-average"]
    assert main(argv) == 0
    assert _rows(capsys.readouterr().out) == [
        ["Llama 8B", "0.750"],
        ["m (template=hyp.yaml)", "0.250"],
    ]


def test_sci_report_rows_per_folder(
    two: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    plain, hyp = two
    assert main(["sci-report", plain, hyp]) == 0
    rows = _rows(capsys.readouterr().out.split("\n\n")[0])
    # model, n, accuracy (the seventh column: model task k n runs macro-F1 accuracy).
    assert [(r[0], r[3], r[6]) for r in rows] == [
        ("m (template=hyp.yaml)", "4", "0.250"),
        ("m (template=plain.yaml)", "4", "0.750"),
    ]
