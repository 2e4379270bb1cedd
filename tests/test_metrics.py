"""The metric table refuses records whose log-likelihoods are not finite numbers, rather
than averaging over the others (issue 34: ``grid --metrics gold_nll`` with 2 of 20
records NaN printed the mean of 18 for n = 20)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.metrics import METRICS, NonFiniteRecord, point_metrics
from nlieval.types import Record
from tests.helpers.hash_lm import HashLM


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nf") / "run"
    cfg = RunConfig("org/m", ("smoke",), shots=(0,), limit=20)
    run(cfg, out, model=stand_in(cfg, lambda ck: HashLM()), progress=False)
    return out


def _copy_with(folder: Path, dest: Path, values: dict[int, str]) -> Path:
    """``folder`` copied to ``dest`` with the first log-likelihood of the records at the
    given lines written as the JSON token given (``NaN``, ``-Infinity``)."""
    dest.mkdir()
    for f in folder.iterdir():
        if f.is_file() and f.name != "records.jsonl":
            (dest / f.name).write_bytes(f.read_bytes())
    lines = (folder / "records.jsonl").read_text().splitlines(keepends=True)
    for n, token in values.items():
        row = json.loads(lines[n])
        row["loglik"][0] = "@"
        lines[n] = json.dumps(row).replace('"@"', token) + "\n"
    (dest / "records.jsonl").write_text("".join(lines))
    return dest


def _grid_value(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["cells"]


def test_grid_of_finite_records_is_the_hand_mean(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # By hand: independent (the expected mean, read apart from the reader `grid` uses).
    rows = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    assert len(rows) == 20
    by_hand = sum(-r["loglik"][r["labels"].index(r["gold"])] for r in rows) / 20
    argv = ["grid", str(folder), "--metrics", "gold_nll", "--format", "json"]
    (cell,) = [c for c in _grid_value(argv, capsys) if c["row"] == ["org/m"]]
    assert math.isclose(cell["mean"], by_hand, rel_tol=1e-9)


@pytest.mark.parametrize("command", [["grid", "--metrics", "gold_nll"], ["report"]])
def test_two_nan_records_of_twenty_are_one_line_not_a_mean_of_eighteen(
    folder: Path, tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _copy_with(folder, tmp_path / "bad", {4: "NaN", 11: "-Infinity"})
    before = (bad / "records.jsonl").read_bytes()  # by hand: bytes
    assert main([command[0], str(bad), *command[1:]]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "gold NLL" not in captured.out
    (line,) = [ln for ln in captured.err.splitlines() if ln.strip()]
    item = json.loads(before.decode().splitlines()[4].replace("NaN", "0"))["item_id"]
    assert line.startswith(f"nlieval: error: the record of item {item!r} (model org/m")
    assert "holds a log-likelihood of nan" in line
    assert (bad / "records.jsonl").read_bytes() == before  # reports write no record


def test_the_metric_table_refuses_instead_of_dropping() -> None:
    a = Record("t", "1", "m", 0, 0, ("a", "b"), (-0.5, -1.0), (0.62, 0.38), "a", "b")
    b = Record("t", "2", "m", 0, 0, ("a", "b"), (math.nan, -2.0), (0.5, 0.5), "a", "a")
    assert METRICS["gold_nll"].of([a], a.labels) == 1.0
    for records in ([a, b], [b]):
        with pytest.raises(NonFiniteRecord, match="item '2'"):
            METRICS["gold_nll"].of(records, a.labels)
        with pytest.raises(NonFiniteRecord, match="item '2'"):
            point_metrics(records)
    c = Record("t", "3", "m", 0, 0, ("a", "b"), (-1.0, math.inf), (0.5, 0.5), "b", None)
    with pytest.raises(NonFiniteRecord, match=r"item '3' .* of inf"):
        point_metrics([c])  # no gold label: its prediction is counted, so refused too


def test_percent_scales_the_proportions_only() -> None:
    # Shares of items (and means of per-class shares) are proportions; a loss or a
    # divergence is not: --percent leaves an NLL of 2.08 at 2.08 (issue 31).
    from nlieval.metrics import METRICS

    scaled = {name for name, m in METRICS.items() if m.scale(True) == 100.0}
    assert scaled == {"accuracy", "macro_f1", "acc_original", "acc_majority"}
    assert all(m.scale(False) == 1.0 for m in METRICS.values())
    assert 2.08 * METRICS["gold_nll"].scale(True) == 2.08
