"""The settings of the ``nlieval experiment`` commands, and the function each calls.

>>> ExperimentRun(file="e.yaml", out="runs/x").executor
'local'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..data import DataDir
from ..settings import csv_list, out_setting, positive_int, setting
from .commands import takes
from .driver import (
    Executor,
    LocalExecutor,
    Progress,
    Summary,
    experiment_status,
    format_status,
    run_experiment,
    said_as_set,
)
from .overrides import apply_overrides, read_experiment
from .plan import ASK_ABOVE, format_plan, plan_cells
from .ray_executor import RayExecutor
from .schema import schema_text
from .slurm import SlurmExecutor
from .spec import Experiment

#: The executors of ``--executor``.
EXECUTORS = ("local", "slurm", "ray")


def executor_named(
    name: str,
    out: str | Path = ".",
    partition: str | None = None,
    address: str | None = None,
    gpus: tuple[str, ...] = (),
    array: bool = False,
    array_parallelism: int | None = None,
) -> Executor:
    """The executor ``name``: ``local``, ``slurm`` (its job files under ``out/slurm``;
    with ``array`` one job array per resource shape) or ``ray`` (the cluster at
    ``address``); another, or one whose engine is not installed or not reachable, is
    one line.

    >>> executor_named("dask")
    Traceback (most recent call last):
    ValueError: --executor dask: not available in this version (the executors: local, slurm, ray)
    """
    if name == "local":
        return LocalExecutor(gpus=gpus)
    if name == "slurm":
        return SlurmExecutor(
            Path(out) / "slurm",
            partition=partition,
            array=array,
            array_parallelism=array_parallelism,
        )
    if name == "ray":
        return RayExecutor(address)
    raise ValueError(
        f"--executor {name}: not available in this version (the executors: {', '.join(EXECUTORS)})"
    )


def _file() -> str:
    return setting(help="the experiment file (YAML)", positional=True)  # type: ignore[no-any-return]


def _overrides() -> tuple[str, ...]:
    return setting(  # type: ignore[no-any-return]
        (),
        help="KEY=VALUE: models=a,b (also tasks, shots, seeds, checkpoints) replaces that axis "
        "of every matrix entry; BLOCK.KEY=VALUE one block's setting; KEY=VALUE that setting "
        "of every block that has it (repeatable)",
        names=("--set",),
        action="append",
        metavar="KEY=VALUE",
    )


def _yes() -> bool:
    return setting(False, help=f"go on with more than {ASK_ABOVE} cells")  # type: ignore[no-any-return]


@dataclass(frozen=True, kw_only=True)
class ExperimentPlan(DataDir):
    """What ``nlieval experiment plan`` shows: :func:`plan_text`. ``data_dir``: where
    every cell that reads data reads it (:func:`read_with_data_dir`)."""

    file: str = _file()
    set: tuple[str, ...] = _overrides()
    yes: bool = _yes()
    estimate: bool = setting(
        True, help="do not read the data to estimate records and words", names=("--no-estimate",)
    )


@dataclass(frozen=True, kw_only=True)
class ExperimentRun(DataDir):
    """What ``nlieval experiment run`` does: :func:`run_file`. ``data_dir``: as
    :class:`ExperimentPlan`'s."""

    file: str = _file()
    out: str = out_setting("the experiment folder (cells/, state/, report/, experiment.json)")
    set: tuple[str, ...] = _overrides()
    yes: bool = _yes()
    executor: str = setting(
        "local",
        help="what runs the cells: local (this process, one after another), slurm (a job "
        "per cell through submitit, with each model's resources) or ray (a task per cell "
        "on a Ray cluster)",
        choices=EXECUTORS,
    )
    partition: str | None = setting(None, help="with --executor slurm: the partition")
    slurm_array: bool = setting(
        False,
        help="with --executor slurm: the ready cells of one resource shape as one job array "
        "(status shows JOBID_INDEX) [a job per cell]",
    )
    array_parallelism: int | None = setting(
        None,
        help="with --slurm-array: at most N tasks of an array running at once [Slurm's limit]",
        parse=positive_int,
        metavar="N",
    )
    gpus: tuple[str, ...] = setting(
        (),
        help="with --executor local: GPU ids, e.g. 0,1,2,3: one worker process per GPU "
        "(CUDA_VISIBLE_DEVICES), each running one cell at a time [one cell after another]",
        parse=csv_list,
    )
    address: str | None = setting(
        None, help="with --executor ray: the cluster's address, e.g. 10.0.0.1:6379 [RAY_ADDRESS]"
    )
    quiet: bool = setting(False, help="no line per cell and no progress bar: the summary alone")
    json: bool = setting(
        False,
        help="the summary as JSON on standard output (the lines per cell go to standard error)",
    )


