"""Benchmark loading: every supported benchmark, and user data, read into :class:`Item`.

Where to start: :func:`load_task` reads a task (a built-in name of :data:`TASKS`, as
``nlieval tasks`` lists them, or a task YAML file) into a :class:`Dataset`, and
:func:`load_pool` its few-shot pool; :func:`get_task` gives the :class:`TaskSpec`
without reading anything. ``nlieval stats`` prints a task's items, labels, lengths
and overlaps (:mod:`.stats`).

Files are found by name anywhere under a data directory (``--data-dir`` or the
``NLIEVAL_DATA_DIR`` environment variable); each task lists, per split, the official
distribution files and the known variants, and the first one found is read. ``.gz``
files are decompressed on the fly. Without a data directory, tasks with a Hugging Face
hub copy are loaded through ``datasets`` (online only).

Filtering is never silent: every item left out is counted, by reason, in
:attr:`Dataset.dropped`. Malformed input raises :class:`DataError`, whose one-line
message names the file, the line and the field; with ``skip_bad=True`` bad lines are
skipped instead, logged and counted in :attr:`Dataset.skipped_bad`.

Formats follow the file extension: ``.jsonl`` (one JSON object a line), ``.csv``
(standard CSV quoting), ``.tsv``/``.txt`` (tab-separated, read verbatim without quote
processing, as the SNLI/MNLI/GLUE/SICK releases need), each optionally ``.gz``.
User data comes in through a task YAML file, or as a data file read with the default
fields (see :func:`get_task`).

The code is split by concern; this package re-exports the public names:

- :mod:`.dataset`: :class:`Dataset`, :func:`seeded_rng`, :func:`sample_items`
  (:class:`DataError` is the ground's: :mod:`nlieval.ground`);
- :mod:`.parsers`: row parsers (:class:`FieldMap`, :func:`parse_label`);
- :mod:`.readers`: rows of jsonl/csv/tsv files, zip members and Arrow streams;
- :mod:`.rules`: :class:`TaskSpec` and where its files are;
- :mod:`.tasks`: the built-in :data:`TASKS`;
- :mod:`.taskyaml`: user tasks (:func:`make_parser`, :func:`write_task_yaml`);
- :mod:`.load`: :func:`get_task`, :func:`load_task`, :func:`load_pool`,
  :func:`same_data`, :func:`read_items`, :func:`resolve_data_dir`;
- :mod:`.selection`: :class:`ItemSelection` (``--limit`` / ``--sample``, in every command)
  and :func:`label_imbalance` (when a selection's labels are far from the task's);
- :mod:`.source`: :class:`TaskFiles`, :class:`TaskSource` (``--data-dir``, ``--split``,
  ``--skip-bad``, ``--task``, in every command that reads tasks);
- :mod:`.stats`: dataset statistics.

>>> ds = load_task("smoke")
>>> len(ds.items), ds.labels[0].value
(48, 'entailment')
"""

from __future__ import annotations

from ..ground import DataError
from .dataset import Dataset, sample_items, seeded_rng
from .fingerprint import items_fingerprint, text_fingerprint
from .load import (
    ENV_DATA_DIR,
    get_task,
    get_tasks,
    load_pool,
    load_task,
    read_items,
    resolve_data_dir,
    same_data,
)
from .parsers import FieldMap, parse_label
from .prompt_files import (
    PromptFile,
    pair_fields,
    read_prompt,
    read_prompt_file,
    read_solved_examples,
    shipped_names,
    shipped_prompt,
)
from .readers import format_of, text_rows
from .rules import TaskSpec
from .selection import ItemSelection, label_imbalance, warn_if_short
from .source import (
    DATA_DIR_HELP,
    SPLIT_HELP,
    DataDir,
    TaskFiles,
    TaskSource,
    TasksToRead,
    data_dir_setting,
    format_task_list,
    split_setting,
    task_at,
    task_setting,
    tasks_setting,
)
from .stats import fleiss_kappa, label_change_share, task_stats
from .tasks import TASKS
from .taskyaml import make_parser, write_task_yaml
from .templates import TemplateSource, read_template_file

__all__ = [
    "format_of",
    "text_rows",
    "PromptFile",
    "pair_fields",
    "read_prompt",
    "read_prompt_file",
    "read_solved_examples",
    "shipped_names",
    "shipped_prompt",
    "fleiss_kappa",
    "label_change_share",
    "TemplateSource",
    "read_template_file",
    "get_tasks",
    "items_fingerprint",
    "text_fingerprint",
    "ItemSelection",
    "label_imbalance",
    "DATA_DIR_HELP",
    "data_dir_setting",
    "split_setting",
    "task_setting",
    "tasks_setting",
    "DataDir",
    "TaskFiles",
    "SPLIT_HELP",
    "task_at",
    "TaskSource",
    "TasksToRead",
    "format_task_list",
    "task_stats",
    "ENV_DATA_DIR",
    "TASKS",
    "DataError",
    "Dataset",
    "FieldMap",
    "TaskSpec",
    "get_task",
    "load_pool",
    "load_task",
    "make_parser",
    "parse_label",
    "read_items",
    "resolve_data_dir",
    "same_data",
    "sample_items",
    "seeded_rng",
    "warn_if_short",
    "write_task_yaml",
]
