"""nlieval: evaluate and study language models through Natural Language Inference.

Flag names follow lm-evaluation-harness where they mean the same thing
(``--model``, ``--tasks``, ``--limit``, ``--batch_size``, ``--output_path``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..commands import TABLE, load
from ..ground import DataError, FolderError, SettingError
from .commands import COMMANDS
from .commands import no_library_bars as _no_library_bars

# Nothing here imports a command's module or a family at import time: `nlieval --help`,
# `--version` and each command load only what they use (the command groups, and the
# families behind them, are imported by build_parser and main).

#: Command groups (modules of this package) in the order ``nlieval --help`` lists them.
GROUPS = tuple(dict.fromkeys(c.group for c in COMMANDS.values() if c.group is not None))


def version_text() -> str:
    """What ``nlieval --version`` prints: nlieval's version, the commit of its source
    when that is a git checkout (and whether it has changes), where it is imported from,
    and the versions of Python, torch and transformers (read from the installed
    packages' metadata, without importing them).

    >>> print(version_text())  # doctest: +ELLIPSIS
    nlieval 0.1.0...from .../nlieval
    python 3..., torch ..., transformers ...
    """
    source = Path(__file__).resolve().parent.parent
    commit = _commit(source)
    line = f"nlieval {_installed('nlieval')}" + (f" (commit {commit})" if commit else "")
    libs = ", ".join(f"{name} {_installed(name)}" for name in ("torch", "transformers"))
    python = ".".join(map(str, sys.version_info[:3]))
    return f"{line} from {source}\npython {python}, {libs}"


def _installed(name: str) -> str:
    # importlib.metadata costs about 50 ms to import (python -X importtime, 2026-11-28),
    # half of what `nlieval --help` takes in all: only --version pays it.
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _commit(source: Path) -> str | None:
    # Only a source that git tracks is a clone: a site-packages inside some other
    # checkout (a .venv in a repository) must not report that repository's commit.
    import subprocess  # for --version only

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(source), *args], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError):  # no git, or it hangs
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    if git("ls-files", "--error-unmatch", "__init__.py") is None:
        return None
    head = git("rev-parse", "--short=12", "HEAD")
    if head is None:
        return None
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    return head + (", with local changes" if changed else "")


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction[Any]]:
    parser = argparse.ArgumentParser(
        prog="nlieval", description=__doc__.splitlines()[0] if __doc__ else None
    )
    # The program's own flags (before the subcommand), not settings of any command.
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="nlieval's version and commit, and those of torch and transformers",
    )
    return parser, parser.add_subparsers(dest="command", required=True)


class _Version(argparse.Action):
    # argparse's own version action takes a fixed string: this one asks git only when
    # --version is given.
    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(version_text())
        parser.exit()


def build_parser(groups: Sequence[str] = GROUPS) -> argparse.ArgumentParser:
    """The ``nlieval`` argument parser: each command group of ``groups`` (all of them
    unless named) adds its subcommands, each with a ``handler``.

    >>> build_parser(["tasks"]).parse_args(["tasks"]).handler.__name__
    '_cmd_tasks'
    """
    parser, sub = _top_parser()
    for group in groups:
        _add_group(group, sub)
    return parser


def _add_group(group: str, sub: argparse._SubParsersAction[Any]) -> None:
    # A command that prints its library function's text is added from the table alone
    # (first, in the table's order); the group's module adds the others.
    if group not in GROUPS:
        raise ValueError(f"no command group {group!r}; the groups are {', '.join(GROUPS)}")
    from .args import add_printing

    own = [name for name, c in TABLE.items() if c.group == group]
    for name in own:
        if TABLE[name].function:
            add_printing(sub, name)
    if any(not TABLE[name].function for name in own):
        load(f"cli.{group}:add_commands")(sub)


def _summary_parser() -> argparse.ArgumentParser:
    """The parser of ``nlieval --help``, ``--version`` and a mistyped command: every
    command's name and help line from :data:`~nlieval.cli.commands.COMMANDS`, none of
    their flags (which would import every family)."""
    parser, sub = _top_parser()
    for name, command in COMMANDS.items():
        sub.add_parser(name, help=command.help)
    return parser


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    # The first word that is not a flag names the command (nlieval's own flags take no
    # value); its group alone is built. No command, or an unknown one: the summary.
    word = next((a for a in argv if not a.startswith("-")), None)
    group = COMMANDS[word].group if word in COMMANDS else None
    if group is not None:
        return build_parser([group])
    return _summary_parser()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nlieval`` command.

    >>> main(["tasks"])  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
    snli   dev   entailment/neutral/contradiction   SNLI 1.0 ...
    smoke  test  entailment/neutral/contradiction   bundled 48-item ...
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser_for(argv)
    args = parser.parse_args(argv)
    if getattr(args, "progress", True) is False:
        _no_library_bars()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.handler(args))
    except (DataError, FolderError, ValueError) as err:  # FolderError: a RunError too
        return _failed(err, args, command_flags(parser, args))
    except KeyboardInterrupt:
        print("nlieval: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`nlieval ... | head`): not an error of ours.
        # Point stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as err:
        # ModelError's package (backends) is slow to import and most commands need none
        # of it: a command that raised one has imported it already.
        from ..backends import ModelError

        if not isinstance(err, ModelError):
            raise
        return _failed(err, args, command_flags(parser, args))


def command_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> set[str]:
    """The flags of the command that ``parser`` parsed ``args`` for (its subcommand's,
    down to the last one chosen).

    >>> p = build_parser(["experiment"])
    >>> sorted(command_flags(p, p.parse_args(["experiment", "status", "x"])))
    ['--help', '-h']
    """
    flags: set[str] = set()
    here: argparse.ArgumentParser | None = parser
    while here is not None:
        flags = {s for a in here._actions for s in a.option_strings}
        subs = [a for a in here._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, subs[0].dest, None) if subs else None
        here = subs[0].choices.get(chosen) if chosen is not None else None
    return flags


def _failed(err: Exception, args: argparse.Namespace, flags: set[str]) -> int:
    # An expected error, said in one line (its traceback with --verbose); a run folder's
    # advice only as far as the command has the flags it names, a setting by its flag
    # where the command has it.
    if args.verbose:
        raise err
    said = err.said_to(flags) if isinstance(err, (FolderError, SettingError)) else str(err)
    print(f"nlieval: error: {said}", file=sys.stderr)
    return 2
