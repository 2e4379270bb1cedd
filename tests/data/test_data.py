"""Unit tests of nlieval.data on tiny files written in tmp_path (no real data, no network)."""

from __future__ import annotations

import gzip
import json
import logging
import pickle
import sys
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

import nlieval.data.load as data_load
from nlieval.data import (
    ENV_DATA_DIR,
    TASKS,
    DataError,
    Dataset,
    get_task,
    load_pool,
    load_task,
    read_items,
    resolve_data_dir,
    write_task_yaml,
)
from nlieval.types import ALPHA, NLI2, NLI3, SCI4, Label

#: The default data folder as the package sets it (the fixture below turns it off).
PACKAGE_DEFAULT = data_load.DEFAULT_DATA_DIR


@pytest.fixture(autouse=True)
def _no_env_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests here build their own data dirs; a real NLIEVAL_DATA_DIR must not leak in.
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)
    monkeypatch.setattr("nlieval.data.load.DEFAULT_DATA_DIR", None)


# --------------------------------------------------------------------------- helpers


def write_jsonl(path: Path, rows: Iterable[dict[str, Any] | str], gz: bool = False) -> Path:
    """Rows as JSON lines; a str row is written verbatim (for malformed lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def write_table(
    path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]], sep: str = "\t"
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [sep.join(header)] + [sep.join(str(v) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def snli_row(
    pid: str, label: str, s1: str = "A man sleeps.", s2: str = "A man rests."
) -> dict[str, Any]:
    return {
        "annotator_labels": [label] * 5,
        "gold_label": label,
        "pairID": pid,
        "sentence1": s1,
        "sentence2": s2,
    }


def chaos_row(uid: str, old: str | int, counts: list[int], alpha: bool = False) -> dict[str, Any]:
    if alpha:
        example = {
            "uid": uid,
            "obs1": "O1.",
            "obs2": "O2.",
            "hyp1": "H1.",
            "hyp2": "H2.",
            "source": "abdnli_dev",
        }
    else:
        example = {"uid": uid, "premise": "P.", "hypothesis": "H.", "source": "snli_agree_3"}
    row: dict[str, Any] = {
        "uid": uid,
        "label_count": counts,
        "majority_label": 1 if alpha else "n",
        "entropy": 0.5,
        "example": example,
        "old_label": old,
    }
    if not alpha:
        row["old_labels"] = ["neutral"] * 5
    return row


# --------------------------------------------------------------------------- DataError


def test_data_error_message_is_one_line_with_all_parts() -> None:
    err = DataError("x/dev.jsonl", 7, "gold_label", "unknown label 'q'\nsecond line")
    assert str(err) == "x/dev.jsonl:7: field 'gold_label': unknown label 'q' second line"
    assert (err.path, err.line, err.field) == ("x/dev.jsonl", 7, "gold_label")
    assert isinstance(err, ValueError)


def test_data_error_leaves_out_missing_parts() -> None:
    assert str(DataError("f.csv", None, None, "empty file")) == "f.csv: empty file"
    assert str(DataError("f.csv", 3, None, "bad row")) == "f.csv:3: bad row"
    assert (
        str(DataError(Path("f.csv"), None, "labels", "missing")) == "f.csv: field 'labels': missing"
    )
    assert str(DataError(None, None, None, "unknown task")) == "unknown task"


def test_data_error_pickles() -> None:
    err = pickle.loads(pickle.dumps(DataError("f.jsonl", 2, "label", "bad")))
    assert str(err) == "f.jsonl:2: field 'label': bad"


# --------------------------------------------------------------------------- SNLI / MNLI


def test_snli_jsonl_drops_dash_and_counts_it(tmp_path: Path) -> None:
    rows = [
        snli_row("1e", "entailment"),
        snli_row("2n", "neutral"),
        snli_row("3x", "-"),
        snli_row("4c", "contradiction"),
    ]
    write_jsonl(tmp_path / "snli_1.0" / "snli_1.0_dev.jsonl", rows)
    ds = load_task("snli", tmp_path)
    assert isinstance(ds, Dataset)
    assert (ds.task, ds.split, ds.labels) == ("snli", "dev", NLI3)
    assert [it.id for it in ds.items] == ["1e", "2n", "4c"]
    assert dict(ds.dropped) == {"gold label '-'": 1}
    assert ds.items[0].meta["annotator_labels"] == ["entailment"] * 5
    assert ds.source.endswith("snli_1.0_dev.jsonl")


def test_snli_gz_is_read_transparently(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "snli_1.0_test.jsonl.gz", [snli_row("a", "neutral")], gz=True)
    ds = load_task("snli", tmp_path, split="test")
    assert ds.items[0].label is Label.NEUTRAL


def test_snli_official_txt_tsv_keeps_quotes(tmp_path: Path) -> None:
    header = [
        "gold_label",
        "sentence1_binary_parse",
        "sentence2_binary_parse",
        "sentence1_parse",
        "sentence2_parse",
        "sentence1",
        "sentence2",
        "captionID",
        "pairID",
        "label1",
        "label2",
        "label3",
        "label4",
        "label5",
    ]
    rows = [
        [
            "neutral",
            "(",
            "(",
            "(",
            "(",
            'A "quoted sign.',
            "A sign.",
            "c1",
            "p1",
            "neutral",
            "entailment",
            "",
            "",
            "",
        ],
        ["-", "(", "(", "(", "(", "A.", "B.", "c2", "p2", "neutral", "entailment", "", "", ""],
    ]
    write_table(tmp_path / "snli_1.0_dev.txt", header, rows)
    ds = load_task("snli", tmp_path)
    assert len(ds) == 1 and ds.items[0].premise == 'A "quoted sign.'
    assert ds.items[0].meta["annotator_labels"] == ["neutral", "entailment"]
    assert dict(ds.dropped) == {"gold label '-'": 1}


def test_mnli_official_jsonl_has_genre(tmp_path: Path) -> None:
    row = {**snli_row("9e", "entailment"), "genre": "fiction", "promptID": "9"}
    write_jsonl(tmp_path / "multinli_1.0_dev_matched.jsonl", [row])
    item = load_task("mnli_m", tmp_path).items[0]
    assert item.meta["genre"] == "fiction" and item.meta["promptID"] == "9"


def test_mnli_glue_mismatched_tsv(tmp_path: Path) -> None:
    header = [
        "index",
        "promptID",
        "pairID",
        "genre",
        "sentence1",
        "sentence2",
        "label1",
        "gold_label",
    ]
    rows = [["0", "1", "1n", "letters", "A.", "B.", "neutral", "neutral"]]
    write_table(tmp_path / "MNLI" / "dev_mismatched.tsv", header, rows)
    ds = load_task("mnli_mm", tmp_path)
    assert ds.split == "dev_mismatched" and ds.items[0].meta["genre"] == "letters"


def test_mnli_bert_responses_tsv(tmp_path: Path) -> None:
    header = [
        "index",
        "premise",
        "hypothesis",
        "gold_label",
        "number of correct responses (out of 100)",
    ]
    rows = [["0", "A.", "B.", "neutral", "87"], ["1", "C.", "D.", "contradiction", "100"]]
    write_table(
        tmp_path / "mnli" / "mnli_development_set_number_of_correct_responses.txt", header, rows
    )
    ds = load_task("mnli_m", tmp_path)
    assert [it.id for it in ds.items] == ["0", "1"]
    assert ds.items[0].meta["bert_correct_of_100"] == 87


def test_mnli_mismatched_missing_names_the_files(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "other.jsonl", [{"a": 1}])
    with pytest.raises(DataError, match="multinli_1.0_dev_mismatched.jsonl") as info:
        load_task("mnli_mm", tmp_path)
    assert "dev_mismatched.tsv" in str(info.value)


# --------------------------------------------------------------------------- HANS


HANS_HEADER = [
    "gold_label",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
    "pairID",
    "heuristic",
    "subcase",
    "template",
]


def hans_rows(n: int, prefix: str = "ex") -> list[list[str]]:
    labels = ["entailment", "non-entailment"]
    return [
        [
            labels[i % 2],
            "(",
            "(",
            "(",
            "(",
            f"The doctor saw the judge {i} .",
            "The judge saw the doctor .",
            f"{prefix}{i}",
            "lexical_overlap",
            "ln_subject/object_swap",
            "temp1",
        ]
        for i in range(n)
    ]


def test_hans_official_txt_with_meta(tmp_path: Path) -> None:
    write_table(tmp_path / "heuristics_evaluation_set.txt", HANS_HEADER, hans_rows(4))
    ds = load_task("hans", tmp_path)
    assert (ds.split, ds.labels, len(ds)) == ("eval", NLI2, 4)
    item = ds.items[1]
    assert item.id == "ex1" and item.label is Label.NON_ENTAILMENT
    assert item.meta == {
        "heuristic": "lexical_overlap",
        "subcase": "ln_subject/object_swap",
        "template": "temp1",
    }


def test_hans_derived_jsonl_ids_are_line_numbers(tmp_path: Path) -> None:
    rows = [
        {
            "sentence1": "A b .",
            "sentence2": "B a .",
            "gold_label": "non-entailment",
            "heuristic": "x",
            "nikotang_split": "validation",
        }
    ] * 3
    write_jsonl(tmp_path / "hans" / "hans_eval_30k.derived.jsonl", rows)
    ds = load_task("hans", tmp_path)
    assert [it.id for it in ds.items] == ["1", "2", "3"]
    assert ds.items[0].meta == {"heuristic": "x"}


def test_hans_pool_is_train_when_present_else_eval(tmp_path: Path) -> None:
    write_table(tmp_path / "heuristics_evaluation_set.txt", HANS_HEADER, hans_rows(4))
    pool, same = load_pool("hans", tmp_path)
    assert (pool.split, same) == ("eval", True)
    write_table(tmp_path / "heuristics_train_set.txt", HANS_HEADER, hans_rows(6, "tr"))
    pool, same = load_pool("hans", tmp_path)
    assert (pool.split, len(pool), same) == ("train", 6, False)


def test_hans_zip_arrow(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")

    def arrow(n: int) -> bytes:
        table = pa.table(
            {
                "sentence1": ["A b ."] * n,
                "sentence2": ["B a ."] * n,
                "labels": [0, 1] * (n // 2),
                "heuristic": ["x"] * n,
            }
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())

    with zipfile.ZipFile(tmp_path / "hans.zip", "w") as zf:
        for split, n in (("train", 4), ("validation", 2), ("test", 2)):
            zf.writestr(f"hans_datasets/{split}/data-00000-of-00001.arrow", arrow(n))
    ds = load_task("hans", tmp_path)
    assert [it.id for it in ds.items] == ["1", "2", "3", "4"]
    assert ds.items[0].label is Label.NON_ENTAILMENT and ds.items[1].label is Label.ENTAILMENT
    assert load_pool("hans", tmp_path)[0].split == "train"


# --------------------------------------------------------------------------- ANLI


def anli_row(uid: str, label: str) -> dict[str, Any]:
    return {"uid": uid, "premise": "P.", "hypothesis": "H.", "label": label, "reason": "why"}


def test_anli_rounds_share_file_names(tmp_path: Path) -> None:
    for rnd in (1, 2, 3):
        write_jsonl(tmp_path / "anli_v1.0" / f"R{rnd}" / "dev.jsonl", [anli_row(f"r{rnd}-a", "e")])
    write_jsonl(tmp_path / "anli_v1.0" / "R2" / "test.jsonl", [anli_row("r2-t", "c")])
    assert load_task("anli_r2", tmp_path).items[0].id == "r2-a"
    item = load_task("anli_r3", tmp_path).items[0]
    assert (item.id, item.label, item.meta["round"], item.meta["reason"]) == (
        "r3-a",
        Label.ENTAILMENT,
        "R3",
        "why",
    )
    assert load_task("anli_r2", tmp_path, split="test").items[0].label is Label.CONTRADICTION
    with pytest.raises(DataError, match="R1"):
        load_task("anli_r1", tmp_path, split="test")


def test_anli_annotation_csv(tmp_path: Path) -> None:
    text = (
        "context,statement,reason,gold_label,uid,tags\n"
        "\"A long, quoted context.\",A statement.,because,n,u1,\"['Basic', 'Idiom']\"\n"
        "Ctx2,St2,,c,u2,\n"
    )
    (tmp_path / "ANLI_analysis_r3_dev.csv").write_text(text, encoding="utf-8")
    ds = load_task("anli_r3", tmp_path)
    assert [it.label for it in ds.items] == [Label.NEUTRAL, Label.CONTRADICTION]
    assert ds.items[0].premise == "A long, quoted context."
    assert ds.items[0].meta["tags"] == ["Basic", "Idiom"]
    assert "reason" not in ds.items[1].meta  # empty fields are not copied


# --------------------------------------------------------------------------- alpha-NLI and ChaosNLI


def art_rows(n: int) -> list[dict[str, Any]]:
    return [
        {"story_id": f"s{i}", "obs1": "O1.", "obs2": "O2.", "hyp1": "H1.", "hyp2": "H2."}
        for i in range(n)
    ]


def test_alphanli_official_with_label_file(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "art" / "dev.jsonl", art_rows(3))
    (tmp_path / "art" / "dev-labels.lst").write_text("1\n2\n2\n")
    ds = load_task("alphanli", tmp_path)
    assert ds.labels == ALPHA
    assert [it.label for it in ds.items] == [Label.HYP1, Label.HYP2, Label.HYP2]
    assert ds.items[0].choices == ("H1.", "H2.") and ds.items[0].premise == "O1."


def test_alphanli_label_count_mismatch(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "dev.jsonl", art_rows(3))
    (tmp_path / "dev-labels.lst").write_text("1\n2\n")
    with pytest.raises(DataError, match=r"dev-labels.lst: 2 labels for 3 rows"):
        load_task("alphanli", tmp_path)


def test_alphanli_bad_label_in_label_file(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "dev.jsonl", art_rows(2))
    (tmp_path / "dev-labels.lst").write_text("1\n3\n")
    with pytest.raises(DataError, match=r"dev-labels.lst:2: field 'label'"):
        load_task("alphanli", tmp_path)
    assert load_task("alphanli", tmp_path, skip_bad=True).skipped_bad == 1


def test_alphanli_repeated_story_ids_made_unique(tmp_path: Path) -> None:
    rows = art_rows(2) + art_rows(1)
    write_jsonl(tmp_path / "dev.jsonl", rows)
    (tmp_path / "dev-labels.lst").write_text("1\n2\n1\n")
    assert [it.id for it in load_task("alphanli", tmp_path).items] == ["s0", "s1", "s0#2"]


def test_alphanli_falls_back_to_chaosnli(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "chaosNLI_alphanli.jsonl", [chaos_row("u1", 2, [40, 60], alpha=True)])
    item = load_task("alphanli", tmp_path).items[0]
    assert item.label is Label.HYP2 and item.choices == ("H1.", "H2.")


def test_chaosnli_nli_item(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "chaosNLI_snli.jsonl", [chaos_row("p1", "e", [50, 30, 20])])
    ds = load_task("chaosnli_snli", tmp_path)
    item = ds.items[0]
    assert (ds.split, item.id, item.label) == ("dev", "p1", Label.ENTAILMENT)
    assert item.meta["human_counts"] == [50, 30, 20]
    assert item.meta["majority_label"] == "neutral"
    assert item.meta["entropy"] == 0.5 and item.meta["source"] == "snli_agree_3"
    assert item.meta["old_labels"] == ["neutral"] * 5


def test_chaosnli_alphanli_item(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "chaosNLI_alphanli.jsonl", [chaos_row("u1", 1, [97, 3], alpha=True)])
    item = load_task("chaosnli_alphanli", tmp_path).items[0]
    assert item.label is Label.HYP1 and item.meta["majority_label"] == "1"
    assert (item.premise, item.hypothesis) == ("O1.", "O2.")


def test_chaosnli_wrong_count_length(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "chaosNLI_mnli_m.jsonl", [chaos_row("p1", "e", [50, 50])])
    with pytest.raises(DataError, match=r"chaosNLI_mnli_m.jsonl:1: field 'label_count'"):
        load_task("chaosnli_mnli", tmp_path)


def test_chaosnli_missing_nested_field(tmp_path: Path) -> None:
    row = chaos_row("p1", "e", [50, 30, 20])
    del row["example"]["hypothesis"]
    write_jsonl(tmp_path / "chaosNLI_snli.jsonl", [row])
    with pytest.raises(DataError, match=r":1: field 'example.hypothesis': missing field"):
        load_task("chaosnli_snli", tmp_path)


# --------------------------------------------------------------------------- SciNLI, SICK, RTE


def test_scinli_jsonl_and_csv(tmp_path: Path) -> None:
    rows = [
        {"id": f"test_{i}", "sentence1": "S1.", "sentence2": "S2.", "label": lab, "domain": "ACL"}
        for i, lab in enumerate(["contrasting", "reasoning", "entailment", "neutral"])
    ]
    write_jsonl(tmp_path / "SciNLI_dataset" / "test.jsonl", rows)
    ds = load_task("scinli", tmp_path)
    assert ds.labels == SCI4 and [it.label for it in ds.items] == list(SCI4)
    assert ds.items[0].meta["domain"] == "ACL"
    csv_text = ',id,sentence1,sentence2,label\n0,dev_0,"A, b.",C.,reasoning\n'
    (tmp_path / "SciNLI_dataset" / "dev.csv").write_text(csv_text, encoding="utf-8")
    item = load_task("scinli", tmp_path, split="dev").items[0]
    assert (item.id, item.premise, item.label) == ("dev_0", "A, b.", Label.REASONING)


def test_scinli_ignores_generic_names_elsewhere(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "MSciNLI" / "test.jsonl",
        [{"id": "x", "sentence1": "a", "sentence2": "b", "label": "neutral"}],
    )
    with pytest.raises(DataError, match="no file for scinli test"):
        load_task("scinli", tmp_path)


SICK_HEADER = [
    "pair_ID",
    "sentence_A",
    "sentence_B",
    "entailment_label",
    "relatedness_score",
    "SemEval_set",
]


def test_sick_splits_from_one_file(tmp_path: Path) -> None:
    rows = [
        ["1", "A.", "B.", "NEUTRAL", "3.5", "TRAIN"],
        ["2", "C.", "D.", "ENTAILMENT", "4.8", "TEST"],
        ["3", "E.", "F.", "CONTRADICTION", "1.2", "TEST"],
        ["4", "G.", "H.", "NEUTRAL", "3.0", "TRIAL"],
    ]
    write_table(tmp_path / "sick" / "SICK.txt", SICK_HEADER, rows)
    test = load_task("sick", tmp_path)
    assert (test.split, [it.id for it in test.items]) == ("test", ["2", "3"])
    assert test.items[0].label is Label.ENTAILMENT and test.items[0].meta["relatedness"] == 4.8
    assert dict(test.dropped) == {}  # other splits' rows are not "dropped"
    assert [it.id for it in load_task("sick", tmp_path, split="trial").items] == ["4"]
    pool, same = load_pool("sick", tmp_path)
    assert (pool.split, len(pool), same) == ("train", 1, False)


def test_rte_dev_test_and_zip_train(tmp_path: Path) -> None:
    header = ["index", "sentence1", "sentence2", "label"]
    write_table(
        tmp_path / "RTE" / "dev.tsv",
        header,
        [["0", "A.", "B.", "entailment"], ["1", "C.", "D.", "not_entailment"]],
    )
    write_table(tmp_path / "RTE" / "test.tsv", header[:3], [["0", "A.", "B."]])
    # A dev.tsv of another GLUE task must not be taken for RTE's.
    write_table(tmp_path / "CoLA" / "dev.tsv", ["x"], [["y"]])
    dev = load_task("rte", tmp_path)
    assert [it.label for it in dev.items] == [Label.ENTAILMENT, Label.NON_ENTAILMENT]
    assert load_task("rte", tmp_path, split="test").items[0].label is None
    # No train: the unlabelled test split is no pool, so dev itself is.
    assert load_pool("rte", tmp_path)[1] is True
    with zipfile.ZipFile(tmp_path / "RTE.zip", "w") as zf:
        zf.writestr("RTE/train.tsv", "index\tsentence1\tsentence2\tlabel\n0\tX.\tY.\tentailment\n")
    pool, same = load_pool("rte", tmp_path)
    assert (pool.split, len(pool), same) == ("train", 1, False)
    assert pool.source.endswith("RTE.zip!RTE/train.tsv")


# --------------------------------------------------------------------------- smoke


def test_smoke_needs_no_data_dir() -> None:
    ds = load_task("smoke")
    assert len(ds) == 48 and ds.labels == NLI3
    assert ds.label_counts() == {"entailment": 16, "neutral": 16, "contradiction": 16}
    assert len({it.id for it in ds.items}) == 48
    assert len({(it.premise, it.hypothesis) for it in ds.items}) == 48


def test_smoke_pool_is_its_own_train_file() -> None:
    pool, same = load_pool("smoke")
    assert (pool.split, len(pool), same) == ("train", 12, False)
    assert pool.label_counts() == {"entailment": 4, "neutral": 4, "contradiction": 4}
    test_texts = {(it.premise, it.hypothesis) for it in load_task("smoke").items}
    assert not test_texts & {(it.premise, it.hypothesis) for it in pool.items}


# --------------------------------------------------------------------------- location


def test_first_sorted_match_is_used(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "b" / "snli_1.0_dev.jsonl", [snli_row("from-b", "neutral")])
    write_jsonl(tmp_path / "a" / "deeper" / "snli_1.0_dev.jsonl", [snli_row("from-a", "neutral")])
    assert load_task("snli", tmp_path).items[0].id == "from-a"


def test_env_var_is_used_and_argument_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_jsonl(tmp_path / "env" / "snli_1.0_dev.jsonl", [snli_row("env", "neutral")])
    write_jsonl(tmp_path / "arg" / "snli_1.0_dev.jsonl", [snli_row("arg", "neutral")])
    monkeypatch.setenv(ENV_DATA_DIR, str(tmp_path / "env"))
    assert resolve_data_dir() == tmp_path / "env"
    assert load_task("snli").items[0].id == "env"
    assert load_task("snli", tmp_path / "arg").items[0].id == "arg"


def test_without_a_data_dir_the_shared_data_beside_the_root_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's set-up: the shared data at ../shared/data of the repository root, where
    # the docs run their commands with nothing exported.
    write_jsonl(
        tmp_path / "shared" / "data" / "snli_1.0_dev.jsonl", [snli_row("shared", "neutral")]
    )
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.setattr("nlieval.data.load.DEFAULT_DATA_DIR", PACKAGE_DEFAULT)
    assert load_task("snli").items[0].id == "shared"
    monkeypatch.chdir(tmp_path)  # no ../shared/data here: none, as before
    assert resolve_data_dir() is None


def test_resolve_data_dir_none_and_missing(tmp_path: Path) -> None:
    assert resolve_data_dir() is None
    with pytest.raises(DataError, match="data directory does not exist"):
        resolve_data_dir(tmp_path / "nope")
    (tmp_path / "file.jsonl").write_text("{}\n")
    with pytest.raises(DataError, match="is not a directory"):
        load_task("snli", tmp_path / "file.jsonl")


def test_no_data_dir_and_no_hub_asks_for_data_dir() -> None:
    with pytest.raises(DataError, match=f"--data-dir or {ENV_DATA_DIR}") as info:
        load_task("scinli")
    assert "test.jsonl" in str(info.value)


def test_no_data_dir_with_hub_needs_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import fails: never reaches the network
    with pytest.raises(DataError, match="'datasets' package"):
        load_task("snli")


def test_unknown_task_lists_valid_names() -> None:
    with pytest.raises(DataError, match="unknown task 'snl'") as info:
        get_task("snl")
    assert all(name in str(info.value) for name in TASKS)


def test_unknown_split(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="has no split 'validation'"):
        load_task("snli", tmp_path, split="validation")


def test_task_table_is_complete() -> None:
    expected = {
        "snli",
        "mnli_m",
        "mnli_mm",
        "hans",
        "anli_r1",
        "anli_r2",
        "anli_r3",
        "alphanli",
        "chaosnli_snli",
        "chaosnli_mnli",
        "chaosnli_alphanli",
        "scinli",
        "sick",
        "rte",
        "smoke",
    }
    assert set(TASKS) == expected
    families = {"nli3": NLI3, "nli2": NLI2, "alphanli": ALPHA, "sci4": SCI4}
    for spec in TASKS.values():
        assert families[spec.family] == spec.labels
        assert spec.default_split in spec.splits and spec.description


# --------------------------------------------------------------------------- user tasks


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_task_with_field_and_label_map(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "my.jsonl",
        [
            {"uid": "a", "s1": "P.", "s2": "H.", "gold": 0},
            {"uid": "b", "s1": "P.", "s2": "H.", "gold": 2},
        ],
    )
    write_jsonl(
        tmp_path / "data" / "pool.jsonl.gz",
        [{"uid": "t", "s1": "P.", "s2": "H.", "gold": 1}],
        gz=True,
    )
    yml = write_yaml(
        tmp_path / "task.yaml",
        """
