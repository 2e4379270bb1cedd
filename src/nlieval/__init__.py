"""nlieval: evaluate and study language models through Natural Language Inference.

The public API is importable from here; submodules load on first use, so that
``import nlieval`` (and the command line) start quickly. Where to start: :func:`run`
with a :class:`RunConfig` (the ``nlieval run`` command) scores a base model on tasks,
:func:`report` (``nlieval report``) reads the run folders back. Each family of studies
has a package whose docstring says where to start in it: :mod:`nlieval.choice`,
:mod:`nlieval.analyses`, :mod:`nlieval.contamination`, :mod:`nlieval.sci`,
:mod:`nlieval.metainference`; below them :mod:`nlieval.runs`, :mod:`nlieval.data` and
:mod:`nlieval.backends`.

>>> import nlieval
>>> nlieval.Label.parse("c").value
'contradiction'
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: The public API, the one list of it: name -> the submodule that defines it.
#: ``__all__``, ``dir(nlieval)`` and the lazy lookup below are all made from it.
_EXPORTS: dict[str, str] = {
    # types: labels, items and records
    "ALPHA": "types",
    "NLI2": "types",
    "NLI3": "types",
    "SCI4": "types",
    "Item": "types",
    "Label": "types",
    "Record": "types",
    # data: benchmarks and user tasks
    "TASKS": "data",
    "DataError": "data",
    "Dataset": "data",
    "TaskSpec": "data",
    "get_task": "data",
    "load_pool": "data",
    "load_task": "data",
    # backends: the model protocols, and model names
    "ClassifierBackend": "backends.base",
    "GenerationBackend": "backends.base",
    "LogLikelihoodBackend": "backends.base",
    "ScoreRequest": "backends.base",
    "ModelError": "backends.weights",
    "resolve_model": "backends.weights",
    # metrics
    "point_metrics": "metrics",
    "summarize": "metrics",
    "mcnemar": "significance",
    "paired_bootstrap": "significance",
    # runs: the run folder
    "RunError": "runs",
    "RunFolder": "runs",
    "metrics_table": "runs",
    # choice: base models scored on lettered options (``nlieval run``)
    "RunConfig": "choice.config",
    "run": "choice.runner",
    "PromptBuilder": "choice.prompts",
    "draw_shots": "choice.prompts",
    "load_template": "choice.prompts",
    "make_sweep_point": "choice.scoring",
    "score_items": "choice.scoring",
    # report (``nlieval report``)
    "report": "reports",
}

__all__ = list(_EXPORTS)


def __dir__() -> list[str]:
    """The public API (PEP 562): ``dir(nlieval)`` lists what ``__all__`` does, not the
    names this module uses to build it.

    >>> import nlieval
    >>> "run" in dir(nlieval) and "importlib" not in dir(nlieval)
    True
    """
    return sorted([*__all__, "__version__"])


def __getattr__(name: str) -> Any:
    """Import a public name's submodule on first use (PEP 562)."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nlieval' has no attribute {name!r}")
