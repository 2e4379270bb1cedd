"""Off-the-shelf sequence classifiers (``AutoModelForSequenceClassification``) in
``nlieval run``: a tiny random BERT and a tiny random Llama, their ``id2label`` in a
shuffled order, scored on real SNLI and HANS items and checked against the test's own
forward passes, softmax and hand-written label dictionaries."""

from __future__ import annotations

import json
import logging
import math
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from nlieval import data  # noqa: E402
from nlieval.backends import EngineOptions, HFOptions, resolve  # noqa: E402
from nlieval.backends.hf_classifier import HFSequenceClassifier, is_sequence_classifier  # noqa: E402
from nlieval.choice import RunConfig, run  # noqa: E402
from nlieval.classifiers import (  # noqa: E402
    ClassifierError,  # noqa: E402
    parse_label_map,
    task_labels_of,
)
from nlieval.cli import main  # noqa: E402
from nlieval.runs import RunError, RunFolder  # noqa: E402
from nlieval.types import Item, Record  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402
from tests.helpers.tiny_models import llama_config, train_tokenizer  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LIMIT = 20
BERT_MAX = 64  # positions of the tiny BERT: SNLI pairs, a token per character, are cut
CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789.,'\"!?-:;()&/")

# The test's own reading of each model's outputs, written by hand (not read from id2label).
BERT_OUTPUTS = {0: "contradiction", 1: "entailment", 2: "neutral"}
LLAMA_OUTPUTS = {0: "neutral", 1: "contradiction", 2: "entailment"}
HANS = {"entailment": "entailment", "neutral": "non-entailment", "contradiction": "non-entailment"}
NLI3 = ("entailment", "neutral", "contradiction")
# float32 on the CPU, as the test's own computation, also where a GPU is there.
CPU = HFOptions(device="cpu")
ON_CPU = EngineOptions(hf=CPU)


def _bert(folder: Path, **labels: Any) -> Path:
    """A 2-layer random ``BertForSequenceClassification`` whose WordPiece vocabulary is
    single characters (every word is spelled out, nothing is unknown), 64 positions."""
    folder.mkdir(parents=True)
    return make_tiny_bert(
        folder,
        [*CHARS, *("##" + c for c in CHARS)],
        BERT_MAX,
        head="BertForSequenceClassification",
        max_length=BERT_MAX,
        initializer_range=0.2,  # logits far enough apart that the predictions vary
        **labels,
    )