name: my-task
path: my.jsonl
pool: data/pool.jsonl.gz
fields: {id: uid, premise: s1, hypothesis: s2, label: gold}
labels: [entailment, neutral, contradiction]
label_map: {0: entailment, 1: neutral, 2: contradiction}
template: "P: {{ premise }} Answer:"
""",
    )
    spec = get_task(str(yml))
    assert (spec.name, spec.family, spec.labels, spec.default_split) == (
        "my-task",
        "nli3",
        NLI3,
        "test",
    )
    assert spec.template == "P: {{ premise }} Answer:"
    ds = load_task(str(yml))
    assert [(it.id, it.label) for it in ds.items] == [
        ("a", Label.ENTAILMENT),
        ("b", Label.CONTRADICTION),
    ]
    pool, same = load_pool(str(yml))
    assert (pool.items[0].label, same) == (Label.NEUTRAL, False)


def test_yaml_task_csv_without_id_and_derived_family(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text(
        "premise,hypothesis,label\nA.,B.,entailment\nC.,D.,not_entailment\n"
    )
    yml = write_yaml(tmp_path / "t.yml", "path: d.csv\nlabels: [entailment, non-entailment]\n")
    spec = get_task(str(yml))
    assert (spec.name, spec.family) == ("t", "nli2")
    ds = load_task(str(yml))
    assert [it.id for it in ds.items] == ["2", "3"]  # line numbers
    assert load_pool(str(yml))[1] is True


def test_yaml_task_tsv_with_custom_label_set(tmp_path: Path) -> None:
    write_table(tmp_path / "d.tsv", ["p", "h", "y"], [["A.", "B.", "e"], ["C.", "D.", "c"]])
    yml = write_yaml(
        tmp_path / "t.yaml",
        """
