"""Contamination scores on a corpus with planted n-grams (exact, by hand), the parallel and
Ray runners against the serial one, and EPG on hand-built records."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from nlieval import contamination as cont
from nlieval.choice import RunConfig
from nlieval.cli import main as cli_main
from nlieval.ground import render
from nlieval.runs import RunFolder
from nlieval.types import Item, Record
from tests.helpers.figures import hlines_of, record_savefig, series_of

N = 4  # short n-grams keep the hand counts readable; DEFAULT_N has its own test

# item id -> (premise, hypothesis, choices), and the expected tokens covered / tokens.
ITEMS = {
    # the whole text, lower-cased and with punctuation, inside one corpus line
    "full": ("Alpha bravo charlie", "delta echo foxtrot.", ()),
    # 4-grams at 0 and 1 (overlapping: tokens 0-4) and at 6 (tokens 6-9); "lima" not
    "partial": ("golf hotel india juliet kilo", "lima mike november oscar papa", ()),
    # only 3-grams of it occur, never a 4-gram
    "none": ("quebec romeo sierra", "tango uniform", ()),
    # fewer than n tokens: scores 0 although the corpus holds it
    "short": ("victor whiskey", "xray", ()),
    # the only 4-grams in the corpus cross a line break: they do not count
    "line_break": ("yankee zulu amber", "basil cedar dune", ()),
    # in a .gz file
    "gzip": ("ember flint grove", "harbor inlet", ()),
    # in a jsonl text field
    "jsonl": ("jasper kelp lagoon", "meadow nectar", ()),
    # in a jsonl document across its inner line break (a jsonl document is one document)
    "jsonl_break": ("orchid pebble", "quartz reef", ()),
    # shares its first 4-gram with "full"
    "shared": ("bravo charlie delta", "echo zinc", ()),
    # alpha-NLI: the choices are part of the text
    "choices": ("sun", "moon", ("star planet", "comet")),
    # non-ASCII letters, upper case in the corpus
    "unicode": ("café über", "straße naïve ok", ()),
    # only in a jsonl field other than "text"
    "other_field": ("delta echo foxtrot", "golf hotel", ()),
}
EXPECTED = {
    "full": (6, 6),
    "partial": (9, 10),
    "none": (0, 5),
    "short": (0, 3),
    "line_break": (0, 6),
    "gzip": (4, 5),
    "jsonl": (5, 5),
    "jsonl_break": (4, 4),
    "shared": (4, 5),
    "choices": (4, 5),
    "unicode": (4, 5),
    "other_field": (0, 5),
}

PLAIN = (
    "xx ALPHA, bravo charlie delta echo foxtrot yy\n"
    "the golf hotel india juliet kilo went\n"
    "then mike november oscar papa!\n"
    "quebec romeo sierra and romeo sierra tango zz\n"
    "victor whiskey xray\n"
    "we saw yankee zulu amber\n"
    "basil cedar dune here\r\n"
    "moon star planet comet\n"
    "Le CAFÉ Über straße naïve!"  # no final line break
)
GZ = "noise ember flint grove harbor\nnoise\n"
JSONL = [
    json.dumps({"text": "jasper kelp lagoon meadow nectar", "id": 1}),
    json.dumps({"text": "orchid pebble\nquartz reef"}),
    json.dumps({"content": "delta echo foxtrot golf hotel"}),
    "not json at all",
    "",
    json.dumps({"text": 5}),
]


def _items() -> list[Item]:
    return [Item(i, p, h, None, choices=c) for i, (p, h, c) in ITEMS.items()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "plain.txt").write_bytes(PLAIN.encode())
    with gzip.open(root / "more.txt.gz", "wt", encoding="utf-8") as f:
        f.write(GZ)
    (root / "docs.jsonl").write_text("\n".join(JSONL) + "\n", encoding="utf-8")
    return root


def _by_id(rows: list[dict]) -> dict[str, tuple[int, int]]:
    return {r["item_id"]: (r["n_contaminated_tokens"], r["n_tokens"]) for r in rows}


def test_planted_scores_exact(corpus: Path) -> None:
    rows, result = cont.score_tasks({"t": _items()}, [corpus], n=N, workers=1)
    assert _by_id(rows) == EXPECTED
    for r in rows:
        hit, total = EXPECTED[r["item_id"]]
        assert r["score"] == hit / total and r["task"] == "t"
    # text lines: 9 + 2; jsonl documents with a text: 2; not JSON, no "text", text not a str
    assert (result.docs, result.bad_lines, result.shards) == (13, 3, 3)


def test_text_field_option(corpus: Path) -> None:
    rows = cont.score_items(_items(), [corpus], n=N, text_field="content", workers=1)
    got = _by_id(rows)
    assert got["other_field"] == (5, 5)
    assert got["jsonl"] == (0, 5) and got["jsonl_break"] == (0, 4)
    assert got["full"] == (6, 6)  # plain text files do not depend on the field


def test_default_n_is_8(tmp_path: Path) -> None:
    (tmp_path / "c.txt").write_text("zero one two three four five six seven eight\nnine ten\n")
    items = [
        Item("a", "One two three four five", "six seven eight nine ten", None),
        Item("b", "one two three", "four five six seven", None),  # 7 tokens < 8
    ]
    got = _by_id(cont.score_items(items, [tmp_path / "c.txt"], workers=1))
    assert got == {"a": (8, 10), "b": (0, 7)}


@pytest.mark.parametrize(
    ("workers", "block_bytes", "shard_bytes"),
    [(1, 16, 0), (1, 23, 40), (2, 16, 33), (2, 64, 10), (2, cont.BLOCK_BYTES, cont.SHARD_BYTES)],
)
def test_blocks_shards_and_workers_agree(
    corpus: Path, workers: int, block_bytes: int, shard_bytes: int
) -> None:
    # Tiny blocks cut lines at spaces and tiny shards cut files at line starts: the
    # n-grams spanning those cuts must be found all the same, in any process.
    options = cont.ScanOptions(block_bytes=block_bytes)
    rows, result = cont.score_tasks(
        {"t": _items()}, [corpus], N, options=options, workers=workers, shard_bytes=shard_bytes
    )
    assert _by_id(rows) == EXPECTED
    assert result.docs == 13 and result.bad_lines == 3


def test_scan_files_parallel_equals_serial(corpus: Path) -> None:
    index, _ = cont.build_index([cont.item_text(it) for it in _items()], N)
    serial = cont.scan_files([corpus], index, workers=1)
    parallel = cont.scan_files([corpus], index, workers=2, shard_bytes=50)
    assert serial.found == parallel.found and len(serial.found) > 0
    assert (serial.bytes, serial.docs, serial.tokens) == (
        parallel.bytes,
        parallel.docs,
        parallel.tokens,
    )


def test_fast_tokenization_matches_the_definition() -> None:
    # Byte-wise tokenization of corpus blocks must give what the definition (lower-cased
    # matches of \w+ or \S+ in each line) gives, whatever the characters.
    import random

    ascii_chars = "abcXYZ019_ \t\r\n.,'-\x01\x0b\x1c\x1f"
    # dotted capital I and final sigma change length or form when lower-cased; NBSP, NEL
    # and the ideographic space are whitespace; the combining dot is not a word character
    others = "İΣ\u00a0\x85éÉß中😀\u0307ﬁ\u3000"
    rng = random.Random(0)
    for spec in ("regex", "whitespace"):
        tok = cont.Tokenizer(spec)
        for _ in range(2000):
            text = "".join(
                rng.choice(others) if rng.random() < 0.03 else rng.choice(ascii_chars)
                for _ in range(rng.randint(0, 80))
            )
            keys, breaks = tok.block_keys(text.encode())
            want: list[object] = []
            for line in text.split("\n"):
                want += [tok.key(t) for t in tok.item_tokens(line)] + ["|"]
            got = ["|" if k in (cont.BARRIER, b"\n") else k for k in keys]
            assert got == want[:-1] and breaks == text.count("\n"), text


def test_tokenizers() -> None:
    assert cont.Tokenizer("whitespace").item_tokens("A dog's bone,  2") == [
        "a",
        "dog's",
        "bone,",
        "2",
    ]
    with pytest.raises(ValueError, match="unknown tokenizer"):
        cont.Tokenizer("spacy")
    with pytest.raises(ValueError, match="corpus path not found"):
        cont.corpus_files(["/no/such/corpus"])


def test_hf_tokenizer(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["x", "y", "alpha", "bravo", "charlie", "delta", "echo"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, "[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(tmp_path)
    (tmp_path / "c.txt").write_text("x alpha bravo charlie delta y\nalpha\n")
    items = [Item("a", "alpha bravo", "charlie delta echo", None)]
    rows = cont.score_items(items, [tmp_path / "c.txt"], n=N, tokenizer=f"hf:{tmp_path}")
    assert _by_id(rows) == {"a": (4, 5)}


def test_ray_runner(corpus: Path) -> None:
    ray = pytest.importorskip("ray")
    index, _ = cont.build_index([cont.item_text(it) for it in _items()], N)
    serial = cont.scan_files([corpus], index, workers=1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        result = cont.scan_ray([corpus], index, shard_bytes=60)
    finally:
        ray.shutdown()
    assert result.found == serial.found
    assert (result.docs, result.bad_lines, result.bytes) == (
        serial.docs,
        serial.bad_lines,
        serial.bytes,
    )


# --------------------------------------------------------------------------- EPG


def _rec(item: str, ok: bool | int, seed: int = 0, k: int = 0, task: str = "t") -> Record:
    labels = ("entailment", "neutral")
    pred = "entailment" if ok else "neutral"
    return Record(task, item, "org/m", k, seed, labels, (0.0, 0.0), (0.5, 0.5), pred, labels[0])


SCORES = [
    {"task": "t", "item_id": "a", "score": 1.0},
    {"task": "t", "item_id": "b", "score": 0.5},
    {"task": "t", "item_id": "c", "score": 0.2},
    {"task": "t", "item_id": "d", "score": 0.0},
]


def test_epg_by_hand() -> None:
    records = [_rec("a", True), _rec("b", True), _rec("c", False), _rec("d", False)]
    records += [_rec("e", True), _rec("a", False, task="other")]  # unscored; other task
    # k = 1, two seeds: seed 0 as above, seed 1 right on b, c, d only
    records += [_rec(i, ok, 0, 1) for i, ok in zip("abcd", (1, 1, 0, 0), strict=True)]
    records += [_rec(i, ok, 1, 1) for i, ok in zip("abcd", (0, 1, 1, 1), strict=True)]
    rows = cont.epg(records, SCORES, [0.0, 0.3, 0.5, 1.0])
    k0 = [r for r in rows if r["k"] == 0]
    assert [r["threshold"] for r in k0] == [0.0, 0.3, 0.5, 1.0]
    assert [r["pct_contaminated"] for r in k0] == [75.0, 50.0, 25.0, 0.0]
    assert [r["n_clean"] for r in k0] == [1, 2, 3, 4]
    assert [r["metric_all"] for r in k0] == [0.5] * 4
    assert [r["metric_clean"] for r in k0] == pytest.approx([0.0, 0.0, 1 / 3, 0.5])
    assert [r["epg"] for r in k0] == pytest.approx([0.5, 0.5, 1 / 6, 0.0])
    # Item e of k = 0 has no score; the run at k = 1 left none out.
    assert {r["k"]: r["n_unscored"] for r in rows} == {0: 1, 1: 0}
    assert {r["task"] for r in rows} == {"t"}
    k1 = next(r for r in rows if r["k"] == 1 and r["threshold"] == 0.0)
    # seed 0: 0.5 - 0 = 0.5; seed 1: 0.75 - 1 = -0.25
    assert k1["seeds"] == [0, 1] and k1["metric_all"] == pytest.approx(0.625)
    assert k1["epg"] == pytest.approx(0.125)
    assert k1["epg_std"] == pytest.approx(0.75 / math.sqrt(2))


def test_epg_no_clean_items_is_nan() -> None:
    rows = cont.epg([_rec("a", True), _rec("b", False)], SCORES, [0.4])
    assert rows[0]["n_clean"] == 0 and math.isnan(rows[0]["epg"])
    table = render(cont.format_epg(rows), "md")
    assert table.splitlines()[2].startswith("| m | t | 0 | 0.4 | 100.0 | 0 |")


def test_epg_table_and_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [_rec("a", True), _rec("b", True), _rec("c", False), _rec("d", False)]
    rows = cont.epg(records, SCORES)
    assert len(rows) == len(cont.DEFAULT_THRESHOLDS)
    assert "| EPG |" in render(cont.format_epg(rows), "md").splitlines()[0]
    saved = record_savefig(monkeypatch)
    out = cont.plot_epg(rows, tmp_path / "epg.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # What is drawn, by hand: at t = 0, 0.1 the items scored above t are a, b, c (75%),
    # the clean one d is wrong: EPG 0.5 - 0 = 0.5; at t = 0.2-0.4, a and b (50%), clean
    # c, d wrong: 0.5; at t = 0.5-0.9, a alone (25%), clean b, c, d 1/3 right: 1/6.
    [fig] = saved.figures
    [ax] = fig.axes
    assert series_of(ax) == {
        "m k=0": ([75.0] * 2 + [50.0] * 3 + [25.0] * 5, [0.5] * 5 + [pytest.approx(1 / 6)] * 5)
    }
    assert [level for level, _ in hlines_of(ax)] == [0.0]
    assert ax.get_xlabel() == "% contaminated\n(score > t)"  # two lines: no overlap
    assert ax.get_ylabel() == "EPG (accuracy: all − clean)"
    assert [t.get_text() for t in ax.texts] == ["t=0–0.1", "t=0.2–0.4", "t=0.5–0.9"]


# --------------------------------------------------------------------------- command


def test_command_scores_and_epg(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nlieval.data import load_task

    items = load_task("smoke").items
    # smoke-01's premise is 12 of its 17 tokens, and holds 8-grams
    (tmp_path / "web.txt").write_text(
        "filler words\nA man in a red jacket is shoveling snow off his driveway.\n"
    )
    run = RunFolder(tmp_path / "run")
    run.start(RunConfig(model="org/m", tasks=("smoke",)))
    run.append([_rec(it.id, i % 2 == 0, task="smoke") for i, it in enumerate(items)])
    out = tmp_path / "scores.jsonl"
    args = ["contamination", "--corpus", str(tmp_path / "web.txt"), "--task", "smoke"]
    args += ["--out", str(out), "--run", str(run.path), "--plot", str(tmp_path / "p.png")]
    assert cli_main([*args, "--workers", "1"]) == 0
    scores = {s["item_id"]: s for s in cont.read_scores(out)}
    assert len(scores) == len(items)
    assert (scores["smoke-01"]["n_contaminated_tokens"], scores["smoke-01"]["n_tokens"]) == (12, 17)
    assert sum(s["score"] > 0 for s in scores.values()) == 1
    summary = json.loads((tmp_path / "scores.summary.json").read_text())
    assert summary["tasks"][0]["n_items"] == len(items) and summary["scan"]["docs"] == 2
    printed = capsys.readouterr().out
    assert "| smoke | 48 |" in printed and "EPG" in printed
    assert (tmp_path / "p.png").is_file()
    # Again from the saved scores, thresholds at the distinct scores seen.
    again = ["contamination", "--scores", str(out), "--run", str(run.path)]
    assert cli_main([*again, "--thresholds", "distinct"]) == 0
    assert "| 0.705882 |" in capsys.readouterr().out  # t = 12/17
