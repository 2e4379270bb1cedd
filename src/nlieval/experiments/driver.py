"""Running the cells of an experiment and saying where each stands.

:func:`run_experiment` plans the cells, writes ``DIR/experiment.json`` (the resolved plan,
so that :func:`experiment_status` needs no file), hands each cell not done to an
executor, records each outcome in ``DIR/state/<cell>.json`` and ends with the report
(:mod:`.report`). A cell is run by its command's own library function into its own run
folder: resume, lock and the refusal of another configuration are the folder's own. A
cell that fails is tried again (``retries`` of the file, with back-off); a refusal of
its folder (another configuration, a lock held by another process, bad data) is not, as
trying again would not change it. The other cells go on either way.

An executor is a callable that takes a :class:`CellJob` and returns its
:class:`Outcome`; :class:`LocalExecutor` runs it in this process.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import Field, dataclass, fields
from pathlib import Path
from typing import Any, Protocol, get_args

from ..backends import ServerError
from ..data import DataDir
from ..ground import FLAG, DataError, FolderError, SettingError, check_inside, read_json
from ..runs import RECORDS, RunFolder, atomic_write, make_folder
from ..settings import flag_names, setting_type
from .commands import COMMAND_NAMES, setting_fields
from .commands import command as block_command
from .plan import ASK_ABOVE, Cell, plan_cells, with_estimates
from .spec import Experiment

#: The resolved plan in an experiment folder.
PLAN = "experiment.json"

#: The folders of the cells and of their outcomes.
CELLS = "cells"
STATE = "state"


@dataclass(frozen=True)
class CellJob:
    """What an executor is given: the cell and the folder to write it into."""

    cell: Cell
    folder: str


@dataclass(frozen=True)
class Outcome:
    """What became of a cell: ``done`` or ``failed`` (with its last error line), after
    how many ``attempts``, run by which executor (and its job id, when it has one)."""

    cell: str
    state: str
    attempts: int
    error: str | None = None
    executor: str = "local"
    job: str | None = None


class Executor(Protocol):
    """Runs one cell: a job in, its outcome out."""

    name: str

    def __call__(self, job: CellJob, retries: int, backoff: float) -> Outcome: ...


def run_cell(job: CellJob) -> None:
    """Run ``job``'s cell by its command's library function into its folder (any
    executor ends here, in whatever process it runs the cell)."""
    from .commands import command

    cell = job.cell
    folder = Path(job.folder)
    try:
        command(cell.command).execute(cell.configs(folder.parent), folder)
    except FolderError as err:
        if err.advice is None:
            raise
        raise for_experiment(err, folder) from None


def cell_outcome(job: CellJob) -> tuple[str, str | None, bool]:
    """:func:`run_cell` of ``job`` as data, for an executor whose worker is another
    process: (``done`` or ``failed``, the error line, whether it is a refusal)."""
    try:
        run_cell(job)
    except Exception as err:  # noqa: BLE001 - every failure of a cell is its outcome
        return "failed", cell_error(job, err), isinstance(err, REFUSALS)
    return "done", None, False


def _one_line(err: BaseException) -> str:
    said = setting_said(err) if isinstance(err, SettingError) else str(err)
    text = " ".join(said.split()) or type(err).__name__
    return text if isinstance(err, (DataError, FolderError)) else f"{type(err).__name__}: {text}"


def cell_error(job: CellJob, err: BaseException) -> str:
    """The one line of ``err``, the failure of ``job``'s cell; a server's failure (it
    does not answer, or not as an OpenAI-compatible server does) names the file, line
    and key of the ``api_base`` that sent the cell there, a setting's check
    (:class:`~nlieval.ground.SettingError`) those of the setting it refused.

    >>> from nlieval.backends import ServerError
    >>> from nlieval.experiments.plan import Cell
    >>> from nlieval.experiments.spec import Resources, Setting
    >>> where = Setting("api_base", "http://127.0.0.1:9/v1", "e.yaml", 5)
    >>> cell = Cell("b-m", "b", "run", "m", "m", (where,), Resources(), "e.yaml", 9, {}, ())
    >>> cell_error(CellJob(cell, "x"), ServerError("POST http://127.0.0.1:9/v1: connection failed"))
    "e.yaml:5: field 'api_base': ServerError: POST http://127.0.0.1:9/v1: connection failed"
    """
    line = as_set(_one_line(err), job.cell.command)
    if isinstance(err, ServerError):
        for s in job.cell.settings:
            if s.key == "api_base":
                return str(s.error(line))
    if isinstance(err, SettingError):
        # A setting's check: the file's line of the first setting it names.
        for s in job.cell.settings:
            if s.key in err.fields:
                return str(s.error(line))
    return line


#: A flag a message names (:data:`nlieval.ground.FLAG`, the one pattern of a flag), and
#: the value written after it when there is one (a number, or a quoted text):
#: ``--limit 4``, ``--model 'x'``, ``--sample``.
_FLAG_VALUE = re.compile(rf"({FLAG.pattern})(?: (\d[\d.,]*\d|\d|'[^'\s]*'))?")


@functools.cache  # read for every log line an experiment says
def _block_flags(command: str | None) -> dict[str, dict[str, Field[Any]]]:
    # Each flag of a block's setting (of ``command``, or of every block command), with the
    # keys it sets. The experiment's own --data-dir sets every block's: it stays a flag.
    # A cell's model is its entry of the file's models (key ""): no block sets it.
    own = {f.name for f in fields(DataDir)}
    out: dict[str, dict[str, Field[Any]]] = {}
    for name in COMMAND_NAMES if command is None else (command,):
        model = block_command(name).model_field
        for key, f in setting_fields(name).items():
            if key not in own:
                for flag in flag_names(f):
                    out.setdefault(flag, {})["" if key == model else key] = f
    return out


@functools.cache
def _output_flags() -> dict[str, dict[str, Field[Any]]]:
    # Each flag of an output's option (of any kind), with the option keys it sets; the
    # experiment's own --data-dir stays a flag. Loaded when first said (each kind's
    # settings class is its family's).
    from .report import KINDS, option_fields

    own = {f.name for f in fields(DataDir)}
    out: dict[str, dict[str, Field[Any]]] = {}
    for kind in KINDS.values():
        for key, f in option_fields(kind).items():
            if key not in own:
                for flag in flag_names(f):
                    out.setdefault(flag, {})[key] = f
    return out


def _types(typ: Any) -> set[Any]:
    # The types a setting's type is made of (int | None: int, None; tuple[int, ...]:
    # tuple, int), read from its real type (settings.setting_type), never its text.
    return {typ, *(t for a in get_args(typ) for t in _types(a))}


def _switched(f: Field[Any]) -> str | None:
    # A switch's flag says the value that is not the default (--no-test: test=false);
    # None: ``f`` is no switch.
    if bool not in _types(setting_type(f)):
        return None
    return "false" if f.default is True else "true"


def _option(key: str, f: Field[Any], given: str | None) -> str:
    # An output's option as the file writes it: a switch with the value its flag gives.
    if given is not None:
        return f"the output option {key}: {given.strip(chr(39))}"
    switched = _switched(f)
    if switched is not None:
        return f"the output option {key}: {switched}"
    return f"the output option {key}"


def _set_value(key: str, f: Field[Any], given: str | None) -> str:
    if given is not None:
        return given.strip("'")
    switched = _switched(f)
    if switched is not None:
        return switched
    flag = f.metadata["flag"]
    return flag.metavar or ("N" if int in _types(setting_type(f)) else key.upper())


def as_set(text: str, command: str | None = None, key: str | None = None) -> str:
    """``text``, a message of a command's library code, as an experiment says it: each
    flag of a block's setting (of ``command``'s block, or of any block) becomes the
    ``--set KEY=VALUE`` of ``experiment plan`` and ``run`` that gives it (the model's
    flag: the model, which the file's ``models`` name), with the value
    the message wrote after the flag (else the flag's metavar); the flag of ``key``, the
    setting an error names with its file and line, is said as that key, and a flag that
    sets other keys in other commands (``--task``: ``tasks``, ``task``) says each. The
    one place a cell's advice is worded for an experiment; the flags come from the
    settings' declarations. Without ``command``, a flag that only an output's option
    sets (a report's refusal, said while the experiment's report is written) is said as
    that option of the file's output.

    >>> as_set("mine test: --limit 4 takes the first 4 items; --sample 4 takes a seeded sample")
    'mine test: --set limit=4 takes the first 4 items; --set sample=4 takes a seeded sample'
    >>> as_set("--checkpoints needs a local model; check --api-base and --model")
    '--set checkpoints=CHECKPOINTS needs a local model; check --set api_base=API_BASE and the model'
    >>> as_set("give another --test-task or --no-test", "train")
    'give another --set test_task=TEST_TASK or --set skip_test=true'
    >>> as_set("--api-base needs a host, got 'http://'", key="api_base")
    "api_base needs a host, got 'http://'"
    >>> as_set("set --data-dir or NLIEVAL_DATA_DIR; --yes")
    'set --data-dir or NLIEVAL_DATA_DIR; --yes'
    >>> as_set("folders on other items; pass --allow-mixed to mark them")
    'folders on other items; pass the output option allow_mixed: true to mark them'
    >>> as_set("--sizes: 'x' is no size", key="sizes")
    "sizes: 'x' is no size"
    """
    table = _block_flags(command)

    def said(m: re.Match[str]) -> str:
        keys = table.get(m.group(1))
        if not keys and command is None:
            options = _output_flags().get(m.group(1), {})
            if key in options:
                return key + (f" {m.group(2)}" if m.group(2) else "")
            if options:
                return " or ".join(_option(k, f, m.group(2)) for k, f in options.items())
        if not keys:
            return m.group(0)
        if key in keys:
            # The error names the file, line and key already: the key is the setting.
            return key + (f" {m.group(2)}" if m.group(2) else "")
        return " or ".join(
            ("the model" + (f" {m.group(2)}" if m.group(2) else ""))
            if not k
            else f"--set {k}={_set_value(k, f, m.group(2))}"
            for k, f in keys.items()
        )

    return _FLAG_VALUE.sub(said, text)


def setting_said(err: SettingError, command: str | None = None) -> str:
    """A setting's check (``err``) as an experiment says it: each setting it names as
    the file's key, the model (a cell's is its entry of the file's ``models``) as
    :func:`as_set` says it, and any other flag as :func:`as_set` words it.

    >>> setting_said(SettingError("max_memory", "--max-memory: empty"))
    'max_memory: empty'
    >>> setting_said(SettingError(("checkpoints", "model"), "--checkpoints x: not --model m's"))
    "checkpoints x: not the model m's"
    >>> setting_said(SettingError("allow_mixed", "on other items; pass --allow-mixed"))
    'on other items; pass the output option allow_mixed: true'
    """
    kept = {flag for flag, keys in _block_flags(command).items() if "" in keys}
    if command is None:
        # An output's option (a report's refusal) is said as that option of the file's
        # output, with the value its flag gives (as_set).
        kept |= set(_output_flags()) - set(_block_flags(None))
    return as_set(err.said_to(kept), command)


class _AsSet(logging.Filter):
    """A handler's filter that words each record with :func:`as_set`."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        said = as_set(text)
        if said != text:
            record.msg, record.args = said, None
        return True


@contextmanager
def said_as_set() -> Iterator[None]:
    """What the commands' library code says while an experiment is planned or run
    (warnings, and the error that ends it) worded by :func:`as_set`: a cell has no flags,
    its settings are the block's keys (``--set KEY=VALUE``). A cell's own error is worded
    by :func:`cell_error`, in whatever process runs it."""
    words = _AsSet()
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(words)
    try:
        yield
    except DataError as err:
        raise DataError(err.path, err.line, err.field, as_set(err.message, key=err.field)) from err
    except FolderError as err:
        advice = None if err.advice is None else as_set(err.advice)
        raise type(err)(as_set(err.reason), advice=advice, changed=err.changed) from err
    except SettingError as err:
        raise type(err)(err.fields, setting_said(err)) from err
    except ValueError as err:
        said = as_set(str(err))
        if said == str(err):
            raise
        try:  # the same class when it takes its message alone (TrainError)
            worded = type(err)(said)
        except Exception:  # noqa: BLE001 - a class of other arguments: a ValueError
            worded = ValueError(said)
        raise worded from err
    finally:
        for handler in handlers:
            handler.removeFilter(words)


#: Errors that trying again would not change: the folder refuses (another configuration,
#: held by another process), or the data or settings are bad.
REFUSALS: tuple[type[BaseException], ...] = (FolderError, DataError, SettingError)


class LocalExecutor:
    """Runs each cell in this process, one after another; a failure other than a
    refusal is tried again ``retries`` times, waiting ``backoff`` seconds, then twice
    that, ... (tenacity's exponential wait)."""

    name = "local"

    def __init__(
        self, sleep: Callable[[float], None] = time.sleep, gpus: Sequence[str] = ()
    ) -> None:
        self.sleep = sleep
        self.gpus = tuple(gpus)

    def run_many(self, jobs: Sequence[CellJob], retries: int, backoff: float) -> list[Outcome]:
        """The ready ``jobs``: one after another, or with ``gpus`` one worker process per
        GPU (``CUDA_VISIBLE_DEVICES`` set to it), each running one cell at a time."""
        if len(self.gpus) < 2 or len(jobs) < 2:
            return [self(job, retries, backoff) for job in jobs]
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn: a fresh interpreter per worker (torch and CUDA do not survive a fork).
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        for gpu in self.gpus:
            queue.put(gpu)
        with ProcessPoolExecutor(
            len(self.gpus), mp_context=ctx, initializer=_take_gpu, initargs=(queue,)
        ) as pool:
            futures = [pool.submit(_local_cell, job, retries, backoff) for job in jobs]
            return [_outcome_of(job, f, self.name) for job, f in zip(jobs, futures, strict=True)]

    def __call__(self, job: CellJob, retries: int, backoff: float) -> Outcome:
        import tenacity

        attempts = 0

        def attempt() -> None:
            nonlocal attempts
            attempts += 1
            run_cell(job)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(retries + 1),
            wait=tenacity.wait_exponential(
                multiplier=backoff, min=backoff, max=max(backoff, 600.0)
            ),
            retry=tenacity.retry_if_exception(
                lambda e: isinstance(e, Exception) and not isinstance(e, REFUSALS)
            ),
            sleep=self.sleep,
            reraise=True,
        )
        try:
            retrying(attempt)
        except Exception as err:  # noqa: BLE001 - every failure of a cell is its outcome
            return Outcome(
                job.cell.name, "failed", attempts, cell_error(job, err), self.name, str(os.getpid())
            )
        return Outcome(job.cell.name, "done", attempts, None, self.name, str(os.getpid()))


def submit_and_wait(
    name: str,
    jobs: Sequence[CellJob],
    submit: Callable[[CellJob], tuple[Any, str]],
    wait: Callable[[Any], tuple[str, str | None, bool]],
    retries: int,
    backoff: float,
    sleep: Callable[[float], None] = time.sleep,
    submit_all: Callable[[Sequence[CellJob]], list[tuple[Any, str]]] | None = None,
) -> list[Outcome]:
    """Every job submitted at once (``submit``: its handle and job id; or ``submit_all``,
    the handles and ids of all the jobs in their order, e.g. one job array), then each
    waited for (``wait``: done or failed, the error line, whether a refusal); the
    failures that are not refusals are submitted again together after the back-off,
    ``retries`` times. The outcomes are in the order of ``jobs``.

    >>> from nlieval.experiments.plan import Cell
    >>> from nlieval.experiments.spec import Resources
    >>> cell = lambda n: Cell(n, "b", "run", None, None, (), Resources(), "e", 1, {}, ())
    >>> tries = {"a": 0, "b": 0}
    >>> def submit(job):
    ...     tries[job.cell.name] += 1
    ...     return job.cell.name, f"{job.cell.name}{tries[job.cell.name]}"
    >>> def wait(h):  # "b" fails once, then succeeds
    ...     failing = h == "b" and tries["b"] == 1
    ...     return ("failed", "boom", False) if failing else ("done", None, False)
    >>> jobs = [CellJob(cell("a"), "a"), CellJob(cell("b"), "b")]
    >>> [(o.cell, o.state, o.attempts, o.job) for o in
    ...  submit_and_wait("x", jobs, submit, wait, 2, 0.0, sleep=lambda s: None)]
    [('a', 'done', 1, 'a1'), ('b', 'done', 2, 'b2')]
    """
    outcomes: dict[str, Outcome] = {}
    left = list(jobs)
    for attempt in range(retries + 1):
        if not left:
            break
        if attempt:
            sleep(backoff * 2 ** (attempt - 1))
        submitted = submit_all(left) if submit_all else [submit(job) for job in left]
        handles = [(job, *h) for job, h in zip(left, submitted, strict=True)]
        left = []
        for job, handle, job_id in handles:
            state, error, refusal = wait(handle)
            outcomes[job.cell.name] = Outcome(
                job.cell.name, state, attempt + 1, error, name, job_id
            )
            if state != "done" and not refusal:
                left.append(job)
    return [outcomes[job.cell.name] for job in jobs]


def _take_gpu(gpus: Any) -> None:
    # Each worker process holds one GPU for its life: one cell at a time per GPU.
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpus.get())


