"""Analyses recomputed from saved run folders (no model needed): model predictions
against ChaosNLI's 100 human labels per item, training dynamics over checkpoints, plots,
and prediction files of classifiers made elsewhere. Where to start:

* ``nlieval chaosnli``: ``chaosnli.report(records)`` (the scores of
  :func:`score_records`, accuracy by human-label entropy, the items every system got
  right), with the human-vs-human line set by a :class:`HumanBaseline`;
  ``nlieval chaosnli-score`` is :func:`score_prediction_file` on an official-format file;
* ``nlieval chaosnli-import``: :func:`import_predictions` with an :class:`ImportConfig`
  turns prediction files into a run folder (formats in :mod:`.predictions`);
* ``nlieval dynamics``: :func:`follow_run` on a run folder made with ``--checkpoints``
  (rows by :func:`nlieval.analyses.dynamics.dynamics`);
* ``nlieval compare``: :func:`compare_runs` on two run folders (McNemar and a paired
  bootstrap per sweep point, on the items both scored), :func:`comparison_table`;
* ``nlieval breakdown``: :func:`breakdown` of records by any item field (HANS heuristic,
  genre, round, domain, gold label), :func:`breakdown_table`;
* ``nlieval grid``: :func:`grid` pivots metric rows of many folders into the papers'
  model x benchmark tables (Average row, gaps to a reference, bootstrap intervals on
  request: :func:`intervals`; item fields as keys with an Overall: :func:`by_fields`),
  :func:`render_grid`;
* ``nlieval items``: :func:`item_listing` of several folders' predictions side by side,
  filtered for error analysis;
* ``nlieval plots``: :func:`plot_accuracy_vs_shots`, :func:`plot_accuracy_by_entropy`
  and :func:`plot_divergence` (matplotlib, one PNG each).

The settings of ``dynamics``, ``chaosnli``, ``chaosnli-score`` and ``plots``, and what
each command does as one function of them, are in :mod:`.commands`.

>>> from nlieval.analyses import chaosnli
>>> round(chaosnli.divergences([[50, 50]], [[0.5, 0.5]])["kl"], 6)
0.0
"""

from __future__ import annotations

from ..plotting import (
    checkpoint_positions,
    plot_accuracy_by_entropy,
    plot_accuracy_vs_shots,
    plot_accuracy_vs_size,
    plot_divergence,
    plot_dynamics,
)
from . import chaosnli
from .breakdown import breakdown, breakdown_table
from .chaosnli import HumanBaseline, score_prediction_file, score_records
from .commands import (
    CHAOSNLI_JSON,
    PLOTS,
    ChaosnliConfig,
    ChaosnliScoreConfig,
    DynamicsConfig,
    PlotsConfig,
    baseline_lines,
    chaosnli_scores,
    dynamics_of,
    metric_rows,
    score_file,
    write_plots,
)
from .compare import CompareConfig, compare_runs, comparison_table
from .dynamics import follow_run, format_dynamics
from .figures_chaosnli import (
    CHAOSNLI_FIGURES,
    ChaosnliFigureConfig,
    ReferenceLine,
    chaosnli_figure,
    reference_lines,
)
from .grid import KEYS as GRID_KEYS
from .grid import Grid, GridText, by_fields, grid, grid_text, intervals, render_grid
from .imports import ImportConfig, ImportedFile, ImportResult, format_import, import_predictions
from .listing import FILTERS, SORTS, item_flags, item_listing, listing_table

__all__ = [
    "FILTERS",
    "SORTS",
    "GRID_KEYS",
    "Grid",
    "GridText",
    "HumanBaseline",
    "ImportConfig",
    "baseline_lines",
    "breakdown",
    "breakdown_table",
    "chaosnli",
    "checkpoint_positions",
    "CompareConfig",
    "compare_runs",
    "comparison_table",
    "follow_run",
    "metric_rows",
    "by_fields",
    "grid",
    "grid_text",
    "intervals",
    "import_predictions",
    "ImportResult",
    "ImportedFile",
    "item_flags",
    "item_listing",
    "listing_table",
    "plot_accuracy_by_entropy",
    "plot_accuracy_vs_shots",
    "plot_accuracy_vs_size",
    "plot_divergence",
    "plot_dynamics",
    "render_grid",
    "score_prediction_file",
    "score_records",
    # the settings of the analysis commands, and what each does
    "CHAOSNLI_JSON",
    "PLOTS",
    "ChaosnliConfig",
    "ChaosnliScoreConfig",
    "DynamicsConfig",
    "PlotsConfig",
    "chaosnli_scores",
    "dynamics_of",
    "format_dynamics",
    "format_import",
    "score_file",
    "write_plots",
    # the ChaosNLI figures of an experiment's report, and reference lines by value
    "CHAOSNLI_FIGURES",
    "ChaosnliFigureConfig",
    "ReferenceLine",
    "chaosnli_figure",
    "reference_lines",
]
