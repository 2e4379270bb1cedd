"""Experiments as files: a study's whole grid of runs in one YAML file, run cell by cell
into one folder and ending in the study's tables and figures (``nlieval experiment``).

Where to start: :func:`read_experiment` reads a file (with ``--set`` overrides) into an
:class:`Experiment`; :func:`plan_cells` expands it into :class:`Cell` s (one command's
run folder each, its settings checked by the command's own classes);
:func:`run_experiment` runs the cells not done and writes the report;
:func:`experiment_status` says where each cell of a folder stands;
:func:`experiment_schema` is the JSON Schema of the file for editors.

>>> from nlieval.experiments import parse_experiment, plan_cells
>>> text = "models: {a: smollm2-135m}\\nblocks: {b: {command: run, tasks: smoke}}\\n"
>>> exp = parse_experiment(text + "matrix: [{block: b, models: [a]}]", "e.yaml")
>>> [c.name for c in plan_cells(exp, estimate=False)]
['b-a']
"""

from __future__ import annotations

from .config import (
    EXECUTORS,
    ExperimentPlan,
    ExperimentRun,
    ExperimentSchema,
    ExperimentStatus,
    executor_named,
    plan_text,
    run_file,
    status_text,
)
from .driver import (
    CellJob,
    Executor,
    LocalExecutor,
    Outcome,
    Progress,
    Summary,
    experiment_status,
    format_status,
    run_experiment,
)
from .overrides import apply_overrides, read_experiment
from .plan import ASK_ABOVE, MAX_CELLS, Cell, count_cells, format_plan, plan_cells
from .schema import experiment_schema, schema_text, write_schema
from .spec import Experiment, parse_experiment

__all__ = [
    "EXECUTORS",
    "ExperimentPlan",
    "ExperimentRun",
    "ExperimentSchema",
    "ExperimentStatus",
    "plan_text",
    "run_file",
    "status_text",
    "ASK_ABOVE",
    "MAX_CELLS",
    "Cell",
    "CellJob",
    "Executor",
    "Experiment",
    "LocalExecutor",
    "Outcome",
    "Progress",
    "Summary",
    "apply_overrides",
    "count_cells",
    "executor_named",
    "experiment_schema",
    "experiment_status",
    "format_plan",
    "format_status",
    "parse_experiment",
    "plan_cells",
    "read_experiment",
    "run_experiment",
    "schema_text",
    "write_schema",
]