path: d.tsv
fields: {premise: p, hypothesis: h, label: y}
labels: [entailment, contradiction]
""",
    )
    assert get_task(str(yml)).family == "nli3"  # a set without its own family: generic layout
    assert [it.label for it in load_task(str(yml)).items] == [Label.ENTAILMENT, Label.CONTRADICTION]


def test_yaml_task_alpha_style_choices(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", [{"o1": "A.", "o2": "B.", "h1": "x", "h2": "y", "ans": 2}])
    yml = write_yaml(
        tmp_path / "t.yaml",
        """
path: a.jsonl
family: alphanli
fields: {premise: o1, hypothesis: o2, label: ans, choices: [h1, h2]}
""",
    )
    item = load_task(str(yml)).items[0]
    assert (item.choices, item.label) == (("x", "y"), Label.HYP2)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("path: d.jsonl\nlabels: [entailment]\nbogus: 1\n", r"field 'bogus': unknown key"),
        ("labels: [entailment, neutral]\n", r"field 'path': missing"),
        ("path: d.jsonl\n", r"field 'labels': missing"),
        ("path: d.jsonl\nlabels: [entailment, maybe]\n", r"field 'labels': unknown label 'maybe'"),
        (
            "path: d.jsonl\nlabels: [entailment, neutral]\nlabel_map: {0: contradiction}\n",
            r"field 'label_map': unknown label 'contradiction'",
        ),
        (
            "path: d.jsonl\nlabels: [entailment, neutral]\nfields: {premis: a}\n",
            r"field 'fields.premis': unknown key",
        ),
        ("path: d.jsonl\nfamily: nli9\n", r"field 'family': unknown family"),
        ("path: d.jsonl\nlabels: [entailment\n", r"t.yaml:\d+: invalid YAML"),
        ("- just\n- a list\n", r"expected a mapping"),
    ],
)
def test_yaml_task_errors(tmp_path: Path, text: str, pattern: str) -> None:
    yml = write_yaml(tmp_path / "t.yaml", text)
    with pytest.raises(DataError, match=pattern):
        get_task(str(yml))


def test_yaml_task_missing_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        get_task(str(tmp_path / "absent.yaml"))
    yml = write_yaml(tmp_path / "t.yaml", "path: absent.jsonl\nlabels: [entailment, neutral]\n")
    with pytest.raises(DataError, match=r"absent.jsonl: no such file"):
        load_task(str(yml))


def test_yaml_task_unlabelled_data(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "u.jsonl", [{"premise": "A.", "hypothesis": "B."}])
    yml = write_yaml(
        tmp_path / "t.yaml", "path: u.jsonl\nlabels: [entailment, neutral]\nfields: {label: null}\n"
    )
    assert load_task(str(yml)).items[0].label is None


def test_specs_and_datasets_pickle(tmp_path: Path) -> None:
    ds = load_task("smoke")
    assert pickle.loads(pickle.dumps(ds)).items == ds.items
    assert pickle.loads(pickle.dumps(get_task("hans"))).name == "hans"


def test_read_items_with_format_override(tmp_path: Path) -> None:
    path = tmp_path / "rows.data"
    path.write_text("a\tb\tc\nP.\tH.\tneutral\n")
    ds = read_items(path, "tsv", fields={"premise": "a", "hypothesis": "b", "label": "c"})
    assert (ds.task, len(ds), ds.items[0].label) == ("rows", 1, Label.NEUTRAL)


# --------------------------------------------------------------------------- bad input

FIELDS = {"id": "id", "premise": "p", "hypothesis": "h", "label": "y"}
GOOD = {"id": "1", "p": "A.", "h": "B.", "y": "neutral"}


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write dict rows in the format given by the path's extension (all share GOOD's keys)."""
    if path.suffix == ".jsonl":
        return write_jsonl(path, rows)
    sep = "," if path.suffix == ".csv" else "\t"
    keys = list(rows[0])
    return write_table(path, keys, [[r.get(k, "") for k in keys] for r in rows], sep)


