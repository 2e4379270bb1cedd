"""A model spread over devices (``--device-map auto --max-memory``) scores like the same model
on one device. On this CPU-only machine the forced split is CPU + disk: a memory cap that
holds one of the two layers sends the other to accelerate's disk offload, so hooks move weights
and activations between "devices" exactly as they do between GPUs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import EngineOptions, HFOptions
from nlieval.backends.base import ScoreRequest
from nlieval.backends.hf import HFCausalLM
from nlieval.backends.placement import parse_max_memory
from nlieval.backends.weights import ModelError
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.types import Record
from tests.helpers.records import saved_records

REQUESTS = [
    ScoreRequest("Premise: A man plays.\nHypothesis: Music.\nAnswer:", (" A", " B", " C")),
    ScoreRequest("Two dogs run through the snow. Answer:", (" Entailment", " Neutral")),
]


def _cap_between_the_layers(folder: Path) -> str:
    # accelerate keeps room for the largest offloaded module on the main device, so a cap
    # of 80% of this 2-layer model's weights holds the embeddings and layer 0, not layer 1.
    from safetensors import safe_open

    total = 0
    with safe_open(str(folder / "model.safetensors"), framework="pt") as fh:
        for name in fh.keys():  # noqa: SIM118 (safe_open has no __iter__)
            t = fh.get_tensor(name)
            total += t.numel() * t.element_size()
    return f"cpu={total * 8 // 10 // 1024}KiB"


def _records(folder: Path) -> dict[tuple[Any, ...], Record]:
    return {(r.k, r.seed, r.item_id): r for r in saved_records(folder)}


def test_forced_split_puts_layers_on_two_devices_and_scores_alike(tiny_llama: Path) -> None:
    cap = _cap_between_the_layers(tiny_llama)
    split = HFCausalLM(str(tiny_llama), HFOptions(device_map="auto", max_memory=cap), batch_size=2)
    placed = split.model.hf_device_map
    assert placed["model.layers.0"] == "cpu" and placed["model.layers.1"] == "disk", placed
    one = HFCausalLM(str(tiny_llama), HFOptions(device="cpu"), batch_size=2)
    got, want = split.loglikelihood(REQUESTS), one.loglikelihood(REQUESTS)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=1e-4)


@pytest.mark.parametrize("prefix_cache", [True, False])
def test_run_with_device_map_equals_single_device_at_k0_and_k5(
    tmp_path: Path, tiny_llama: Path, prefix_cache: bool
) -> None:
    base: dict[str, Any] = {
        "model": str(tiny_llama),
        "tasks": ("smoke",),
        "shots": (0, 5),
    }
    one = RunConfig(**base, engines=EngineOptions(hf=HFOptions(prefix_cache=prefix_cache)))
    run(one, tmp_path / "one", progress=False)
    cap = _cap_between_the_layers(tiny_llama)
    hf = HFOptions(prefix_cache=prefix_cache, device_map="auto", max_memory=cap)
    cfg = RunConfig(**base, engines=EngineOptions(hf=hf))
    run(cfg, tmp_path / "split", progress=False)
    want, got = _records(tmp_path / "one"), _records(tmp_path / "split")
    assert set(got) == set(want) and len(got) == 96
    for key, r in got.items():
        assert r.pred == want[key].pred, key
        assert r.loglik == pytest.approx(want[key].loglik, abs=1e-4), key


def test_cli_flags_reach_the_config(tmp_path: Path, tiny_llama: Path) -> None:
    out = tmp_path / "cli"
    cap = _cap_between_the_layers(tiny_llama)
    rc = main(
        [
            "run",
            "--model",
            str(tiny_llama),
            "--task",
            "smoke",
            "--limit",
            "4",
            "--out",
            str(out),
            "--device-map",
            "auto",
            "--max-memory",
            cap,
            "--no-progress",
        ]
    )
    assert rc == 0
    config = json.loads((out / "config.json").read_text())
    assert config["device_map"] == "auto" and config["max_memory"] == cap


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0:70GiB", "expected DEVICE=SIZE"),
        ("0=lots", "expected DEVICE=SIZE"),
        ("gpu0=1GiB", "bad device"),
        (" , ", "empty"),
    ],
)
def test_bad_max_memory_is_named(text: str, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        parse_max_memory(text)


def test_max_memory_without_device_map_is_refused_before_loading() -> None:
    with pytest.raises(ValueError, match="needs --device-map"):
        RunConfig(
            model="x", tasks=("smoke",), engines=EngineOptions(hf=HFOptions(max_memory="cpu=1GiB"))
        )


def test_a_chat_model_spread_over_two_devices_answers_as_on_one(tiny_llama: Path) -> None:
    # generate and instruct load their chat model with --device-map/--max-memory too (a
    # 70B generator of the meta-inference study is spread over its GPUs, not refused).
    from nlieval.backends.generator import LocalChat

    cap = _cap_between_the_layers(tiny_llama)
    split = LocalChat(str(tiny_llama), HFOptions(device_map="auto", max_memory=cap))
    placed = split.model.hf_device_map
    assert placed["model.layers.0"] == "cpu" and placed["model.layers.1"] == "disk", placed
    one = LocalChat(str(tiny_llama), HFOptions(device="cpu"))
    conversations = [
        [{"role": "user", "content": "A man plays a guitar. Is there music?"}],
        [{"role": "user", "content": "Two dogs run. Are animals moving?"}],
    ]
    assert split.generate(conversations, max_new_tokens=6) == one.generate(
        conversations, max_new_tokens=6
    )


@pytest.mark.parametrize("command", ["run", "instruct", "generate"])
def test_every_command_that_loads_a_model_takes_the_spread_flags(command: str) -> None:
    from nlieval.cli import build_parser

    args = build_parser().parse_args(
        [command, "--device-map", "auto", "--max-memory", "cpu=1GiB", "--out", "o"]
        + (["--task", "snli"] if command != "instruct" else [])
    )
    assert (args.device_map, args.max_memory) == ("auto", "cpu=1GiB")
