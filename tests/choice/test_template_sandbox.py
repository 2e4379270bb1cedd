"""User templates (``--template``, a task YAML's ``template:``) render in a sandbox: each
known escape route renders nothing dangerous and fails with a one-line ValueError, and
the run stops before a model is loaded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.choice.prompts import PromptBuilder, load_template
from nlieval.types import NLI3, Item, Label

ITEM = Item("t1", "A cat sits.", "An animal sits.", Label.ENTAILMENT)

ESCAPES = {
    "cycler globals": "{{ cycler.__init__.__globals__.os.popen('touch {m}').read() }}",
    "joiner globals": "{{ joiner.__init__.__globals__.os.system('touch {m}') }}",
    "namespace": "{% set ns = namespace(x=1) %}{{ ns.__init__.__globals__ }}",
    "lipsum globals": "{{ lipsum.__globals__['os'].popen('touch {m}').read() }}",
    "subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "item class": "{{ item.__class__.__init__.__globals__['os'].system('touch {m}') }}",
    "self": "{{ self.__init__.__globals__.__builtins__.open('{m}', 'w') }}",
    "config-style": "{{ config.items() }}",
    "request-style": "{{ request.application.__globals__ }}",
    "attr filter": "{{ item|attr('__class__') }}",
    "format string": "{{ '{0.__class__.__init__.__globals__}'.format(item) }}",
    "huge range": "{% for i in range(10**9) %}x{% endfor %}",
    "nested range": (
        "{% for i in range(99999) %}{% for j in range(99999) %}x{% endfor %}{% endfor %}"
    ),
    "string bomb": "{{ 'x' * 10**9 }}",
    # Jinja reads 9 ** 9 ** 9 as (9 ** 9) ** 9, a 78-digit number: the bomb is this one.
    "power bomb": "{{ 9 ** (9 ** 9) }}",
    "list mutation": "{% set l = [] %}{{ l.append(1) }}",
    "dict builtin": "{{ dict(a=1).__class__ }}",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_route_is_refused(name: str, tmp_path: Path) -> None:
    marker = tmp_path / "owned.txt"
    source = ESCAPES[name].replace("{m}", str(marker)) + "\nPremise: {{ premise }}\nAnswer:"
    started = time.monotonic()
    with pytest.raises(ValueError) as err:
        PromptBuilder("nli3", NLI3, [], source).build(ITEM)
    # A hang or a memory bomb would not come back at all; a refusal comes back at once.
    assert time.monotonic() - started < 30
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
