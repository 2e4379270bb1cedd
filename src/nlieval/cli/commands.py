"""The commands of ``nlieval``, in one table: for each, the module of :mod:`nlieval.cli`
that adds it, its line in ``nlieval --help`` and the examples its own ``--help`` ends
with.

The table imports nothing of the package: ``nlieval --help``, ``nlieval --version`` and a
mistyped command are answered from it alone, and a command imports only its own module
(the families behind the other commands, with their numerical libraries, stay unloaded).
The examples are real commands (tests parse each of them with the full parser).

>>> COMMANDS["grid"].group, COMMANDS["grid"].examples[0].split()[:2]
('across', ['nlieval', 'grid'])
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """A command: ``group`` (the module of :mod:`nlieval.cli` that adds it), ``help`` (its
    line in ``nlieval --help``) and ``examples`` (whole command lines, each a real one)."""

    group: str
    help: str
    examples: tuple[str, ...] = ()


#: Every command, in the order ``nlieval --help`` lists them.
COMMANDS: dict[str, Command] = {
    "run": Command(
        "run",
        "evaluate a language model by option NLL over tasks and shot counts, or an NLI "
        "classifier (a sequence-classification model, or a folder of nlieval train)",
        (
            "nlieval run --model smollm2-135m --task smoke --shots 0,5 --out runs/demo",
            "nlieval run --model smollm2-135m --task snli,mnli_m --sample 200 --shots 0,2 "
            "--seeds 0,1 --out runs/smol",
            "nlieval run --model FacebookAI/roberta-large-mnli --task snli,hans "
            "--out runs/roberta-mnli",
        ),
    ),
    "tasks": Command("tasks", "list the built-in tasks", ("nlieval tasks",)),
    "stats": Command(
        "reports",
        "items, labels, domains, lengths and overlap of benchmarks, one split or several",
        (
            "nlieval stats --task smoke",
            "nlieval stats --task snli,hans --split test",
            "nlieval stats --task scinli,hans --split all",
        ),
    ),
    "report": Command(
        "reports",
        "tables again from saved records (no model loaded)",
        ("nlieval report runs/demo", "nlieval report runs/demo runs/smol --no-write"),
    ),
    "sci-report": Command(
        "reports",
        "macro F1 overall and per domain, per-class F1, confusion matrices (from records)",
        (
            "nlieval sci-report runs/minilm-sci",
            "nlieval sci-report runs/minilm-sci runs/minilm-sci-hyp --plot-dir runs/sci-plots",
        ),
    ),
    "dynamics": Command(
        "analyses",
        "accuracy, gold NLL and ChaosNLI divergences over the checkpoints of a run, Kendall tau",
        (
            "nlieval dynamics runs/smol-dyn",
            "nlieval dynamics runs/smol-dyn-chaos --plot runs/dynamics.png --against majority",
        ),
    ),
    "chaosnli": Command(
        "analyses",
        "ChaosNLI scores of run folders: accuracies, divergences, entropy bins",
        (
            "nlieval chaosnli runs/gemma-chaos",
            "nlieval chaosnli runs/smol-chaos runs/baan2022 --common-items --against original",
            "nlieval chaosnli runs/gemma-chaos --out runs/gemma-chaos-scores --format latex",
        ),
    ),
    "import": Command(
        "analyses",
        "prediction files of models run elsewhere (labels or distributions keyed by item "
        "id: Baan et al. 2022, official ChaosNLI, HANS, jsonl, csv) into a run folder",
        (
            "nlieval import predictions_baan2022/*.jsonl.gz --out runs/baan2022",
            "nlieval import preds.csv --format labels --task snli --model my-classifier "
            "--out runs/mine",
            "nlieval import bert_preds.txt --format hans --task hans --model BERT --out runs/bert",
        ),
    ),
    "chaosnli-import": Command(
        "analyses",
        "the same as import (its former name)",
        (
            "nlieval chaosnli-import predictions_baan2022/*.jsonl.gz --out runs/baan2022",
            "nlieval chaosnli-import preds.jsonl --format jsonl --task chaosnli_snli "
            "--model my-classifier --out runs/mine",
        ),
    ),
    "chaosnli-score": Command(
        "analyses",
        "score a prediction file in the official ChaosNLI format",
        (
            "nlieval chaosnli-score predictions.json --task chaosnli_snli",
            "nlieval chaosnli-score predictions.json --task chaosnli_mnli --json scores.json",
        ),
    ),
    "plots": Command(
        "analyses",
        "PNG plots from saved run folders (no model loaded)",
        (
            "nlieval plots runs/gemma-chaos --out runs/plots",
            "nlieval plots runs/smol-chaos runs/baan2022 --common-items --against original "
            "--out runs/plots-baan",
        ),
    ),
    "grid": Command(
        "across",
        "one table over many run folders (the papers' layouts)",
        (
            "nlieval grid runs/smollm2-135m runs/gemma3-270m --rows model,k --percent --digits 1 "
            "--format latex",
            "nlieval grid runs/smollm2-135m runs/gemma3-270m --metrics acc_original,acc_majority",
            "nlieval grid runs/mm-bert runs/mm-bert-hyp runs/mm-roberta --cols domain "
            "--metrics macro_f1 --reference-by 'files=*hyp*'",
        ),
    ),
    "compare": Command(
        "across",
        "McNemar, paired bootstrap and permutation tests of two runs' items, per seed and "
        "over seeds, corrected for multiple comparisons",
        (
            "nlieval compare runs/smollm2-135m runs/gemma3-270m",
            "nlieval compare runs/bert-snli runs/roberta-snli --correction bh",
            "nlieval compare runs/minilm-sci-hyp runs/minilm-sci --resamples 5000 "
            "--json compare.json",
        ),
    ),
    "breakdown": Command(
        "across",
        "metrics by item field (heuristic, genre, domain, ...)",
        (
            "nlieval breakdown runs/roberta-mnli --by heuristic,gold",
            "nlieval breakdown runs/smol-anli runs/gemma-anli --by round --format csv",
        ),
    ),
    "items": Command(
        "across",
        "items with several models' predictions side by side",
        (
            "nlieval items runs/smollm2-135m runs/gemma3-270m --filter disagree",
            "nlieval items runs/smollm2-135m runs/gemma3-270m --filter majority-changed "
            "--sort entropy --limit 5",
            "nlieval items runs/smollm2-135m runs/gemma3-270m --ids 67610c --full --format json",
        ),
    ),
    "figure": Command(
        "across",
        "accuracy vs shots / size, dynamics across models",
        (
            "nlieval figure shots runs/smollm2-135m runs/gemma3-270m --out runs/shots.png",
            "nlieval figure dynamics runs/smol-dyn runs/gemma-dyn --pattern 'step(\\d+)' "
            "--scale 2097152 --out runs/dynamics.png",
        ),
    ),
    "logic": Command(
        "logic",
        "decide meta-inferences of NLI labels in modal logic K (or KT, S4, S5)",
        (
            "nlieval logic table --no-formulas",
            "nlieval logic check 'Eab & Ebc -> Eac' --frames S4",
            "nlieval logic conclude 'Nab & Ebc' ac",
        ),
    ),
    "infer": Command(
        "logic",
        "inferred test items and their consistency report",
        (
            "nlieval infer build --task snli --limit 100 --out runs/infer-snli",
            "nlieval infer report runs/infer-smol --items runs/infer-snli "
            "--source-run runs/smol-snli",
        ),
    ),
    "build": Command(
        "build",
        "build scientific NLI training data from documents",
        (
            "nlieval build distant --corpus docs/examples/papers.jsonl --out runs/sci-data",
            "nlieval build implicit --corpus docs/examples/papers.jsonl "
            "--classifier runs/sci-clf --threshold 0.4 --out runs/sci-data",
        ),
    ),
    "train": Command(
        "train",
        "fine-tune an encoder (linear head on [CLS]; a multiple-choice head for items with "
        "choices, alpha-NLI) on a task",
        (
            "nlieval train --model minilm --task sick --seeds 3 --out runs/minilm-sick",
            "nlieval train --model minilm --task scinli --train-split dev --sample 1000 "
            "--no-test --out runs/sci-clf",
        ),
    ),
    "contamination": Command(
        "contamination",
        "score test items by n-gram overlap with a corpus; EPG against a run's records",
        (
            "nlieval contamination --task snli --limit 1000 --corpus corpus.jsonl "
            "--out runs/contam.jsonl",
            "nlieval contamination --scores runs/contam.jsonl --run runs/smol-snli "
            "--plot runs/epg.png",
        ),
    ),
    "generate": Command(
        "generate",
        "hypotheses (entailment / neutral / contradiction) written by a chat model, as an NLI task",
        (
            "nlieval generate --model smollm2-135m --task snli --max-sentences 50 "
            "--out runs/gen-smol",
            "nlieval run --model smollm2-135m --task runs/gen-smol/task.yaml "
            "--out runs/gen-smol-run",
        ),
    ),
    "instruct": Command(
        "instruct",
        "ask a chat model for the class of scientific sentence pairs (zero/k-shot)",
        (
            "nlieval instruct --model smollm2-135m --task scinli --limit 40 --balanced-limit "
            "--shots 0,4 --out runs/smol-scinli-instruct",
            "nlieval sci-report runs/smol-scinli-instruct",
        ),
    ),
    "experiment": Command(
        "experiment",
        "a study's grid of runs from one YAML file: plan, run (resumable, retried), status, "
        "and its tables and figures",
        (
            "nlieval experiment plan experiments/lost-in-inference.yaml --set models=smollm2-135m",
            "nlieval experiment run experiments/lost-in-inference.yaml --set models=smollm2-135m "
            "--set limit=5 --out runs/lii",
            "nlieval experiment status runs/lii",
        ),
    ),
    "view": Command(
        "view",
        "a web page of run folders (overview, results grid, item browser with human and "
        "model label distributions) that opens from file:// with no network",
        (
            "nlieval view runs/smollm2-135m runs/gemma3-270m --out runs/site",
            "nlieval view runs/smollm2-135m runs/gemma3-270m --out runs/site --serve --port 8000",
        ),
    ),
}


def epilog(examples: tuple[str, ...]) -> str | None:
    """The end of a command's ``--help``: its examples, one a line (None: none).

    >>> print(epilog(("nlieval tasks",)))
    examples:
      nlieval tasks
    """
    if not examples:
        return None
    return "examples:\n" + "\n".join(f"  {line}" for line in examples)


def no_library_bars() -> None:
    """``--no-progress`` (and ``experiment run`` into a log file): no bar of the
    libraries either (transformers' "Loading weights", the hub's downloads), which would
    print around a one-line error, or escape codes into a log."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when they are imported
    if "transformers" in sys.modules:  # imported already (in-process callers)
        from transformers.utils import logging as hf_logging

        off: Any = hf_logging.disable_progress_bar  # unannotated
        off()
