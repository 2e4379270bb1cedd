"""The conventions of a command line: --version, examples at the end of every --help,
and a --help that imports no numerical library."""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import nlieval
from nlieval.cli import build_parser, main
from nlieval.cli.commands import COMMANDS

SOURCE = Path(nlieval.__file__).resolve().parent


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _parsers(sub, (*path, name))


def test_version_names_nlieval_torch_transformers_and_the_commit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    first, second = capsys.readouterr().out.splitlines()
    # The version pyproject.toml declares; the libraries' own idea of their versions.
    assert first.startswith("nlieval 0.1.0 ") and first.endswith(f" from {SOURCE}")
    python = ".".join(map(str, sys.version_info[:3]))
    assert second == f"python {python}, torch {torch.__version__}, transformers " + (
        transformers.__version__
    )
    git = shutil.which("git")
    tracked = git is not None and (
        subprocess.run([git, "-C", str(SOURCE), "ls-files", "--error-unmatch", "__init__.py"],
                       capture_output=True).returncode == 0
    )  # fmt: skip
    if tracked:
        head = subprocess.run(
            [str(git), "-C", str(SOURCE), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        found = re.search(r"\(commit ([0-9a-f]{12})[,)]", first)
        assert found is not None and head.startswith(found.group(1))


def test_version_without_git_has_no_commit_and_no_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on it
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("nlieval 0.1.0 from ") and "commit" not in out


def test_the_table_of_commands_is_the_parsers_list() -> None:
    # `nlieval --help` is answered from the table: it must name exactly what the groups add.
    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(top.choices) == list(COMMANDS)
    assert {c.dest: c.help for c in top._choices_actions} == {
        name: c.help for name, c in COMMANDS.items()
    }


def test_every_help_ends_with_examples_that_parse() -> None:
    full = build_parser()
    seen = 0
    for path, parser in _parsers(full):
        text = parser.format_help().rstrip("\n")
        block = text.split("\n\nexamples:\n")
        assert len(block) == 2, f"nlieval {' '.join(path)} --help has no examples at its end"
        lines = block[1].splitlines()
        assert 1 <= len(lines) <= 3 and all(line.startswith("  nlieval ") for line in lines)
        if path != ("tasks",):  # the one command without flags has one example
            assert len(lines) >= 2, path
        for line in lines:
            argv = shlex.split(line)[1:]
            # A real command: the full parser knows its command, flags and choices.
            args = full.parse_args(argv)
            assert callable(args.handler), line
            seen += 1
    assert seen >= 2 * len(COMMANDS)


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["tasks"], ["bogus"]])
def test_help_version_and_tasks_import_no_numerical_library(argv: list[str]) -> None:
    heavy = ("torch", "transformers", "pandas", "scipy", "statsmodels", "matplotlib", "sklearn")
    code = (
        "import sys\nfrom nlieval.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines()[-1] == "[]"
