"""Multiple-choice models (``AutoModelForMultipleChoice``) as the registry's kind
``multiple-choice``: a tiny random BERT with a choice head, its option scores checked
against the test's own forward pass of each choice alone and a hand-written log-softmax;
the folder kinds the registry tells apart; and ``nlieval run`` on an alpha-NLI task."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from nlieval.backends import HFOptions, resolve  # noqa: E402
from nlieval.backends.multiple_choice import (  # noqa: E402
    HFMultipleChoice,
    choose_records,
    is_multiple_choice,
)
from nlieval.classifiers import META_FILE, ClassifierError, ClassifierMeta  # noqa: E402
from nlieval.cli import main  # noqa: E402
from nlieval.types import Item, Label  # noqa: E402
from tests.helpers.records import saved_records, saved_rows  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WORDS = ["kim", "left", "home", "was", "wet", "it", "rained", "the", "sun", "shone", "al",
         "baked", "cake", "burnt", "he", "napped", "watched"]  # fmt: skip
CPU = HFOptions(device="cpu")

ITEMS = [
    Item("a", "kim left home", "kim was wet", Label.HYP1, ("it rained", "the sun shone")),
    Item("b", "al baked", "the cake burnt", Label.HYP2, ("he watched it", "he napped")),
    Item("c", "al left", "he was wet wet wet", Label.HYP1, ("it rained the sun", "he baked")),
]

ROWS = [
    {"id": it.id, "obs1": it.premise, "obs2": it.hypothesis, "hyp1": it.choices[0],
     "hyp2": it.choices[1], "label": int(it.label.value) if it.label else None}
    for it in ITEMS
]  # fmt: skip


@pytest.fixture(scope="module")
def mc_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random ``BertForMultipleChoice`` saved as transformers saves it."""
    enc = make_tiny_bert(tmp_path_factory.mktemp("enc"), WORDS, max_positions=64)
    folder = tmp_path_factory.mktemp("mc")
    torch.manual_seed(1)
    model = transformers.BertForMultipleChoice.from_pretrained(enc)
    # Weights far from BERT's small initial ones, so that the choices' scores differ
    # visibly (with them every input looks alike to the head).
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.3)
    torch.nn.init.normal_(model.classifier.weight, std=2.0)
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(enc).save_pretrained(folder)
    return folder


