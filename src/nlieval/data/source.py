"""Where a command's tasks come from: the same settings in every command that reads one.

:class:`DataDir` is the data folder (``--data-dir``); :class:`TaskFiles` is it with the
split and the bad-line rule (``--split``, ``--skip-bad``); :class:`TaskSource` is the
tasks (``--task``). A command that reads several tasks derives from both, ``TaskFiles``
first (its flags then follow ``--task``, as :class:`TasksToRead`); one that reads one
task declares that task itself. Each flag is declared here once and means the same
everywhere. All are keyword-only, so a subclass keeps its own positional fields.

A configuration whose field order is a file format (its ``config.json``) cannot take a
mixin's fields in place; it declares the field with the factory of the same setting
(:func:`data_dir_setting`, :func:`split_setting`, :func:`tasks_setting`,
:func:`task_setting`), which the mixins use too. Every field named ``data_dir``,
``split``, ``task`` or ``tasks`` of a command's settings is made by its factory here
(``settings.shared`` marks it; ``tests/test_settings_once.py`` checks the rule).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass
from typing import Any

from ..ground import DataError
from ..settings import Choices, csv_list, setting, shared, table_format
from .dataset import Dataset
from .load import available_splits, declared_splits, get_task, load_task
from .tasks import TASKS

#: The help of ``--data-dir``, for a configuration whose field order is a file format
#: (its ``config.json``), so that it declares the field itself.
DATA_DIR_HELP = "folder of official files [$NLIEVAL_DATA_DIR]"
#: The help of ``--split`` (one split), for the same kind of configuration.
SPLIT_HELP = "split to read (default: the task's)"
#: The help of ``--data-dir`` in a command that reads run folders: each run saved its own.
SAVED_DATA_DIR_HELP = "where the tasks' data is [as saved]"
#: The help of ``--task`` of several tasks.
TASKS_HELP = "comma-separated task names, task YAML files or data files (.jsonl, .csv, .tsv)"


def data_dir_setting(*, saved: bool = False) -> Any:
    """``--data-dir``, the folder of the official files (None: ``$NLIEVAL_DATA_DIR``);
    ``saved``: a command that reads run folders, where None is the folder each run saved.

    >>> data_dir_setting(saved=True).metadata["flag"].help
    "where the tasks' data is [as saved]"
    """
    return shared("data_dir", setting(None, help=SAVED_DATA_DIR_HELP if saved else DATA_DIR_HELP))


def split_setting(default: str | None = None, *, several: bool = False) -> Any:
    """``--split``, the one split of the task to read (None: the task's default);
    ``several``: a command that reads several splits at once (``stats``), so the value
    may also be a comma-separated list or ``all`` (:class:`TasksToRead` reads it).

    The other splits of a command are other roles, not this setting: ``instruct
    --pool-split`` (where the solved examples are drawn from), ``train --train-split``,
    ``--dev-split`` and ``--test-split`` (one split of each of train's three tasks), each
    a flag of its own with its own default.

    >>> split_setting("test").metadata["flag"].help
    'split to read'
    """
    if several:
        help = (
            "splits to read: one, several comma-separated (train,dev,test), or "
            f"{ALL_SPLITS} (every split with data here) [the task's]"
        )
    else:
        help = SPLIT_HELP if default is None else "split to read"
    return shared("split", setting(default, help=help))


def tasks_setting(default: Any = MISSING, *, note: str = "") -> Any:
    """``--task`` (or ``--tasks``) of several tasks, comma-separated; ``note`` adds what a
    command's default or its other flags make of them.

    >>> tasks_setting().metadata["flag"].names
    ('--task', '--tasks')
    """
    field = setting(default, help=TASKS_HELP + note, names=("--task", "--tasks"), parse=csv_list)
    return shared("tasks", field)


def task_setting(
    role: str = "",
    default: Any = MISSING,
    *,
    help: str | None = None,
    aliases: tuple[str, ...] = (),
    choices: Choices | None = None,
) -> Any:
    """``--task`` of one task: a name or a task YAML; ``role`` says what its items are for.

    A command that reads its task's text further gives its own ``help`` saying how:
    ``train``'s sources ``NAME[@SPLIT][:N]`` joined by commas (also ``--train-task``,
    one of ``aliases``), ``import``'s ``NAME[@SPLIT]`` (:func:`task_at`), or
    ``chaosnli-score``'s one of the ChaosNLI sets (``choices``). The flag is ``--task``
    and its value the text given, in every command.

    >>> task_setting("whose premises to use").metadata["flag"].help
    'task name or task YAML whose premises to use'
    >>> task_setting(help="training task", aliases=("--train-task",)).metadata["flag"].names
    ('--task', '--train-task')
    """
    names = ("--task", *aliases) if aliases else ()
    text = f"task name or task YAML {role}".rstrip() if help is None else help
    return shared("task", setting(default, help=text, names=names, choices=choices))


def task_at(text: str) -> tuple[str, str | None]:
    """A task as ``NAME[@SPLIT]`` (a name or task YAML, and the split to read; None: the
    task's default), the one reading of that syntax (``train --task``, ``import --task``).

    >>> task_at("snli@test"), task_at(" sick ")
    (('snli', 'test'), ('sick', None))
    >>> task_at("snli@")
    Traceback (most recent call last):
    ValueError: 'snli@': NAME[@SPLIT] expected
    """
    name, at, split = text.partition("@")
    if not name.strip() or (at and not split.strip()):
        raise ValueError(f"{text!r}: NAME[@SPLIT] expected")
    return name.strip(), split.strip() or None


@dataclass(frozen=True, kw_only=True)
class DataDir:
    """Where the official files are (a command that reads a ChaosNLI set by name).

    >>> DataDir().data_dir is None
    True
    """

    data_dir: str | None = data_dir_setting()


@dataclass(frozen=True, kw_only=True)
class TaskFiles(DataDir):
    """Where the official files are, which split, and what a malformed line does.

    >>> len(TaskFiles().load("smoke"))
    48
    """

    split: str | None = split_setting()
    skip_bad: bool = setting(False, help="skip malformed data lines (counted)")

    def load(self, name: str, split: str | None = None) -> Dataset:
        """The ``split`` (default: the task's; pass ``self.split`` for the chosen one) of
        the task ``name``."""
        return load_task(name, self.data_dir, split, skip_bad=self.skip_bad)


@dataclass(frozen=True, kw_only=True)
class TaskSource:
    """The tasks a command reads.

    >>> TaskSource(tasks=("smoke",)).names()
    ('smoke',)
    """

    tasks: tuple[str, ...] = tasks_setting()

    def names(self) -> tuple[str, ...]:
        """The tasks' registered names (a YAML file's is the name it declares)."""
        return tuple(get_task(name).name for name in self.tasks)


#: The value of ``nlieval stats --split`` that reads every split a task has data for.
ALL_SPLITS = "all"


@dataclass(frozen=True, kw_only=True)
class TasksToRead(TaskFiles, TaskSource):
    """Tasks and where to read them (``nlieval stats``): ``split`` may name several
    splits, comma-separated, or be ``all``.

    >>> [(ds.task, len(ds)) for ds in TasksToRead(tasks=("smoke",)).datasets()]
    [('smoke', 48)]
    >>> [(ds.split, len(ds)) for ds in TasksToRead(tasks=("smoke",), split="all").datasets()]
    [('train', 12), ('test', 48)]
    """

    format: str = table_format()

    split: str | None = split_setting(several=True)

    @property
    def several(self) -> bool:
        """Whether ``split`` asks for more than one split (a list, or ``all``)."""
        return self.split is not None and (self.split.strip() == ALL_SPLITS or "," in self.split)

    def _asked(self, name: str) -> tuple[str, ...]:
        """The splits of the task ``name`` that ``split`` names (all it declares for
        ``all``), in the order asked."""
        declared = declared_splits(get_task(name))
        if self.split is None:
            return ()
        if self.split.strip() == ALL_SPLITS:
            return declared
        return tuple(s.strip() for s in self.split.split(",") if s.strip())

    def splits(self, name: str) -> tuple[str | None, ...]:
        """The splits of the task ``name`` to read (None: its default split). Of several,
        those with data here (HANS has no dev split, the shared SciNLI no train file:
        ``n/a`` in the table, see :meth:`unread`); all of them when none has, for the
        error to name the files.

        >>> TasksToRead(tasks=("hans",), split="train,dev,test").splits("hans")
        ('train',)
        """
        asked = self._asked(name)
        if not self.several:
            return asked or (None,)
        here = available_splits(name, self.data_dir)
        return tuple(s for s in asked if s in here) or asked or (None,)

    def columns(self) -> tuple[str, ...]:
        """The splits a list names, in its order (none for one split or ``all``).

        >>> TasksToRead(tasks=("smoke",), split="train, dev").columns()
        ('train', 'dev')
        """
        if not self.several or self.split is None or self.split.strip() == ALL_SPLITS:
            return ()
        return tuple(s.strip() for s in self.split.split(",") if s.strip())

    def unread(self, name: str) -> tuple[str, ...]:
        """The splits asked that the task ``name`` declares but has no data for here.

        >>> TasksToRead(tasks=("smoke",), split="train,dev,test").unread("smoke")
        ()
        """
        if not self.several:
            return ()
        here = available_splits(name, self.data_dir)
        declared = declared_splits(get_task(name))
        read = self.splits(name)
        return tuple(
            s for s in self._asked(name) if s in declared and s not in here and s not in read
        )

    def datasets(self) -> list[Dataset]:
        """Each task's chosen splits, in the order given. A split of a list that none of
        the tasks has (a typo: ``train,tset``; train, dev and test always stand, ``n/a`` where a
        task lacks them) is a DataError, as one split is.

        >>> TasksToRead(tasks=("smoke",), split="train,tset").datasets()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        nlieval.ground.errors.DataError: field 'split': no task of smoke has a split 'tset'; ...
        """
        if self.several:
            # train, dev and test are a table's usual columns (n/a where a task lacks one);
            # any other name must be a split of one of the tasks.
            known = {"train", "dev", "test"}
            known |= {s for name in self.tasks for s in declared_splits(get_task(name))}
            for name in self.tasks:
                for split in self._asked(name):
                    if split not in known:
                        raise DataError(
                            None,
                            None,
                            "split",
                            f"no task of {', '.join(self.tasks)} has a split {split!r}; "
                            f"their splits: {', '.join(sorted(known))}",
                        )
        return [self.load(name, split) for name in self.tasks for split in self.splits(name)]


def format_task_list() -> str:
    """The built-in tasks, one a line: name, default split, labels, description.

    >>> format_task_list().splitlines()[0].split()[:3]
    ['snli', 'dev', 'entailment/neutral/contradiction']
    """
    lines = []
    for name, spec in TASKS.items():
        labels = "/".join(lab.value for lab in spec.labels)
        lines.append(f"{name:<18} {spec.default_split:<15} {labels:<42} {spec.description}")
    return "\n".join(lines)
