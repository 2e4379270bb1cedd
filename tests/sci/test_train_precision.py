"""``nlieval train --grad-accum N --precision bf16``: float32 with no accumulation is the
loop as it was, N micro-batches of b make the step of one batch of N b, a bf16 step's loss
is near the float32 one, and train folders made before the settings resume untouched."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

from nlieval.classifiers import encode_pairs  # noqa: E402
from nlieval.cli import main  # noqa: E402
from nlieval.runs import RunError, RunFolder  # noqa: E402
from nlieval.sci.train import TrainConfig, build_model, fit, load_data, train  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402
from tests.helpers.tiny_models import tiny_model  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NOUNS = ["cat", "dog", "bird", "fish", "horse", "cow"]
CUE = {"entailment": "a", "neutral": "the", "contradiction": "no"}
LABELS = tuple(CUE)


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny BERT of the encoder tests (dropout 0.1)."""
    return make_tiny_bert(tmp_path_factory.mktemp("bert"), [*NOUNS, *CUE.values(), "sees"])


@pytest.fixture(scope="module")
def bert_no_dropout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same BERT with every dropout rate 0: a training step is then a function of
    the batch alone."""
    folder = make_tiny_bert(tmp_path_factory.mktemp("bert0"), [*NOUNS, *CUE.values(), "sees"])
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("syn")
    for name, n, seed in (("train", 46, 1), ("test", 12, 2)):
        rng = random.Random(seed)
        rows = [
            {"id": f"{name}{i}", "premise": " ".join(rng.sample(NOUNS, rng.randint(1, 4))),
             "hypothesis": f"{CUE[LABELS[i % 3]]} {rng.choice(NOUNS)}", "label": LABELS[i % 3]}
            for i in range(n)
        ]  # fmt: skip
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    doc = {"path": "test.jsonl", "pool": "train.jsonl", "labels": list(LABELS)}
    (folder / "syn.yaml").write_text(yaml.safe_dump(doc))
    return str(folder / "syn.yaml")


def _config(model: Path, task: str, **kw: Any) -> TrainConfig:
    base: dict[str, Any] = {"task": task, "dev_split": None, "epochs": 1, "lr": 3e-3,
                            "max_length": 16, "seeds": (0,), "device": "cpu"}  # fmt: skip
    return TrainConfig(str(model), **{**base, **kw})


def _fit(config: TrainConfig, folder: Path) -> tuple[Any, dict[str, Any]]:
    data = load_data(config)
    model, tok = build_model(config, data.labels, 0)
    torch.manual_seed(123)  # the dropout draws
    result = fit(model, tok, data, config, 0, folder, progress=False)
    return model, result


def test_fp32_without_accumulation_is_the_loop_as_it_was(
    bert: Path, task: str, tmp_path: Path
) -> None:
    # The loop before --grad-accum and --precision, written out here: one shuffled
    # order per epoch from the seed's generator, Adam, clipping at 1.0, a step per batch.
    config = _config(bert, task, batch_size=8)
    got, _ = _fit(config, tmp_path / "new")
    data = load_data(config)
    model, tok = build_model(config, data.labels, 0)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    items = data.train.items
    targets = torch.tensor([data.labels.index(it.label.value) for it in items if it.label])
    torch.manual_seed(123)
    model.train()
    order = torch.randperm(len(items), generator=generator).tolist()
    for start in range(0, len(order), 8):
        idx = order[start : start + 8]
        pairs = [(items[i].premise, items[i].hypothesis) for i in idx]
        enc = encode_pairs(tok, pairs, max_length=16)
        loss = torch.nn.functional.cross_entropy(model(**enc), targets[idx])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
        optimizer.step()
    want = model.state_dict()
    assert all(torch.equal(v, want[k]) for k, v in got.state_dict().items())  # bit for bit


def test_accumulation_equals_one_big_batch(
    bert_no_dropout: Path, task: str, tmp_path: Path
) -> None:
    # 46 training items (the test split is the dev part): steps of 12, 12, 12 and 10
    # items; the last as micro-batches of 4, 4 and 2, weighted 4/10, 4/10 and 2/10 as the
    # big batch weighs them.
    kw: dict[str, Any] = {"dev_split": "test"}
    big, big_run = _fit(_config(bert_no_dropout, task, batch_size=12, **kw), tmp_path / "big")
    acc, acc_run = _fit(
        _config(bert_no_dropout, task, batch_size=4, grad_accum=3, **kw), tmp_path / "acc"
    )
    assert len(load_data(_config(bert_no_dropout, task, **kw)).train.items) == 46
    # Float32 sums in another order (per micro-batch, then across them) and other padding
    # lengths: the same numbers to about 1e-6 relative, after four Adam steps of 3e-3.
    want = big.state_dict()
    worst = max(float((v - want[k]).abs().max()) for k, v in acc.state_dict().items())
    assert worst < 1e-5
    assert big_run["history"][0]["train_loss"] == pytest.approx(
        acc_run["history"][0]["train_loss"], abs=1e-6
    )
    # Against a step per micro-batch (the same data, 11 steps): far apart, so the
    # comparison above would see accumulation that did not happen.
    small, _ = _fit(_config(bert_no_dropout, task, batch_size=4, **kw), tmp_path / "small")
    assert max(float((v - want[k]).abs().max()) for k, v in small.state_dict().items()) > 1e-2


def _first_step_loss(config: TrainConfig, folder: Path) -> tuple[float, Any]:
    model, result = _fit(config, folder)
    return result["history"][0]["train_loss"], model


# bfloat16 keeps 8 significant bits: a rounding is off by up to 2^-9 relative, and a loss
# near ln 3 = 1.1 has a bf16 spacing of 2^-7 = 0.0078. Tiny models (two layers, width
# 32 or less) add a few such roundings: 0.02 allows about 2.5 spacings.
BF16_LOSS_TOLERANCE = 0.02


@pytest.mark.parametrize("kind", ["bert", "lora"])
def test_a_bf16_step_is_near_the_fp32_step(
    kind: str, bert: Path, task: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    pytest.importorskip("peft")
    if kind == "bert":
        model, extra = bert, {}
    else:
        model, extra = tiny_model(tmp_path_factory.mktemp("llama"), "llama"), {"lora": "4,8"}
    # One step: a batch as large as the 40 training items (46 less 6 held out).
    fp32, _ = _first_step_loss(_config(model, task, batch_size=64, **extra), tmp_path / "a")
    bf16, trained = _first_step_loss(
        _config(model, task, batch_size=64, precision="bf16", **extra), tmp_path / "b"
    )
    assert abs(bf16 - fp32) < BF16_LOSS_TOLERANCE
    assert bf16 != fp32  # the forward pass did run in bfloat16
    # Mixed precision: the weights (and so the checkpoint) stay float32.
    assert {p.dtype for p in trained.parameters()} == {torch.float32}


def test_old_train_folders_resume_and_new_settings_are_in_the_identity(
    bert: Path, task: str, tmp_path: Path
) -> None:
    config = _config(bert, task, batch_size=16, out=str(tmp_path))
    first = train(config, progress=False)
    # The key that marks a finished seed leaves them out at their defaults, as keys
    # written before them did; config.json is made as it was written then.
    key = json.loads((tmp_path / "seed0" / "train.json").read_text())["run_key"]
    assert "lr" in key and not {"grad_accum", "precision"} & set(key)
    doc = json.loads((tmp_path / "config.json").read_text())
    assert doc.pop("grad_accum") == 1 and doc.pop("precision") == "fp32"
    (tmp_path / "config.json").write_text(json.dumps(doc))
    seen: list[dict[str, Any]] = []
    again = train(config, on_epoch=seen.append, progress=False)
    assert not seen and again.results.metrics == first.results.metrics  # no epoch trained again
    assert len(RunFolder(tmp_path).records()) == 12
    for change, says in (({"grad_accum": 2}, "grad_accum: 1 -> 2"),
                         ({"precision": "bf16"}, "precision: 'fp32' -> 'bf16'")):  # fmt: skip
        with pytest.raises(RunError, match=says):
            train(_config(bert, task, batch_size=16, out=str(tmp_path), **change), progress=False)


def test_flags(task: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["train", "--model", "minilm", "--task", task, "--out", str(tmp_path / "x")]
    with pytest.raises(SystemExit):
        main([*argv, "--grad-accum", "0"])
    assert "positive" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--precision", "fp16"])
    assert "invalid choice: 'fp16'" in capsys.readouterr().err
