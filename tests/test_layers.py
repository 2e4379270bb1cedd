"""The house rules of the package, checked on its source: imports point down only
(cli -> report -> families -> runs -> data/backends/metrics/plotting -> types/ground,
the files and templates room), families do not import each other, no import cycle
between files, no private name taken from another file, no dynamic imports. Every
import counts, also one inside a function or under ``TYPE_CHECKING``. And the public
surface: every family package exports its entry points with ``__all__`` and a docstring
saying where to start, importing one loads no model library, and the package facade
(``nlieval``) is built from its one list.

Run it alone to see the rules hold: ``python -m pytest tests/test_layers.py``.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "nlieval"

#: Each room (subpackage or top module) and its floor. A room imports only rooms on
#: lower floors (and itself); rooms on one floor do not import each other.
FLOORS: dict[str, int] = {
    "types": 0,
    "settings": 0,
    "ground": 0,
    # The one table of commands: names and references only, loaded by its readers.
    "commands": 0,
    "data": 1,
    # The trainable classifier (heads, inputs, its folder, labels): trained by sci,
    # loaded as a model by the engines one floor up.
    "classifiers": 1,
    "metrics": 1,
    # Every engine; a trained classifier folder is loaded through the classifiers' door.
    "backends": 2,
    "runs": 2,
    # The tests and the plots read the metric table of metrics (one floor down).
    "significance": 2,
    "plotting": 2,
    "choice": 3,
    "analyses": 3,
    "contamination": 3,
    "sci": 3,
    "metainference": 3,
    "reports": 4,
    # A study's grid of runs: the families' commands and the reports, from one file.
    "experiments": 5,
    # The pages of `nlieval view`: numbers from the reports (grid, items).
    "view": 5,
    "cli": 6,
    # `python -m nlieval`: the command line, one floor above it.
    "__main__": 7,
}


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def _modules() -> dict[str, Path]:
    return {_module_name(p)[0]: p for p in sorted(SRC.rglob("*.py"))}


def _imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """(line, absolute module, names) of every nlieval import in a file."""
    name, is_pkg = _module_name(path)
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] == "nlieval":
                yield node.lineno, module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "nlieval":
                    yield node.lineno, alias.name, []


def _targets(module: str, names: list[str], modules: dict[str, Path]) -> list[str]:
    """The files an import reads: ``from pkg import sub`` reads the submodule."""
    subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules]
    return subs if subs and len(subs) == len(names) else [module]


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _edges() -> Iterator[tuple[str, int, str, list[str]]]:
    modules = _modules()
    for mod, path in modules.items():
        if mod == "nlieval":
            continue  # the package facade: lazy exports of the public API
        for line, module, names in _imports(path):
            for target in _targets(module, names, modules):
                yield mod, line, target, names


def test_every_room_has_a_floor() -> None:
    rooms = {_room(m) for m in _modules()} - {""}
    assert rooms - {"resources"} <= set(FLOORS), rooms - set(FLOORS)


def test_imports_point_down() -> None:
    bad = []
    for mod, line, target, _ in _edges():
        src, dst = _room(mod), _room(target)
        if src == dst:
            continue
        if not dst:
            bad.append(f"{mod}:{line} imports the package root")
        elif FLOORS[dst] >= FLOORS[src]:
            bad.append(f"{mod}:{line} -> {target} ({src} floor {FLOORS[src]}, {dst} {FLOORS[dst]})")
    assert not bad, "\n".join(bad)


def test_packages_are_reached_through_their_front_door() -> None:
    # Outside a package, everything it offers is taken from the package itself
    # (`from ..backends import X`, never `from ..backends.hf import X`), so its files
    # may be split or renamed without touching the rooms above.
    modules = _modules()
    bad = [
        f"{mod}:{line} imports {target}"
        for mod, line, target, _ in _edges()
        if _room(mod) != _room(target)
        and target.count(".") >= 2
        and f"nlieval.{_room(target)}" in modules
    ]
    assert not bad, "\n".join(bad)


def _door_imports() -> Iterator[tuple[str, int, str, str]]:
    """(module, line, package, name) of every name a room takes from another room's
    package door (``from ..backends import resolve``; not ``from .. import data``)."""
    modules = _modules()
    for mod, path in modules.items():
        if mod == "nlieval":
            continue  # the package facade
        for line, module, names in _imports(path):
            if module.count(".") != 1 or not str(modules.get(module, "")).endswith("__init__.py"):
                continue
            if _room(module) == _room(mod):
                continue
            for n in names:
                if f"{module}.{n}" not in modules:  # a name, not a submodule
                    yield mod, line, module, n


def test_a_door_offers_only_its_all() -> None:
    # A package's door is its `__all__`: a name another room takes from it is listed
    # there, so narrowing the list narrows what the rooms above may use.
    bad = [
        f"{mod}:{line} takes {name} from {package}, which does not list it in __all__"
        for mod, line, package, name in _door_imports()
        if _room(package) in PACKAGES  # cli is the command line: its entry point is main
        and name not in importlib.import_module(package).__all__
    ]
    assert not bad, "\n".join(bad)


#: The most names the engines' door may offer: the model registry, the option classes,
#: the protocols, the errors and the few engine functions the families call.
ENGINE_DOOR = 25


def test_the_engine_door_is_narrow() -> None:
    import nlieval.backends

    names = nlieval.backends.__all__
    assert len(names) <= ENGINE_DOOR, f"{len(names)} names: {sorted(names)}"


def test_sci_takes_from_the_engines_only_their_door() -> None:
    # `nlieval train` builds and saves the classifier through its own room
    # (nlieval.classifiers); of the engines it takes only what their door lists.
    import nlieval.backends

    taken = [
        (mod, line, target, names)
        for mod, line, target, names in _edges()
        if _room(mod) == "sci" and _room(target) == "backends"
    ]
    assert taken, "sci imports nothing from the engines: this test counts nothing"
    bad = [
        f"{mod}:{line} imports {target} {names}"
        for mod, line, target, names in taken
        if target != "nlieval.backends" or not set(names) <= set(nlieval.backends.__all__)
    ]
    assert not bad, "\n".join(bad)


def test_no_private_name_from_another_file() -> None:
    bad = [
        f"{mod}:{line} takes {n} from {target}"
        for mod, line, target, names in _edges()
        if target != mod
        for n in names
        if n.startswith("_") and not n.startswith("__")
    ]
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_files() -> None:
    graph: dict[str, set[str]] = {}
    modules = _modules()
    for mod, _, target, _ in _edges():
        if target in modules and target != mod:
            graph.setdefault(mod, set()).add(target)
    cycles = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


def test_no_dynamic_imports() -> None:
    bad = []
    for mod, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
                and mod not in ("nlieval", "nlieval.commands")
            ):
                bad.append(f"{mod}:{node.lineno}")
    assert not bad, "importlib.import_module outside the package facade: " + ", ".join(bad)


def test_the_command_table_refers_only_to_what_its_readers_may_import() -> None:
    # The table (nlieval.commands) names what lies above it by reference, loaded by its
    # readers: the same rules hold for a reference as for an import. A settings class
    # is taken from its room's front door, below every reader that loads it (a block's
    # and an output's by experiments, floor 5; the others by cli); the writers of blocks
    # and outputs lie in experiments itself; a group is a module of cli.
    from nlieval.commands import TABLE

    modules = _modules()
    bad = []
    for name, c in TABLE.items():
        reader = FLOORS["experiments" if c.block or c.output else "cli"]
        refs = [(r, "settings") for r in c.settings]
        refs += [(r, "settings") for r in (c.block.classes if c.block else ())]
        refs += [(r, "writer") for r in ([c.block.write] if c.block else [])]
        refs += [(r, "writer") for r in ([c.output.write] if c.output else [])]
        for ref, what in refs:
            module, _, attr = ref.partition(":")
            room = module.split(".")[0]
            if f"nlieval.{module}" not in modules or attr.startswith("_"):
                bad.append(f"{name}: {ref} is no module's public name")
            elif what == "settings" and module != room:
                bad.append(f"{name}: {ref} is not taken from the front door of {room}")
            elif what == "settings" and FLOORS[room] >= reader:
                bad.append(f"{name}: {ref} is on floor {FLOORS[room]}, its reader's or above")
            elif what == "writer" and room != "experiments":
                bad.append(f"{name}: its writer {ref} is not in experiments")
        if c.group is not None and f"nlieval.cli.{c.group}" not in modules:
            bad.append(f"{name}: no module cli.{c.group}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("room", sorted(r for r in FLOORS if (SRC / r).is_dir()))
def test_each_family_has_a_public_init(room: str) -> None:
    init = SRC / room / "__init__.py"
    text = init.read_text(encoding="utf-8")
    assert ast.get_docstring(ast.parse(text)), f"{init} has no docstring"


#: The packages under the command line, each a public surface of its own (``cli`` is the
#: command line itself: its entry point is ``main``).
PACKAGES = sorted(r for r in FLOORS if (SRC / r).is_dir() and r != "cli")


def test_packages_are_the_families() -> None:
    families = ["choice", "analyses", "contamination", "sci", "metainference", "data", "runs"]
    families += ["plotting"]  # not a family: the one room of every plot, below them
    families += ["experiments"]  # not a family: a study's grid of the families' commands
    families += ["view"]  # not a family: the pages of `nlieval view`, above the reports
    assert sorted([*families, "backends", "classifiers", "ground"]) == PACKAGES


@pytest.mark.parametrize("room", PACKAGES)
def test_each_family_exports_its_entry_points(room: str) -> None:
    module = importlib.import_module(f"nlieval.{room}")
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list) and exported, f"nlieval.{room} has no __all__"
    assert len(set(exported)) == len(exported), f"nlieval.{room}.__all__ repeats a name"
    assert not [n for n in exported if n.startswith("_")], f"nlieval.{room} exports private names"
    doc = (module.__doc__ or "").strip()
    assert len(doc.splitlines()) > 1, f"nlieval.{room}: say in the docstring where to start"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"nlieval.{room}.__all__ names what it lacks: {missing}"


def _python(code: str) -> object:
    """What a fresh interpreter prints as JSON (nothing imported before)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_importing_a_family_loads_no_model_library() -> None:
    imports = "; ".join(f"import nlieval.{room}" for room in PACKAGES)
    loaded = _python(
        f"import json, sys, nlieval; {imports}; "
        "print(json.dumps(sorted({'torch', 'transformers'} & set(sys.modules))))"
    )
    assert loaded == [], f"importing the packages imports {loaded} (import it when it is used)"


