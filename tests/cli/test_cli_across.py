"""The commands across run folders, end to end on folders made by stand-in models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.runs import RunFolder
from nlieval.types import Record
from tests.helpers.hash_lm import HashLM


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("across")
    out = {}
    for name in ("org/small", "org/big", "org/hyp-only"):
        folder = root / name.split("/")[1]
        cfg = RunConfig(name, ("smoke",), shots=(0, 2), seeds=(0, 1), limit=12)
        run(cfg, folder, model=stand_in(cfg, lambda ck, s=name: HashLM(s)), progress=False)
        out[name.split("/")[1]] = folder
    ckpt = root / "ckpts"
    cfg = RunConfig("org/pythia", ("smoke",), limit=12, checkpoints=("step1000", "step2000"))
    run(cfg, ckpt, model=stand_in(cfg, lambda ck: HashLM(str(ck))), progress=False)
    out["ckpts"] = ckpt
    return out


def test_grid_with_reference_gap_in_three_formats(
    folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [str(folders["small"]), str(folders["big"])]
    argv = ["grid", *runs, "--rows", "model,k", "--reference", str(folders["hyp-only"])]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "| org/small | 0 |" in table
    # The mean of the 2 models at each k, never pooling k = 0 and k = 2, nor the
    # hypothesis-only reference with the models it is a baseline of.
    assert "| mean of 2 models | 0 |" in table and "| mean of 2 models | 2 |" in table
    assert "org/small - org/hyp-only" in table
    assert main([*argv, "--format", "json", "--out", str(tmp_path / "g.json")]) == 0
    cells = json.loads((tmp_path / "g.json").read_text())["cells"]
    by = {(tuple(c["row"]), tuple(c["column"])): c["mean"] for c in cells}
    for k in (0, 2):  # each row's gap is to the reference at the same k
        gap = by[(("org/small - org/hyp-only", k), ("smoke",))]
        small, hyp = by[(("org/small", k), ("smoke",))], by[(("org/hyp-only", k), ("smoke",))]
        assert gap == pytest.approx(small - hyp)


def test_compare_breakdown_and_figures(
    folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(folders["small"]), str(folders["big"]), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    # Per seed: k=0 seed 0, k=2 seeds 0 and 1; over seeds: k=2 (two seeds).
    assert out.count("| smoke |") == 3 + 1 and "Over seeds" in out
    # Each family of tests: one kind of test over the 3 rows per seed, and the 1 over seeds.
    assert "(2 seeds)" in out and "McNemar exact, accuracy, per seed (3)" in out
    assert "paired permutation, accuracy, over seeds (1)" in out
    assert main(["breakdown", str(folders["small"]), "--by", "gold"]) == 0
    assert capsys.readouterr().out.count("| org/small |") == 2 * 3  # two k x three labels
    png = tmp_path / "shots.png"
    argv = ["figure", "shots", str(folders["small"]), str(folders["big"]), "--out", str(png)]
    assert main([*argv, "--baseline", str(folders["hyp-only"])]) == 0
    assert imread(png).shape[0] > 0
    dyn = tmp_path / "dyn.png"
    argv = ["figure", "dynamics", str(folders["ckpts"]), "--out", str(dyn)]
    assert main([*argv, "--pattern", r"step(\d+)", "--scale", "2097152"]) == 0
    assert dyn.is_file()
    capsys.readouterr()
    assert main(["figure", "dynamics", str(folders["ckpts"]), "--out", str(dyn)]) == 2
    assert "--pattern" in capsys.readouterr().err


def test_items_side_by_side_filtered(
    folders: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["items", str(folders["small"]), str(folders["big"]), "--filter", "disagree"]
    assert main([*argv, "--limit", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()[2:]
    assert lines
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-1] != cells[-2]  # the two models' predictions differ on every row
        assert cells[3]  # the premise text came from the task's data
    capsys.readouterr()
    assert main([*argv, "--filter", "colour"]) == 2


def _accuracy(folder: Path, **where: Any) -> dict[int, float]:
    # Per seed, straight from the saved lines: an independent reading of records.jsonl.
    right: dict[int, list[bool]] = {}
    for line in (folder / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        if all(r.get(k) == v for k, v in where.items()):
            right.setdefault(r["seed"], []).append(r["pred"] == r["gold"])
    return {s: sum(v) / len(v) for s, v in right.items()}


def test_grid_intervals_and_checkpoints_as_seeds(
    folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ci.json"
    argv = ["grid", str(folders["small"]), "--rows", "model,k", "--ci", "0.9", "--format", "json"]
    assert main([*argv, "--resamples", "400", "--out", str(out)]) == 0
    cells = json.loads(out.read_text())["cells"]
    bounded = [c for c in cells if c["row"][0] == "org/small"]
    assert len(bounded) == 2
    for c in bounded:
        seeds = _accuracy(folders["small"], k=c["row"][1])
        assert c["mean"] == pytest.approx(sum(seeds.values()) / len(seeds))
        assert c["low"] <= c["mean"] <= c["high"] and c["high"] - c["low"] > 0
    # One model: no Average row (the mean of one row would repeat it).
    assert not [c for c in cells if str(c["row"][0]).startswith("mean of")]
    assert main([*argv, "--resamples", "400", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["cells"] == cells  # seeded: the same intervals
    md = tmp_path / "ci.md"
    assert (
        main(["grid", str(folders["small"]), "--cols", "task,k", "--ci", "0.9", "--out", str(md)])
        == 0
    )
    assert " [" in md.read_text()
    # Two checkpoints of one model as its two seeds: one row, mean and sample std of the
    # two checkpoints' accuracies.
    argv = ["grid", str(folders["ckpts"]), "--over-checkpoints", "--format", "json"]
    assert main([*argv, "--out", str(out)]) == 0
    (cell,) = [c for c in json.loads(out.read_text())["cells"] if c["row"] == ["org/pythia"]]
    accs = [_accuracy(folders["ckpts"], checkpoint=c)[0] for c in ("step1000", "step2000")]
    assert cell["mean"] == pytest.approx(sum(accs) / 2)
    assert cell["std"] == pytest.approx(abs(accs[0] - accs[1]) / 2**0.5)
    capsys.readouterr()
    assert main(["grid", str(folders["ckpts"])]) == 2  # two checkpoints in one cell
    assert main(["grid", str(folders["small"]), "--metrics", "acc_majority", "--ci", "0.9"]) == 2


def test_dynamics_positions_from_a_table(
    folders: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "positions.json"
    table.write_text(json.dumps({"step1000": 2.1e9, "step2000": 4.2e9}))
    dyn = tmp_path / "dyn.png"
    argv = ["figure", "dynamics", str(folders["ckpts"]), "--out", str(dyn)]
    assert main([*argv, "--positions", str(table)]) == 0 and dyn.is_file()
    table.write_text(json.dumps({"step1000": 2.1e9}))
    capsys.readouterr()
    assert main([*argv, "--positions", str(table)]) == 2
    assert "step2000" in capsys.readouterr().err
    # A missing or non-JSON table: one line naming it (a traceback before).
    for bad, why in ((tmp_path / "none.json", ": no such file"), (table, ":1: invalid JSON")):
        if bad == table:
            table.write_text("{step1000: 1")
        assert main([*argv, "--positions", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{bad}{why}" in err


def _scored(folder: Path, model: str, ids: range, right: int) -> None:
    # `right` of the items answered right (the first ones), the rest wrong.
    labels = ("entailment", "neutral")
    folder.mkdir()
    RunFolder(folder).append(
        [
            Record("snli", f"snli-{i}", model, 0, 0, labels, (-0.1, -2.0), (0.87, 0.13),
                   "entailment", "entailment" if n < right else "neutral")
            for n, i in enumerate(ids)
        ]
    )  # fmt: skip


def test_grid_refuses_cells_of_one_task_on_other_items_and_marks_them_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small, big, other = tmp_path / "small", tmp_path / "big", tmp_path / "other"
    _scored(small, "m50", range(50), 25)  # 25/50 = 0.5
    _scored(big, "m200", range(200), 150)  # 150/200 = 0.75
    _scored(other, "o200", range(200, 400), 50)  # as many items as m200, other ones
    assert main(["grid", str(small), str(big)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "m200 / snli (n=200), m50 / snli (n=50)" in err
    assert "--allow-mixed" in err
    assert main(["grid", str(big), str(other)]) == 2  # equal n, other ids: refused too
    assert "m200 / snli (n=200), o200 / snli (n=200)" in capsys.readouterr().err
    assert main(["grid", str(small), str(big), "--allow-mixed"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["| model | snli |", "|---|---|"]  # n differs: in each cell
    assert lines[2:5] == [
        "| m200 | 0.750 (n=200) † |",
        "| m50 | 0.500 (n=50) † |",
        "| mean of 2 models | 0.625 † |",  # (0.5 + 0.75) / 2, over other items: marked too
    ]
    assert lines[-1].startswith("† scored on other items than a cell of the same task")
    assert main(["grid", str(big), "--format", "csv", "--allow-mixed", "--no-average"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "m200,0.75,200"  # nothing mixed


def test_grid_shows_a_shared_n_once_and_digits_apply_to_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _scored(a, "ma", range(3), 1)  # 1/3
    _scored(b, "mb", range(3), 2)  # 2/3
    assert main(["grid", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| model | snli (n=3) |"
    assert lines[2:] == ["| ma | 0.333 |", "| mb | 0.667 |", "| mean of 2 models | 0.500 |"]
    assert main(["grid", str(a), str(b), "--format", "csv", "--percent", "--digits", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        # No ± and no interval in any cell: no std, low or high column (empty).
        "model,snli mean,snli n",
        "ma,33.3,3",
        "mb,66.7,3",
        "mean of 2 models,50.0,",
    ]
    assert main(["grid", str(a), "--format", "csv", "--no-average"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"ma,{1 / 3},3"  # all digits
    assert main(["grid", str(a), "--format", "json", "--digits", "2", "--no-average"]) == 0
    assert json.loads(capsys.readouterr().out)["cells"][0]["mean"] == 0.33


def _nll_folder(folder: Path) -> None:
    # Two items, one right: accuracy 0.5; the gold option's log-likelihood is -2.08 on both:
    # gold NLL 2.08.
    labels = ("entailment", "neutral")
    folder.mkdir()
    RunFolder(folder).append(
        [
            Record("snli", "1", "m", 0, 0, labels, (-0.1, -2.08), (0.87, 0.13), "entailment",
                   "neutral"),
            Record("snli", "2", "m", 0, 0, labels, (-2.08, -2.5), (0.6, 0.4), "entailment",
                   "entailment"),
        ]
    )  # fmt: skip


def test_grid_percent_scales_proportions_only_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _nll_folder(tmp_path / "a")
    argv = ["grid", str(tmp_path / "a"), "--metrics", "accuracy,gold_nll", "--no-average"]
    argv += ["--percent"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "| m | 50.000 | 2.080 |"
    assert main([*argv, "--format", "csv", "--digits", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "m,50.0,2,2.1,2"
    assert main([*argv, "--format", "json", "--digits", "2"]) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    assert [(c["column"], c["metric"], c["mean"]) for c in cells] == [
        (["snli", "accuracy"], "accuracy", 50.0),
        (["snli", "gold_nll"], "gold_nll", 2.08),
    ]
    assert main([*argv, "--format", "latex", "--digits", "2"]) == 0
    out = capsys.readouterr().out
    assert r"m & 50.00 & 2.08 \\" in out.splitlines()
    assert out.splitlines()[1] == r"\toprule"


def _two_seed_folder(folder: Path) -> None:
    rf = RunFolder(folder)
    rf.start(RunConfig(model="m", tasks=("smoke",)))
    labels = ("entailment", "neutral", "contradiction")
    rf.append(
        [
            Record("smoke", item, "m", 0, seed, labels, (-1.0, -2.0, -3.0), (0.6, 0.3, 0.1),
                   "entailment" if seed == 0 else "neutral", "entailment")
            for seed in (0, 1)
            for item in ("smoke-01", "smoke-16", "smoke-02")
        ]
    )  # fmt: skip


def test_items_a_row_per_seed_ids_formats_and_full_texts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nlieval.data import load_task

    premise = {it.id: it.premise for it in load_task("smoke").items}
    assert len(premise["smoke-16"]) == 62  # longer than the 60 characters a cell shows
    folder = tmp_path / "run"
    _two_seed_folder(folder)
    argv = ["items", str(folder), "--ids", "smoke-16,smoke-01"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0] == "| task | k | seed | id | premise | hypothesis | gold | humans (majority) | m |"
    )
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    # Two ids x two seeds: four rows, none alike; seed 1 predicted neutral.
    assert [(c[2], c[3], c[-1]) for c in cells] == [
        ("0", "smoke-01", "entailment"),
        ("0", "smoke-16", "entailment"),
        ("1", "smoke-01", "neutral"),
        ("1", "smoke-16", "neutral"),
    ]
    assert cells[1][4] == premise["smoke-16"][:59] + "…"
    assert main([*argv, "--full"]) == 0
    full = capsys.readouterr().out.splitlines()[3]
    assert f"| {premise['smoke-16']} |" in full
    assert main([*argv, "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "task,k,seed,id,premise,hypothesis,gold,human,majority,entropy,wrong,m"
    assert [r.split(",")[2:4] for r in rows[1:]] == [
        ["0", "smoke-01"], ["0", "smoke-16"], ["1", "smoke-01"], ["1", "smoke-16"]
    ]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [(r["seed"], r["id"], r["wrong"]) for r in got] == [
        (0, "smoke-01", 0), (0, "smoke-16", 0), (1, "smoke-01", 1), (1, "smoke-16", 1)
    ]  # fmt: skip
    assert got[1]["premise"] == premise["smoke-16"]
    assert main(["items", str(folder), "--ids", "smoke-01,smoke-99"]) == 2
    assert capsys.readouterr().err.strip() == "nlieval: error: --ids: no record of item 'smoke-99'"
    out = tmp_path / "items.tex"
    assert main([*argv, "--format", "latex", "--out", str(out)]) == 0
    assert out.read_text().splitlines()[2] == (
        r"task & k & seed & id & premise & hypothesis & gold & humans (majority) & m \\"
    )
