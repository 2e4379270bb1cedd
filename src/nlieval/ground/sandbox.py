"""Jinja templates that can neither escape nor eat the machine: :class:`BoundedSandbox`.

Prompt templates (``--template``, a task YAML's ``template:``/``template_file:``) and the
chat templates shipped in model folders are someone else's code. Jinja's immutable
sandbox stops attribute walking (no ``__class__``, no mutation of lists or dicts) but
has no limit on time or memory: ``{{ 'x'.ljust(10**10) }}`` or a macro calling itself
takes the machine down. :class:`BoundedSandbox` adds the bounds of
:class:`TemplateLimits` to every render:

- time: a deadline and a step count, checked in every hook (call, attribute, operator,
  filter, output) and on every loop iteration, so no render runs longer than
  ``max_seconds`` even when the template only loops (no thread is killed);
- size: no value a template builds (a string, or a list or mapping as text) may exceed
  ``max_chars``; sizes are checked *before* the value is built wherever one step can
  multiply them (``*``, ``**``, ``%``, ``~``, ``str.format`` widths, ``ljust``/``center``/
  ``zfill``/``expandtabs`` widths, ``replace``/``join``, the ``indent``/``center``/
  ``format``/``tojson`` filters) and after it everywhere else; everything a render
  writes, also inside macros and blocks, counts towards ``8 * max_chars``;
- depth: calls (macros, recursive loops) nest at most ``max_depth`` deep; integers stay
  below ``max_int_bits`` bits.

Every failure (a refusal, an undefined name, an IndexError, a ZeroDivisionError, a
syntax error, ...) becomes one :class:`BadTemplate` line naming the template and, where
Jinja knows it, the line.

>>> env = BoundedSandbox()
>>> env.load("Hi {{ name }}!", "greeting").render(name="Ann")
'Hi Ann!'
>>> env.load("{{ name.ljust(10**10) }}", "greeting").render(name="Ann")  # doctest: +ELLIPSIS
Traceback (most recent call last):
nlieval.ground.sandbox.BadTemplate: greeting line 1: refused: ljust would build 10,000,000,000 ...
"""

from __future__ import annotations

import json
import re
import time
import types
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from functools import wraps
from typing import Any

import jinja2
import jinja2.exceptions
import jinja2.ext
import jinja2.meta
import jinja2.nodes
import jinja2.parser
import jinja2.runtime
import jinja2.sandbox
import jinja2.utils
import jinja2.visitor


@dataclass(frozen=True)
class TemplateLimits:
    """The bounds of one render (see the module docstring)."""

    #: Longest template source, in characters.
    max_source_chars: int = 65_536
    #: Largest value a template may build (a string, or a list or mapping as text), or
    #: twice the characters the render is given (the item, the messages) if that is more.
    max_chars: int = 1_000_000
    #: Hook calls and loop iterations per render.
    max_steps: int = 1_000_000
    #: Nested calls (macros, recursive loops, ``caller()``).
    max_depth: int = 64
    #: Wall-clock seconds per render.
    max_seconds: float = 5.0
    #: Largest integer, in bits.
    max_int_bits: int = 4096

    @property
    def max_written(self) -> int:
        """Everything a render writes, macros and blocks included (their text is
        counted again where it is printed, so this is a multiple of ``max_chars``)."""
        return 8 * self.max_chars


