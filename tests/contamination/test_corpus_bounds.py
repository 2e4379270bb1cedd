"""A corpus line of JSON nested thousands deep is a bad line, counted as such, and the
scan goes on (it ended in a RecursionError)."""

from __future__ import annotations

from pathlib import Path

from nlieval import contamination as cont
from nlieval.types import Item


def test_a_deep_jsonl_line_is_a_bad_line(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    deep = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"
    docs.write_text('{"text": "a man walks in the park"}\n' + deep + "\n", encoding="utf-8")
    item = Item("1", "a man walks in the park", "x", None)
    rows, result = cont.score_tasks({"t": [item]}, [docs], n=3, workers=1)
    assert (result.docs, result.bad_lines) == (1, 1)
    # 7 tokens (the premise's 6 words and the hypothesis "x"); the premise is the good
    # document itself, so its 6 are inside the document's 3-grams, and "x" is not.
    assert (rows[0]["n_contaminated_tokens"], rows[0]["n_tokens"]) == (6, 7)
