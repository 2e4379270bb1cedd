"""`nlieval run` against its backend alone (issue 22, part 3): items per second of the
whole run (plan, prompts, scoring in chunks, records written, results) against one
``loglikelihood`` call on the same requests, the same loaded model and batch size.

For each task and k: the requests are built as ``nlieval run`` builds them
(``choice.runner.plan`` + ``SweepPoint.prompt``) and scored in one call ("backend"); then
``choice.run`` writes a fresh run folder with a backend factory that hands it the same
loaded model ("run"; model loading excluded from both). Each is timed ``--repeat`` times,
alternating, the fastest kept (the machine may be shared). Checks that the run's
predictions are the backend's.

    NLIEVAL_DATA_DIR=../shared/data python benchmarks/run_loop.py --tasks snli,anli_r3 \\
        --shots 0,10 --limit 200 --batch-size 4
    python benchmarks/run_loop.py --model FOLDER --device cuda --dtype bfloat16 \\
        --batch-size 64 --limit 1000        # what gpu_bench.py runs on a GPU

Prints a markdown table; ``--json PATH`` also writes the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Imported once before any timing, as model loading is left out: the metrics import
# scikit-learn and scipy on first use (about 1 s here), a cost per process, not per item.
import scipy.stats  # noqa: E402, F401
import sklearn.metrics  # noqa: E402, F401

from nlieval.backends import (  # noqa: E402
    HFOptions,  # noqa: E402
    ScoreRequest,
    stand_in,
)
from nlieval.backends.hf import HFCausalLM  # noqa: E402
from nlieval.backends.weights import DEFAULT_MODEL  # noqa: E402
from nlieval.choice import RunConfig, run  # noqa: E402
from nlieval.choice.runner import plan  # noqa: E402
from nlieval.runs import RunFolder  # noqa: E402


def measure(
    lm: HFCausalLM,
    model: str,
    task: str,
    k: int,
    limit: int,
    batch_size: int | str,
    repeat: int,
) -> dict[str, Any]:
    """Seconds of the backend alone and of ``choice.run`` on ``limit`` items of ``task``
    at ``k`` shots (seed 0), the fastest of ``repeat`` each, and whether the run's
    predictions are the backend's."""
    config = RunConfig(model, (task,), shots=(k,), limit=limit, batch_size=batch_size)
    ((dataset, (point,), _),) = plan(config)
    items = list(dataset.items)
    prompts = [point.prompt(it) for it in items]
    requests = [ScoreRequest(p.text, p.continuations, prefix_len=len(p.prefix)) for p in prompts]
    lm.batch_size = batch_size
    best_backend = best_run = float("inf")
    scores: list[list[float]] = []
    preds: dict[str, str] = {}
    lm.loglikelihood(requests[:8])  # untimed: the first passes touch the weights' pages
    for _ in range(repeat):
        lm._cached = None  # each timing computes the prefix once, as a fresh run does
        t0 = time.perf_counter()
        scores = lm.loglikelihood(requests)
        best_backend = min(best_backend, time.perf_counter() - t0)
        out = Path(tempfile.mkdtemp(prefix="run-loop-"))
        lm._cached = None
        t0 = time.perf_counter()
        run(config, out, model=stand_in(config, lambda ckpt: lm), progress=False)
        best_run = min(best_run, time.perf_counter() - t0)
        preds = {r.item_id: r.pred for r in RunFolder(out).records()}
        shutil.rmtree(out)
    labels = [lab.value for lab in point.labels]
    want = {
        it.id: labels[max(range(len(s)), key=lambda j: (s[j], -j))]
        for it, s in zip(items, scores, strict=True)
    }
    return {
        "task": task,
        "k": k,
        "items": len(items),
        "batch_size": batch_size,
        "backend_s": round(best_backend, 3),
        "run_s": round(best_run, 3),
        "backend_items_s": round(len(items) / best_backend, 2),
        "run_items_s": round(len(items) / best_run, 2),
        "run_share": round(best_backend / best_run, 3),
        "same_predictions": preds == want,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| task | k | items | batch | backend items/s | run items/s | run / backend | same preds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['k']} | {r['items']} | {r['batch_size']} | "
            f"{r['backend_items_s']:.1f} | {r['run_items_s']:.1f} | {100 * r['run_share']:.0f}% | "
            f"{'yes' if r['same_predictions'] else 'NO'} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--tasks", default="snli,anli_r3")
    ap.add_argument("--shots", default="0,10")
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--batch-size", default="4", help="rows per forward pass, or auto")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    lm = HFCausalLM(args.model, HFOptions(device=args.device, dtype=args.dtype))
    rows = []
    for task in args.tasks.split(","):
        for k in (int(x) for x in args.shots.split(",")):
            bs = args.batch_size if args.batch_size == "auto" else int(args.batch_size)
            row = measure(lm, args.model, task, k, args.limit, bs, args.repeat)
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
