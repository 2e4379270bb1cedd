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

A value is read here once, however it is given: :func:`read_text` reads a flag's text
(argparse's ``type``), :func:`read_value` a YAML or JSON value (an experiment block,
``--set``), both into the type the declaring class gives the field
(``typing.get_type_hints``), and :func:`value_schema` is the JSON Schema of those values.
A setting shared by many commands is declared by one factory (:func:`out_setting`,
:func:`table_format`; ``data`` and ``backends`` hold theirs).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo:
...     limit: int | None = setting(None, help="first N items")
>>> flag_of(fields(Demo)[0]).help
'first N items'
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, fields, is_dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")


class Unset:
    """The type of :data:`UNSET`: no value given (``None`` may be a value)."""

    def __repr__(self) -> str:
        return "UNSET"


#: No command-line default (see :attr:`Flag.cli_default`).
UNSET = Unset()

#: A flag's choices: the values, or a function that gives them when they are read (the
#: metrics of ``metrics.METRICS``, which the table decides, not the flag).
Choices = tuple[str, ...] | Callable[[], tuple[str, ...]]


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
    the default itself (in brackets) or is empty. ``choices`` are read through
    :func:`choices_of`.
    """

    help: str
    names: tuple[str, ...] = ()
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: Choices | None = None
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
    choices: Choices | None = None,
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
    return _Declared.of(dataclasses.field(default=default, metadata={"flag": flag}))


class _Declared(Field):  # type: ignore[type-arg]
    """A setting's field that knows the class declaring it, so that its value is read
    into the class's real type (:func:`setting_type`), whatever its annotation's text."""

    __slots__ = ("owner",)
    owner: type[Any] | None

    @classmethod
    def of(cls, f: Field[Any]) -> _Declared:
        # Field's constructor differs between Python versions; its slots are the fields.
        out = cls.__new__(cls)
        for name in Field.__slots__:
            if hasattr(f, name):
                setattr(out, name, getattr(f, name))
        out.owner = None
        return out

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.owner = owner
        super().__set_name__(owner, name)


def table_format(*choices: str) -> Any:
    """The ``--format`` of a command that prints a table: ``md`` (Markdown) by default,
    ``latex`` (booktabs, :func:`nlieval.ground.render`) always, and the ``choices``
    the command adds (``csv``, ``json``). Every table command takes its format here, so
    the flag reads the same everywhere.

    >>> table_format("csv", "json").metadata["flag"].choices
    ('md', 'csv', 'json', 'latex')
    """
    return setting("md", help="table format (latex: booktabs)", choices=("md", *choices, "latex"))


def out_setting(
    help: str = "output folder", default: Any = MISSING, *, metavar: str | None = None
) -> Any:
    """``--out`` (or ``--output_path``, as in lm-evaluation-harness): where the command
    writes, declared here once; ``help`` says what it writes there (a folder, a file).

    >>> out_setting("figure to write").metadata["flag"].names
    ('--out', '--output_path')
    """
    return shared(
        "out", setting(default, help=help, names=("--out", "--output_path"), metavar=metavar)
    )


#: The field metadata key of :func:`shared`.
SHARED = "shared"


def shared(name: str, f: Any) -> Any:
    """``f`` (made by :func:`setting`) marked as made by the one factory of the shared
    setting ``name`` (``out`` here; ``data_dir``, ``split``, ``task``, ``tasks`` in
    ``data``, ``model`` in ``backends``), so that a test can find a hand-made copy.

    >>> shared_of(out_setting())
    'out'
    """
    f.metadata = types.MappingProxyType({**f.metadata, SHARED: name})
    return f


def shared_of(f: Field[Any]) -> str | None:
    """The shared setting whose factory made field ``f`` (None: declared by hand)."""
    name = f.metadata.get(SHARED)
    return name if isinstance(name, str) else None


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


def choices_of(flag: Flag) -> tuple[str, ...] | None:
    """The values ``flag`` may take (None: any), a function's asked now.

    >>> choices_of(Flag("metric", choices=lambda: ("accuracy", "macro_f1")))
    ('accuracy', 'macro_f1')
    """
    return flag.choices() if callable(flag.choices) else flag.choices


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


# --------------------------------------------------------------------------- values
# The one reader of a setting's value, whether a flag's text, a YAML value (an
# experiment block, `--set`) or a JSON value: each raises ValueError with a message for
# the user, which the caller turns into its own error (argparse's, a DataError).

_TRUE = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@functools.cache
def _hints(owner: type[Any]) -> dict[str, Any]:
    return typing.get_type_hints(owner)


def setting_type(f: Field[Any]) -> Any:
    """The real type of the setting ``f`` (``typing.get_type_hints`` of the class that
    declares it; a string annotation is never read as text).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     limit: int | None = setting(None, help="first N items")
    >>> setting_type(fields(Demo)[0]) == (int | None)
    True
    """
    if not isinstance(f.type, str):
        return f.type
    owner = getattr(f, "owner", None)
    if owner is None:
        raise TypeError(f"field {f.name!r} is not declared with settings.setting")
    return _hints(owner)[f.name]


def _alternatives(typ: Any) -> tuple[tuple[Any, ...], bool]:
    """The types a value may have (None left out), and whether None is one."""
    alts = get_args(typ) if get_origin(typ) in (Union, types.UnionType) else (typ,)
    kept = tuple(a for a in alts if a is not type(None))
    return kept, len(kept) < len(alts)


def _is_tuple(t: Any) -> bool:
    return t is tuple or get_origin(t) is tuple


def _is_text(t: Any) -> bool:
    # A Literal of strings (chaosnli's Against) is text whose choices its flag names.
    return t is str or (get_origin(t) is Literal and all(isinstance(a, str) for a in get_args(t)))


def _type_name(alts: tuple[Any, ...]) -> str:
    def name(t: Any) -> str:
        if get_origin(t) is Literal:
            return "str"
        return t.__name__ if isinstance(t, type) and not get_args(t) else str(t)

    return " | ".join(name(t) for t in alts)


def read_text(f: Field[Any], text: str) -> Any:
    """One use of the flag of setting ``f`` given ``text`` (argparse's ``type``): read by
    the flag's parser, else as the field's type (an integer, a number, text). The
    flag's choices are argparse's to check (:func:`read_value` checks them itself).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     epochs: int = setting(3, help="epochs")
    ...     shots: tuple[int, ...] = setting((0,), help="shots", parse=shot_counts)
    >>> epochs, shots = fields(Demo)
    >>> read_text(epochs, "5"), read_text(shots, "0,5")
    (5, (0, 5))
    >>> read_text(epochs, "five")
    Traceback (most recent call last):
    ValueError: expected an integer, found 'five'
    """
    flag = flag_of(f)
    if flag is not None and flag.parse is not None:
        return flag.parse(text)
    alts, _ = _alternatives(setting_type(f))
    if alts == (int,):
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"expected an integer, found {text!r}") from None
    if alts == (float,):
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected a number, found {text!r}") from None
    return text


def _as_values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def read_value(f: Field[Any], value: Any) -> Any:
    """The value of setting ``f`` given as a YAML or JSON value (a text is read as the
    flag reads its text, a list as the flag's comma-separated text or, for a repeatable
    flag, as one use of it per entry); a value the flag would refuse is a ValueError.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     shots: tuple[int, ...] = setting((0,), help="shots", parse=shot_counts)
    ...     limit: int | None = setting(None, help="first N items")
    ...     fmt: str = setting("md", help="format", choices=("md", "csv"))
    >>> shots, limit, fmt = fields(Demo)
    >>> read_value(shots, [0, 5]), read_value(shots, "0,2"), read_value(limit, None)
    ((0, 5), (0, 2), None)
    >>> read_value(shots, [-1])
    Traceback (most recent call last):
    ValueError: shot counts are 0 or more, got '-1,'
    >>> read_value(fmt, "tsv")
    Traceback (most recent call last):
    ValueError: expected one of md, csv, found 'tsv'
    """
    flag = flag_of(f)
    alts, nullable = _alternatives(setting_type(f))
    if value is None:
        if not nullable:
            raise ValueError("needs a value (null is not one)")
        return None
    if alts == (bool,):
        if isinstance(value, str) and value.lower() in _TRUE:
            return _TRUE[value.lower()]
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, found {value!r}")
        return value
    if isinstance(value, (dict, bool)) or (
        isinstance(value, list) and any(isinstance(v, (dict, list, bool)) for v in value)
    ):
        raise ValueError(f"expected {_type_name(alts)}, found {value!r}")
    if flag is not None and flag.action == "append":
        # A repeatable flag (--name, --human-js, --run): each value of the list is one
        # use of it, and one value is a list of one, as the flag gives it.
        return tuple(read_text(f, str(v)) for v in _as_values(value))
    if flag is not None and flag.parse is not None:
        if isinstance(value, list):
            if not value:
                return ()
            # One value and a comma: "7," is the list of 7 (a count, alone, means range).
            text = ",".join(str(v) for v in value) + ("," if len(value) == 1 else "")
        else:
            text = str(value)
        value = read_text(f, text)
    elif any(_is_tuple(t) for t in alts):
        value = tuple(str(v) for v in _as_values(value))
    elif alts == (int,):
        value = read_text(f, value) if isinstance(value, str) else value
        if not isinstance(value, int):
            raise ValueError(f"expected an integer, found {value!r}")
    elif alts == (float,):
        if isinstance(value, str):
            value = read_text(f, value)
        elif isinstance(value, (int, float)):
            value = float(value)
        else:
            raise ValueError(f"expected a number, found {value!r}")
    elif len(alts) == 1 and _is_text(alts[0]):
        if isinstance(value, list):
            raise ValueError(f"expected text, found a list {value!r}")
        value = str(value)
    choices = None if flag is None else choices_of(flag)
    if choices is not None and value not in choices:
        raise ValueError(f"expected one of {', '.join(choices)}, found {value!r}")
    return value


def value_schema(f: Field[Any]) -> dict[str, Any]:
    """A JSON Schema of the values :func:`read_value` takes for setting ``f`` (an
    experiment file's block or output), its description the flag's help.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Demo:
    ...     limit: int | None = setting(None, help="first N items")
    >>> value_schema(fields(Demo)[0])
    {'type': ['integer', 'null'], 'description': 'first N items'}
    """
    alts, nullable = _alternatives(setting_type(f))
    flag = flag_of(f)
    schema: dict[str, Any]
    tuples = [t for t in alts if _is_tuple(t)]
    if alts == (bool,):
        schema = {"type": "boolean"}
    elif alts == (int,):
        schema = {"type": "integer"}
    elif alts == (float,):
        schema = {"type": "number"}
    elif tuples and get_args(tuples[0])[:1] == (int,):
        schema = {
            "anyOf": [
                {"type": "array", "items": {"type": "integer"}},
                {"type": ["string", "integer"]},
            ]
        }
    elif tuples:
        schema = {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}
    elif set(alts) == {int, str}:
        schema = {"type": ["integer", "string"]}
    else:
        schema = {"type": "string"}
    choices = None if flag is None else choices_of(flag)
    if choices is not None:
        schema = {"enum": list(choices)}
    if nullable:
        if "type" in schema and isinstance(schema["type"], str):
            schema["type"] = [schema["type"], "null"]
        else:
            schema = {"anyOf": [schema, {"type": "null"}]}
    if flag is not None and flag.help:
        schema["description"] = flag.help
    return schema
