"""Reading YAML: :func:`load_yaml`, the one YAML loader of nlieval (task files, prompt
files, readings of the modal logic), safe and bounded.

A YAML alias (``*name``) repeats a node: nine nested levels of ten repeats (a "billion
laughs") are a billion strings from a 1 KB file, so aliases are refused; nesting deeper
than the loader can follow is one line too. The text comes bounded in size from its
reader (:func:`~nlieval.ground.read_small_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from .errors import DataError


def load_yaml(text: str, source: str | Path) -> Any:
    """The value of the YAML ``text`` read from ``source`` (a file's name, for errors),
    with PyYAML's safe loader and without aliases; a failure is one :class:`DataError`
    line naming ``source`` and the line.

    >>> load_yaml("a: [1, 2]\\nb: x\\n", "t.yaml")
    {'a': [1, 2], 'b': 'x'}
    >>> load_yaml("a: &x [1]\\nb: *x\\n", "t.yaml")
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: t.yaml:2: invalid YAML: aliases (*name) are not allowed ...
    """
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """The safe loader, refusing an alias where it meets one."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                # types-PyYAML leaves peek_event unannotated; it returns the next event,
                # whose mark (this pure-Python loader's) is the one the error takes.
                peek: Callable[[], yaml.Event] = self.peek_event
                mark = cast("yaml.error.Mark | None", peek().start_mark)
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    "aliases (*name) are not allowed (each repeats a node: a few lines "
                    "could stand for billions)",
                    mark,
                )
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=NoAliasLoader)  # noqa: S506 - a SafeLoader
    except yaml.MarkedYAMLError as err:
        line = err.problem_mark.line + 1 if err.problem_mark is not None else None
        raise DataError(source, line, None, f"invalid YAML: {err.problem}") from None
    except yaml.YAMLError as err:
        raise DataError(source, None, None, f"invalid YAML: {err}") from None
    except RecursionError:
        raise DataError(source, None, None, "invalid YAML: nested too deeply") from None