def _outcome_of(job: CellJob, future: Future[Outcome], executor: str) -> Outcome:
    """The outcome a worker returned for ``job``, or, when the worker died (a GPU worker
    killed, out of memory: BrokenProcessPool), a failed outcome with its one-line error:
    the other cells' outcomes are kept and the next call runs this one again."""
    try:
        return future.result()
    except Exception as err:  # noqa: BLE001 - a dead worker is the cell's outcome, not a crash
        return Outcome(job.cell.name, "failed", 1, _one_line(err), executor, None)


def _local_cell(job: CellJob, retries: int, backoff: float) -> Outcome:
    outcome = LocalExecutor()(job, retries, backoff)
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return Outcome(
        outcome.cell,
        outcome.state,
        outcome.attempts,
        outcome.error,
        outcome.executor,
        f"{outcome.job} gpu {gpu}",
    )


@dataclass(frozen=True)
class Summary:
    """What a call of :func:`run_experiment` did: the outcome of each cell (those
    already done are ``done`` with 0 attempts) and the report's files."""

    outcomes: tuple[Outcome, ...]
    report: tuple[str, ...]

    @property
    def failed(self) -> list[Outcome]:
        """The cells that failed."""
        return [o for o in self.outcomes if o.state == "failed"]

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON data (``experiment run --json``): each cell's outcome,
        the counts and the report's files.

        >>> Summary((Outcome("a", "done", 1), Outcome("b", "done", 0)), ("r.md",)).to_dict()["ran"]
        1
        """
        return {
            "cells": [dict(vars(o)) for o in self.outcomes],
            "done": sum(1 for o in self.outcomes if o.state == "done"),
            "ran": sum(1 for o in self.outcomes if o.attempts),
            "failed": len(self.failed),
            "report": list(self.report),
        }

    def text(self) -> str:
        """One line per cell that was run or failed, and a closing count."""
        lines = []
        for o in self.outcomes:
            if o.state == "failed" and not o.attempts:
                lines.append(f"failed  {o.cell}: {o.error}")
            elif o.state == "failed":
                lines.append(f"failed  {o.cell} ({o.attempts} attempts): {o.error}")
            elif o.state == "pending":
                lines.append(f"pending {o.cell}")
            elif o.attempts:
                lines.append(f"done    {o.cell}")
        ran = sum(1 for o in self.outcomes if o.attempts)
        done = sum(1 for o in self.outcomes if o.state == "done")
        lines.append(
            f"{done} of {len(self.outcomes)} cells done ({ran} run in this call), "
            f"{len(self.failed)} failed; report: {len(self.report)} files"
        )
        return "\n".join(lines)


def _state_path(out: Path, cell: str) -> Path:
    return out / STATE / f"{cell}.json"


def read_state(out: str | Path, cell: str) -> dict[str, Any] | None:
    """The last outcome saved for ``cell`` in the experiment folder ``out`` (None: none)."""
    path = _state_path(Path(out), cell)
    if not path.exists():
        return None
    saved = read_json(path)
    return saved if isinstance(saved, dict) else None


def _write_state(out: Path, cell: Cell, outcome: Outcome) -> None:
    make_folder(out / STATE, root=out)
    body = {
        "cell": cell.name,
        "state": outcome.state,
        "identity": cell.identity,
        "attempts": outcome.attempts,
        "error": outcome.error,
        "executor": outcome.executor,
        "job": outcome.job,
    }
    text = json.dumps(body, indent=1, sort_keys=True) + "\n"
    atomic_write(_state_path(out, cell.name), text, root=out)


def write_plan(out: Path, exp: Experiment, cells: Sequence[Cell]) -> None:
    """``DIR/experiment.json``: the file's name and source, every cell resolved, the outputs."""
    make_folder(out)  # the folder the user named (it may be a link)
    body = {
        "experiment": exp.name,
        "source": exp.source,
        "cells": [c.to_dict() for c in cells],
        "outputs": [
            {"name": o.name, "kind": o.kind, "label": o.label, "blocks": list(o.blocks)}
            for o in exp.outputs
        ],
    }
    atomic_write(out / PLAN, json.dumps(body, indent=1, sort_keys=True) + "\n", root=out)


