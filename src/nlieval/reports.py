"""Tables from results: Markdown summaries, recomputed from saved records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .metrics import summarize
from .runs import (
    RunError,
    RunFolder,
    finalize,
    instruct_table,
    iter_run_records,
    metrics_table,
    read_results,
    run_timing,
)


def report(folders: Iterable[str | Path], write: bool = True) -> str:
    """Recompute metrics from the records of one or more run folders; no model is loaded.

    With ``write``, each folder's ``results.json`` and ``summary.md`` are rewritten from its
    records. Returns a Markdown table over all folders.

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("entailment", "neutral"),
    ...                            (-0.1, -2.0), (0.87, 0.13), "entailment", "neutral")])
    >>> print(report([run_dir]).splitlines()[-1])  # wrong: accuracy 0, gold NLL 2
    | m | t | 0 | 1 | 1 | 0.000 | 0.000 | 2.000 | 0.500 | E 100% N 0% |
    >>> sorted(p.name for p in Path(run_dir).iterdir())  # with ``write``
    ['provenance.jsonl', 'records.jsonl', 'results.json', 'summary.md']
    """
    folders = list(folders)
    runs = [RunFolder(f) for f in folders]
    for rf in runs:
        if not rf.exists():
            raise RunError(f"{rf.path} is not a run folder (no config.json or records.jsonl)")
    results = [
        finalize(rf, rf.read_config(), invocation="report") if write else read_results(rf)
        for rf in runs
    ]
    # One folder: finalize has just summarised its records; several: summarise them together
    # (two folders may hold the same model and task).
    if write and len(runs) == 1:
        rows: Sequence[Mapping[str, Any]] = results[0].metrics
    else:
        rows = summarize(iter_run_records(folders))
    timing: dict[str, Any] = {}
    for res in results:
        timing.update(run_timing(res))
    if all((res.config or {}).get("kind") == "instruct" for res in results):
        return instruct_table(rows, timing)
    return metrics_table(rows, timing)
