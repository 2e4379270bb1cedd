"""`nlieval grid` layouts from item fields, own references and folders of one model,
end to end on folders with hand-made records (or a stand-in model on a task YAML); every
expected cell is computed by hand from the records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.runs import RunFolder
from nlieval.types import Record
from tests.helpers.hash_lm import HashLM

LABELS = ("entailment", "neutral", "contradiction")


def _macro_f1(gold: list[str], pred: list[str]) -> float:
    # F1 per class from its counts (0 without a true positive), then the unweighted mean
    # over the task's three classes; the data below holds every class in every domain.
    scores = []
    for c in LABELS:
        tp = sum(g == c and p == c for g, p in zip(gold, pred, strict=True))
        denom = gold.count(c) + pred.count(c)
        scores.append(0.0 if tp == 0 else 2 * tp / denom)
    return sum(scores) / len(scores)


def _folder(
    path: Path,
    model: str,
    preds: list[tuple[str, str]],
    config: dict[str, object] | None = None,
    *,
    task: str = "snli",
    seeds: tuple[int, ...] = (0,),
    domains: list[str] | None = None,
) -> Path:
    # One record per (gold, pred) pair and seed; config.json as a run writes it.
    path.mkdir(parents=True)
    RunFolder(path).append(
        [
            Record(task, f"{task}-{i}", model, 0, s, LABELS, (-0.1, -2.0, -3.0),
                   (0.8, 0.15, 0.05), pred, gold,
                   meta={} if domains is None else {"domain": domains[i]})
            for s in seeds
            for i, (gold, pred) in enumerate(preds)
        ]
    )  # fmt: skip
    if config is not None:
        (path / "config.json").write_text(json.dumps({"kind": "run", "model": model, **config}))
    return path


def _cells(path: Path) -> dict[tuple[tuple[object, ...], tuple[object, ...]], dict[str, object]]:
    data = json.loads(path.read_text())
    return {(tuple(c["row"]), tuple(c["column"])): c for c in data["cells"]}


def test_grid_by_domain_is_the_per_domain_and_overall_layout_of_mismatched_table_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A task YAML with a domain field, as a user's MisMatched file would be: 12 items in
    # three domains, each domain holding all three gold labels.
    domains = ["cl"] * 4 + ["cs"] * 5 + ["med"] * 3
    gold = ["entailment", "neutral", "contradiction", "neutral", "entailment", "neutral",
            "contradiction", "contradiction", "entailment", "entailment", "neutral",
            "contradiction"]  # fmt: skip
    rows = [
        {"id": f"x{i}", "s1": f"A premise about topic {i}.", "s2": f"Claim number {i} holds.",
         "label": g, "domain": d}
        for i, (g, d) in enumerate(zip(gold, domains, strict=True))
    ]  # fmt: skip
    data = tmp_path / "mm.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    yaml = tmp_path / "mismatched.yaml"
    yaml.write_text(
        "name: mismatched\npath: mm.jsonl\n"
        "fields: {id: id, premise: s1, hypothesis: s2, label: label, meta: [domain]}\n"
        "labels: [entailment, neutral, contradiction]\n"
    )
    folders = []
    for name in ("org/llama", "org/mistral"):
        out = tmp_path / name.split("/")[1]
        cfg = RunConfig(name, (str(yaml),), shots=(0,))
        run(cfg, out, model=stand_in(cfg, lambda ck, s=name: HashLM(s)), progress=False)
        folders.append(out)
    argv = ["grid", *map(str, folders), "--rows", "model", "--cols", "domain"]
    assert main([*argv, "--metrics", "macro_f1", "--percent", "--digits", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The study's layout: a row per model, a column per domain, then Overall.
    assert lines[0] == "| model | cl (n=4) | cs (n=5) | med (n=3) | Overall (n=12) |"
    assert [line.split(" |")[0] for line in lines[2:5]] == ["| org/llama", "| org/mistral",
                                                             "| mean of 2 models"]  # fmt: skip
    out = tmp_path / "g.json"
    assert main([*argv, "--metrics", "macro_f1", "--format", "json", "--out", str(out)]) == 0
    cells = _cells(out)
    for name, folder in zip(("org/llama", "org/mistral"), folders, strict=True):
        recs = list(RunFolder(folder).records())
        by_domain = {d: [r for r in recs if r.meta["domain"] == d] for d in ("cl", "cs", "med")}
        want = {d: _macro_f1([r.gold for r in rs], [r.pred for r in rs])  # type: ignore[misc]
                for d, rs in by_domain.items()}  # fmt: skip
        want["Overall"] = _macro_f1([r.gold for r in recs], [r.pred for r in recs])  # type: ignore[misc]
        for d, value in want.items():
            assert cells[((name,), (d,))]["mean"] == pytest.approx(value)
        cell = f"{100 * want['Overall']:.1f}"
        row = next(line for line in lines if line.startswith(f"| {name} |"))
        assert row.endswith(f"| {cell} |")


def test_overall_pools_the_items_and_is_no_mean_of_the_domain_cells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    e, n, c = LABELS
    # Domain x: gold e n c, pred e e e: F1 e = 2/4, n = c = 0 -> macro 1/6.
    # Domain y: gold e n c, pred n n c: F1 e = 0, n = 2/3, c = 1 -> macro 5/9.
    # Pooled: F1 e = 2/5, n = 2/4, c = 2/3 -> macro (0.4 + 0.5 + 2/3) / 3 = 0.5222,
    # while the mean of the two domains is 13/36 = 0.3611.
    pairs = [(e, e), (n, e), (c, e), (e, n), (n, n), (c, c)]
    a = _folder(tmp_path / "a", "m", pairs, {}, domains=["x"] * 3 + ["y"] * 3)
    assert main(["grid", str(a), "--cols", "domain", "--metrics", "macro_f1", "--no-average"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| model | x (n=3) | y (n=3) | Overall (n=6) |"
    assert lines[2] == "| m | 0.167 | 0.556 | 0.522 |"
    # Domains as rows: the Overall row is last and no row of the Average.
    assert main(["grid", str(a), "--rows", "domain", "--cols", "model", "--metrics",
                 "macro_f1"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == ["| x | 0.167 (n=3) |", "| y | 0.556 (n=3) |", "| Overall | 0.522 (n=6) |",
                         "| mean of 2 domain values | 0.361 |"]  # fmt: skip
    assert main(["grid", str(a), "--cols", "domain", "--no-overall", "--no-average"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "| model | x (n=3) | y (n=3) |"
    assert main(["grid", str(a), "--cols", "domian"]) == 2  # a typo: refused in one line
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no record holds the field 'domian'" in err


def test_two_folders_of_one_model_are_two_rows_told_apart_by_their_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    e, n, _ = LABELS
    right, wrong = (e, e), (e, n)
    plain = _folder(tmp_path / "plain", "m", [right] * 4 + [wrong] * 2, {"template": None})
    hyp = _folder(tmp_path / "hyp", "m", [right] + [wrong] * 5,
                  {"template": "prompts/hyp-only.yaml"})  # fmt: skip
    assert main(["grid", str(plain), str(hyp)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # 6 items each (not 12 pooled): 4/6 and 1/6, the Average (4/6 + 1/6) / 2 = 5/12.
    assert lines[0] == "| model | snli (n=6) |"
    assert lines[2:] == ["| m (template=hyp-only.yaml) | 0.167 |", "| m (template=none) | 0.667 |",
                         "| mean of 2 models | 0.417 |"]  # fmt: skip
    # An LM's hypothesis-only template as its own reference (matched by the file's stem):
    # 4/6 - 1/6 = 0.5.
    assert main(["grid", str(plain), str(hyp), "--reference-by", "template=hyp-only",
                 "--no-average"]) == 0  # fmt: skip
    assert capsys.readouterr().out.splitlines() == [
        "| model | snli (n=6) | snli - hyp-only |", "|---|---|---|",
        "| m (template=hyp-only.yaml) | 0.167 | – |",
        "| m (template=none) | 0.667 | 0.500 |"]  # fmt: skip
    # Nothing in config.json tells them apart: the folder names do.
    same = _folder(tmp_path / "again", "m", [right] * 6, {"template": None})
    assert main(["grid", str(plain), str(same), "--no-average"]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == ["| m (again) | 1.000 |",
                                                       "| m (plain) | 0.667 |"]  # fmt: skip
    # The same folder twice, or a folder with nothing to score: refused, never dropped.
    assert main(["grid", str(plain), str(tmp_path / "plain" / ".")]) == 2
    assert "is given twice" in capsys.readouterr().err
    assert main(["grid", str(plain), str(hyp), "--metrics", "acc_original"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no ChaosNLI records to score for acc_original" in err
    # Names of the user's own, for each folder.
    argv = [
        "grid",
        str(plain),
        str(hyp),
        "--name",
        f"{plain}=Llama 8B",
        "--name",
        f"{hyp}=Llama 8B hyp",
    ]
    assert main([*argv, "--no-average"]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == ["| Llama 8B | 0.667 |",
                                                       "| Llama 8B hyp | 0.167 |"]  # fmt: skip
    assert main(["grid", str(plain), "--name", f"{hyp}=x"]) == 2
    assert "no run folder or model of that name" in capsys.readouterr().err
    # One model over two tasks in two folders: one row, no renaming.
    other = _folder(tmp_path / "mnli", "m", [wrong] * 3, {"template": "x"}, task="mnli")
    assert main(["grid", str(plain), str(other), "--no-average"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| model | mnli (n=3) | snli (n=6) |" and lines[2] == "| m | 0.000 | 0.667 |"


def test_a_gap_column_to_each_models_own_reference_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    e, n, _ = LABELS
    right, wrong = (e, e), (e, n)
    doms = ["x", "x", "y", "y"]

    def fold(name: str, model: str, k_right: int, cfg: dict[str, object]) -> str:
        preds = [right] * k_right + [wrong] * (4 - k_right)
        return str(_folder(tmp_path / name, model, preds, cfg, domains=doms))

    # Trained classifiers: records named by their folder, config.json by the base model.
    full = fold("bert-full", "bert-full", 3, {"model": "bert", "hypothesis_only": False})
    hyp = fold("bert-hyp", "bert-hyp", 1, {"model": "bert", "hypothesis_only": True})
    lone = fold("roberta", "roberta", 2, {"model": "roberta", "hypothesis_only": False})
    argv = ["grid", full, hyp, lone, "--cols", "domain", "--reference-by", "hypothesis_only=true"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    gaps = " | ".join(f"{c} - hypothesis_only=true" for c in ("x", "y", "Overall"))
    assert lines[0] == f"| model | x (n=2) | y (n=2) | Overall (n=4) | {gaps} |"
    # bert-full: x 2/2, y 1/2, all 3/4; bert-hyp: x 1/2, y 0/2, all 1/4.
    assert lines[2] == "| bert-full | 1.000 | 0.500 | 0.750 | 0.500 | 0.500 | 0.500 |"
    assert lines[3] == "| bert-hyp | 0.500 | 0.000 | 0.250 | – | – | – |"
    assert lines[4] == "| roberta | 1.000 | 0.000 | 0.500 | – | – | – |"  # never bert's
    note = "roberta: no reference run (hypothesis_only=true) among the folders: its gap is n/a"
    assert note in lines
    # Average of a gap column: over bert-full only, of the 2 rows that could hold it.
    assert lines[5].endswith("| 0.500 ‡ | 0.500 ‡ | 0.500 ‡ |")
    assert any(line.startswith("‡ mean over fewer rows") for line in lines)
    two = fold("bert-hyp2", "bert-hyp2", 0, {"model": "bert", "hypothesis_only": True})
    for bad, why in (
        ([*argv[:4], two, *argv[4:]], "several reference runs of its model"),
        ([full, lone, "--reference-by", "hypothesis_only=true"], "no run folder's config.json"),
        ([full, "--reference-by", "hypothesis_only"], "write KEY=VALUE"),
    ):
        assert main(bad if bad[0] == "grid" else ["grid", *bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and why in err, err


def test_the_seeds_behind_each_std_and_a_short_average(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    e, n, _ = LABELS
    a = _folder(tmp_path / "a", "ma", [(e, e), (e, n)], {}, seeds=(0, 1))
    b = _folder(tmp_path / "b", "mb", [(e, e), (e, e)], {}, seeds=(0, 1, 2))
    c = _folder(tmp_path / "c", "mb", [(e, n)], {}, task="mnli")
    # Every seed scores alike: std 0 over 2 and over 3 seeds; mnli only for mb.
    assert main(["grid", str(a), str(b), str(c)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "| ma | – | 0.500 ± 0.000 (2 seeds) |"
    assert lines[3] == "| mb | 0.000 | 1.000 ± 0.000 (3 seeds) |"
    assert lines[4] == "| mean of 2 models | 0.000 ‡ | 0.750 |"
    assert lines[6:] == ["‡ mean over fewer rows (the rest lack it): mnli 1 of 2",
                         "± sample standard deviation over the seeds each cell names"]  # fmt: skip
    assert main(["grid", str(a), "--format", "csv", "--no-average"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "model,snli mean,snli std,snli n,snli seeds",
        "ma,0.5,0.0,2,2",
    ]
    assert main(["grid", str(a), "--no-average"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "± sample standard deviation over 2 seeds"
