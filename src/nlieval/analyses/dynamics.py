"""Training dynamics: how a benchmark's score moves over a model's ordered checkpoints.

Monotonicity (METHODS.md section 3) is Kendall's tau between the checkpoint order and a
score series: accuracy, and minus the mean NLL of the gold option (so that improving
gives +1 for both).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..metrics import summarize
from ..runs import RunFolder
from ..types import Record


def checkpoint_order(folder: str | Path) -> list[str]:
    """The checkpoints of a run folder in the order they were given (``--checkpoints``)."""
    cfg = RunFolder(folder).read_config() or {}
    if not cfg.get("checkpoints"):
        raise ValueError(f"{folder}: not a checkpoint run (made without --checkpoints)")
    return [str(c) for c in cfg["checkpoints"]]


def dynamics(records: Iterable[Record], order: Sequence[str]) -> list[dict[str, Any]]:
    """Per (model, task, k): the accuracy and gold-NLL series over ``order`` and their
    Kendall tau against the checkpoint order.

    Checkpoints missing from the records are left out of the series (a run still going).

    >>> from nlieval.types import Record
    >>> def rec(ck, ok):
    ...     ll = (-0.1, -3.0) if ok else (-3.0, -0.1)
    ...     return Record("t", "1", "m", 0, 0, ("entailment", "neutral"), ll, (0.5, 0.5),
    ...                   "entailment" if ok else "neutral", "entailment", checkpoint=ck)
    >>> rows = dynamics([rec("s1", False), rec("s2", True)], ["s1", "s2"])
    >>> rows[0]["tau_accuracy"], rows[0]["tau_nll"]
    (1.0, 1.0)
    """
    rank = {ck: i for i, ck in enumerate(order)}
    series: dict[tuple[str, str, int], list[tuple[int, str, float, float]]] = {}
    for row in summarize(records):
        ck = row["checkpoint"]
        if ck not in rank:
            continue
        key = (row["model"], row["task"], row["k"])
        series.setdefault(key, []).append((rank[ck], ck, row["accuracy"], row["gold_nll"]))
    out = []
    for (model, task, k), points in sorted(series.items()):
        points.sort()
        steps = [p[0] for p in points]
        acc = [p[2] for p in points]
        nll = [p[3] for p in points]
        out.append(
            {
                "model": model,
                "task": task,
                "k": k,
                "checkpoints": [p[1] for p in points],
                "accuracy": acc,
                "gold_nll": nll,
                "tau_accuracy": _tau(steps, acc),
                "tau_nll": _tau(steps, [-x for x in nll]),
            }
        )
    return out


def _tau(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import kendalltau  # heavy: loaded on first use

    # kendalltau warns and returns nan for fewer than two points or a constant series.
    if len(x) < 2 or len(set(y)) < 2:
        return math.nan
    return float(kendalltau(x, y).statistic)


def format_dynamics(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table of the series and their taus."""
    if not rows:
        return "(no checkpoint records)"
    lines = [
        "| model | task | k | checkpoints | accuracy | gold NLL | tau(acc) | tau(-NLL) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        acc = " ".join(f"{a:.3f}" for a in r["accuracy"])
        nll = " ".join(f"{a:.3f}" for a in r["gold_nll"])
        lines.append(
            f"| {r['model']} | {r['task']} | {r['k']} | {len(r['checkpoints'])} | {acc} | {nll} "
            f"| {r['tau_accuracy']:.3f} | {r['tau_nll']:.3f} |"
        )
    return "\n".join(lines)


def _short(names: Sequence[str]) -> list[str]:
    """Checkpoint folders by their last path part when that keeps them apart.

    >>> _short(["runs/ft/step-0000", "runs/ft/step-0010"])
    ['step-0000', 'step-0010']
    """
    tails = [Path(n).name or n for n in names]
    return tails if len(set(tails)) == len(tails) else list(names)


def plot_dynamics(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Accuracy and gold NLL against checkpoint, one panel pair per (task, k)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(rows))
    fig, axes = plt.subplots(2, n, figsize=(4 * n, 6), squeeze=False)
    for i, r in enumerate(rows):
        x = range(len(r["checkpoints"]))
        axes[0][i].plot(x, r["accuracy"], marker="o")
        axes[0][i].set_title(f"{r['task']} k={r['k']}  tau={r['tau_accuracy']:.2f}")
        axes[0][i].set_ylabel("accuracy")
        axes[1][i].plot(x, r["gold_nll"], marker="o", color="tab:red")
        axes[1][i].set_title(f"gold NLL  tau(-NLL)={r['tau_nll']:.2f}")
        axes[1][i].set_ylabel("mean NLL of gold option")
        for ax in (axes[0][i], axes[1][i]):
            ax.set_xticks(list(x))
            ax.set_xticklabels(_short(r["checkpoints"]), rotation=45, ha="right", fontsize=7)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
