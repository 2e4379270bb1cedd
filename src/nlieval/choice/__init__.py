"""Choice-based evaluation of base language models (METHODS.md section 2): few-shot
prompts with lettered options, the log-likelihood of each option letter, whole runs.

Where to start: :func:`run` with a :class:`RunConfig` (model, tasks, shot counts, seeds)
is the ``nlieval run`` command: it scores every (task, k, seed) into a resumable run
folder and returns its ``results.json``; :func:`plan` shows the data and few-shot draws
a config would use, without a model. Below it: :class:`PromptBuilder` renders the
prompts (:func:`load_template`, :func:`draw_shots`) and :func:`score_items` scores the
items of one :class:`SweepPoint` (:func:`make_sweep_point`) with a backend.

>>> from nlieval.choice import RunConfig
>>> RunConfig("smollm2-135m", ("snli",), shots=(0, 5)).shots
(0, 5)
"""

from __future__ import annotations

from .config import RunConfig
from .prompts import Prompt, PromptBuilder, answer_letter, draw_shots, load_template
from .runner import plan, run
from .scoring import SweepPoint, make_sweep_point, score_items

__all__ = [
    "Prompt",
    "PromptBuilder",
    "RunConfig",
    "SweepPoint",
    "answer_letter",
    "draw_shots",
    "load_template",
    "make_sweep_point",
    "plan",
    "run",
    "score_items",
]
