"""The commands of nlieval, in one table: each declared once, with its line in
``nlieval --help``, the examples its own ``--help`` ends with, the settings classes its
flags come from, and, for a command an experiment file may name, what its block writes
(a run folder per cell) or what its output writes into the report.

Every reader reads this table: the command line (:mod:`nlieval.cli`) builds its parsers
from it, an experiment (:mod:`nlieval.experiments`) its blocks, its outputs and its
schema, and the site of ``nlieval view`` the command that draws a figure or prints a
table (:func:`command_line`).

The table imports nothing: it is on the ground floor, below every reader, and names what
lies above it by reference, ``"room:Name"`` (a name the room's front door exports; the
experiments' own writers by their module, ``"experiments.report:write_grid"``), loaded
when a reader asks for it (:func:`load`). So ``nlieval --help``, ``--version`` and a
mistyped command are answered from the table alone, and a command loads only the family
behind it. ``tests/test_layers.py`` checks that each reference is one its readers may
take.

>>> COMMANDS["grid"].group, COMMANDS["grid"].examples[0].split()[:2]
('across', ['nlieval', 'grid'])
>>> TABLE["grid"].output.write, TABLE["run"].block.classes
('experiments.report:write_grid', ('choice:RunConfig',))
>>> command_line("infer-report")
['nlieval', 'infer', 'report']
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Block:
    """What a block of an experiment file runs for a cell: ``classes``, the settings
    classes a block's settings build (the first holds ``model``), and ``write``, the
    function ``(configs, folder) -> None`` that writes the cell's folder."""

    classes: tuple[str, ...]
    write: str
    #: the setting a model's name goes to (None: the command takes no model, and makes a
    #: cell per matrix entry)
    model_field: str | None = "model"
    #: settings without which a block makes no cell (the file leaves that part of the
    #: study out until one is given, e.g. ``--set contamination.corpus=PATH``)
    optional_input: tuple[str, ...] = ()


@dataclass(frozen=True)
class Output:
    """What an output of an experiment file writes into its report: ``write``, the
    function ``(job) -> (files, notes)`` (:class:`nlieval.experiments.report.Job`), from
    the command's last settings class built from the output's options."""

    write: str
    #: the fields of the settings class the report sets itself (never an option)
    own: tuple[str, ...]
    #: False: the output reads data files or the library alone (a dataset table, a list
    #: of phrases, the logic table), so it is written whatever its blocks' cells are
    reads_cells: bool = True
    #: the options that name a block (the cells of which the output reads)
    block_options: tuple[str, ...] = ()


@dataclass(frozen=True)
class Command:
    """A command: ``group`` (the module of :mod:`nlieval.cli` that adds it; None: no
    command line of its own, an output kind alone), ``help`` (its line in
    ``nlieval --help``, or in its parent's), ``examples`` (whole command lines, each a
    real one), ``settings`` (references to the classes its flags come from, in the
    order ``--help`` lists them), ``words`` (its command line after ``nlieval`` when that
    is not its name: ``("infer", "report")``), and what a block or an output of an
    experiment file of this name does (None: the file cannot name it so), and the
    library function whose text it prints (``function``), when that is all it does."""

    group: str | None
    help: str = ""
    examples: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    block: Block | None = None
    output: Output | None = None
    #: the library function ``(config) -> str`` whose text the command prints (or
    #: writes to its ``--out``), called with its last settings class: a command that
    #: names one has no code in :mod:`nlieval.cli` (its group's module adds the others)
    function: str = ""
    #: settings of its classes that the command has no use for (an option of an engine
    #: that its work never reads): neither a flag nor a key of its block
    unused: tuple[str, ...] = ()