def saved_estimates(out: Path) -> dict[str, tuple[int | None, int | None]]:
    """The estimates ``DIR/experiment.json`` holds, by cell identity (none: an empty
    dict), for :func:`~.plan.with_estimates`.

    >>> import tempfile
    >>> saved_estimates(Path(tempfile.mkdtemp()))
    {}
    """
    if not (out / PLAN).exists():
        return {}
    saved = read_json(out / PLAN)
    cells = saved.get("cells") if isinstance(saved, dict) else None
    return {
        str(c["identity"]): (c.get("records"), c.get("words"))
        for c in cells or []
        if isinstance(c, dict) and "identity" in c and c.get("records") is not None
    }


def is_done(out: Path, cell: Cell) -> bool:
    """Whether ``cell`` was completed in ``out`` under its present configuration."""
    state = read_state(out, cell.name)
    return bool(state and state.get("state") == "done" and state.get("identity") == cell.identity)


def for_experiment(err: FolderError, folder: Path) -> FolderError:
    """A refusal of a cell's run folder with the advice said as what to do in an
    experiment: the folder's own names flags (``--out``, ``--overwrite``) that
    ``experiment run`` gives no cell, so it is made from what the refusal carries (its
    advice that names no flag, when there is one).

    >>> err = FolderError("x holds a run made with other settings (k: 1 -> 2)",
    ...                   advice="pass --overwrite", changed=("k",))
    >>> print(for_experiment(err, Path("out/cells/c")))  # doctest: +NORMALIZE_WHITESPACE
    x holds a run made with other settings (k: 1 -> 2); remove out/cells/c to run the
    cell again, or give the block its old settings
    >>> print(for_experiment(FolderError("x holds files", advice="pass --overwrite"), Path("c")))
    x holds files; remove c to run the cell again
    >>> print(for_experiment(FolderError("x is locked", advice="wait, or choose another --out"),
    ...                      Path("c")))
    x is locked; wait
    """
    # What the folder's advice says without a flag (wait for another process) stands.
    kept = err.advice_to(())
    if kept is not None:
        return FolderError(err.reason, advice=kept, changed=err.changed)
    advice = f"remove {folder} to run the cell again"
    if err.changed:
        # What the folder was made with differs from the block's settings now.
        advice += ", or give the block its old settings"
    return FolderError(err.reason, advice=advice, changed=err.changed)