#: Run in a fresh interpreter: the facade names whose object is not their submodule's,
#: and the model libraries loaded by resolving them all.
RESOLVE_FACADE = """
import importlib, json, sys, nlieval
import nlieval.cli  # every submodule loaded: none may shadow a facade name (report)
wrong = []
for name, module in nlieval._EXPORTS.items():
    if getattr(nlieval, name) is not getattr(importlib.import_module(f"nlieval.{module}"), name):
        wrong.append(name)
print(json.dumps([wrong, sorted({"torch", "transformers"} & set(sys.modules))]))
"""


def test_facade_is_built_from_one_list() -> None:
    import nlieval

    exports: dict[str, str] = nlieval._EXPORTS  # the one list: name -> defining submodule
    assert nlieval.__all__ == list(exports)
    assert set(exports) <= set(dir(nlieval))
    # No name is imported statically: that would be a second list (and a slow import).
    tree = ast.parse((SRC / "__init__.py").read_text(encoding="utf-8"))
    static = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.level or node.module == "nlieval")
    ]
    assert not static, f"src/nlieval/__init__.py imports from the package, lines {static}"
    for name, module in exports.items():
        assert hasattr(importlib.import_module(f"nlieval.{module}"), name), (name, module)
    # Each name resolves to its submodule's object, and loads no model library.
    got = _python(RESOLVE_FACADE)
    assert got == [[], []], f"[names resolved wrong, model libraries loaded]: {got}"
