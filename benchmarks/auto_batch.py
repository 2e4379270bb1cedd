"""How far the automatic batch size grows when the few-shot prefix is held once (issue 22,
part 2), derived without a GPU: ``nlieval.backends.memory.rows_in_memory`` on the GPU
shapes of ``gpu_bench.py`` (built on the meta device: no weights, no memory), for the
real prompts of each task at k shots, with the prefix copied into every row (the
``--prefix-attention rows`` path) and with shared-prefix attention (the default).

The token counts are real (SmolLM2's tokenizer, prompts built as ``nlieval run`` builds
them); the free memory is given (default: an 80 GB H100 less the bf16 weights); the
batch sizes are what ``auto`` would pick for the longest suffix of the sweep point (the
first batch: groups go longest first). A derivation of the memory model, not a
measurement: ``gpu_bench.py --batch-size auto`` measures it on a GPU.

    NLIEVAL_DATA_DIR=../shared/data python benchmarks/auto_batch.py --tasks snli,anli_r3
"""

from __future__ import annotations

import argparse
import os
import statistics
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from gpu_bench import SHAPES  # noqa: E402

from nlieval.backends.memory import row_bytes, rows_in_memory  # noqa: E402
from nlieval.backends.weights import DEFAULT_MODEL, local_hf_folder, resolve_model  # noqa: E402
from nlieval.choice import RunConfig  # noqa: E402
from nlieval.choice.runner import plan  # noqa: E402


def lengths(tok: Any, task: str, k: int, limit: int) -> tuple[int, list[int]]:
    """Tokens of the few-shot prefix and of each item's own part (prompt after the
    prefix, plus the longest option) on ``limit`` items of ``task`` at ``k``."""
    ((dataset, (point,), _),) = plan(RunConfig(DEFAULT_MODEL, (task,), shots=(k,), limit=limit))
    prompts = [point.prompt(it) for it in dataset.items]
    prefix = len(tok(prompts[0].prefix)["input_ids"]) if k else 0
    whole = tok([p.text for p in prompts])["input_ids"]
    option = max(len(tok(c)["input_ids"]) for c in prompts[0].continuations)
    return prefix, [len(ids) - prefix + option for ids in whole]


def main() -> None:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="snli,anli_r3")
    ap.add_argument("--shots", default="0,10")
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--shapes", default="llama-1b,llama-8b")
    ap.add_argument("--device-gib", type=float, default=79.2, help="the GPU's memory [H100]")
    ap.add_argument("--tokenizer", default=None, help="tokenizer folder [the packaged SmolLM2]")
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(
        args.tokenizer or local_hf_folder(resolve_model(DEFAULT_MODEL)).path
    )
    cuda = torch.device("cuda")  # only its type is read: the GPU caps apply
    print(
        "| model | task, k | prefix tokens | suffix tokens (median / max) | row MB: rows "
        "| row MB: shared | auto: rows | auto: shared |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        cfg = LlamaConfig(vocab_size=len(tok), tie_word_embeddings=False, **SHAPES[shape])
        with torch.device("meta"):
            model = LlamaForCausalLM(cfg).to(torch.bfloat16)
        weights = sum(p.numel() for p in model.parameters()) * 2
        free = int(args.device_gib * 2**30) - weights
        for task in args.tasks.split(","):
            for k in (int(x) for x in args.shots.split(",")):
                prefix, suffix = lengths(tok, task, k, args.limit)
                longest = max(suffix)
                mb = [row_bytes(cfg, longest, prefix + longest, 2, s) / 1e6 for s in (False, True)]
                auto = [
                    rows_in_memory(model, cuda, longest, prefix + longest, free, shared_prefix=s)
                    for s in (False, True)
                ]
                print(
                    f"| {shape} | {task}, {k} | {prefix} | {statistics.median(suffix):.0f} / "
                    f"{longest} | {mb[0]:.0f} | {mb[1]:.0f} | {auto[0]} | {auto[1]} |"
                )


if __name__ == "__main__":
    main()
