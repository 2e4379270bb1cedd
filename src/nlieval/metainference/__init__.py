"""Meta-inferential consistency (METHODS.md section 5): whether a model's NLI labels on
related sentence pairs fit together, under readings of the labels as formulas of modal
logic K. One module a step:

* :mod:`~nlieval.metainference.logic` (``nlieval logic table / check / conclude``): the
  readings (:data:`READINGS`, or your own with :func:`load_reading`) and the decision
  procedure; start with :func:`classify` for a meta-inference such as
  ``"Eab & Ebc -> Eac"`` and :func:`conclude` for the labels a target pair may get;
* :mod:`~nlieval.metainference.generated` (``nlieval generate``): new hypotheses for a
  task's premises, written by a chat model: :func:`generate_items` with a
  :class:`GenerateConfig`;
* :mod:`~nlieval.metainference.inferred` (``nlieval infer build / report``): test items
  inferred from labelled items that share sentences (``inferred.build``, then
  ``inferred.write_task`` for ``nlieval run``), and the :func:`consistency_report` of a
  run's predictions on them.

The settings of these commands, and what each does as one function of them, are in
:mod:`~nlieval.metainference.commands`.

>>> from nlieval.metainference import classify, conclude
>>> classify("Cab -> Cba", "SC")
'valid'
>>> conclude("Cab", "ba", "SC").allowed  # C(a, b): which labels may (b, a) get?
('C',)
"""

from __future__ import annotations

from . import generated, inferred, logic
from .commands import (
    InferBuildConfig,
    InferReportConfig,
    LogicCheckConfig,
    LogicConcludeConfig,
    LogicTableConfig,
    build_inferred,
    check_relation,
    conclude_target,
    decide_table,
    inferred_consistency,
)
from .generated import GenerateConfig, GenerateSummary, format_summary, generate_items
from .inferred import consistency_report
from .logic import READINGS, Reading, classify, conclude, load_reading

__all__ = [
    "format_summary",
    "READINGS",
    "GenerateConfig",
    "Reading",
    "classify",
    "conclude",
    "consistency_report",
    "generate_items",
    "GenerateSummary",
    "generated",
    "inferred",
    "load_reading",
    "logic",
    # the settings of the logic and infer commands, and what each does
    "InferBuildConfig",
    "InferReportConfig",
    "LogicCheckConfig",
    "LogicConcludeConfig",
    "LogicTableConfig",
    "build_inferred",
    "check_relation",
    "conclude_target",
    "decide_table",
    "inferred_consistency",
]
