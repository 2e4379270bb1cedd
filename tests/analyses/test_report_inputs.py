"""Files and patterns a report command is given (``figure dynamics --positions`` and
``--pattern``, ``breakdown --by``, a run folder's JSON files): a FIFO, JSON 100,000
levels deep, a NaN position, a pattern that is no regular expression, a field holding a
JSON object. Each is one ``nlieval: error:`` line naming the file or flag; nothing is
written and the run folder's records are left as they were."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.runs import RunError, RunFolder
from nlieval.types import Record
from tests.helpers.hash_lm import HashLM

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bounds") / "ckpts"
    cfg = RunConfig("org/pythia", ("smoke",), limit=6, checkpoints=("step1000", "step2000"))
    run(cfg, folder, model=stand_in(cfg, lambda ck: HashLM(str(ck))), progress=False)
    return folder


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("nlieval: error: ")
    return err


def _dynamics(ckpts: Path, out: Path, *flags: str) -> list[str]:
    return ["figure", "dynamics", str(ckpts), "--out", str(out), *flags]


def test_positions_fifo_deep_nan_and_wrong_shapes_are_one_line(
    ckpts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = (ckpts / "records.jsonl").read_bytes()  # by hand: bytes
    png = tmp_path / "d.png"
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # no writer: an open for reading that blocks would wait forever
    err = _error(capsys, _dynamics(ckpts, png, "--positions", str(fifo)))
    assert f"{fifo}: not a regular file (a FIFO)" in err
    bad = {
        "deep.json": (DEEP, "nested too deeply"),
        "nan.json": ('{"step1000": 1, "step2000": NaN}', "field 'step2000': NaN is not a finite"),
        "inf.json": ('{"step1000": -Infinity, "step2000": 2}', "-Infinity is not a finite"),
        "big.json": ('{"step1000": 1' + "0" * 400 + ', "step2000": 2}', "not a finite number"),
        "str.json": ('{"step1000": "1", "step2000": 2}', "field 'step1000': expected a number"),
        "list.json": ("[1, 2]", "expected a JSON object of checkpoint -> position, found list"),
    }
    for name, (text, message) in bad.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        err = _error(capsys, _dynamics(ckpts, png, "--positions", str(path)))
        assert str(path) in err and message in err, (name, err)
    assert not png.exists()
    assert (ckpts / "records.jsonl").read_bytes() == records
    # A table of finite numbers draws the figure.
    good = tmp_path / "good.json"
    good.write_text('{"step1000": 1000, "step2000": 2000}', encoding="utf-8")
    assert main(_dynamics(ckpts, png, "--positions", str(good))) == 0
    assert png.is_file()


def test_a_pattern_that_is_no_regular_expression_is_one_line(
    ckpts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "d.png"
    err = _error(capsys, _dynamics(ckpts, png, "--pattern", "("))
    assert "the pattern '(' is not a regular expression: missing ), unterminated subpattern" in err
    err = _error(capsys, _dynamics(ckpts, png, "--pattern", "(" * 5000 + ")" * 5000))
    assert "nested too deeply" in err
    assert not png.exists()


def _record(item: str, genre: Any) -> Record:
    labels = ("entailment", "neutral", "contradiction")
    return Record("t", item, "m", 0, 0, labels, (-0.1, -2.0, -3.0), (0.8, 0.1, 0.1),
                  "entailment", "entailment", meta={"genre": genre})  # fmt: skip


def test_breakdown_by_a_field_holding_an_object_names_record_and_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad, lst = tmp_path / "good", tmp_path / "bad", tmp_path / "lst"
    for folder in (good, bad, lst):
        folder.mkdir()
    RunFolder(good).append([_record("1", "fiction")])
    RunFolder(bad).append([_record("1", "fiction"), _record("2", {"name": "fiction"})])
    records = (bad / "records.jsonl").read_bytes()  # by hand: bytes
    err = _error(capsys, ["breakdown", str(good), str(bad), "--by", "genre"])
    assert f"{bad / 'records.jsonl'}: field 'genre': record of item '2'" in err
    assert "holds an object, not a value to group by" in err
    assert (bad / "records.jsonl").read_bytes() == records
    RunFolder(lst).append([_record("3", ["a", "b"])])
    err = _error(capsys, ["breakdown", str(lst), "--by", "genre"])
    assert "holds a list" in err


def test_a_run_folder_json_file_nested_deep_is_one_line(
    ckpts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    for name in ("config.json", "records.jsonl"):
        (folder / name).write_bytes((ckpts / name).read_bytes())
    (folder / "results.json").write_text(DEEP, encoding="utf-8")
    err = _error(capsys, ["report", str(folder)])
    assert f"{folder / 'results.json'}: invalid JSON: nested too deeply" in err
    assert (folder / "records.jsonl").read_bytes() == (ckpts / "records.jsonl").read_bytes()


def test_a_4_gb_provenance_without_newline_is_one_line(ckpts: Path, tmp_path: Path) -> None:
    # Read when results are written again (finalize): streamed, each line bounded.
    folder = tmp_path / "prov"
    folder.mkdir()
    for name in ("config.json", "records.jsonl", "results.json"):
        (folder / name).write_bytes((ckpts / name).read_bytes())
    with (folder / "provenance.jsonl").open("wb") as f:
        f.truncate(4 << 30)  # sparse: zero bytes, no line break, no disk used
    with pytest.raises(RunError) as got:
        RunFolder(folder).read_provenance()
    message = str(got.value)
    assert "\n" not in message
    assert f"{folder / 'provenance.jsonl'}:1: a line longer than 67,108,864 bytes" in message
    for name in ("records.jsonl", "results.json"):
        assert (folder / name).read_bytes() == (ckpts / name).read_bytes()