def waits_for(cell: Cell, states: dict[str, str]) -> Outcome | None:
    """The outcome of ``cell`` while a cell it reads is not done (``states``: each
    cell's state so far): ``failed`` when one failed (or waits on a failed one), else
    ``pending``; None when all are done.

    >>> from nlieval.experiments.plan import Cell
    >>> from nlieval.experiments.spec import Resources
    >>> c = Cell("r", "b", "run", None, None, (), Resources(), "e", 1, {}, (), needs=("i",))
    >>> waits_for(c, {"i": "failed"}).error
    'waits for i, which failed'
    >>> waits_for(c, {}).state, waits_for(c, {"i": "done"})
    ('pending', None)
    """
    failed = [n for n in cell.needs if states.get(n) == "failed"]
    if failed:
        return Outcome(cell.name, "failed", 0, f"waits for {', '.join(failed)}, which failed")
    if any(states.get(n) != "done" for n in cell.needs):
        return Outcome(cell.name, "pending", 0)
    return None


class Progress:
    """What :func:`run_experiment` says while it works: a line when a cell starts and
    when it ends (its name, its place among the cells to run, its records and time),
    through ``say``; and, with ``bar``, one progress bar across the cells on standard
    error (tqdm: elapsed and estimated time left), weighted by each cell's estimated
    records where every cell to run has one. A log file (standard error not a terminal)
    gets the lines and no bar, so no escape code.

    >>> from nlieval.experiments.spec import Resources
    >>> c = Cell("b-a", "b", "run", "a", "m", (), Resources(), "e.yaml", 1, {}, (), records=12)
    >>> p = Progress(print, bar=False); p.begin([c], done=["b-x"])
    1 cell to run (12 records planned); 1 done already: b-x
    >>> p.start(c)
    cell 1/1 b-a: started (12 records planned)
    >>> p.end(c, Outcome("b-a", "done", 1), 12, 3.25)
    cell 1/1 b-a: done, 12 records in 3.2 s
    """

    def __init__(self, say: Callable[[str], None], *, bar: bool = True) -> None:
        self.say = say
        self.show_bar = bar
        self._bar: Any = None
        self._at: dict[str, int] = {}
        self._weight: dict[str, int] = {}
        self._total = 0

    def begin(self, cells: Sequence[Cell], done: Sequence[str] = ()) -> None:
        """The cells to run (in order) and the names of those done already."""
        self._at = {c.name: i + 1 for i, c in enumerate(cells)}
        self._total = len(cells)
        known = all(c.records is not None for c in cells)
        self._weight = {c.name: (c.records or 0) if known else 1 for c in cells}
        planned = sum(c.records or 0 for c in cells)
        counted = f" ({'' if known else 'at least '}{planned} records planned)" if planned else ""
        cell = "cell" if len(cells) == 1 else "cells"
        already = f"; {len(done)} done already: {', '.join(done)}" if done else ""
        self.say(f"{len(cells)} {cell} to run{counted}{already}")
        if self.show_bar and cells:
            from tqdm import tqdm

            unit = "record" if known and planned else "cell"
            total = planned if known and planned else len(cells)
            self._bar = tqdm(total=total, unit=unit, desc="experiment", dynamic_ncols=True)

    def _where(self, cell: Cell) -> str:
        return f"cell {self._at.get(cell.name, '?')}/{self._total} {cell.name}"

    def _line(self, text: str) -> None:
        if self._bar is not None:
            self._bar.clear()
        self.say(text)
        if self._bar is not None:
            self._bar.refresh()

    def start(self, cell: Cell) -> None:
        """A cell handed to its executor."""
        planned = f" ({cell.records} records planned)" if cell.records is not None else ""
        self._line(f"{self._where(cell)}: started{planned}")

    def end(self, cell: Cell, outcome: Outcome, records: int, seconds: float) -> None:
        """A cell's outcome, with the records its folder holds and the seconds it took."""
        took = f"{records} records in {seconds:.1f} s"
        if outcome.state == "done":
            self._line(f"{self._where(cell)}: done, {took}")
        else:
            self._line(
                f"{self._where(cell)}: {outcome.state} after {seconds:.1f} s: {outcome.error}"
            )
        if self._bar is not None:
            self._bar.update(self._weight.get(cell.name, 1))

    def close(self) -> None:
        """The bar taken off the terminal."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def run_experiment(
    exp: Experiment,
    out: str | Path,
    *,
    executor: Executor | None = None,
    yes: bool = False,
    report: bool = True,
    progress: Progress | None = None,
) -> Summary:
    """Run every cell of ``exp`` not done yet into ``out/cells`` and write ``out/report``.

    A cell done under its present configuration is skipped (no model is loaded); a cell
    whose configuration changed is given to its command again, whose folder resumes,
    grows or refuses (one line naming the cell). More than :data:`ASK_ABOVE` cells
    need ``yes``. ``progress`` is told of each cell as it starts and ends
    (:class:`Progress`); cells an executor runs together (``run_many``: GPU workers,
    Slurm, Ray) start together.
    """
    # One filter per handler: each place a warning goes to says it once.
    filters = [(handler, _Once()) for handler in logging.getLogger().handlers]
    for handler, once in filters:
        handler.addFilter(once)
    try:
        return _run_experiment(exp, Path(out), executor, yes, report, progress)
    finally:
        for handler, once in filters:
            handler.removeFilter(once)
        if progress is not None:
            progress.close()


class _Once(logging.Filter):
    """Each warning said once in a run of the cells: the plan's estimate and the cell's
    run read the same items, and would each warn of the same label imbalance."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


