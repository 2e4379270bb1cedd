"""The exemplar rules of ``nlieval instruct``: per class (today's), per source, fixed ids.

The pools are built by hand so that what a rule must take follows from the rule's
statement alone (a class whose only item of a source is forced, an id list)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import stand_in
from nlieval.cli import instruct as cli_instruct
from nlieval.cli import main
from nlieval.sci.instruct import InstructConfig, run_instruct, select_exemplars
from nlieval.sci.instruct_exemplars import ExemplarRule
from nlieval.types import SCI4, Item, Label
from tests.helpers.chats import ConstantChat
from tests.helpers.records import saved_records, saved_rows

C, R, E, N = SCI4


def _item(id_: str, label: Label, source: str | None) -> Item:
    meta = {} if source is None else {"src": source}
    return Item(id_, f"P {id_}.", f"H {id_}.", label, meta=meta)


def _forced_pool() -> list[Item]:
    """contrasting and entailment all of source a, reasoning all of b, neutral three of a
    and n3 the only item of source c."""
    pool = [_item(f"c{n}", C, "a") for n in range(4)]
    pool += [_item(f"r{n}", R, "b") for n in range(4)]
    pool += [_item(f"e{n}", E, "a") for n in range(4)]
    pool += [_item(f"n{n}", N, "a") for n in range(3)] + [_item("n3", N, "c")]
    return pool


#: select_exemplars(_forced_pool(), k, run, 5) as commit 2362426 drew them.
BEFORE_RULES: dict[tuple[int, int], tuple[str, ...]] = {
    (4, 0): ("n2", "e3", "c1", "r1"),
    (4, 1): ("n2", "r1", "e3", "c1"),
    (4, 2): ("c1", "n2", "e3", "r1"),
    (8, 0): ("c1", "r1", "e3", "c0", "r0", "n2", "n3", "e2"),
    (8, 1): ("r0", "n2", "e2", "e3", "c0", "r1", "n3", "c1"),
    (8, 2): ("c0", "r0", "e3", "n2", "r1", "n3", "c1", "e2"),
    (12, 0): ("r0", "e1", "n3", "r2", "c3", "c1", "n0", "e2", "n2", "r1", "c0", "e3"),
    (12, 1): ("e2", "e3", "c3", "e1", "n3", "n0", "c1", "r2", "r0", "c0", "n2", "r1"),
    (12, 2): ("r0", "n3", "c0", "e2", "e1", "n0", "n2", "c3", "e3", "r2", "r1", "c1"),
}


def test_per_class_is_the_default_and_todays_draw() -> None:
    pool = _forced_pool()
    rule = InstructConfig("m").exemplar_rule
    assert rule == ExemplarRule() and rule.name == "per class"
    for k in (4, 8, 12):
        for run in range(3):
            shots = rule.select(pool, k, run, seed=5)
            assert shots == select_exemplars(pool, k, run, 5)
            # The draw of the code before the rules existed (commit 2362426), so that
            # old folders' exemplars are drawn again as they were.
            assert tuple(it.id for it in shots) == BEFORE_RULES[(k, run)]
            # k / 4 of each class, as the methods say.
            assert Counter(it.label for it in shots) == {lab: k // 4 for lab in SCI4}


def test_per_source_takes_the_only_item_of_a_source() -> None:
    # Sources sorted: a, b, c. a goes to contrasting (it has a), b to reasoning (it has
    # b), c to entailment first, which has none, so to neutral: n3 is always taken.
    pool = _forced_pool()
    rule = ExemplarRule(sources="src")
    for seed in range(3):
        for run in range(4):
            shots = rule.select(pool, 4, run, seed)
            assert Counter(it.label for it in shots) == {lab: 1 for lab in SCI4}
            assert [it.id for it in shots if it.label is N] == ["n3"]
            assert {it.meta["src"] for it in shots} == {"a", "b", "c"}
            assert shots == rule.select(pool, 4, run, seed)  # deterministic
    # The per-class draw leaves n3 out in some run: the rule is what takes it.
    assert any("n3" not in {it.id for it in select_exemplars(pool, 4, run)} for run in range(4))


def test_per_source_keeps_places_for_a_source_still_owed() -> None:
    # k = 8: two of each class. Sources y, z: y to contrasting, z to reasoning, whose
    # only z item is r5; the other reasoning place is any of r0-r4.
    pool = [_item(f"{lab.value[0]}{n}", lab, "y") for lab in SCI4 for n in range(5)]
    pool.append(_item("r5", R, "z"))
    for run in range(3):
        shots = ExemplarRule(sources="src").select(pool, 8, run)
        reasoning = sorted(it.id for it in shots if it.label is R)
        assert len(reasoning) == 2 and "r5" in reasoning
        assert Counter(it.label for it in shots) == {lab: 2 for lab in SCI4}


def test_per_source_with_one_source_is_the_per_class_draw() -> None:
    pool = [_item(f"{lab.value[0]}{n}", lab, "only") for lab in SCI4 for n in range(6)]
    for k in (4, 8):
        for run in range(3):
            assert ExemplarRule(sources="src").select(pool, k, run) == select_exemplars(
                pool, k, run
            )


#: ExemplarRule(sources="src").select(pool, k, run, seed) as the greedy rule of commit
#: f4e1300 drew them (pools it served), for _forced_pool() (seed 5) and _five_sources()
#: (seed 1): old per-source folders resume with their exemplars.
PER_SOURCE_BEFORE: dict[tuple[str, int, int], tuple[str, ...]] = {
    ("forced", 4, 0): ("n3", "e3", "c1", "r1"),
    ("forced", 4, 1): ("n3", "r1", "e3", "c1"),
    ("forced", 4, 2): ("c1", "n3", "e3", "r1"),
    ("forced", 8, 0): ("c1", "r1", "e3", "c0", "r0", "n2", "n3", "e2"),
    ("forced", 8, 1): ("r0", "n2", "e2", "e3", "c0", "r1", "n3", "c1"),
    ("forced", 8, 2): ("c0", "r0", "e3", "n2", "r1", "n3", "c1", "e2"),
    ("forced", 12, 0): ("r0", "e1", "n3", "r2", "c3", "c1", "n0", "e2", "n2", "r1", "c0", "e3"),
    ("forced", 12, 1): ("e2", "e3", "c3", "e1", "n3", "n0", "c1", "r2", "r0", "c0", "n2", "r1"),
    ("forced", 12, 2): ("r0", "n3", "c0", "e2", "e1", "n0", "n2", "c3", "e3", "r2", "r1", "c1"),
    ("five", 8, 0): ("e1", "n0", "n2", "r1", "r0", "c2", "c0", "e0"),
    ("five", 8, 1): ("r1", "c0", "e1", "n2", "e0", "c2", "n0", "r0"),
    ("five", 8, 2): ("c2", "n0", "r1", "n2", "c0", "e1", "e0", "r0"),
    ("five", 12, 0): ("c0", "r1", "e3", "e1", "e0", "c2", "c1", "n1", "n2", "r0", "r2", "n0"),
    ("five", 12, 1): ("r2", "c0", "n2", "r1", "e3", "e1", "c2", "n1", "n0", "c1", "r0", "e0"),
    ("five", 12, 2): ("c2", "e1", "e0", "r1", "n2", "r2", "n1", "e3", "c0", "r0", "c1", "n0"),
}


def _five_sources() -> list[Item]:
    """Five sources spread unevenly: the n-th item of the i-th class (SCI4 order) is of
    source "abcde"[(2n + i) mod 5]."""
    return [
        _item(f"{lab.value[0]}{n}", lab, "abcde"[(2 * n + i) % 5])
        for i, lab in enumerate(SCI4)
        for n in range(4)
    ]


def test_per_source_draws_what_the_greedy_rule_drew_where_it_served() -> None:
    rule = ExemplarRule(sources="src")
    pools = {"forced": (_forced_pool(), 5), "five": (_five_sources(), 1)}
    for (name, k, run), ids in PER_SOURCE_BEFORE.items():
        pool, seed = pools[name]
        assert tuple(it.id for it in rule.select(pool, k, run, seed)) == ids


def test_per_source_serves_a_pool_the_greedy_rule_refused() -> None:
    # Sources a (in every class) and q (only c9, contrasting); k = 4, one place per class.
    # Greedily a took contrasting (the first class in its turn) and q had no place left:
    # refused. Contrasting must hold q, so a goes to another class; each other class has
    # one item: the four are forced.
    pool = [_item("c0", C, "a"), _item("c9", C, "q")]
    pool += [_item("r0", R, "a"), _item("e0", E, "a"), _item("n0", N, "a")]
    rule = ExemplarRule(sources="src")
    for run in range(3):
        assert sorted(it.id for it in rule.select(pool, 4, run)) == ["c9", "e0", "n0", "r0"]
    # With two a items per other class, the draw among them is free, c9 still forced.
    pool += [_item("r1", R, "a"), _item("e1", E, "a"), _item("n1", N, "a")]
    for run in range(3):
        shots = rule.select(pool, 4, run)
        assert [it.id for it in shots if it.label is C] == ["c9"]
        assert Counter(it.label for it in shots) == {lab: 1 for lab in SCI4}


def test_per_source_refusals() -> None:
    # q and s are only in contrasting, which has one place at k = 4: no assignment holds both.
    pool = [_item(f"{lab.value[0]}{n}", lab, "a") for lab in SCI4 for n in range(2)]
    pool += [_item("c8", C, "q"), _item("c9", C, "s")]
    with pytest.raises(
        ValueError,
        match=r"^k=4: at most 2 of the 3 sources in field 'src' can each have a place \(1 per "
        r"class\) in a class with an item of it \(q: contrasting; s: contrasting\)$",
    ):
        ExemplarRule(sources="src").select(pool, 4, 0)
    five = [_item(f"x{n}", SCI4[n % 4], "abcde"[n]) for n in range(5)]
    with pytest.raises(ValueError, match="5 sources in field 'src' .* need at least 5"):
        ExemplarRule(sources="src").select(five * 2, 4, 0)
    with pytest.raises(ValueError, match="item e1 has no field 'src'"):
        ExemplarRule(sources="src").select([*pool[:4], _item("e1", E, None)], 4, 0)


def test_fixed_ids_are_those_in_that_order() -> None:
    pool = _forced_pool()
    rule = ExemplarRule(ids=("n3", "c0", "e2", "e1", "r3"))
    assert [it.id for it in rule.select(pool, 5, run=2)] == ["n3", "c0", "e2", "e1", "r3"]
    assert [it.id for it in rule.select(pool, 2, run=0)] == ["n3", "c0"]
    assert rule.select(pool, 0, run=0) == []
    with pytest.raises(ValueError, match="no exemplar with the id zz in the pool"):
        ExemplarRule(ids=("c0", "zz")).select(pool, 1, 0)
    with pytest.raises(ValueError, match="--exemplar-ids names 5 exemplars"):
        rule.select(pool, 6, 0)
    with pytest.raises(ValueError, match="not with --exemplar-sources"):
        ExemplarRule(sources="src", ids=("c0",))


# --------------------------------------------------------------------------- runs


def _task(folder: Path) -> Path:
    """Eight test items; a pool of 16 from two sources, of which source y has one item."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {"id": f"t{n}", "s1": f"Test {n}.", "s2": f"Then {n}.", "label": SCI4[n % 4].value}
        for n in range(8)
    ]
    pool = [
        {"id": f"p{n}", "s1": f"Pool {n}.", "s2": f"So {n}.", "label": SCI4[n % 4].value,
         "src": "y" if n == 6 else "x"}
        for n in range(16)
    ]  # fmt: skip
    # A test item copied into the pool under another id: never an exemplar.
    pool.append({"id": "dup", "s1": "Test 1.", "s2": "Then 1.", "label": SCI4[1].value, "src": "x"})
    for name, part in (("test.jsonl", rows), ("pool.jsonl", pool)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in part))
    yaml = folder / "t.yaml"
    yaml.write_text(
        "name: sci\npath: test.jsonl\npool: pool.jsonl\n"
        "labels: [contrasting, reasoning, entailment, neutral]\n"
        "fields: {id: id, premise: s1, hypothesis: s2, label: label, meta: [src]}\n"
    )
    return yaml


