"""Side by side: lm-evaluation-harness vs nlieval without and with the prefix cache.

Same machine, same model folder, same items, same prompt text, at each k:

  (a) lm-evaluation-harness 0.4.13, its ``hf`` backend (``lm-eval``), on a task YAML
      written here that uses nlieval's own Jinja block template, the letters as choices,
      " " as target delimiter, a blank line between blocks, and nlieval's drawn shots in
      order (``sampler: first_n`` over a few-shot split holding exactly those shots);
  (b) nlieval, ``prefix_cache=False``;
  (c) nlieval, ``prefix_cache=True`` (the default), with shared-prefix attention
      (``nlieval-cache``, the default) or the prefix copied into every row
      (``nlieval-rows``, ``--prefix-attention rows``);
  (d) where vLLM is installed: nlieval on vLLM in process (``nlieval-vllm``) and
      lm-eval's ``vllm`` backend (``lm-eval-vllm``, the same task YAML), both on one
      ``vllm.LLM`` started once on the same folder (lm-eval's backend is handed the
      running engine instead of starting a second copy of the weights).

Each system gets the model already loaded and times only the evaluation call (prompt
building and scoring; for lm-eval, ``simple_evaluate`` on a ready ``HFLM``). The script
checks that lm-eval's contexts equal nlieval's prompt texts character for character, then
reports wall time, items/s, tokens computed per item (real and with padding), agreement
of the predictions, the largest |delta log-likelihood|, the measured matmul FLOP/s and
the achieved FLOP/s (2 x body parameters x real tokens / time).

    pip install -e ".[bench]"
    taskset -c 0 python benchmarks/lmeval_compare.py --models smollm2-135m \\
        --tasks snli,anli_r3 --limit 100 --shots 0,5,10 --threads 1 --out runs/lmeval-bench

Writes ``<out>/results.json`` and prints a markdown table. Needs NLIEVAL_DATA_DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import yaml  # noqa: E402

from nlieval import data  # noqa: E402
from nlieval.backends import HFOptions  # noqa: E402
from nlieval.backends.base import ScoreRequest  # noqa: E402
from nlieval.backends.hf import HFCausalLM  # noqa: E402
from nlieval.backends.weights import local_hf_folder, resolve_model  # noqa: E402
from nlieval.choice import RunConfig  # noqa: E402
from nlieval.choice.prompts import TEMPLATES, options_for  # noqa: E402
from nlieval.choice.runner import plan  # noqa: E402
from nlieval.choice.scoring import SweepPoint  # noqa: E402
from nlieval.types import LETTERS, Item  # noqa: E402


def _version(package: str) -> str | None:
    """The installed version of ``package``, None when it is not installed (lm-eval is
    only needed when it is one of the systems compared)."""
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def matmul_flops(
    dtype: torch.dtype, device: str = "cpu", size: int = 2048, seconds: float = 3.0
) -> float:
    """Sustained FLOP/s of square matmuls in ``dtype`` (current thread count on a CPU)."""
    if device.startswith("cuda"):
        size *= 4
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(3):
        a @ b
    sync()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        n += 1
    sync()
    return 2 * size**3 * n / (time.perf_counter() - start)


def body_params(model: Any) -> int:
    """Parameters a token passes through in the body: all but the embedding tables (the
    input lookup costs no FLOPs; the output layer is reported apart)."""
    skip = {id(model.get_input_embeddings().weight), id(model.get_output_embeddings().weight)}
    return sum(p.numel() for p in model.parameters() if id(p) not in skip)


# ------------------------------------------------------------------------- nlieval


def nlieval_point(lm: Any, point: SweepPoint, items: list[Item]) -> dict[str, Any]:
    """One sweep point through ``lm`` (transformers, or vLLM in process: its token counts
    are not its own, the caller fills them)."""
    lm.counts.update(tokens=0, padded=0, forward_calls=0)
    lm._cached = None
    start = time.perf_counter()
    prompts = [point.prompt(it) for it in items]
    reqs = [ScoreRequest(p.text, p.continuations, len(p.prefix)) for p in prompts]
    scores = lm.loglikelihood(reqs)
    wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "loglik": scores,
        "contexts": [p.text for p in prompts],
        "tokens": lm.counts["tokens"],
        "padded": lm.counts["padded"],
    }


# ------------------------------------------------------------------------- lm-eval


def _doc(item: Item, labels: Any) -> dict[str, Any]:
    gold = list(labels).index(item.label) if item.label is not None else -1
    return {
        "id": item.id,
        "premise": item.premise,
        "hypothesis": item.hypothesis,
        "options": [list(o) for o in options_for(item, labels)],
        "gold": gold,
    }


def write_lmeval_task(
    folder: Path, name: str, point: SweepPoint, items: list[Item], family: str
) -> None:
    """A task YAML + data files reproducing one nlieval sweep point exactly."""
    folder.mkdir(parents=True, exist_ok=True)
    test, shots = folder / f"{name}_test.jsonl", folder / f"{name}_shots.jsonl"
    test.write_text("".join(json.dumps(_doc(it, point.labels)) + "\n" for it in items))
    shot_docs = [_doc(s, point.labels) for s in point.builder.shots]
    # With k = 0 the few-shot split is never read, but the json builder wants a file.
    shots.write_text(
        "".join(json.dumps(d) + "\n" for d in shot_docs or [_doc(items[0], point.labels)])
    )
    spec = {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(test), "train": str(shots)}},
        "test_split": "test",
        "fewshot_split": "train",
        "fewshot_config": {"sampler": "first_n"},
        "output_type": "multiple_choice",
        # nlieval's own block template, unchanged: the same Jinja source renders both.
        "doc_to_text": TEMPLATES[family],
        "doc_to_choice": [LETTERS[i] for i in range(len(point.labels))],
        "doc_to_target": "{{gold}}",
        "target_delimiter": " ",
        "fewshot_delimiter": "\n\n",
        "metric_list": [{"metric": "acc"}],
    }
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


class CountingHFLM:
    """Wraps lm-eval's HFLM ``_model_call`` to count the positions it really computes
    (padding included: its rows are right-padded with zeros to the batch's longest)."""

    def __init__(self, lm: Any) -> None:
        self.padded = 0
        inner = lm._model_call

        def call(inps: torch.Tensor, attn_mask: Any = None, labels: Any = None) -> Any:
            self.padded += inps.numel()
            return inner(inps, attn_mask, labels)

        lm._model_call = call


def lmeval_vllm(llm: Any, folder: str, dtype: str, max_len: int) -> Any:
    """lm-eval's ``vllm`` backend on the engine ``llm`` already started on ``folder``:
    lm-eval builds its ``vllm.LLM`` from its own keywords; here that call returns the
    running engine, so both vLLM rows read the very same weights and one copy fits."""
    from lm_eval.models import vllm_causallms

    real = vllm_causallms.LLM
    vllm_causallms.LLM = lambda **_: llm
    try:
        # batch_size auto: every request of a point in one generate call (lm-eval's own
        # advice for vLLM; a fixed size would cap vLLM's batching at it).
        return vllm_causallms.VLLM(
            pretrained=folder, dtype=dtype, batch_size="auto", max_model_len=max_len
        )
    finally:
        vllm_causallms.LLM = real


def lmeval_point(
    hflm: Any, counter: CountingHFLM | None, task_dir: Path, name: str, k: int
) -> dict[str, Any]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    if counter is not None:
        counter.padded = 0
    start = time.perf_counter()
    out = lm_eval.simple_evaluate(
        model=hflm,
        tasks=[name],
        num_fewshot=k,
        task_manager=TaskManager(include_path=str(task_dir), include_defaults=False),
        log_samples=True,
        bootstrap_iters=0,
        random_seed=0,
        numpy_random_seed=0,
        torch_random_seed=0,
        fewshot_random_seed=0,
    )
    wall = time.perf_counter() - start
    samples = sorted(out["samples"][name], key=lambda s: s["doc_id"])
    return {
        "wall_s": wall,
        "loglik": [[float(r[0][0]) for r in s["resps"]] for s in samples],
        "contexts": [s["arguments"][0][0] for s in samples],
        "tokens": None,  # filled by the caller: the context tokens of every item
        "padded": counter.padded if counter is not None else None,
    }


# ------------------------------------------------------------------------- compare


def _argmax(ll: list[float]) -> int:
    return max(range(len(ll)), key=lambda i: (ll[i], -i))


def compare(systems: dict[str, dict[str, Any]], n_items: int, reference: str) -> dict[str, Any]:
    """Each system's rate and token counts, and how it agrees with ``reference`` (lm-eval
    when it was run, else the first system run)."""
    ref = systems[reference]
    row: dict[str, Any] = {}
    for name, res in systems.items():
        row[name] = {
            "wall_s": round(res["wall_s"], 2),
            "items_per_s": round(n_items / res["wall_s"], 2),
            "tokens_per_item": round(res["tokens"] / n_items, 1),
            "padded_per_item": round(res["padded"] / n_items, 1),
            "agree_with_ref": sum(
                _argmax(a) == _argmax(b) for a, b in zip(res["loglik"], ref["loglik"], strict=True)
            )
            / n_items,
            "max_abs_dll_vs_ref": max(
                abs(x - y)
                for a, b in zip(res["loglik"], ref["loglik"], strict=True)
                for x, y in zip(a, b, strict=True)
            ),
            "same_contexts_as_ref": res["contexts"] == ref["contexts"],
        }
    if "nlieval-rows" in systems and "nlieval-cache" in systems:
        # Shared-prefix attention against the per-row prefix copy it replaces.
        rows, cascade = systems["nlieval-rows"]["loglik"], systems["nlieval-cache"]["loglik"]
        row["nlieval-cache"]["max_abs_dll_vs_rows"] = max(
            abs(x - y)
            for a, b in zip(cascade, rows, strict=True)
            for x, y in zip(a, b, strict=True)
        )
    return row


#: Context window of the vLLM rows (the model's would reserve cache for 8k tokens).
VLLM_MAX_LEN = 4096


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="smollm2-135m")
    ap.add_argument("--tasks", default="snli,anli_r3")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--shots", default="0,5,10")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument(
        "--batch-size",
        type=lambda v: v if v == "auto" else int(v),
        default=8,
        help="for all three systems, or auto (nlieval's own choice; lm-eval's auto) [8]",
    )
    ap.add_argument(
        "--lmeval-batch-size",
        type=int,
        default=None,
        help="lm-eval's own batch size [--batch-size]; its full logits need "
        "rows x tokens x vocabulary x 4 bytes",
    )
    ap.add_argument(
        "--systems",
        default="lm-eval,nlieval-nocache,nlieval-cache",
        help="comma-separated of lm-eval, nlieval-nocache, nlieval-rows, nlieval-cache, "
        "nlieval-vllm, lm-eval-vllm [lm-eval,nlieval-nocache,nlieval-cache]",
    )
    ap.add_argument("--data-dir", default=os.environ.get("NLIEVAL_DATA_DIR"))
    ap.add_argument("--out", default="runs/lmeval-bench")
    ap.add_argument("--device", default="cpu", help="cpu or cuda [cpu]")
    ap.add_argument("--dtype", default="float32", help="float32 or bfloat16 [float32]")
    ap.add_argument(
        "--vllm-gpu-memory",
        type=float,
        default=0.4,
        help="nlieval-vllm and lm-eval-vllm (one engine): share of the GPU vLLM may take "
        "(the transformers copy of the weights stays loaded beside it) [0.4]",
    )
    ap.add_argument(
        "--profile",
        action="store_true",
        help="also print the kernel profile of the cascade path at the last sweep point",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shots = tuple(int(k) for k in args.shots.split(","))
    systems_wanted = args.systems.split(",")
    import transformers

    results: dict[str, Any] = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "threads": args.threads,
            "affinity": sorted(os.sched_getaffinity(0)),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "lm_eval": _version("lm-eval"),
            "batch_size": args.batch_size,
            "lmeval_batch_size": args.lmeval_batch_size or args.batch_size,
        },
        "device": args.device,
        "dtype": args.dtype,
        "matmul_flops": matmul_flops(getattr(torch, args.dtype), args.device),
        "rows": [],
    }
    print(f"matmul {args.dtype}: {results['matmul_flops'] / 1e9:.1f} GFLOP/s", flush=True)
    for model_name in args.models.split(","):
        folder = local_hf_folder(resolve_model(model_name)).path
        cfg = RunConfig(
            model=folder,
            tasks=tuple(args.tasks.split(",")),
            shots=shots,
            limit=args.limit,
            data_dir=args.data_dir,
        )
        lm = HFCausalLM(
            folder, HFOptions(dtype=args.dtype, device=args.device), batch_size=args.batch_size
        )
        n_body = body_params(lm.model)
        vllm_lm = lmeval_vllm_lm = None
        if {"nlieval-vllm", "lm-eval-vllm"} & set(systems_wanted):
            # vLLM in process on the same folder; its engine keeps its own weights.
            from nlieval.backends.vllm_engine import VLLMCausalLM, VLLMOptions

            vllm_lm = VLLMCausalLM(
                folder,
                VLLMOptions(
                    gpu_memory_utilization=args.vllm_gpu_memory,
                    enforce_eager=args.device == "cpu",
                    max_model_len=VLLM_MAX_LEN,
                ),
                HFOptions(dtype=args.dtype),
            )
            if "lm-eval-vllm" in systems_wanted:
                lmeval_vllm_lm = lmeval_vllm(vllm_lm.llm, folder, args.dtype, VLLM_MAX_LEN)
        hflm = counter = None
        if "lm-eval" in systems_wanted:
            from lm_eval.models.huggingface import HFLM

            # Same weights object, so both read the very same tensors.
            hflm = HFLM(
                pretrained=lm.model,
                tokenizer=lm.tok,
                batch_size=args.lmeval_batch_size or args.batch_size,
                device=args.device,
            )
            counter = CountingHFLM(hflm)
        for ds, points, _ in plan(cfg):
            for point in points:
                # An item drawn as a shot of any k would get a different prefix in nlieval
                # (its own shot is replaced): leave such items out so one prefix serves all.
                shot_ids = {s for p in points for s in p.shot_ids}
                items = [it for it in ds.items if it.id not in shot_ids]
                # A model given as a folder path: its last part names the task.
                short = re.sub(r"\W", "_", Path(model_name).name)
                name = f"nlieval_{short}_{point.task}_k{point.k}"
                systems: dict[str, dict[str, Any]] = {}
                if hflm is not None and counter is not None:
                    tmp = Path(tempfile.mkdtemp(prefix="lmeval-task-"))
                    family = data.get_task(point.task).family
                    write_lmeval_task(tmp, name, point, items, family)
                    res = lmeval_point(hflm, counter, tmp, name, point.k)
                    # One forward row per item (lm-eval reuses it for all single-token
                    # options): context + continuation[:-1], i.e. the context's tokens.
                    res["tokens"] = sum(len(lm.split(c, " A")[0]) for c in res["contexts"])
                    systems["lm-eval"] = res
                for label, cached, cascade in (
                    ("nlieval-nocache", False, True),
                    ("nlieval-rows", True, False),  # the prefix copied into every row
                    ("nlieval-cache", True, True),  # shared-prefix attention (the default)
                ):
                    if label in systems_wanted:
                        lm.prefix_cache, lm.cascade = cached, cascade
                        systems[label] = nlieval_point(lm, point, items)
                # The vLLM rows count the unique tokens of the items (the prefix once):
                # what the cascade path computes, so all share one measure of the matmul
                # rate; their own work is not counted by them.
                cached = systems.get("nlieval-cache")
                unique = cached["tokens"] if cached else 0
                if vllm_lm is not None and "nlieval-vllm" in systems_wanted:
                    res = nlieval_point(vllm_lm, point, items)
                    res["tokens"] = res["padded"] = unique
                    systems["nlieval-vllm"] = res
                if lmeval_vllm_lm is not None:
                    tmp = Path(tempfile.mkdtemp(prefix="lmeval-task-"))
                    write_lmeval_task(tmp, name, point, items, data.get_task(point.task).family)
                    res = lmeval_point(lmeval_vllm_lm, None, tmp, name, point.k)
                    # One request of context + option per option (vLLM 0.32 reads no prefix
                    # cache for a request that asks for prompt log-probabilities).
                    res["tokens"] = unique
                    res["padded"] = sum(
                        len(lm.split(c, " A")[0]) + 1 for c in res["contexts"]
                    ) * len(point.labels)
                    systems["lm-eval-vllm"] = res
                reference = "lm-eval" if "lm-eval" in systems else next(iter(systems))
                row = {
                    "model": model_name,
                    "task": point.task,
                    "k": point.k,
                    "items": len(items),
                    "body_params": n_body,
                    "reference": reference,
                    "systems": compare(systems, len(items), reference),
                }
                for res in row["systems"].values():
                    res["achieved_flops"] = 2 * n_body * res["tokens_per_item"] * res["items_per_s"]
                    res["fraction_of_matmul"] = res["achieved_flops"] / results["matmul_flops"]
                results["rows"].append(row)
                (out / "results.json").write_text(json.dumps(results, indent=1))
                print(json.dumps(row), flush=True)
                last = (point, items)
        if args.profile and "nlieval-cache" in systems_wanted:
            lm.prefix_cache, lm.cascade = True, True
            text = profile_cascade(lm, *last, args.device)
            short = re.sub(r"\W", "_", Path(model_name).name)
            (out / f"profile-{short}.txt").write_text(text)
            print(f"kernel profile of the cascade path, {last[0].task} k={last[0].k}:")
            print(text, flush=True)
    print(markdown(results))


