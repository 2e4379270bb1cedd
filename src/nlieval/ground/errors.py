"""The two errors of files: :class:`DataError` (bad content: one line naming the file,
the line and the field) and :class:`FolderError` (a file or folder that cannot be used
as asked: a link, not a regular file, a write that failed); and :class:`SettingError`,
a setting's value refused, worded for whoever prints it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

#: A command-line flag as a message names it (``--out``, ``--batch_size``).
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")


class DataError(ValueError):
    """Bad input: carries ``path``, ``line`` (1-based, or None) and ``field`` (or None).

    ``str(err)`` is one line: ``{path}:{line}: field '{field}': {message}``, leaving out
    the parts that are None (``path`` is None only for errors about no file at all).

    >>> str(DataError("dev.jsonl", 3, "gold_label", "unknown label 'x'"))
    "dev.jsonl:3: field 'gold_label': unknown label 'x'"
    """

    def __init__(self, path: str | Path | None, line: int | None, field: str | None, message: str):
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.message = " ".join(str(message).split())  # one line, whatever the cause said
        where = "" if self.path is None else self.path
        if line is not None:
            where += f":{line}"
        parts = [where] if where else []
        if field is not None:
            parts.append(f"field '{field}'")
        parts.append(self.message)
        super().__init__(": ".join(parts))

    def __reduce__(self) -> tuple[Any, ...]:
        # The default would call DataError(formatted_message) and fail (4 arguments).
        return (type(self), (self.path, self.line, self.field, self.message))


class FolderError(RuntimeError):
    """A file or folder that cannot be used as asked (the message names it and says
    why); a run folder's errors are this class (``nlieval.runs.RunError``).

    A folder that refuses a run says so in ``reason``; ``advice``, when given, is what
    to do in a command's flags (``--out``, ``--overwrite``), and ``changed`` names the
    settings that differ from those the folder was made with: a caller
    without those flags (an experiment's cell) says its own advice from them, never by
    reading the message.

    >>> raise FolderError("out/a.json: cannot write: No space left on device")
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: out/a.json: cannot write: No space left on device
    >>> err = FolderError("r holds another run", advice="pass --overwrite", changed=("k",))
    >>> str(err), err.reason, err.changed
    ('r holds another run; pass --overwrite', 'r holds another run', ('k',))
    >>> import pickle; pickle.loads(pickle.dumps(err)).advice
    'pass --overwrite'
    """

    def __init__(
        self, reason: str, *, advice: str | None = None, changed: tuple[str, ...] = ()
    ) -> None:
        self.reason = reason
        self.advice = advice
        self.changed = tuple(changed)
        super().__init__(reason if advice is None else f"{reason}; {advice}")

    def advice_to(self, flags: Collection[str]) -> str | None:
        """``advice`` as a command with ``flags`` gives it: each alternative (the parts
        joined by ``, or``) that names a flag the command lacks is left out (a run
        folder's ``--overwrite``, said by ``report``); None when none is left.

        >>> err = FolderError("r holds files", advice="move it away, or pass --overwrite")
        >>> err.advice_to({"--overwrite"}), err.advice_to(()), FolderError("x").advice_to(())
        ('move it away, or pass --overwrite', 'move it away', None)
        """
        if self.advice is None:
            return None
        kept = [p for p in self.advice.split(", or ") if set(FLAG.findall(p)) <= set(flags)]
        return ", or ".join(kept) or None

    def said_to(self, flags: Collection[str]) -> str:
        """The error as a command with ``flags`` says it: the reason, and what is left of
        the advice (:meth:`advice_to`).

        >>> err = FolderError("r holds files", advice="choose another --out, or pass --overwrite")
        >>> err.said_to({"--out", "--overwrite"}), err.said_to({"--out"}), err.said_to(())
        ('r holds files; choose another --out, or pass --overwrite', \
'r holds files; choose another --out', 'r holds files')
        """
        advice = self.advice_to(flags)
        return self.reason if advice is None else f"{self.reason}; {advice}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword arguments survive a pickle (a worker process, a Ray task).
        return (_folder_error, (type(self), self.reason, self.advice, self.changed))


def _folder_error(
    cls: type[FolderError], reason: str, advice: str | None, changed: tuple[str, ...]
) -> FolderError:
    return cls(reason, advice=advice, changed=changed)


class SettingError(ValueError):
    """A setting's value refused (a settings class's check, a flag's parse): ``fields``
    names the settings (fields of a settings class) the message is about, each written
    as its flag (``max_memory`` as ``--max-memory``), as a command with those flags says
    it. Whoever prints it words it (:meth:`said_to`): a command that lacks a field's
    flag (one that reached the check with a value of its own) and an experiment (whose
    file names the key) say the field's name instead, never a flag they lack.

    >>> err = SettingError(("max_memory", "device_map"), "--max-memory needs --device-map")
    >>> str(err), err.said_to({"--max-memory", "--device-map"}), err.said_to(())
    ('--max-memory needs --device-map', '--max-memory needs --device-map', \
'max_memory needs device_map')
    >>> import pickle; pickle.loads(pickle.dumps(err)).fields
    ('max_memory', 'device_map')
    """

    def __init__(self, fields: str | Sequence[str], message: str) -> None:
        self.fields = (fields,) if isinstance(fields, str) else tuple(fields)
        self.message = message
        super().__init__(message)

    def said_to(self, flags: Collection[str]) -> str:
        """The message as a command with ``flags`` says it: each field's flag the
        command lacks is the field's name (a flag of no field is kept)."""
        own = {"--" + f.replace("_", "-"): f for f in self.fields}

        def word(m: re.Match[str]) -> str:
            flag = m.group(0)
            return own[flag] if flag in own and flag not in flags else flag

        return FLAG.sub(word, self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Two arguments survive a pickle (a worker process, a Ray task).
        return (type(self), (self.fields, self.message))