def _llama(folder: Path, pad: int | None = 2) -> Path:
    """A 2-layer random ``LlamaForSequenceClassification`` with a byte-level BPE tokenizer;
    it scores the last token that is not ``pad`` (None: no pad id)."""
    from transformers import AutoTokenizer, LlamaForSequenceClassification

    folder.mkdir(parents=True)
    train_tokenizer(folder)
    torch.manual_seed(1)
    config = llama_config(
        len(AutoTokenizer.from_pretrained(folder)),
        pad_token_id=pad,
        initializer_range=0.2,
        id2label={i: name.upper() for i, name in LLAMA_OUTPUTS.items()},
    )
    LlamaForSequenceClassification(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``bert`` and ``llama`` (id2label shuffled), ``bert_ids`` (LABEL_0..2, the same
    weights as ``bert``), ``two_way`` (entailment / not_entailment), ``sentiment``
    (positive / negative: no NLI label)."""
    root = tmp_path_factory.mktemp("seq-classifiers")
    return {
        "bert": _bert(root / "bert", id2label=BERT_OUTPUTS),
        "bert_ids": _bert(root / "bert-ids", num_labels=3),
        "two_way": _bert(root / "two-way", id2label={0: "entailment", 1: "not_entailment"}),
        "sentiment": _bert(root / "sentiment", id2label={0: "positive", 1: "negative"}),
        "llama": _llama(root / "llama"),
        "llama_no_pad": _llama(root / "llama-no-pad", pad=None),
    }


def _own_probs(folder: Path, pairs: list[tuple[str, str]], outputs: Mapping[int, str]) -> Any:
    """Per pair, the test's own label probabilities: one unpadded pair per forward pass,
    the tokenizer's pair encoding cut to its own maximum, softmax, then each output's
    probability added to the label ``outputs`` gives it."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    cut = tok.model_max_length < 10**6
    out = []
    with torch.no_grad():
        for premise, hypothesis in pairs:
            enc = tok(premise, hypothesis, truncation=cut, return_tensors="pt")
            probs = torch.softmax(model(**enc).logits[0].double(), dim=-1).tolist()
            mine: dict[str, float] = {}
            for i, p in enumerate(probs):
                mine[outputs[i]] = mine.get(outputs[i], 0.0) + p
            out.append(mine)
    return out


def _items(data_dir: Path, task: str) -> list[Item]:
    return list(data.load_task(task, data_dir).items[:LIMIT])


def _records(out: Path) -> dict[str, Record]:
    return {r.item_id: r for r in RunFolder(out).records()}


def _check(records: Mapping[str, Record], items: list[Item], own: Any, labels: Any) -> None:
    assert sorted(records) == sorted(it.id for it in items)
    for item, mine in zip(items, own, strict=True):
        rec = records[item.id]
        assert rec.labels == tuple(labels)
        want = [mine[name] for name in labels]
        assert list(rec.probs) == pytest.approx(want, abs=1e-5), item.id
        assert [math.exp(x) for x in rec.loglik] == pytest.approx(want, abs=1e-5)
        assert rec.pred == max(labels, key=lambda name: mine[name]), item.id
        assert rec.gold == (item.label.value if item.label else None)


@pytest.mark.parametrize("arch", ["bert", "llama"])
def test_snli_records_match_the_tests_own_computation(
    arch: str, models: dict[str, Path], data_dir: Path, tmp_path: Path
) -> None:
    folder = models[arch]
    assert is_sequence_classifier(str(folder))
    cfg = RunConfig(str(folder), ("snli",), limit=LIMIT, data_dir=str(data_dir), engines=ON_CPU)
    results = run(cfg, tmp_path / "run", progress=False)
    items = _items(data_dir, "snli")
    outputs = BERT_OUTPUTS if arch == "bert" else LLAMA_OUTPUTS
    own = _own_probs(folder, [(it.premise, it.hypothesis) for it in items], outputs)
    records = _records(tmp_path / "run")
    _check(records, items, own, NLI3)
    assert len({r.pred for r in records.values()}) > 1  # not one label for every item
    assert results.metrics[0]["n"] == LIMIT
    if arch == "bert":
        # The pairs are longer than the model's 64 positions: cut, as the test cut them.
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        assert max(len(tok(it.premise, it.hypothesis)["input_ids"]) for it in items) > BERT_MAX


def test_hans_counts_neutral_and_contradiction_as_non_entailment(
    models: dict[str, Path], data_dir: Path, tmp_path: Path
) -> None:
    cfg = RunConfig(
        str(models["bert"]), ("hans",), limit=LIMIT, data_dir=str(data_dir), engines=ON_CPU
    )
    run(cfg, tmp_path / "hans", progress=False)
    items = _items(data_dir, "hans")
    outputs = {i: HANS[name] for i, name in BERT_OUTPUTS.items()}
    own = _own_probs(models["bert"], [(it.premise, it.hypothesis) for it in items], outputs)
    _check(_records(tmp_path / "hans"), items, own, ("entailment", "non-entailment"))
    # The sum of two of the three probabilities, not a renormalised pair.
    three = _own_probs(models["bert"], [(items[0].premise, items[0].hypothesis)], BERT_OUTPUTS)
    rec = _records(tmp_path / "hans")[items[0].id]
    assert rec.probs[1] == pytest.approx(three[0]["neutral"] + three[0]["contradiction"], 1e-5)


@pytest.mark.parametrize("arch", ["bert", "llama"])
def test_batch_sizes_1_and_7_give_the_same_records(
    arch: str, models: dict[str, Path], data_dir: Path, tmp_path: Path
) -> None:
    got = {}
    for bs in (1, 7):
        cfg = RunConfig(
            str(models[arch]),
            ("snli",),
            limit=LIMIT,
            data_dir=str(data_dir),
            batch_size=bs,
            engines=ON_CPU,
        )
        run(cfg, tmp_path / f"bs{bs}", progress=False)
        got[bs] = _records(tmp_path / f"bs{bs}")
    assert sorted(got[1]) == sorted(got[7])
    for key, one in got[1].items():
        seven = got[7][key]
        assert one.pred == seven.pred
        assert one.probs == pytest.approx(seven.probs, abs=1e-5)
        assert one.loglik == pytest.approx(seven.loglik, abs=1e-5)


def test_a_model_without_pad_id_is_run_one_pair_at_a_time(models: dict[str, Path]) -> None:
    pairs = [("A man sleeps.", "Nobody sleeps."), ("Two dogs run in the snow.", "Dogs move.")]
    pairs += [("A woman is reading a long book in the park today.", "She reads.")] * 2
    clf = HFSequenceClassifier(str(models["llama_no_pad"]), HFOptions(device="cpu"), batch_size=7)
    assert clf.one_at_a_time and clf.labels == ("neutral", "contradiction", "entailment")
    own = _own_probs(models["llama_no_pad"], pairs, LLAMA_OUTPUTS)
    for row, mine in zip(clf.classify(pairs), own, strict=True):
        assert [math.exp(x) for x in row] == pytest.approx(
            [mine[LLAMA_OUTPUTS[i]] for i in range(3)], abs=1e-5
        )


def test_label_map_names_label_ids(
    models: dict[str, Path], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, out = str(models["bert_ids"]), str(tmp_path / "ids")
    argv = ["run", "--model", folder, "--task", "snli", "--limit", str(LIMIT)]
    argv += ["--data-dir", str(data_dir), "--device", "cpu", "--no-progress", "--out", out]
    # Without a map: refused, one line naming the labels, before the folder is made.
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "LABEL_0, LABEL_1, LABEL_2" in err, err
    assert "--label-map" in err and not Path(out).exists()
    mapping = "LABEL_0=contradiction,LABEL_1=entailment,LABEL_2=neutral"
    assert main([*argv, "--label-map", mapping]) == 0
    capsys.readouterr()
    items = _items(data_dir, "snli")
    # The same weights as `bert`, whose outputs BERT_OUTPUTS names.
    own = _own_probs(
        models["bert_ids"], [(it.premise, it.hypothesis) for it in items], BERT_OUTPUTS
    )
    _check(_records(Path(out)), items, own, NLI3)
    saved = json.loads((Path(out) / "config.json").read_text())
    assert saved["label_map"] == mapping.split(",")
    # Resuming with another map is refused by the folder's identity; the same map resumes.
    before = (Path(out) / "records.jsonl").read_text()  # by hand: bytes
    other = "LABEL_0=entailment,LABEL_1=neutral,LABEL_2=contradiction"
    capsys.readouterr()  # the test's own loading above
    assert main([*argv, "--label-map", other]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "label_map" in err and "other settings" in err, err
    assert (Path(out) / "records.jsonl").read_text() == before
    cfg = RunConfig(
        folder, ("snli",), limit=LIMIT, data_dir=str(data_dir), label_map=other, engines=ON_CPU
    )
    with pytest.raises(RunError, match="label_map"):
        run(cfg, out, progress=False)
    spelled = "LABEL_2=Neutral, LABEL_1=ENTAILMENT, LABEL_0=c"  # another spelling, one map
    assert main([*argv, "--label-map", spelled]) == 0
    assert (Path(out) / "records.jsonl").read_text() == before  # nothing recomputed


def test_unmappable_models_are_refused_in_one_line(
    models: dict[str, Path], data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refused(model: str, task: str, *extra: str) -> str:
        out = tmp_path / f"{Path(model).name}-{task}"
        argv = ["run", "--model", model, "--task", task, "--limit", "4", "--no-progress"]
        assert main([*argv, "--data-dir", str(data_dir), "--out", str(out), *extra]) == 2
        assert not out.exists()
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        return err

    err = refused(str(models["sentiment"]), "snli")
    assert "positive, negative" in err and "--label-map" in err
    # A 2-way model cannot answer a 3-way task: the task labels it lacks are named.
    err = refused(str(models["two_way"]), "snli")
    assert "no model label for neutral, contradiction" in err and "task snli" in err
    # A map onto labels the task does not have, or naming labels the model lacks.
    err = refused(str(models["sentiment"]), "snli", "--label-map", "positive=e,negative=c")
    assert "no model label for neutral" in err
    err = refused(str(models["bert"]), "snli", "--label-map", "LABEL_7=e")
    assert "LABEL_7" in err and "contradiction, entailment, neutral" in err
    # The 2-way model answers HANS directly.
    cfg = RunConfig(
        str(models["two_way"]), ("hans",), limit=4, data_dir=str(data_dir), engines=ON_CPU
    )
    run(cfg, tmp_path / "two-way-hans", progress=False)
    assert len(_records(tmp_path / "two-way-hans")) == 4


def test_label_map_spelling_and_other_models(
    tiny_llama: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert parse_label_map({"LABEL_1": "Not_Entailment", "LABEL_0": "E"}) == (
        "LABEL_0=entailment",
        "LABEL_1=non-entailment",
    )
    for bad, why in (("LABEL_0", "NAME=LABEL"), ("a=e,a=n", "twice"), ("a=maybe", "'maybe'")):
        with pytest.raises(ValueError, match=why):
            parse_label_map(bad)
    with pytest.raises(SystemExit):
        main(["run", "--task", "smoke", "--label-map", "LABEL_0", "--out", str(tmp_path / "x")])
    assert "expected NAME=LABEL pairs" in capsys.readouterr().err
    # Two outputs may share a label (their probabilities add up); "1"/"2" need a map.
    assert task_labels_of({0: "e", 1: "N", 2: "contradiction"}) == NLI3
    with pytest.raises(ClassifierError, match="for its labels 1, 2"):
        task_labels_of({0: "1", 1: "2"})
    # A causal LM takes no label map.
    cfg = RunConfig(str(tiny_llama), ("smoke",), limit=2, label_map="LABEL_0=e", engines=ON_CPU)
    with pytest.raises(ValueError, match="is not one"):
        run(cfg, tmp_path / "lm", progress=False)
    assert not (tmp_path / "lm").exists()
    assert not is_sequence_classifier(str(tiny_llama))


def test_shots_are_ignored_with_a_warning(
    models: dict[str, Path], data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = RunConfig(
        str(models["llama"]),
        ("snli",),
        shots=(0, 3),
        seeds=(0, 1),
        limit=5,
        data_dir=str(data_dir),
        engines=ON_CPU,
    )
    with caplog.at_level(logging.WARNING):
        run(cfg, tmp_path / "shots", progress=False)
    assert "sequence classifier: shots (0, 3) ignored" in caplog.text
    records = RunFolder(tmp_path / "shots").records()
    assert len(records) == 5 and {(r.k, r.seed) for r in records} == {(0, 0)}
    assert all(r.prompt == "" and r.shots == () for r in records)


def test_fingerprint_covers_weights_config_and_tokenizer(
    models: dict[str, Path], tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(models["bert"], copy)
    first = resolve(str(copy)).fingerprints()["model"]
    assert (
        first.startswith("files:") and first == resolve(str(models["bert"])).fingerprints()["model"]
    )
    seen = {first}
    for name in ("vocab.txt", "tokenizer_config.json", "config.json", "model.safetensors"):
        path = copy / name
        if name.endswith(".json"):
            d = json.loads(path.read_text())
            d["nlieval_test_edit"] = name
            path.write_text(json.dumps(d))
        else:
            path.write_bytes(path.read_bytes() + b"\n")
        now = resolve(str(copy)).fingerprints()["model"]
        assert now not in seen, name
        seen.add(now)
