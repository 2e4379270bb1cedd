"""The ``nlieval contamination`` command: per-item contamination scores, and EPG for a run.

::

    nlieval contamination --corpus web/ books.jsonl.gz --task snli --n 8 --out snli.cont.jsonl
    nlieval contamination --scores snli.cont.jsonl --run runs/demo --plot epg.png

Writes the per-item scores (JSONL: task, item_id, score, n_tokens, n_contaminated_tokens)
and ``<out stem>.summary.json`` (settings, per-task summary, corpus read, throughput);
with ``--run``, prints the EPG table over the thresholds (``--plot``: a PNG of EPG
against the % of items marked contaminated).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from typing import Any

from .. import contamination as cont
from .. import data
from ..runs import atomic_write, iter_run_records
from .args import add_data_dir, csv_list


def _thresholds(text: str) -> tuple[float, ...] | str:
    if text == "distinct":
        return text
    try:
        return tuple(float(x) for x in csv_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--thresholds takes comma-separated numbers or 'distinct', got {text!r}"
        ) from None


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add the ``contamination`` subcommand to the main parser's subparsers.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["contamination", "--task", "smoke", "--corpus", "c.txt"]).n
    8
    """
    p = sub.add_parser(
        "contamination",
        help="score test items by n-gram overlap with a corpus; EPG against a run's records",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument(
        "--corpus",
        nargs="+",
        default=[],
        help="corpus files or folders: text (a document a line) or jsonl, .gz ok",
    )
    p.add_argument("--task", "--tasks", dest="tasks", type=csv_list, default=(), help="task names")
    p.add_argument("--n", type=int, default=cont.DEFAULT_N, help="n-gram length [8]")
    p.add_argument(
        "--tokenizer",
        default="regex",
        help="regex (lower-cased \\w+ runs), whitespace, or hf:<model-or-folder> [regex]",
    )
    p.add_argument("--text-field", default="text", help="jsonl field holding the text [text]")
    p.add_argument("--format", dest="fmt", choices=("auto", "text", "jsonl"), default="auto")
    p.add_argument("--workers", type=int, default=None, help="processes [local cores]")
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="scan with Ray: a local one, or a cluster ('auto', 'ray://host:10001')",
    )
    p.add_argument("--shard-mb", type=int, default=cont.SHARD_BYTES >> 20, help="[64]")
    add_data_dir(p)
    p.add_argument("--split", default=None)
    p.add_argument("--limit", type=int, default=None, help="first N items of each task")
    p.add_argument("--skip-bad", action="store_true")
    p.add_argument("--out", default="contamination.jsonl", help="per-item scores [%(default)s]")
    p.add_argument("--scores", default=None, help="read scores from this file; do not scan")
    p.add_argument("--run", default=None, help="run folder whose records EPG is computed on")
    p.add_argument(
        "--thresholds",
        type=_thresholds,
        default=cont.DEFAULT_THRESHOLDS,
        help="comma-separated t, or 'distinct' (every score seen) [0,0.1,...,0.9]",
    )
    p.add_argument("--metric", choices=("accuracy", "macro_f1"), default="accuracy")
    p.add_argument("--plot", default=None, help="write EPG vs %% contaminated to this PNG")
    p.set_defaults(handler=run_contamination)


def _scan(args: argparse.Namespace) -> list[dict[str, Any]]:
    if not args.tasks or not args.corpus:
        raise ValueError("contamination needs --task and --corpus (or --scores FILE)")
    items = {}
    for name in args.tasks:
        ds = data.load_task(name, args.data_dir, args.split, skip_bad=args.skip_bad)
        # Records carry the task's registered name: scores must use the same.
        items[data.get_task(name).name] = ds.items[: args.limit] if args.limit else ds.items
    if args.ray is not None and importlib.util.find_spec("ray") is None:
        raise ValueError("--ray needs Ray installed (pip install ray)")
    options = cont.ScanOptions(args.fmt, args.text_field)
    scores, result = cont.score_tasks(
        items,
        args.corpus,
        args.n,
        args.tokenizer,
        options,
        args.workers,
        args.shard_mb << 20,
        use_ray=args.ray is not None,
        ray_address=None if args.ray in (None, "local") else args.ray,
    )
    out = cont.write_scores(scores, args.out)
    summary = {
        "n": args.n,
        "tokenizer": args.tokenizer,
        "corpus": [str(p) for p in cont.corpus_files(args.corpus)],
        "tasks": cont.score_summary(scores),
        "scan": result.stats(),
    }
    side = out.with_name((out.stem if out.suffix == ".jsonl" else out.name) + ".summary.json")
    atomic_write(side, json.dumps(summary, indent=2) + "\n")
    s = result.stats()
    print(
        f"corpus: {s['shards']} shards, {s['bytes'] / 1e6:.1f} MB, {s['docs']} docs, "
        f"{s['tokens']} tokens in {s['seconds']:.1f} s ({s['mb_per_s']:.1f} MB/s); "
        f"{s['bad_lines']} bad jsonl lines"
    )
    print(f"scores: {out}\nsummary: {side}")
    return scores


def _summary_table(scores: list[dict[str, Any]]) -> str:
    lines = [
        "| task | items | mean score | % > 0 | % >= 0.5 | % = 1 |",
        "|---|---|---|---|---|---|",
    ]
    for r in cont.score_summary(scores):
        lines.append(
            f"| {r['task']} | {r['n_items']} | {r['mean_score']:.4f} | {r['pct_any']:.1f} "
            f"| {r['pct_half']:.1f} | {r['pct_full']:.1f} |"
        )
    return "\n".join(lines)


def run_contamination(args: argparse.Namespace) -> int:
    """Handler of ``nlieval contamination`` (see the module docstring)."""

    if args.scores:
        scores = cont.read_scores(args.scores)
        if args.tasks:
            wanted = {data.get_task(t).name for t in args.tasks}
            scores = [s for s in scores if s["task"] in wanted]
    else:
        scores = _scan(args)
    print(_summary_table(scores))
    if args.run is None:
        if args.plot:
            raise ValueError("--plot needs --run (EPG is computed on a run's records)")
        return 0
    thresholds = args.thresholds
    if thresholds == "distinct":
        thresholds = sorted({float(s["score"]) for s in scores})
    rows = cont.epg(iter_run_records([args.run]), scores, thresholds, args.metric)
    print()
    print(cont.format_epg(rows))
    if args.plot:
        print(f"\nplot: {cont.plot_epg(rows, args.plot)}")
    return 0


__all__ = ["add_commands", "run_contamination"]