def _run_experiment(
    exp: Experiment,
    out: Path,
    executor: Executor | None,
    yes: bool,
    report: bool,
    progress: Progress | None,
) -> Summary:
    from .report import REPORT, check_outputs, write_report

    cells = plan_cells(exp, estimate=False)
    check_outputs(exp)  # a bad output fails before any model work
    if len(cells) > ASK_ABOVE and not yes:
        raise ValueError(
            f"{exp.source}: {len(cells)} cells (more than {ASK_ABOVE}): give --yes to run them"
        )
    executor = executor or LocalExecutor()
    # The folder's parts are its own: a link among them (cells kept elsewhere) is one
    # line before anything is read or written through it.
    for part in (CELLS, STATE, REPORT, PLAN, *(f"{CELLS}/{c.name}" for c in cells)):
        check_inside(out / part, out)
    # The estimates status shows (n of N records): those the folder's plan saved, by
    # cell identity, and counted from the data only for a cell new or changed and not
    # done, so that a second call reads no task's data for them.
    done = {c.name for c in cells if is_done(out, c)}
    cells = with_estimates(cells, saved_estimates(out), skip=done)
    write_plan(out, exp, cells)
    if progress is not None:
        progress.begin(
            [c for c in cells if c.name not in done], [c.name for c in cells if c.name in done]
        )
    states: dict[str, str] = {}
    decided: dict[str, Outcome] = {}
    while True:
        # A wave: every cell whose inputs are done, handed to the executor together.
        ready: list[Cell] = []
        for cell in cells:
            if cell.name in states:
                continue
            if is_done(out, cell):
                decided[cell.name] = Outcome(cell.name, "done", 0)
                states[cell.name] = "done"
                continue
            waiting = waits_for(cell, states)
            if waiting is None:
                ready.append(cell)
            elif waiting.state == "failed":
                _write_state(out, cell, waiting)  # status shows which input failed
                decided[cell.name] = waiting
                states[cell.name] = "failed"
        if not ready:
            break
        jobs = []
        for cell in ready:
            folder = out / CELLS / cell.name
            # A cell's run folder is written by its command: never through a link.
            make_folder(folder.parent, root=out)
            check_inside(folder, out)
            jobs.append(CellJob(cell, str(folder)))
        results = _run_wave(executor, jobs, exp, progress)
        for cell, outcome in zip(ready, results, strict=True):
            if outcome.state == "failed":
                outcome = Outcome(
                    outcome.cell,
                    outcome.state,
                    outcome.attempts,
                    f"cell {cell.name}: {outcome.error}",
                    outcome.executor,
                    outcome.job,
                )
            _write_state(out, cell, outcome)
            decided[cell.name] = outcome
            states[cell.name] = outcome.state
    outcomes = [decided.get(c.name, Outcome(c.name, "pending", 0)) for c in cells]
    files: tuple[str, ...] = ()
    if report:
        done = {o.cell for o in outcomes if o.state == "done"}
        files = tuple(write_report(exp, cells, out, done))
    return Summary(tuple(outcomes), files)


