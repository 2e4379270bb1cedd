"""Fine-tuned encoder classifiers on a tiny random BERT and a learnable synthetic task."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

from nlieval.backends import HFOptions  # noqa: E402
from nlieval.backends.classifier import (  # noqa: E402
    EncoderClassifier,
    classify_records,
    load_classifier,
)
from nlieval.classifiers import (  # noqa: E402
    ClassifierError,
    encode_pairs,
    is_classifier_folder,
    label_mapping,
)
from nlieval.runs import Results, RunError, RunFolder  # noqa: E402
from nlieval.sci.train import (  # noqa: E402
    TrainConfig,
    TrainError,
    TrainResult,
    build_model,
    evaluate,
    fit,
    load_data,
    make_optimizer,
    no_decay_names,
    seed_checkpoint,
    stratified_split,
    train,
)
from nlieval.types import NLI2, NLI3, SCI4, Item, Label  # noqa: E402
from tests.helpers.records import saved_records  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NOUNS = ["cat", "dog", "bird", "fish", "horse", "cow", "sheep", "goat"]
# The hypothesis's determiner decides the label; the premise is noise.
CUE = {"entailment": "a", "neutral": "the", "contradiction": "no"}
LABELS = ("entailment", "neutral", "contradiction")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random BERT (hidden 32) with a WordPiece vocabulary of the task's words."""
    folder = tmp_path_factory.mktemp("tiny-bert")
    return make_tiny_bert(folder, [*NOUNS, *CUE.values(), "sees"])


