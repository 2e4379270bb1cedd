"""``nlieval train`` on alpha-NLI: items with choices get a multiple-choice head
(``AutoModelForMultipleChoice``), chosen from the items' shape; its folder is scored by
``nlieval run`` as the test's own forward pass of each choice scores it. What the head
does not take (LoRA) is refused in one line, and a pair head is still refused a task
with choices."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from nlieval.classifiers import CHOICE_HEAD, read_meta  # noqa: E402
from nlieval.cli import main  # noqa: E402
from nlieval.sci import TrainConfig  # noqa: E402
from nlieval.sci.train_data import load_data  # noqa: E402
from nlieval.sci.train_model import batch_logits, build_model, make_optimizer  # noqa: E402
from nlieval.types import Item  # noqa: E402
from tests.helpers.records import saved_rows  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PEOPLE = ["kim", "al", "jo", "ann"]
# The plausible hypothesis names the cause its ending tells of (wet <- rain, full <- ate).
STORIES = [("was wet", "it rained", "it was sunny"), ("was full", "they ate", "they fasted")]
WORDS = [*PEOPLE, "left", "home", "was", "wet", "full", "it", "rained", "sunny", "they",
         "ate", "fasted"]  # fmt: skip


def _rows(n: int, start: int) -> list[dict[str, object]]:
    rows = []
    for i in range(start, start + n):
        ending, good, bad = STORIES[i % 2]
        person = PEOPLE[i % len(PEOPLE)]
        first = (i // 2) % 2 == 0  # the plausible hypothesis first or second
        rows.append(
            {
                "id": f"s{i}",
                "obs1": f"{person} left home",
                "obs2": f"{person} {ending}",
                "hyp1": good if first else bad,
                "hyp2": bad if first else good,
                "label": 1 if first else 2,
            }
        )
    return rows


@pytest.fixture(scope="module")
def alpha(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny BERT of the stories' words, an alpha-NLI task YAML (train = pool, test =
    path) and a sentence-pair task YAML."""
    folder = tmp_path_factory.mktemp("alpha")
    for name, rows in (("train", _rows(24, 0)), ("test", _rows(6, 100))):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "alpha.yaml").write_text(
        "name: myalpha\npath: test.jsonl\npool: train.jsonl\nlabels: ['1', '2']\n"
        "fields: {id: id, premise: obs1, hypothesis: obs2, label: label, "
        "choices: [hyp1, hyp2]}\n"
    )
    pairs = [{"id": f"p{i}", "premise": "kim left home", "hypothesis": "kim was wet",
              "label": ["entailment", "neutral"][i % 2]} for i in range(12)]  # fmt: skip
    (folder / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pairs))
    (folder / "pairs.yaml").write_text(
        "name: mypairs\npath: pairs.jsonl\npool: pairs.jsonl\nlabels: [entailment, neutral]\n"
    )
    return {
        "enc": make_tiny_bert(folder / "enc", WORDS),
        "task": folder / "alpha.yaml",
        "pairs": folder / "pairs.yaml",
    }


def _config(alpha: dict[str, Path], **kw: object) -> TrainConfig:
    base: dict[str, object] = {
        "model": str(alpha["enc"]),
        "task": str(alpha["task"]),
        "seeds": (0,),
        "device": "cpu",
        "max_length": 16,
    }
    return TrainConfig(**(base | kw))  # type: ignore[arg-type]


def _nll(logits: list[list[float]], targets: list[int]) -> float:
    """Mean -log softmax(logits)[target], by hand."""
    total = 0.0
    for row, t in zip(logits, targets, strict=True):
        top = max(row)
        total -= row[t] - top - math.log(sum(math.exp(x - top) for x in row))
    return total / len(targets)


def test_the_head_comes_from_the_items(alpha: dict[str, Path]) -> None:
    data = load_data(_config(alpha))
    assert data.head == CHOICE_HEAD and data.labels == ("1", "2")
    assert {p.head for p in (data.train, data.dev, data.test) if p} == {CHOICE_HEAD}
    model, _ = build_model(_config(alpha), data.labels, 0, head=data.head)
    assert type(model).__name__ == "BertForMultipleChoice"


