"""Human label counts are printed so that a label never runs into its count, whatever
the labels are (issue 42, defect 4: alpha-NLI's 97 votes for hypothesis 1 and 3 for
hypothesis 2 were printed ``197 23``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlieval.analyses.listing import label_counts_text
from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from tests.helpers.hash_lm import HashLM

UID = "58090d3f-8a91-4c89-83ef-2b4994de9d241"


@pytest.mark.parametrize(
    ("counts", "text"),
    [
        ({"1": 97, "2": 3}, "1=97 2=3"),
        ({"entailment": 49, "neutral": 36, "contradiction": 15}, "E=49 N=36 C=15"),
        # SciNLI's four classes: first letters tell them apart.
        ({"contrasting": 1, "reasoning": 2, "entailment": 3, "neutral": 4}, "C=1 R=2 E=3 N=4"),
        # Labels sharing a start are cut where they part, never merged.
        ({"contradiction": 5, "contrasting": 6}, "Contrad=5 Contras=6"),
        ({"a": 1, "A": 2}, "a=1 A=2"),
        # Labels that are not words are never cut: "12" cut to "1" would be another label.
        ({"12": 10, "3": 20}, "12=10 3=20"),
    ],
)
def test_each_label_is_apart_from_its_count(counts: dict[str, int], text: str) -> None:
    assert label_counts_text(counts) == text


@pytest.mark.data
def test_items_prints_a_real_alpha_nli_row(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The row as the file holds it: {"label_counter": {"1": 97, "2": 3}, "majority_label": 1}
    # (the first line of chaosNLI_alphanli.jsonl), so by hand "1=97 2=3 (1)".
    path = data_dir / "chaosnli" / "chaosNLI_alphanli.jsonl"
    with path.open(encoding="utf-8") as fh:
        row = json.loads(fh.readline())
    assert row["uid"] == UID and row["label_counter"] == {"1": 97, "2": 3}
    cfg = RunConfig("hash", ("chaosnli_alphanli",), limit=1, data_dir=str(data_dir))
    out = tmp_path / "run"
    run(cfg, out, model=stand_in(cfg, lambda _: HashLM()), progress=False)
    assert main(["items", str(out), "--ids", UID, "--data-dir", str(data_dir)]) == 0
    lines = capsys.readouterr().out.splitlines()
    cells = [c.strip() for c in lines[1 + 1].strip("|").split("|")]
    humans = lines[0].strip("|").split("|")
    assert cells[[h.strip() for h in humans].index("humans (majority)")] == "1=97 2=3 (1)"
