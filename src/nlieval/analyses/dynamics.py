"""Training dynamics: how a benchmark's score moves over a model's ordered checkpoints.

Monotonicity (METHODS.md section 3) is Kendall's tau between the checkpoint order and a
score series: accuracy, and minus the mean NLL of the gold option (so that improving
gives +1 for both). On ChaosNLI tasks the divergences from the human label distribution
are followed too: JS distance and KL(human || model) per checkpoint, with the tau of their
negatives (falling divergence gives +1), beside the uniform baseline and the human
split-half estimate on the same items.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..ground import Cell, Document, Table
from ..metrics import METRICS, summarize
from ..plotting import FigurePaths, figure_format, plot_accuracy_by_entropy, plot_run_dynamics
from ..runs import RunFolder
from ..types import Record
from .chaosnli import HumanBaseline, entropy_bins, score_records


def checkpoint_order(folder: str | Path) -> list[str]:
    """The checkpoints of a run folder in the order they were given (``--checkpoints``).

    >>> checkpoint_order(run_dir + "/missing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: .../missing: not a run folder (no config.json)
    """
    cfg = RunFolder(folder).read_config()
    if cfg is None:
        # Without this, a mistyped folder was called "made without --checkpoints".
        raise ValueError(f"{folder}: not a run folder (no config.json)")
    if not cfg.get("checkpoints"):
        raise ValueError(
            f"{folder}: not a checkpoint run (made by nlieval run without --checkpoints)"
        )
    return [str(c) for c in cfg["checkpoints"]]


def dynamics(
    records: Iterable[Record], order: Sequence[str], human: HumanBaseline | None = None
) -> list[dict[str, Any]]:
    """Per (model, task, k): the accuracy and gold-NLL series over ``order`` and their
    Kendall tau against the checkpoint order, the ``chance`` accuracy and the number of
    options ``n_labels`` (a uniform guess has gold NLL ln ``n_labels``); on ChaosNLI
    tasks also ``js_distance`` and ``kl`` series, ``tau_js`` and ``tau_kl`` (of minus the
    divergence), ``n`` (items of the last checkpoint), and the ``uniform`` and ``human``
    lines of the last checkpoint's items (see :func:`nlieval.analyses.chaosnli.score_records`).

    Checkpoints missing from the records are left out of the series (a run still going).

    >>> from nlieval.types import Record
    >>> def rec(ck, ok):
    ...     ll = (-0.1, -3.0) if ok else (-3.0, -0.1)
    ...     return Record("t", "1", "m", 0, 0, ("entailment", "neutral"), ll, (0.5, 0.5),
    ...                   "entailment" if ok else "neutral", "entailment", checkpoint=ck)
    >>> rows = dynamics([rec("s1", False), rec("s2", True)], ["s1", "s2"])
    >>> rows[0]["tau_accuracy"], rows[0]["tau_nll"], "js_distance" in rows[0]
    (1.0, 1.0, False)
    """
    records = list(records)
    rank = {ck: i for i, ck in enumerate(order)}
    series: dict[tuple[str, str, int], list[tuple[int, str, float, float]]] = {}
    # The chance accuracy and the number of options of each series (for its plot's
    # reference lines); the same at every checkpoint, as the items are.
    levels: dict[tuple[str, str, int], tuple[float, int]] = {}
    for m in summarize(records):
        ck = m["checkpoint"]
        if ck not in rank:
            continue
        key = (m["model"], m["task"], m["k"])
        series.setdefault(key, []).append((rank[ck], ck, m["accuracy"], m["gold_nll"]))
        levels[key] = (float(m["chance"]), len(m["labels"]))
    chaos: dict[tuple[str, str, int, str], dict[str, Any]] = {
        (r["model"], r["task"], r["k"], r["checkpoint"]): r
        for r in score_records(records, human)
        if r["checkpoint"] in rank
    }
    out = []
    for (model, task, k), points in sorted(series.items()):
        points.sort()
        steps = [p[0] for p in points]
        acc = [p[2] for p in points]
        nll = [p[3] for p in points]
        row: dict[str, Any] = {
            "model": model,
            "task": task,
            "k": k,
            "checkpoints": [p[1] for p in points],
            "accuracy": acc,
            "gold_nll": nll,
            "tau_accuracy": _tau(steps, acc),
            "tau_nll": _tau(steps, [-x for x in nll]),
            "chance": levels[(model, task, k)][0],
            "n_labels": levels[(model, task, k)][1],
        }
        scored = [chaos.get((model, task, k, p[1])) for p in points]
        if all(scored):
            js = [float(c["js_distance"]) for c in scored if c]
            kl = [float(c["kl"]) for c in scored if c]
            last = scored[-1] or {}
            row.update(
                js_distance=js,
                kl=kl,
                tau_js=_tau(steps, [-x for x in js]),
                tau_kl=_tau(steps, [-x for x in kl]),
                n=last["n"],
                uniform=last["uniform"],
                human=last["human"],
            )
        out.append(row)
    return out


def _tau(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import kendalltau  # heavy: loaded on first use

    # kendalltau warns and returns nan for fewer than two points or a constant series.
    if len(x) < 2 or len(set(y)) < 2:
        return math.nan
    return float(kendalltau(x, y).statistic)


def _tau_cell(tau: float) -> Cell:
    return Cell(f"{tau:.3f}", None if math.isnan(tau) else tau)


def format_dynamics(rows: Sequence[dict[str, Any]]) -> Document:
    """The series and their taus as a table of values (labels of
    :data:`nlieval.metrics.METRICS`); for ChaosNLI tasks a second table of the divergence
    series, with the uniform baseline and the human line.

    >>> format_dynamics([])
    ['(no checkpoint records)']
    """
    if not rows:
        return ["(no checkpoint records)"]
    acc, nll = METRICS["accuracy"].label, METRICS["gold_nll"].label
    head = ["model", "task", "k", "checkpoints", acc, nll, "tau(acc)", "tau(-NLL)"]
    body = [
        [r["model"], r["task"], Cell(str(r["k"]), r["k"]), len(r["checkpoints"]),
         " ".join(f"{a:.3f}" for a in r["accuracy"]), " ".join(f"{a:.3f}" for a in r["gold_nll"]),
         _tau_cell(r["tau_accuracy"]), _tau_cell(r["tau_nll"])]
        for r in rows
    ]  # fmt: skip
    doc: list[Table | str] = [Table.of(head, body)]
    chaos = [r for r in rows if "js_distance" in r]
    if chaos:
        js, kl = METRICS["js_distance"].label, METRICS["kl"].label
        head = ["model", "task", "k", "n", js, kl, "tau(-JS)", "tau(-KL)", "uniform JS"]
        head += ["human JS"]
        body = []
        for r in chaos:
            uniform, human = r["uniform"]["js_distance"], r["human"]["js_distance"]
            body.append(
                [r["model"], r["task"], Cell(str(r["k"]), r["k"]), r["n"],
                 " ".join(f"{a:.4f}" for a in r["js_distance"]),
                 " ".join(f"{a:.4f}" for a in r["kl"]), _tau_cell(r["tau_js"]),
                 _tau_cell(r["tau_kl"]), Cell(f"{uniform:.4f}", uniform),
                 Cell(f"{human:.4f} ({r['human']['label']})", human)]
            )  # fmt: skip
        doc += ["", Table.of(head, body)]
    return doc


def follow_run(
    folder: str | Path,
    *,
    human: HumanBaseline | None = None,
    plot: FigurePaths | None = None,
    entropy_plot: FigurePaths | None = None,
    bins: int = 5,
    against: str = "original",
    width: float | None = None,
) -> dict[str, Any]:
    """What ``nlieval dynamics`` does with a checkpoint run folder: the :func:`dynamics`
    rows, the curves written to ``plot`` and accuracy by human-label entropy bin (one
    curve per checkpoint, against ``against``) to ``entropy_plot``. Returns ``rows``,
    ``written`` (paths) and ``skipped`` (notes for a plot without data). The figures are
    ``width`` inches wide (the text width if None), in the format of their extension;
    a plot given several paths (``("d.png", "d.pdf")``) is drawn once and saved at each.

    A checkpoint run folder of one item, wrong at ``s1`` and right at ``s2``; it has no
    ChaosNLI records, so there is no entropy plot:

    >>> import json, tempfile
    >>> from nlieval.types import Record
    >>> def rec(ck, ok):
    ...     ll = (-0.1, -3.0) if ok else (-3.0, -0.1)
    ...     return Record("t", "1", "m", 0, 0, ("entailment", "neutral"), ll, (0.5, 0.5),
    ...                   "entailment" if ok else "neutral", "entailment", checkpoint=ck)
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "config.json").write_text(json.dumps({"checkpoints": ["s1", "s2"]}))
    >>> lines = [rec("s1", False).to_json(), rec("s2", True).to_json()]
    >>> _ = (folder / "records.jsonl").write_text("".join(line + "\\n" for line in lines))
    >>> out = follow_run(folder, plot=folder / "dyn.png", entropy_plot=folder / "bins.png")
    >>> out["rows"][0]["accuracy"], [p.name for p in out["written"]]
    ([0.0, 1.0], ['dyn.png'])
    >>> out["skipped"] == [f"skipped {folder / 'bins.png'}: no ChaosNLI records in {folder}"]
    True
    """
    for paths in (plot, entropy_plot):
        for path in _paths(paths):
            figure_format(path)  # an unknown extension before the work, not after it
    records = RunFolder(folder).records()
    rows = dynamics(records, checkpoint_order(folder), human)
    written: list[Path] = []
    skipped: list[str] = []
    if plot:
        plot_run_dynamics(rows, plot, width=width)
        written += _paths(plot)
    if entropy_plot:
        binned = entropy_bins(records, bins)
        if len({r["model"] for r in binned}) == 1:
            # One model: a curve is a checkpoint, named by it (the model is often the
            # first checkpoint's path, which would name every curve alike).
            binned = [
                {**r, "model": Path(str(r["checkpoint"])).name, "checkpoint": None}
                if r.get("checkpoint")
                else r
                for r in binned
            ]
        if binned:
            plot_accuracy_by_entropy(binned, entropy_plot, against, width=width)
            written += _paths(entropy_plot)
        else:
            names = ", ".join(map(str, _paths(entropy_plot)))
            skipped.append(f"skipped {names}: no ChaosNLI records in {folder}")
    return {"rows": rows, "written": written, "skipped": skipped}


def _paths(paths: FigurePaths | None) -> list[Path]:
    # A figure's one path, or its several (one drawing saved in each format).
    if paths is None:
        return []
    return [Path(p) for p in (paths if isinstance(paths, tuple) else (paths,))]
