"""Test-set contamination by a pretraining corpus, and the estimated performance gain (EPG).

METHODS.md section 3. An item's score is the share of the tokens of its text that lie
inside one of its n-grams (default n = 8) that also occurs in the corpus. The
``nlieval contamination`` command is :func:`contamination_report` of a
:class:`ContaminationConfig`, in two steps:

1. scores: :func:`score_tasks` (several tasks' items, one pass over the corpus; scan
   settings in :class:`ScanOptions`, what the scan saw in :class:`ScanResult`) or
   :func:`score_items` (one list of items), saved by :func:`write_scores` and read back
   by :func:`read_scores`; :func:`score_summary` gives the share contaminated per task;
2. EPG: :func:`epg` of a run's records and the scores, over score thresholds, as a table
   (:func:`format_epg`) and a plot (:func:`plot_epg`).

The building blocks of a scan are exported too (:class:`Tokenizer`, :func:`build_index`,
:func:`scan_files`, :func:`scan_ray`, ...); the rest is in the modules, one a concern,
imported one way (ngrams <- scan <- scores; epg on its own):

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

from ..plotting import plot_epg
from .command import ContaminationConfig, contamination_report, format_summary
from .epg import DEFAULT_THRESHOLDS, epg, format_epg
from .ngrams import (
    BARRIER,
    DEFAULT_N,
    ItemGrams,
    Tokenizer,
    build_index,
    contaminated_tokens,
    item_text,
)
from .scan import (
    BLOCK_BYTES,
    SHARD_BYTES,
    ScanOptions,
    ScanResult,
    corpus_files,
    local_cores,
    scan_files,
    scan_ray,
)
from .scores import read_scores, score_items, score_summary, score_tasks, write_scores

__all__ = [
    # the entry points: the command, scores, then EPG
    "ContaminationConfig",
    "contamination_report",
    "format_summary",
    "DEFAULT_N",
    "DEFAULT_THRESHOLDS",
    "ScanOptions",
    "ScanResult",
    "epg",
    "format_epg",
    "plot_epg",
    "read_scores",
    "score_items",
    "score_summary",
    "score_tasks",
    "write_scores",
    # the building blocks of a scan
    "BARRIER",
    "BLOCK_BYTES",
    "SHARD_BYTES",
    "ItemGrams",
    "Tokenizer",
    "build_index",
    "contaminated_tokens",
    "corpus_files",
    "item_text",
    "local_cores",
    "scan_files",
    "scan_ray",
]
