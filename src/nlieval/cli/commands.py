"""The commands of ``nlieval`` (:data:`COMMANDS`, read from the one table of
:mod:`nlieval.commands`), the end of a command's ``--help``, and the switch that silences
the libraries' progress bars.

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
from typing import Any

from ..commands import COMMANDS, TABLE, Command

__all__ = ["COMMANDS", "TABLE", "Command", "epilog", "no_library_bars"]


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
