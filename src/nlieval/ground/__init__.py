"""The ground floor: the rules of the files nlieval reads and writes, and the sandbox
that renders the templates it is given. Every other room may use it; it uses none.

Where to start: :func:`read_jsonl` reads a JSONL file into located rows (file, line,
object), and a bad line is one :class:`DataError` naming file, line and field;
:func:`atomic_write` replaces a file whole, inside the folder its writer names
(:func:`check_inside`: never through a symbolic link); :func:`read_small_text` reads a small file
whole and bounded, :func:`read_json` a small JSON file (bounded in size and depth);
:func:`load_yaml` reads YAML (no aliases, no key given twice); :class:`FolderError` is a
file or folder that cannot be used as asked.
:class:`Table` (cells of text and the numbers behind them) and :func:`render` write a
report as Markdown, LaTeX (booktabs), CSV or JSON, the one place that knows those formats.
:class:`BoundedSandbox` (:mod:`.sandbox`) renders someone else's Jinja template within
bounds of time, size and depth (loaded when first used: it imports Jinja).

>>> from nlieval.ground import JsonLine, read_jsonl
>>> next(read_jsonl("f.jsonl", [b'{"a": 1}\\n'])) == JsonLine("f.jsonl", 1, {"a": 1}, '{"a": 1}\\n')
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import FLAG, DataError, FolderError, SettingError
from .files import (
    append_own,
    atomic_write,
    check_inside,
    cut_torn_tail,
    make_folder,
    open_own,
    open_regular,
    read_own,
    read_small_text,
    stat_own,
    write_error,
)
from .jsonl import (
    MAX_JSON_BYTES,
    MAX_LINE_BYTES,
    JsonLine,
    bounded_lines,
    invalid_json,
    parse_json,
    read_json,
    read_jsonl,
)
from .tables import (
    FORMATS,
    TEXT_FORMATS,
    Block,
    Cell,
    Document,
    Table,
    blocks_json,
    cell,
    latex_table,
    markdown_table,
    mean_label,
    render,
)
from .yaml import load_yaml

if TYPE_CHECKING:
    from .sandbox import (
        BadTemplate,
        BoundedSandbox,
        BoundedTemplate,
        ChatTemplate,
        Refused,
        TemplateLimits,
        chat_sandbox,
        load_prompt_templates,
        prompt_sandbox,
        text_size,
    )

__all__ = [
    "FLAG",
    "MAX_JSON_BYTES",
    "MAX_LINE_BYTES",
    "FORMATS",
    "TEXT_FORMATS",
    "Block",
    "Cell",
    "DataError",
    "Document",
    "FolderError",
    "JsonLine",
    "SettingError",
    "Table",
    "append_own",
    "atomic_write",
    "blocks_json",
    "bounded_lines",
    "cell",
    "check_inside",
    "cut_torn_tail",
    "invalid_json",
    "latex_table",
    "load_yaml",
    "make_folder",
    "markdown_table",
    "mean_label",
    "open_own",
    "open_regular",
    "parse_json",
    "read_json",
    "read_jsonl",
    "read_own",
    "read_small_text",
    "render",
    "stat_own",
    "write_error",
    # The sandbox's, imported when one is first asked for (Jinja takes a fifth of a
    # second to import; reading a file needs none of it).
    "BadTemplate",
    "BoundedSandbox",
    "BoundedTemplate",
    "ChatTemplate",
    "Refused",
    "TemplateLimits",
    "chat_sandbox",
    "load_prompt_templates",
    "prompt_sandbox",
    "text_size",
]


def __getattr__(name: str) -> Any:
    if name in __all__:  # not imported above: one of the sandbox
        from . import sandbox

        return getattr(sandbox, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
