"""Inputs that used to give silent wrong results or tracebacks: each is now a one-line
error naming the file (and line), or a warning naming the line."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.contamination.ngrams import build_index
from nlieval.contamination.scan import scan_files
from nlieval.data import DataError, get_task, read_items
from nlieval.data.stats import dataset_stats
from nlieval.reports import ReportConfig, report
from nlieval.runs import RECORDS, RunError, RunFolder
from nlieval.sci import distant
from tests.runs.test_runner import HashLM


def _run(folder: Path) -> list[str]:
    cfg = RunConfig(model="hash", tasks=("smoke",), shots=(0,))
    run(cfg, folder, model=stand_in(cfg, lambda ck: HashLM()), progress=False)
    return (folder / RECORDS).read_text().splitlines(keepends=True)  # by hand: bytes


def _one_line_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


# --------------------------------------------------------------------------- task YAML


def test_missing_pool_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(
        '{"premise": "a", "hypothesis": "b", "label": "entailment"}\n'
    )
    yaml = tmp_path / "t.yaml"
    yaml.write_text(
        "path: t.jsonl\npool: missing.jsonl\nlabels: [entailment, neutral, contradiction]\n"
    )
    with pytest.raises(DataError) as err:
        get_task(str(yaml))
    assert str(err.value) == f"{yaml}: field 'pool': no such file: {tmp_path / 'missing.jsonl'}"


def test_stats_warns_about_items_too_long_for_a_prompt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [
        {"id": "short", "premise": "A man walks.", "hypothesis": "He moves.", "label": "neutral"},
        {"id": "huge", "premise": "word " * 5000, "hypothesis": "He moves.", "label": "neutral"},
    ]
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = read_items(data)
    with caplog.at_level(logging.WARNING):
        assert dataset_stats(ds)["long_items"] == 1  # 25,009 characters > 10,000
    # Read without a field map, an item's id is the row's own "id" field.
    assert f"{data}: 1 item(s) of t/file longer than 10000 characters (ids: huge)" in caplog.text


# --------------------------------------------------------------------------- report


def test_blank_middle_record_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = _run(tmp_path / "r")
    (tmp_path / "r" / RECORDS).write_text("".join(lines[:5] + ["\n"] + lines[5:]))
    with caplog.at_level(logging.WARNING):
        table = report(ReportConfig(runs=(str(tmp_path / "r"),)))
    assert f"{tmp_path / 'r' / RECORDS}:6: 1 blank line(s) skipped" in caplog.text
    assert "| 48 |" in table  # nothing lost: the 48 smoke items


def test_record_without_gold_is_refused_by_line(tmp_path: Path) -> None:
    lines = _run(tmp_path / "r")
    row = json.loads(lines[9])
    del row["gold"]
    lines[9] = json.dumps(row) + "\n"
    (tmp_path / "r" / RECORDS).write_text("".join(lines))
    with pytest.raises(RunError, match=r"records.jsonl:10: field 'gold': missing"):
        report(ReportConfig(runs=(str(tmp_path / "r"),)))


def test_two_different_records_for_one_key_are_refused(tmp_path: Path) -> None:
    lines = _run(tmp_path / "r")
    row = json.loads(lines[3])
    row["pred"] = next(lab for lab in row["labels"] if lab != row["pred"])
    (tmp_path / "r" / RECORDS).write_text("".join(lines) + json.dumps(row) + "\n")
    with pytest.raises(RunError, match=r"records.jsonl:49: a second, different record .* line 4"):
        report(ReportConfig(runs=(str(tmp_path / "r"),)))


def test_identical_copies_are_counted_once_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lines = _run(tmp_path / "r")
    (tmp_path / "r" / RECORDS).write_text("".join(lines + lines))
    with caplog.at_level(logging.WARNING):
        assert len(RunFolder(tmp_path / "r").records()) == 48
    assert "records.jsonl:49: 48 copies of earlier records skipped" in caplog.text


def test_invalid_utf8_in_a_run_folder_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _run(tmp_path / "r")
    raw = "".join(lines[:2]).encode() + b'{"task": "\xff"}\n' + "".join(lines[2:]).encode()
    (tmp_path / "r" / RECORDS).write_bytes(raw)
    err = _one_line_error(["report", str(tmp_path / "r")], capsys)
    assert f"{tmp_path / 'r' / RECORDS}:3: not UTF-8 text" in err


@pytest.mark.parametrize("text", ["", '{"metrics": [', "\xff"])
def test_empty_or_truncated_json_of_a_run_folder_names_the_file(tmp_path: Path, text: str) -> None:
    _run(tmp_path / "r")
    (tmp_path / "r" / "config.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(RunError, match=r"config.json(:1)?: (empty|invalid JSON|not UTF-8)"):
        report(ReportConfig(runs=(str(tmp_path / "r"),)))


# --------------------------------------------------------------------------- build distant


def test_build_distant_on_an_empty_corpus_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "empty.jsonl"
    corpus.write_text("")
    out = tmp_path / "out"
    err = _one_line_error(["build", "distant", "--corpus", str(corpus), "--out", str(out)], capsys)
    assert "no pairs to write" in err and not out.exists()


def test_build_distant_truncated_gz_and_bad_utf8_name_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.dumps({"id": "d", "text": "A b. However, c d. E f. G h."}) + "\n"
    whole = gzip.compress((doc * 200).encode())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    out = str(tmp_path / "out")
    err = _one_line_error(["build", "distant", "--corpus", str(cut), "--out", out], capsys)
    assert err.startswith(f"nlieval: error: {cut}: cannot read") and "truncated" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(doc.encode() + b'{"text": "caf\xe9"}\n')
    err = _one_line_error(["build", "distant", "--corpus", str(bad), "--out", out], capsys)
    assert f"{bad}:2: not UTF-8 text" in err


def test_build_distant_accepts_a_byte_order_mark(tmp_path: Path) -> None:
    text = "Models grow. However, data do not. A b. C d. E f."
    jsonl, txt = tmp_path / "bom.jsonl", tmp_path / "bom.txt"
    jsonl.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "d", "text": text}).encode() + b"\n")
    txt.write_bytes(b"\xef\xbb\xbf" + text.encode())
    docs = list(distant.read_corpus([jsonl, txt]))
    assert [d.sentences[0] for d in docs] == ["Models grow.", "Models grow."]


def test_long_paragraph_is_split_in_windows_like_short_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Sentences with abbreviations and numbers that pysbd must not split at; windows of a
    # few sentences must give back exactly the sentences that were joined.
    kinds = [
        "We used e.g. BERT in Fig. {n}.",
        "However, the gain of {n}.5 points vanished.",
        "Smith et al. report the same in Sec. {n}.",
        "Thus, it holds for Dr. Jones too.",
    ]
    sentences = [kinds[n % 4].format(n=n) for n in range(200)]
    monkeypatch.setattr(distant, "WINDOW", 120)
    assert distant.split_sentences(" ".join(sentences)) == sentences


# --------------------------------------------------------------------------- contamination


@pytest.mark.parametrize("workers", [1, 2])
def test_contamination_truncated_gz_names_the_file(tmp_path: Path, workers: int) -> None:
    whole = gzip.compress(b"the cat sat on the mat\n" * 5000)
    cut = tmp_path / "corpus.txt.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    (tmp_path / "ok.txt").write_text("the cat sat on the mat\n")
    index, _ = build_index(["the cat sat on the mat"], n=3)
    with pytest.raises(DataError) as err:
        scan_files([cut, tmp_path / "ok.txt"], index, workers=workers)
    assert str(err.value).startswith(f"{cut}: cannot read") and "truncated" in str(err.value)


def test_data_file_not_utf8_names_the_line(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_bytes(b'{"premise": "a", "hypothesis": "b"}\n{"premise": "caf\xe9"}\n')
    with pytest.raises(DataError, match=rf"^{data}:2: not UTF-8 text"):
        read_items(data)


def test_batch_size_zero_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--task", "smoke", "--batch-size", "0", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "--batch-size/--batch_size: expected 'auto' or a count of 1 or more, got '0'" in err


def test_negative_shot_count_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--task", "smoke", "--shots", "0,-1", "--out", str(tmp_path / "o")])
    assert "shot counts are 0 or more, got '0,-1'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- train


def _train_task(tmp_path: Path, labels: list[str]) -> str:
    rows = [
        {
            "premise": f"A man walks {i}.",
            "hypothesis": "He moves.",
            "label": labels[i % len(labels)],
        }
        for i in range(20)
    ]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    yaml = tmp_path / "d.yaml"
    yaml.write_text("path: d.jsonl\npool: d.jsonl\nlabels: [entailment, neutral, contradiction]\n")
    return str(yaml)


def _model_folder(tmp_path: Path, arch: str) -> str:
    folder = tmp_path / arch
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": [arch]}))
    return str(folder)


def test_train_refuses_a_decoder_only_model_and_warns_of_one_class_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from nlieval.sci.train import TrainConfig, TrainError, load_data, train

    task = _train_task(tmp_path, ["entailment", "neutral"])
    llama = _model_folder(tmp_path, "LlamaForCausalLM")
    cfg = TrainConfig(llama, task, skip_test=True, out=str(tmp_path / "o"))
    with pytest.raises(TrainError, match="decoder-only language model .LlamaForCausalLM."):
        train(cfg, progress=False)
    one = _train_task(tmp_path, ["entailment"])
    bert = _model_folder(tmp_path, "BertModel")
    assert not (tmp_path / "o").exists()  # refused before anything was written
    cfg = TrainConfig(bert, one, skip_test=True, out=str(tmp_path / "o"))
    with caplog.at_level(logging.WARNING):
        load_data(cfg)
    assert "every item is labelled 'entailment'; the classifier can only learn" in caplog.text
