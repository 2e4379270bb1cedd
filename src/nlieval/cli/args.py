"""Argument types shared by every ``nlieval`` subcommand, and the flags derived from the
settings declared on configuration dataclasses (:mod:`nlieval.settings`)."""

from __future__ import annotations

import argparse
import functools
import textwrap
from collections.abc import Callable, Collection, Sequence
from dataclasses import MISSING, Field, fields
from pathlib import Path
from typing import Any, TypeVar

from .. import settings
from ..commands import TABLE, load, settings_of
from ..settings import UNSET, flag_of, options_of
from .commands import epilog

T = TypeVar("T")
C = TypeVar("C")


def arg_type(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` as an argparse ``type``: its ValueError becomes argparse's one-line
    usage error with the message kept (argparse would replace it by "invalid value").

    >>> arg_type(settings.positive_int)("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a positive integer, got '0'
    """

    @functools.wraps(parse)
    def typed(text: str) -> T:
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return typed


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _with_default(flag: settings.Flag, default: Any) -> str:
    # A help with a bracket names its default itself; the default of a flag of several
    # values is "none given"; an empty help stays empty.
    if default is None or not flag.help or "[" in flag.help:
        return flag.help
    if flag.nargs is not None or flag.action in ("append", "extend"):
        return flag.help
    return f"{flag.help} [{_shown(default)}]"


def _add_flag(p: Any, f: Field[Any], optional: bool = False) -> None:
    flag = flag_of(f)
    if flag is None:
        return
    default = f.default if f.default is not MISSING else flag.cli_default
    if default is UNSET:
        # The flag that makes optional options exist is itself optional.
        default = None if optional else MISSING
    kw: dict[str, Any] = {"help": flag.help or None}
    if flag.positional:
        names: tuple[str, ...] = (f.name,)
    else:
        names = settings.flag_names(f)
        kw["dest"] = f.name
    if isinstance(default, bool):
        kw["action"] = "store_false" if default else "store_true"
    else:
        if default is MISSING:
            if not flag.positional:
                kw["required"] = True
        else:
            # argparse appends to the default: give it a list of its own.
            appends = flag.action in ("append", "extend") and default is not None
            kw["default"] = list(default) if appends else default
            kw["help"] = _with_default(flag, default) or None
        # The one reader of a setting's text (settings.read_text), as --set reads it.
        kw["type"] = arg_type(functools.partial(settings.read_text, f))
        for key in ("metavar", "nargs", "const", "action"):
            if getattr(flag, key) is not None:
                kw[key] = getattr(flag, key)
        if flag.choices is not None:
            kw["choices"] = settings.choices_of(flag)
    # The one place a setting becomes an argparse argument.
    p.add_argument(*names, **kw)


def add_settings(p: argparse.ArgumentParser, cls: type[Any], *, skip: Collection[str] = ()) -> None:
    """Add a flag for every setting of ``cls`` (and of the options it holds, each in an
    argument group of its own), except the fields named in ``skip``.

    >>> from nlieval.choice import RunConfig
    >>> p = argparse.ArgumentParser(); add_settings(p, RunConfig)
    >>> cfg = settings_from_args(RunConfig, p.parse_args(["--task", "snli", "--shots", "0,5"]))
    >>> cfg.tasks, cfg.shots, cfg.server
    (('snli',), (0, 5), None)

    Positional arguments and flags of several values are settings too; they arrive as
    tuples, and a help that names its default in brackets is shown as written:

    >>> from dataclasses import dataclass
    >>> from nlieval.settings import setting
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     runs: tuple[str, ...] = setting(help="run folders", positional=True, nargs="+")
    ...     js: tuple[str, ...] = setting((), help="a value", action="append")
    ...     bins: int = setting(5, help="bins")
    ...     out: str = setting("a.jsonl", help="scores [a.jsonl next to the run]")
    >>> p = argparse.ArgumentParser(); add_settings(p, Demo)
    >>> settings_from_args(Demo, p.parse_args(["r1", "r2", "--js", "x", "--js", "y"]))
    Demo(runs=('r1', 'r2'), js=('x', 'y'), bins=5, out='a.jsonl')
    >>> [a.help for a in p._actions[1:]]
    ['run folders', 'a value', 'bins [5]', 'scores [a.jsonl next to the run]']
    """
    _add_fields(p, p, cls, skip)


def _add_fields(
    p: argparse.ArgumentParser,
    group: Any,
    cls: type[Any],
    skip: Collection[str],
    when: str | None = None,
) -> None:
    # Options may hold options (EngineOptions holds each engine's): a titled one is a
    # group of the parser itself (argparse groups do not nest), an untitled one's flags
    # join the group they are in.
    for f in fields(cls):
        if f.name in skip:
            continue
        opt = options_of(f)
        if opt is None:
            _add_flag(group, f, optional=f.name == when)
            continue
        inner = p.add_argument_group(opt.title) if opt.title else group
        _add_fields(p, inner, opt.cls, skip, opt.when)


def command_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    key: str | None = None,
    examples: Sequence[str] = (),
    **parser: Any,
) -> argparse.ArgumentParser:
    """The parser of the subcommand ``name`` (``parser`` are :meth:`add_parser`'s
    keywords). A command of the table (:data:`nlieval.commands.TABLE`, under ``key``,
    by default ``name``) given no ``help`` takes its help line and examples from there;
    ``examples`` (a subcommand's own) end its ``--help`` as they are written.

    >>> parser = argparse.ArgumentParser(prog="nlieval")
    >>> p = command_parser(parser.add_subparsers(), "tasks")
    >>> print(p.format_help().split("\\n\\n")[-1].strip())
    examples:
      nlieval tasks
    """
    if "help" not in parser:
        known = TABLE[key or name]
        parser["help"] = known.help
        examples = examples or known.examples
    if parser.get("description"):
        # The examples keep their lines (a raw epilog), so a description is wrapped here.
        parser["description"] = textwrap.fill(parser["description"], width=80)
    return sub.add_parser(
        name,
        epilog=epilog(tuple(examples)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **parser,
    )


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    handler: Callable[[argparse.Namespace], int],
    settings: Sequence[type[Any]] | None = None,
    skip: Collection[str] = (),
    **parser: Any,
) -> argparse.ArgumentParser:
    """The subcommand ``name`` (``parser`` are :func:`command_parser`'s keywords): a flag
    for every setting of each class in ``settings`` (but those in ``skip``; by default
    the command's settings in the table), and ``handler`` to run it.

    >>> from nlieval.choice import RunConfig
    >>> parser = argparse.ArgumentParser()
    >>> def hello(args: argparse.Namespace) -> int:
    ...     return 0
    >>> p = add_command(parser.add_subparsers(), "run", handler=hello, settings=(RunConfig,))
    >>> args = parser.parse_args(["run", "--task", "snli"])
    >>> args.handler.__name__, args.tasks
    ('hello', ('snli',))
    """
    p = command_parser(sub, name, **parser)
    if settings is None:
        settings = settings_of(parser.get("key") or name)
        skip = (*skip, *TABLE[parser.get("key") or name].unused)
    for cls in settings:
        add_settings(p, cls, skip=skip)
    p.set_defaults(handler=handler)
    return p


def settings_from_args(cls: type[C], args: argparse.Namespace, **extra: Any) -> C:
    """The instance of ``cls`` that the flags of :func:`add_settings` ask for; ``extra``
    gives fields the command sets itself. Options that exist only with a flag (a server
    without ``--api-base``) are None."""
    kw: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name in extra:
            continue
        opt = options_of(f)
        if opt is None:
            if flag_of(f) is not None and hasattr(args, f.name):
                kw[f.name] = _value(getattr(args, f.name))
            continue
        if opt.when is not None and getattr(args, opt.when, None) is None:
            kw[f.name] = None
            continue
        kw[f.name] = settings_from_args(opt.cls, args)  # options inside options too
    return cls(**kw, **extra)


def _value(value: Any) -> Any:
    # Several values (nargs, append) arrive as a list; settings are frozen: a tuple.
    return tuple(value) if isinstance(value, list) else value


def write_or_print(text: str, out: str | None) -> None:
    """Print ``text``, or write it to the file ``out`` (its folder made) and say so."""
    from ..runs import atomic_write, make_folder

    if out is None:
        # A CSV ends in its own newline: no blank line after it.
        print(text, end="" if text.endswith("\n") else "\n")
        return
    path = Path(out)
    make_folder(path.parent)
    atomic_write(path, text if text.endswith("\n") else text + "\n", root=path.parent)
    print(f"written: {path}")


def add_printing(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str) -> None:
    """The command ``name`` of the table that prints what its library function
    (:attr:`nlieval.commands.Command.function`) returns for its last settings class, or
    writes it to that class's ``out`` when it has one.

    >>> parser = argparse.ArgumentParser()
    >>> add_printing(parser.add_subparsers(), "grid")
    >>> parser.parse_args(["grid", "runs/a", "--rows", "model,k"]).handler.__name__
    'cmd_grid'
    """
    classes = settings_of(name)

    def handler(args: argparse.Namespace) -> int:
        cls = classes[-1]
        # A field the class holds without a flag of its own (the run folders of
        # RunFolders) is the flag of another of the command's classes.
        own = {
            f.name: _value(getattr(args, f.name))
            for f in fields(cls)
            if flag_of(f) is None and options_of(f) is None and hasattr(args, f.name)
        }
        cfg = settings_from_args(cls, args, **own)
        text = load(TABLE[name].function)(cfg)
        if hasattr(cfg, "out"):
            write_or_print(text, cfg.out)
        else:
            print(text)
        return 0

    handler.__name__ = handler.__qualname__ = f"cmd_{name.replace('-', '_')}"
    add_command(sub, name, handler=handler, settings=classes)
