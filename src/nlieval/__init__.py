"""nlieval: evaluate and study language models through Natural Language Inference.

The public API is importable from here; submodules load on first use, so that
``import nlieval`` (and the command line) start quickly.

>>> import nlieval
>>> nlieval.Label.parse("c").value
'contradiction'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name -> submodule that defines it
_EXPORTS = {
    "ClassifierBackend": "backends.base",
    "GenerationBackend": "backends.base",
    "LogLikelihoodBackend": "backends.base",
    "ScoreRequest": "backends.base",
    "TASKS": "data",
    "Dataset": "data",
    "DataError": "data",
    "TaskSpec": "data",
    "get_task": "data",
    "load_pool": "data",
    "load_task": "data",
    "point_metrics": "metrics",
    "summarize": "metrics",
    "ModelError": "backends.weights",
    "resolve_model": "backends.weights",
    "PromptBuilder": "choice.prompts",
    "draw_shots": "choice.prompts",
    "load_template": "choice.prompts",
    "metrics_table": "runs",
    "report": "report",
    "run": "choice.runner",
    "RunConfig": "choice.config",
    "RunError": "runs",
    "RunFolder": "runs",
    "make_sweep_point": "choice.scoring",
    "score_items": "choice.scoring",
    "ALPHA": "types",
    "NLI2": "types",
    "NLI3": "types",
    "SCI4": "types",
    "Item": "types",
    "Label": "types",
    "Record": "types",
}

__all__ = [
    "ALPHA",
    "ClassifierBackend",
    "DataError",
    "Dataset",
    "GenerationBackend",
    "Item",
    "Label",
    "LogLikelihoodBackend",
    "ModelError",
    "NLI2",
    "NLI3",
    "PromptBuilder",
    "Record",
    "RunConfig",
    "RunError",
    "RunFolder",
    "SCI4",
    "ScoreRequest",
    "TASKS",
    "TaskSpec",
    "draw_shots",
    "get_task",
    "load_pool",
    "load_task",
    "load_template",
    "make_sweep_point",
    "metrics_table",
    "point_metrics",
    "report",
    "resolve_model",
    "run",
    "score_items",
    "summarize",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nlieval' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .backends.base import (
        ClassifierBackend,
        GenerationBackend,
        LogLikelihoodBackend,
        ScoreRequest,
    )
    from .backends.weights import ModelError, resolve_model
    from .choice.config import RunConfig
    from .choice.prompts import PromptBuilder, draw_shots, load_template
    from .choice.runner import run
    from .choice.scoring import make_sweep_point, score_items
    from .data import TASKS, DataError, Dataset, TaskSpec, get_task, load_pool, load_task
    from .metrics import point_metrics, summarize
    from .report import metrics_table, report
    from .runs import RunError, RunFolder
    from .types import ALPHA, NLI2, NLI3, SCI4, Item, Label, Record
