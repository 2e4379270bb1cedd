"""Every shell command and Python snippet of README.md and docs/**/*.md, as a reader pastes it.

A command block is a fenced ``bash``/``sh``/``shell`` or ``python`` block, or a ``text``
block holding ``$ `` prompts (the lines after a prompt are its output, except the
continuation lines of a command). The HTML comment on the line before a block says what
is done with it (docs/contributing.md, "Commands in the docs"):

- no comment: the block runs for real, in the page's order, in a temporary repository
  root (``docs/examples`` copied, ``../shared/data`` pointing at ``NLIEVAL_DATA_DIR``),
  and each ``$`` command prints what the page shows under it (the shown lines begin the
  printed ones; a line starting ``...`` ends the comparison);
- ``<!-- doc-test: models (why) -->``: the same, but as a test marked ``models``; a Python
  snippet so marked also runs in the fast tests, with ``nlieval.run`` scoring through a
  stand-in backend (``tests/helpers/hash_lm.py``) instead of loading the model;
- ``<!-- doc-test: parse (why) -->``: a GPU, a large model, the hub, a long run or a run
  folder made by one of those: every ``nlieval`` command in it is only parsed (a Python
  snippet runs with the stand-in backend only);
- ``<!-- doc-test: skip (why) -->``: set-up scripts and installs, never run here.

Every block but a skipped one is parsed: each ``nlieval`` invocation (found by running the
block in bash with ``nlieval`` replaced by a recorder and nothing else on ``PATH``, so
variables, loops and globs expand as they would) goes through nlieval's own argument
parser, and each task it names must be a registered task or a file path. No command may
write into ``docs/img``: its figures are written by ``scripts/doc_images.sh`` only.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from nlieval.cli import build_parser
from nlieval.data import TASKS

ROOT = Path(__file__).resolve().parents[1]
# Every page, those in docs' subfolders (docs/studies/) too.
DOC_FILES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
MODES = ("run", "models", "parse", "skip")
_MARKER = re.compile(r"^<!--\s*doc-test:\s*(\w+)\b\s*(.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
_SHELL = ("bash", "sh", "shell")
# Task values that name a file rather than a registered task.
_FILE_SUFFIXES = (".yaml", ".yml", ".jsonl", ".csv", ".tsv", ".gz", ".txt")


@dataclass(frozen=True)
class Block:
    """One command block of a page: its shell script (or Python code) and its mode."""

    page: Path
    line: int  # of the opening fence, 1-based
    lang: str  # "shell" or "python"
    mode: str
    code: str
    # A text block's commands, each with the output shown under it (a shell block: its
    # whole code, no output shown).
    shown: tuple[tuple[str, str | None], ...] = ()

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _prompted_commands(body: list[str]) -> list[tuple[str, str]]:
    """The commands of a ``text`` block, each with the output shown under it: a ``$ ``
    line with its continuation lines (after a trailing backslash, or inside a
    ``for ... do`` not yet ``done``), then every line up to the next prompt."""
    commands: list[tuple[list[str], list[str]]] = []
    for line in body:
        if commands:
            command, output = commands[-1]
            so_far = "\n".join(command)
            open_loop = len(re.findall(r"\bdo\b", so_far)) > len(re.findall(r"\bdone\b", so_far))
            if not output and (so_far.endswith("\\") or open_loop):
                command.append(line)
                continue
        if line.startswith("$ "):
            commands.append(([line[2:]], []))
        elif commands:
            commands[-1][1].append(line)
    return [("\n".join(c), "\n".join(o).rstrip()) for c, o in commands]


def blocks(page: Path) -> list[Block]:
    """The command blocks of one page, in order."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, lang = fence.groups()
        start = i
        i += 1
        body: list[str] = []
        while not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][len(indent) :])
            i += 1
        i += 1
        before = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
        marker = _MARKER.match(before.strip())
        mode = marker.group(1) if marker else "run"
        assert mode in MODES, f"{page.name}:{start}: unknown doc-test mode {mode!r}"
        if lang in _SHELL:
            code = "\n".join(body)
        elif lang == "text":
            shown = tuple(_prompted_commands(body))
            if shown:
                code = "\n".join(c for c, _ in shown)
                found.append(Block(page, start + 1, "shell", mode, code, shown))
            continue
        elif lang == "python":
            found.append(Block(page, start + 1, "python", mode, "\n".join(body) + "\n"))
            continue
        else:
            continue
        found.append(Block(page, start + 1, "shell", mode, code, ((code, None),)))
    return found


