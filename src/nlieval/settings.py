"""Settings declared once: a field of a configuration dataclass carries its own help text
and command-line flag, and the command line is derived from the fields.

:func:`setting` is ``dataclasses.field`` with a :class:`Flag` in its metadata;
``nlieval.cli.args.add_settings`` turns the fields of a class into argparse flags and
``nlieval.cli.args.settings_from_args`` the parsed flags back into an instance, so a
default, a help text or a flag name is written in exactly one place.

A field whose type is itself a settings class (the options of an engine, such as
:class:`~nlieval.backends.openai.ServerOptions`) is declared with :func:`options`; its
fields become flags of the command too, and :func:`flat_dict` / :func:`from_flat_dict`
write and read such a configuration as one flat JSON object (the shape ``config.json``
has always had).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo:
...     limit: int | None = setting(None, help="first N items")
>>> flag_of(fields(Demo)[0]).help
'first N items'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, fields, is_dataclass
from typing import Any, TypeVar

T = TypeVar("T")


class Unset:
    """The type of :data:`UNSET`: no value given (``None`` may be a value)."""

    def __repr__(self) -> str:
        return "UNSET"


#: No command-line default (see :attr:`Flag.cli_default`).
UNSET = Unset()


@dataclass(frozen=True)
class Flag:
    """How one setting appears on the command line.

    ``names`` are the option strings (default ``--field-name``); ``parse`` turns the text
    into the value (argparse's ``type``); ``cli_default`` is the command line's default
    for a field that has none in Python (a required argument of the class, such as the
    model); a field without a default and without ``cli_default`` is a required flag.
    A bool field with default False is a switch (``store_true``); one with default True
    is switched off by its flag (``names`` then reads like ``--no-prompts``).

    ``positional``: the field is a positional argument named as the field; ``nargs``,
    ``const`` and ``action`` (``append``, ``extend``) are argparse's, for the flags that
    take several values or none. The help shows the default in brackets unless it says
    the default itself (in brackets) or is empty.
    """

    help: str
    names: tuple[str, ...] = ()
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    cli_default: Any = UNSET
    positional: bool = False
    nargs: str | None = None
    const: Any = None
    action: str | None = None


@dataclass(frozen=True)
class Options:
    """Marks a field whose value is a settings class of its own (an engine's options):
    its fields are flags of the command; ``when`` names the field of that class whose
    flag must be given for the options to exist (None: they always exist)."""

    cls: type[Any]
    when: str | None = None
    title: str | None = None


def setting(
    default: Any = MISSING,
    *,
    help: str,
    names: tuple[str, ...] = (),
    parse: Callable[[str], Any] | None = None,
    metavar: str | None = None,
    choices: tuple[str, ...] | None = None,
    cli_default: Any = UNSET,
    positional: bool = False,
    nargs: str | None = None,
    const: Any = None,
    action: str | None = None,
) -> Any:
    """A dataclass field that is also a command-line flag (see :class:`Flag`).

    >>> f = setting(4, help="retries of a failed request")
    >>> f.default, f.metadata["flag"].help
    (4, 'retries of a failed request')
    """
    flag = Flag(help, names, parse, metavar, choices, cli_default, positional, nargs, const, action)
    return dataclasses.field(default=default, metadata={"flag": flag})


def table_format(*choices: str) -> Any:
    """The ``--format`` of a command that prints a table: ``md`` (Markdown) by default,
    ``latex`` (booktabs, :func:`nlieval.ground.as_format`) always, and the ``choices``
    the command adds (``csv``, ``json``). Every table command takes its format here, so
    the flag reads the same everywhere.

    >>> table_format("csv", "json").metadata["flag"].choices
    ('md', 'csv', 'json', 'latex')
    """
    return setting("md", help="table format (latex: booktabs)", choices=("md", *choices, "latex"))


def options(
    cls: type[Any], *, when: str | None = None, optional: bool = False, title: str | None = None
) -> Any:
    """A dataclass field holding an engine's options: ``cls()`` by default, or None
    when ``optional`` (then the options exist only when the flag of ``when`` is given).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Opt:
    ...     dtype: str = setting("auto", help="weights' type")
    >>> options(Opt).default_factory()
    Opt(dtype='auto')
    """
    meta = {"options": Options(cls, when, title)}
    if optional:
        return dataclasses.field(default=None, metadata=meta)
    return dataclasses.field(default_factory=cls, metadata=meta)


def flag_of(f: Field[Any]) -> Flag | None:
    """The :class:`Flag` of a field (None: not a command-line setting)."""
    flag = f.metadata.get("flag")
    return flag if isinstance(flag, Flag) else None


def flag_names(f: Field[Any]) -> tuple[str, ...]:
    """The option strings of a setting field's flag (``--field-name`` unless its
    :class:`Flag` names others; none for a positional or a field without a flag).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     batch_size: int = setting(1, help="items per batch")
    ...     test: bool = setting(True, help="test", names=("--no-test",))
    >>> [flag_names(f) for f in fields(Demo)]
    [('--batch-size',), ('--no-test',)]
    """
    flag = flag_of(f)
    if flag is None or flag.positional:
        return ()
    return flag.names or ("--" + f.name.replace("_", "-"),)


def options_of(f: Field[Any]) -> Options | None:
    """The :class:`Options` of a field that holds an engine's options (else None)."""
    opt = f.metadata.get("options")
    return opt if isinstance(opt, Options) else None


def flat_dict(config: Any) -> dict[str, Any]:
    """The configuration as one flat dict: the fields of its options inline, tuples as
    lists, options that are None as their ``when`` field set to None.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Opt:
    ...     dtype: str = setting("auto", help="weights' type")
    >>> @dataclass(frozen=True)
    ... class Cfg:
    ...     model: str
    ...     hf: Opt = options(Opt)
    >>> flat_dict(Cfg("m"))
    {'model': 'm', 'dtype': 'auto'}
    """
    out: dict[str, Any] = {}
    for f in fields(config):
        value = getattr(config, f.name)
        opt = options_of(f)
        if opt is None:
            nested = is_dataclass(value) and not isinstance(value, type)
            out[f.name] = dataclasses.asdict(value) if nested else value
        elif value is None:
            if opt.when is not None:
                out[opt.when] = None
        else:
            out.update(flat_dict(value))
    return out


def flat_defaults(cls: type[Any]) -> dict[str, Any]:
    """The default of each key :func:`flat_dict` gives for a ``cls``: a field's default
    (or its factory's value), the fields of its options inline, and the ``when`` field
    of options that are None by default as None. A field the class requires has no key,
    though its flag may have a ``cli_default`` (the model: always part of a config).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Opt:
    ...     dtype: str = setting("auto", help="weights' type")
    >>> @dataclass(frozen=True)
    ... class Server:
    ...     api_base: str = setting(help="server")
    ...     timeout: float = setting(60.0, help="seconds")
    >>> @dataclass(frozen=True)
    ... class Cfg:
    ...     model: str
    ...     hf: Opt = options(Opt)
    ...     server: Server | None = options(Server, when="api_base", optional=True)
    >>> flat_defaults(Cfg)
    {'dtype': 'auto', 'timeout': 60.0, 'api_base': None}
    """
    out: dict[str, Any] = {}
    for f in fields(cls):
        opt = options_of(f)
        if opt is not None:
            out.update(flat_defaults(opt.cls))
            if f.default is None and opt.when is not None:
                out[opt.when] = None  # absent options: flat_dict's when field is None
            continue
        if f.default is not MISSING:
            value = f.default
        elif f.default_factory is not MISSING:
            value = f.default_factory()
        else:
            continue
        nested = is_dataclass(value) and not isinstance(value, type)
        out[f.name] = dataclasses.asdict(value) if nested else value  # as flat_dict has it
    return out


def non_default(*configs: Any) -> dict[str, Any]:
    """The :func:`flat_dict` of ``configs`` (merged in order, as a command of several
    settings classes has them) less every key whose value is its default
    (:func:`flat_defaults`; values compared in their JSON form, a tuple as a list): the
    configuration as it was chosen, which a setting added later with a default leaves
    unchanged.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Cfg:
    ...     model: str
    ...     shots: tuple[int, ...] = setting((0,), help="shots")
    ...     limit: int | None = setting(None, help="items")
    >>> non_default(Cfg("m", shots=(0,))), non_default(Cfg("m", limit=20))
    ({'model': 'm'}, {'model': 'm', 'limit': 20})
    """
    flat: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for c in configs:
        flat.update(flat_dict(c))
        defaults.update(flat_defaults(type(c)))
    return {
        k: v for k, v in flat.items() if k not in defaults or _as_json(v) != _as_json(defaults[k])
    }


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def from_flat_dict(cls: type[T], d: Mapping[str, Any]) -> T:
    """Inverse of :func:`flat_dict`: unknown keys are ignored (a ``kind``, or a setting
    of a later version), missing ones take their defaults, lists become tuples.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Cfg:
    ...     tasks: tuple[str, ...] = ()
    >>> from_flat_dict(Cfg, {"tasks": ["snli"], "kind": "run"})
    Cfg(tasks=('snli',))
    """
    kw: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        opt = options_of(f)
        if opt is not None:
            if opt.when is not None and d.get(opt.when) is None:
                kw[f.name] = None
            else:
                kw[f.name] = from_flat_dict(opt.cls, d)
        elif f.name in d:
            value = d[f.name]
            kw[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(**kw)


# --------------------------------------------------------------------------- parsers
# Each takes the flag's text and raises ValueError with a message for the user.


def csv_list(text: str) -> tuple[str, ...]:
    """``"a, b,c"`` -> ``("a", "b", "c")``.

    >>> csv_list("snli, hans")
    ('snli', 'hans')
    """
    return tuple(x.strip() for x in text.split(",") if x.strip())


def int_list(text: str) -> tuple[int, ...]:
    """``"0,1,5"`` -> ``(0, 1, 5)``.

    >>> int_list("0,5")
    (0, 5)
    """
    try:
        return tuple(int(x) for x in csv_list(text))
    except ValueError:
        raise ValueError(f"expected comma-separated integers, got {text!r}") from None


def shot_counts(text: str) -> tuple[int, ...]:
    """``"0,5"`` -> ``(0, 5)``: shot counts, none negative.

    >>> shot_counts("0,3")
    (0, 3)
    """
    values = int_list(text)
    if any(k < 0 for k in values):
        raise ValueError(f"shot counts are 0 or more, got {text!r}")
    return values


def int_at_least(text: str, low: int, what: str) -> int:
    """``text`` as an integer of at least ``low``; ``what`` names it in the error.

    >>> int_at_least("3", 1, "a positive integer")
    3
    >>> int_at_least("x", 0, "0 or more")
    Traceback (most recent call last):
    ValueError: expected 0 or more, got 'x'
    """
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise ValueError(f"expected {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer of at least 1 (counts, bins, token limits).

    >>> positive_int("5")
    5
    """
    return int_at_least(text, 1, "a positive integer")


def count(text: str) -> int:
    """An integer of 0 or more.

    >>> count("0")
    0
    """
    return int_at_least(text, 0, "0 or more")


def seed_list(text: str) -> tuple[int, ...]:
    """A count (``"3"`` = seeds 0, 1, 2) or a list (``"1,5,7"``; ``"7,"`` is seed 7 alone).

    >>> seed_list("3"), seed_list("7,")
    ((0, 1, 2), (7,))
    """
    if "," in text:
        return int_list(text)
    try:
        return tuple(range(positive_int(text)))
    except ValueError:
        raise ValueError(
            f"expected a positive count or a comma-separated list, got {text!r}"
        ) from None


def batch_size(text: str) -> int | str:
    """``auto`` or a count of 1 or more.

    >>> batch_size("auto"), batch_size("8")
    ('auto', 8)
    """
    if text == "auto":
        return text
    return int_at_least(text, 1, "'auto' or a count of 1 or more")
