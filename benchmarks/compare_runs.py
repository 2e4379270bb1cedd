"""Agreement of two run folders of the same items: per sweep point, the share of items with
the same prediction, the largest and mean |difference| of the option log-likelihoods, and
each run's items per second (from its results.json timing).

    python benchmarks/compare_runs.py runs/hf runs/vllm

Records are matched on (task, k, seed, item id): the model name may differ (an alias in one
run, the served name in the other). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from nlieval.runs import iter_run_records
from nlieval.types import Record

Key = tuple[str, int, int, str]


def _by_key(folder: Path) -> dict[Key, Record]:
    return {(r.task, r.k, r.seed, r.item_id): r for r in iter_run_records([folder])}


def _rate(folder: Path, task: str, k: int) -> float:
    """Items per second of one sweep point, nan when the run was not timed (or has not
    finished: its records are compared all the same)."""
    if not (folder / "results.json").is_file():
        return math.nan
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    points: dict[str, Any] = (results.get("timing") or {}).get("sweep_points") or {}
    # Keys are "checkpoint|task|k|seed" (see runs.results); values seconds and items.
    for name, point in points.items():
        parts = name.split("|")
        if len(parts) == 4 and parts[1] == task and parts[2] == str(k) and point.get("seconds"):
            return float(point["items"]) / float(point["seconds"])
    return math.nan


def compare(a: Path, b: Path) -> list[dict[str, Any]]:
    """One row per (task, k) present in both folders."""
    ra, rb = _by_key(a), _by_key(b)
    shared = sorted(set(ra) & set(rb))
    rows: list[dict[str, Any]] = []
    for task, k in sorted({(key[0], key[1]) for key in shared}):
        keys = [key for key in shared if key[0] == task and key[1] == k]
        deltas = [
            abs(x - y) for key in keys for x, y in zip(ra[key].loglik, rb[key].loglik, strict=True)
        ]
        same = sum(ra[key].pred == rb[key].pred for key in keys)
        acc_a = sum(ra[key].correct for key in keys) / len(keys)
        acc_b = sum(rb[key].correct for key in keys) / len(keys)
        rows.append(
            {
                "task": task,
                "k": k,
                "items": len(keys),
                "same_pred_pct": 100.0 * same / len(keys),
                "max_abs_dll": max(deltas),
                "mean_abs_dll": sum(deltas) / len(deltas),
                "acc_a": acc_a,
                "acc_b": acc_b,
                "items_per_s_a": _rate(a, task, k),
                "items_per_s_b": _rate(b, task, k),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="reference run folder (e.g. transformers)")
    parser.add_argument("b", type=Path, help="run folder to compare (e.g. a server)")
    args = parser.parse_args()
    print(
        "| task | k | items | same prediction | max abs dLL | mean abs dLL "
        "| accuracy A | accuracy B | items/s A | items/s B |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in compare(args.a, args.b):
        print(
            f"| {r['task']} | {r['k']} | {r['items']} | {r['same_pred_pct']:.1f}% "
            f"| {r['max_abs_dll']:.2e} | {r['mean_abs_dll']:.2e} | {r['acc_a']:.3f} "
            f"| {r['acc_b']:.3f} | {r['items_per_s_a']:.2f} | {r['items_per_s_b']:.2f} |"
        )


if __name__ == "__main__":
    main()
