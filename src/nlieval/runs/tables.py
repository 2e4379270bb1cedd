"""The tables of a run folder's metrics (``summary.md``, the command output), as values
(:class:`nlieval.ground.Table`) that :func:`nlieval.ground.render` writes.

>>> print(render(metrics_table([]), "md"))
(no scored records yet)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..ground import Cell, Document, Table, render
from ..metrics import CHANCE_HEAD, MAJORITY_LABEL, METRICS, UNDEFINED_NOTE, metrics
from .schema import Results


def plus_minus(mean: float, std: float, n_seeds: int, digits: int = 3) -> str:
    if math.isnan(mean):
        return "n/a"
    return f"{mean:.{digits}f}" + (f" ± {std:.{digits}f}" if n_seeds > 1 else "")


def plus_minus_cell(mean: float, std: float, n_seeds: int, digits: int = 3) -> Cell:
    """The cell of :func:`plus_minus`: its text, and the mean behind it (None where it is
    not finite: n/a, which JSON cannot hold).

    >>> plus_minus_cell(0.5, 0.01, 2), plus_minus_cell(float("nan"), 0.0, 1).value
    (Cell(text='0.500 ± 0.010', value=0.5), None)
    """
    return Cell(plus_minus(mean, std, n_seeds, digits), mean if math.isfinite(mean) else None)


def _short(label: str) -> str:
    return {"entailment": "E", "neutral": "N", "contradiction": "C", "non-entailment": "non-E"}.get(
        label, label
    )


def metrics_table(
    rows: Sequence[Mapping[str, Any]], timing: Mapping[str, Mapping[str, Any]] | None = None
) -> Document:
    """The metrics of ``rows`` as a table of values, one line per (model, checkpoint,
    task, k), and its note (:func:`nlieval.ground.render` writes it in a format).

    ``timing`` maps a model name to its run folder's ``timing.json`` (seconds and items
    per sweep point); with it the table adds the scoring rate and wall time. The random
    baseline is the task's 1/K (:func:`nlieval.metrics.point_metrics`), and the scored
    items' gold labels are counted beside the predicted labels' shares. A metric
    undefined on the items is n/a, said in a note under the table.

    >>> from nlieval.metrics import summarize
    >>> from nlieval.types import Record
    >>> r = Record("t", "1", "m", 0, 0, ("entailment", "neutral"), (-0.1, -2.0),
    ...            (0.87, 0.13), "entailment", "neutral")
    >>> print(render(metrics_table(summarize([r])), "md").splitlines()[2])  # no macro F1
    | m | t | 0 | 1 | 1 | 0.000 | n/a | 2.000 | 0.500 | E 100% N 0% | E 0 N 1 |
    """

    def cells(r: Mapping[str, Any]) -> list[Cell | str | int]:
        ns = len(r["seeds"])
        dist = " ".join(f"{_short(lab)} {share:.0%}" for lab, share in r["pred_dist"].items())
        if r.get("n_unparsed"):
            dist += f" unparsed {r['n_unparsed']}"
        return [
            ns,
            *(plus_minus_cell(r[m.name], r[m.name + "_std"], ns, m.digits) for m in shown),
            Cell(f"{r['chance']:.3f}", r["chance"]),
            dist,
            " ".join(f"{_short(lab)} {n}" for lab, n in (r.get("gold_counts") or {}).items()),
        ]

    shown = metrics(source="records")
    head = ["seeds", *(m.label for m in shown), CHANCE_HEAD, "predicted labels", "gold labels"]
    return _row_table(rows, timing, head, cells)


def instruct_table(
    rows: Sequence[Mapping[str, Any]], timing: Mapping[str, Mapping[str, Any]] | None = None
) -> Document:
    """The table of an instruct run: per (model, task, k), macro F1, accuracy and the
    number of unparseable answers per run, each as mean ± std over the runs.

    >>> row = {"model": "m", "task": "scinli", "k": 4, "n": 10, "seeds": [0, 1],
    ...        "macro_f1": 0.3, "macro_f1_std": 0.1, "accuracy": 0.4, "accuracy_std": 0.0,
    ...        "chance": 0.25, "majority_baseline": 0.25,
    ...        "per_seed": [{"n_unparsed": 1}, {"n_unparsed": 3}]}
    >>> print(render(instruct_table([row]), "md").splitlines()[-1])
    | m | scinli | 4 | 10 | 2 | 0.300 ± 0.100 | 0.400 ± 0.000 | 2.0 ± 1.4 | 0.250 | 0.250 |
    """

    def cells(r: Mapping[str, Any]) -> list[Cell | str | int]:
        ns = len(r["seeds"])
        unparsed = [float(p["n_unparsed"]) for p in r["per_seed"]]
        std = statistics.stdev(unparsed) if ns > 1 else 0.0
        return [
            ns,
            *(plus_minus_cell(r[m.name], r[m.name + "_std"], ns, m.digits) for m in shown),
            plus_minus_cell(statistics.fmean(unparsed), std, ns, digits=1),
            Cell(f"{r['chance']:.3f}", r["chance"]),
            Cell(f"{r['majority_baseline']:.3f}", r["majority_baseline"]),
        ]

    # The instruct papers' columns: macro F1 first.
    shown = [METRICS["macro_f1"], METRICS["accuracy"]]
    head = ["runs", *(m.label for m in shown), "unparsed/run", CHANCE_HEAD, MAJORITY_LABEL]
    return _row_table(rows, timing, head, cells)


def _row_table(
    rows: Sequence[Mapping[str, Any]],
    timing: Mapping[str, Mapping[str, Any]] | None,
    head: Sequence[str],
    cells: Callable[[Mapping[str, Any]], list[Cell | str | int]],
) -> Document:
    """One line per row: model, checkpoint (when any row has one), task, k, n, then the
    table's own ``head`` columns, then the scoring rate when ``timing`` is given."""
    if not rows:
        return ["(no scored records yet)"]
    show_ckpt = any(r.get("checkpoint") for r in rows)
    names = (
        ["model"]
        + (["checkpoint"] if show_ckpt else [])
        + ["task", "k", "n", *head]
        + (["items/s", "wall s"] if timing else [])
    )
    body: list[list[Cell | str | int]] = []
    for r in rows:
        line: list[Cell | str | int] = [
            r["model"],
            *([r.get("checkpoint") or ""] if show_ckpt else []),
            r["task"],
            Cell(str(r["k"]), r["k"] if isinstance(r["k"], int) else None),
            r["n"],
            *cells(r),
        ]
        if timing:
            line.extend(_rate(timing, r))
        body.append(line)
    table = Table.of(names, body)
    if any(c.text == "n/a" for line in table.rows for c in line):
        return [Table(table.header, table.rows, notes=("", UNDEFINED_NOTE))]
    return [table]


