"""Every figure the package draws, in one room: the canvas chores (:mod:`.canvas`: the
package style, a figure grid at a paper's width, one legend per figure, saving as PDF, SVG
or PNG by the extension, naming and styling a series) and the plots of results
(:mod:`.results`). Where to start:

* ``nlieval plots``: :func:`plot_accuracy_vs_shots`, :func:`plot_accuracy_by_entropy`,
  :func:`plot_divergence`;
* ``nlieval figure``: :func:`plot_accuracy_vs_shots`, :func:`plot_accuracy_vs_size`,
  :func:`plot_dynamics` (several models over checkpoints, at :func:`checkpoint_positions`);
* ``nlieval dynamics --plot``: :func:`plot_run_dynamics` (one checkpoint run);
* ``nlieval contamination --plot``: :func:`plot_epg`; ``nlieval sci-report --plot-dir``:
  :func:`plot_confusion`;
* a new figure kind of ``nlieval figure``: its drawing and one :class:`FigureKind` in
  :data:`FIGURE_KINDS` (:mod:`.results`);
* a new plot: a function of rows, wrapped in :func:`styled`, that draws on :func:`grid`
  (``width=``), styles its series with :func:`styles` and returns :func:`save`.

Importing this package loads no matplotlib; each plot imports it when drawing.

>>> plot_dynamics.__module__, plot_run_dynamics.__module__
('nlieval.plotting.results', 'nlieval.plotting.results')
"""

from __future__ import annotations

from .canvas import (
    FORMATS,
    WIDTHS,
    FigurePaths,
    FigureWidth,
    PlotWriteError,
    display_name,
    figure_format,
    grid,
    legend,
    palette,
    panels,
    paper_width,
    save,
    series_name,
    short_names,
    std_note,
    styled,
    styles,
)
from .chaosnli import plot_final_divergence
from .results import (
    DYNAMICS_METRICS,
    FIGURE_KINDS,
    FigureData,
    FigureKind,
    checkpoint_positions,
    plot_accuracy_by_entropy,
    plot_accuracy_vs_shots,
    plot_accuracy_vs_size,
    plot_divergence,
    plot_dynamics,
    plot_run_dynamics,
    reference_levels,
)
from .studies import plot_confusion, plot_epg

__all__ = [
    "FORMATS",
    "WIDTHS",
    "FigurePaths",
    "FigureWidth",
    "display_name",
    "figure_format",
    "paper_width",
    "panels",
    "reference_levels",
    "std_note",
    "styled",
    "styles",
    "plot_confusion",
    "plot_epg",
    "plot_final_divergence",
    "DYNAMICS_METRICS",
    "FIGURE_KINDS",
    "FigureData",
    "FigureKind",
    "PlotWriteError",
    "checkpoint_positions",
    "grid",
    "legend",
    "palette",
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
