"""The commands of choice-based evaluation and its data: ``run``, ``stats``, ``report``,
``tasks``."""

from __future__ import annotations

import argparse
import sys

from .. import data
from ..backends.weights import DEFAULT_MODEL
from ..choice import RunConfig, run
from ..data.stats import dataset_stats, format_stats
from ..report import report
from ..runs import metrics_table, run_timing
from .args import add_data_dir, api_base, csv_list, seeds, shot_counts


def _batch(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"--batch-size takes 'auto' or a count of 1 or more, got {text!r}"
        )
    return value


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run", help="evaluate a language model by option NLL over tasks and shot counts"
    )
    p.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help="alias (smollm2-135m, gemma3-270m), model folder, .gguf file or hub id, or "
        "openai-completions:NAME for a model on a vLLM/SGLang server (with --api-base) "
        f"[{DEFAULT_MODEL}]",
    )
    p.add_argument(
        "--task",
        "--tasks",
        dest="tasks",
        type=csv_list,
        required=True,
        help="comma-separated task names or task YAML files",
    )
    p.add_argument(
        "--shots",
        "--num_fewshot",
        dest="shots",
        type=shot_counts,
        default=(0,),
        help="comma-separated shot counts k [0]",
    )
    p.add_argument(
        "--seeds",
        type=seeds,
        default=(0,),
        help="number of few-shot draws (3 = seeds 0,1,2) or a list (1,5,7) [1]",
    )
    how_many = p.add_mutually_exclusive_group()
    how_many.add_argument("--limit", type=int, default=None, help="first N items of each task")
    how_many.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="N",
        help="a seeded random N items of each task, stratified by gold label, in file order",
    )
    p.add_argument("--sample-seed", type=int, default=0, help="seed of --sample [0]")
    p.add_argument("--out", "--output_path", dest="out", required=True, help="run folder")
    add_data_dir(p)
    p.add_argument("--split", default=None, help="split to evaluate (default: the task's)")
    p.add_argument("--template", default=None, help="Jinja template string or file for the blocks")
    p.add_argument("--balanced", action="store_true", help="label-balanced few-shot draws")
    p.add_argument(
        "--batch-size",
        "--batch_size",
        dest="batch_size",
        type=_batch,
        default="auto",
        help="rows per forward pass, or prompts per request to a server (auto: 16) [auto]",
    )
    p.add_argument(
        "--dtype", default="auto", help="auto (fp32 on CPU, bf16 on GPU), float32, bfloat16"
    )
    p.add_argument("--device", default="auto")
    p.add_argument(
        "--device-map",
        default=None,
        help="auto: spread a model too large for one device over all GPUs (then CPU, disk)",
    )
    p.add_argument(
        "--max-memory",
        default=None,
        metavar="DEV=SIZE,...",
        help="with --device-map: memory per device, e.g. 0=70GiB,1=70GiB,cpu=200GiB",
    )
    p.add_argument("--revision", default=None, help="hub revision of the model")
    p.add_argument(
        "--checkpoints",
        type=csv_list,
        default=(),
        help="ordered checkpoints (folders or hub revisions) to evaluate in turn",
    )
    p.add_argument(
        "--no-prefix-cache",
        action="store_true",
        help="recompute the few-shot prefix for every item (same results, slower)",
    )
    server = p.add_argument_group(
        "server", "for --model openai-completions:NAME (echoed prompt log-probs)"
    )
    server.add_argument(
        "--api-base",
        default=None,
        type=api_base,
        help="OpenAI-compatible server, e.g. http://localhost:8000/v1 (vLLM, SGLang)",
    )
    server.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="variable holding the API key"
    )
    server.add_argument("--timeout", type=float, default=60.0, help="seconds per request [60]")
    server.add_argument("--retries", type=int, default=4, help="retries of a failed request [4]")
    server.add_argument("--concurrency", type=int, default=8, help="requests in flight [8]")
    server.add_argument(
        "--top-logprobs",
        type=int,
        default=20,
        metavar="K",
        help="score single-token options from the K top log-probs of one request per item "
        "(vLLM; at most its --max-logprobs); 0: one echo request per option [20]",
    )
    p.add_argument("--skip-bad", action="store_true", help="skip malformed data lines (counted)")
    p.add_argument("--no-prompts", action="store_true", help="do not store prompt texts in records")
    p.add_argument("--overwrite", action="store_true", help="discard what the run folder holds")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = RunConfig(
        model=args.model,
        tasks=args.tasks,
        shots=args.shots,
        seeds=args.seeds,
        limit=args.limit,
        sample=args.sample,
        sample_seed=args.sample_seed,
        split=args.split,
        data_dir=args.data_dir,
        template=args.template,
        balanced=args.balanced,
        batch_size=args.batch_size,
        dtype=args.dtype,
        device=args.device,
        revision=args.revision,
        checkpoints=args.checkpoints,
        skip_bad=args.skip_bad,
        save_prompts=not args.no_prompts,
        prefix_cache=not args.no_prefix_cache,
        device_map=args.device_map,
        max_memory=args.max_memory,
        api_base=args.api_base,
        api_key_env=args.api_key_env,
        timeout=args.timeout,
        retries=args.retries,
        concurrency=args.concurrency,
        top_logprobs=args.top_logprobs,
    )
    from ..backends.openai import ServerError

    try:
        results = run(cfg, args.out, overwrite=args.overwrite, progress=not args.no_progress)
    except ServerError as err:
        # One line, as for every other error; what was scored before it is kept.
        if getattr(args, "verbose", False):
            raise
        again = "; run the same command again to resume" if err.retryable else ""
        print(f"nlieval: error: {err}{again}", file=sys.stderr)
        return 2
    print(metrics_table(results["metrics"], run_timing(results)))
    print(f"\nrecords, results.json and summary.md in {args.out}")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    rows = []
    for task in args.tasks:
        ds = data.load_task(task, args.data_dir, args.split, skip_bad=args.skip_bad)
        rows.append(dataset_stats(ds))
    print(format_stats(rows))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    print(report(args.runs, write=not args.no_write))
    return 0


def _cmd_tasks(args: argparse.Namespace) -> int:
    for name, spec in data.TASKS.items():
        labels = "/".join(lab.value for lab in spec.labels)
        print(f"{name:<18} {spec.default_split:<15} {labels:<42} {spec.description}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """``run``, ``stats``, ``report`` and ``tasks``."""
    _add_run(sub)
    p = sub.add_parser("stats", help="items, labels, lengths and overlap of benchmarks")
    p.add_argument("--task", "--tasks", dest="tasks", type=csv_list, required=True)
    add_data_dir(p)
    p.add_argument("--split", default=None)
    p.add_argument("--skip-bad", action="store_true")
    p.set_defaults(handler=_cmd_stats)
    p = sub.add_parser("report", help="tables again from saved records (no model loaded)")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument(
        "--no-write", action="store_true", help="print only; leave results.json as it is"
    )
    p.set_defaults(handler=_cmd_report)
    p = sub.add_parser("tasks", help="list the built-in tasks")
    p.set_defaults(handler=_cmd_tasks)
