"""``chaosnli-import`` of prediction files that give one item twice under one model, task
and seed: refused with one line naming both files before anything is written, whether the
two come in one invocation or the folder holds the first already; files that only look
alike (another seed, other items, the same file again) are taken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.analyses.imports import ImportConfig, import_predictions
from nlieval.cli import main
from nlieval.ground import FolderError
from nlieval.runs import RECORDS, RunFolder

COUNTS = {"a1": [80, 15, 5], "a2": [10, 50, 40], "a3": [0, 0, 100]}


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    rows = [
        {
            "uid": uid,
            "label_count": c,
            "majority_label": "enc"[c.index(max(c))],
            "old_label": "enc"[c.index(max(c))],
            "entropy": 0.0,
            "example": {"uid": uid, "premise": "P.", "hypothesis": "H."},
        }
        for uid, c in COUNTS.items()
    ]
    folder = tmp_path / "data" / "chaosnli"
    folder.mkdir(parents=True)
    (folder / "chaosNLI_snli.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "data"


def _file(path: Path, ids: list[str], probs: list[float]) -> str:
    path.write_text("".join(json.dumps({"id": i, "probs": probs}) + "\n" for i in ids))
    return str(path)


def _config(data: Path, *files: str, seed: int | None = None) -> ImportConfig:
    return ImportConfig(files, task="chaosnli_snli", model="bert", seed=seed, data_dir=str(data))


def test_two_files_for_one_model_seed_and_items_are_refused_before_writing(
    data: Path, tmp_path: Path
) -> None:
    a = _file(tmp_path / "a.jsonl", ["a1", "a2", "a3"], [0.6, 0.3, 0.1])
    b = _file(tmp_path / "b.jsonl", ["a3", "a2"], [0.1, 0.3, 0.6])
    with pytest.raises(ValueError) as info:
        import_predictions(_config(data, a, b), tmp_path / "run")
    message = str(info.value)
    assert message.startswith(f"{b}: 2 prediction(s) for items {a} also gives")
    assert "'bert', chaosnli_snli, seed 0; first: id 'a3'" in message
    assert not (tmp_path / "run").exists()


def test_the_same_file_twice_is_refused(data: Path, tmp_path: Path) -> None:
    a = _file(tmp_path / "a.jsonl", ["a1"], [0.6, 0.3, 0.1])
    (tmp_path / "sub").mkdir()
    again = str(tmp_path / "sub" / ".." / "a.jsonl")
    for files in ((a, a), (a, again)):
        with pytest.raises(ValueError, match=f"^{files[1]}: given twice \\(as {a} too\\)"):
            import_predictions(_config(data, *files), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_other_seeds_or_other_items_are_taken(data: Path, tmp_path: Path) -> None:
    a = _file(tmp_path / "a.jsonl", ["a1", "a2"], [0.6, 0.3, 0.1])
    b = _file(tmp_path / "b.jsonl", ["a3"], [0.1, 0.3, 0.6])  # the rest of a split file
    import_predictions(_config(data, a, b), tmp_path / "run")
    assert sorted(r.item_id for r in RunFolder(tmp_path / "run").records()) == ["a1", "a2", "a3"]
    # Another seed of the same classifier, into the same folder: its own records.
    import_predictions(_config(data, a, seed=1), tmp_path / "run")
    seeds = sorted((r.seed, r.item_id) for r in RunFolder(tmp_path / "run").records())
    assert seeds == [(0, "a1"), (0, "a2"), (0, "a3"), (1, "a1"), (1, "a2")]


def test_a_later_file_with_other_predictions_for_saved_items_is_refused(
    data: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    a = _file(tmp_path / "a.jsonl", ["a1", "a2"], [0.6, 0.3, 0.1])
    import_predictions(_config(data, a), run)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    b = _file(tmp_path / "b.jsonl", ["a2", "a3"], [0.1, 0.3, 0.6])
    with pytest.raises(FolderError) as info:
        import_predictions(_config(data, b), run)
    message = str(info.value)
    assert message.startswith(f"{b}: the run folder already holds another prediction for item 'a2'")
    assert f"imported from {a}:2" in message
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # config.json too
    # The same file again (a resume) is no clash, and --overwrite starts again.
    import_predictions(_config(data, a), run)
    import_predictions(_config(data, b), run, overwrite=True)
    assert [(r.item_id, r.probs[0]) for r in RunFolder(run).records()] == [
        ("a2", 0.1),
        ("a3", 0.1),
    ]


def test_the_cli_says_it_in_one_line(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _file(tmp_path / "a.jsonl", ["a1"], [0.6, 0.3, 0.1])
    b = _file(tmp_path / "b.jsonl", ["a1"], [0.2, 0.3, 0.5])
    argv = ["chaosnli-import", a, b, "--task", "chaosnli_snli", "--model", "bert"]
    assert main([*argv, "--data-dir", str(data), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"nlieval: error: {b}: ") and a in err[0]
    assert not (tmp_path / "run" / RECORDS).exists()


def test_chaosnli_scores_below_a_file_are_one_line(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_predictions(
        _config(data, _file(tmp_path / "a.jsonl", ["a1"], [1, 0, 0])), tmp_path / "r"
    )
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    assert main(["chaosnli", str(tmp_path / "r"), "--out", str(notes / "scores")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"nlieval: error: {notes / 'scores'}: cannot make this folder: {notes} is a file"
    ]