def _run(cfg: InstructConfig, out: Path) -> list[dict[str, Any]]:
    run_instruct(
        cfg,
        out,
        stand_in(cfg, lambda _: ConstantChat("Neutral", name="neutral-bot")),
        progress=False,
    )
    return saved_rows(out)


def test_runs_per_source_and_fixed_ids(tmp_path: Path) -> None:
    task = str(_task(tmp_path / "d"))
    base: dict[str, Any] = {"tasks": (task,), "split": None, "limit": 2}
    records = _run(
        InstructConfig("org/bot", shots=(4,), runs=(0, 1), exemplar_sources="src", **base),
        tmp_path / "src",
    )
    # p6 (entailment, n = 6) is the only item of source y: every run takes it.
    assert len(records) == 4 and all("p6" in r["shots"] for r in records)
    records = _run(
        InstructConfig("org/bot", shots=(0, 3), runs=(0, 1, 2), exemplar_ids=("p9", "p2", "p4"),
                       **base),
        tmp_path / "ids",
    )  # fmt: skip
    # Fixed exemplars: one run per k (the others would repeat it), the ids as named.
    assert sorted((r["k"], r["seed"], tuple(r["shots"])) for r in records) == [
        (0, 0, ()), (0, 0, ()), (3, 0, ("p9", "p2", "p4")), (3, 0, ("p9", "p2", "p4"))
    ]  # fmt: skip
    config = json.loads((tmp_path / "ids" / "config.json").read_text())
    assert config["exemplar_ids"] == ["p9", "p2", "p4"]