def _rate(timing: Mapping[str, Mapping[str, Any]], row: Mapping[str, Any]) -> list[Cell | str]:
    secs = items = 0.0
    points = timing.get(row["model"], {})
    for seed in row["seeds"]:
        key = "|".join(str(x) for x in (row.get("checkpoint") or "", row["task"], row["k"], seed))
        if key in points:
            secs += points[key]["seconds"]
            items += points[key]["items"]
    if secs <= 0:
        return ["", ""]
    return [Cell(f"{items / secs:.2f}", items / secs), Cell(f"{secs:.0f}", secs)]


def _seq(value: Any) -> Any:
    # A config read back from JSON holds lists where the config object held tuples:
    # show both the same way.
    return tuple(value) if isinstance(value, list) else value


def markdown_summary(results: Results) -> str:
    """The ``summary.md`` of a run folder: its versions are those of the latest
    invocation that wrote records (a re-report changes no number's origin)."""
    cfg = results.config or {}
    made = results.made_by
    ver = made.versions if made else {}
    commit = made.git_commit if made else None
    kind = cfg.get("kind", "run")
    if kind == "instruct":
        setup = (
            f"runs {_seq(cfg.get('runs'))}; limit {cfg.get('limit')}; split {cfg.get('split')}; "
            f"exemplars from {cfg.get('pool_split') or 'the default pool'}; greedy, at most "
            f"{cfg.get('max_new_tokens')} new tokens"
        )
        table = render(instruct_table(results.metrics, run_timing(results)), "md")
    else:
        setup = f"seeds {_seq(cfg.get('seeds'))}; limit {cfg.get('limit')}"
        if cfg.get("sample") is not None:
            setup += f"; sample {cfg['sample']} by label (seed {cfg.get('sample_seed', 0)})"
        table = render(metrics_table(results.metrics, run_timing(results)), "md")
    lines = [
        f"# nlieval {kind}: {cfg.get('model', '?')}",
        "",
        f"tasks {', '.join(cfg.get('tasks', []))}; shots {_seq(cfg.get('shots'))}; {setup}",
        f"nlieval {ver.get('nlieval')}, torch {ver.get('torch')}, "
        f"transformers {ver.get('transformers')}, commit {commit}",
        "",
        table,
        "",
    ]
    for task, info in results.data.items():
        dropped = ", ".join(f"{v} {k}" for k, v in (info.get("dropped") or {}).items()) or "none"
        lines.append(
            f"- {task}: {info['items']} of {info['items_in_split']} items of {info['split']} "
            f"({info['source']}); dropped: {dropped}; few-shot pool: {info.get('pool')}"
        )
        lines += [f"  - warning: {line}" for line in info.get("warnings") or ()]
    return "\n".join(lines) + "\n"


def run_timing(results: Results) -> dict[str, Any]:
    """``{model: sweep-point timing}`` of one run's results (empty when untimed)."""
    points = results.timing.get("sweep_points")
    model = (results.config or {}).get("model")
    return {model: points} if points and model else {}
