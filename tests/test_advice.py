"""An error never names a flag its command lacks (issue 45): every message of the
package that names a ``--flag`` (what a ``raise`` raises, a run folder's ``advice=``, a
warning, what a function named for a warning or an advice returns) is checked against
the parser of every command that can say it.

Which commands can say a message is read from the source: a call graph from each
command's handler (:func:`reached`, an over-approximation: a call goes where a name
leads). What a command prints of the message is decided where the package decides it,
and the test asks those places rather than copying their rules:

- a run folder's advice (``FolderError(advice=...)``) is said by the command line only
  as far as the command has the flags it names (``FolderError.advice_to``): ``report``
  reading a folder with a doubled record says no ``--overwrite``;
- inside ``experiment plan`` and ``run`` a cell has no flags: the library's words are
  said with ``--set KEY=VALUE`` (``experiments.driver.as_set``, from the settings'
  declared flags), warnings and errors alike, and a flag only an output's option sets
  (a report's refusal) as that option of the file's output;
- a setting's check (``ground.SettingError``) names its fields: a command says a
  field's flag only where it has it, else the field's name
  (``SettingError.said_to``), and an experiment the file's key
  (``experiments.driver.setting_said``): ``run`` says ``--max-memory needs
  --device-map``, an experiment ``max_memory needs device_map``;
- a flag written after ``nlieval CMD`` in a message is ``CMD``'s (a command to run next).

So a message is worded once, in the library, for the command that owns the flag, and a
command that shares the code but not the flag is worded by its own layer. A new message
naming a flag some command that reaches it lacks fails
:func:`test_every_message_a_command_can_say_names_only_its_flags`, unless ``NOT_SAID``
says why that command cannot say it after all, or ``KNOWN`` lists it as found and not
fixed yet, with why (a fixed one must leave the list:
:func:`test_each_known_exception_is_still_there`).

Each refusal of ``CASES`` is also brought about through ``nlieval``'s own entry point,
and the ``experiment`` cases show the ``--set`` form end to end. A last check reads the
source: every flag named in a message is a flag of some command (a renamed or removed
flag is not advised)."""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import inspect
import logging
import re
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nlieval.cli import build_parser, main
from nlieval.commands import TABLE, load
from nlieval.experiments.driver import as_set, said_as_set
from nlieval.ground import FLAG, FolderError, SettingError
from nlieval.runs import RunFolder
from nlieval.sci.train_config import TrainError
from nlieval.types import Record

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "nlieval"
EXAMPLE = ROOT / "docs" / "examples" / "mismatched"
#: Flags of other programs that an error may name (pip's in an install hint, vLLM's).
OTHERS = {"--no-deps", "--max-logprobs", "--logprobs-mode"}


