"""Tables from results: Markdown summaries, recomputed from saved records."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .metrics import summarize
from .runs import RunFolder, iter_run_records


def _pm(mean: float, std: float, n_seeds: int, digits: int = 3) -> str:
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.{digits}f}" + (f" ± {std:.{digits}f}" if n_seeds > 1 else "")


def _short(label: str) -> str:
    return {"entailment": "E", "neutral": "N", "contradiction": "C", "non-entailment": "non-E"}.get(
        label, label
    )


def metrics_table(
    rows: Sequence[Mapping[str, Any]], timing: Mapping[str, Mapping[str, Any]] | None = None
) -> str:
    """A Markdown table, one line per (model, checkpoint, task, k).

    ``timing`` maps a model name to its run folder's ``timing.json`` (seconds and items
    per sweep point); with it the table adds the scoring rate and wall time.

    >>> print(metrics_table([]))
    (no scored records yet)
    """
    if not rows:
        return "(no scored records yet)"
    show_ckpt = any(r.get("checkpoint") for r in rows)
    show_time = bool(timing)
    head = (
        ["model"]
        + (["checkpoint"] if show_ckpt else [])
        + [
            "task",
            "k",
            "n",
            "seeds",
            "accuracy",
            "macro F1",
            "gold NLL",
            "chance",
            "predicted labels",
        ]
        + (["items/s", "wall s"] if show_time else [])
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ns = len(r["seeds"])
        dist = " ".join(f"{_short(lab)} {share:.0%}" for lab, share in r["pred_dist"].items())
        if r.get("n_unparsed"):
            dist += f" unparsed {r['n_unparsed']}"
        cells = (
            [r["model"]]
            + ([r.get("checkpoint") or ""] if show_ckpt else [])
            + [
                r["task"],
                str(r["k"]),
                str(r["n"]),
                str(ns),
                _pm(r["accuracy"], r["accuracy_std"], ns),
                _pm(r["macro_f1"], r["macro_f1_std"], ns),
                _pm(r["gold_nll"], r["gold_nll_std"], ns),
                f"{r['chance']:.3f}",
                dist,
            ]
        )
        if show_time:
            cells.extend(_rate(timing or {}, r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rate(timing: Mapping[str, Mapping[str, Any]], row: Mapping[str, Any]) -> list[str]:
    secs = items = 0.0
    points = timing.get(row["model"], {})
    for seed in row["seeds"]:
        key = "|".join(str(x) for x in (row.get("checkpoint") or "", row["task"], row["k"], seed))
        if key in points:
            secs += points[key]["seconds"]
            items += points[key]["items"]
    if secs <= 0:
        return ["", ""]
    return [f"{items / secs:.2f}", f"{secs:.0f}"]


def markdown_summary(results: Mapping[str, Any]) -> str:
    """The ``summary.md`` of a run folder."""
    cfg = results.get("config") or {}
    env = results.get("environment") or {}
    ver = env.get("versions", {})
    lines = [
        f"# nlieval run: {cfg.get('model', '?')}",
        "",
        f"tasks {', '.join(cfg.get('tasks', []))}; shots {cfg.get('shots')}; "
        f"seeds {cfg.get('seeds')}; limit {cfg.get('limit')}",
        f"nlieval {ver.get('nlieval')}, torch {ver.get('torch')}, "
        f"transformers {ver.get('transformers')}, commit {env.get('git_commit')}",
        "",
        metrics_table(results.get("metrics", []), run_timing(results)),
        "",
    ]
    for task, info in (results.get("data") or {}).items():
        dropped = ", ".join(f"{v} {k}" for k, v in (info.get("dropped") or {}).items()) or "none"
        lines.append(
            f"- {task}: {info['items']} of {info['items_in_split']} items of {info['split']} "
            f"({info['source']}); dropped: {dropped}; few-shot pool: {info.get('pool')}"
        )
    return "\n".join(lines) + "\n"


def report(folders: Iterable[str | Path], write: bool = True) -> str:
    """Recompute metrics from the records of one or more run folders; no model is loaded.

    With ``write``, each folder's ``results.json`` and ``summary.md`` are rewritten from its
    records. Returns a Markdown table over all folders.

    >>> print(report(["runs/gemma"]))    # doctest: +SKIP
    """
    from .runner import finalize

    folders = list(folders)
    runs = [RunFolder(f) for f in folders]
    results = [finalize(rf, rf.read_config()) if write else rf.read_results() for rf in runs]
    # One folder: finalize has just summarised its records; several: summarise them together
    # (two folders may hold the same model and task).
    if write and len(runs) == 1:
        rows = results[0]["metrics"]
    else:
        rows = summarize(iter_run_records(folders))
    timing: dict[str, Any] = {}
    for res in results:
        timing.update(run_timing(res))
    return metrics_table(rows, timing)


def run_timing(results: Mapping[str, Any]) -> dict[str, Any]:
    """``{model: sweep-point timing}`` of one run's results (empty when untimed)."""
    points = (results.get("timing") or {}).get("sweep_points")
    model = (results.get("config") or {}).get("model")
    return {model: points} if points and model else {}
