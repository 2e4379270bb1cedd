"""The pages of ``nlieval view`` for scientific-NLI and meta-inference folders: the
confusion matrices of ``nlieval sci-report``, and the inferred items of ``nlieval infer
build`` with their input items, the labels each reading allows, and the consistency
report of ``nlieval infer report``.

The numbers are those commands' own: :func:`nlieval.sci.sci_rows` and
:func:`nlieval.sci.format_report` for the confusion page, and
:func:`nlieval.metainference.inferred_consistency` and
:func:`nlieval.metainference.conclude` for the meta-inference page. Their tables come
as values (:func:`nlieval.ground.blocks_json`: the texts the command prints and the
numbers behind them), so the page shows exactly the text the command prints, reads
no number back from it, and names the command that prints it.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..commands import command_line
from ..data import get_task
from ..ground import DataError, blocks_json
from ..metainference import InferReportConfig, inferred, inferred_consistency, logic
from ..reports import listing_inputs
from ..runs import RunFolder
from ..sci import CONFUSION, format_confusion, format_report, iter_report_records, sci_rows
from ..types import SCI4, Item, Record

#: Folders of these commands are scientific NLI whatever their task.
SCI_KINDS = frozenset({"instruct", "train"})


def _config(folder: str | Path) -> dict[str, Any]:
    return RunFolder(folder).read_config() or {}


def _task_specs(cfg: dict[str, Any]) -> list[str]:
    # A run names its tasks; a folder of `nlieval import` its one task.
    specs = cfg.get("tasks") or ([cfg["task"]] if isinstance(cfg.get("task"), str) else [])
    return [str(s) for s in specs]


def _is_train_folder(path: str) -> bool:
    # `nlieval run --model <train folder>` (or one of its seed folders): a fine-tuned
    # classifier, scored as sci-report scores it.
    p = Path(path)
    for folder in (p, p.parent):
        try:
            if folder.is_dir() and _config(folder).get("kind") == "train":
                return True
        except (OSError, ValueError):
            continue  # not a readable run folder: no classifier to name
    return False


def is_sci_folder(folder: str | Path) -> bool:
    """Whether the confusion page shows ``folder``: a folder of ``nlieval instruct`` or
    ``nlieval train``, a run of a ``train`` output (a fine-tuned classifier), or a run
    or import on a task whose labels are the four SciNLI classes.

    >>> _ = (Path(run_dir) / "config.json").write_text('{"kind": "instruct"}')
    >>> is_sci_folder(run_dir)
    True
    >>> _ = (Path(run_dir) / "config.json").write_text('{"kind": "run", "tasks": ["snli"]}')
    >>> is_sci_folder(run_dir)
    False
    """
    cfg = _config(folder)
    if cfg.get("kind") in SCI_KINDS:
        return True
    if isinstance(cfg.get("model"), str) and _is_train_folder(cfg["model"]):
        return True
    for spec in _task_specs(cfg):
        try:
            # The four classes in any order (MisMatched's task file has its own).
            if set(get_task(spec).labels) == set(SCI4):
                return True
        except (DataError, OSError, ValueError):
            continue  # a task file that is gone: the other pages say so
    return False


def sci_page(
    folders: Sequence[str], held: Sequence[Sequence[Record]] | None = None
) -> dict[str, Any] | None:
    """The confusion page: the scientific-NLI folders among ``folders``
    (:func:`is_sci_folder`), the command ``nlieval sci-report`` over them, and its
    report (:func:`nlieval.sci.format_report` of :func:`nlieval.sci.sci_rows`) as
    :func:`nlieval.ground.blocks_json`: the scores, per domain, and one confusion matrix
    per model, task and k (counts, gold rows, predicted columns, summed over the runs;
    its table's ``kind`` is :data:`nlieval.sci.CONFUSION`), each with its runs' own
    matrices (``runs``, as ``sci-report --json`` gives them, as blocks too) when it has
    several. None when no folder is one. ``held``: the records of each of ``folders`` as
    already read (else read here).

    >>> sci_page([]) is None
    True
    """
    at = [i for i, f in enumerate(folders) if is_sci_folder(f)]
    sci = [folders[i] for i in at]
    own = None if held is None else [held[i] for i in at]
    rows = sci_rows(iter_report_records(sci, held=own)) if sci else []
    if not rows:
        return None
    blocks = blocks_json(format_report(rows))
    confusions = [b for b in blocks if b.get("kind") == CONFUSION]
    for block, row in zip(confusions, rows, strict=True):
        block["runs"] = [] if row["runs"] < 2 else [
            {"title": ("checkpoint " + run["checkpoint"] + ", " if run["checkpoint"] else "")
                      + f"seed {run['seed']}",
             "rows": table.texts(), "values": [[c.value for c in r] for r in table.rows]}
            for run in row["per_run"]
            for table in [format_confusion(row, run["confusion"])]
        ]  # fmt: skip
    return {
        "folders": list(sci),
        "command": shlex.join([*command_line("sci-report"), *sci]),
        "blocks": blocks,
    }


def _inferred_items(folder: str) -> list[tuple[Path, tuple[Item, ...]]]:
    # The folders of `infer build` among the tasks the run's config names, with their
    # items: a task.yaml beside items.jsonl (as infer build writes them) whose every
    # item holds its provenance (another task's files may have those names too).
    out = []
    for spec in _task_specs(_config(folder)):
        p = Path(spec)
        if p.name == inferred.TASK_FILE and (p.parent / inferred.ITEMS_FILE).is_file():
            items = inferred.read_task(p.parent)
            if items and all(it.meta.get("pattern") in inferred.PATTERNS for it in items):
                out.append((p.parent, items))
    return out


def _point(r: Record) -> str:
    where = r.model + (f" @ {r.checkpoint}" if r.checkpoint else "")
    return f"{where}, k={r.k}, seed={r.seed}"


def _source_run(
    items: Sequence[Item],
    folders: Sequence[str],
    held: Sequence[Sequence[Record]],
    models: set[tuple[str, str | None]],
) -> str | None:
    # The folder whose records hold the most source items under the run's models (the
    # `--source-run` the report is given); none when no folder holds one.
    best, found = 0, None
    for folder, records in zip(folders, held, strict=True):
        matched, _needed = inferred.source_coverage(items, records, models)
        if matched > best:
            best, found = matched, folder
    return found


def infer_page(
    folders: Sequence[str],
    data_dir: str | Path | None = None,
    held: Sequence[Sequence[Record]] | None = None,
) -> list[dict[str, Any]]:
    """The meta-inference page: one entry per run folder among ``folders`` made on the
    items of ``nlieval infer build`` (a run or import whose task is such a folder's
    ``task.yaml``). Each holds the command ``nlieval infer report RUN --items DIR
    [--source-run SRC]`` (SRC: the folder of ``folders`` whose records hold the most
    source items under the run's models), its report
    (:func:`nlieval.metainference.inferred_consistency`) as
    :func:`nlieval.ground.blocks_json`,
    and every inferred item: its text, pattern, input labels and target pair, its input
    items (id, label, and their text where a folder's task holds them), the labels each
    reading allows (:func:`nlieval.metainference.conclude`) and each sweep point's
    prediction with the readings it is consistent with. ``held``: the records of each of
    ``folders`` as already read (else read here).

    >>> infer_page([])
    []
    """
    pages = []
    if held is None and any(_inferred_items(f) for f in folders):
        held = [RunFolder(f).records() for f in folders]
    for folder, own in zip(folders, held or [()] * len(folders), strict=True):
        for items_dir, items in _inferred_items(folder):
            for it in items:  # before any report reads them: one line naming the file
                try:
                    inferred.check_item(it)
                except ValueError as err:
                    raise ValueError(f"{items_dir / inferred.ITEMS_FILE}: {err}") from None
            ids = {i.id for i in items}
            records = [r for r in own if r.item_id in ids]
            models = {(r.model, r.checkpoint) for r in records}
            source = _source_run(items, folders, held or [], models)
            cfg = InferReportConfig(run=folder, items=str(items_dir), source_run=source)
            got = inferred_consistency(cfg)
            readings = list(got["readings"].values())
            command = [*command_line("infer-report"), folder, "--items", str(items_dir)]
            command += ["--source-run", source] if source else []
            own_source = [held[folders.index(source)]] if source and held else None
            texts = (
                listing_inputs([source], data_dir=data_dir, held=own_source)[1] if source else {}
            )
            pages.append({
                "folder": folder, "items_folder": str(items_dir), "source_run": source,
                "command": shlex.join(command), "coverage": got["coverage"],
                "readings": [r.name for r in readings],
                "blocks": blocks_json(inferred.report_document(got["rows"], readings)),
                "items": _items(items_dir, items, records, readings, texts),
            })  # fmt: skip
    return pages


def _items(
    items_dir: Path,
    items: Sequence[Item],
    records: Sequence[Record],
    readings: Sequence[Any],
    texts: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    by_id: dict[str, Any] = {}
    for task_items in texts.values():
        by_id.update(task_items)
    preds: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        preds[r.item_id].append(r)
    decided: dict[tuple[str, str, str], Any] = {}
    out = []
    for it in items:
        meta = it.meta
        found = {}
        for reading in readings:
            key = (meta["input"], meta["target"], reading.name)
            if key not in decided:
                try:
                    decided[key] = logic.conclude(meta["input"], meta["target"], reading)
                except ValueError as err:  # an edited items file: one line naming it
                    where = items_dir / inferred.ITEMS_FILE
                    raise ValueError(f"{where}: inferred item {it.id}: {err}") from None
            found[reading.name] = decided[key]
        sources = []
        for n, sid in enumerate(meta.get("sources") or []):
            labels = meta.get("source_labels") or []
            src = by_id.get(sid)
            sources.append({"id": sid, "label": labels[n] if n < len(labels) else None,
                            "premise": src.premise if src else None,
                            "hypothesis": src.hypothesis if src else None})  # fmt: skip
        out.append({
            "id": it.id, "premise": it.premise, "hypothesis": it.hypothesis,
            "pattern": meta["pattern"], "input": meta["input"], "target": meta["target"],
            "sources": sources,
            "readings": {name: {"inferred": c.inferred, "allowed": list(c.allowed)}
                         for name, c in found.items()},
            "predictions": [
                {"point": _point(r), "pred": r.pred,
                 **_verdicts(inferred.pred_letter(r.pred), found)}
                for r in sorted(preds[it.id], key=lambda r: (r.model, r.checkpoint or "",
                                                             r.k, r.seed))
            ],
        })  # fmt: skip
    return out


def _verdicts(letter: str | None, found: dict[str, Any]) -> dict[str, list[str]]:
    # As the report counts an answer: consistent with a reading when among its allowed
    # labels; under a reading whose inputs cannot hold (vacuous), neither.
    live = [name for name, c in found.items() if c.inferred != "vacuous"]
    return {
        "consistent": [name for name in live if letter in found[name].allowed],
        "inconsistent": [name for name in live if letter not in found[name].allowed],
    }