def _alpha_yaml(folder: Path) -> Path:
    (folder / "alpha.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    yaml = folder / "alpha.yaml"
    yaml.write_text(
        "name: myalpha\npath: alpha.jsonl\npool: alpha.jsonl\nlabels: ['1', '2']\n"
        "fields: {id: id, premise: obs1, hypothesis: obs2, label: label, "
        "choices: [hyp1, hyp2]}\n"
    )
    return yaml


def _by_hand(folder: Path, item: Item) -> list[float]:
    """The log-softmax over the item's choices, each choice scored alone (one input,
    no padding) as the alpha-NLI paper lays it out: (O1 + ' ' + H, O2)."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.BertForMultipleChoice.from_pretrained(folder).eval()
    logits = []
    for choice in item.choices:
        enc = tok(f"{item.premise} {choice}", item.hypothesis, return_tensors="pt")
        with torch.no_grad():
            out = model(**{k: v.unsqueeze(1) for k, v in enc.items()}).logits  # 1 x 1
        logits.append(float(out[0, 0]))
    top = max(logits)
    norm = top + math.log(sum(math.exp(x - top) for x in logits))
    return [x - norm for x in logits]


def test_option_scores_are_the_log_softmax_of_each_choice_scored_alone(mc_folder: Path) -> None:
    expected = [_by_hand(mc_folder, it) for it in ITEMS]
    assert all(abs(a - b) > 0.5 for a, b in expected)  # the head tells choices apart
    for batch in (1, 2, 3):  # padded batches give each choice's own score
        got = HFMultipleChoice(str(mc_folder), CPU, batch_size=batch).choose(ITEMS)
        for row, want in zip(got, expected, strict=True):
            assert row == pytest.approx(want, abs=1e-5)


def test_records_name_the_choices_by_the_task_labels(mc_folder: Path) -> None:
    backend = HFMultipleChoice(str(mc_folder), CPU)
    records = choose_records(backend, ITEMS, ("1", "2"), task="alphanli", model="mc")
    for rec, item in zip(records, ITEMS, strict=True):
        want = _by_hand(mc_folder, item)
        assert rec.loglik == pytest.approx(want, abs=1e-5)
        assert rec.probs == pytest.approx([math.exp(x) for x in want], abs=1e-5)
        assert rec.pred == ("1" if want[0] >= want[1] else "2")
        assert rec.gold == (item.label.value if item.label else None)


def test_an_item_with_another_number_of_choices_is_refused(mc_folder: Path) -> None:
    backend = HFMultipleChoice(str(mc_folder), CPU)
    three = Item("x", "kim left", "kim was wet", None, ("it rained", "he napped", "he baked"))
    with pytest.raises(ValueError, match="item 'x' of task t holds 3 choices, but the task has 2"):
        choose_records(backend, [three], ("1", "2"), task="t", model="m")


def test_the_registry_tells_the_heads_apart(mc_folder: Path, tmp_path: Path) -> None:
    assert is_multiple_choice(str(mc_folder))
    model = resolve(str(mc_folder), hf=CPU)
    assert (model.kind, model.takes_shots) == ("multiple-choice", False)
    assert model.checkpoint(None).chooses and not model.checkpoint(None).classifies
    assert isinstance(model.scorer(), HFMultipleChoice)
    assert list(model.fingerprints()) == ["model"]
    # A folder nlieval train wrote: its description names the head.
    written = tmp_path / "written"
    shutil.copytree(mc_folder, written)
    meta = ClassifierMeta(("1", "2"), head="multiple-choice")
    (written / META_FILE).write_text(json.dumps(meta.to_dict()))
    assert resolve(str(written), checked=False).kind == "multiple-choice"
    # A description without a head is a pair classifier's, as before.
    (written / META_FILE).write_text(json.dumps(ClassifierMeta(("1", "2")).to_dict()))
    assert "head" not in json.loads((written / META_FILE).read_text())
    assert resolve(str(written), checked=False).kind == "classifier-folder"


def test_a_description_with_an_unknown_head_is_refused() -> None:
    d = {**ClassifierMeta(("1", "2")).to_dict(), "head": "span"}
    with pytest.raises(ClassifierError, match="field 'head' must be 'pair' or 'multiple-choice'"):
        ClassifierMeta.from_dict(d, "x.json")


def test_run_scores_alpha_nli_through_a_multiple_choice_folder(
    mc_folder: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    argv = ["run", "--model", str(mc_folder), "--task", str(_alpha_yaml(tmp_path))]
    argv += ["--out", str(out), "--no-progress", "--device", "cpu"]
    assert main(argv) == 0
    records = saved_rows(out)
    by_id = {r["item_id"]: r for r in records}
    assert sorted(by_id) == ["a", "b", "c"]
    for item in ITEMS:
        assert by_id[item.id]["loglik"] == pytest.approx(_by_hand(mc_folder, item), abs=1e-5)
        assert by_id[item.id]["labels"] == ["1", "2"]
    # Resumed: nothing new.
    assert main(argv) == 0
    assert len(saved_records(out)) == 3


def test_run_refuses_a_multiple_choice_model_on_pairs(
    mc_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    argv = ["run", "--model", str(mc_folder), "--task", "smoke", "--out", str(out)]
    assert main([*argv, "--no-progress", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"nlieval: error: --model {mc_folder}, a multiple-choice classifier,")
    assert "items of task smoke are sentence pairs" in err and "item smoke-01" in err
    assert not (out / "records.jsonl").exists()


def test_run_refuses_a_multiple_choice_model_on_real_snli(
    mc_folder: Path, tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    argv = ["run", "--model", str(mc_folder), "--task", "snli", "--limit", "5", "--out", str(out)]
    assert main([*argv, "--no-progress", "--device", "cpu", "--data-dir", str(data_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"nlieval: error: --model {mc_folder}, a multiple-choice classifier,")
    assert "items of task snli are sentence pairs" in err
    assert not (out / "records.jsonl").exists()