def make_task(tmp_path: Path, data: Path) -> str:
    fields = ", ".join(f"{k}: {v}" for k, v in FIELDS.items())
    yml = f"path: {data.name}\nfields: {{{fields}}}\nlabels: [entailment, neutral, contradiction]\n"
    return str(write_yaml(tmp_path / "task.yaml", yml))


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".tsv"])
def test_unknown_label_names_file_line_field(tmp_path: Path, ext: str) -> None:
    data = write_rows(tmp_path / f"d{ext}", [GOOD, {**GOOD, "id": "2", "y": "maybe"}])
    line = 2 if ext == ".jsonl" else 3  # tables have a header line
    with pytest.raises(DataError) as info:
        load_task(make_task(tmp_path, data))
    err = info.value
    assert (err.path, err.line, err.field) == (str(data), line, "y")
    assert str(err).startswith(f"{data}:{line}: field 'y': unknown label 'maybe'")
    assert "\n" not in str(err)


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".tsv"])
def test_missing_field(tmp_path: Path, ext: str) -> None:
    if ext == ".jsonl":
        data = write_jsonl(tmp_path / "d.jsonl", [GOOD, {"id": "2", "p": "A.", "y": "neutral"}])
        line, field = 2, "h"
    else:  # a column absent from the header is missing on every row
        sep = "," if ext == ".csv" else "\t"
        data = write_table(tmp_path / f"d{ext}", ["id", "p", "y"], [["1", "A.", "neutral"]], sep)
        line, field = 2, "h"
    with pytest.raises(DataError, match=rf"d{ext}:{line}: field '{field}': missing field"):
        load_task(make_task(tmp_path, data))