class BadTemplate(ValueError):
    """A template that cannot be used: one line naming it (``origin``), the line in it
    where Jinja knows it, and what went wrong.

    >>> str(BadTemplate("template t.j2", 3, "'x' is undefined", during="item 7"))
    "template t.j2 line 3 (item 7): 'x' is undefined"
    """

    def __init__(
        self, origin: str, line: int | None, message: str, during: str | None = None
    ) -> None:
        self.origin = origin
        self.line = line
        self.message = _one_line(message)
        self.during = during
        where = origin + (f" line {line}" if line else "") + (f" ({during})" if during else "")
        super().__init__(f"{where}: {self.message}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.origin, self.line, self.message, self.during))

    def at(self, during: str) -> BadTemplate:
        """The same error, saying what was being rendered (``item 7``)."""
        return BadTemplate(self.origin, self.line, self.message, during)


class Refused(jinja2.exceptions.SecurityError):
    """A bound of :class:`TemplateLimits` was reached."""


def _one_line(message: object, limit: int = 300) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class _Budget:
    limits: TemplateLimits
    deadline: float
    #: Characters of what the render was given (the item's texts, the messages).
    given: int = 0
    steps: int = 0
    written: int = 0
    depth: int = 0

    @property
    def max_chars(self) -> int:
        # Printing the input as it is never reaches a bound: a 5 MB premise is the
        # data's problem (the prompt-length check names its file), not the template's.
        return max(self.limits.max_chars, 2 * self.given)

    @property
    def max_written(self) -> int:
        return max(self.limits.max_written, 8 * self.max_chars)

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.limits.max_steps:
            raise Refused(f"more than {self.limits.max_steps:,} steps")
        if time.monotonic() > self.deadline:
            raise Refused(f"still rendering after {self.limits.max_seconds:g} s")

    def fits(self, what: str, size: int, built: bool = False) -> None:
        """Refuse ``size`` characters above the limit: ``what`` would build them (a check
        before the value is made) or, with ``built``, has built them (a check after)."""
        if size > self.max_chars:
            verb = "built" if built else "would build"
            raise Refused(f"{what} {verb} {size:,} characters (limit {self.max_chars:,})")

    def bits(self, what: str, bits: int) -> None:
        if bits > self.limits.max_int_bits:
            raise Refused(
                f"{what} would build a {bits:,}-bit integer (limit {self.limits.max_int_bits:,})"
            )


_BUDGET: ContextVar[_Budget | None] = ContextVar("nlieval_template_budget", default=None)


def _budget() -> _Budget:
    budget = _BUDGET.get()
    if budget is None:
        # Jinja folds constant expressions while compiling; refusing here keeps every
        # hook out of that (the expression is then evaluated at render, under a budget).
        raise Refused("outside a bounded render")
    return budget


def text_size(value: Any, stop: int) -> int:
    """An upper estimate of ``len(str(value))``, giving up (returning a number above
    ``stop``) as soon as it is above ``stop``: the size of a value before it is built.

    >>> text_size("abc", 10), text_size(["ab", "c"], 10) >= len(str(["ab", "c"]))
    (3, True)
    >>> text_size(["x" * 100] * 1000, 500) > 500
    True
    """
    if isinstance(value, str | bytes):
        return len(value)
    total = 0
    stack = [value]
    while stack and total <= stop:
        v = stack.pop()
        if isinstance(v, str | bytes):
            total += len(v) + 2
        elif v is None or isinstance(v, bool | float | range):
            total += 24
        elif isinstance(v, int):
            total += v.bit_length() // 3 + 2
        elif isinstance(v, Mapping):
            total += 2 + 4 * len(v)
            if total <= stop:
                stack.extend(v.keys())
                stack.extend(v.values())
        elif isinstance(v, jinja2.utils.Namespace):
            raise Refused("a namespace cannot be turned into text")
        elif isinstance(v, jinja2.Undefined):
            pass  # prints as "" or raises
        elif isinstance(v, Collection):
            total += 2 + 2 * len(v)
            if total <= stop:
                stack.extend(v)
        else:
            total += 64  # macros, loops, undefined values: short reprs
    return total


# ---------------------------------------------------------------- size of one step

# printf-style conversions: %[(key)][flags][width][.precision][length]type
_PRINTF = re.compile(r"%(?:\(([^)]*)\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([a-zA-Z%])")


def _printf_size(fmt: str, args: Any, stop: int) -> int:
    """An upper estimate of ``len(fmt % args)``."""
    specs = _PRINTF.findall(fmt)
    if any("*" in (width, prec) for _, width, prec, _ in specs):
        raise Refused("a * width or precision in a % format")
    if isinstance(args, Mapping):
        largest = max((text_size(v, stop) for v in args.values()), default=0)
        values = len(specs) * largest
    else:
        values = text_size(args, stop)
    widths = sum(int(w or 0) + int(p or 0) for _, w, p, _ in specs)
    return len(fmt) + values + widths


def _format_spec_width(spec: str) -> int:
    # Width and precision are digit runs of the spec; a fill character that is a digit
    # only makes the estimate larger.
    return sum(int(n) for n in re.findall(r"\d+", spec))


class _BoundedFormatter(jinja2.sandbox.SandboxedFormatter):
    """``str.format`` whose fields are checked for width before they are formatted,
    and whose growing result is counted field by field."""

    def __init__(self, env: jinja2.Environment, template: str) -> None:
        super().__init__(env)
        self.made = len(template)

    def format_field(self, value: Any, format_spec: str) -> Any:
        budget = _budget()
        budget.tick()
        size = text_size(value, budget.max_chars) + _format_spec_width(format_spec)
        self.made += size
        budget.fits("format", self.made)
        return super().format_field(value, format_spec)


def _str_method_size(owner: str | bytes, name: str, args: tuple[Any, ...], stop: int) -> int | None:
    """The size of ``owner.name(*args)`` before it is called, for the str methods whose
    result can be much larger than ``owner``; None for the others."""
    n = len(owner)
    if name in ("ljust", "rjust", "center", "zfill") and args and isinstance(args[0], int):
        return max(n, args[0])
    if name == "expandtabs":
        tab = args[0] if args and isinstance(args[0], int) else 8
        count = owner.count("\t") if isinstance(owner, str) else owner.count(b"\t")
        return n + count * max(tab, 0)
    if name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        if not isinstance(old, str | bytes) or not isinstance(new, str | bytes):
            return None
        hits = owner.count(old) if old else n + 1  # type: ignore[arg-type]
        if len(args) > 2 and isinstance(args[2], int) and args[2] >= 0:
            hits = min(hits, args[2])
        return n + hits * max(len(new) - len(old), 0)
    if name == "join" and args:
        parts = args[0]
        if isinstance(parts, Collection):
            return text_size(parts, stop) + n * len(parts)
        raise Refused("join takes a list here")
    if name in ("translate", "maketrans"):
        raise Refused(f"{name} is not available in templates")
    return None


# ---------------------------------------------------------------- filters

#: The built-in filters a template may use by default: Jinja's text and list chores (those
#: chat templates on the hub use), not ``wordwrap``, ``batch``, ``slice``, ``urlize`` or
#: ``pprint``, whose sizes are not worth bounding.
SAFE_FILTERS = (
    "abs", "attr", "capitalize", "center", "count", "d", "default", "dictsort", "e",
    "escape", "first", "float", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr",
    "replace", "reverse", "round", "safe", "select", "selectattr", "sort", "string",
    "striptags", "sum", "title", "trim", "truncate", "unique", "upper", "wordcount",
)  # fmt: skip


def _value_at(fn: Callable[..., Any]) -> int:
    # Filters marked pass_context/pass_environment/pass_eval_context get that first.
    return 1 if getattr(fn, "jinja_pass_arg", None) is not None else 0


def _filter_size(
    name: str, value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], stop: int
) -> int:
    """The size of a filter's result before it runs (0 where the result is never much
    larger than its input, which :func:`text_size` checks after)."""
    size = text_size(value, stop)
    if name in ("center",):
        width = args[0] if args else kwargs.get("width", 80)
        return max(size, width if isinstance(width, int) else 0)
    if name == "indent":
        width = args[0] if args else kwargs.get("width", 4)
        w = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        lines = str(value).count("\n") + 1 if size <= stop else 1
        return size + lines * max(w, 0)
    if name == "format":
        return _printf_size(str(value), kwargs or args, stop)
    if name == "replace" and len(args) >= 2 and isinstance(value, str):
        return _str_method_size(value, "replace", args, stop) or size
    if name == "join":
        parts = list(value) if not isinstance(value, Sequence) else value
        sep = args[0] if args else kwargs.get("d", "")
        return text_size(parts, stop) + len(str(sep)) * len(parts)
    if name == "tojson":
        indents = [kwargs.get("indent")] + [a for a in args if not isinstance(a, bool)]
        if any(i is not None and not (isinstance(i, int) and 0 <= i <= 16) for i in indents):
            raise Refused("tojson takes an indent of 0 to 16")
        return size * 18
    return size


