"""The JSON Schema of an experiment file, generated from the settings classes of the
commands and outputs (so an editor knows every key a block or output may take), kept at
``experiments/schema.json`` (``nlieval experiment schema``; a test checks it is current).

>>> s = experiment_schema()
>>> sorted(s["properties"])[:3], "limit" in s["$defs"]["block-run"]["properties"]
(['backoff', 'blocks', 'description'], True)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..runs import atomic_write, make_folder
from .commands import COMMAND_NAMES, json_type, setting_fields
from .report import BLOCK_OPTIONS, KINDS, option_fields
from .spec import AXES

#: spec.MEMORY for an editor (JSON Schema has no flags: the unit's case spelled out).
MEMORY_PATTERN = r"^\s*[0-9]+\s*[KMGTkmgt][Ii]?[Bb]?\s*$"

_LIST = {
    "anyOf": [
        {"type": "array", "items": {"type": ["string", "integer"]}},
        {"type": ["string", "integer"]},
    ]
}


def _block(name: str) -> dict[str, Any]:
    props: dict[str, Any] = {"command": {"const": name}}
    for key, f in setting_fields(name).items():
        props[key] = json_type(f)
    return {
        "type": "object",
        "properties": props,
        "required": ["command"],
        "additionalProperties": False,
    }


def _output(name: str) -> dict[str, Any]:
    props: dict[str, Any] = {
        "kind": {"const": name},
        "label": {"type": "string", "description": "the study's table or figure number"},
        "blocks": {"type": "array", "items": {"type": "string"}},
    }
    if name == "figure":
        from ..reports import FIGURES

        props["figure"] = {"enum": list(FIGURES)}
    for key in BLOCK_OPTIONS.get(name, ()):
        props[key] = {"type": "string", "description": "the name of a block"}
    for key, f in option_fields(KINDS[name]).items():
        props[key] = json_type(f)
    return {
        "type": "object",
        "properties": props,
        "required": ["kind", "blocks"],
        "additionalProperties": False,
    }


def experiment_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of an experiment file."""
    from .commands import engine_option_keys

    engine: dict[str, Any] = {}
    for name in COMMAND_NAMES:
        for key, f in setting_fields(name).items():
            if key in engine_option_keys():
                engine.setdefault(key, json_type(f))
    model = {
        "anyOf": [
            {"type": "string"},
            {
                "type": "object",
                "properties": {
                    "model": {"type": "string"},
                    "resources": {
                        "type": "object",
                        "properties": {
                            "gpus": {"type": "integer", "minimum": 0},
                            "memory": {"type": "string", "pattern": MEMORY_PATTERN},
                            "time": {"type": ["string", "integer"]},
                        },
                        "additionalProperties": False,
                    },
                    **engine,
                },
                "required": ["model"],
                "additionalProperties": False,
            },
        ]
    }
    entry = {
        "type": "object",
        "properties": {
            "block": {"type": "string"},
            "each": {"type": "array", "items": {"enum": list(AXES[1:])}},
            **{axis: _LIST for axis in AXES},
        },
        "required": ["block"],
        "additionalProperties": False,
    }
    defs: dict[str, Any] = {f"block-{n}": _block(n) for n in COMMAND_NAMES}
    defs.update({f"output-{n}": _output(n) for n in KINDS})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "nlieval experiment file",
        "type": "object",
        "properties": {
            "experiment": {"type": "string"},
            "description": {"type": "string"},
            "retries": {"type": "integer", "minimum": 0, "maximum": 10},
            "backoff": {"type": "number", "minimum": 0, "maximum": 3600},
            "models": {"type": "object", "additionalProperties": model},
            "blocks": {
                "type": "object",
                "additionalProperties": {
                    "oneOf": [{"$ref": f"#/$defs/block-{n}"} for n in COMMAND_NAMES]
                },
            },
            "matrix": {"type": "array", "items": entry},
            "outputs": {
                "type": "object",
                "additionalProperties": {"oneOf": [{"$ref": f"#/$defs/output-{n}"} for n in KINDS]},
            },
        },
        "additionalProperties": False,
        "$defs": defs,
    }


def schema_text() -> str:
    """The schema as ``experiments/schema.json`` holds it (sorted keys, 2-space indent)."""
    return json.dumps(experiment_schema(), indent=2, sort_keys=True) + "\n"


def write_schema(out: str | Path) -> Path:
    """Write :func:`schema_text` to ``out`` (its folder made, the file replaced whole).

    >>> import tempfile
    >>> path = write_schema(Path(tempfile.mkdtemp()) / "sub" / "schema.json")
    >>> path.read_text() == schema_text()
    True
    """
    path = Path(out)
    make_folder(path.parent)
    atomic_write(path, schema_text(), root=path.parent)
    return path
