"""The run folder: the one durable format, and the one resumable loop, of every command
that writes results (``run``, ``instruct``, ``generate``, ``train``'s test records).

>>> from nlieval.runs import RunFolder, run_steps
"""

from __future__ import annotations

# The floor's atomic write and folder maker, re-exported so the rooms above that write
# next to a run folder reach them where they reach the folder.
from ..ground import atomic_write as atomic_write
from ..ground import make_folder as make_folder
from ..ground import markdown_table as markdown_table
from .execute import execute, fingerprints_of, saved_config
from .folder import (
    CONFIG,
    RECORDS,
    RESULTS,
    SUMMARY,
    TIMING,
    FolderConfig,
    Row,
    RunError,
    RunFolder,
    as_point,
    iter_run_records,
)
from .labels import (
    NamedRuns,
    PooledRuns,
    flat,
    given_names,
    keep_apart,
    name_setting,
    read_named,
    run_labels,
    run_name,
)
from .loop import CHUNK, Step, run_steps
from .output import OutputFolder, RunFolders
from .results import Draws, finalize, read_results, run_warnings
from .schema import RESULTS_VERSION, Provenance, Results
from .tables import (
    instruct_table,
    markdown_summary,
    metrics_table,
    plus_minus,
    plus_minus_cell,
    run_timing,
)

__all__ = [
    "CHUNK",
    "CONFIG",
    "RECORDS",
    "RESULTS",
    "SUMMARY",
    "TIMING",
    "Draws",
    "FolderConfig",
    "NamedRuns",
    "PooledRuns",
    "OutputFolder",
    "RunFolders",
    "RunError",
    "Row",
    "RunFolder",
    "Step",
    "as_point",
    "atomic_write",
    "make_folder",
    "RESULTS_VERSION",
    "Provenance",
    "Results",
    "execute",
    "saved_config",
    "fingerprints_of",
    "finalize",
    "flat",
    "given_names",
    "name_setting",
    "instruct_table",
    "iter_run_records",
    "keep_apart",
    "markdown_summary",
    "markdown_table",
    "metrics_table",
    "plus_minus",
    "plus_minus_cell",
    "read_named",
    "read_results",
    "run_warnings",
    "run_labels",
    "run_name",
    "run_steps",
    "run_timing",
]
