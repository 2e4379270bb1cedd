"""User templates (``--template``, a task YAML's ``template:``) render in a sandbox: each
known escape route renders nothing dangerous and fails with a one-line ValueError, and
the run stops before a model is loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.choice.prompts import PromptBuilder, load_template
from nlieval.types import NLI3, Item, Label

ITEM = Item("t1", "A cat sits.", "An animal sits.", Label.ENTAILMENT)

#: Each escape route, and the reason its refusal must give: a route into Python is refused
#: by name (an unknown variable, an unsafe attribute, a missing filter), and a bomb by the
#: bound of the sandbox it runs into (steps, characters, integer bits, call depth), so a
#: bomb never gets as far as the wall-clock backstop.
ESCAPES = {
    "cycler globals": (
        "{{ cycler.__init__.__globals__.os.popen('touch {m}').read() }}",
        "unknown variable(s) cycler",
    ),
    "joiner globals": (
        "{{ joiner.__init__.__globals__.os.system('touch {m}') }}",
        "unknown variable(s) joiner",
    ),
    "namespace": (
        "{% set ns = namespace(x=1) %}{{ ns.__init__.__globals__ }}",
        "unknown variable(s) namespace",
    ),
    "lipsum globals": (
        "{{ lipsum.__globals__['os'].popen('touch {m}').read() }}",
        "unknown variable(s) lipsum",
    ),
    "subclasses": (
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "access to attribute '__class__' of 'str' object is unsafe",
    ),
    "item class": (
        "{{ item.__class__.__init__.__globals__['os'].system('touch {m}') }}",
        "is unsafe",
    ),
    "self": (
        "{{ self.__init__.__globals__.__builtins__.open('{m}', 'w') }}",
        "access to attribute '__init__' of 'TemplateReference' object is unsafe",
    ),
    "config-style": ("{{ config.items() }}", "unknown variable(s) config"),
    "request-style": ("{{ request.application.__globals__ }}", "unknown variable(s) request"),
    "attr filter": ("{{ item|attr('__class__') }}", "No filter named 'attr'"),
    "format string": ("{{ '{0.__class__.__init__.__globals__}'.format(item) }}", "is unsafe"),
    "huge range": ("{% for i in range(10**9) %}x{% endfor %}", "unknown variable(s) range"),
    # Loops over what a template is given: 11 characters nested 7 deep are 19 million
    # iterations, refused at the step bound (1,000,000 per render).
    "loop bomb": (
        "{% for a in premise %}" * 7 + "x" + "{% endfor %}" * 7,
        "more than 1,000,000 steps",
    ),
    "string bomb": ("{{ 'x' * 10**9 }}", "would build 1,000,000,000 characters (limit 1,000,000)"),
    "ljust bomb": ("{{ 'x'.ljust(10**10) }}", "characters (limit 1,000,000)"),
    # Jinja reads 9 ** 9 ** 9 as (9 ** 9) ** 9, a 78-digit number: the bomb is this one.
    "power bomb": ("{{ 9 ** (9 ** 9) }}", "-bit integer (limit 4,096)"),
    "recursion": (
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
        "calls nested deeper than 64",
    ),
    "list mutation": (
        "{% set l = [] %}{{ l.append(1) }}",
        "access to attribute 'append' of 'list' object is unsafe",
    ),
    "dict builtin": ("{{ dict(a=1).__class__ }}", "unknown variable(s) dict"),
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_route_is_refused(name: str, tmp_path: Path) -> None:
    marker = tmp_path / "owned.txt"
    route, reason = ESCAPES[name]
    source = route.replace("{m}", str(marker)) + "\nPremise: {{ premise }}\nAnswer:"
    with pytest.raises(ValueError) as err:
        PromptBuilder("nli3", NLI3, [], source).build(ITEM)
    assert reason in str(err.value) and "still rendering" not in str(err.value)
    assert "\n" not in str(err.value)
    assert not marker.exists()


def test_plain_templates_still_render() -> None:
    tpl = "P: {{ premise|lower }} H: {{ hypothesis|upper }} {{ options|length }}\nAnswer:"
    block = PromptBuilder("nli3", NLI3, [], tpl).build(ITEM).block
    assert block == "P: a cat sits. H: AN ANIMAL SITS. 3\nAnswer:"


def test_unknown_variable_is_an_error_at_load() -> None:
    with pytest.raises(ValueError, match="unknown variable.*nonexistent_var"):
        load_template("nli3", "{{ nonexistent_var }} Answer:")


def test_run_stops_before_loading_a_model(tmp_path: Path) -> None:
    loaded = []

    def factory(ckpt: str | None) -> None:
        loaded.append(ckpt)
        raise AssertionError("the model must not be loaded")

    cfg = RunConfig(
        "hash",
        ("smoke",),
        limit=2,
        template="{{ cycler.__init__.__globals__ }} Answer:",
    )
    with pytest.raises(ValueError):
        run(cfg, tmp_path / "r", model=stand_in(cfg, factory), progress=False)
    assert loaded == []
    assert not (tmp_path / "r").exists()


def test_task_yaml_template_is_sandboxed(tmp_path: Path) -> None:
    marker = tmp_path / "owned.txt"
    (tmp_path / "d.jsonl").write_text(
        '{"premise": "A.", "hypothesis": "B.", "label": "entailment"}\n', encoding="utf-8"
    )
    (tmp_path / "t.yaml").write_text(
        "name: hostile\npath: d.jsonl\nlabels: [entailment, neutral, contradiction]\n"
        "template: \"{{ cycler.__init__.__globals__.os.popen('touch "
        + str(marker)
        + "').read() }} Answer:\"\n",
        encoding="utf-8",
    )
    cfg = RunConfig("hash", (str(tmp_path / "t.yaml"),))
    with pytest.raises(ValueError):
        run(cfg, tmp_path / "r", model=stand_in(cfg, lambda ck: None), progress=False)
    assert not marker.exists()
