"""Per-item contamination scores, and the scores file (JSON lines) that holds them.

METHODS.md section 3. A token of an item's text (:func:`nlieval.contamination.ngrams.item_text`)
is *contaminated* when it lies inside at least one of the item's n-grams (default n = 8)
that also occurs in the corpus; the item's score is the share of its tokens that are
contaminated. Items with fewer than n tokens have no n-gram and score 0.

The scores file, written by :func:`write_scores` and read by :func:`read_scores`, holds one
JSON object a line: ``task``, ``item_id``, ``score``, ``n_tokens``, ``n_contaminated_tokens``.

>>> from nlieval.types import Item
>>> from pathlib import Path
>>> corpus = Path(run_dir) / "c.txt"
>>> _ = corpus.write_text("intro: a b c d e f g h, outro\\n")
>>> item = Item("1", "A b c d e f g h", "i", None)  # 9 tokens: the first 8 are in the corpus
>>> score_items([item], [corpus], workers=1)[0]["score"] == 8 / 9
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..ground import DataError, atomic_write, make_folder, read_jsonl
from ..types import Item
from .ngrams import DEFAULT_N, build_index, contaminated_tokens, item_text
from .scan import SHARD_BYTES, ScanOptions, ScanResult, corpus_files, scan_files, scan_ray


def score_tasks(
    items_by_task: Mapping[str, Sequence[Item]],
    corpus: Iterable[str | Path],
    n: int = DEFAULT_N,
    tokenizer: str = "regex",
    options: ScanOptions = ScanOptions(),  # noqa: B008 (a frozen dataclass)
    workers: int | None = None,
    shard_bytes: int = SHARD_BYTES,
    use_ray: bool = False,
    ray_address: str | None = None,
) -> tuple[list[dict[str, Any]], ScanResult]:
    """Per-item scores of several tasks' items from one pass over the corpus.

    Scans on ``workers`` local cores, or with ``use_ray`` through :func:`scan_ray`
    (``ray_address``: None starts a local Ray). Returns one dict per item (``task``,
    ``item_id``, ``score``, ``n_tokens``, ``n_contaminated_tokens``) and the scan's result.
    """
    keys = [(task, it) for task, items in items_by_task.items() for it in items]
    index, grams = build_index((item_text(it) for _, it in keys), n, tokenizer)
    files = corpus_files(corpus)
    if use_ray:
        result = scan_ray(files, index, ray_address, options, shard_bytes)
    else:
        result = scan_files(files, index, workers, options, shard_bytes)
    rows = []
    for (task, it), g in zip(keys, grams, strict=True):
        hit = contaminated_tokens(g, n, result.found)
        rows.append(
            {
                "task": task,
                "item_id": it.id,
                "score": hit / g.n_tokens if g.n_tokens else 0.0,
                "n_tokens": g.n_tokens,
                "n_contaminated_tokens": hit,
            }
        )
    return rows, result


def score_items(
    items: Sequence[Item],
    corpus_files: Iterable[str | Path],
    n: int = DEFAULT_N,
    tokenizer: str = "regex",
    text_field: str = "text",
    workers: int | None = None,
    task: str = "",
) -> list[dict[str, Any]]:
    """Per-item contamination scores of one list of items (see :func:`score_tasks`).

    >>> score_items([Item("1", "too short", "", None)], [], workers=1)[0]["score"]
    0.0
    """
    options = ScanOptions(text_field=text_field)
    rows, _ = score_tasks({task: items}, corpus_files, n, tokenizer, options, workers)
    return rows


def score_summary(scores: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per task: items, mean score, and the % of items scoring above 0, at least 0.5, and 1.

    >>> score_summary([{"task": "t", "score": 0.0}, {"task": "t", "score": 1.0}])[0]["pct_any"]
    50.0
    """
    by_task: dict[str, list[float]] = {}
    for s in scores:
        by_task.setdefault(s["task"], []).append(float(s["score"]))
    out = []
    for task, vals in by_task.items():
        m = len(vals)
        out.append(
            {
                "task": task,
                "n_items": m,
                "mean_score": sum(vals) / m,
                "pct_any": 100 * sum(v > 0 for v in vals) / m,
                "pct_half": 100 * sum(v >= 0.5 for v in vals) / m,
                "pct_full": 100 * sum(v >= 1 for v in vals) / m,
            }
        )
    return out


def read_scores(path: str | Path) -> list[dict[str, Any]]:
    """Per-item scores written by ``nlieval contamination`` (one JSON object a line);
    a line that is not one, a row without its ``task``, ``item_id`` or a ``score`` from 0
    to 1, or an item scored twice is a :class:`~nlieval.ground.DataError` naming file,
    line and field (each row is counted as one item: a second row of an item would be
    counted twice, and scored once).

    >>> bad = Path(run_dir) / "twice.jsonl"
    >>> _ = bad.write_text('{"task": "t", "item_id": "1", "score": 0.5}\\n' * 2)
    >>> read_scores(bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: ...twice.jsonl:2: field 'item_id': item '1' of t is ...
    """
    out: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for row in read_jsonl(path, finite=True):
        value = row.value
        for name in ("task", "item_id"):
            if not isinstance(value.get(name), (str, int)) or isinstance(value.get(name), bool):
                raise DataError(path, row.line, name, "missing, or not a name")
        score = value.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
            raise DataError(path, row.line, "score", f"not a number from 0 to 1: {score!r}")
        key = (str(value["task"]), str(value["item_id"]))
        if key in seen:
            raise DataError(
                path,
                row.line,
                "item_id",
                f"item {key[1]!r} of {key[0]} is scored again (first at line {seen[key]})",
            )
        seen[key] = row.line
        out.append(value)
    return out


def write_scores(scores: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write per-item scores, one JSON object a line (atomically: two commands writing
    one file leave one whole file, never a mix)."""
    out = Path(path)
    make_folder(out.parent)  # the folder the user named (it may be a link)
    text = "".join(json.dumps(dict(s), ensure_ascii=False) + "\n" for s in scores)
    atomic_write(out, text, root=out.parent)
    return out
