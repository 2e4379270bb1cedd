"""The engines' options are declared once (``backends.EngineOptions``): every settings
class that names a model to run holds them as one field, and a field added to that one
declaration reaches each class's flags, ``config.json`` keys, experiment block keys
and ``resolve``."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Any

import pytest

from nlieval import settings
from nlieval.backends import EngineOptions, HFOptions, NamesAModel, ServerOptions, registry
from nlieval.backends.vllm_engine import VLLMOptions
from nlieval.cli.args import add_settings, settings_from_args
from nlieval.commands import TABLE, settings_of
from nlieval.experiments import commands as experiment_commands


def _model_settings() -> list[type[Any]]:
    """Every settings class of a command that resolves a model (has ``resolve``)."""
    found: dict[str, type[Any]] = {}
    for name in TABLE:
        for cls in settings_of(name):
            if callable(getattr(cls, "resolve", None)):
                found[cls.__qualname__] = cls
    return list(found.values())


MODEL_SETTINGS = _model_settings()


def test_the_classes_that_resolve_a_model_are_found() -> None:
    # The rule below is checked on what the command table lists; it must list these.
    names = {cls.__name__ for cls in MODEL_SETTINGS}
    assert {"RunConfig", "InstructConfig", "ChatModel"} <= names


@pytest.mark.parametrize("cls", MODEL_SETTINGS, ids=lambda c: c.__name__)
def test_each_takes_the_engines_options_from_the_one_declaration(cls: type[Any]) -> None:
    assert issubclass(cls, NamesAModel)
    held = [(f.name, opt.cls) for f in fields(cls) if (opt := settings.options_of(f))]
    # One options field, the shared declaration, and no engine's options of its own.
    assert held == [("engines", EngineOptions)]
    assert fields(cls)[-1].name == "engines"  # last: config.json ends with the options


@pytest.mark.parametrize("cls", MODEL_SETTINGS, ids=lambda c: c.__name__)
def test_config_json_keeps_each_engines_keys_flat_and_last(cls: type[Any]) -> None:
    # The keys config.json has always had: each engine's own fields, in the order the
    # engines are declared (transformers, server, vLLM), after the command's settings.
    server = ServerOptions("http://h:1/v1")
    cfg = cls(model="m", engines=EngineOptions(server=server), **_required(cls))
    expected = [f.name for opts in (HFOptions, ServerOptions, VLLMOptions) for f in fields(opts)]
    keys = list(settings.flat_dict(cfg))
    assert keys[-len(expected) :] == expected
    assert set(expected) <= set(settings.flat_defaults(cls)) | {"api_base"}
    back = settings.from_flat_dict(cls, settings.flat_dict(cfg))
    assert back == cfg and back.server == server and back.hf == HFOptions()


# A toy engine with one option of its own, added to a copy of the one declaration.
@dataclass(frozen=True)
class EchoOptions:
    echo_seed: int = settings.setting(0, help="seed of the echo engine")


@dataclass(frozen=True)
class WithEcho(EngineOptions):
    echo: EchoOptions = settings.options(EchoOptions, title="echo")


def _required(cls: type[Any]) -> dict[str, Any]:
    return {"tasks": ("smoke",)} if any(f.name == "tasks" for f in fields(cls)) else {}


def _with_echo(cls: type[Any]) -> type[Any]:
    # The class as it is, its engines field declared by WithEcho instead: what adding
    # a field to EngineOptions makes of it.
    ns = {"__annotations__": {"engines": WithEcho}, "engines": settings.options(WithEcho)}
    return dataclass(frozen=True)(type(cls.__name__, (cls,), ns))


@pytest.mark.parametrize("cls", MODEL_SETTINGS, ids=lambda c: c.__name__)
def test_a_field_of_the_declaration_reaches_flags_keys_and_resolve(
    cls: type[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    variant = _with_echo(cls)
    parser = argparse.ArgumentParser()
    add_settings(parser, variant)
    group = next(g for g in parser._action_groups if g.title == "echo")
    assert [a.option_strings for a in group._group_actions] == [["--echo-seed"]]
    argv = ["--echo-seed", "7", "--api-base", "http://h:1/v1", "--tensor-parallel-size", "2"]
    argv += ["--task", "smoke"] if _required(cls) else []
    cfg = settings_from_args(variant, parser.parse_args(argv))
    assert cfg.engines.echo == EchoOptions(7)
    assert cfg.server == ServerOptions("http://h:1/v1") and cfg.vllm.tensor_parallel_size == 2

    flat = settings.flat_dict(cfg)
    assert list(flat)[-1] == "echo_seed" and flat["echo_seed"] == 7
    assert settings.flat_defaults(variant)["echo_seed"] == 0
    assert settings.from_flat_dict(variant, flat) == cfg

    keys = [(f.name, in_options) for f, in_options in experiment_commands._fields(variant)]
    assert ("echo_seed", True) in keys and ("api_base", True) in keys

    seen: dict[str, Any] = {}
    monkeypatch.setattr(registry, "resolve", lambda model, **kw: seen.update(kw))
    cfg.resolve()
    assert seen["echo"] == EchoOptions(7) and seen["server"] == cfg.server
