"""YAML as nlieval reads it, in one function: :func:`load_yaml`.

PyYAML's safe loader, with two rules more. No aliases: ``*name`` repeats a node, and
nine nested levels of ten repeats (a "billion laughs") are a billion strings from a 1 KB
file; no file nlieval reads needs one. No key given twice in one mapping: YAML keeps the
last one without a word, so a second ``user:`` would silently replace the first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, cast

from .errors import DataError


def load_yaml(text: str, source: str | Path) -> Any:
    """The document of ``text``, the YAML of ``source`` (named in errors). Invalid YAML,
    an alias, a key given twice or nesting too deep is one :class:`DataError` line naming
    ``source``, the line and, for a key given twice, the key.

    >>> load_yaml("a: 1\\nb: [x, y]\\n", "f.yaml")
    {'a': 1, 'b': ['x', 'y']}
    >>> load_yaml("user: A\\nsystem: S\\nuser: B\\n", "p.yaml")
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: p.yaml:3: field 'user': given twice (first on line 1)
    >>> load_yaml("a: &x [1]\\nb: *x\\n", "f.yaml")
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: f.yaml:2: invalid YAML: aliases (*name) are not allowed
    """
    import yaml

    class StrictLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                # types-PyYAML leaves peek_event unannotated; it returns the next event,
                # whose mark (this pure-Python loader's) is the one the error takes.
                peek: Callable[[], yaml.Event] = self.peek_event
                mark = cast("yaml.error.Mark | None", peek().start_mark)
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed", mark
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue  # a complex key or a merge: the safe loader decides
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                if isinstance(key, Hashable) and key in first:
                    raise DataError(
                        source, line, str(key), f"given twice (first on line {first[key]})"
                    )
                if isinstance(key, Hashable):
                    first[key] = line
            return cast("dict[Any, Any]", super().construct_mapping(node, deep))

    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader
    except yaml.MarkedYAMLError as err:
        line = err.problem_mark.line + 1 if err.problem_mark is not None else None
        raise DataError(source, line, None, f"invalid YAML: {err.problem}") from None
    except yaml.YAMLError as err:
        raise DataError(source, None, None, f"invalid YAML: {err}") from None
    except RecursionError:
        raise DataError(source, None, None, "invalid YAML: nested too deeply") from None
