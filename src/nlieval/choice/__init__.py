"""Choice-based evaluation of base language models (METHODS.md section 2): few-shot
prompts with lettered options, the log-likelihood of each option letter, whole runs.

>>> from nlieval.choice import RunConfig
>>> RunConfig("smollm2-135m", ("snli",), shots=(0, 5)).shots
(0, 5)
"""

from __future__ import annotations

from .config import RunConfig
from .prompts import Prompt, PromptBuilder, answer_letter, draw_shots, load_template
from .runner import default_backend, plan, run
from .scoring import SweepPoint, make_sweep_point, score_items

__all__ = [
    "Prompt",
    "PromptBuilder",
    "RunConfig",
    "SweepPoint",
    "answer_letter",
    "default_backend",
    "draw_shots",
    "load_template",
    "make_sweep_point",
    "plan",
    "run",
    "score_items",
]
