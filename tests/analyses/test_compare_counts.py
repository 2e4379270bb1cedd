"""The n's ``nlieval compare`` and ``nlieval breakdown`` print are the items they
compared or scored (issue 43, rule 2): per seed, the items both folders scored; over
seeds, those every seed of both scored; the items left out said with their count; a
breakdown cell's n per seed. Each counted from records.jsonl with plain json, on a run
whose second seed was cut short."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from tests.helpers.hash_lm import HashLM

CUT = ("smoke-01", "smoke-02", "smoke-03")


def _run(out: Path, model: str, limit: int, cut: bool) -> Path:
    cfg = RunConfig(model=model, tasks=("smoke",), shots=(1,), seeds=(0, 1), limit=limit)
    run(cfg, out, model=stand_in(cfg, lambda _: HashLM()), progress=False)
    if cut:
        path = out / "records.jsonl"
        recs = [json.loads(line) for line in path.read_text().splitlines()]
        kept = [r for r in recs if not (r["seed"] == 1 and r["item_id"] in CUT)]
        path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    return out


def _ids(folder: Path) -> dict[int, dict[str, str]]:
    """seed -> item id -> gold label, from the records file (by hand: independent)."""
    out: dict[int, dict[str, str]] = {}
    for line in (folder / "records.jsonl").read_text().splitlines():
        r = json.loads(line)
        out.setdefault(r["seed"], {})[r["item_id"]] = r["gold"]
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("compare")
    return _run(d / "a", "ma", 10, cut=True), _run(d / "b", "mb", 12, cut=False)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_compare_n_is_the_items_both_scored(
    folders: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = (_ids(f) for f in folders)
    assert main(["compare", str(folders[0]), str(folders[1])]) == 0
    lines = capsys.readouterr().out.splitlines()
    per_seed = {
        int(c[2]): int(c[3])
        for c in (
            _cells(ln) for ln in lines if ln.startswith("| smoke | 1 |") and "seeds)" not in ln
        )
    }
    assert per_seed == {s: len(a[s].keys() & b[s].keys()) for s in (0, 1)}
    over = next(_cells(ln) for ln in lines if ln.startswith("| smoke | 1 |") and "seeds)" in ln)
    both = set.intersection(*(set(ids[s]) for ids in (a, b) for s in (0, 1)))
    assert int(over[2]) == len(both)
    for s in (0, 1):
        only_b = len(b[s].keys() - a[s].keys())
        said = [ln for ln in lines if ln.startswith(f"left out of smoke k=1 seed={s}:")]
        assert said == [said[0]] and f"{only_b} only in B" in said[0], lines
        assert "only in A" not in said[0]


def test_breakdown_n_is_each_seeds_items(
    folders: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a = _ids(folders[0])
    assert main(["breakdown", str(folders[0]), "--by", "gold"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for gold in ("entailment", "neutral", "contradiction"):
        counts = sorted({sum(g == gold for g in a[s].values()) for s in (0, 1)})
        want = str(counts[0]) if len(counts) == 1 else f"[{counts[0]}, {counts[1]}]"
        row = next(_cells(ln) for ln in lines if f"| {gold} |" in ln)
        assert row[4] == want, row
