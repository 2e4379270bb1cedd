"""The command that lists the built-in tasks: ``tasks``.

A module of its own, importing only :mod:`nlieval.data`: the list answers in well under a
second, without the families the other commands of reading load.
"""

from __future__ import annotations

import argparse

from ..data import format_task_list
from .args import add_command


def _cmd_tasks(args: argparse.Namespace) -> int:
    print(format_task_list())
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tasks``.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["tasks"]).handler.__name__
    '_cmd_tasks'
    """
    add_command(sub, "tasks", handler=_cmd_tasks)
