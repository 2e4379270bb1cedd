"""Every cross-reference of a docstring or comment in the source (``:func:`~nlieval...```,
``:class:``, ``:meth:``, ...) names something that exists, and one that goes through a
room's door (``nlieval.classifiers.X``) names what that door offers (its ``__all__``):
a reader who follows it finds the public name, not a private helper of another floor."""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src" / "nlieval"
ROLE = re.compile(r":(?:func|class|meth|data|attr|exc|mod|obj):`~?(nlieval(?:\.\w+)+)`")


def _module_of(parts: list[str]) -> tuple[ModuleType, list[str]]:
    # The longest prefix that is a module, and the names after it.
    for i in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:i])), parts[i:]
        except ImportError:
            continue
    raise AssertionError(f"no module in {'.'.join(parts)}")


def _has(obj: Any, name: str) -> bool:
    # An attribute, or a dataclass field without a class default (set per instance).
    if hasattr(obj, name):
        return True
    return dataclasses.is_dataclass(obj) and name in {f.name for f in dataclasses.fields(obj)}


def _broken(reference: str) -> str | None:
    module, rest = _module_of(reference.split("."))
    if rest and hasattr(module, "__path__") and rest[0] not in getattr(module, "__all__", ()):
        return f"{rest[0]} is not offered by {module.__name__}'s door (__all__)"
    obj: Any = module
    for name in rest:
        if not _has(obj, name):
            return f"{name} is not in {getattr(obj, '__name__', obj)}"
        obj = getattr(obj, name, None)
    return None


def _references() -> list[tuple[str, str]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in ROLE.finditer(line):
                found.append((f"{path.relative_to(SRC.parent)}:{n}", m.group(1)))
    return found


def test_the_source_has_references_to_check() -> None:
    assert len(_references()) > 50


def test_every_reference_names_a_public_name_that_exists() -> None:
    broken = [f"{where}: {ref}: {why}" for where, ref in _references() if (why := _broken(ref))]
    assert not broken, "\n".join(broken)


def test_a_reference_to_a_private_name_behind_a_door_is_caught() -> None:
    assert _broken("nlieval.classifiers.save_classifier") is None
    assert _broken("nlieval.classifiers.save_lora") is not None
    assert _broken("nlieval.sci.instruct_prompt.InstructPrompt.options") is None
    assert _broken("nlieval.backends.Generation.nothing") is not None
