"""The settings of ``nlieval logic table / check / conclude`` and ``nlieval infer build /
report``, and what each command does, as one function of its settings.

:class:`ReadingsSettings` (``--reading``, ``--frames``) is declared once for every
command that decides readings.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..data import ItemSelection, TaskFiles, task_setting
from ..runs import OutputFolder, iter_run_records
from ..settings import csv_list, setting, table_format
from ..types import Item
from . import logic
from .inferred import PATTERNS, build, consistency_report, read_task, source_coverage, write_task


@dataclass(frozen=True, kw_only=True)
class ReadingsSettings:
    """The readings a command decides: MC, SC, EI and the YAML files of ``readings``,
    each over its own frame class or over ``frames``.

    >>> sorted(ReadingsSettings().merged())
    ['EI', 'MC', 'SC']
    """

    readings: tuple[str, ...] = setting(
        (),
        help="YAML file of a reading (name, E, C, N, optional description and frames); added "
        "to MC, SC, EI, or replacing the one of the same name",
        names=("--reading",),
        action="extend",
        nargs="+",
        metavar="FILE",
    )
    frames: str | None = setting(
        None,
        help="decide every reading over this frame class: K (any relation), KT (reflexive), "
        "S4 (reflexive, transitive), S5 (equivalence) [each reading's own; K for MC, SC, EI]",
        choices=tuple(logic.FRAMES),
    )

    def merged(self) -> dict[str, logic.Reading]:
        """The readings by name (:func:`~nlieval.metainference.logic.merge_readings`)."""
        return logic.merge_readings(self.readings, frames=self.frames)


@dataclass(frozen=True)
class LogicTableConfig(ReadingsSettings):
    """What ``nlieval logic table`` is asked (see :func:`decide_table`)."""

    format: str = setting("text", help="", choices=("text", "json"))
    formulas: bool = setting(
        True,
        help="leave out the short equivalent formula of each contingent cell (found by "
        "search, about 10 s)",
        names=("--no-formulas",),
    )
    citations: bool = setting(
        False,
        help="add the column paper: which earlier paper states each relation (the "
        "meta-inference study's Table 2)",
    )


@dataclass(frozen=True)
class LogicCheckConfig(ReadingsSettings):
    """What ``nlieval logic check`` is asked (see :func:`check_relation`)."""

    relation: str = setting(
        help="premises -> conclusion over label atoms (Eab, ~Cba, ...)", positional=True
    )


@dataclass(frozen=True)
class LogicConcludeConfig(ReadingsSettings):
    """What ``nlieval logic conclude`` is asked (see :func:`conclude_target`)."""

    inputs: str = setting(help="input label atoms, e.g. 'Eab & Cac'", positional=True)
    target: str = setting(help="the target pair's two sentence variables, e.g. bc", positional=True)
    format: str = setting(
        "text",
        help="json: a list of {reading, inferred, allowed} objects, one per reading [text]",
        choices=("text", "json"),
    )


def decide_table(config: LogicTableConfig) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """The rows of ``nlieval logic table`` and the readings they were decided under.

    >>> rows, readings = decide_table(LogicTableConfig(formulas=False))
    >>> sorted(readings), len(rows) > 0
    (['EI', 'MC', 'SC'], True)
    """
    readings = config.merged()
    return logic.table(readings, formulas=config.formulas), readings


def check_relation(config: LogicCheckConfig) -> list[Any]:
    """``nlieval logic check``: the meta-inference under every reading.

    >>> [c.reading for c in check_relation(LogicCheckConfig(relation="Cab -> Cba"))]
    ['MC', 'SC', 'EI']
    """
    return list(logic.check(config.relation, config.merged()))


def conclude_target(config: LogicConcludeConfig) -> list[Any]:
    """``nlieval logic conclude``: the labels each reading allows for the target pair.

    >>> [c.allowed for c in conclude_target(LogicConcludeConfig(inputs="Cab", target="ba"))][1]
    ('C',)
    """
    return list(logic.conclusions(config.inputs, config.target, config.merged()))


@dataclass(frozen=True)
class InferBuildConfig(OutputFolder, TaskFiles, ItemSelection):
    """What ``nlieval infer build`` is asked (see :func:`build_inferred`)."""

    task: str = task_setting("(labels E/N/C)")
    generated: str | None = setting(
        None, help="task of generated items (b, c) for the chain patterns"
    )
    patterns: tuple[str, ...] = setting(
        PATTERNS, help=f"comma-separated patterns [{','.join(PATTERNS)}]", parse=csv_list
    )
    max_per_pattern: int | None = setting(None, help="seeded sample per pattern")
    seed: int = setting(0, help="seed of the sample")
    name: str = setting("inferred", help="task name of the items")


def build_inferred(config: InferBuildConfig) -> dict[str, Any]:
    """What ``nlieval infer build`` does: the inferred items of the chosen items of the
    task (and of the generated task's), written as a task folder to ``out``. Returns
    ``items`` (the source items used), ``task``/``split`` (their task), ``made`` (the
    inferred items), ``counts`` (per pattern) and ``yaml`` (the task file).

    >>> import tempfile
    >>> got = build_inferred(InferBuildConfig(task="smoke", out=tempfile.mkdtemp()))
    >>> len(got["made"]) > 0, got["yaml"].name
    (True, 'task.yaml')
    """
    ds = config.load(config.task, config.split)
    items = config.select_items(ds.items, f"{config.task} {ds.split}")
    generated: tuple[Item, ...] = ()
    if config.generated:
        generated = config.load(config.generated).items
    made = build(items, generated, config.patterns, config.max_per_pattern, config.seed)
    yaml_path = write_task(made, config.out, name=config.name, overwrite=config.overwrite)
    counts = Counter(it.meta["pattern"] for it in made)
    return {
        "items": items,
        "task": ds.task,
        "split": ds.split,
        "made": made,
        "counts": dict(counts),
        "yaml": yaml_path,
    }


@dataclass(frozen=True)
class InferReportConfig(ReadingsSettings):
    """What ``nlieval infer report`` is asked (see :func:`inferred_consistency`)."""

    run: str = setting(help="run folder of `nlieval run --task ITEMS/task.yaml`", positional=True)
    items: str = setting(help="folder written by `infer build`")
    source_run: str | None = setting(None, help="run on the source items (for filtering)")
    format: str = table_format("json")


def inferred_consistency(config: InferReportConfig) -> dict[str, Any]:
    """What ``nlieval infer report`` does: the consistency ``rows`` of the run's
    predictions on the inferred items, the ``readings`` decided, and ``coverage``
    ((matched, needed) source items with a record of the run's models, with
    ``source_run``; else None)."""
    items = read_task(config.items)
    records = list(iter_run_records([config.run]))
    sources = list(iter_run_records([config.source_run])) if config.source_run else None
    readings = config.merged()
    try:
        rows = consistency_report(records, items, sources, readings)
    except ValueError as err:  # an item's provenance is missing: name the file too
        raise ValueError(f"{config.items}: {err}") from None
    coverage = None
    if sources is not None:
        models = {(r.model, r.checkpoint) for r in records}
        coverage = source_coverage(items, sources, models)
    return {"rows": rows, "readings": readings, "coverage": coverage}
