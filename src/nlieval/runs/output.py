"""The folder a command writes (:class:`OutputFolder`): the same three settings in every
command that makes one; and the run folders a command reads (:class:`RunFolders`).

``--out`` is the folder (``--output_path`` as in lm-evaluation-harness), ``--overwrite``
discards what it holds, ``--no-progress`` turns the progress bar off. A command's
configuration derives from :class:`OutputFolder` (keyword-only, so a subclass keeps its
own positional fields), or a command adds it beside a configuration whose fields are a
file format (``add_settings(parser, OutputFolder)``), and skips ``progress`` where it has
no progress to show.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings import out_setting, setting


@dataclass(frozen=True, kw_only=True)
class OutputFolder:
    """Where the results go, and how.

    >>> OutputFolder(out="runs/a").overwrite, OutputFolder(out="runs/a").progress
    (False, True)
    """

    out: str = out_setting()
    overwrite: bool = setting(False, help="discard what the folder holds")
    progress: bool = setting(True, help="no progress bar", names=("--no-progress",))


@dataclass(frozen=True, kw_only=True)
class RunFolders:
    """The saved run folders a command reads (``RUNS ...``, the positional arguments of
    the commands that read records and load no model).

    >>> RunFolders(runs=("runs/a", "runs/b")).runs
    ('runs/a', 'runs/b')
    """

    runs: tuple[str, ...] = setting(help="run folders", positional=True, nargs="+")