def test_malformed_json_line(tmp_path: Path) -> None:
    third = {**GOOD, "id": "3"}
    data = write_jsonl(tmp_path / "d.jsonl", [GOOD, '{"id": "2", "p": "A.', third, "[1, 2]"])
    with pytest.raises(DataError, match=r"d.jsonl:2: invalid JSON"):
        load_task(make_task(tmp_path, data))
    ds = load_task(make_task(tmp_path, data), skip_bad=True)
    assert (len(ds), ds.skipped_bad) == (2, 2)  # line 4 is JSON but not an object


@pytest.mark.parametrize("ext", [".csv", ".tsv"])
def test_wrong_number_of_columns(tmp_path: Path, ext: str) -> None:
    sep = "," if ext == ".csv" else "\t"
    data = tmp_path / f"d{ext}"
    data.write_text(
        sep.join(["id", "p", "h", "y"])
        + "\n"
        + sep.join(["1", "A.", "B.", "neutral"])
        + "\n"
        + sep.join(["2", "A.", "neutral"])
        + "\n"
    )
    with pytest.raises(
        DataError, match=rf"d{ext}:3: expected 4 columns \(as the header\), found 3"
    ):
        load_task(make_task(tmp_path, data))
    assert load_task(make_task(tmp_path, data), skip_bad=True).skipped_bad == 1


