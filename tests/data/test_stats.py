"""Tests of nlieval.data.stats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.cli import main
from nlieval.data import Dataset, load_task
from nlieval.data.stats import dataset_stats, format_stats, overlap_pct, render_stats, words
from nlieval.types import ALPHA, NLI3, Item, Label


def test_words_are_lowercased_word_runs() -> None:
    assert words("The DOG's toy, 2x!") == ["the", "dog", "s", "toy", "2x"]
    assert words("  ... ") == []
    assert words("Café naïve") == ["café", "naïve"]


def test_overlap_counts_hypothesis_tokens() -> None:
    assert overlap_pct("A man sleeps.", "A man is asleep.") == 50.0
    # Repeated hypothesis words count each time.
    assert overlap_pct("the cat", "the the dog") == pytest.approx(200 / 3)
    assert overlap_pct("Anything", "...") is None


def dataset(items: list[Item], labels: tuple[Label, ...] = NLI3, **kw: object) -> Dataset:
    return Dataset("t", "dev", labels, tuple(items), "mem", **kw)  # type: ignore[arg-type]


def test_dataset_stats_values() -> None:
    ds = dataset(
        [
            Item("1", "A man sleeps.", "A man is asleep.", Label.ENTAILMENT),  # 3 / 4 words, 50%
            Item("2", "Two dogs run fast.", "Dogs run.", Label.NEUTRAL),  # 4 / 2 words, 100%
            Item("3", "x", "", None),  # 1 / 0 words, left out of the overlap mean
        ],
        dropped={"gold label '-'": 2},
        skipped_bad=1,
    )
    s = dataset_stats(ds)
    assert s["items"] == 3
    assert s["labels"] == {"entailment": 1, "neutral": 1, "contradiction": 0, "none": 1}
    assert s["dropped"] == {"gold label '-'": 2} and s["skipped_bad"] == 1
    assert s["premise_words"] == pytest.approx(8 / 3)
    assert s["hypothesis_words"] == pytest.approx(2.0)
    assert s["overlap_pct"] == pytest.approx(75.0)


def test_alpha_nli_counts_the_observations() -> None:
    item = Item("a", "Obs one here.", "Obs two.", Label.HYP1, choices=("long hyp " * 10, "h"))
    s = dataset_stats(dataset([item], ALPHA))
    assert (s["premise_words"], s["hypothesis_words"]) == (3.0, 2.0)
    assert s["labels"] == {"1": 1, "2": 0}


def test_empty_dataset_gives_zeros() -> None:
    s = dataset_stats(dataset([]))
    assert (s["items"], s["premise_words"], s["overlap_pct"]) == (0, 0.0, 0.0)


def test_format_stats_table() -> None:
    smoke = dataset_stats(load_task("smoke"))
    other = dataset_stats(
        dataset(
            [Item("1", "a b", "a", Label.NEUTRAL)], dropped={"gold label '-'": 1234}, skipped_bad=2
        )
    )
    lines = render_stats([format_stats([smoke, other])]).splitlines()
    assert lines[0].split()[:4] == ["task", "split", "items", "labels"]
    assert set(lines[1]) <= {"-", " "}
    assert len(lines) == 4
    assert "entailment=16 neutral=16 contradiction=16" in lines[2]
    assert "gold label '-'=1,234 bad lines=2" in lines[3]
    # Right-aligned numbers: the items column ends at the same position on every row.
    end = lines[0].index("items") + len("items")
    assert lines[2][:end].endswith("48") and lines[3][:end].endswith("1")
    assert lines[2].split()[-1] == f"{smoke['overlap_pct']:.1f}"


def test_format_stats_no_rows() -> None:
    assert len(render_stats([format_stats([])]).splitlines()) == 2


def _domain_task(tmp_path: Path) -> Path:
    """A task YAML with a domain field: test (5 items) and a pool, the train split (3)."""
    rows = {
        "test": [
            ("CL", "entailment"),
            ("Sec", "neutral"),
            ("CL", "neutral"),
            ("Bio", "entailment"),
            (None, "contradiction"),
        ],
        "train": [("CL", "entailment"), ("Med", "neutral"), ("CL", "contradiction")],
    }
    for split, items in rows.items():
        lines = []
        for n, (domain, label) in enumerate(items):
            row = {"id": f"{split}{n}", "premise": "a b", "hypothesis": "a", "label": label}
            if domain is not None:
                row["domain"] = domain
            lines.append(json.dumps(row))
        (tmp_path / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    yaml = tmp_path / "dom.yaml"
    yaml.write_text(
        "name: dom\npath: test.jsonl\npool: train.jsonl\n"
        "labels: [entailment, neutral, contradiction]\nfields: {meta: [domain]}\n"
    )
    return yaml


def test_domains_and_all_splits_in_one_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml = _domain_task(tmp_path)
    # Counted by hand: test has CL, Sec, Bio (one item has none), train CL, Med; the
    # task's four are CL, Sec, Bio, Med. smoke has no domain field.
    assert dataset_stats(load_task(str(yaml)))["domains"] == 3
    assert dataset_stats(load_task(str(yaml), split="train"))["domains"] == 2
    assert dataset_stats(load_task("smoke"))["domains"] is None
    assert main(["stats", "--task", f"{yaml},smoke", "--split", "all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    cells = {(ln.split()[0], ln.split()[1]): ln.split() for ln in lines[2:6]}
    at = head.index("domains") + 2  # "labels" spans its three label=count words
    assert [cells[k][2] for k in (("dom", "train"), ("dom", "test"))] == ["3", "5"]
    assert cells[("dom", "train")][at] == "2" and cells[("dom", "test")][at] == "3"
    assert cells[("smoke", "test")][at] == "n/a"
    assert lines[6] == ""
    assert lines[7].split() == ["task", "train", "test", "domains"]
    assert lines[9].split() == ["dom", "3", "5", "4"]
    assert lines[10].split() == ["smoke", "12", "48", "n/a"]
    # A list of splits reads those, in that order; one split prints no split table.
    assert main(["stats", "--task", str(yaml), "--split", "test,train"]) == 0
    out = capsys.readouterr().out.splitlines()
    # Columns in the order asked.
    assert [ln.split()[1] for ln in out[2:4]] == ["test", "train"]
    assert out[-1].split() == ["dom", "5", "3", "4"]
    assert main(["stats", "--task", str(yaml), "--split", "test"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["stats", "--task", str(yaml), "--split", "dev"]) == 2
    assert "task dom has no split 'dev'" in capsys.readouterr().err


def test_a_split_list_reads_what_each_task_has_and_names_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml = _domain_task(tmp_path)
    # dom declares test and train (its pool); smoke the same; neither has a dev split.
    assert main(["stats", "--task", f"{yaml},smoke", "--split", "train,dev,test"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[:3] for ln in lines[2:6]] == [
        ["dom", "train", "3"],
        ["dom", "test", "5"],
        ["smoke", "train", "12"],
        ["smoke", "test", "48"],
    ]
    assert lines[7].split() == ["task", "train", "dev", "test", "domains"]
    assert lines[9].split() == ["dom", "3", "n/a", "5", "4"]
    assert len(lines) == 11  # no split declared and missing: no note
    # SciNLI declares train, dev and test; a data folder with its test file alone: the
    # two others are n/a and named under the table. Its items' domain field is counted.
    folder = tmp_path / "data" / "scinli"
    folder.mkdir(parents=True)
    rows = [("ACL", "reasoning"), ("Sec", "neutral"), ("ACL", "contrasting")]
    folder.joinpath("test.jsonl").write_text(
        "".join(
            json.dumps(
                {"id": str(n), "sentence1": "a b", "sentence2": "b", "label": lab, "domain": dom}
            )
            + "\n"
            for n, (dom, lab) in enumerate(rows)
        )
    )
    argv = ["stats", "--task", "scinli", "--split", "all", "--data-dir", str(tmp_path / "data")]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split()[:3] == ["scinli", "test", "3"]
    assert out[-4:] == [
        "task    test  domains",
        "------  ----  -------",
        "scinli     3        2",
        "n/a: a split the task does not have, or no data here: scinli train, scinli dev",
    ]


def test_a_mistyped_split_in_a_list_is_one_line_not_an_empty_column(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from nlieval.cli import main

    # smoke has train and test: "tset" is no split of any task asked, so a typo.
    assert main(["stats", "--task", "smoke", "--split", "train,tset"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has a split 'tset'" in err
