"""Tables from results: Markdown summaries, recomputed from saved records."""

from __future__ import annotations

from collections.abc import Iterable
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
    run_timing,
)


def report(folders: Iterable[str | Path], write: bool = True) -> str:
    """Recompute metrics from the records of one or more run folders; no model is loaded.

    With ``write``, each folder's ``results.json`` and ``summary.md`` are rewritten from its
    records. Returns a Markdown table over all folders.

    >>> print(report(["runs/gemma"]))    # doctest: +SKIP
    """
    folders = list(folders)
    runs = [RunFolder(f) for f in folders]
    for rf in runs:
        if not rf.exists():
            raise RunError(f"{rf.path} is not a run folder (no config.json or records.jsonl)")
    results = [finalize(rf, rf.read_config()) if write else rf.read_results() for rf in runs]
    # One folder: finalize has just summarised its records; several: summarise them together
    # (two folders may hold the same model and task).
    if write and len(runs) == 1:
        rows = results[0]["metrics"]
    else:
        rows = summarize(iter_run_records(folders))
    timing: dict[str, Any] = {}
    for res in results:
        timing.update(run_timing(res))
    if all((res.get("config") or {}).get("kind") == "instruct" for res in results):
        return instruct_table(rows, timing)
    return metrics_table(rows, timing)
