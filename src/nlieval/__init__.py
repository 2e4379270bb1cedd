"""nlieval: evaluate and study language models through Natural Language Inference.

>>> import nlieval
>>> nlieval.Label.parse("c").value
'contradiction'
"""

from __future__ import annotations

from .backends.base import (
    ClassifierBackend,
    GenerationBackend,
    LogLikelihoodBackend,
    ScoreRequest,
)
from .data import TASKS, DataError, Dataset, TaskSpec, get_task, load_pool, load_task
from .metrics import point_metrics, summarize
from .models import ModelError, resolve_model
from .prompts import PromptBuilder, draw_shots, load_template
from .report import metrics_table, report
from .runner import run
from .runs import RunConfig, RunError, RunFolder
from .scoring import make_sweep_point, score_items
from .types import ALPHA, NLI2, NLI3, SCI4, Item, Label, Record

__version__ = "0.1.0"

__all__ = [
    "ALPHA",
    "NLI2",
    "NLI3",
    "SCI4",
    "TASKS",
    "ClassifierBackend",
    "DataError",
    "Dataset",
    "GenerationBackend",
    "Item",
    "Label",
    "LogLikelihoodBackend",
    "ModelError",
    "PromptBuilder",
    "Record",
    "RunConfig",
    "RunError",
    "RunFolder",
    "ScoreRequest",
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