ALL_BLOCKS = [b for page in DOC_FILES for b in blocks(page)]
# The one writer of docs/img: its commands are parsed like the pages'.
DOC_IMAGES = ROOT / "scripts" / "doc_images.sh"
PARSED = [
    *(b for b in ALL_BLOCKS if b.mode != "skip" and b.lang == "shell"),
    Block(DOC_IMAGES, 1, "shell", "parse", DOC_IMAGES.read_text(encoding="utf-8")),
]


def _repo_root(tmp: Path) -> Path:
    """A stand-in repository root: the docs' examples, the scripts, and ``../shared/data``
    (the real benchmark files, ``NLIEVAL_DATA_DIR``; a dangling link without them)."""
    root = tmp / "repo"
    (root / "docs").mkdir(parents=True)
    shutil.copytree(ROOT / "docs" / "examples", root / "docs" / "examples")
    for name in ("scripts", "benchmarks"):
        if (ROOT / name).exists():
            (root / name).symlink_to(ROOT / name)
    data = os.environ.get("NLIEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    (tmp / "shared").mkdir()
    (tmp / "shared" / "data").symlink_to(Path(data).resolve())
    return root


# --- parse: every nlieval invocation through nlieval's own parser ------------------------

_RECORDER = """
command_not_found_handle() { return 0; }
DOCTEST_N=0
nlieval() { printf '%s\\0' "$@" > "$DOCTEST_ARGS/$BASHPID.$((DOCTEST_N += 1))"; }
"""


def invocations(block: Block, tmp: Path) -> list[list[str]]:
    """The argument lists of the ``nlieval`` commands a shell block runs, expanded by bash
    with nothing on ``PATH`` (no other program runs)."""
    root = _repo_root(tmp)
    args_dir = tmp / "args"
    args_dir.mkdir()
    empty = tmp / "empty-path"
    empty.mkdir()
    env = {"PATH": str(empty), "HOME": str(tmp), "DOCTEST_ARGS": str(args_dir)}
    subprocess.run(
        [shutil.which("bash") or "/bin/bash", "-c", _RECORDER + block.code],
        cwd=root,
        env=env,
        check=False,
        capture_output=True,
        timeout=60,
    )
    recorded = sorted(args_dir.iterdir(), key=lambda p: [int(x) for x in p.name.split(".")])
    return [p.read_bytes().decode().split("\0")[:-1] for p in recorded]


@functools.cache
def _parser() -> argparse.ArgumentParser:
    # Built on first use: collecting the tests does not import every command.
    return build_parser()


def _task_names(value: object) -> list[str]:
    """The task names in a parsed task setting: ``a,b``, ``a@split:N``, ``a,b:N``."""
    names: list[str] = []
    for part in value if isinstance(value, (tuple, list)) else str(value).split(","):
        name = re.sub(r"(@[^:]*)?(:\d+)?$", "", str(part).strip())
        if name:
            names.append(name)
    return names


def parse_problems(argv: list[str]) -> list[str]:
    """What is wrong with one ``nlieval`` invocation, as its parser and task registry see it."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args = _parser().parse_args(argv)
    except SystemExit as stop:
        if stop.code == 0:  # --help
            return []
        return [err.getvalue().strip().splitlines()[-1]]
    problems = []
    for field in ("tasks", "task", "test_task", "dev_task"):
        value = getattr(args, field, None)
        if not value:
            continue
        for name in _task_names(value):
            is_file = "/" in name or name.lower().endswith(_FILE_SUFFIXES)
            if not is_file and name not in TASKS:
                problems.append(f"unknown task {name!r} (--{field.replace('_', '-')})")
    return problems


@pytest.mark.parametrize(
    "block",
    PARSED,
    ids=lambda b: b.where,
)
def test_commands_parse(block: Block, tmp_path: Path) -> None:
    """Every documented ``nlieval`` command is accepted by nlieval's parser, and names
    registered tasks (``mnli`` is not one: ``mnli_m`` is)."""
    calls = invocations(block, tmp_path)
    named = re.search(r"(^|[;&|(]|\bdo)\s*nlieval\s", block.code, re.MULTILINE)
    assert calls or not named, f"{block.where}: its nlieval commands did not run in bash"
    bad = [f"nlieval {shlex.join(a)}: {p}" for a in calls for p in parse_problems(a)]
    assert not bad, f"{block.where}:\n" + "\n".join(bad)


def inline_commands(page: Path) -> list[str]:
    """The whole commands a page's prose quotes inline (```nlieval ... --out X```); a span
    without ``--out`` names a command or a flag, and one with ``...``, ``|`` or ``[`` is a
    synopsis, not something to paste."""
    prose = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    spans = re.findall(r"`(nlieval [^`]+)`", prose.replace("\n", " "))
    return [s for s in spans if " --out " in s and not re.search(r"\.\.\.|\||\[", s)]


@pytest.mark.parametrize("page", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_inline_commands_parse(page: Path) -> None:
    """A whole command quoted in the prose parses, and names registered tasks."""
    bad = [
        f"{cmd}: {p}" for cmd in inline_commands(page) for p in parse_problems(shlex.split(cmd)[1:])
    ]
    assert not bad, f"{page.name}:\n" + "\n".join(bad)


def test_parse_catches_unknown_task_and_flag() -> None:
    """The checks themselves: the 70B example as it once was, an unknown flag, a bad value."""
    once = ["run", "--model", "m", "--task", "snli,mnli,anli_r3", "--out", "r"]
    assert parse_problems(once) == ["unknown task 'mnli' (--tasks)"]
    assert parse_problems(["run", "--model", "m", "--task", "snli", "--out", "r", "--shotz", "0"])
    assert parse_problems(["run", "--model", "m", "--task", "snli", "--shots", "x", "--out", "r"])
    assert parse_problems(["grid", "a", "--rowz", "model"])
    train = ["train", "--task", "snli@dev:300,sick@train:300", "--test-task", "sick"]
    assert parse_problems([*train, "--out", "r"]) == []
    assert parse_problems(["stats", "--task", "runs/gen/task.yaml,snli"]) == []


def test_every_page_is_collected() -> None:
    """Every Markdown page of docs/, at any depth, and README.md are tested: a page in a
    new subfolder (docs/studies/ once was one) is not left out."""
    pages = {ROOT / "README.md"}
    for folder, _dirs, files in os.walk(ROOT / "docs"):
        pages.update(Path(folder) / name for name in files if name.endswith(".md"))
    assert any(p.parent.name == "studies" for p in pages)
    assert set(DOC_FILES) == pages


def test_block_extraction() -> None:
    """A prompt's continuation lines (backslash, an open loop) belong to it; output does not."""
    body = [
        "$ S=x; nlieval run --task snli \\",
        "    --out r",
        "| a table |",
        "$ for m in a b; do",
        "    nlieval run --model $m",
        "  done",
        "output line",
    ]
    assert _prompted_commands(body) == [
        ("S=x; nlieval run --task snli \\\n    --out r", "| a table |"),
        ("for m in a b; do\n    nlieval run --model $m\n  done", "output line"),
    ]


def test_shown_output_comparison() -> None:
    """A page may show the first lines of an output, or stop at ``...``; nothing else."""
    printed = "a\nb  \nc\n"
    assert not _differs("a\nb", printed)
    assert not _differs("a\n...  (more)", printed)
    assert _differs("a\nc", printed)
    assert _differs("a\nb\nc\nd", printed)


def test_no_command_writes_into_docs_img() -> None:
    """The figures in docs/img come from ``scripts/doc_images.sh`` alone: a pasted command
    writes into the reader's own runs/ folder."""
    offenders = [b.where for b in ALL_BLOCKS if re.search(r"\bdocs/img\b", b.code)]
    assert not offenders, f"commands writing into docs/img: {offenders}"


# --- run: the cheap blocks for real ------------------------------------------------------


# Prepended to a ``models`` snippet in the fast tests: the model named is never loaded.
_STAND_IN = """\
import nlieval as _nlieval
from nlieval.backends import stand_in as _stand_in
from tests.helpers.hash_lm import HashLM as _HashLM

_real_run = _nlieval.run


def _run_without_model(config, out_dir, **kwargs):
    kwargs.setdefault("model", _stand_in(config, lambda checkpoint: _HashLM()))
    return _real_run(config, out_dir, **kwargs)


_nlieval.run = _run_without_model
"""


def _script(
    page_blocks: list[Block], tmp: Path, stand_in: bool = False
) -> tuple[str, list[tuple[str, str, Path]]]:
    """One bash script running the blocks in order (exports carry over, as in a terminal;
    the first command that fails stops it, naming its block and the command), and the
    files that will hold the output of each command whose output a page shows."""
    trap = """trap 'echo "doc command failed ($WHERE): $BASH_COMMAND" >&2' ERR"""
    lines = ["set -eu", trap]
    outputs: list[tuple[str, str, Path]] = []
    for n, block in enumerate(page_blocks):
        lines.append(f"WHERE={shlex.quote(block.where)}")
        if block.lang == "python":
            snippet = tmp / f"snippet{n}.py"
            prelude = _STAND_IN if stand_in and block.mode != "run" else ""
            snippet.write_text(prelude + block.code, encoding="utf-8")
            # A snippet names its own data folder: a reader's shell need not export one.
            lines.append(f"env -u NLIEVAL_DATA_DIR {shlex.quote(sys.executable)} {snippet}")
            continue
        for i, (command, shown) in enumerate(block.shown):
            if not shown:
                lines.append(command)
                continue
            out = tmp / f"out{n}.{i}.txt"
            outputs.append((f"{block.where}: {command}", shown, out))
            lines.append(f"{{\n{command}\n}} > {out}")
    return "\n".join(lines) + "\n", outputs


def _differs(shown: str, printed: str) -> bool:
    """Whether a page's shown output is not what the command printed: the shown lines
    must begin the printed ones (a page may stop early, or at a line ``...``)."""
    want = shown.split("\n")
    cut = next((i for i, ln in enumerate(want) if ln.startswith("...")), len(want))
    got = [ln.rstrip() for ln in printed.split("\n")]
    return [ln.rstrip() for ln in want[:cut]] != got[:cut]


def _run_page(page_blocks: list[Block], tmp: Path, stand_in: bool = False) -> None:
    """Run the blocks (the commands read the real benchmark files: the callers take the
    ``data_dir`` fixture, which skips without them)."""
    root = _repo_root(tmp)
    # A reader's shell after the README's set-up exports no data folder (CI does): the
    # commands find ../shared/data from the repository root, as pasted.
    env = {k: v for k, v in os.environ.items() if k != "NLIEVAL_DATA_DIR"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    script, outputs = _script(page_blocks, tmp, stand_in)
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    wrong = [
        f"{what}\n--- shown\n{shown}\n--- printed\n{out.read_text()}"
        for what, shown, out in outputs
        if _differs(shown, out.read_text())
    ]
    assert not wrong, "\n\n".join(wrong)


def _pages(models: bool) -> list[tuple[Path, list[Block]]]:
    """The pages with blocks to run, each with them in order: the fast tests' (blocks
    without a marker, and ``models`` snippets with the stand-in), or the ``models``
    tests' (blocks without a marker, then as written the ``models`` ones)."""
    pages = []
    for page in DOC_FILES:
        mine = [b for b in ALL_BLOCKS if b.page == page]
        if models:
            chosen = [b for b in mine if b.mode in ("run", "models")]
            needed = any(b.mode == "models" for b in chosen)
        else:
            chosen = [
                b
                for b in mine
                if b.mode == "run" or (b.lang == "python" and b.mode in ("models", "parse"))
            ]
            needed = bool(chosen)
        if needed:
            pages.append((page, chosen))
    return pages


def _page_id(value: object) -> str:
    return value.name if isinstance(value, Path) else ""


@pytest.mark.parametrize(("page", "page_blocks"), _pages(models=False), ids=_page_id)
@pytest.mark.data
def test_cheap_commands_run(
    page: Path, page_blocks: list[Block], tmp_path: Path, data_dir: Path
) -> None:
    """The blocks without a marker run as written, in the page's order, and print what
    the page shows; Python snippets that load a model run with a stand-in backend."""
    _run_page(page_blocks, tmp_path, stand_in=True)


@pytest.mark.models
@pytest.mark.parametrize(("page", "page_blocks"), _pages(models=True), ids=_page_id)
@pytest.mark.data
def test_model_commands_run(
    page: Path, page_blocks: list[Block], tmp_path: Path, data_dir: Path
) -> None:
    """The blocks marked ``models`` run as written after the page's cheap blocks."""
    _run_page(page_blocks, tmp_path)
