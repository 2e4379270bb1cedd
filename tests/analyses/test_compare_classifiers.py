"""``compare`` between classifiers scored by ``nlieval run --model TRAIN_FOLDER``: their
seed models are training seeds, paired by seed and averaged over seeds (issue 29)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from transformers import AutoModel, AutoTokenizer  # noqa: E402

from nlieval.analyses.compare import CompareConfig, compare_runs, comparison_table  # noqa: E402
from nlieval.backends import stand_in  # noqa: E402
from nlieval.choice import RunConfig, run  # noqa: E402
from nlieval.classifiers import ClassifierMeta, PairClassifier, save_classifier  # noqa: E402
from nlieval.data import load_task  # noqa: E402
from nlieval.data.stats import words  # noqa: E402
from nlieval.ground import render  # noqa: E402
from nlieval.types import NLI3  # noqa: E402
from tests.helpers.hash_lm import HashLM  # noqa: E402
from tests.helpers.records import saved_records  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402


def _train_folder(bert: Path, folder: Path, seeds: tuple[int, ...], salt: int) -> Path:
    """What ``nlieval train`` leaves for ``run --model``: a ``seed{n}`` classifier per
    seed (here random heads: their predictions differ, which is all a comparison needs)."""
    for seed in seeds:
        torch.manual_seed(1000 * salt + seed)
        model = PairClassifier(AutoModel.from_pretrained(bert), 3)
        meta = ClassifierMeta(tuple(x.value for x in NLI3), max_length=64)
        save_classifier(model, AutoTokenizer.from_pretrained(bert), meta, folder / f"seed{seed}")
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("clf")
    smoke = load_task("smoke").items
    vocab = sorted({w for it in smoke for w in words(it.premise) + words(it.hypothesis)})
    bert = make_tiny_bert(root / "bert", vocab, max_positions=64)
    out = {}
    for name, salt in (("a", 1), ("b", 2)):
        folder = _train_folder(bert, root / f"train-{name}", (0, 1), salt)
        out[name] = root / f"run-{name}"
        run(RunConfig(str(folder), ("smoke",)), out[name], progress=False)
    cfg = RunConfig("org/lm", ("smoke",), shots=(0,))
    out["lm"] = root / "run-lm"
    run(cfg, out["lm"], model=stand_in(cfg, lambda ck: HashLM()), progress=False)
    return out


def _correct_by_seed(folder: Path) -> dict[int, dict[str, bool]]:
    out: dict[int, dict[str, bool]] = defaultdict(dict)
    for r in saved_records(folder):
        # The seed model a record came from: .../train-x/seed{n}, or the run's seed.
        seed = int(Path(r.checkpoint).name[4:]) if r.checkpoint else r.seed
        out[seed][r.item_id] = r.pred == r.gold
    return out


def test_two_classifiers_of_train_folders_compare_seed_by_seed_and_over_seeds(
    runs: dict[str, Path],
) -> None:
    a, b = _correct_by_seed(runs["a"]), _correct_by_seed(runs["b"])
    assert sorted(a) == sorted(b) == [0, 1] and all(
        len(v) == 48 for v in (*a.values(), *b.values())
    )
    rows = compare_runs(CompareConfig(a=str(runs["a"]), b=str(runs["b"]), resamples=200))
    assert [(r["seed"], r["checkpoint"]) for r in rows] == [(0, None), (1, None), (None, None)]
    for r in rows[:2]:
        ok_a, ok_b = a[r["seed"]], b[r["seed"]]
        assert r["n"] == 48
        assert r["a_only"] == sum(ok_a[i] and not ok_b[i] for i in ok_a)
        assert r["b_only"] == sum(ok_b[i] and not ok_a[i] for i in ok_a)
        assert r["accuracy_a"] == pytest.approx(sum(ok_a.values()) / 48)
    over = rows[2]
    assert (over["seeds_a"], over["seeds_b"], over["n"]) == ([0, 1], [0, 1], 48)
    assert over["accuracy_b"] == pytest.approx((sum(b[0].values()) + sum(b[1].values())) / 96)
    # The random heads disagree somewhere: the comparison is not of one model with itself.
    assert any(r["a_only"] + r["b_only"] for r in rows[:2])
    assert "(2 seeds)" in render(comparison_table(rows), "md")


def test_a_classifier_compares_with_a_language_model_on_the_same_items(
    runs: dict[str, Path],
) -> None:
    rows = compare_runs(CompareConfig(a=str(runs["lm"]), b=str(runs["a"]), resamples=200))
    # The LM has one seed (0), the classifier two training seeds: seed 0 side by side,
    # then the LM against the classifier's mean over its seeds.
    assert [(r["seed"], r.get("seeds_a"), r.get("seeds_b")) for r in rows] == [
        (0, None, None),
        (None, [0], [0, 1]),
    ]
    lm = _correct_by_seed(runs["lm"])[0]
    clf = _correct_by_seed(runs["a"])
    assert rows[1]["accuracy_a"] == pytest.approx(sum(lm.values()) / 48)
    assert rows[1]["accuracy_b"] == pytest.approx(sum(clf[0][i] + clf[1][i] for i in lm) / 96)
