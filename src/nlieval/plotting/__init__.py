"""Every PNG the package draws, in one room: the canvas chores (:mod:`.canvas`: a figure
grid on an Agg canvas, one legend per figure, saving, naming and colouring a series) and
the plots of results (:mod:`.results`). Where to start:

* ``nlieval plots``: :func:`plot_accuracy_vs_shots`, :func:`plot_accuracy_by_entropy`,
  :func:`plot_divergence`;
* ``nlieval figure``: :func:`plot_accuracy_vs_shots`, :func:`plot_accuracy_vs_size`,
  :func:`plot_dynamics` (several models over checkpoints, at :func:`checkpoint_positions`);
* ``nlieval dynamics --plot``: :func:`plot_run_dynamics` (one checkpoint run);
* ``nlieval contamination --plot``: :func:`plot_epg`; ``nlieval sci-report --plot-dir``:
  :func:`plot_confusion`;
* a new plot: a function of rows that draws on :func:`grid` and returns :func:`save`.

Importing this package loads no matplotlib; each plot imports it when drawing.

>>> plot_dynamics.__module__, plot_run_dynamics.__module__
('nlieval.plotting.results', 'nlieval.plotting.results')
"""

from __future__ import annotations

from .canvas import PlotWriteError, colors, grid, legend, save, series_name, short_names
from .results import (
    DYNAMICS_METRICS,
    baseline_levels,
    checkpoint_positions,
    plot_accuracy_by_entropy,
    plot_accuracy_vs_shots,
    plot_accuracy_vs_size,
    plot_divergence,
    plot_dynamics,
    plot_run_dynamics,
)
from .studies import plot_confusion, plot_epg

__all__ = [
    "plot_confusion",
    "plot_epg",
    "DYNAMICS_METRICS",
    "PlotWriteError",
    "baseline_levels",
    "checkpoint_positions",
    "colors",
    "grid",
    "legend",
    "plot_accuracy_by_entropy",
    "plot_accuracy_vs_shots",
    "plot_accuracy_vs_size",
    "plot_divergence",
    "plot_dynamics",
    "plot_run_dynamics",
    "save",
    "series_name",
    "short_names",
]
