"""Scientific NLI (METHODS.md section 4): the four SciNLI classes (contrasting, reasoning,
entailment, neutral) with prompted chat models, fine-tuned encoders, and training data
built from papers by distant supervision. One module a command:

* :mod:`~nlieval.sci.instruct` (``nlieval instruct``): start with :func:`run_instruct`
  and an :class:`InstructConfig`; answers are mapped to classes by :func:`parse_answer`;
* :mod:`~nlieval.sci.train` (``nlieval train``): ``train.train(TrainConfig(...))``
  fine-tunes an encoder per seed into a run folder (see :class:`TrainConfig`);
* :mod:`~nlieval.sci.report` (``nlieval sci-report``): ``format_report(sci_rows(
  iter_report_records(folders)))``, from saved records of any of these run folders
  (the command: :func:`sci_report` of a :class:`SciReportConfig`);
* :mod:`~nlieval.sci.distant` (``nlieval build distant`` / ``build implicit``):
  :func:`read_corpus`, then :func:`build_distant` for pairs with a linking phrase, or
  :func:`implicit_candidates` and :func:`pseudo_label` for the others; each gives a
  :class:`BuildResult` (``distant.write_task`` saves it as a task); the commands are
  :func:`build_distant_task` and :func:`build_implicit_task` (:mod:`.distant_build`).

Nothing here loads a model when imported: torch and transformers come in when a run starts.

>>> from nlieval.sci import InstructConfig, TrainConfig, parse_answer
>>> InstructConfig("smollm2-135m", ("scinli",), shots=(0, 4)).shots
(0, 4)
>>> TrainConfig("minilm", "scinli").seeds
(0, 1, 2)
>>> parse_answer("Answer: Reasoning.").value
'reasoning'
"""

from __future__ import annotations

from . import distant, instruct, report, train
from .distant import BuildResult, build_distant, implicit_candidates, pseudo_label, read_corpus
from .distant_build import (
    DistantConfig,
    ImplicitConfig,
    LinkingPhrasesConfig,
    build_distant_task,
    build_implicit_task,
    linking_phrase_table,
)
from .instruct import InstructConfig, instruct_backend, parse_answer, run_instruct
from .report import (
    CONFUSION,
    SciReportConfig,
    format_confusion,
    format_report,
    iter_report_records,
    sci_report,
    sci_rows,
    score_metrics,
)
from .train import TrainConfig, TrainResult, format_results

# The function: `sci.train` is the module.
from .train import train as train_classifier

__all__ = [
    "BuildResult",
    "CONFUSION",
    "InstructConfig",
    "TrainConfig",
    "TrainResult",
    "build_distant",
    "distant",
    "format_confusion",
    "format_report",
    "implicit_candidates",
    "instruct",
    "iter_report_records",
    "parse_answer",
    "pseudo_label",
    "read_corpus",
    "report",
    "run_instruct",
    "sci_rows",
    "score_metrics",
    "train",
    "train_classifier",
    "format_results",
    "instruct_backend",
    # the settings of the build and sci-report commands, and what each does
    "DistantConfig",
    "LinkingPhrasesConfig",
    "ImplicitConfig",
    "SciReportConfig",
    "build_distant_task",
    "build_implicit_task",
    "linking_phrase_table",
    "sci_report",
]
