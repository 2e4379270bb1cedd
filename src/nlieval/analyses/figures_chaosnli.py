"""The ChaosNLI figures of an experiment's report, each from the cells' records alone:
accuracy by human-label entropy (Lost in Inference, Figures 5 a and 7) and the final
models' divergence from the human labels (Figure 5 b), with reference lines a study's
file gives by value (a published BERT, with its source in the label).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import plotting as plots
from ..settings import setting
from .chaosnli import DIVERGENCES
from .commands import ChaosnliConfig, chaosnli_scores

#: The figures of a ``chaosnli-figure`` output.
CHAOSNLI_FIGURES = ("entropy", "divergence")


def reference_value(text: str) -> tuple[str, float]:
    """One ``TASK=VALUE`` of a reference line: a task name and a finite number.

    >>> reference_value("chaosnli_snli=0.23")
    ('chaosnli_snli', 0.23)
    >>> reference_value("snli=inf")
    Traceback (most recent call last):
    ValueError: expected TASK=VALUE with a finite number, got 'snli=inf'
    """
    task, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not sep or not task.strip() or not math.isfinite(number):
        raise ValueError(f"expected TASK=VALUE with a finite number, got {text!r}")
    return task.strip(), number


def reference_lines(
    pairs: Iterable[tuple[str, float]] | None, label: str
) -> dict[str, dict[str, float]]:
    """The reference lines of ``TASK=VALUE`` pairs as a figure draws them: ``label`` ->
    task -> level (nothing without pairs); a task given twice is a ValueError.

    >>> reference_lines([("snli", 0.9), ("hans", 0.5)], "BERT (Nie et al.)")
    {'BERT (Nie et al.)': {'snli': 0.9, 'hans': 0.5}}
    >>> reference_lines(None, "x")
    {}
    """
    levels: dict[str, float] = {}
    for task, value in pairs or ():
        if task in levels:
            raise ValueError(f"reference: task {task!r} given twice")
        levels[task] = value
    return {label: levels} if levels else {}


@dataclass(frozen=True, kw_only=True)
class ReferenceLine:
    """A reference system drawn at a value per task that the caller gives (a published
    number), named with its source: the settings of every figure that takes one."""

    reference: tuple[tuple[str, float], ...] | None = setting(
        None,
        help="a reference line at VALUE on TASK's panel (repeat for each task)",
        parse=reference_value,
        action="append",
        metavar="TASK=VALUE",
    )
    reference_label: str = setting(
        "reference", help="the reference line's name in the legend, with its source"
    )

    def lines(self) -> dict[str, dict[str, float]]:
        """The reference line as a figure draws it (:func:`reference_lines`)."""
        return reference_lines(self.reference, self.reference_label)


@dataclass(frozen=True, kw_only=True)
class ChaosnliFigureConfig(ReferenceLine, ChaosnliConfig, plots.FigureWidth):
    """What a ``chaosnli-figure`` output draws (:func:`chaosnli_figure`): ``figure``
    ``entropy`` (accuracy by human-label entropy bin, a panel per ChaosNLI set) or
    ``divergence`` (``metric`` of each model, with the chance, human and reference lines).

    >>> ChaosnliFigureConfig(runs=("r",), figure="divergence", plot="f.png").metric
    'js_distance'
    """

    figure: str = setting(help="entropy or divergence", choices=CHAOSNLI_FIGURES)
    plot: str = setting(help="figure to write: .pdf or .svg (vector) or .png (300 dpi)")
    metric: str = setting(
        "js_distance", help="the divergence a divergence figure shows", choices=DIVERGENCES
    )
    curves: str = setting(
        "both",
        help="accuracy-by-entropy curves against this label",
        choices=("both", "original", "majority"),
    )
    models: tuple[str, ...] | None = setting(
        None, help="in an experiment file: only the cells of these models are drawn"
    )


def chaosnli_figure(
    cfg: ChaosnliFigureConfig,
    palette: Iterable[str] | None = None,
    *,
    also: Sequence[str | Path] = (),
) -> Path | None:
    """Draw ``cfg``'s figure from the ChaosNLI records of its runs
    (:func:`~nlieval.analyses.commands.chaosnli_scores`: the same numbers as the
    ``chaosnli`` table) at ``cfg.plot`` and each of ``also`` (one drawing); None when the
    runs hold no ChaosNLI records. ``palette``: the model names of every figure of a
    report, so that a model keeps its colour and marker."""
    found = chaosnli_scores(ChaosnliConfig(
        runs=cfg.runs, name=cfg.name, bins=cfg.bins, human_splits=cfg.human_splits,
        human_seed=cfg.human_seed, human_js=cfg.human_js, common_items=cfg.common_items,
    ))  # fmt: skip
    if found is None:
        return None
    result, _ = found
    paths: plots.FigurePaths = (cfg.plot, *also) if also else cfg.plot
    if cfg.figure == "entropy":
        return plots.plot_accuracy_by_entropy(
            result["entropy_bins"], paths, cfg.curves, width=cfg.inches, names=palette
        )
    return plots.plot_final_divergence(
        result["scores"], paths, metric=cfg.metric, lines=cfg.lines(), width=cfg.inches,
        names=palette,
    )  # fmt: skip
