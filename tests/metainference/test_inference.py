"""Inferred test items: every pattern on a handmade dataset, the task files they are
written to, the consistency report, the commands, and shared premises of SNLI dev."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval import data
from nlieval.ground import render
from nlieval.metainference import inferred as inference
from nlieval.metainference.inferred import (
    build,
    chain,
    consistency_report,
    format_report,
    read_task,
    reversal,
    shared_premise,
    write_task,
)
from nlieval.types import NLI3, Item, Label, Record

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
P1 = "A man sleeps on a couch."
P2 = "Two dogs run in the snow."

ITEMS = [
    Item("e1", P1, "A person rests.", E),
    Item("n1", P1, "A man sleeps after work.", N),
    Item("c1", P1, "A man runs a marathon.", C),
    Item("e2", P2, "Animals are outside.", E),
    Item("c2", P2, "Two cats sleep indoors.", C),
    Item("u1", P2, "Dogs play.", None),  # unlabelled: never a source
]
GENERATED = [
    Item("g1", "A person rests.", "Someone is lying down.", E),  # premise = e1's hypothesis
    Item("g2", "A person rests.", "A person sprints.", C),
    Item("g3", "Nobody wrote this premise.", "Anything.", E),  # matches no hypothesis
]


def test_reversal() -> None:
    out = reversal(ITEMS)
    assert [it.id for it in out] == ["inf:reversal:" + x for x in ("e1", "n1", "c1", "e2", "c2")]
    first = out[0]
    assert (first.premise, first.hypothesis, first.label) == ("A person rests.", P1, None)
    assert first.meta == {
        "pattern": "reversal",
        "sources": ["e1"],
        "source_labels": ["entailment"],
        "input": "Eab",
        "target": "ba",
    }
    assert [it.meta["input"] for it in out] == ["Eab", "Nab", "Cab", "Eab", "Cab"]


def test_shared_premise_both_orders() -> None:
    out = shared_premise(ITEMS)
    # Three hypotheses of P1 give 3 * 2 ordered pairs, two of P2 give 2; u1 has no label.
    assert len(out) == 8
    by_id = {it.id: it for it in out}
    bc = by_id["inf:shared-premise:e1+c1"]
    cb = by_id["inf:shared-premise:c1+e1"]
    assert (bc.premise, bc.hypothesis) == ("A person rests.", "A man runs a marathon.")
    assert (cb.premise, cb.hypothesis) == ("A man runs a marathon.", "A person rests.")
    assert bc.meta["input"] == "Eab & Cac" and cb.meta["input"] == "Cab & Eac"
    assert bc.meta["target"] == cb.meta["target"] == "bc"
    assert bc.meta["sources"] == ["e1", "c1"]
    assert bc.meta["source_labels"] == ["entailment", "contradiction"]
    assert all(it.premise != it.hypothesis for it in out)


def test_shared_premise_skips_repeated_hypotheses() -> None:
    twice = [Item("x", P1, "Same.", E), Item("y", P1, "Same.", N)]
    assert shared_premise(twice) == []


def test_chain_and_chain_reversal() -> None:
    out = chain(ITEMS, GENERATED)
    assert [it.id for it in out] == [
        "inf:chain:e1+g1",
        "inf:chain-reversal:e1+g1",
        "inf:chain:e1+g2",
        "inf:chain-reversal:e1+g2",
    ]
    ac, ca = out[2], out[3]
    assert (ac.premise, ac.hypothesis) == (P1, "A person sprints.")
    assert (ca.premise, ca.hypothesis) == ("A person sprints.", P1)
    assert ac.meta["input"] == ca.meta["input"] == "Eab & Cbc"
    assert (ac.meta["target"], ca.meta["target"]) == ("ac", "ca")
    assert ac.meta["sources"] == ["e1", "g2"]


def test_build_patterns_and_cap() -> None:
    everything = build(ITEMS, GENERATED)
    patterns = [it.meta["pattern"] for it in everything]
    assert (
        patterns
        == ["reversal"] * 5 + ["shared-premise"] * 8 + ["chain"] * 2 + ["chain-reversal"] * 2
    )
    only = build(ITEMS, GENERATED, patterns=["chain-reversal"])
    assert {it.meta["pattern"] for it in only} == {"chain-reversal"}
    capped = build(ITEMS, max_per_pattern=3, seed=1)
    assert [it.meta["pattern"] for it in capped] == ["reversal"] * 3 + ["shared-premise"] * 3
    assert capped == build(ITEMS, max_per_pattern=3, seed=1)  # seeded
    order = [it.id for it in everything]
    kept = [order.index(it.id) for it in capped]
    assert kept == sorted(kept)  # original order kept
    with pytest.raises(ValueError, match="unknown pattern"):
        build(ITEMS, patterns=["transitive"])


def test_write_and_read_task(tmp_path: Path) -> None:
    items = build(ITEMS, GENERATED)
    yaml_path = write_task(items, tmp_path / "inf")
    spec = data.get_task(str(yaml_path))
    assert spec.labels == NLI3 and spec.family == "nli3"
    back = read_task(tmp_path / "inf")
    assert [(it.id, it.premise, it.hypothesis, it.label) for it in back] == [
        (it.id, it.premise, it.hypothesis, None) for it in items
    ]
    assert [dict(it.meta) for it in back] == [dict(it.meta) for it in items]
    assert data.load_task(str(yaml_path)).label_counts() == {
        "entailment": 0,
        "neutral": 0,
        "contradiction": 0,
        "none": len(items),
    }
    with pytest.raises(ValueError, match="no inferred items"):
        write_task([], tmp_path / "empty")


# --------------------------------------------------------------------------- report


def _record(item_id: str, pred: str | None, gold: str | None = None, task: str = "t") -> Record:
    labels = tuple(lab.value for lab in NLI3)
    return Record(task, item_id, "m", 0, 0, labels, (0.0, 0.0, 0.0), (1 / 3,) * 3, pred, gold)


ITEMS_BY_ID = {it.id: it for it in ITEMS if it.label is not None}
REV = {it.meta["sources"][0]: it for it in reversal(ITEMS)}
PREDS = {"e1": "entailment", "e2": "contradiction", "n1": None, "c1": "contradiction"}
SOURCE_PREDS = {"e1": "entailment", "e2": "neutral", "n1": "neutral", "c1": "contradiction"}


def _report(with_sources: bool) -> dict[tuple[str, str], dict]:
    records = [_record(REV[src].id, pred) for src, pred in PREDS.items()]
    records.append(_record("not-an-inferred-item", "neutral"))  # ignored
    sources = [_record(s, p, gold=ITEMS_BY_ID[s].label.value) for s, p in SOURCE_PREDS.items()]
    rows = consistency_report(records, REV.values(), sources if with_sources else None)
    return {(r["input"], r["subset"]): r for r in rows}


def test_report_unfiltered_by_hand() -> None:
    rows = _report(with_sources=False)
    assert set(rows) == {("Eab", "all"), ("Nab", "all"), ("Cab", "all")}
    e = rows["Eab", "all"]
    # Reversed E items: rev(e1) predicted E, rev(e2) predicted C.
    assert (e["count"], e["pred_E"], e["pred_C"], e["pred_N"]) == (2, 50.0, 50.0, 0.0)
    # MC: E(a,b) leaves E(b,a) and C(b,a) possible, N_MC is never; nothing positive follows.
    # SC: nothing follows, everything is allowed. EI: the a-witness is a b & a world, so
    # C(b,a) = dia b & box(b -> ~a) fails; E and N allowed, the C prediction is not.
    assert e["inferred"] == {"MC": "~N", "SC": "-", "EI": "~C"}
    assert e["allowed"] == {"MC": ["E", "C"], "SC": ["E", "C", "N"], "EI": ["E", "N"]}
    assert e["consistent"] == {"MC": 100.0, "SC": 100.0, "EI": 50.0}
    assert e["third"] is None and e["pattern"] == "reversal"
    n = rows["Nab", "all"]
    # The one reversed N item has no prediction: counted, consistent with nothing; N_MC is
    # unsatisfiable, so MC has nothing to say (vacuous, consistency n/a).
    assert (n["count"], n["pred_E"], n["pred_N"], n["pred_C"]) == (1, 0.0, 0.0, 0.0)
    assert n["inferred"]["MC"] == "vacuous"
    assert n["consistent"] == {"MC": None, "SC": 0.0, "EI": 0.0}
    c = rows["Cab", "all"]
    # C(a,b) -> C(b,a) is valid under MC and SC, and answering E(b,a) there would deny
    # C(b,a): only C is left. Under EI only ~E(b,a) follows.
    assert c["inferred"] == {"MC": "C", "SC": "C", "EI": "~E"}
    assert c["consistent"] == {"MC": 100.0, "SC": 100.0, "EI": 100.0}


def test_report_filtered_by_hand() -> None:
    rows = _report(with_sources=True)
    assert len(rows) == 6
    # e2 was predicted neutral (wrong), so only rev(e1), predicted E, is left.
    e = rows["Eab", "filtered"]
    assert (e["count"], e["pred_E"]) == (1, 100.0)
    assert e["consistent"] == {"MC": 100.0, "SC": 100.0, "EI": 100.0}
    assert rows["Eab", "all"]["count"] == 2
    assert rows["Nab", "filtered"]["count"] == 1  # n1 was predicted right


def test_report_without_matching_source_records() -> None:
    records = [_record(REV["e1"].id, "entailment")]
    rows = consistency_report(records, REV.values(), source_records=[])
    filtered = next(r for r in rows if r["subset"] == "filtered")
    assert filtered["count"] == 0 and filtered["pred_E"] is None
    assert filtered["consistent"]["SC"] is None


def test_report_reads_answers_exclusively() -> None:
    # Issue 13: a model answering E for the reversal of C(a,b) denies C(b,a). Under SC
    # C(a,b) gives box(b -> ~a), so E(b,a) without C(b,a) is impossible: inconsistent
    # (the non-exclusive reading counted it consistent, since E(b,a) and C(b,a) both hold
    # when no accessible world has b). Under EI, ~E(b,a) follows as well.
    records = [_record(REV["c1"].id, "entailment"), _record(REV["c2"].id, "neutral")]
    (row,) = consistency_report(records, REV.values())
    assert (row["input"], row["target"], row["count"]) == ("Cab", "ba", 2)
    assert row["allowed"] == {"MC": ["C"], "SC": ["C"], "EI": ["C", "N"]}
    assert row["consistent"] == {"MC": 0.0, "SC": 0.0, "EI": 50.0}


def test_report_third_sentence_and_bad_meta() -> None:
    items = build(ITEMS, GENERATED)
    records = [_record(it.id, "contradiction") for it in items]
    rows = consistency_report(records, items)
    third = {r["pattern"]: r["third"] for r in rows}
    assert third == {
        "reversal": None,
        "shared-premise": "dataset hypothesis",
        "chain": "generated",
        "chain-reversal": "generated",
    }
    # E(a,b), C(b,c) -> ?(c,a): C under MC and SC, so answering C is consistent.
    chain_rev = next(
        r for r in rows if r["pattern"] == "chain-reversal" and r["input"] == "Eab & Cbc"
    )
    assert chain_rev["inferred"]["SC"] == "C" and chain_rev["consistent"]["SC"] == 100.0
    bad = Item("x", "p", "h", None, meta={**items[0].meta, "sources": None})
    with pytest.raises(ValueError, match="inferred item x: meta field 'sources'"):
        consistency_report([_record("x", "neutral")], [bad])


def test_format_report() -> None:
    rows = list(_report(with_sources=True).values())
    text = render(format_report(rows), "md")
    assert text.startswith("### m, k=0, seed=0")
    head = (
        "| input | target | third sentence | n | %E | %C | %N | MC | MC % | SC | SC % | EI | EI % |"
    )
    # One table of every item, then one of the filtered items, with the same columns.
    assert text.count(head) == 2
    unfiltered, filtered = text.split("Filtered (")
    assert "Unfiltered (" in unfiltered
    assert (
        "| Eab | ba | - | 2 | 50.0 | 50.0 | 0.0 | ~N | 100.0 | - | 100.0 | ~C | 50.0 |"
        in unfiltered
    )
    assert (
        "| Eab | ba | - | 1 | 100.0 | 0.0 | 0.0 | ~N | 100.0 | - | 100.0 | ~C | 100.0 |" in filtered
    )
    assert "| vacuous | n/a |" in text
    assert "No records" in render(format_report([]), "md")


# --------------------------------------------------------------------------- commands


def _cli(argv: list[str]) -> int:
    from nlieval.cli import main

    return main(argv)


def _jsonl_task(folder: Path, name: str, items: list[Item]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [
        {"id": it.id, "premise": it.premise, "hypothesis": it.hypothesis, "label": it.label.value}
        for it in items
        if it.label is not None
    ]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    yaml = folder / f"{name}.yaml"
    yaml.write_text(
        f"name: {name}\npath: {name}.jsonl\nfields: {{id: id}}\n"
        "labels: [entailment, neutral, contradiction]\n"
    )
    return yaml


def test_cli_build_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _jsonl_task(tmp_path, "src", ITEMS)
    gen = _jsonl_task(tmp_path, "gen", GENERATED)
    out = tmp_path / "inf"
    argv = ["infer", "build", "--task", str(src), "--generated", str(gen), "--out", str(out)]
    assert _cli(argv) == 0
    printed = capsys.readouterr().out
    assert "17 inferred items from 5 items" in printed
    assert "chain-reversal  2" in printed
    before = (out / "items.jsonl").read_bytes()
    # A second build into the same folder is refused: runs on the old items would no
    # longer match. --overwrite replaces them.
    assert _cli(argv) == 2
    assert "already holds inferred items" in capsys.readouterr().err
    assert (out / "items.jsonl").read_bytes() == before
    assert _cli([*argv, "--overwrite"]) == 0
    capsys.readouterr()
    items = read_task(out)
    run = tmp_path / "run"
    run.mkdir()
    records = [_record(it.id, "neutral", task="inferred") for it in items]
    (run / "records.jsonl").write_text("".join(r.to_json() + "\n" for r in records))
    source_run = tmp_path / "source-run"
    source_run.mkdir()
    srcs = [_record(it.id, "entailment", it.label.value) for it in ITEMS + GENERATED if it.label]
    (source_run / "records.jsonl").write_text("".join(r.to_json() + "\n" for r in srcs))
    argv = ["infer", "report", str(run), "--items", str(out), "--source-run", str(source_run)]
    assert _cli(argv + ["--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["pattern"] for r in rows} == set(inference.PATTERNS)
    assert sum(r["count"] for r in rows if r["subset"] == "all") == len(items)
    # The source run predicts E everywhere: right on e1, e2 and g1 only, so what is left
    # are the reversals of e1, e2 and the chains through e1 and g1 (no premise has two
    # E hypotheses).
    filtered = [r for r in rows if r["subset"] == "filtered" and r["count"]]
    assert {(r["pattern"], r["input"]) for r in filtered} == {
        ("reversal", "Eab"),
        ("chain", "Eab & Ebc"),
        ("chain-reversal", "Eab & Ebc"),
    }
    assert _cli(argv) == 0
    assert capsys.readouterr().out.startswith("### m, k=0, seed=0")
    # A source run of another task matches nothing: the filtered rows are empty, and the
    # command says how many source items it found.
    other = tmp_path / "other-run"
    other.mkdir()
    (other / "records.jsonl").write_text(_record("zz", "neutral", "neutral").to_json() + "\n")
    assert _cli([*argv[:-1], str(other)]) == 0
    captured = capsys.readouterr()
    assert "has records for 0 of the 7 source items" in captured.err  # 5 items, g1, g2
    assert "Filtered (" in captured.out
    # An items file whose provenance was emptied is one line naming the file and item.
    lines = (out / "items.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    lines[0] = json.dumps({**first, "sources": None})
    (out / "items.jsonl").write_text("\n".join(lines) + "\n")
    assert _cli(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert str(out) in err and first["id"] in err and "'sources'" in err


# --------------------------------------------------------------------------- real data


def test_snli_dev_shared_premises(data_dir: Path) -> None:
    ds = data.load_task("snli", data_dir)
    first = ds.items[:300]
    out = shared_premise(first)
    by_id = {it.id: it for it in first}
    assert len(out) > 300  # SNLI dev gives three or so hypotheses per premise
    for it in out:
        x, y = (by_id[s] for s in it.meta["sources"])
        assert x.premise == y.premise
        assert (it.premise, it.hypothesis) == (x.hypothesis, y.hypothesis)
        assert x.label is not None and y.label is not None
        letters = inference.LETTER[x.label], inference.LETTER[y.label]
        assert it.meta["input"] == "{}ab & {}ac".format(*letters)
    inputs = {it.meta["input"] for it in out}
    assert len(inputs) == 9  # every pair of labels occurs
    capped = build(first, patterns=["shared-premise"], max_per_pattern=50)
    assert len(capped) == 50