def _rows(n: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = LABELS[i % 3]
        premise = " ".join(rng.sample(NOUNS, rng.randint(1, 4)))
        rows.append(
            {
                "id": f"{seed}-{i}",
                "premise": premise,
                "hypothesis": f"{CUE[label]} {rng.choice(NOUNS)}",
                "label": label,
            }
        )
    return rows


def _write_task(folder: Path, name: str, labels: Sequence[str], test: str, pool: str = "") -> str:
    doc: dict[str, Any] = {"path": test, "labels": list(labels)}
    if pool:
        doc["pool"] = pool
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(folder / f"{name}.yaml")


@pytest.fixture(scope="module")
def syn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Task YAML files: ``task`` (train = pool, test = path) and ``dev`` (split test)."""
    folder = tmp_path_factory.mktemp("syn")
    for name, n, seed in (("train", 192, 1), ("dev", 48, 2), ("test", 48, 3)):
        lines = "".join(json.dumps(r) + "\n" for r in _rows(n, seed))
        (folder / f"{name}.jsonl").write_text(lines, encoding="utf-8")
    return {
        "task": _write_task(folder, "syn", LABELS, "test.jsonl", "train.jsonl"),
        "dev": _write_task(folder, "syn_dev", LABELS, "dev.jsonl"),
        "folder": str(folder),
    }


def _config(tiny_bert: Path, syn: dict[str, str], out: Path, **kw: Any) -> TrainConfig:
    base: dict[str, Any] = {
        "model": str(tiny_bert),
        "task": syn["task"],
        "dev_task": syn["dev"],
        "dev_split": "test",
        "epochs": 3,
        "lr": 3e-3,
        "batch_size": 16,
        "max_length": 16,
        "seeds": (0,),
        "device": "cpu",
        "out": str(out),
    }
    base.update(kw)
    return TrainConfig(**base)


@pytest.fixture(scope="module")
def trained(
    tiny_bert: Path, syn: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> TrainResult:
    """One seed trained for up to 3 epochs; the results of :func:`train`."""
    out = tmp_path_factory.mktemp("trained")
    return train(_config(tiny_bert, syn, out), progress=False)


def _pairs(n: int = 40, seed: int = 7) -> list[tuple[str, str]]:
    return [(r["premise"], r["hypothesis"]) for r in _rows(n, seed)]


# --------------------------------------------------------------------------- training


def test_training_learns_the_rule(
    trained: TrainResult, tiny_bert: Path, syn: dict[str, str]
) -> None:
    config = TrainConfig.from_dict(trained.results.config)
    data = load_data(config)
    model, tok = build_model(config, data.labels, 0)
    meta = load_classifier(trained.seeds[0]["checkpoint"])[2]
    untrained, _ = evaluate(model, tok, meta, data.dev)
    seed0 = trained.seeds[0]
    assert untrained["macro_f1"] < 0.6
    assert seed0["best_dev_macro_f1"] >= 0.9
    assert seed0["best_dev_macro_f1"] > untrained["macro_f1"] + 0.3
    assert seed0["test"]["macro_f1"] >= 0.9
    assert set(seed0["test"]["per_class_f1"]) == set(LABELS)
    assert len(seed0["test"]["confusion"]) == 3
    summary = trained.summary
    assert summary["test_macro_f1"] == {"mean": seed0["test"]["macro_f1"], "std": 0.0}
    # The folder is a run folder of the test records; the seed's results in train.json.
    out = Path(config.out)
    assert json.loads((out / "seed0" / "train.json").read_text()) == seed0
    assert json.loads((out / "config.json").read_text())["kind"] == "train"
    records = RunFolder(out).records()
    assert len(records) == 48 and {(r.seed, r.checkpoint, r.k) for r in records} == {(0, None, 0)}
    assert {r.model for r in records} == {out.name}
    (row,) = json.loads((out / "results.json").read_text())["metrics"]
    assert row["accuracy"] == seed0["test"]["accuracy"] and row["seeds"] == [0]
    assert row["macro_f1"] == pytest.approx(seed0["test"]["macro_f1"])
    assert (out / "summary.md").read_text().startswith("# nlieval train: ")


def test_results_mean_and_std_over_seeds(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    config = _config(tiny_bert, syn, tmp_path, epochs=1, seeds=(0, 1), limit=48)
    results = train(config, progress=False)
    f1 = [s["test"]["macro_f1"] for s in results.seeds]
    mean = results.summary["test_macro_f1"]["mean"]
    std = results.summary["test_macro_f1"]["std"]
    assert math.isclose(mean, sum(f1) / 2)
    assert math.isclose(std, abs(f1[0] - f1[1]) / math.sqrt(2))
    assert is_classifier_folder(tmp_path / "seed0") and is_classifier_folder(tmp_path / "seed1")
    # `nlieval report` and `nlieval sci-report`: one row, mean ± std over the two seeds.
    from nlieval.reports import ReportConfig, report
    from nlieval.sci.report import iter_report_records, sci_rows

    task = results.results.metrics[0]["task"]
    table = report(ReportConfig(runs=(str(tmp_path),), write=False))
    assert f"| {tmp_path.name} | {task} | 0 | 48 | 2 | " in table
    assert len(table.splitlines()) == 3
    (row,) = sci_rows(iter_report_records([tmp_path]))
    assert row["runs"] == 2 and row["checkpoint"] is None
    assert row["macro_f1"] == pytest.approx(mean) and row["macro_f1_std"] == pytest.approx(std)


def test_early_stopping_after_patience_epochs(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    # lr 0: dev F1 never changes, so only epoch 1 improves and `patience` epochs follow.
    seen: list[dict[str, Any]] = []
    config = _config(tiny_bert, syn, tmp_path, lr=0.0, epochs=10, patience=2, limit=32)
    result = train(config, on_epoch=seen.append, progress=False).seeds[0]
    assert [row["epoch"] for row in seen] == [1, 2, 3]
    assert [row["improved"] for row in seen] == [True, False, False]
    assert result["epochs_run"] == 3 and result["stopped_early"] and result["best_epoch"] == 1


def test_a_dev_part_of_one_class_keeps_the_best_epoch_by_accuracy(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    # Every dev item entailment: macro F1 is undefined (NaN) there, so epochs are judged
    # by dev accuracy; before, no epoch ever improved on NaN and the seed ended loading
    # an empty state dict.
    rows = [r for r in _rows(48, 2) if r["label"] == "entailment"]
    (tmp_path / "one.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    dev = _write_task(tmp_path, "one_class_dev", LABELS, "one.jsonl")
    seen: list[dict[str, Any]] = []
    config = _config(tiny_bert, syn, tmp_path / "out", dev_task=dev, epochs=2, limit=32)
    result = train(config, on_epoch=seen.append, progress=False).seeds[0]
    assert all(math.isnan(row["dev_macro_f1"]) for row in seen)
    assert seen[0]["improved"] and result["best_epoch"] >= 1
    best = seen[result["best_epoch"] - 1]
    assert (
        result["best_dev_accuracy"]
        == best["dev_accuracy"]
        == max(row["dev_accuracy"] for row in seen)
    )
    assert is_classifier_folder(Path(result["checkpoint"]))


def test_same_seed_same_result(tiny_bert: Path, syn: dict[str, str], tmp_path: Path) -> None:
    a = train(_config(tiny_bert, syn, tmp_path / "a", epochs=1, limit=48), progress=False)
    b = train(_config(tiny_bert, syn, tmp_path / "b", epochs=1, limit=48), progress=False)
    assert a.seeds[0]["history"][0]["train_loss"] == b.seeds[0]["history"][0]["train_loss"]


def test_finished_seeds_are_reused(tiny_bert: Path, syn: dict[str, str], tmp_path: Path) -> None:
    config = _config(tiny_bert, syn, tmp_path, epochs=1, limit=32)
    first = train(config, progress=False)
    seen: list[dict[str, Any]] = []
    again = train(config, on_epoch=seen.append, progress=False)
    assert not seen and again.seeds == first.seeds
    assert again.results.metrics == first.results.metrics
    train(config, on_epoch=seen.append, progress=False, resume=False)
    assert len(seen) == 1 and len(RunFolder(tmp_path).records()) == 32


def test_seeds_grow_and_an_unfinished_seed_restarts(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = _config(tiny_bert, syn, tmp_path, epochs=1, limit=32)
    first = train(config, progress=False)
    seen: list[dict[str, Any]] = []
    more = train(replace_config(config, seeds=[0, 1]), on_epoch=seen.append, progress=False)
    assert [row["seed"] for row in seen] == [1]  # seed 0 was complete
    assert more.seeds[0] == first.seeds[0] and more.results.metrics[0]["seeds"] == [0, 1]
    want = {(r.seed, r.item_id): r for r in RunFolder(tmp_path).records()}
    # Seed 1 left unfinished (train.json not written): trained again from scratch,
    # its records replaced, not duplicated.
    (tmp_path / "seed1" / "train.json").unlink()
    seen.clear()
    with caplog.at_level(logging.WARNING):
        again = train(replace_config(config, seeds=[0, 1]), on_epoch=seen.append, progress=False)
    assert "seed 1 was not finished" in caplog.text and "seed 0" not in caplog.text
    assert [row["seed"] for row in seen] == [1]
    got = RunFolder(tmp_path).records()
    assert len(got) == len(want) == 64
    assert {(r.seed, r.item_id): r for r in got} == want  # one device: deterministic
    assert again.results.metrics == more.results.metrics
    # Other settings in the same folder are refused.
    with pytest.raises(RunError, match="lr: 0.003 -> 0.1"):
        train(replace_config(config, lr=0.1), progress=False)


def test_train_folder_of_an_older_version_is_refused(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "seed0").mkdir()
    (tmp_path / "seed0" / "results.json").write_text("{}")
    (tmp_path / "seed0" / "test_records.jsonl").write_text("")
    config = _config(tiny_bert, syn, tmp_path, epochs=1, limit=32)
    with pytest.raises(RunError, match="older `nlieval train`"):
        train(config, progress=False)
    train(config, progress=False, resume=False)
    seed0 = tmp_path / "seed0"
    assert (seed0 / "train.json").is_file() and is_classifier_folder(seed0)
    assert not (seed0 / "results.json").exists() and not (seed0 / "test_records.jsonl").exists()
    assert len(RunFolder(tmp_path).records()) == 32


# --------------------------------------------------------------------------- options


def test_top_layers_freezes_embeddings_and_lower_layers(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    config = _config(tiny_bert, syn, tmp_path, top_layers=1, epochs=1, limit=48)
    model, _ = build_model(config, LABELS, 0)
    grads = {name: p.requires_grad for name, p in model.named_parameters()}
    assert all(grads[n] for n in grads if n.startswith(("encoder.encoder.layer.1.", "head.")))
    assert not any(grads[n] for n in grads if n.startswith("encoder.embeddings."))
    assert not any(grads[n] for n in grads if n.startswith("encoder.encoder.layer.0."))
    assert not any(grads[n] for n in grads if n.startswith("encoder.pooler."))
    train(config, progress=False)
    before = load_file(str(tiny_bert / "model.safetensors"))
    after = load_file(str(tmp_path / "seed0" / "model.safetensors"))
    assert before.keys() == after.keys()
    for name in before:
        same = torch.equal(before[name], after[name])
        assert same == (not name.startswith("encoder.layer.1.")), name
    # top_layers=0 trains the head alone.
    model, _ = build_model(replace_config(config, top_layers=0), LABELS, 0)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"head.weight", "head.bias"}


def replace_config(config: TrainConfig, **kw: Any) -> TrainConfig:
    return TrainConfig.from_dict({**config.to_dict(), **kw})


def test_adamw_groups_exclude_biases_and_layernorm(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    config = _config(tiny_bert, syn, tmp_path, optimizer="adamw", weight_decay=0.05)
    model, _ = build_model(config, LABELS, 0)
    decay, no_decay = make_optimizer(model, config).param_groups
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert not any(n.endswith("bias") or "LayerNorm" in n for n in decay["names"])
    assert "head.weight" in decay["names"]
    assert "encoder.encoder.layer.0.attention.self.query.weight" in decay["names"]
    assert all(n.endswith("bias") or "LayerNorm" in n for n in no_decay["names"])
    assert "encoder.embeddings.LayerNorm.weight" in no_decay["names"]
    assert "head.bias" in no_decay["names"]
    all_names = {n for n, _ in model.named_parameters()}
    assert set(decay["names"]) | set(no_decay["names"]) == all_names
    assert no_decay_names(model) == set(no_decay["names"])
    ids = {id(p) for g in (decay, no_decay) for p in g["params"]}
    assert ids == {id(p) for p in model.parameters()}
    (adam_group,) = make_optimizer(model, replace_config(config, optimizer="adam")).param_groups
    assert adam_group["weight_decay"] == 0.0 and len(adam_group["params"]) == len(all_names)


def test_hypothesis_only_feeds_the_second_sentence(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    pairs = [("cat dog horse", "a fish"), ("sheep", "no goat")]
    alone = encode_pairs(tok, pairs, max_length=16, hypothesis_only=True)
    assert alone["input_ids"].tolist() == tok(["a fish", "no goat"], padding=True)["input_ids"]
    assert tok.decode(alone["input_ids"][0], skip_special_tokens=True) == "a fish"
    both = encode_pairs(tok, pairs, max_length=16)
    assert tok.decode(both["input_ids"][0]) == "[CLS] cat dog horse [SEP] a fish [SEP]"
    config = _config(tiny_bert, syn, tmp_path, hypothesis_only=True, epochs=1, limit=48)
    train(config, progress=False)
    clf = EncoderClassifier(tmp_path / "seed0", HFOptions(device="cpu"))
    assert clf.meta.hypothesis_only
    a = clf.classify([("cat dog horse", "a fish")])
    b = clf.classify([("sheep goat cow bird", "a fish")])
    assert a == b


def test_config_is_checked() -> None:
    with pytest.raises(TrainError, match="optimizer"):
        TrainConfig("m", "t", optimizer="sgd")
    with pytest.raises(TrainError, match="dev_fraction"):
        TrainConfig("m", "t", dev_fraction=1.0)
    with pytest.raises(TrainError, match="seeds"):
        TrainConfig("m", "t", seeds=())


def test_stratified_hold_out(syn: dict[str, str], tiny_bert: Path, tmp_path: Path) -> None:
    items = [Item(str(i), "p", "h", Label(LABELS[i % 3])) for i in range(90)]
    kept, held = stratified_split(items, 0.2, seed=3)
    assert len(held) == 18 and len(kept) == 72
    assert sorted(it.label.value for it in held if it.label) == sorted(list(LABELS) * 6)
    assert stratified_split(items, 0.2, seed=3) == (kept, held)
    assert stratified_split(items, 0.2, seed=4)[1] != held
    config = _config(tiny_bert, syn, tmp_path, dev_task=None, dev_split=None, dev_fraction=0.25)
    data = load_data(config)
    assert (len(data.train.items), len(data.dev.items)) == (144, 48)
    assert not {it.id for it in data.train.items} & {it.id for it in data.dev.items}


def test_incompatible_test_task_fails_before_training(
    syn: dict[str, str], tiny_bert: Path, tmp_path: Path
) -> None:
    sci = _write_task(Path(syn["folder"]), "syn_sci", [x.value for x in SCI4], "sci.jsonl")
    row = {"premise": "p", "hypothesis": "h", "label": "reasoning"}
    (Path(syn["folder"]) / "sci.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ClassifierError, match="cannot answer"):
        load_data(_config(tiny_bert, syn, tmp_path, test_task=sci))


# --------------------------------------------------------------------------- backend


def test_checkpoint_round_trip(tiny_bert: Path, syn: dict[str, str], tmp_path: Path) -> None:
    config = _config(tiny_bert, syn, tmp_path, epochs=2, limit=96)
    data = load_data(config)
    model, tok = build_model(config, data.labels, 0)
    result = fit(model, tok, data, config, 0, tmp_path / "ckpt", progress=False)
    saved = EncoderClassifier(tmp_path / "ckpt", HFOptions(device="cpu"))
    memory = EncoderClassifier.from_model(model, tok, saved.meta)
    assert saved.labels == LABELS and saved.meta.extra["epoch"] == result["best_epoch"]
    pairs = _pairs()
    got, want = saved.classify(pairs), memory.classify(pairs)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=1e-6)
    assert max(range(3), key=lambda i: got[0][i]) == max(range(3), key=lambda i: want[0][i])


def test_train_returns_a_typed_result_of_its_files(trained: TrainResult) -> None:
    """The result is a TrainResult: the folder's results.json, each seed's train.json (as
    read back from the files) and their mean over the one seed trained."""
    assert isinstance(trained, TrainResult) and isinstance(trained.results, Results)
    out = Path(str(trained.seeds[0]["checkpoint"])).parent
    saved = json.loads((out / "results.json").read_text())
    assert trained.results == Results.from_dict(saved, "results.json")
    config = TrainConfig.from_dict(saved["config"])
    assert trained.seeds == tuple(
        json.loads((out / f"seed{n}" / "train.json").read_text()) for n in config.seeds
    )
    (seed,) = trained.seeds
    assert trained.summary["dev_macro_f1"]["mean"] == seed["best_dev_macro_f1"]
    assert trained.summary["test_accuracy"]["mean"] == seed["test"]["accuracy"]


def test_batch_size_does_not_change_results(trained: TrainResult) -> None:
    folder = trained.seeds[0]["checkpoint"]
    one = EncoderClassifier(folder, HFOptions(device="cpu"), batch_size=1).classify(_pairs())
    many = EncoderClassifier(folder, HFOptions(device="cpu"), batch_size=16).classify(_pairs())
    assert len(one) == len(many) == 40
    for a, b in zip(one, many, strict=True):
        assert a == pytest.approx(b, abs=1e-5)
        assert math.isclose(sum(math.exp(x) for x in a), 1.0, abs_tol=1e-5)


class _Fixed:
    """A classifier backend answering every pair with the same log-probabilities."""

    name = "fixed"

    def __init__(self, labels: Sequence[str], probs: Sequence[float]) -> None:
        self.labels = tuple(labels)
        self.logp = [math.log(p) for p in probs]

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        return [list(self.logp) for _ in pairs]


def test_three_way_model_on_two_way_task_merges_exactly() -> None:
    backend = _Fixed(("neutral", "contradiction", "entailment"), (0.2, 0.25, 0.55))
    items = [
        Item(
            "h1", "The doctor saw the lawyer.", "The lawyer saw the doctor.", NLI2[1], meta={"x": 1}
        ),
        Item("h2", "The judge slept.", "The judge slept.", NLI2[0]),
    ]
    records = classify_records(backend, items, NLI2, task="hans", model="m", seed=2)
    r = records[0]
    assert r.labels == ("entailment", "non-entailment")
    assert r.loglik[0] == math.log(0.55)
    assert math.isclose(r.loglik[1], math.log(0.2 + 0.25), rel_tol=0, abs_tol=1e-15)
    assert r.probs == pytest.approx((0.55, 0.45), abs=1e-12)
    assert r.pred == "entailment" and not r.correct
    assert (r.gold, r.task, r.seed, dict(r.meta)) == ("non-entailment", "hans", 2, {"x": 1})
    backend = _Fixed(("neutral", "contradiction", "entailment"), (0.3, 0.4, 0.3))
    r = classify_records(backend, items, NLI2, task="hans", model="m")[1]
    assert r.pred == "non-entailment" and r.probs == pytest.approx((0.3, 0.7))
    assert r.gold == "entailment" and not r.correct
    # An exact tie goes to the first label of the task.
    tie = _Fixed(("entailment", "non-entailment"), (0.5, 0.5))
    assert classify_records(tie, items, NLI2, task="hans", model="m")[0].pred == "entailment"


def test_same_label_set_is_reordered_and_others_refused() -> None:
    backend = _Fixed(("contradiction", "entailment", "neutral"), (0.1, 0.6, 0.3))
    item = Item("1", "p", "h", Label.NEUTRAL)
    (r,) = classify_records(backend, [item], NLI3, task="snli", model="m")
    assert r.labels == LABELS
    assert r.loglik == pytest.approx(tuple(math.log(p) for p in (0.6, 0.3, 0.1)))
    assert r.pred == "entailment" and r.gold == "neutral"
    assert label_mapping(("entailment", "non-entailment"), NLI2) == [(0,), (1,)]
    with pytest.raises(ClassifierError, match="cannot answer"):
        label_mapping(("entailment", "non-entailment"), NLI3)
    with pytest.raises(ClassifierError, match="cannot answer"):
        label_mapping(LABELS, SCI4)


# --------------------------------------------------------------------------- two stages


def test_two_stage_fresh_head_on_stage_one_encoder(
    trained: TrainResult, tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    stage1 = Path(trained.results.config["out"])
    ckpt = seed_checkpoint(stage1, 0)
    assert ckpt == stage1 / "seed0"
    old, _, _ = load_classifier(ckpt)
    config = _config(tiny_bert, syn, tmp_path, lr=1e-3, epochs=1, limit=48)
    fresh, _ = build_model(config, LABELS, 0, init_from=ckpt)
    for name, value in old.encoder.state_dict().items():
        assert torch.equal(fresh.encoder.state_dict()[name], value), name
    assert not torch.equal(fresh.head.weight, old.head.weight)
    assert torch.count_nonzero(fresh.head.bias) == 0
    kept, _ = build_model(config, LABELS, 0, init_from=ckpt, fresh_head=False)
    assert torch.equal(kept.head.weight, old.head.weight)
    results = train(config, init_from=stage1, progress=False)
    assert results.seeds[0]["init_from"] == str(ckpt)
    assert (
        results.results.config["init_from"] == str(stage1) and results.results.config["fresh_head"]
    )
    with pytest.raises(TrainError, match="seed5"):
        seed_checkpoint(stage1, 5)


# --------------------------------------------------------------------------- command line


def test_train_command(tiny_bert: Path, syn: dict[str, str], tmp_path: Path, capsys: Any) -> None:
    from nlieval.cli.train import add_commands

    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command"))
    argv = [
        "train", "--model", str(tiny_bert), "--task", syn["task"], "--dev-task", syn["dev"],
        "--dev-split", "test", "--epochs", "1", "--seeds", "4,", "--limit", "32",
        "--max-length", "16", "--optimizer", "adamw", "--lr", "1e-3", "--device", "cpu",
        "--no-progress", "--out", str(tmp_path / "cli"),
    ]  # fmt: skip
    args = parser.parse_args(argv)
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "mean over seeds" in out and "test macro F1" in out
    results = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert results["config"]["optimizer"] == "adamw" and results["config"]["seeds"] == [4]
    assert results["metrics"][0]["seeds"] == [4]
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--task", "x", "--out", "o", "--seeds", "0"])


def test_nlieval_run_uses_a_trained_classifier(
    trained: TrainResult, syn: dict[str, str], tmp_path: Path
) -> None:
    from nlieval.choice import RunConfig, run
    from nlieval.runs import RunFolder

    out_folder = trained.results.config["out"]
    cfg = RunConfig(model=out_folder, tasks=(syn["task"],), shots=(0, 3))
    res = run(cfg, tmp_path / "r", progress=False)
    records = RunFolder(tmp_path / "r").records()
    # Shots do not apply to a classifier; the train folder's seed0 checkpoint is used.
    assert {r.k for r in records} == {0}
    assert {r.checkpoint for r in records} == {str(Path(out_folder) / "seed0")}
    assert len(records) == 48
    want = trained.seeds[0]["test"]["accuracy"]
    assert res.metrics[0]["accuracy"] == pytest.approx(want)


def _train_cli(tiny_bert: Path, syn: dict[str, str], out: Path) -> subprocess.Popen[str]:
    argv = [
        "train", "--model", str(tiny_bert), "--task", syn["task"], "--dev-task", syn["dev"],
        "--dev-split", "test", "--epochs", "3", "--seeds", "3", "--max-length", "16",
        "--lr", "3e-3", "--device", "cpu", "--no-progress", "--out", str(out),
    ]  # fmt: skip
    # One thread in both runs: the same arithmetic, so the same numbers.
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.Popen(
        [sys.executable, "-m", "nlieval.cli", *argv],
        cwd=out.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_train_kill_9_then_resume_equals_uninterrupted(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    ref = _train_cli(tiny_bert, syn, tmp_path / "ref")
    ref_out, ref_err = ref.communicate(timeout=300)
    assert ref.returncode == 0, ref_err
    out = tmp_path / "killed"
    proc = _train_cli(tiny_bert, syn, out)
    records = out / "records.jsonl"
    deadline = time.time() + 120
    # Killed as soon as the first seed's records are there: in the middle of seed 1.
    while time.time() < deadline and proc.poll() is None:
        if records.is_file() and records.stat().st_size > 0:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    # By hand: torn (a kill may leave half a line).
    n_before = len(records.read_text().splitlines()) if records.exists() else 0
    assert 0 < n_before < 3 * 48, "the run was not killed between its first and last seed"
    assert not (out / "seed2" / "train.json").exists()
    again = _train_cli(tiny_bert, syn, out)
    again_out, again_err = again.communicate(timeout=300)
    assert again.returncode == 0, again_err
    # The printed table is the uninterrupted run's.
    assert again_out == ref_out.replace(str(tmp_path / "ref"), str(out))
    got, want = saved_records(out), RunFolder(tmp_path / "ref").records()
    assert len({(r.seed, r.item_id) for r in got}) == 3 * 48
    by_key = {(r.seed, r.item_id): r for r in want}
    for r in got:
        w = by_key[(r.seed, r.item_id)]
        assert r.pred == w.pred
        assert max(abs(a - b) for a, b in zip(r.loglik, w.loglik, strict=True)) < 1e-5
    m_got = json.loads((out / "results.json").read_text())["metrics"]
    m_want = json.loads((tmp_path / "ref" / "results.json").read_text())["metrics"]
    assert [(m["seeds"], m["accuracy"], m["macro_f1"]) for m in m_got] == [
        (m["seeds"], m["accuracy"], m["macro_f1"]) for m in m_want
    ]


def test_a_trained_seed_cut_short_in_its_test_is_not_trained_again(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # What a kill during the test scoring leaves: a complete checkpoint and train.json,
    # and only part of the seed's records (here the first 10 of 48 lines kept).
    from nlieval.runs import RunFolder

    cfg = _config(tiny_bert, syn, tmp_path / "t", seeds=(0, 1))
    first = train(cfg, progress=False)
    want = {(r.seed, r.item_id): r for r in RunFolder(cfg.out).records()}
    records = Path(cfg.out) / "records.jsonl"
    lines = records.read_text().splitlines(keepends=True)
    assert len(lines) == 96
    kept = [ln for ln in lines if json.loads(ln)["seed"] == 0][:10]
    records.write_text("".join(kept))
    weights = Path(cfg.out) / "seed1" / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    with caplog.at_level("INFO", logger="nlieval.sci.train"):
        again = train(cfg, progress=False)
    assert "seed 0 already trained" in caplog.text and "seed 1 already trained" in caplog.text
    assert weights.stat().st_mtime_ns == stamp  # loaded, not trained and saved again
    got = RunFolder(cfg.out).records()
    assert len(got) == 96 and {(r.seed, r.item_id) for r in got} == set(want)
    for r in got:
        w = want[(r.seed, r.item_id)]
        assert r.pred == w.pred
        assert max(abs(a - b) for a, b in zip(r.loglik, w.loglik, strict=True)) < 1e-5
    # The seeds' test summaries agree; a mean over re-scored items (gold NLL) only to the
    # log-likelihoods' own tolerance above: a reloaded model sums in another order.
    for a, b in zip(again.seeds, first.seeds, strict=True):
        assert a["test"].keys() == b["test"].keys()
        for key, value in a["test"].items():
            if isinstance(value, float):
                assert value == pytest.approx(b["test"][key], abs=1e-5), key
            else:
                assert value == b["test"][key], key


def test_folder_from_python_resumes_from_the_cli(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from nlieval.cli import main

    out = tmp_path / "py"
    first = train(_config(tiny_bert, syn, out, epochs=1, sample=32), progress=False)
    records = (out / "records.jsonl").read_text().splitlines()  # by hand: bytes
    argv = [
        "train", "--model", str(tiny_bert), "--task", syn["task"], "--dev-task", syn["dev"],
        "--dev-split", "test", "--epochs", "1", "--lr", "3e-3", "--max-length", "16",
        "--sample", "32", "--device", "cpu", "--seeds", "0,1", "--out", str(out),
        "--no-progress",
    ]  # fmt: skip
    with caplog.at_level("INFO", logger="nlieval.sci.train"):
        assert main(argv) == 0
    assert "seed 0 already trained" in caplog.text  # reused, not trained again
    after = (out / "records.jsonl").read_text().splitlines()
    assert after[: len(records)] == records and len(after) == 2 * len(records)
    again = json.loads((out / "results.json").read_text())
    assert [p["command"] for p in again["provenance"]] == ["train", "train"]
    assert (
        first.seeds[0]["best_epoch"]
        == json.loads((out / "seed0" / "train.json").read_text())["best_epoch"]
    )


def test_folder_whose_limit_was_a_sample_is_not_resumed(
    tiny_bert: Path, syn: dict[str, str], tmp_path: Path
) -> None:
    # Before --limit meant the first N in every command, train's --limit was a seeded
    # sample: such a folder's records are of other items than --limit now takes.
    out = tmp_path / "old"
    train(_config(tiny_bert, syn, out, epochs=1, limit=32), progress=False)
    saved = json.loads((out / "config.json").read_text())
    del saved["items_rule"], saved["sample"], saved["sample_seed"]
    (out / "config.json").write_text(json.dumps(saved))
    with pytest.raises(RunError, match="items_rule: 1 -> 2"):
        train(_config(tiny_bert, syn, out, epochs=1, limit=32, seeds=(0, 1)), progress=False)


def test_edited_test_data_is_refused(tiny_bert: Path, syn: dict[str, str], tmp_path: Path) -> None:
    import shutil

    data = tmp_path / "syn"
    shutil.copytree(syn["folder"], data)
    task = str(data / Path(syn["task"]).name)
    dev = str(data / Path(syn["dev"]).name)
    out = tmp_path / "t"
    train(_config(tiny_bert, {"task": task, "dev": dev}, out, epochs=1), progress=False)
    before = (out / "records.jsonl").read_bytes()  # by hand: bytes
    rows = (data / "test.jsonl").read_text().splitlines()
    rows[0] = rows[0].replace('"hypothesis": "', '"hypothesis": "edited ')
    (data / "test.jsonl").write_text("\n".join(rows) + "\n")
    more = _config(tiny_bert, {"task": task, "dev": dev}, out, epochs=1, seeds=(0, 1))
    with pytest.raises(RunError, match="data test"):
        train(more, progress=False)
    assert (out / "records.jsonl").read_bytes() == before