def _guarded_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    at = _value_at(fn)

    @wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.tick()
        value: Any = args[at] if len(args) > at else None
        rest = args[at + 1 :]
        if name == "join" and not isinstance(value, Sequence):
            value = list(value)  # a generator (map, select) is read once, here
            args = (*args[:at], value, *rest)
        budget.fits(name, _filter_size(name, value, rest, kwargs, budget.max_chars))
        out = fn(*args, **kwargs)
        if not isinstance(out, Iterator):
            budget.fits(name, text_size(out, budget.max_chars), built=True)
        return out

    return guarded


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # As transformers' chat templates have it: no HTML escaping, json.dumps' options.
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


# ---------------------------------------------------------------- the environment


class BoundedTemplate(jinja2.Template):
    """A template of :class:`BoundedSandbox`: :meth:`render` runs under the limits and
    raises only :class:`BadTemplate`."""

    origin: str = "template"
    #: The names the template reads that it does not define itself.
    undeclared: frozenset[str] = frozenset()

    def render(self, *args: Any, **kwargs: Any) -> str:
        """The text, or :class:`BadTemplate` naming the template and line."""
        env = self.environment
        assert isinstance(env, BoundedSandbox)
        given = sum(text_size(v, 1 << 40) for v in dict(*args, **kwargs).values())
        budget = _Budget(env.limits, time.monotonic() + env.limits.max_seconds, given)
        token = _BUDGET.set(budget)
        try:
            return super().render(*args, **kwargs)
        except jinja2.exceptions.SecurityError as err:
            raise BadTemplate(
                self.origin, _template_line(err, self.origin), f"refused: {err}"
            ) from None
        except RecursionError as err:
            raise BadTemplate(
                self.origin, _template_line(err, self.origin), "recursion too deep"
            ) from None
        except MemoryError:
            raise BadTemplate(self.origin, None, "out of memory") from None
        except jinja2.TemplateSyntaxError as err:
            raise BadTemplate(self.origin, err.lineno, err.message or str(err)) from None
        except jinja2.TemplateError as err:
            raise BadTemplate(self.origin, _template_line(err, self.origin), str(err)) from None
        except Exception as err:  # noqa: BLE001 - any failure of someone else's template
            line = _template_line(err, self.origin)
            raise BadTemplate(self.origin, line, f"{type(err).__name__}: {err}") from None
        finally:
            _BUDGET.reset(token)