def test_an_old_folder_resumes_with_no_new_record(tmp_path: Path) -> None:
    task, out = str(_task(tmp_path / "d")), tmp_path / "old"
    cfg = InstructConfig("org/bot", (task,), shots=(0, 4), runs=(0, 1), split=None, limit=3)
    before = _run(cfg, out)
    # A config.json written before the rules existed has neither key.
    path = out / "config.json"
    saved = json.loads(path.read_text())
    for key in ("exemplar_sources", "exemplar_ids"):
        saved.pop(key)
    path.write_text(json.dumps(saved))
    assert _run(cfg, out) == before
    # Another rule is another run: refused, nothing lost.
    other = InstructConfig(
        "org/bot", (task,), shots=(0, 4), runs=(0, 1), split=None, limit=3, exemplar_sources="src"
    )
    with pytest.raises(Exception, match="exemplar_sources: None -> 'src'"):
        _run(other, out)
    assert len(saved_records(out)) == len(before)


def test_cli_ids_from_a_file_and_one_line_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        cli_instruct, "instruct_backend", lambda model: ConstantChat("Neutral", name="neutral-bot")
    )
    task = str(_task(tmp_path / "d"))
    ids = tmp_path / "ids.txt"
    ids.write_text("# chosen by hand\np5\n\np0\n")
    argv = ["instruct", "--model", "org/bot", "--task", task, "--split", "test", "--limit", "2"]
    out = tmp_path / "o"
    assert main([*argv, "--shots", "2", "--exemplar-ids", str(ids), "--out", str(out),
                 "--no-progress"]) == 0  # fmt: skip
    shots = {r.shots for r in saved_records(out)}
    assert shots == {("p5", "p0")}
    capsys.readouterr()
    for extra, says in (
        (["--shots", "1", "--exemplar-ids", "p1,p99"], "no exemplar with the id p99 in the pool"),
        (["--shots", "1", "--exemplar-ids", "dup"], "id dup is an item of the evaluated split"),
        (["--shots", "4", "--exemplar-sources", "genre"], "item p0 has no field 'genre'"),
        (["--shots", "3", "--exemplar-ids", "p1,p2"], "--exemplar-ids names 2 exemplars"),
    ):
        bad = tmp_path / "bad"
        assert main([*argv, *extra, "--out", str(bad), "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and len(err.splitlines()) == 1, err
        assert not (bad / "records.jsonl").exists()
    assert main([*argv, "--shots", "6", "--out", str(tmp_path / "six")]) == 2
    assert "multiples of 4" in capsys.readouterr().err


def test_per_source_from_an_exemplar_file(tmp_path: Path) -> None:
    # The sentence1/sentence2 file `build` writes, with a source per row: the only row of
    # source "distant" (a neutral one) is in every run's four.
    task = str(_task(tmp_path / "d"))
    rows = [
        {"id": f"x{n}", "sentence1": f"A {n}.", "sentence2": f"B {n}.",
         "label": SCI4[n % 4].value, "source": "distant" if n == 7 else "scinli"}
        for n in range(12)
    ]  # fmt: skip
    file = tmp_path / "ex.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = InstructConfig(
        "org/bot", (task,), shots=(4,), runs=(0, 1, 2), split=None, limit=1,
        exemplars=str(file), exemplar_sources="source",
    )  # fmt: skip
    records = _run(cfg, tmp_path / "o")
    assert len(records) == 3 and all("x7" in r["shots"] for r in records)
    assert all(len(r["shots"]) == 4 for r in records)