def profile_cascade(lm: Any, point: SweepPoint, items: list[Item], device: str) -> str:
    """The kernels of one sweep point through the cascade path (``nlieval-cache``), by
    self time (the device's on a GPU), after one warm-up call: where the time goes."""
    from torch.profiler import ProfilerActivity, profile

    prompts = [point.prompt(it) for it in items]
    reqs = [ScoreRequest(p.text, p.continuations, len(p.prefix)) for p in prompts]
    lm._cached = None
    lm.loglikelihood(reqs)
    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    lm._cached = None
    with profile(activities=activities) as prof:
        lm.loglikelihood(reqs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    key = "self_cuda_time_total" if device.startswith("cuda") else "self_cpu_time_total"
    return str(prof.key_averages().table(sort_by=key, row_limit=15))


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| model | task | k | items | system | wall s | items/s | tokens/item (padded) "
        "| speed-up vs reference | agree with it | max abs dLL to it | GFLOP/s | of matmul |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        base = row["systems"][row["reference"]]["wall_s"]
        for name, s in row["systems"].items():
            lines.append(
                f"| {row['model']} | {row['task']} | {row['k']} | {row['items']} | {name} "
                f"| {s['wall_s']:.1f} | {s['items_per_s']:.2f} "
                f"| {s['tokens_per_item']:.0f} ({s['padded_per_item']:.0f}) "
                f"| {base / s['wall_s']:.2f}x | {100 * s['agree_with_ref']:.1f}% "
                f"| {s['max_abs_dll_vs_ref']:.1e} | {s['achieved_flops'] / 1e9:.1f} "
                f"| {100 * s['fraction_of_matmul']:.0f}% |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
