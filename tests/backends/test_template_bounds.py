"""The render bounds of BoundedSandbox (time, size, depth, integers) and its one-line
errors: every template bomb is refused by the bound made for it, with small limits so
that nothing here takes long or much memory, and plain templates still render."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from nlieval.ground.sandbox import (
    BadTemplate,
    BoundedSandbox,
    ChatTemplate,
    TemplateLimits,
    chat_sandbox,
    text_size,
)

P = "A man walks in the park."  # 24 characters
SMALL = TemplateLimits(max_chars=10_000, max_steps=20_000, max_depth=16, max_int_bits=256)


def _render(source: str, limits: TemplateLimits = SMALL, **ctx: object) -> str:
    env = BoundedSandbox(limits, undefined=jinja2.StrictUndefined)
    return env.load(source, "t.j2").render(premise=P, **ctx)


# Each bomb, the words its refusal must carry (naming the bound that caught it).
BOMBS = {
    "ljust": ("{{ premise.ljust(20000) }}", "ljust would build 20,000"),
    "center": ("{{ premise.center(20000) }}", "center would build 20,000"),
    "zfill": ("{{ premise.zfill(20000) }}", "zfill would build 20,000"),
    "expandtabs": ('{{ ("\t" * 100).expandtabs(1000) }}', "expandtabs would build 100,100"),
    "printf width": ('{{ "%50000s" % premise }}', "% would build 50,0"),
    "printf star": ('{{ "%*s" % (10**6, premise) }}', "a * width"),
    "printf many": ('{{ ("%(p)s" * 500) % {"p": premise} }}', "% would build 14,500"),
    "format width": ('{{ "{:>50000}".format(premise) }}', "format would build 50,0"),
    "format_map": ('{{ "{p:>50000}".format_map({"p": premise}) }}', "format would build 50,"),
    "format repeats": ('{{ ("{0}" * 1000).format(premise) }}', "format would build 10,0"),
    "str replace": ('{{ (premise * 20).replace("", premise * 20) }}', "replace would build"),
    "str join": ("{{ premise.join([premise * 10] * 40) }}", "join would build"),
    "repeat": ("{{ premise * 1000 }}", "* would build 24,000"),
    "list repeat": ("{{ [premise] * 1000 }}", "* would build"),
    "concat": (
        "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% else %}{{ s }}{% endif %}"
        "{% endmacro %}{{ d(premise, 12) }}",
        "~ would build",
    ),
    "plus": (
        "{% macro d(s, n) %}{% if n %}{{ d(s + s, n - 1) }}{% else %}{{ s }}{% endif %}"
        "{% endmacro %}{{ d(premise, 12) }}",
        "+ would build",
    ),
    "join filter": (
        "{% macro d(s, n) %}{% if n %}{{ d([s, s]|join, n - 1) }}{% else %}{{ s }}{% endif %}"
        "{% endmacro %}{{ d(premise, 12) }}",
        "join would build",
    ),
    "replace filter": ('{{ (premise * 20)|replace("", premise * 20) }}', "replace would build"),
    "power": ("{{ 9 ** 100 }}", "** would build a 400-bit integer"),
    "int square": (
        "{% macro sq(x, n) %}{% if n %}{{ sq(x * x, n - 1) }}{% else %}{{ x }}{% endif %}"
        "{% endmacro %}{{ sq(99, 12) }}",
        "* would build a",
    ),
    "recursion": ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "nested deeper than 16"),
    "loop recursion": (
        "{% for c in [premise] recursive %}{{ loop([c]) }}{% endfor %}",
        "nested deeper than 16",
    ),
    "nested loops": (
        "{% for a in premise %}{% for b in premise %}{% for c in premise %}"
        "{% for e in premise %}{% endfor %}{% endfor %}{% endfor %}{% endfor %}",
        "more than 20,000 steps",
    ),
    "literal output": (
        "{% for a in premise %}{% for b in premise %}" + "x" * 500 + "{% endfor %}{% endfor %}",
        "wrote more than 80,000",
    ),
    "literal in a macro": (
        "{% macro m() %}{% for a in premise %}{% for b in premise %}"
        + "x" * 500
        + "{% endfor %}{% endfor %}{% endmacro %}{{ m()|length }}",
        "wrote more than 80,000",
    ),  # fmt: skip
    "printed list": (
        "{% set s = premise * 100 %}{{ [s, s, s, s, s] }}",
        "printing a value would build",
    ),
    "escape growth": ('{{ ("<" * 3000)|e|length }}', "e built 12,000"),
    "upper growth": ('{{ ("\u00df" * 6000).upper()|length }}', "upper built 12,000"),
    "center filter": ("{{ premise|center(20000) }}", "center would build 20,000"),
    "indent filter": ('{{ ("a\\n" * 100)|indent(200) }}', "indent would build 20,4"),
    "format filter": (
        '{{ ("%s" * 3)|format(premise * 200, premise * 200, premise * 200) }}',
        "format would build 14,4",
    ),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_each_bomb_is_refused_by_its_bound(name: str) -> None:
    source, words = BOMBS[name]
    with pytest.raises(BadTemplate, match="refused") as err:
        _render(source)
    assert words in str(err.value)
    assert str(err.value).startswith("t.j2 line 1: ")
    assert "\n" not in str(err.value)


def test_the_bounds_are_what_refuses() -> None:
    # With room enough, the same constructions render: the refusals above come from the
    # limits, not from the constructions being forbidden.
    roomy = TemplateLimits(max_chars=100_000, max_steps=200_000, max_int_bits=100_000)
    assert _render("{{ premise.ljust(30) }}|", roomy) == P + "      |"
    assert len(_render("{{ premise * 1000 }}", roomy)) == 24_000
    assert len(_render('{{ "%5000s" % premise }}', roomy)) == 5000
    assert _render('{{ "{:>30}".format(premise) }}', roomy) == " " * 6 + P
    assert len(_render("{{ 9 ** (9 ** 3) }}", roomy)) == len(str(9 ** (9**3)))
    nested = "{% for a in premise %}{% for b in premise %}.{% endfor %}{% endfor %}"
    assert _render(nested, roomy) == "." * 24 * 24


def test_the_input_itself_is_never_too_large() -> None:
    # A premise above the limit prints as it is (its prompt length is the backend's
    # check, which names the data file); what the template builds from it is bounded by
    # twice what it was given.
    env = BoundedSandbox(SMALL)
    big = "x" * 50_000
    assert env.load("{{ premise }}!", "t.j2").render(premise=big) == big + "!"
    with pytest.raises(BadTemplate, match="would build 150,000 characters .limit 100,000."):
        env.load("{{ premise * 3 }}", "t.j2").render(premise=big)


def test_a_render_past_its_deadline_is_refused() -> None:
    # max_seconds=0: the first hook is already past the deadline; no thread is killed.
    limits = TemplateLimits(max_seconds=0.0)
    with pytest.raises(BadTemplate, match=r"still rendering after 0 s"):
        _render("{% for a in premise %}{% endfor %}", limits)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ premise[100] }}", "t.j2 line 1: str object has no element 100"),
        ("ok\n{{ 1 // 0 }}", "t.j2 line 2: ZeroDivisionError: integer division or modulo by zero"),
        ("a\nb\n{{ nope }}", "t.j2 line 3: 'nope' is undefined"),
        ("{{ premise|round }}", "t.j2 line 1: TypeError: type str doesn't define __round__"),
        ("{% for x in %}", "t.j2 line 1: Expected an expression"),
        ("{{ premise|nofilter }}", "t.j2 line 1: No filter named 'nofilter'."),
        ("{% include 'other.j2' %}", "t.j2 line 1: TypeError: no loader"),
        ("{{ premise.__class__ }}", "t.j2 line 1: refused: access to attribute '__class__'"),
    ],
)
def test_every_failure_is_one_line_naming_template_and_line(source: str, message: str) -> None:
    with pytest.raises(BadTemplate) as err:
        _render(source)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_a_long_source_is_refused_before_parsing() -> None:
    env = BoundedSandbox(TemplateLimits(max_source_chars=100))
    with pytest.raises(BadTemplate, match="t.j2: longer than 100 characters"):
        env.load("{{ premise }}" + " " * 100, "t.j2")


def test_text_size_bounds_the_printed_length() -> None:
    values = [P, ["a", P, 3, None, 2.5], {"k": [P, P]}, ("x",), 10**50, range(3)]
    for v in values:
        assert text_size(v, 10_000) >= len(str(v))


def test_chat_template_renders_as_transformers(tiny_llama: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_llama)
    conv = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "A cat naps."},
        {"role": "assistant", "content": "It rests."},
    ]
    source = (
        "{{ bos_token }}{% set ns = namespace(n=0) %}{% for m in messages %}"
        "{% set ns.n = ns.n + 1 %}<{{ m['role'] }}>{{ m.content | trim }}{% if not loop.last %}"
        "\n{% endif %}{% endfor %}{% if add_generation_prompt %}<assistant>{{ ns.n }}{% endif %}"
        "{{ eos_token if not add_generation_prompt else '' }}"
    )
    tok.chat_template = source
    chat = ChatTemplate(source, "chat", dict(tok.special_tokens_map))
    for gen in (True, False):
        want = tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=gen)
        assert chat.render(conv, add_generation_prompt=gen) == want


def test_chat_template_loop_is_bounded() -> None:
    env = chat_sandbox(TemplateLimits(max_steps=5_000))
    tpl = env.load(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "c"
    )
    with pytest.raises(BadTemplate, match="c line 1: refused: more than 5,000 steps"):
        tpl.render(messages=[])


def test_chat_namespace_doubling_is_bounded() -> None:
    env = chat_sandbox(SMALL)
    tpl = env.load(
        "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}{{ ns.s }}",
        "c",
    )
    with pytest.raises(BadTemplate, match="~ would build 16,384 characters"):
        tpl.render(messages=[])


def test_chat_tojson_indent_is_bounded() -> None:
    tpl = chat_sandbox(SMALL).load("{{ messages|tojson(indent=100) }}", "c")
    with pytest.raises(BadTemplate, match="c line 1: refused: tojson takes an indent of 0 to 16"):
        tpl.render(messages=[{"role": "user", "content": "Hi"}])


def test_chat_raise_exception_is_one_line() -> None:
    tpl = chat_sandbox().load(
        "x\n{{ raise_exception('Roles must alternate\\nuser/assistant') }}", "c"
    )
    with pytest.raises(BadTemplate) as err:
        tpl.render(messages=[])
    assert str(err.value) == "c line 2: raised: Roles must alternate user/assistant"
