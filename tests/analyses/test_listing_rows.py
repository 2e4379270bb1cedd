"""``nlieval items`` lists the rows it says it lists (issue 43, rule 2): the rows of the
listing are counted against the run folder's records read with plain json (a row per
task, k, seed and item), ``--max-rows`` is a number of rows, and rows it leaves out are a
warning naming both numbers; a limit a slice would misread is refused. ``--limit`` is
the first N items, as in every command: every row of each."""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path

import pytest

from nlieval.analyses import item_listing
from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main as cli_main
from tests.helpers.hash_lm import HashLM


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of 10 smoke items at k 0 and, at two seeds, k 1: 30 records."""
    out = tmp_path_factory.mktemp("listing") / "r"
    cfg = RunConfig(model="hash", tasks=("smoke",), shots=(0, 1), seeds=(0, 1), limit=10)
    run(cfg, out, model=stand_in(cfg, lambda _: HashLM()), progress=False)
    return out


def _record_keys(folder: Path) -> set[tuple[str, int, int, str]]:
    # By hand: independent (the expected rows, read apart from the reader listed).
    lines = (folder / "records.jsonl").read_text().splitlines()
    recs = [json.loads(line) for line in lines if line.strip()]
    return {(r["task"], r["k"], r["seed"], r["item_id"]) for r in recs}


def _listed(text: str) -> list[tuple[str, int, int, str]]:
    rows = csv.DictReader(io.StringIO(text))
    return [(r["task"], int(r["k"]), int(r["seed"]), r["id"]) for r in rows]


@pytest.mark.parametrize("limit", ["500", "exact"])
def test_the_listing_holds_every_record_it_was_given(
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    limit: str,
) -> None:
    keys = _record_keys(folder)
    assert len(keys) == 10 + 2 * 10
    argv = ["items", str(folder), "--format", "csv"]
    argv += ["--max-rows", str(len(keys)) if limit == "exact" else limit]
    with caplog.at_level(logging.WARNING):
        assert cli_main(argv) == 0
    listed = _listed(capsys.readouterr().out)
    assert len(listed) == len(set(listed)) == len(keys)
    assert set(listed) == keys
    assert not [r for r in caplog.records if "--max-rows" in r.getMessage()], caplog.text


@pytest.mark.parametrize("fmt", ["csv", "md"])
def test_rows_left_out_by_limit_are_said_with_both_numbers(
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    fmt: str,
) -> None:
    keys = _record_keys(folder)
    with caplog.at_level(logging.WARNING):
        assert cli_main(["items", str(folder), "--max-rows", "7", "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "csv":
        assert len(_listed(out)) == 7
    else:
        assert len([line for line in out.splitlines() if line.startswith("| smoke |")]) == 7
    said = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "--max-rows 7" in r.getMessage()
    ]
    assert said and str(len(keys)) in said[0], caplog.text


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused(limit: int) -> None:
    with pytest.raises(ValueError, match="--max-rows must be positive"):
        item_listing([], {}, max_rows=limit)
    with pytest.raises(ValueError, match="--limit must be positive"):
        item_listing([], {}, limit=limit)


def test_limit_is_the_first_items_with_every_row_of_each(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The folder: smoke's first 10 items at k 0 (seed 0) and k 1 (seeds 0, 1), 3 rows an
    # item. Expected by hand: --limit 4 lists the 4 items of the smallest ids (sort id),
    # each with its 3 rows, 12 rows in all, under the default --max-rows 20.
    ids = sorted({key[3] for key in _record_keys(folder)})[:4]
    assert cli_main(["items", str(folder), "--limit", "4", "--format", "csv"]) == 0
    listed = _listed(capsys.readouterr().out)
    assert sorted({row[3] for row in listed}) == ids
    assert len(listed) == 4 * 3 == len(set(listed))