def _template_line(err: BaseException, origin: str) -> int | None:
    # Jinja rewrites a render's traceback so that the template's frames carry its file
    # name and line numbers; the innermost such frame is where it failed.
    line = None
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == origin:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class _Guards(jinja2.visitor.NodeTransformer):
    """Rewrites a parsed template so that loops, ``~`` and literal text pass the
    budget: each ``for`` iterates through ``environment.bounded_iter``, each ``~`` is
    ``environment.bounded_concat``, literal text goes through ``finalize`` as expressions do."""

    def visit_For(self, node: jinja2.nodes.For) -> jinja2.nodes.Node:
        self.generic_visit(node)
        node.iter = jinja2.nodes.Call(
            jinja2.nodes.EnvironmentAttribute("bounded_iter"), [node.iter], [], None, None
        ).set_lineno(node.lineno)
        return node

    def visit_Concat(self, node: jinja2.nodes.Concat) -> jinja2.nodes.Node:
        self.generic_visit(node)
        return jinja2.nodes.Call(
            jinja2.nodes.EnvironmentAttribute("bounded_concat"),
            [jinja2.nodes.List(node.nodes)],
            [],
            None,
            None,
        ).set_lineno(node.lineno)

    def visit_TemplateData(self, node: jinja2.nodes.TemplateData) -> jinja2.nodes.Node:
        return jinja2.nodes.Const(node.data).set_lineno(node.lineno)