def test_a_train_step_lowers_the_loss(alpha: dict[str, Path]) -> None:
    config = _config(alpha, lr=1e-2)
    data = load_data(config)
    model, tok = build_model(config, data.labels, 0, head=data.head)
    model.eval()  # no dropout: the two losses differ by the step alone
    items: list[Item] = list(data.train.items[:8])
    targets = [data.labels.index(it.label.value) for it in items if it.label]
    logits = batch_logits(model, tok, items, config, data.head)
    assert tuple(logits.shape) == (8, 2)
    before = _nll(logits.tolist(), targets)
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(targets))
    assert float(loss.detach()) == pytest.approx(before, abs=1e-5)
    optimizer = make_optimizer(model, config)
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        after = _nll(batch_logits(model, tok, items, config, data.head).tolist(), targets)
    assert after < before - 1e-4


def test_train_then_run_scores_each_choice_as_the_model_does(
    alpha: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "t"
    argv = ["train", "--model", str(alpha["enc"]), "--task", str(alpha["task"]), "--seeds", "0,"]
    argv += ["--epochs", "2", "--lr", "1e-3", "--max-length", "16", "--device", "cpu"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    seed0 = out / "seed0"
    assert read_meta(seed0).head == CHOICE_HEAD
    assert json.loads((seed0 / "config.json").read_text())["architectures"] == [
        "BertForMultipleChoice"
    ]
    trained = {r["item_id"]: r for r in saved_rows(out)}
    assert sorted(trained) == [f"s{i}" for i in range(100, 106)]
    run = tmp_path / "r"
    argv = ["run", "--model", str(out), "--task", str(alpha["task"]), "--out", str(run)]
    assert main([*argv, "--no-progress", "--device", "cpu"]) == 0
    records = saved_rows(run)
    assert len(records) == 6 and {r["checkpoint"] for r in records} == {str(seed0)}
    # The test's own pass: each choice alone, (O1 + " " + H, O2), then a log-softmax.
    tok = transformers.AutoTokenizer.from_pretrained(seed0)
    model = transformers.BertForMultipleChoice.from_pretrained(seed0).eval()
    rows = {r["id"]: r for r in _rows(6, 100)}
    for rec in records:
        row = rows[rec["item_id"]]
        logits = []
        for hyp in (row["hyp1"], row["hyp2"]):
            enc = tok(f"{row['obs1']} {hyp}", row["obs2"], return_tensors="pt")
            with torch.no_grad():
                logits.append(float(model(**{k: v[:, None] for k, v in enc.items()}).logits))
        norm = max(logits) + math.log(sum(math.exp(x - max(logits)) for x in logits))
        assert rec["loglik"] == pytest.approx([x - norm for x in logits], abs=1e-5)
        assert rec["loglik"] == pytest.approx(trained[rec["item_id"]]["loglik"], abs=1e-5)
        assert rec["gold"] == str(row["label"])


def test_lora_on_alpha_nli_is_refused_in_one_line(
    alpha: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    argv = ["train", "--model", str(alpha["enc"]), "--task", str(alpha["task"]), "--lora", "2,4"]
    assert main([*argv, "--out", str(out), "--no-progress", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err == (
        f"nlieval: error: the items of {alpha['task']} hold choices, so nlieval train fine-tunes a "
        "multiple-choice head, which does not take --lora; train without it"
    )
    assert not (out / "seed0").exists()


def test_a_pair_head_is_refused_a_test_task_with_choices(
    alpha: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t"
    argv = ["train", "--model", str(alpha["enc"]), "--task", str(alpha["pairs"])]
    argv += ["--test-task", str(alpha["task"]), "--out", str(out), "--no-progress"]
    assert main([*argv, "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("nlieval: error: nlieval train, which trains a sentence-pair classifier,")
    assert "items of task myalpha hold 2 choices" in err
    assert not (out / "seed0").exists()
