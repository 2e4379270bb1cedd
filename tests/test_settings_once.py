"""Each shared setting is declared once: every flag field named ``out``, ``data_dir``,
``model``, ``split``, ``task`` or ``tasks`` is made by that setting's one factory
(``settings.out_setting``; ``data.data_dir_setting``, ``split_setting``,
``task_setting``, ``tasks_setting``; ``backends.model_setting``), which marks it
(``settings.shared``). A command's own meaning goes through the factory's arguments
(its help, a default, an alias, choices), never through a second declaration.

Two checks: the settings classes of every command of ``commands.TABLE`` (its flags and
its block's classes, with the engines' options inside them) and the other dataclasses
with flags that the command line loads (``experiment``'s, ``build``'s) carry the mark;
and no class in ``src/nlieval`` declares one of those fields with ``setting(...)`` by
hand. A field without a flag is a configuration's data, not a setting
(``TrainConfig.out``, filled from ``--out``; ``ImportConfig.tasks``, written for
``config.json``).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from collections.abc import Iterator
from dataclasses import Field, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import nlieval
import nlieval.cli
from nlieval.backends import model_setting
from nlieval.commands import TABLE, load
from nlieval.data import task_setting
from nlieval.settings import flag_of, options_of, setting, shared_of

SHARED = ("out", "data_dir", "model", "split", "task", "tasks")
SRC = Path(nlieval.__file__).parent


def _settings_classes() -> set[type[Any]]:
    """Every settings class a command of the table reads its flags from, and every other
    dataclass with flags in the modules the command line loads (``experiment``'s and
    ``build``'s settings, which their handlers name, and the mixins)."""
    out: set[type[Any]] = set()
    for command in TABLE.values():
        refs = (*command.settings, *(command.block.classes if command.block else ()))
        out |= {load(r) if isinstance(r, str) else r for r in refs}
    for info in pkgutil.iter_modules(nlieval.cli.__path__):
        if info.name != "__main__":
            importlib.import_module(f"nlieval.cli.{info.name}")
    for name, module in list(sys.modules.items()):
        if name.startswith("nlieval."):
            out |= {
                c
                for c in vars(module).values()
                if isinstance(c, type)
                and is_dataclass(c)
                and c.__module__ == name
                and any(flag_of(f) or options_of(f) for f in fields(c))
            }
    return out


def _flag_fields(cls: type[Any]) -> Iterator[tuple[type[Any], Field[Any]]]:
    """The flag fields of ``cls`` and of the options classes it holds."""
    for f in fields(cls):
        opt = options_of(f)
        if opt is not None:
            yield from _flag_fields(opt.cls)
        elif flag_of(f) is not None:
            yield cls, f


def hand_made(classes: set[type[Any]]) -> list[str]:
    """``Class.field`` of each flag field with a shared name not made by its factory."""
    return sorted(
        f"{cls.__name__}.{f.name}"
        for c in classes
        for cls, f in _flag_fields(c)
        if f.name in SHARED and shared_of(f) != f.name
    )


def test_every_shared_flag_of_a_command_is_made_by_its_factory() -> None:
    classes = _settings_classes()
    assert len(classes) > 40
    assert hand_made(classes) == []
    found = {f.name for c in classes for _, f in _flag_fields(c)}
    # The walk reaches every name (a walk that found none would pass vacuously).
    assert set(SHARED) <= found


def test_a_hand_made_copy_is_found() -> None:
    @dataclass(frozen=True)
    class ByHand:
        model: str = setting("m", help="a model declared by hand")
        task: str = task_setting("to read", "snli")
        split: str | None = setting(None, help="split to read", names=("--split",))

    @dataclass(frozen=True)
    class Other:
        # A factory's mark is its own name: model's mark on a task is still a copy.
        task: str = model_setting("a task made by the model's factory", label=True)

    assert hand_made({ByHand, Other}) == ["ByHand.model", "ByHand.split", "Other.task"]


def _declared_by_hand(path: Path, root: Path = SRC.parent) -> Iterator[str]:
    """``file:line Class.field`` of each class field with a shared name whose value is a
    call of ``setting`` (the hand-made declaration the factories replace)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            call = stmt.value
            if stmt.target.id not in SHARED or not isinstance(call, ast.Call):
                continue
            func = call.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name == "setting":
                where = path.relative_to(root)
                yield f"{where}:{stmt.lineno} {node.name}.{stmt.target.id}"


def test_no_source_declares_a_shared_setting_by_hand() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 50
    assert [d for path in files for d in _declared_by_hand(path)] == []


def test_the_source_check_finds_a_hand_made_declaration(tmp_path: Path) -> None:
    path = SRC / "settings.py"
    text = path.read_text(encoding="utf-8")
    # A copy of a real module with one field declared by hand at its end.
    copy = tmp_path / "settings.py"
    copy.write_text(
        text + "\n\nclass Late:\n    model: str = setting(help='a model', cli_default='m')\n",
        encoding="utf-8",
    )
    lines = len(copy.read_text(encoding="utf-8").splitlines())
    assert list(_declared_by_hand(copy, tmp_path)) == [f"settings.py:{lines} Late.model"]
