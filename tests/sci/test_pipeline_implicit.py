"""The implicit-relations pipeline of METHODS.md section 4, end to end through the CLI.

``build distant`` -> ``train`` (explicit pairs) -> ``build implicit --classifier`` (that
real classifier) -> ``train`` (stage one: implicit pairs) -> ``train --init-from`` (stage
two: explicit pairs, fresh head, lower learning rate) -> ``run`` on the explicit task.
A tiny random BERT and a small corpus written here keep it to seconds.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from nlieval.backends import HFOptions  # noqa: E402
from nlieval.backends.classifier import EncoderClassifier, load_classifier  # noqa: E402
from nlieval.classifiers import is_classifier_folder  # noqa: E402
from nlieval.cli import main  # noqa: E402
from nlieval.runs import RunFolder  # noqa: E402
from nlieval.sci import distant_build  # noqa: E402
from nlieval.sci import train as train_mod  # noqa: E402
from nlieval.sci.distant import (  # noqa: E402
    LINKING_PHRASES,
    classifier_fn,
    implicit_candidates,
    match_linking_phrase,
    read_corpus,
)
from nlieval.types import SCI4, Label  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SUBJECTS = ["the model", "our method", "the baseline", "the encoder", "the parser", "this approach"]
VERBS = ["improves on", "struggles with", "predicts", "handles", "learns", "ignores"]
OBJECTS = ["long sentences", "rare words", "noisy labels", "small data", "new domains", "negation"]
# Some of METHODS.md's linking phrases for each class, as they open a sentence.
LINKS = [
    "However,",
    "On the other hand,",
    "In contrast,",
    "Therefore,",
    "Thus,",
    "As a result,",
    "Specifically,",
    "In particular,",
    "In other words,",
]
C, R, E, N = (lab.value for lab in SCI4)


def _sentence(rng: random.Random) -> str:
    text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}."
    return text[0].upper() + text[1:]


def _write_corpus(path: Path, n_docs: int = 12) -> Path:
    """Papers of two paragraphs of six sentences; 40% of sentences after the first of a
    paragraph open with a linking phrase."""
    rng = random.Random(0)
    with path.open("w", encoding="utf-8") as fh:
        for d in range(n_docs):
            paragraphs = []
            for _ in range(2):
                para = [_sentence(rng)]
                for _ in range(5):
                    s = _sentence(rng)
                    if rng.random() < 0.4:
                        s = f"{rng.choice(LINKS)} {s[0].lower()}{s[1:]}"
                    para.append(s)
                paragraphs.append(para)
            fh.write(json.dumps({"id": f"paper{d}", "text": paragraphs}) + "\n")
    return path


def _tiny_bert(folder: Path) -> Path:
    """A 2-layer random BERT (hidden 32) whose WordPiece vocabulary is the corpus's words."""
    from transformers import BertTokenizer

    words = sorted({w for t in SUBJECTS + VERBS + OBJECTS + LINKS for w in re.findall(r"\w+", t)})
    make_tiny_bert(folder, [".", ",", *(w.lower() for w in words)], max_positions=64)
    tok = BertTokenizer.from_pretrained(folder)
    assert tok.unk_token not in tok.tokenize(" ".join(LINKS + SUBJECTS + VERBS + OBJECTS))
    return folder


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _json(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def _threshold(corpus: Path, checkpoint: Path) -> tuple[float, list[list[float]]]:
    """Probabilities of every implicit candidate by the classifier (as ``build implicit``
    computes them: chunks of 256), and a threshold between two distinct confidences
    about a quarter of the way up, so that the threshold drops some candidates."""
    cands = implicit_candidates(read_corpus([corpus]))
    fn = classifier_fn(EncoderClassifier(checkpoint, HFOptions(device="cpu")))
    probs: list[list[float]] = []
    for start in range(0, len(cands), 256):
        probs += [list(p) for p in fn([(c.sentence1, c.sentence2) for c in cands[start:][:256]])]
    conf = sorted(max(p) for p in probs)
    i = next(i for i in range(len(conf) // 4, len(conf)) if conf[i] > conf[i - 1])
    return (conf[i - 1] + conf[i]) / 2, probs


def test_implicit_relations_pipeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _write_corpus(tmp_path / "papers.jsonl")
    bert = _tiny_bert(tmp_path / "bert")
    data, runs = tmp_path / "data", tmp_path / "runs"
    distant_yaml, implicit_yaml = str(data / "distant.yaml"), str(data / "implicit.yaml")
    common = ["--model", str(bert), "--epochs", "1", "--seeds", "1", "--max-length", "48"]
    common += ["--batch-size", "8", "--device", "cpu", "--no-progress", "--no-test"]

    # 1. Explicit pairs (linking phrases) and neutral pairs, classes balanced.
    assert main(["build", "distant", "--corpus", str(corpus), "--out", str(data)]) == 0
    explicit = _rows(data / "distant.jsonl")
    counts = _json(data / "distant.counts.json")
    m = min(counts["before"].values())
    assert m > 0 and counts["after"] == {C: m, R: m, E: m, N: m} and len(explicit) == 4 * m
    assert f"wrote {4 * m} pairs" in capsys.readouterr().out
    for row in explicit:
        assert match_linking_phrase(row["sentence2"]) is None
        if row["label"] == N:
            assert not row["adjacent"] and row["phrase"] is None
        else:
            assert row["adjacent"] and row["phrase"] in LINKING_PHRASES[Label(row["label"])]

    # 2. A classifier trained on them (the built YAML is a training task as it is; it is
    # not a test task of its own training run).
    explicit0 = runs / "explicit0"
    argv = ["train", "--task", distant_yaml, "--lr", "3e-3", "--out", str(explicit0)]
    assert main([*argv, *[a for a in common if a != "--no-test"]]) == 2
    assert "is the training data" in capsys.readouterr().err and not explicit0.exists()
    assert main([*argv, *common]) == 0
    # A run folder without test records; the seed's own results in seed0/train.json.
    assert _json(explicit0 / "config.json")["kind"] == "train"
    assert _json(explicit0 / "results.json")["metrics"] == []
    res = _json(explicit0 / "seed0" / "train.json")
    assert res["labels"] == [C, R, E, N]
    assert res["data"]["train"]["n"] + res["data"]["dev"]["n"] == len(explicit)
    assert is_classifier_folder(explicit0 / "seed0")

    # 3. Implicit candidates pseudo-labelled by that classifier itself.
    threshold, probs = _threshold(corpus, explicit0 / "seed0")
    argv = ["build", "implicit", "--corpus", str(corpus), "--out", str(data)]
    argv += ["--classifier", str(explicit0 / "seed0"), "--threshold", repr(threshold)]
    assert main(argv) == 0
    assert f"scoring the candidates with {explicit0 / 'seed0'}" in capsys.readouterr().out
    cands = implicit_candidates(read_corpus([corpus]))
    by_id = {c.id: (c, p) for c, p in zip(cands, probs, strict=True)}
    implicit = _rows(data / "implicit.jsonl")
    for row in implicit:
        cand, p = by_id[row["id"]]
        best = max(range(4), key=lambda c: p[c])
        # The real classifier's own probabilities, not made-up ones.
        assert row["label"] == SCI4[best].value and row["confidence"] == pytest.approx(p[best])
        assert row["confidence"] >= threshold
        assert row["adjacent"] == (row["label"] != N) == (cand.j == cand.i + 1)
        assert match_linking_phrase(row["sentence2"]) is None
    conf = [max(p) for p in probs]
    label = [SCI4[max(range(4), key=lambda c: p[c])] for p in probs]
    kept = [
        c.id
        for c, x, lab in zip(cands, conf, label, strict=True)
        if x >= threshold and c.adjacent == (lab is not Label.NEUTRAL)
    ]
    stats = _json(data / "implicit.counts.json")["stats"]
    assert stats == {
        "candidates": len(cands),
        "dropped_below_threshold": sum(x < threshold for x in conf),
        "dropped_adjacent_neutral": sum(
            x >= threshold and c.adjacent and lab is Label.NEUTRAL
            for c, x, lab in zip(cands, conf, label, strict=True)
        ),
        "dropped_nonadjacent_relation": sum(
            x >= threshold and not c.adjacent and lab is not Label.NEUTRAL
            for c, x, lab in zip(cands, conf, label, strict=True)
        ),
    }
    assert stats["dropped_below_threshold"] >= len(cands) // 4
    assert [r["id"] for r in implicit] == kept and len(kept) >= 10
    # A train output folder also names its classifier (the lowest seed).
    assert distant_build.load_classifier(str(explicit0)) is not None
    assert f"scoring the candidates with {explicit0 / 'seed0'}" in capsys.readouterr().out

    # 4. Stage one: the implicit pairs.
    stage1 = runs / "implicit"
    argv = ["train", "--task", implicit_yaml, "--lr", "3e-3", "--out", str(stage1)]
    assert main([*argv, *common]) == 0
    res1 = _json(stage1 / "seed0" / "train.json")
    assert res1["data"]["train"]["n"] + res1["data"]["dev"]["n"] == len(implicit)
    assert res1["init_from"] is None and _json(stage1 / "config.json")["init_from"] is None

    # 5. Stage two: the explicit pairs from stage one's encoder, fresh head, lower lr.
    started: dict[str, Any] = {}
    real_build = train_mod.build_model

    def spy(*args: Any, **kw: Any) -> Any:
        model, tok = real_build(*args, **kw)
        started["encoder"] = {k: v.clone() for k, v in model.encoder.state_dict().items()}
        started["head"] = {k: v.clone() for k, v in model.head.state_dict().items()}
        return model, tok

    stage2 = runs / "explicit"
    argv = ["train", "--task", distant_yaml, "--init-from", str(stage1), "--lr", "1e-3"]
    with monkeypatch.context() as patch:
        patch.setattr(train_mod, "build_model", spy)
        assert main([*argv, "--out", str(stage2), *common]) == 0
    cfg1, cfg2 = _json(stage1 / "results.json")["config"], _json(stage2 / "results.json")["config"]
    assert cfg2["init_from"] == str(stage1) and cfg2["fresh_head"] is True
    assert _json(stage2 / "seed0" / "train.json")["init_from"] == str(stage1 / "seed0")
    assert cfg2["lr"] < cfg1["lr"]
    from transformers import AutoModel

    one, _, _ = load_classifier(stage1 / "seed0")
    two, _, _ = load_classifier(stage2 / "seed0")
    base = AutoModel.from_pretrained(bert)
    assert started["encoder"].keys() == one.encoder.state_dict().keys()
    for name, value in one.encoder.state_dict().items():
        assert torch.equal(started["encoder"][name], value), name
    # Stage one did move the encoder, and stage two moved it on from there.
    assert any(not torch.equal(v, started["encoder"][k]) for k, v in base.state_dict().items())
    assert any(
        not torch.equal(v, started["encoder"][k]) for k, v in two.encoder.state_dict().items()
    )
    assert torch.count_nonzero(started["head"]["bias"]) == 0
    assert not torch.equal(started["head"]["weight"], one.head.weight)

    # 6. The final classifier scores the explicit task.
    out = runs / "eval"
    argv = ["run", "--model", str(stage2), "--task", distant_yaml, "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    records = RunFolder(out).records()
    assert len(records) == len(explicit)
    assert {r.checkpoint for r in records} == {str(stage2 / "seed0")}
    assert {r.item_id for r in records} == {row["id"] for row in explicit}
    metrics = _json(out / "results.json")["metrics"]
    assert len(metrics) == 1 and 0.0 <= metrics[0]["accuracy"] <= 1.0
