"""Reports for scientific NLI (METHODS.md section 4), from saved records only.

Per (model, checkpoint, task, k), over the runs (seeds) of that point: the metrics of
the metric table scored from labels alone, macro F1 and accuracy (mean and sample std
over runs, :func:`score_metrics`), per-class F1, the number of unparseable answers,
macro F1 per domain (``Record.meta["domain"]``, when the items have one), and the
confusion matrix summed over the runs. Unparsed answers (``pred`` None, from instruct
models) are scored wrong and get a confusion column of their own, ``unparsed``.

With an in-domain and an out-of-domain task, the two are put side by side per (model,
checkpoint, k). Works for every kind of record: option scoring (``nlieval run``),
fine-tuned classifiers (a ``nlieval train`` folder, whose test records have the training
seeds as runs; or ``nlieval run --model <train folder>``, where ``over_checkpoints``
treats its per-seed checkpoints as runs) and instruct models (``nlieval instruct``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data import get_task
from ..ground import Block, Cell, DataError, Table, render
from ..metrics import METRICS, UNDEFINED_NOTE, Metric, mean_std, metrics, point_metrics
from ..plotting import FigureWidth, plot_confusion
from ..runs import (
    RunFolders,
    atomic_write,
    make_folder,
    plus_minus_cell,
    run_warnings,
)
from ..settings import setting, table_format
from ..types import Record

UNPARSED = "unparsed"
_SENTINEL = "<unparsed>"  # sklearn needs a predicted label; it matches no gold label
NO_DOMAIN = "(none)"

Row = dict[str, Any]
Replicate = tuple[str, int]  # checkpoint ("" for none), seed


def _pred(r: Record) -> str:
    return r.pred if r.pred is not None else _SENTINEL


def confusion_with_unparsed(records: Sequence[Record], labels: Sequence[str]) -> np.ndarray:
    """Counts, rows gold labels, columns ``labels`` then ``unparsed``.

    >>> r = lambda p, g: Record("t", p or "x", "m", 0, 0, ("a", "b"), (0, 0), (.5, .5), p, g)
    >>> confusion_with_unparsed([r("a", "a"), r(None, "b"), r("a", "b")], ["a", "b"]).tolist()
    [[1, 0, 0], [1, 0, 1]]
    """
    from sklearn.metrics import (  # heavy: loaded on first use
        confusion_matrix,
    )

    gold = [str(r.gold) for r in records]
    cm = confusion_matrix(gold, [_pred(r) for r in records], labels=[*labels, _SENTINEL])
    return np.asarray(cm[: len(labels)])


def score_metrics() -> list[Metric]:
    """The metrics of every sci-report table: those of the metric table
    (:data:`nlieval.metrics.METRICS`) computed from the gold and predicted labels alone
    (a generated answer has no log-likelihood), macro F1 first (SciNLI's headline).

    >>> [m.label for m in score_metrics()]
    ['macro F1', 'accuracy']
    """
    ms = [m for m in metrics(source="records") if m.corpus is not None]
    return sorted(ms, key=lambda m: m.name != "macro_f1")


def _table_order() -> list[Metric]:
    # score_metrics in the metric table's order, the order --json has always written.
    names = {m.name for m in score_metrics()}
    return [m for m in METRICS.values() if m.name in names]


def subset_scores(records: Sequence[Record]) -> dict[str, Any]:
    """The scores of a subset (a domain), :func:`score_metrics` in the metric table's
    order: its macro F1 (:func:`nlieval.metrics.macro_f1`) is over the gold labels
    present in it, n/a where it holds one class only (a class a domain lacks would
    otherwise count as F1 = 0)."""
    labels = records[0].labels
    return {
        "n": len(records),
        **{m.name: m.of(records, labels) for m in _table_order()},
        "n_unparsed": sum(r.pred is None for r in records),
    }


def _replicate(records: Sequence[Record]) -> dict[str, Any]:
    m = point_metrics(records)
    labels = m["labels"]
    out: dict[str, Any] = {
        "n": m["n"],
        **{s.name: m[s.name] for s in _table_order()},
        "per_class_f1": m["per_class_f1"],
        "n_unparsed": m["n_unparsed"],
        "confusion": confusion_with_unparsed(records, labels).tolist(),
        "domains": {},
    }
    by_domain: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_domain[str(r.meta.get("domain") or NO_DOMAIN)].append(r)
    if set(by_domain) != {NO_DOMAIN}:
        out["domains"] = {d: subset_scores(recs) for d, recs in sorted(by_domain.items())}
    return out


def iter_report_records(
    folders: Iterable[str | Path], held: Sequence[Sequence[Record]] | None = None
) -> Iterator[Record]:
    """Records of run folders: of ``nlieval run``, ``instruct`` and ``train`` (whose
    ``records.jsonl`` holds each seed's test records, so a trained classifier is reported
    without scoring the test set again). A train folder of an older version (per-seed
    ``test_records.jsonl``) is refused with a :class:`~nlieval.runs.RunError` saying
    what to do. Two folders of one model on the same task and k are two models, named
    by what differs in their ``config.json`` (:func:`nlieval.runs.read_named`), never
    one row over both folders' items. ``held``: each folder's records as already read.

    >>> list(iter_report_records([]))
    []
    """
    from ..runs import RunError, flat, read_named
    from .train import is_legacy_folder, legacy_message

    folders = list(folders)
    for folder in folders:
        if is_legacy_folder(folder):
            raise RunError(legacy_message(folder))
    yield from flat(read_named(folders, poolable=False, held=held))


def sci_rows(records: Iterable[Record], *, over_checkpoints: bool = False) -> list[Row]:
    """One row per (model, checkpoint, task, k), aggregating its runs.

    A run is a seed (instruct runs, few-shot draws, the training seeds of a ``nlieval
    train`` folder); with ``over_checkpoints`` the checkpoints of a model count as runs
    too (the ``seed*`` checkpoints that ``nlieval run --model <train folder>`` scores)
    and the row's checkpoint is None. Only items present in every run of a row
    enter it. Records without a gold label are left out.
    """
    groups: dict[tuple[str, str | None, str, int], dict[Replicate, list[Record]]]
    groups = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.gold is None:
            continue
        ckpt = None if over_checkpoints else r.checkpoint
        groups[(r.model, ckpt, r.task, r.k)][(r.checkpoint or "", r.seed)].append(r)
    rows = []
    for (model, ckpt, task, k), reps in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2], kv[0][3])
    ):
        common = set.intersection(*({r.item_id for r in recs} for recs in reps.values()))
        if not common:
            continue
        per_run = []
        for rep in sorted(reps):
            recs = sorted((r for r in reps[rep] if r.item_id in common), key=lambda r: r.item_id)
            per_run.append({"checkpoint": rep[0] or None, "seed": rep[1], **_replicate(recs)})
        labels = list(reps[next(iter(sorted(reps)))][0].labels)
        row: Row = {
            "model": model,
            "checkpoint": ckpt,
            "task": task,
            "k": k,
            "n": len(common),
            "runs": len(per_run),
            "labels": labels,
            "generated": any(r.answer is not None for recs in reps.values() for r in recs),
        }
        for name in (*(s.name for s in score_metrics()), "n_unparsed"):
            row[name], row[name + "_std"] = mean_std([p[name] for p in per_run])
        row["n_unparsed_total"] = sum(p["n_unparsed"] for p in per_run)
        row["per_class_f1"], row["per_class_f1_std"] = {}, {}
        for lab in labels:
            mean, std = mean_std([p["per_class_f1"][lab] for p in per_run])
            row["per_class_f1"][lab], row["per_class_f1_std"][lab] = mean, std
        row["confusion"] = np.sum([p["confusion"] for p in per_run], axis=0).tolist()
        row["confusion_columns"] = [*labels, UNPARSED]
        row["domains"] = _domains(per_run)
        row["per_run"] = per_run
        rows.append(row)
    return rows


def _domains(per_run: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    names = sorted({d for p in per_run for d in p["domains"]})
    out = {}
    for d in names:
        runs = [p["domains"][d] for p in per_run if d in p["domains"]]
        entry: dict[str, Any] = {"n": runs[0]["n"], "runs": len(runs)}
        for name in (*(s.name for s in score_metrics()), "n_unparsed"):
            entry[name], entry[name + "_std"] = mean_std([x[name] for x in runs])
        out[d] = entry
    return out


def task_of_rows(task: str, rows: Sequence[Row], flag: str = "--out-of-domain") -> str:
    """The task of ``rows`` that ``task`` names, as ``--task`` reads it: the name the
    records hold, or a task YAML or data file (``my_ood.yaml``), whose records hold the
    task's name (``name:``, else the file's stem), not the path. A task that no row
    holds is a ValueError naming the tasks there, never an empty table.

    >>> rows = [{"task": "scinli"}, {"task": "my_ood"}]
    >>> task_of_rows("scinli", rows)
    'scinli'
    >>> task_of_rows("snli", rows)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: --out-of-domain snli: no records of that task in ... (they hold my_ood, scinli)
    """
    held = sorted({str(r["task"]) for r in rows})
    if task in held:
        return task
    try:
        name = get_task(task).name
    except (DataError, OSError, ValueError):
        name = None  # not a task file either: said below, with the tasks there are
    if name in held:
        return str(name)
    also = "" if name is None or name == task else f" (a task named {name!r})"
    raise ValueError(
        f"{flag} {task}{also}: no records of that task in these folders "
        f"(they hold {', '.join(held)})"
    )


def shift_rows(rows: Sequence[Row], in_domain: str, out_of_domain: str) -> list[Row]:
    """In-domain and out-of-domain rows side by side, per (model, checkpoint, k).

    ``drop`` is in-domain minus out-of-domain macro F1. Points with only one of the two
    tasks are left out.
    """
    by_key: dict[tuple[str, str | None, int], dict[str, Row]] = defaultdict(dict)
    for r in rows:
        if r["task"] in (in_domain, out_of_domain):
            by_key[(r["model"], r["checkpoint"], r["k"])][r["task"]] = r
    out = []
    for (model, ckpt, k), pair in by_key.items():
        if in_domain in pair and out_of_domain in pair:
            a, b = pair[in_domain], pair[out_of_domain]
            out.append(
                {
                    "model": model,
                    "checkpoint": ckpt,
                    "k": k,
                    "in_domain": a,
                    "out_of_domain": b,
                    "drop": a["macro_f1"] - b["macro_f1"],
                }
            )
    return out


# --------------------------------------------------------------------------- text


def _name(row: Mapping[str, Any]) -> str:
    name = str(row["model"])
    return name + (f" @{row['checkpoint']}" if row.get("checkpoint") else "")


def _undefined(tables: Sequence[Table]) -> bool:
    # A metric undefined on the items (plus_minus's n/a): the note under the report says why.
    return any(c.text == "n/a" and c.value is None for t in tables for r in t.rows for c in r)


def format_rows(rows: Sequence[Row]) -> list[Block]:
    """The scores (:func:`score_metrics`, unparsed answers per run, per-class F1), one
    line per row, one table per label set.

    >>> format_rows([])
    ['(no labelled records)']
    """
    if not rows:
        return ["(no labelled records)"]
    scores = score_metrics()
    f1_digits = METRICS["macro_f1"].digits
    doc: list[Block] = []
    # One table per label set: its per-class columns differ.
    by_labels: dict[tuple[str, ...], list[Row]] = defaultdict(list)
    for r in rows:
        by_labels[tuple(r["labels"])].append(r)
    for labels, group in by_labels.items():
        head = ["model", "task", "k", "n", "runs", *(m.label for m in scores), "unparsed/run"]
        head += [f"F1 {lab}" for lab in labels]
        body = []
        for r in group:
            ns = r["runs"]
            body.append(
                [_name(r), r["task"], r["k"], r["n"], ns]
                + [plus_minus_cell(r[m.name], r[m.name + "_std"], ns, m.digits) for m in scores]
                + [plus_minus_cell(r["n_unparsed"], r["n_unparsed_std"], ns, 1)]
                + [
                    plus_minus_cell(
                        r["per_class_f1"][lab], r["per_class_f1_std"][lab], ns, f1_digits
                    )
                    for lab in labels
                ]
            )
        if doc:
            doc.append("")
        doc.append(Table.of(head, body))
    return doc


def format_domains(rows: Sequence[Row]) -> Table | None:
    """The scores per domain (:func:`score_metrics`, macro F1 over the classes present
    in the domain), one line per (row, domain); None when no item has a domain."""
    scores = score_metrics()
    body = []
    for r in rows:
        for d, e in r["domains"].items():
            body.append(
                [_name(r), r["task"], r["k"], d, e["n"]]
                + [
                    plus_minus_cell(e[m.name], e[m.name + "_std"], e["runs"], m.digits)
                    for m in scores
                ]
                + [plus_minus_cell(e["n_unparsed"], e["n_unparsed_std"], e["runs"], 1)]
            )
    if not body:
        return None
    head = ["model", "task", "k", "domain", "n", *(m.label for m in scores), "unparsed/run"]
    return Table.of(head, body)


def format_shift(pairs: Sequence[Row], in_domain: str, out_of_domain: str) -> Table | str:
    """The in-domain vs out-of-domain table: each score (:func:`score_metrics`) on both
    tasks, the drop in macro F1 after macro F1's pair; a line saying so when no model
    and k has both."""
    if not pairs:
        return f"(no model and k scored on both {in_domain} and {out_of_domain})"
    scores = score_metrics()
    head = ["model", "k", f"n {in_domain}", f"n {out_of_domain}"]
    for m in scores:
        head += [f"{m.label} {in_domain}", f"{m.label} {out_of_domain}"]
        head += ["drop"] if m.name == "macro_f1" else []
    body = []
    for p in pairs:
        a, b = p["in_domain"], p["out_of_domain"]
        line: list[Cell | str | int] = [_name(p), p["k"], a["n"], b["n"]]
        for m in scores:
            line += [
                plus_minus_cell(x[m.name], x[m.name + "_std"], x["runs"], m.digits) for x in (a, b)
            ]
            line += [Cell(f"{p['drop']:+.3f}", p["drop"])] if m.name == "macro_f1" else []
        body.append(line)
    return Table.of(head, body)


def _columns(row: Mapping[str, Any]) -> int:
    # The unparsed column is shown for generated answers, or whenever it is not empty.
    show = row["generated"] or row["n_unparsed_total"] > 0
    return len(row["labels"]) + (1 if show else 0)


#: The :attr:`~nlieval.ground.Table.kind` of a confusion matrix's table.
CONFUSION = "confusion"


def format_confusion(row: Row, counts: Sequence[Sequence[int]] | None = None) -> Table:
    """The confusion matrix of a row (counts summed over its runs; ``counts``, one run's
    matrix in its place) as a table of kind :data:`CONFUSION`, titled with its model,
    task, k and runs.

    Rows are gold labels, columns predictions.
    """
    ncol = _columns(row)
    head = ["gold \\ predicted", *row["confusion_columns"][:ncol]]
    body = [
        [lab, *counts[:ncol]]
        for lab, counts in zip(row["labels"], counts or row["confusion"], strict=True)
    ]
    runs = f"{row['runs']} runs summed" if row["runs"] > 1 else "1 run"
    title = f"Confusion, {_name(row)}, {row['task']}, k={row['k']} ({runs}):"
    return Table.of(head, body, title=[title, ""], kind=CONFUSION)


def format_report(
    rows: Sequence[Row], pairs: Sequence[Row] | None = None, shift: tuple[str, str] | None = None
) -> list[Block]:
    """Every section: scores, per domain, in- vs out-of-domain, confusion matrices; a
    report to render with :func:`nlieval.ground.render`."""
    doc = format_rows(rows)
    domains = format_domains(rows)
    if domains is not None:
        doc += ["", "Per domain (macro F1 over the classes present in the domain, n/a with one):",
                "", domains]  # fmt: skip
    if shift is not None:
        doc += ["", f"In-domain ({shift[0]}) vs out-of-domain ({shift[1]}):", ""]
        doc.append(format_shift(pairs or [], *shift))
    for r in rows:
        doc += ["", format_confusion(r)]
    if _undefined([b for b in doc if isinstance(b, Table)]):
        doc += ["", UNDEFINED_NOTE]
    return doc


# --------------------------------------------------------------------------- plots


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def confusion_png_name(row: Mapping[str, Any], fmt: str = "png") -> str:
    """``confusion_<model>[_<checkpoint>]_<task>_k<k>.<fmt>`` (model by its last path
    part).

    >>> confusion_png_name({"model": "runs/train/seed0", "checkpoint": None,
    ...                     "task": "scinli", "k": 0})
    'confusion_seed0_scinli_k0.png'
    """
    parts = [Path(str(row["model"])).name or str(row["model"])]
    if row.get("checkpoint"):
        parts.append(Path(str(row["checkpoint"])).name)
    parts += [str(row["task"]), f"k{row['k']}"]
    return "confusion_" + "_".join(_slug(p) for p in parts) + f".{fmt}"


def plot_confusions(
    rows: Sequence[Row], folder: str | Path, fmt: str = "png", width: float | None = None
) -> list[Path]:
    """One confusion figure per row in ``folder`` (``fmt``: png, pdf or svg; ``width``
    inches wide, the text width if None); returns the paths."""
    return [
        plot_confusion(r, Path(folder) / confusion_png_name(r, fmt), _columns(r), width=width)
        for r in rows
    ]


@dataclass(frozen=True)
class SciReportConfig(RunFolders, FigureWidth):
    """What ``nlieval sci-report`` is asked (see :func:`sci_report`).

    >>> SciReportConfig(runs=("runs/a",), in_domain="scinli")
    Traceback (most recent call last):
    ValueError: --in-domain and --out-of-domain go together
    """

    in_domain: str | None = setting(
        None, help="task to compare with --out-of-domain (a name, or a task YAML as --task)"
    )
    out_of_domain: str | None = setting(
        None, help="task to compare with --in-domain (a name, or a task YAML as --task)"
    )
    plot_dir: str | None = setting(None, help="write one confusion-matrix figure per row here")
    plot_format: str = setting(
        "png", help="format of the --plot-dir figures", choices=("png", "pdf", "svg")
    )
    json: str | None = setting(None, help="write every number to this JSON file")
    over_checkpoints: bool = setting(
        False,
        help="count a model's checkpoints as runs (the seed checkpoints that "
        "`nlieval run --model <train folder>` scores)",
    )
    format: str = table_format()

    def __post_init__(self) -> None:
        if (self.in_domain is None) != (self.out_of_domain is None):
            raise ValueError("--in-domain and --out-of-domain go together")


def sci_report(config: SciReportConfig) -> dict[str, Any] | None:
    """What ``nlieval sci-report`` does: the report of the folders' labelled records
    (``text``), the confusion PNGs written to ``plot_dir`` (``plots``) and the JSON file
    of every number (``json``, when asked); None when no folder has labelled records.

    >>> import tempfile  # a run folder without records
    >>> folder = Path(tempfile.mkdtemp()); _ = (folder / "config.json").write_text("{}")
    >>> _ = (folder / "records.jsonl").write_text("")
    >>> print(sci_report(SciReportConfig(runs=(str(folder),))))
    None
    """
    rows = sci_rows(iter_report_records(config.runs), over_checkpoints=config.over_checkpoints)
    if not rows:
        return None
    shift = None
    if config.in_domain and config.out_of_domain:
        # The flags take what --task takes; the records hold the task's name.
        shift = (
            task_of_rows(config.in_domain, rows, "--in-domain"),
            task_of_rows(config.out_of_domain, rows, "--out-of-domain"),
        )
    pairs = shift_rows(rows, *shift) if shift else None
    report = format_report(rows, pairs, shift)
    # What a run recorded of its items (--limit took the first N, of one label).
    report += [x for line in run_warnings(config.runs) for x in ("", line)]
    text = render(report, config.format)
    out: dict[str, Any] = {"text": text, "plots": [], "json": None}
    if config.plot_dir:
        out["plots"] = plot_confusions(rows, config.plot_dir, config.plot_format, config.inches)
    if config.json:
        path = Path(config.json)
        make_folder(path.parent)  # the folder the user named (it may be a link)
        payload = {"rows": rows, "in_vs_out_of_domain": pairs}
        text = json.dumps(payload, indent=2, allow_nan=True) + "\n"
        atomic_write(path, text, root=path.parent)
        out["json"] = path
    return out
