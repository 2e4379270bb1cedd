"""Test-set contamination by a pretraining corpus, and the estimated performance gain (EPG).

METHODS.md section 3. An item's score is the share of the tokens of its text that lie
inside one of its n-grams (default n = 8) that also occurs in the corpus. One module a
concern, imported one way (ngrams <- scan <- scores; epg on its own):

* :mod:`~nlieval.contamination.ngrams`: tokenizers, the test items' n-grams, the index;
* :mod:`~nlieval.contamination.scan`: reading corpus files and scanning them (shards,
  local worker processes, Ray);
* :mod:`~nlieval.contamination.scores`: per-item scores and the scores file (JSON lines);
* :mod:`~nlieval.contamination.epg`: EPG over score thresholds, its table and plot.

>>> from nlieval.types import Item
>>> score_items([Item("1", "too short", "", None)], [], workers=1)[0]["score"]
0.0
"""

from __future__ import annotations

from .epg import DEFAULT_THRESHOLDS, epg, format_epg, plot_epg
from .ngrams import (
    BARRIER,
    DEFAULT_N,
    TOKENIZERS,
    ItemGrams,
    NgramIndex,
    Token,
    Tokenizer,
    build_index,
    contaminated_tokens,
    item_ngrams,
    item_text,
)
from .scan import (
    BLOCK_BYTES,
    JSONL_SUFFIXES,
    SHARD_BYTES,
    ScanOptions,
    ScanResult,
    Shard,
    corpus_files,
    local_cores,
    plan_shards,
    scan_files,
    scan_ray,
    scan_shard,
)
from .scores import read_scores, score_items, score_summary, score_tasks, write_scores

__all__ = [
    "BARRIER",
    "BLOCK_BYTES",
    "DEFAULT_N",
    "DEFAULT_THRESHOLDS",
    "JSONL_SUFFIXES",
    "SHARD_BYTES",
    "TOKENIZERS",
    "ItemGrams",
    "NgramIndex",
    "ScanOptions",
    "ScanResult",
    "Shard",
    "Token",
    "Tokenizer",
    "build_index",
    "contaminated_tokens",
    "corpus_files",
    "epg",
    "format_epg",
    "item_ngrams",
    "item_text",
    "local_cores",
    "plan_shards",
    "plot_epg",
    "read_scores",
    "scan_files",
    "scan_ray",
    "scan_shard",
    "score_items",
    "score_summary",
    "score_tasks",
    "write_scores",
]