@jinja2.pass_context
def _finalize(context: jinja2.runtime.Context, value: Any) -> Any:
    budget = _budget()
    budget.tick()
    size = text_size(value, budget.max_chars)
    budget.fits("printing a value", size)
    budget.written += size
    if budget.written > budget.max_written:
        raise Refused(f"wrote more than {budget.max_written:,} characters")
    return value


class BoundedSandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox under :class:`TemplateLimits` (see the module
    docstring). :meth:`load` compiles a template, :meth:`BoundedTemplate.render` renders
    it; both raise only :class:`BadTemplate`.

    ``filters``: the names of Jinja's built-in filters a template may use (default:
    :data:`SAFE_FILTERS`), each wrapped in the limits; ``extra_filters`` adds filters of
    one's own.

    >>> env = BoundedSandbox()
    >>> env.load("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "loop.j2").render()
    Traceback (most recent call last):
    nlieval.ground.sandbox.BadTemplate: loop.j2 line 1: refused: calls nested deeper than 64
    """

    template_class = BoundedTemplate
    intercepted_binops = frozenset({"+", "*", "%", "**"})

    def __init__(
        self,
        limits: TemplateLimits | None = None,
        filters: Iterable[str] | None = None,
        extra_filters: Mapping[str, Callable[..., Any]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(finalize=_finalize, **options)
        self.limits = limits or TemplateLimits()
        names = list(SAFE_FILTERS if filters is None else filters)
        chosen = {n: self.filters[n] for n in names}
        chosen.update(extra_filters or {})
        self.filters = {n: _guarded_filter(n, f) for n, f in chosen.items()}

    # -- compiling ----------------------------------------------------------------
    def load(self, source: str, origin: str) -> BoundedTemplate:
        """``source`` compiled under the limits; errors name ``origin`` and the line."""
        if len(source) > self.limits.max_source_chars:
            raise BadTemplate(
                origin, None, f"longer than {self.limits.max_source_chars:,} characters"
            )
        try:
            tree = self.parse(source, name=origin, filename=origin)
            undeclared = frozenset(jinja2.meta.find_undeclared_variables(tree))
            tree = _Guards().visit(tree)
            code = self.compile(tree, name=origin, filename=origin)
            tpl = self.template_class.from_code(self, code, self.make_globals(None))
        except jinja2.TemplateSyntaxError as err:
            raise BadTemplate(origin, err.lineno, err.message or str(err)) from None
        except RecursionError:
            raise BadTemplate(origin, None, "nested too deeply to compile") from None
        except MemoryError:
            raise BadTemplate(origin, None, "out of memory while compiling") from None
        except (SyntaxError, ValueError, TypeError) as err:
            raise BadTemplate(origin, None, f"cannot compile: {err}") from None
        assert isinstance(tpl, BoundedTemplate)
        tpl.origin = origin
        tpl.undeclared = undeclared
        return tpl

    # -- the hooks ------------------------------------------------------------------
    def bounded_iter(self, iterable: Any) -> Iterator[Any]:
        """What a ``for`` loop walks: ``iterable``, one budget step per item."""
        budget = _budget()
        for x in iterable:
            budget.tick()
            yield x

    def bounded_concat(self, parts: list[Any]) -> str:
        """``a ~ b ~ ...``: the sizes are checked before the text is built."""
        budget = _budget()
        budget.tick()
        budget.fits("~", sum(text_size(p, budget.max_chars) for p in parts))
        return "".join(str(p) for p in parts)

    def call(
        __self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any
    ) -> Any:  # noqa: N805, B902
        budget = _budget()
        budget.tick()
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str | bytes) and isinstance(__obj, types.BuiltinMethodType):
            if __obj.__name__ == "join" and args and isinstance(args[0], Iterator):
                args = (list(args[0]), *args[1:])  # a generator (map, select): read once
            size = _str_method_size(owner, __obj.__name__, args, budget.max_chars)
            if size is not None:
                budget.fits(__obj.__name__, size)
        if budget.depth >= budget.limits.max_depth:
            raise Refused(f"calls nested deeper than {budget.limits.max_depth}")
        budget.depth += 1
        try:
            out = super().call(__context, __obj, *args, **kwargs)
        finally:
            budget.depth -= 1
        if not isinstance(out, Iterator | jinja2.utils.Namespace):
            name = getattr(__obj, "__name__", "a call")
            budget.fits(name, text_size(out, budget.max_chars), built=True)
        return out

    def call_binop(
        self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
    ) -> Any:
        budget = _budget()
        budget.tick()
        stop = budget.max_chars
        ints = isinstance(left, int) and isinstance(right, int)
        if operator == "**":
            if ints and right > 0:
                budget.bits("**", max(left.bit_length(), 1) * right)
            return super().call_binop(context, operator, left, right)
        if operator == "*":
            if ints:
                budget.bits("*", left.bit_length() + right.bit_length())
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, str | bytes | list | tuple) and isinstance(times, int):
                    budget.fits("*", text_size(seq, stop) * max(times, 0))
        elif operator == "+" and not (
            isinstance(left, int | float) and isinstance(right, int | float)
        ):
            budget.fits("+", text_size(left, stop) + text_size(right, stop))
        elif operator == "%" and isinstance(left, str):
            budget.fits("%", _printf_size(left, right, stop))
        return super().call_binop(context, operator, left, right)

    def call_unop(self, context: jinja2.runtime.Context, operator: str, arg: Any) -> Any:
        _budget().tick()
        return super().call_unop(context, operator, arg)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _budget().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _budget().tick()
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        if super().wrap_str_format(value) is None:
            return None
        template: str = value.__self__
        is_map = value.__name__ == "format_map"

        def bounded_format(*args: Any, **kwargs: Any) -> str:
            if is_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one mapping")
                kwargs, args = args[0], ()
            return type(template)(_BoundedFormatter(self, template).vformat(template, args, kwargs))

        return bounded_format


# ---------------------------------------------------------------- chat templates


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}`` (marks the assistant's tokens for
    training masks in transformers): rendered as its body."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> list[jinja2.nodes.Node]:
        next(parser.stream)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


class _ChatNamespace(jinja2.utils.Namespace):
    # As in transformers: no attribute starting with "_" may be stored on a namespace.
    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805
        self, rest = args[0], args[1:]
        for name in dict(*rest, **kwargs):
            _ChatNamespace.check_name(name)
        jinja2.utils.Namespace.__init__(self, *rest, **kwargs)

    def __setitem__(self, name: str, value: Any) -> None:
        _ChatNamespace.check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def check_name(name: object) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"namespace attribute {name!r} refused")


def _raise_exception(message: object) -> None:
    raise jinja2.TemplateError(f"raised: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(str(fmt)[:200])


def _plain_dict(*args: Any, **kwargs: Any) -> dict[Any, Any]:
    return dict(*args, **kwargs)


def chat_sandbox(limits: TemplateLimits | None = None) -> BoundedSandbox:
    """The environment chat templates render in: what transformers' ``apply_chat_template``
    offers (``trim_blocks``, ``lstrip_blocks``, ``{% break %}``/``{% continue %}``,
    ``{% generation %}``, the ``tojson`` filter, ``raise_exception``, ``strftime_now``,
    ``namespace``, ``dict``, ``range``) under :class:`TemplateLimits`.

    >>> tpl = chat_sandbox().load(
    ...     "{% for m in messages %}<{{ m.role }}>{{ m.content }}\\n{% endfor %}", "chat")
    >>> tpl.render(messages=[{"role": "user", "content": "Hi"}])
    '<user>Hi\\n'
    """
    env = BoundedSandbox(
        limits,
        filters=SAFE_FILTERS,
        extra_filters={"tojson": _tojson},
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[jinja2.ext.loopcontrols, _GenerationTag],
    )
    env.globals.pop("lipsum", None)  # n paragraphs of random text: no use, no bound
    env.globals.update(
        raise_exception=_raise_exception,
        strftime_now=_strftime_now,
        namespace=_ChatNamespace,
        dict=_plain_dict,
    )
    return env


@dataclass
class ChatTemplate:
    """A model's chat template, compiled once in :func:`chat_sandbox`; ``origin`` names
    it in errors (the model folder's file).

    >>> source = ("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"
    ...           "{% if add_generation_prompt %}>{% endif %}")
    >>> chat = ChatTemplate(source, "demo", {"bos_token": "<s>"})
    >>> chat.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    '<s>Hi>'
    """

    source: str
    origin: str
    special_tokens: Mapping[str, str] = field(default_factory=dict)
    limits: TemplateLimits | None = None

    def __post_init__(self) -> None:
        self.template = chat_sandbox(self.limits).load(self.source, self.origin)

    def render(self, messages: Sequence[Mapping[str, Any]], add_generation_prompt: bool) -> str:
        """The conversation as text, as ``apply_chat_template(tokenize=False)`` gives it."""
        plain = [{k: v for k, v in dict(m).items() if v is not None} for m in messages]
        return self.template.render(
            {
                **self.special_tokens,
                "messages": plain,
                "add_generation_prompt": add_generation_prompt,
                "tools": None,
                "documents": None,
            }
        )


def _json_text(x: Any) -> str:
    # A JSON string or number as a prompt shows it: no HTML escaping, non-ASCII kept.
    return json.dumps(x, ensure_ascii=False)


def prompt_sandbox(limits: TemplateLimits | None = None) -> BoundedSandbox:
    """The environment of a prompt file's templates (``nlieval instruct --prompt``,
    ``nlieval generate --prompt``): the safe filters and ``json`` (a value as JSON text,
    non-ASCII kept), no globals, and an undefined name is an error, under
    :class:`TemplateLimits`.

    >>> prompt_sandbox().load('{"a": {{ x | json }}}', "answer").render(x='say "hi"')
    '{"a": "say \\\\"hi\\\\""}'
    """
    env = BoundedSandbox(
        limits,
        filters=SAFE_FILTERS,
        extra_filters={"json": _json_text},
        undefined=jinja2.StrictUndefined,
    )
    env.globals.clear()
    return env


def load_prompt_templates(
    parts: Mapping[str, str],
    origin: str,
    variables: Mapping[str, Collection[str]],
    needs: Mapping[str, Collection[str]] | None = None,
) -> dict[str, BoundedTemplate]:
    """Each of ``parts`` (name -> template text) compiled in :func:`prompt_sandbox`, its
    variables checked against ``variables[name]``: an unknown one is a
    :class:`BadTemplate` line naming ``origin``, the part and the names it knows. A part
    of ``needs`` must use at least one of its names (the item's variables: a turn that
    names none is the same for every item).

    >>> t = load_prompt_templates({"user": "Q: {{ premise }}"}, "p.yaml", {"user": ["premise"]})
    >>> t["user"].render(premise="A cat naps.")
    'Q: A cat naps.'
    >>> load_prompt_templates({"user": "{{ secret }}"}, "p.yaml", {"user": ["premise"]})
    Traceback (most recent call last):
    nlieval.ground.sandbox.BadTemplate: user of p.yaml: unknown variable(s) secret; user knows ...
    >>> load_prompt_templates({"user": "Classify."}, "p.yaml", {"user": ["premise"]},
    ...                       needs={"user": ["premise"]})
    Traceback (most recent call last):
    nlieval.ground.sandbox.BadTemplate: user of p.yaml: names no item variable (premise): ...
    """
    env = prompt_sandbox()
    out = {}
    for name, source in parts.items():
        where = f"{name} of {origin}"
        tpl = env.load(source, where)
        unknown = tpl.undeclared - set(variables[name])
        if unknown:
            raise BadTemplate(
                where,
                None,
                f"unknown variable(s) {', '.join(sorted(unknown))}; "
                f"{name} knows {', '.join(sorted(variables[name]))}",
            )
        wanted = (needs or {}).get(name)
        if wanted and not tpl.undeclared & set(wanted):
            raise BadTemplate(
                where,
                None,
                f"names no item variable ({' or '.join(wanted)}): every item would get "
                "the same prompt",
            )
        out[name] = tpl
    return out