def test_csv_line_numbers_count_multiline_fields(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text('id,p,h,y\n1,"two\nlines",B.,neutral\n2,A.,B.,maybe\n')
    with pytest.raises(DataError, match=r"d.csv:4: field 'y'"):
        load_task(make_task(tmp_path, data))


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".tsv", ".jsonl.gz"])
def test_empty_file_even_with_skip_bad(tmp_path: Path, ext: str) -> None:
    data = tmp_path / f"d{ext}"
    if ext.endswith(".gz"):
        with gzip.open(data, "wt") as fh:
            fh.write("\n")
    else:
        data.write_text("")
    with pytest.raises(DataError, match=r"empty file"):
        load_task(make_task(tmp_path, data), skip_bad=True)


def test_header_only_table(tmp_path: Path) -> None:
    data = write_table(tmp_path / "d.csv", ["id", "p", "h", "y"], [], ",")
    with pytest.raises(DataError, match="no data rows after the header"):
        load_task(make_task(tmp_path, data))


def test_wrong_path_even_with_skip_bad(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope.jsonl: no such file"):
        read_items(tmp_path / "nope.jsonl", fields=FIELDS, skip_bad=True)


def test_not_gzip_and_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl.gz").write_text("plain text")
    with pytest.raises(DataError, match=r"d.jsonl.gz: cannot read"):
        read_items(tmp_path / "d.jsonl.gz", fields=FIELDS)
    (tmp_path / "d.jsonl").write_bytes(b'{"p": "\xff\xfe"}\n')
    with pytest.raises(DataError, match="not UTF-8"):
        read_items(tmp_path / "d.jsonl", fields=FIELDS)


def test_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="unknown file type"):
        read_items(tmp_path / "d.parquet", fields=FIELDS)


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".tsv"])
def test_skip_bad_counts_and_logs(
    tmp_path: Path, ext: str, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [
        GOOD,
        {**GOOD, "id": "2", "y": "maybe"},
        {**GOOD, "id": "3"},
        {**GOOD, "id": "4", "y": "??"},
    ]
    data = write_rows(tmp_path / f"d{ext}", rows)
    with caplog.at_level(logging.WARNING, logger="nlieval.data"):
        ds = load_task(make_task(tmp_path, data), skip_bad=True)
    assert [it.id for it in ds.items] == ["1", "3"]
    assert ds.skipped_bad == 2 and dict(ds.dropped) == {}
    assert "skipped 2 bad line(s)" in caplog.text
    assert "unknown label 'maybe'" in caplog.text


def test_all_lines_bad_is_an_error(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", ["{", "{"])
    with pytest.raises(DataError, match=r"no usable items \(2 bad line\(s\) skipped\)"):
        load_task(make_task(tmp_path, data), skip_bad=True)


def test_label_outside_task_set(tmp_path: Path) -> None:
    # "neutral" is a Label, but not one of HANS's.
    rows = [{"sentence1": "A .", "sentence2": "B .", "gold_label": "neutral", "heuristic": "x"}]
    write_jsonl(tmp_path / "hans_eval_30k.derived.jsonl", rows)
    with pytest.raises(DataError, match=r":1: field 'gold_label': unknown label 'neutral'"):
        load_task("hans", tmp_path)


# --------------------------------------------------------------------------- pool rules


def scinli_rows(split: str, n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"{split}_{i}", "sentence1": "a", "sentence2": "b", "label": "neutral"}
        for i in range(n)
    ]


def test_pool_prefers_train_then_other_split_then_itself(tmp_path: Path) -> None:
    root = tmp_path / "scinli"
    write_jsonl(root / "test.jsonl", scinli_rows("test", 3))
    assert load_pool("scinli", tmp_path)[0].split == "test"
    assert load_pool("scinli", tmp_path)[1] is True
    write_jsonl(root / "dev.jsonl", scinli_rows("dev", 2))
    pool, same = load_pool("scinli", tmp_path)
    assert (pool.split, same) == ("dev", False)
    write_jsonl(root / "train.jsonl", scinli_rows("train", 5))
    pool, same = load_pool("scinli", tmp_path)
    assert (pool.split, len(pool), same) == ("train", 5, False)


def test_pool_for_another_evaluated_split(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "snli_1.0_dev.jsonl", [snli_row("d", "neutral")])
    write_jsonl(tmp_path / "snli_1.0_test.jsonl", [snli_row("t", "neutral")])
    assert load_pool("snli", tmp_path)[0].split == "test"  # evaluating dev
    pool, same = load_pool("snli", tmp_path, split="test")
    assert (pool.split, same) == ("dev", False)
    write_jsonl(tmp_path / "snli_1.0_train.jsonl.gz", [snli_row("tr", "neutral")], gz=True)
    assert load_pool("snli", tmp_path, split="test")[0].split == "train"


def test_chaosnli_pool_uses_original_train(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "chaosNLI_snli.jsonl", [chaos_row("p1", "e", [50, 30, 20])])
    assert load_pool("chaosnli_snli", tmp_path)[1] is True
    write_jsonl(tmp_path / "snli_1.0_train.jsonl", [snli_row("tr", "neutral")])
    pool, same = load_pool("chaosnli_snli", tmp_path)
    assert (pool.split, pool.items[0].id, same) == ("train", "tr", False)


# --------------------------------------------------------------------------- writing task YAML


def test_write_task_yaml_round_trip(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "out" / "items.jsonl",
        [{"id": "a", "premise": "Ein Hund läuft.", "hypothesis": "Ein Tier.", "doc": "d1"}],
    )
    spec = {
        "name": "demo",
        "description": "Übung",
        "path": "items.jsonl",
        "pool": "items.jsonl",
        "labels": NLI3,
        "fields": {"id": "id", "label": None, "meta": ("doc",)},
    }
    path = write_task_yaml(tmp_path / "out" / "task.yaml", spec)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("name: demo\ndescription: Übung\npath: items.jsonl\n")
    assert "label: null" in text
    ds = load_task(str(path))
    assert (ds.task, ds.labels, ds.items[0].label, ds.items[0].meta) == (
        "demo",
        NLI3,
        None,
        {"doc": "d1"},
    )
    assert get_task(str(path)).description == "Übung"
    assert load_pool(str(path))[1] is True  # pool is path: the same rows


def test_write_task_yaml_replaces_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "task.yaml"
    write_task_yaml(path, {"path": "a.jsonl", "labels": ["entailment", "non-entailment"]})
    write_task_yaml(path, {"path": "b.jsonl", "family": "nli3"})
    assert path.read_text(encoding="utf-8") == "path: b.jsonl\nfamily: nli3\n"
    assert [p.name for p in path.parent.iterdir()] == ["task.yaml"]


def test_write_task_yaml_checks_keys_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    with pytest.raises(DataError, match="field 'paht': unknown key; allowed: name, path"):
        write_task_yaml(path, {"paht": "a.jsonl"})
    with pytest.raises(DataError, match="field 'path': missing"):
        write_task_yaml(path, {"labels": ["entailment"]})
    assert not path.exists()


def test_package_facade_exports() -> None:
    import nlieval.data as data

    assert sorted(data.__all__) == sorted(set(data.__all__))
    assert all(hasattr(data, name) for name in data.__all__)
    for module in Path(data.__file__).parent.glob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert "from . import" not in text and "\nfrom nlieval.data import" not in text