@dataclass(frozen=True, kw_only=True)
class ExperimentStatus:
    """What ``nlieval experiment status`` shows: :func:`status_text`."""

    folder: str = setting(help="an experiment folder", positional=True)


@dataclass(frozen=True, kw_only=True)
class ExperimentSchema:
    """Where ``nlieval experiment schema`` writes: :func:`nlieval.experiments.schema_text`."""

    out: str | None = out_setting("write the schema here instead of printing it", None)


def read_with_data_dir(cfg: ExperimentPlan | ExperimentRun) -> Experiment:
    """The experiment file of ``cfg`` with its ``--set`` overrides and ``--data-dir`` as
    ``data_dir`` of every block whose command reads data (none such: nothing to set). A
    cell's identity leaves out where its data is, so a cell done without ``--data-dir``
    is done with it."""
    exp = read_experiment(cfg.file, cfg.set)
    if cfg.data_dir and any(takes(b.command, "data_dir") for b in exp.blocks):
        exp = apply_overrides(exp, [f"data_dir={cfg.data_dir}"])
    return exp


def plan_text(cfg: ExperimentPlan) -> str:
    """The cells of the file with their command lines and estimates; more than
    :data:`ASK_ABOVE` cells need ``yes`` (the plan of a typo is a long list)."""
    with said_as_set():
        cells = plan_cells(read_with_data_dir(cfg), estimate=cfg.estimate)
    text = format_plan(cells)
    if len(cells) > ASK_ABOVE and not cfg.yes:
        raise ValueError(
            f"{cfg.file}: {len(cells)} cells (more than {ASK_ABOVE}): give --yes to see them"
        )
    return text


def run_file(cfg: ExperimentRun, progress: Progress | None = None) -> Summary:
    """:func:`run_experiment` of the file with its overrides, telling ``progress`` of
    each cell.

    >>> run_file(ExperimentRun(file="e.yaml", out="x", executor="ray", gpus=("0",)))
    Traceback (most recent call last):
    ValueError: --gpus is for --executor local (slurm and ray place cells by each model's resources)
    >>> run_file(ExperimentRun(file="e.yaml", out="x", slurm_array=True))
    Traceback (most recent call last):
    ValueError: --slurm-array is for --executor slurm
    """
    if cfg.gpus and cfg.executor != "local":
        raise ValueError(
            "--gpus is for --executor local (slurm and ray place cells by each model's resources)"
        )
    if cfg.slurm_array and cfg.executor != "slurm":
        raise ValueError("--slurm-array is for --executor slurm")
    if cfg.array_parallelism is not None and not cfg.slurm_array:
        raise ValueError("--array-parallelism is for --executor slurm --slurm-array")
    executor = executor_named(
        cfg.executor,
        cfg.out,
        cfg.partition,
        cfg.address,
        cfg.gpus,
        cfg.slurm_array,
        cfg.array_parallelism,
    )
    with said_as_set():
        exp = read_with_data_dir(cfg)
        return run_experiment(exp, cfg.out, executor=executor, yes=cfg.yes, progress=progress)


def status_text(cfg: ExperimentStatus) -> str:
    """Each cell of the folder: done, partial (n of N records), failed (its error) or pending."""
    return format_status(experiment_status(cfg.folder))


__all__ = [
    "ExperimentPlan",
    "ExperimentRun",
    "ExperimentSchema",
    "EXECUTORS",
    "ExperimentStatus",
    "executor_named",
    "plan_text",
    "run_file",
    "schema_text",
    "status_text",
]
