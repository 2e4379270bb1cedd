"""Combined training sets: ``nlieval train --task a,b:N`` concatenates sources, each
sampled on its own, with per-source counts; label sets must agree."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

from nlieval.cli import main  # noqa: E402
from nlieval.sci.train import TrainConfig, TrainError, format_results, train  # noqa: E402
from nlieval.sci.train_config import Source, parse_sources  # noqa: E402
from nlieval.sci.train_data import load_data, load_train  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

WORDS = ["cat", "dog", "a", "the", "no", "sees"]
CUE = {"entailment": "a", "neutral": "the", "contradiction": "no"}


def test_sources_are_parsed_and_bad_ones_are_one_line() -> None:
    assert parse_sources("a@dev:10,b") == (Source("a", "dev", 10), Source("b"))
    assert parse_sources("runs/t.yaml:5") == (Source("runs/t.yaml", None, 5),)
    for bad in ("a,,b", "a:0", "@dev", "a@", "a,a"):
        with pytest.raises(TrainError) as err:
            parse_sources(bad)
        assert "\n" not in str(err.value)
    with pytest.raises(TrainError):
        TrainConfig("minilm", "smoke,")


def test_two_sources_are_sampled_apart_and_counted() -> None:
    part = load_train(TrainConfig("minilm", "smoke@train:6,smoke@test:9", sample_seed=3))
    assert part.sources == {"smoke@train": 6, "smoke@test": 9}
    ids = [it.id for it in part.items]
    assert len(set(ids)) == 15  # prefixed: the two files' ids never collide
    assert [i.split("/")[0] for i in ids] == ["smoke@train"] * 6 + ["smoke@test"] * 9
    # Each source sampled on its own, stratified: smoke train has 4 items per label.
    first = Counter(it.label.value for it in part.items[:6] if it.label)
    assert set(first.values()) == {2}
    again = load_train(TrainConfig("minilm", "smoke@train:6,smoke@test:9", sample_seed=3))
    assert again.items == part.items
    other = load_train(TrainConfig("minilm", "smoke@train:6,smoke@test:9", sample_seed=4))
    assert other.items != part.items
    # The held-out dev part comes out of the combined set, and the counts follow.
    data = load_data(TrainConfig("minilm", "smoke@train,smoke@test:12", skip_test=True))
    assert sum(data.train.sources.values()) == len(data.train.items)
    assert len(data.train.items) + len(data.dev.items) == 24


def test_sources_with_other_labels_or_the_test_data_are_refused(tmp_path: Path) -> None:
    rows = [
        {"premise": "p", "hypothesis": "h", "label": lab}
        for lab in ("entailment", "non-entailment") * 3
    ]
    (tmp_path / "two.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = tmp_path / "two.yaml"
    task.write_text(
        yaml.safe_dump({"path": "two.jsonl", "labels": ["entailment", "non-entailment"]})
    )
    with pytest.raises(TrainError, match="one label set"):
        load_train(TrainConfig("minilm", f"smoke@train,{task}@test"))
    with pytest.raises(TrainError, match="is the training data"):
        load_data(TrainConfig("minilm", "smoke@train,smoke@test:12"))


def _task(folder: Path, name: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    labels = list(CUE)
    rows = [
        {"id": str(i), "premise": f"{rng.choice(['cat', 'dog'])} sees",
         "hypothesis": f"{CUE[labels[i % 3]]} {rng.choice(['cat', 'dog'])}",
         "label": labels[i % 3]}
        for i in range(n)
    ]  # fmt: skip
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / f"{name}.yaml").write_text(
        yaml.safe_dump({"path": f"{name}.jsonl", "labels": labels})
    )
    return str(folder / f"{name}.yaml")


def test_a_combined_run_trains_reports_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    enc = make_tiny_bert(tmp_path / "bert", WORDS)
    a, b, test = (
        _task(tmp_path, "a", 60, 1),
        _task(tmp_path, "b", 40, 2),
        _task(tmp_path, "t", 24, 3),
    )
    argv = ["train", "--model", str(enc), "--task", f"{a}@test:30,{b}@test", "--test-task", test,
            "--epochs", "1", "--seeds", "0,", "--device", "cpu", "--max-length", "16",
            "--out", str(tmp_path / "run"), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "training set: " in out
    seed = json.loads((tmp_path / "run" / "seed0" / "train.json").read_text())
    sources = seed["data"]["train"]["sources"]
    # 30 + 40 items, a tenth of them (stratified) held out for early stopping.
    assert sum(sources.values()) == seed["data"]["train"]["n"] == 70 - seed["data"]["dev"]["n"]
    assert list(sources) == ["a@test", "b@test"]
    cfg = TrainConfig(str(enc), f"{a}@test:30,{b}@test", test_task=test, epochs=1, seeds=(0,),
                      device="cpu", max_length=16, out=str(tmp_path / "run"))  # fmt: skip
    again = train(cfg, progress=False)
    assert again.seeds[0]["best_dev_macro_f1"] == seed["best_dev_macro_f1"]
    assert format_results(again).splitlines()[0].startswith("training set: ")
    # Another sample size of a source is another training set: not resumed.
    capsys.readouterr()
    assert main([*argv[:4], f"{a}@test:20,{b}@test", *argv[5:]]) == 2
    assert "task" in capsys.readouterr().err