def _run_wave(
    executor: Executor, jobs: Sequence[CellJob], exp: Experiment, progress: Progress | None
) -> list[Outcome]:
    # The ready cells: one after another where the executor runs them so (each said as
    # it starts and ends), else handed over together (said together).
    many = getattr(executor, "run_many", None)
    one_by_one = many is None or (isinstance(executor, LocalExecutor) and len(executor.gpus) < 2)
    out: list[Outcome] = []
    if one_by_one:
        for job in jobs:
            if progress is not None:
                progress.start(job.cell)
            began = time.monotonic()
            outcome = executor(job, exp.retries, exp.backoff)
            _ended(progress, job, outcome, time.monotonic() - began)
            out.append(outcome)
        return out
    assert many is not None
    if progress is not None:
        for job in jobs:
            progress.start(job.cell)
    began = time.monotonic()
    results = many(jobs, exp.retries, exp.backoff)
    for job, outcome in zip(jobs, results, strict=True):
        _ended(progress, job, outcome, time.monotonic() - began)
    return list(results)


def _ended(progress: Progress | None, job: CellJob, outcome: Outcome, seconds: float) -> None:
    if progress is not None:
        progress.end(job.cell, outcome, _records(Path(job.folder)), seconds)


# --------------------------------------------------------------------------- status