def _parsers() -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    def walk(
        p: argparse.ArgumentParser, path: tuple[str, ...]
    ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield (*path, name), sub
                    yield from walk(sub, (*path, name))

    yield from walk(build_parser(), ())


PARSERS = dict(_parsers())
FLAGS = {path: {s for a in p._actions for s in a.option_strings} for path, p in PARSERS.items()}


def _rec(model: str, item: str) -> Record:
    return Record("t", item, model, 0, 0, ("a", "b"), (-0.1, -2.0), (0.9, 0.1), "a", "a")


def _mixed(tmp: Path) -> list[str]:
    # Two folders of one task on other items (3 and 1).
    out = []
    for name, items in (("a", ("1", "2", "3")), ("b", ("4",))):
        (tmp / name).mkdir()
        RunFolder(tmp / name).append([_rec(name, i) for i in items])
        out.append(str(tmp / name))
    return out


def _labels(tmp: Path) -> str:
    (tmp / "p.csv").write_text("id,pred\nsmoke-train-01,entailment\n")
    return str(tmp / "p.csv")


def _experiment(tmp: Path, extra: str = "") -> str:
    (tmp / "e.yaml").write_text(
        "models: {a: smollm2-135m}\nblocks: {b: {command: run, tasks: [smoke]}}\n"
        f"matrix: [{{block: b, models: [a]{extra}}}]\n"
    )
    return str(tmp / "e.yaml")


#: Each refusal: a name, and the command line that brings it about (given tmp_path).
CASES: dict[str, Callable[[Path], list[str]]] = {
    "view: folders on other items (shown, not refused)": lambda t: [
        "view", *_mixed(t), "--out", str(t / "site")],
    "view: nothing to show": lambda t: ["view", str(t), "--out", str(t / "site")],
    "grid: folders on other items": lambda t: ["grid", *_mixed(t)],
    "import: another split": lambda t: [
        "import", _labels(t), "--format", "labels", "--model", "m", "--task", "smoke",
        "--out", str(t / "r")],
    "import: two splits": lambda t: [
        "import", _labels(t), "--format", "labels", "--model", "m", "--task", "smoke@train",
        "--split", "test", "--out", str(t / "r")],
    "import: no task": lambda t: [
        "import", _labels(t), "--format", "labels", "--model", "m", "--out", str(t / "r")],
    "import: no model": lambda t: [
        "import", _labels(t), "--format", "labels", "--task", "smoke@train", "--out",
        str(t / "r")],
    "experiment run: --gpus with ray": lambda t: [
        "experiment", "run", _experiment(t), "--out", str(t / "x"), "--executor", "ray",
        "--gpus", "0"],
    "experiment run: --slurm-array without slurm": lambda t: [
        "experiment", "run", _experiment(t), "--out", str(t / "x"), "--slurm-array"],
    "experiment plan: more than 100 cells": lambda t: [
        "experiment", "plan", _experiment(t, ", seeds: [" + ",".join(map(str, range(101)))
                                          + "], each: [seeds]"), "--no-estimate"],
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_a_refusal_names_only_flags_of_its_own_command(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = CASES[case](tmp_path)
    code = main(argv)
    said = capsys.readouterr().err
    command = tuple(argv[:2]) if argv[0] == "experiment" else (argv[0],)
    named = set(FLAG.findall(said))
    assert not named - FLAGS[command] - OTHERS, (case, said)
    if "shown, not refused" in case:
        assert code == 0, said
    else:
        assert code != 0 and said.startswith("nlieval: error: "), said


# --------------------------------------------------------------------------- the rule
# Which commands can say a message: a call graph of the package read from its source,
# from each command's handler. A unit is a top-level function, class body or assignment
# of a module, or a method; a unit reaches every unit its code names (a name of its
# module, an imported name, ``module.name``), and a class reached reaches its dunder
# methods and every method whose name the reached code mentions (as an attribute, a
# keyword or a string). This over-approximates: a call goes only where a name leads.

Unit = tuple[str, ...]  # (module, top-level name) or (module, class, method)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Where a message is said: what a ``raise`` raises, an ``advice=``, a logger's or
#: warnings' call, and what a function named for a warning or an advice returns.
_LOG_CALLS = {"warning", "warn", "error", "exception"}


class _Module:
    def __init__(self, name: str, path: Path) -> None:
        self.name, self.path = name, path
        self.globals = vars(importlib.import_module(name))
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.top: dict[str, ast.stmt] = {}
        self.methods: dict[str, dict[str, ast.stmt]] = {}
        for st in self.tree.body:
            if isinstance(st, (*_DEFS, ast.ClassDef)):
                self.top[st.name] = st
            elif isinstance(st, (ast.Assign, ast.AnnAssign)):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for n in (n for t in targets for n in ast.walk(t)):
                    if isinstance(n, ast.Name):
                        self.top[n.id] = st
            if isinstance(st, ast.ClassDef):
                self.methods[st.name] = {b.name: b for b in st.body if isinstance(b, _DEFS)}

    def units(self) -> Iterator[tuple[Unit, list[ast.AST]]]:
        """Each unit with its code (a class: its body less its methods)."""
        for name, st in self.top.items():
            if isinstance(st, ast.ClassDef):
                rest = [b for b in st.body if not isinstance(b, _DEFS)]
                yield (self.name, name), [*rest, *st.bases, *st.decorator_list]
                for meth, b in self.methods[name].items():
                    yield (self.name, name, meth), [b]
            else:
                yield (self.name, name), [st]


def _load() -> dict[str, _Module]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = _Module(".".join(parts), path)
    return out


MODULES = _load()
CODE = {unit: code for m in MODULES.values() for unit, code in m.units()}
#: The unit that assigns each object a module holds (a table, a constant instance).
_ASSIGNED = {
    id(m.globals[n]): (m.name, n)
    for m in MODULES.values()
    for n, st in m.top.items()
    if isinstance(st, (ast.Assign, ast.AnnAssign)) and n in m.globals
}


def _unit_of(obj: object) -> Unit | None:
    if inspect.ismethod(obj):
        obj = obj.__func__
    if callable(obj) and hasattr(obj, "__wrapped__"):
        obj = inspect.unwrap(obj)  # a cached function (functools.cache)
    if inspect.isfunction(obj) or inspect.isclass(obj):
        unit = (getattr(obj, "__module__", ""), *obj.__qualname__.split(".")[:2])
        return unit if unit in CODE else unit[:2] if unit[:2] in CODE else None
    return None if isinstance(obj, types.ModuleType) else _ASSIGNED.get(id(obj))


def _imported(m: _Module, node: ast.ImportFrom) -> dict[str, object]:
    package = m.name.split(".")[: None if m.path.name == "__init__.py" else -1]
    base = package[: len(package) - node.level + 1] if node.level else []
    source = ".".join([*base, node.module] if node.module else base)
    if not source.startswith("nlieval"):
        return {}
    mod = importlib.import_module(source)
    return {
        a.asname or a.name: getattr(mod, a.name, None) or importlib.import_module(
            f"{source}.{a.name}")
        for a in node.names
    }  # fmt: skip


def _scan(unit: Unit) -> tuple[set[Unit], set[str]]:
    """The units ``unit``'s code names, and the words it may call a method by."""
    m = MODULES[unit[0]]
    nodes = [n for code in CODE[unit] for n in ast.walk(code)]
    local: dict[str, object] = {}
    for n in nodes:
        if isinstance(n, ast.ImportFrom):
            local.update(_imported(m, n))
    named: set[Unit | None] = set()
    words: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Name):
            own = n.id in m.top and n.id not in local
            named.add((m.name, n.id) if own else _unit_of(local.get(n.id, m.globals.get(n.id))))
        elif isinstance(n, ast.Attribute):
            words.add(n.attr)
            if isinstance(n.value, ast.Name):
                base = local.get(n.value.id, m.globals.get(n.value.id))
                if isinstance(base, types.ModuleType):
                    named.add(_unit_of(getattr(base, n.attr, None)))
        elif isinstance(n, ast.keyword) and n.arg:
            words.add(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            words.add(n.value)  # getattr(obj, "name")
    return {u for u in named if u is not None and u != unit}, words


_SCANNED: dict[Unit, tuple[set[Unit], set[str]]] = {}


def _table_units() -> list[Unit]:
    refs: list[str] = []
    for com in TABLE.values():
        refs += list(com.settings)
        refs += [com.function] if com.function else []
        refs += [com.block.write, *com.block.classes] if com.block else []
        refs += [com.output.write] if com.output else []
    units = [_unit_of(load(ref)) for ref in refs]
    return [u for u in units if u is not None]


_TABLE_UNITS = _table_units()


def reached(start: Unit) -> set[Unit]:
    """Every unit a command whose handler is ``start`` may run."""
    seen: set[Unit] = set()
    todo, words, classes = [start], set[str](), set[Unit]()
    while todo:
        while todo:
            unit = todo.pop()
            if unit in seen:
                continue
            seen.add(unit)
            if unit not in _SCANNED:
                _SCANNED[unit] = _scan(unit)
            names, said = _SCANNED[unit]
            words |= said
            todo += [u for u in names if u not in seen]
            if unit == ("nlieval.commands", "load"):
                # The command table names its functions and classes by reference: what
                # calls load may run any of them (a block's writer, an output's).
                todo += [u for u in _TABLE_UNITS if u not in seen]
            if len(unit) == 3:
                todo.append(unit[:2])
            elif unit[1] in MODULES[unit[0]].methods:
                classes.add(unit)
        todo = [
            (*c, meth)
            for c in classes
            for meth in MODULES[c[0]].methods[c[1]]
            if (meth.startswith("__") or meth in words) and (*c, meth) not in seen
        ]
    return seen


def _setting_fields(m: _Module, exc: ast.expr) -> tuple[str, ...] | None:
    # The fields of ``raise SettingError(FIELDS, text)`` (a class of it, FIELDS written
    # out); None for any other raise, or fields the source does not spell.
    if not isinstance(exc, ast.Call) or not isinstance(exc.func, ast.Name) or not exc.args:
        return None
    cls = m.globals.get(exc.func.id)
    if not (isinstance(cls, type) and issubclass(cls, SettingError)):
        return None
    first = exc.args[0]
    names = first.elts if isinstance(first, ast.Tuple) else [first]
    if not all(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in names):
        return None
    return tuple(n.value for n in names)  # type: ignore[attr-defined]


def _messages() -> Iterator[tuple[Unit, int, str, str]]:
    """(unit, line, kind, text) of each text of a message that names a flag (kind:
    ``advice`` for a run folder's advice, ``setting:FIELD,...`` for a setting's check
    (:class:`~nlieval.ground.SettingError`), else ``said``)."""
    for unit, code in CODE.items():
        sites: list[tuple[str, ast.AST]] = []
        for n in (n for c in code for n in ast.walk(c)):
            if isinstance(n, ast.Raise) and n.exc is not None:
                fields = _setting_fields(MODULES[unit[0]], n.exc)
                sites.append(("said" if fields is None else "setting:" + ",".join(fields), n.exc))
            elif isinstance(n, ast.keyword) and n.arg == "advice":
                sites.append(("advice", n.value))
            elif isinstance(n, ast.Call) and getattr(n.func, "attr", None) in _LOG_CALLS:
                sites.append(("said", n))
            elif isinstance(n, _DEFS) and ("warning" in n.name or "advice" in n.name):
                sites += [("said", r.value) for r in ast.walk(n) if isinstance(r, ast.Return)
                          and r.value is not None]  # fmt: skip
        # An advice inside a raise is the advice's, not the reason's.
        advice = {id(c) for k, s in sites if k == "advice" for c in ast.walk(s)}
        for kind, site in sites:
            for c in ast.walk(site):
                if kind != "advice" and id(c) in advice:
                    continue
                if not isinstance(c, ast.Constant) or not isinstance(c.value, str):
                    continue
                if FLAG.search(c.value):
                    yield unit, c.lineno, kind, c.value


MESSAGES = list(_messages())

#: Commands the call graph says may reach a message they cannot say, and why.
NOT_SAID: dict[tuple[str, ...], str] = {
    ("experiment", "schema"): "reads the fields of the settings classes for their JSON "
    "types and builds none of them, so no refusal of theirs runs",
}
_VIEW = (
    "view calls the item listing with no row cap: the warning of rows left out needs a "
    "value only the items command's flag gives (the graph does not follow values); an "
    "experiment's report says it as the output's option (experiments.driver.as_set)"
)
#: Messages a command reaches and says with a flag it lacks, known and not fixed here
#: (``module:unit --flag``); each must still be found, so the list only shrinks.
KNOWN: dict[str, str] = {
    "nlieval.data.load:_load_hub --data-dir": "infer report loads its --items only as a "
    "path that exists (metainference.inferred.read_task refuses another), and a task file "
    "names no hub; the graph does not follow values",
}
#: The commands of a message's ``nlieval CMD ...``: a flag after it is CMD's.
_CITED = re.compile(r"\bnlieval ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")


def said(command: tuple[str, ...], kind: str, text: str) -> str:
    """What ``command`` prints of a message's ``text`` (see the module docstring)."""
    experiment = command[:1] == ("experiment",) and command[1:] in (("plan",), ("run",))
    if kind.startswith("setting:"):
        err = SettingError(tuple(kind.removeprefix("setting:").split(",")), text)
        if not experiment:
            return err.said_to(FLAGS[command])
        try:
            with said_as_set():
                raise err
        except SettingError as worded:
            return str(worded)
    if experiment:
        text = as_set(text)
    if kind == "advice":
        text = FolderError("", advice=text).advice_to(FLAGS[command]) or ""
    return text


def foreign(command: tuple[str, ...], text: str) -> set[str]:
    """The flags ``text`` names that ``command`` lacks (one after ``nlieval CMD``: that
    CMD's)."""
    flags, rest = FLAGS[command], text
    cited = _CITED.search(text)
    if cited is not None:
        words = tuple(w for w in cited.groups() if w)
        other = FLAGS.get(words) or FLAGS.get(words[:1])
        if other is not None:
            rest = text[: cited.start()]
            bad = set(FLAG.findall(text[cited.end() :])) - other - flags - OTHERS
            return bad | set(FLAG.findall(rest)) - flags - OTHERS
    return set(FLAG.findall(rest)) - flags - OTHERS


HANDLERS = {path: p.get_default("handler") for path, p in PARSERS.items()}
COMMANDS_RUN = [path for path, h in HANDLERS.items() if h is not None and path not in NOT_SAID]


@functools.cache
def _reach(command: tuple[str, ...]) -> frozenset[Unit]:
    start = _unit_of(HANDLERS[command])
    if start is None and command[0] in TABLE and TABLE[command[0]].function is not None:
        # A command the table declares with a library function: the CLI's one printing
        # handler calls that function, which is where its messages are.
        start = _unit_of(load(TABLE[command[0]].function))
    assert start is not None, command
    return frozenset(reached(start))


def _foreign_flags(command: tuple[str, ...]) -> Iterator[tuple[str, int, str]]:
    """(``module:unit --flag``, line, text) of each flag ``command`` may say and lacks."""
    units = _reach(command)
    for unit, line, kind, text in MESSAGES:
        if unit in units:
            for flag in sorted(foreign(command, said(command, kind, text))):
                yield f"{unit[0]}:{'.'.join(unit[1:])} {flag}", line, text


@pytest.mark.parametrize("command", COMMANDS_RUN, ids=" ".join)
def test_every_message_a_command_can_say_names_only_its_flags(command: tuple[str, ...]) -> None:
    bad = sorted(f"{key} (line {line}: {text!r})" for key, line, text in _foreign_flags(command)
                 if key not in KNOWN)  # fmt: skip
    assert not bad, bad


def test_each_known_exception_is_still_there() -> None:
    found = {key for command in COMMANDS_RUN for key, _, _ in _foreign_flags(command)}
    assert not set(KNOWN) - found, sorted(set(KNOWN) - found)


def test_the_call_graph_reaches_what_a_command_runs() -> None:
    # The graph must see the paths the rule depends on: the label warning of the items'
    # selection from run and from an experiment (its estimate), a run folder's refusal
    # from the commands that write one, and no model loading from report.
    def reaches(command: tuple[str, ...], module: str, name: str) -> bool:
        return any(u[:2] == (module, name) for u in _reach(command))

    for command in (("run",), ("experiment", "plan"), ("experiment", "run")):
        assert reaches(command, "nlieval.data.selection", "_balance_warning"), command
    assert reaches(("import",), "nlieval.runs.folder", "RunFolder")
    assert not reaches(("report",), "nlieval.backends.registry", "resolve")
    assert not reaches(("tasks",), "nlieval.runs.folder", "RunFolder")


def test_every_flag_an_error_names_is_a_flag_of_some_command() -> None:
    every = set().union(*FLAGS.values())
    unknown = sorted(
        f"{unit[0]}:{line}: {f}"
        for unit, line, _, text in MESSAGES
        for f in FLAG.findall(text)
        if f not in every | OTHERS
    )
    assert not unknown, unknown


# --------------------------------------------------------------------------- experiments


def _cell_file(tmp: Path, block: str) -> str:
    (tmp / "e.yaml").write_text(
        "retries: 0\nmodels: {a: " + str(tmp / "no-model") + "}\n"
        "blocks: {b: {command: run, tasks: [smoke], " + block + "}}\n"
        "matrix: [{block: b, models: [a]}]\n"
    )
    return str(tmp / "e.yaml")


@pytest.mark.parametrize("sub", ["plan", "run"])
def test_an_experiment_refusal_of_a_block_says_set(
    sub: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The block asks for the first 3 and a sample of 3 items: run's own refusal
    # (--limit and --sample cannot be combined), said as the file's keys.
    argv = ["experiment", sub, _cell_file(tmp_path, "limit: 3, sample: 3")]
    argv += ["--out", str(tmp_path / "x")] if sub == "run" else []
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--set limit=" in err and "--set sample=" in err, err
    assert not set(FLAG.findall(err)) - FLAGS[("experiment", sub)], err


def test_experiment_run_says_set_in_its_warnings_and_cell_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # The first 2 items of smoke hold no contradiction: the label warning (advice:
    # a stratified sample). The cell then fails in its run: a checkpoint of a model
    # path that is no model.
    path = _cell_file(tmp_path, "limit: 2, checkpoints: [step-1]")
    with caplog.at_level(logging.WARNING):
        code = main(["experiment", "run", path, "--out", str(tmp_path / "x")])
    out = capsys.readouterr()
    warned = [r.getMessage() for r in caplog.records]
    state = (tmp_path / "x" / "state" / "b-a.json").read_text()
    assert code == 1, out
    assert any("--set sample=2 takes a seeded sample" in w for w in warned), warned
    # The refused checkpoint: the file's line and key (a setting's check names it).
    said = "e.yaml:3: field 'checkpoints': SettingError: checkpoints step-1: not a path"
    assert said in out.out and said in state, out.out
    flags = FLAGS[("experiment", "run")]
    for text in (out.out, out.err, state, *warned):
        assert not set(FLAG.findall(text)) - flags, text


def test_a_folder_advice_names_only_the_flags_of_the_command_that_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A folder with two different records of one key: grid (no --overwrite) says the
    # reason and the advice it can follow.
    folder = tmp_path / "r"
    folder.mkdir()
    RunFolder(folder).append([_rec("m", "1")])
    with (folder / "records.jsonl").open("a") as f:
        f.write((folder / "records.jsonl").read_text().replace("-0.1", "-0.3"))
    assert main(["grid", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "a second, different record" in err and "remove the wrong one" in err, err
    assert not set(FLAG.findall(err)) - FLAGS[("grid",)], err


def test_what_an_experiment_says_through_the_library_is_worded_with_set(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A warning logged and an error raised (of a class of the library) while an
    # experiment is planned or run: both with the block's keys, the error of its class.
    with caplog.at_level(logging.WARNING), pytest.raises(TrainError) as err, said_as_set():
        logging.getLogger("nlieval.data").warning("%s: --limit %d takes", "smoke", 4)
        raise TrainError("the run diverged; train again with a lower --lr")
    assert [r.getMessage() for r in caplog.records] == ["smoke: --set limit=4 takes"]
    assert "a lower --set lr=" in str(err.value), err.value


def test_an_experiment_report_refusal_says_the_output_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A sci-report output with an in-domain task and no out-of-domain one: the report's
    # refusal, which the sci-report command words with its flags, said as the output's
    # options (experiment run has neither flag).
    (tmp_path / "e.yaml").write_text(
        "retries: 0\nmodels: {a: " + str(tmp_path / "no-model") + "}\n"
        "blocks: {b: {command: run, tasks: [smoke]}}\n"
        "matrix: [{block: b, models: [a]}]\n"
        "outputs:\n  s: {kind: sci-report, blocks: [b], in_domain: smoke}\n"
    )
    assert main(["experiment", "run", str(tmp_path / "e.yaml"), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "in_domain" in err and "out_of_domain" in err, err
    assert not set(FLAG.findall(err)) - FLAGS[("experiment", "run")], err


def _import_refusals(tmp: Path) -> Iterator[Callable[[], object]]:
    from nlieval.analyses import imports
    from nlieval.analyses.predictions import PredictionSet
    from nlieval.metainference import inferred
    from nlieval.types import Item, Label

    yield lambda: imports._refuse_other_split(tmp, "dev", "test", ["snli"])
    s = PredictionSet("p.csv", "labels", "m", 0, "t/task.yaml", ())
    old = Record("t/task.yaml", "1", "m", 0, 0, ("a",), (0.0,), (1.0,), "a", None)
    renamed = PredictionSet("p.csv", "labels", "m", 0, "t", ())
    yield lambda: imports._refuse_path_named(tmp, [old], [s], [renamed])
    items = inferred.reversal([Item("1", "A man sleeps.", "A person rests.", Label.ENTAILMENT)])
    inferred.write_task(items, tmp / "inf")
    yield lambda: inferred.write_task(items, tmp / "inf")


def test_a_cell_folder_refused_by_import_or_infer_build_is_worded_for_the_experiment(
    tmp_path: Path,
) -> None:
    # The refusals of an import's and an inferred task's folder are run folder refusals
    # with advice: an experiment's cell says what to do without --out or --overwrite.
    from nlieval.experiments.driver import for_experiment

    for refuse in _import_refusals(tmp_path):
        with pytest.raises(FolderError) as info:
            refuse()
        assert info.value.advice is not None and "--overwrite" in info.value.advice
        said_there = str(for_experiment(info.value, tmp_path / "cells" / "c"))
        assert not FLAG.findall(said_there), said_there


@pytest.mark.parametrize("command", [["sci-report"], ["plots", "--out", "figs"], ["report"]])
def test_two_folders_shown_alike_are_refused_with_the_flags_of_the_command(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a and b hold model m: a table shows them as "m (a)" and "m (b)" (their folders'
    # names), and c holds a model recorded as "m (a)" on the same point. A command with
    # --name advises it; one without (sci-report, plots) says the reason alone.
    runs = []
    for name, model in (("a", "m"), ("b", "m"), ("c", "m (a)")):
        (tmp_path / name).mkdir()
        RunFolder(tmp_path / name).append([_rec(model, "1")])
        runs.append(str(tmp_path / name))
    argv = [command[0], *runs, *[str(tmp_path / c) if c == "figs" else c for c in command[1:]]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{runs[0]} and {runs[2]} both hold m (a) on task t, k=0" in err, err
    assert ("--name RUN=NAME" in err) == ("--name" in FLAGS[(command[0],)]), err
    assert not set(FLAG.findall(err)) - FLAGS[(command[0],)], err


def test_infer_report_reads_its_items_as_a_folder_never_a_task_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # --items naming a built-in task, no data dir: the command has no --data-dir to set.
    monkeypatch.delenv("NLIEVAL_DATA_DIR", raising=False)
    (tmp_path / "r").mkdir()
    assert main(["infer", "report", str(tmp_path / "r"), "--items", "snli"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nlieval: error: snli: ") and "infer build" in err, err
    assert not set(FLAG.findall(err)) - FLAGS[("infer", "report")], err


# --------------------------------------------------------------------------- settings


def test_a_setting_error_names_settings_by_their_flags() -> None:
    # A setting's check (SettingError) names its fields, each a setting some command
    # parses with the flag --field-name into that field: the flag a command without it
    # and an experiment say as the field's name (SettingError.said_to).
    parsed = {(s, a.dest) for p in PARSERS.values() for a in p._actions for s in a.option_strings}
    sites = {(unit, kind) for unit, _, kind, _ in MESSAGES if kind.startswith("setting:")}
    assert len(sites) >= 9, sites  # the checks of issue 45's settings, at least
    bad = [
        (unit, field)
        for unit, kind in sites
        for field in kind.removeprefix("setting:").split(",")
        if ("--" + field.replace("_", "-"), field) not in parsed
    ]
    assert not bad, bad


#: A block's setting that a setting's check refuses when the experiment is planned, and
#: what the error says of it (the key, as the file writes it).
_PLAN_REFUSED = {
    'device_map: auto, max_memory: "gpu0=1GiB"': "max_memory: bad device 'gpu0'",
    'max_memory: "0=1GiB"': "max_memory needs device_map (e.g. auto)",
    "gpu_memory_utilization: 1.5": "gpu_memory_utilization must be in (0, 1], not 1.5",
    'label_map: "LABEL_0=yes"': "label_map LABEL_0=yes: 'yes' is not a label",
}


@pytest.mark.parametrize("block", list(_PLAN_REFUSED))
def test_an_experiment_says_a_refused_setting_as_its_key(
    block: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "e.yaml").write_text(
        "models: {a: smollm2-135m}\n"
        f"blocks: {{b: {{command: run, tasks: [smoke], {block}}}}}\n"
        "matrix: [{block: b, models: [a]}]\n"
    )
    assert main(["experiment", "plan", str(tmp_path / "e.yaml"), "--no-estimate"]) == 2
    err = capsys.readouterr().err
    assert _PLAN_REFUSED[block] in err, err
    assert not set(FLAG.findall(err)) - FLAGS[("experiment", "plan")], err


def test_an_experiment_cell_says_a_refused_checkpoint_as_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A packaged model is no checkpoint of another: refused when the cell resolves its
    # model (no model is loaded), said with the file's key and the cell's model.
    (tmp_path / "e.yaml").write_text(
        "retries: 0\nmodels: {a: smollm2-135m}\n"
        "blocks: {b: {command: run, tasks: [smoke], checkpoints: [gemma3-270m]}}\n"
        "matrix: [{block: b, models: [a]}]\n"
    )
    assert main(["experiment", "run", str(tmp_path / "e.yaml"), "--out", str(tmp_path / "x")]) == 1
    out = capsys.readouterr()
    said = out.out + out.err
    refused = "e.yaml:3: field 'checkpoints': SettingError: checkpoints gemma3-270m: a packaged"
    assert refused + " model is not a checkpoint" in said, said
    assert "loaded instead of the model" in said, said
    assert not set(FLAG.findall(said)) - FLAGS[("experiment", "run")], said


def test_the_command_line_says_a_refused_setting_by_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same check from run, which has the flags: its words as they were.
    argv = ["run", "--model", "smollm2-135m", "--task", "smoke", "--max-memory", "0=1GiB"]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err == "nlieval: error: --max-memory needs --device-map (e.g. auto)\n", err


def test_a_report_refusal_of_a_setting_is_said_as_the_output_option(tmp_path: Path) -> None:
    # grid over folders on other items, refused (allow_mixed false), while an
    # experiment writes its report: said as the option of the file's output, as an
    # output's own refusals are; grid itself says its flag (CASES).
    from nlieval.reports import GridConfig, grid_of

    with pytest.raises(SettingError) as info, said_as_set():
        grid_of(GridConfig(runs=tuple(_mixed(tmp_path))))
    assert "or pass the output option allow_mixed: true to mark them" in str(info.value)
    assert not FLAG.findall(str(info.value)), info.value


def test_a_size_figure_of_a_server_model_says_what_figure_can_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A model recorded as a server's (server:NAME) has no weights here to count: figure
    # says to give its size, not the run's --model and --api-base (which it lacks).
    (tmp_path / "r").mkdir()
    RunFolder(tmp_path / "r").append([_rec("server:org/m", "1")])
    argv = ["figure", "size", str(tmp_path / "r"), "--out", str(tmp_path / "f.png")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "give its size with --sizes server:org/m=PARAMETERS" in err, err
    assert not set(FLAG.findall(err)) - FLAGS[("figure",)], err
