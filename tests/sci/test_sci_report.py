"""Scientific NLI reports from records: hand-computed F1, confusion, domains, ID vs OOD."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from nlieval.backends.classifier import classify_records
from nlieval.choice import RunConfig
from nlieval.cli import main
from nlieval.ground import render
from nlieval.runs import RunError, RunFolder
from nlieval.sci import report as sci
from nlieval.sci.instruct import _scores
from nlieval.types import SCI4, Item, Label, Record
from tests.helpers.figures import record_savefig

LABELS = tuple(lab.value for lab in SCI4)
C, R, E, N = LABELS

# item id, gold, domain, prediction of run 0, of run 1 (None: an unparsed answer)
TABLE = [
    ("1", C, "acl", C, C),
    ("2", C, "acl", R, C),
    ("3", R, "acl", R, R),
    ("4", R, "acl", None, R),
    ("5", E, "bio", E, E),
    ("6", E, "bio", N, E),
    ("7", N, "bio", N, N),
    ("8", N, "bio", N, None),
]


def _instruct_record(
    task: str, item: str, gold: str, pred: str | None, run: int, **meta: str
) -> Record:
    loglik, probs = _scores(None if pred is None else Label(pred))
    return Record(
        task, item, "chat", 4, run, LABELS, loglik, probs, pred, gold,
        answer=pred or "no idea", meta=meta,
    )  # fmt: skip


def _records() -> list[Record]:
    return [
        _instruct_record("scinli", i, g, (p0, p1)[run], run, domain=d)
        for run in (0, 1)
        for i, g, d, p0, p1 in TABLE
    ]


def _ood_records() -> list[Record]:
    # Always "neutral": F1 neutral = 2 * 0.25 * 1 / 1.25 = 0.4, the others 0.
    return [
        _instruct_record("sci_ood", str(n), g, N, run)
        for run in (0, 1)
        for n, g in enumerate(LABELS)
    ]


def test_scores_by_hand() -> None:
    (row,) = sci.sci_rows(_records())
    assert (row["model"], row["task"], row["k"], row["n"], row["runs"]) == (
        "chat",
        "scinli",
        4,
        8,
        2,
    )
    run0, run1 = row["per_run"]
    # Run 0: C P=1 R=1/2 -> 2/3; R P=1/2 R=1/2 -> 1/2; E 2/3; N P=2/3 R=1 -> 4/5.
    assert run0["per_class_f1"] == pytest.approx({C: 2 / 3, R: 0.5, E: 2 / 3, N: 0.8})
    assert run0["macro_f1"] == pytest.approx((2 / 3 + 0.5 + 2 / 3 + 0.8) / 4)
    assert run0["accuracy"] == pytest.approx(5 / 8) and run0["n_unparsed"] == 1
    assert run0["confusion"] == [
        [1, 1, 0, 0, 0],
        [0, 1, 0, 0, 1],
        [0, 0, 1, 1, 0],
        [0, 0, 0, 2, 0],
    ]
    # Run 1: all right but item 8 (unparsed): N P=1 R=1/2 -> 2/3.
    assert run1["macro_f1"] == pytest.approx((3 + 2 / 3) / 4)
    assert run1["accuracy"] == pytest.approx(7 / 8)
    m0, m1 = (2 / 3 + 0.5 + 2 / 3 + 0.8) / 4, (3 + 2 / 3) / 4
    assert row["macro_f1"] == pytest.approx((m0 + m1) / 2)
    assert row["macro_f1_std"] == pytest.approx(abs(m0 - m1) / 2**0.5)
    assert row["per_class_f1"][N] == pytest.approx((0.8 + 2 / 3) / 2)
    assert row["n_unparsed"] == 1.0 and row["n_unparsed_total"] == 2
    # Summed over the runs, with the unparsed column.
    assert row["confusion_columns"] == [C, R, E, N, "unparsed"]
    assert row["confusion"] == [
        [3, 1, 0, 0, 0],
        [0, 3, 0, 0, 1],
        [0, 0, 3, 1, 0],
        [0, 0, 0, 3, 1],
    ]


def test_per_domain_macro_f1_over_the_classes_present() -> None:
    (row,) = sci.sci_rows(_records())
    acl, bio = row["domains"]["acl"], row["domains"]["bio"]
    # acl run 0: gold C C R R, pred C R R -: C 2/3, R 1/2 -> 7/12; run 1 all right.
    assert row["per_run"][0]["domains"]["acl"]["macro_f1"] == pytest.approx(7 / 12)
    assert acl["macro_f1"] == pytest.approx((7 / 12 + 1) / 2)
    assert acl["accuracy"] == pytest.approx((2 / 4 + 1) / 2)
    # bio run 0: gold E E N N, pred E N N N: E 2/3, N 4/5; run 1: E 1, N 2/3 (unparsed).
    assert bio["macro_f1"] == pytest.approx(((2 / 3 + 0.8) / 2 + (1 + 2 / 3) / 2) / 2)
    assert bio["n"] == 4 and bio["runs"] == 2 and bio["n_unparsed"] == 0.5
    text = render(sci.format_domains([row]), "md")
    assert f"| chat | scinli | 4 | acl | 4 | {(7 / 12 + 1) / 2:.3f} ± " in text
    # No domain anywhere: no domain table.
    (ood,) = sci.sci_rows(_ood_records())
    assert ood["domains"] == {} and sci.format_domains([ood]) is None


def test_in_vs_out_of_domain_side_by_side() -> None:
    rows = sci.sci_rows(_records() + _ood_records())
    pairs = sci.shift_rows(rows, "scinli", "sci_ood")
    (pair,) = pairs
    ind = ((2 / 3 + 0.5 + 2 / 3 + 0.8) / 4 + (3 + 2 / 3) / 4) / 2
    assert pair["out_of_domain"]["macro_f1"] == pytest.approx(0.1)
    assert pair["drop"] == pytest.approx(ind - 0.1)
    table = render(sci.format_shift(pairs, "scinli", "sci_ood"), "md")
    assert (
        "| model | k | n scinli | n sci_ood | macro F1 scinli | macro F1 sci_ood | drop |" in table
    )
    _assert_shift_row(table, ind)
    assert "no model and k" in sci.format_shift([], "scinli", "x")


def _assert_shift_row(text: str, ind: float) -> None:
    """The pair table's chat row shows ``ind`` in-domain, 0.1 out of domain and their
    difference, each to the 3 decimals printed. Compared as numbers: the exact values
    (189/240 = 0.7875, drop 0.6875) lie half-way between two printed ones, so which one
    prints turns on the last bit of the float sum, not on the rule."""
    (row,) = [line for line in text.splitlines() if line.startswith("| chat | 4 | 8 | 4 | ")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    f1_in, f1_out, drop = cells[4], cells[5], cells[6]
    assert float(f1_in.split(" ± ")[0]) == pytest.approx(ind, abs=5e-4 + 1e-9)
    assert f1_out == "0.100 ± 0.000"
    assert drop.startswith("+") and float(drop) == pytest.approx(ind - 0.1, abs=5e-4 + 1e-9)


class FakeClassifier:
    """Log-probabilities that favour a fixed label per pair (a checkpoint's quirk)."""

    name = "clf"
    labels = LABELS

    def __init__(self, preds: Sequence[str]):
        self.preds = list(preds)

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        out = []
        for n, _ in enumerate(pairs):
            best = LABELS.index(self.preds[n])
            out.append([-0.1 if i == best else -3.0 for i in range(4)])
        return out


def _classifier_records() -> list[Record]:
    items = [Item(i, f"P{i}.", f"H{i}.", Label(g), meta={"domain": d}) for i, g, d, *_ in TABLE]
    recs = []
    for ckpt, preds in (
        ("runs/train/seed0", [t[3] or N for t in TABLE]),
        ("runs/train/seed1", [t[4] or N for t in TABLE]),
    ):
        recs += classify_records(
            FakeClassifier(preds), items, SCI4, task="scinli", model="runs/train", checkpoint=ckpt
        )
    return recs


def test_classifier_records_and_checkpoints_as_runs() -> None:
    recs = _classifier_records()
    assert all(r.pred is not None and r.answer is None for r in recs)
    separate = sci.sci_rows(recs)
    assert [r["checkpoint"] for r in separate] == ["runs/train/seed0", "runs/train/seed1"]
    (pooled,) = sci.sci_rows(recs, over_checkpoints=True)
    assert pooled["checkpoint"] is None and pooled["runs"] == 2
    # Run 0 with item 4 predicted neutral instead of unparsed.
    assert pooled["per_run"][0]["confusion"][1] == [0, 1, 0, 1, 0]
    assert pooled["n_unparsed_total"] == 0
    # No unparsed column for a classifier.
    assert "unparsed" not in render(sci.format_confusion(pooled), "md")
    assert "| gold \\ predicted | contrasting | reasoning | entailment | neutral |" in (
        render(sci.format_confusion(pooled), "md")
    )


def _folder(path: Path, records: Sequence[Record], model: str) -> Path:
    rf = RunFolder(path)
    rf.start(RunConfig(model=model, tasks=tuple(sorted({r.task for r in records}))))
    rf.done_keys()
    rf.append(records)
    return path


#: The confusion counts each figure draws (rows gold C R E N, columns predicted C R E N
#: and, for answers, unparsed), by hand from TABLE: the chat runs summed (item 2 R then
#: C, item 4 unparsed then R, item 6 N then E, item 8 N then unparsed); sci_ood always
#: neutral, each gold once a run; the classifier's seed0 (run 0's answers, unparsed ->
#: N) and seed1 (run 1's answers, unparsed -> N: all right).
CONFUSIONS = {
    "confusion_chat_sci_ood_k4.png": [[0, 0, 0, 2, 0]] * 4,
    "confusion_chat_scinli_k4.png": [
        [3, 1, 0, 0, 0], [0, 3, 0, 0, 1], [0, 0, 3, 1, 0], [0, 0, 0, 3, 1]
    ],
    "confusion_train_seed0_scinli_k0.png": [[1, 1, 0, 0], [0, 1, 0, 1], [0, 0, 1, 1], [0, 0, 0, 2]],
    "confusion_train_seed1_scinli_k0.png": [[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0], [0, 0, 0, 2]],
}  # fmt: skip


def test_cli_tables_json_and_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = record_savefig(monkeypatch)
    a = _folder(tmp_path / "in", _records(), "chat")
    b = _folder(tmp_path / "out", _ood_records(), "chat")
    c = _folder(tmp_path / "clf", _classifier_records(), "runs/train")
    plots, js = tmp_path / "plots", tmp_path / "sci.json"
    argv = ["sci-report", str(a), str(b), str(c), "--in-domain", "scinli"]
    argv += ["--out-of-domain", "sci_ood", "--plot-dir", str(plots), "--json", str(js)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "| chat | scinli | 4 | 8 | 2 |" in text
    assert "| chat | sci_ood | 4 | 4 | 2 | 0.100 ± 0.000 | 0.250 ± 0.000 | 0.0 ± 0.0 |" in text
    assert "In-domain (scinli) vs out-of-domain (sci_ood):" in text
    assert "| runs/train @runs/train/seed0 | scinli | 0 | 8 | 1 |" in text
    assert "| contrasting | 3 | 1 | 0 | 0 | 0 |" in text  # summed confusion with unparsed
    names = sorted(p.name for p in plots.iterdir())
    assert names == [
        "confusion_chat_sci_ood_k4.png",
        "confusion_chat_scinli_k4.png",
        "confusion_train_seed0_scinli_k0.png",
        "confusion_train_seed1_scinli_k0.png",
    ]
    for p in plots.iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
    # Each figure, in the order written: the counts and each gold row's shares as
    # images, the axes gold (rows) by predicted (columns) with the labels as ticks.
    assert len(drawn.figures) == len(CONFUSIONS)
    for fig, (name, counts) in zip(drawn.figures, sorted(CONFUSIONS.items()), strict=True):
        count_ax, share_ax = fig.axes
        [count_image] = count_ax.get_images()
        [share_image] = share_ax.get_images()
        assert count_image.get_array().tolist() == counts, name
        shares = [[c / sum(row) for c in row] for row in counts]
        assert share_image.get_array().tolist() == [pytest.approx(r) for r in shares], name
        columns = [*LABELS, "unparsed"][: len(counts[0])]
        for ax in (count_ax, share_ax):
            assert (ax.get_xlabel(), ax.get_ylabel()) == ("predicted", "gold")
            assert [t.get_text() for t in ax.get_xticklabels()] == columns
            assert [t.get_text() for t in ax.get_yticklabels()] == list(LABELS)
    saved = json.loads(js.read_text())
    assert saved["in_vs_out_of_domain"][0]["drop"] == pytest.approx(
        ((2 / 3 + 0.5 + 2 / 3 + 0.8) / 4 + (3 + 2 / 3) / 4) / 2 - 0.1
    )
    # Checkpoints of a train folder as runs; errors in one line.
    assert main(["sci-report", str(c), "--over-checkpoints"]) == 0
    assert "| runs/train | scinli | 0 | 8 | 2 |" in capsys.readouterr().out
    assert main(["sci-report", str(a), "--in-domain", "scinli"]) == 2
    assert "go together" in capsys.readouterr().err
    assert main(["sci-report", str(tmp_path / "nope")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def _seed_records(model: str) -> list[Record]:
    # Seed 0 all right, seed 1 always "contrasting"; no checkpoint (a train folder's).
    return [
        Record("scinli", f"t{i}", model, 0, seed, LABELS, (0.0,) * 4, (0.25,) * 4, p, LABELS[i])
        for seed, preds in ((0, LABELS), (1, (C,) * 4))
        for i, p in enumerate(preds)
    ]


def test_train_folder_is_a_run_folder_of_its_test_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A `nlieval train` folder is reported from the test records its seeds saved, one row
    # with the training seeds as runs; no second pass over the test set.
    from nlieval.sci.train import TrainConfig

    folder = tmp_path / "enc"
    rf = RunFolder(folder)
    rf.start(TrainConfig("minilm", "scinli", seeds=(0, 1), out=str(folder)))
    rf.done_keys()
    rf.append(_seed_records("enc"))
    (row,) = sci.sci_rows(sci.iter_report_records([folder]))
    assert (row["model"], row["checkpoint"], row["runs"], row["n"]) == ("enc", None, 2, 4)
    assert row["accuracy"] == pytest.approx((1.0 + 0.25) / 2)
    assert main(["sci-report", str(folder)]) == 0
    assert f"| enc | scinli | 0 | 4 | 2 | {row['macro_f1']:.3f} ± " in capsys.readouterr().out


def test_train_folder_of_an_older_version_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before train folders were run folders, each seed kept test_records.jsonl.
    for seed in (0, 1):
        (tmp_path / f"seed{seed}").mkdir()
        recs = [r for r in _seed_records("enc") if r.seed == seed]
        lines = "".join(r.to_json() + "\n" for r in recs)
        (tmp_path / f"seed{seed}" / "test_records.jsonl").write_text(lines)
    with pytest.raises(RunError, match="older `nlieval train`.*--overwrite"):
        list(sci.iter_report_records([tmp_path]))
    assert main(["sci-report", str(tmp_path)]) == 2
    assert "older `nlieval train`" in capsys.readouterr().err


def test_out_of_domain_named_by_its_task_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As docs/scientific.md writes it: --out-of-domain my_ood.yaml. The records hold the
    # task's name (the YAML has no name:, so its stem), not the path.
    (tmp_path / "items.jsonl").write_text(
        '{"premise": "a", "hypothesis": "b", "label": "neutral"}\n'
    )
    yaml = tmp_path / "my_ood.yaml"
    yaml.write_text("path: items.jsonl\nlabels: [contrasting, reasoning, entailment, neutral]\n")
    ood = [replace(r, task="my_ood") for r in _ood_records()]
    a = _folder(tmp_path / "in", _records(), "chat")
    b = _folder(tmp_path / "out", ood, "chat")
    argv = ["sci-report", str(a), str(b), "--in-domain", "scinli", "--out-of-domain"]
    assert main([*argv, str(yaml)]) == 0
    text = capsys.readouterr().out
    # The same pair as by the names: in-domain macro F1 as in the test above, OOD 0.1.
    ind = ((2 / 3 + 0.5 + 2 / 3 + 0.8) / 4 + (3 + 2 / 3) / 4) / 2
    assert "In-domain (scinli) vs out-of-domain (my_ood):" in text
    _assert_shift_row(text, ind)
    assert "no model and k" not in text
    # A task the folders do not hold is one line naming those they do, not an empty table.
    assert main([*argv, str(tmp_path / "other.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("no records of that task in these folders (they hold my_ood, scinli)")
    assert len(err.splitlines()) == 1


def test_items_of_one_gold_class_have_no_macro_f1_in_any_table() -> None:
    # The first 8 SciNLI test items are all "contrasting": one predicted right, the rest
    # reasoning. By hand, F1 contrasting = 2 * 1 / (8 + 1) = 0.222; counted with the 3
    # absent classes as 0 that was "macro F1 0.056" (MisMatched table 4's 5.6). Macro F1
    # over one class is undefined: n/a, said under the table, in the row and per domain.
    recs = [
        _instruct_record("scinli", str(i), C, C if i == 0 else R, 0, domain="acl") for i in range(8)
    ]
    (row,) = sci.sci_rows(recs)
    assert row["macro_f1"] != row["macro_f1"]  # NaN
    assert row["per_class_f1"][C] == pytest.approx(2 / 9)
    assert all(row["per_class_f1"][lab] != row["per_class_f1"][lab] for lab in (R, E, N))
    text = render(sci.format_report([row]), "md")
    table = [line for line in text.splitlines() if line.startswith("| chat")]
    assert table[0].split(" | ")[5:] == ["n/a", "0.125", "0.0", "0.222", "n/a", "n/a", "n/a |"]
    assert "| acl | 8 | n/a |" in text
    assert text.splitlines()[-1].startswith("n/a: undefined on these items")