def _records(folder: Path) -> int:
    if not (folder / RECORDS).exists():
        return 0
    return len(RunFolder(folder).done_keys())


def experiment_status(out: str | Path) -> list[dict[str, Any]]:
    """Where each cell of the experiment folder ``out`` stands, from its
    ``experiment.json``, the outcomes and the cells' folders: ``done``, ``failed`` (its
    last error line), ``partial`` (n of N records) or ``pending``."""
    out = Path(out)
    if not (out / PLAN).exists():
        raise FolderError(f"{out} is not an experiment folder (no {PLAN})")
    plan = read_json(out / PLAN)
    rows = []
    for cell in plan.get("cells", []):
        name = cell["name"]
        state = read_state(out, name) or {}
        n = _records(out / CELLS / name)
        expected = cell.get("records")
        row = {
            "cell": name,
            "records": n,
            "expected": expected,
            "executor": state.get("executor"),
            "job": state.get("job"),
            "error": None,
        }
        if state.get("state") == "done" and state.get("identity") == cell.get("identity"):
            row["state"] = "done"
        elif state.get("state") == "failed":
            row["state"] = "failed"
            row["error"] = state.get("error")
        elif n or (out / CELLS / name).exists():
            row["state"] = "partial"
        else:
            row["state"] = "pending"
        rows.append(row)
    return rows


def format_status(rows: Sequence[dict[str, Any]]) -> str:
    """The status rows as text, one line per cell and a count per state.

    >>> print(format_status([{"cell": "a", "state": "partial", "records": 3, "expected": 8,
    ...                       "executor": "local", "job": "12", "error": None}]))
    partial  a  3 of 8 records  (local 12)
    partial: 1
    """
    lines = []
    for r in rows:
        if r["state"] == "partial":
            detail = (
                f"{r['records']} of {r['expected'] if r['expected'] is not None else '?'} records"
            )
        elif r["state"] == "failed":
            detail = str(r["error"])
        elif r["state"] == "done":
            detail = f"{r['records']} records"
        else:
            detail = ""
        job = f"  ({r['executor']} {r['job']})" if r.get("executor") else ""
        lines.append(f"{r['state']:<8} {r['cell']}  {detail}".rstrip() + job)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["state"]] = counts.get(r["state"], 0) + 1
    lines.append(", ".join(f"{k}: {v}" for k, v in counts.items()))
    return "\n".join(lines)