#: Every command, in the order ``nlieval --help`` lists them; after them the commands of
#: a parent command (``infer report``) and the output kinds with no command line.
TABLE: dict[str, Command] = {
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
        settings=("choice:RunConfig", "runs:OutputFolder"),
        block=Block(("choice:RunConfig",), "experiments.commands:write_run"),
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
        settings=("data:TasksToRead",),
        function="data:task_stats",
        # Dataset tables, written in Markdown and LaTeX.
        output=Output("experiments.report:write_stats", ("format",), reads_cells=False),
    ),
    "report": Command(
        "reports",
        "tables again from saved records (no model loaded)",
        ("nlieval report runs/demo", "nlieval report runs/demo runs/smol --no-write"),
        settings=("reports:ReportConfig",),
    ),
    "sci-report": Command(
        "reports",
        "macro F1 overall and per domain, per-class F1, confusion matrices (from records)",
        (
            "nlieval sci-report runs/minilm-sci",
            "nlieval sci-report runs/minilm-sci runs/minilm-sci-hyp --plot-dir runs/sci-plots",
        ),
        settings=("sci:SciReportConfig",),
        output=Output("experiments.report:write_sci_report", ("runs", "plot_dir", "json")),
    ),
    "dynamics": Command(
        "analyses",
        "accuracy, gold NLL and ChaosNLI divergences over the checkpoints of a run, Kendall tau",
        (
            "nlieval dynamics runs/smol-dyn",
            "nlieval dynamics runs/smol-dyn-chaos --plot runs/dynamics.png --against majority",
        ),
        settings=("analyses:DynamicsConfig",),
        output=Output("experiments.report:write_dynamics", ("run", "plot", "entropy_plot")),
    ),
    "chaosnli": Command(
        "analyses",
        "ChaosNLI scores of run folders: accuracies, divergences, entropy bins",
        (
            "nlieval chaosnli runs/gemma-chaos",
            "nlieval chaosnli runs/smol-chaos runs/baan2022 --common-items --against original",
            "nlieval chaosnli runs/gemma-chaos --out runs/gemma-chaos-scores --format latex",
        ),
        settings=("analyses:ChaosnliConfig",),
        # `write` puts chaosnli.json into the first cell: the report writes its own.
        output=Output("experiments.report:write_chaosnli", ("runs", "out", "write")),
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
        settings=("analyses:ImportConfig", "runs:OutputFolder"),
        block=Block(("analyses:ImportConfig",), "experiments.commands:write_import"),
    ),
    "chaosnli-import": Command(
        "analyses",
        "the same as import (its former name)",
        (
            "nlieval chaosnli-import predictions_baan2022/*.jsonl.gz --out runs/baan2022",
            "nlieval chaosnli-import preds.jsonl --format jsonl --task chaosnli_snli "
            "--model my-classifier --out runs/mine",
        ),
        settings=("analyses:ImportConfig", "runs:OutputFolder"),
    ),
    "chaosnli-score": Command(
        "analyses",
        "score a prediction file in the official ChaosNLI format",
        (
            "nlieval chaosnli-score predictions.json --task chaosnli_snli",
            "nlieval chaosnli-score predictions.json --task chaosnli_mnli --json scores.json",
        ),
        settings=("analyses:ChaosnliScoreConfig",),
    ),
    "plots": Command(
        "analyses",
        "PNG plots from saved run folders (no model loaded)",
        (
            "nlieval plots runs/gemma-chaos --out runs/plots",
            "nlieval plots runs/smol-chaos runs/baan2022 --common-items --against original "
            "--out runs/plots-baan",
        ),
        settings=("analyses:PlotsConfig",),
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
        settings=("runs:RunFolders", "reports:GridConfig"),
        function="reports:grid_table",
        output=Output("experiments.report:write_grid", ("runs", "format", "out")),
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
        settings=("reports:CompareConfig",),
        output=Output("experiments.report:write_compare", ("a", "b", "json")),
    ),
    "breakdown": Command(
        "across",
        "metrics by item field (heuristic, genre, domain, ...)",
        (
            "nlieval breakdown runs/roberta-mnli --by heuristic,gold",
            "nlieval breakdown runs/smol-anli runs/gemma-anli --by round --format csv",
        ),
        settings=("runs:RunFolders", "reports:BreakdownConfig"),
        output=Output("experiments.report:write_breakdown", ("runs", "format", "out")),
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
        settings=("runs:RunFolders", "reports:ItemsConfig"),
        output=Output("experiments.report:write_items", ("runs", "out")),
    ),
    "figure": Command(
        "across",
        "accuracy vs shots / size, dynamics across models",
        (
            "nlieval figure shots runs/smollm2-135m runs/gemma3-270m --out runs/shots.png",
            "nlieval figure dynamics runs/smol-dyn runs/gemma-dyn --pattern 'step(\\d+)' "
            "--scale 2097152 --out runs/dynamics.png",
        ),
        settings=("runs:RunFolders", "reports:FigureConfig"),
        # An output names which figure with `figure:` (the command's positional kind).
        output=Output(
            "experiments.report:write_figure", ("kind", "runs", "out", "baseline", "positions")
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
        settings=("sci:TrainConfig", "runs:OutputFolder"),
        block=Block(("sci:TrainConfig",), "experiments.commands:write_train"),
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
        settings=("contamination:ContaminationConfig",),
        block=Block(
            ("contamination:ContaminationConfig",),
            "experiments.commands:write_contamination",
            model_field=None,
            optional_input=("corpus", "scores"),
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
        settings=("metainference:GenerateConfig", "backends:ChatModel", "runs:OutputFolder"),
        block=Block(
            ("backends:ChatModel", "metainference:GenerateConfig"),
            "experiments.commands:write_generate",
        ),
        # the chat engine has a prefix cache of its own: it reads no prefix_attention
        unused=("prefix_attention",),
    ),
    "instruct": Command(
        "instruct",
        "ask a chat model for the class of scientific sentence pairs (zero/k-shot)",
        (
            "nlieval instruct --model smollm2-135m --task scinli --limit 40 --balanced-limit "
            "--shots 0,4 --out runs/smol-scinli-instruct",
            "nlieval sci-report runs/smol-scinli-instruct",
        ),
        settings=("sci:InstructConfig", "runs:OutputFolder"),
        block=Block(("sci:InstructConfig",), "experiments.commands:write_instruct"),
        unused=("prefix_attention",),
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
        settings=("runs:RunFolders", "view:ViewConfig"),
    ),
    # The commands of a parent command.
    "logic-table": Command(
        "logic",
        "every built-in relation under every reading",
        ("nlieval logic table --no-formulas", "nlieval logic table --format json"),
        settings=("metainference:LogicTableConfig",),
        words=("logic", "table"),
        # The readings' logic table: its aligned text and its rows as JSON.
        output=Output("experiments.report:write_logic_table", ("format",), reads_cells=False),
    ),
    "infer-build": Command(
        "logic",
        "build inferred items from a labelled NLI task",
        (
            "nlieval infer build --task snli --limit 100 --max-per-pattern 25 "
            "--out runs/infer-snli",
            "nlieval run --model smollm2-135m --task runs/infer-snli/task.yaml --shots 0 "
            "--out runs/infer-smol",
        ),
        settings=("metainference:InferBuildConfig",),
        words=("infer", "build"),
        block=Block(
            ("metainference:InferBuildConfig",),
            "experiments.commands:write_infer_build",
            model_field=None,
        ),
    ),
    "infer-report": Command(
        "logic",
        "consistency of a run's predictions on inferred items",
        (
            "nlieval infer report runs/infer-smol --items runs/infer-snli",
            "nlieval infer report runs/infer-smol --items runs/infer-snli "
            "--source-run runs/smol-snli --format json",
        ),
        settings=("metainference:InferReportConfig",),
        words=("infer", "report"),
        # It reads the inferred items of its `items` block's one cell and the source
        # items' run of the same model in its `sources` block.
        output=Output(
            "experiments.report:write_infer_report",
            ("run", "items", "source_run", "format"),
            block_options=("items", "sources"),
        ),
    ),
    # Output kinds with no command line of their own.
    "chaosnli-figure": Command(
        None,
        settings=("analyses:ChaosnliFigureConfig",),
        # Figures from the ChaosNLI records: accuracy by human-label entropy, or the final
        # models' divergence with its chance, human and reference lines. `against` is the
        # all-correct subset's label, which no figure draws: refused.
        output=Output(
            "experiments.report:write_chaosnli_figure",
            ("runs", "out", "write", "plot", "format", "against"),
        ),
    ),
    "linking-phrases": Command(
        None,
        settings=("sci:LinkingPhrasesConfig",),
        # The linking phrases of distant supervision, in Markdown and LaTeX.
        output=Output("experiments.report:write_linking_phrases", ("format",), reads_cells=False),
    ),
    "epg": Command(
        None,
        settings=("contamination:ContaminationConfig",),
        words=("contamination",),
        # An epg output reads the scores of its `scores` block: the scan's own settings
        # are that block's.
        output=Output(
            "experiments.report:write_epg",
            (
                *("corpus", "tasks", "n", "tokenizer", "text_field", "fmt", "workers", "ray"),
                *("shard_mb", "out", "scores", "run", "plot", "limit", "sample", "split"),
                *("sample_seed", "balanced_limit", "data_dir"),
            ),
            block_options=("scores",),
        ),
    ),
}

#: The commands of ``nlieval --help``, in its order: those of one word.
COMMANDS: dict[str, Command] = {
    name: c for name, c in TABLE.items() if c.group is not None and len(c.words) <= 1
}

#: The commands a block of an experiment file may name, in the order its schema and its
#: errors list them (each one of :data:`TABLE` with a ``block``: a test checks it).
BLOCKS = ("run", "instruct", "train", "generate", "import", "infer-build", "contamination")

#: The kinds of output of an experiment file, in the order its schema and its errors
#: list them (each one of :data:`TABLE` with an ``output``: a test checks it).
OUTPUTS = (
    *("grid", "figure", "compare", "breakdown", "items", "chaosnli", "dynamics"),
    *("chaosnli-figure", "sci-report", "infer-report", "stats", "linking-phrases"),
    *("logic-table", "epg"),
)


def command_line(name: str) -> list[str]:
    """The first words of command ``name``'s command line (KeyError: no such command).

    >>> command_line("grid"), command_line("epg")
    (['nlieval', 'grid'], ['nlieval', 'contamination'])
    """
    return ["nlieval", *(TABLE[name].words or (name,))]


@functools.cache
def load(ref: str) -> Any:
    """What the reference ``ref`` (``"room:Name"`` or ``"room.module:name"``) names,
    imported on first use (the one place a reference of the table becomes an object).

    >>> load("choice:RunConfig").__name__
    'RunConfig'
    """
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(f"nlieval.{module}"), name)


def settings_of(name: str) -> tuple[type[Any], ...]:
    """The settings classes of command ``name``, loaded (KeyError: no such command)."""
    return tuple(load(ref) for ref in TABLE[name].settings)
