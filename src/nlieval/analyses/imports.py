"""Import prediction files of models made elsewhere into a run folder.

The predictions (:mod:`nlieval.analyses.predictions`: Baan et al. 2022, the official
ChaosNLI format, a plain jsonl of distributions, a file of labels, the HANS prediction
files) are matched by id to the items of a task and written as records (one per matched
item, ``k`` 0, the file's seed) through the resumable loop of every command, so that
``grid``, ``compare``, ``items``, ``figure``, ``nlieval chaosnli`` and ``nlieval plots``
show them beside the models nlieval ran. Ids of a file that the task lacks, and items of
the task the file gives nothing for, are counted and the first ones named; a label the
file gives for an item (Baan's ``true``) is compared with the task's gold label, which
checks the file's label order.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from ..backends import model_setting
from ..data import (
    Dataset,
    data_dir_setting,
    get_task,
    load_task,
    split_setting,
    task_at,
    task_setting,
)
from ..ground import Cell, Document, FolderError, Table
from ..metrics import summarize
from ..runs import RunFolder, Step, execute, finalize, metrics_table
from ..settings import setting
from ..types import Item, Label, Record
from . import chaosnli, predictions
from .predictions import Prediction, PredictionSet

CHAOSNLI_TASKS = ("chaosnli_snli", "chaosnli_mnli", "chaosnli_alphanli")


def label_order(text: str) -> tuple[str, ...] | None:
    """``--label-order``: the comma-separated names as given (none: the task's order).

    >>> label_order("e,c,n"), label_order("")
    (('e', 'c', 'n'), None)
    """
    return tuple(text.split(",")) if text else None


@dataclass(frozen=True)
class ImportConfig:
    """What ``nlieval import`` (``chaosnli-import``) was asked to do. ``format`` "auto"
    picks each file's format from its name
    (:func:`~nlieval.analyses.predictions.detect_format`);
    ``task``, ``model`` and ``seed`` override what a file name says (Baan et al.) and are
    needed for files that say nothing (the records of a task YAML carry the name it
    declares, as a run's do); ``label_order`` is the order of a jsonl file's
    probabilities (default: the task's, [e, n, c] or [1, 2]). A folder may take more
    files later (same kind); records already there are not written again. Two files that
    give one item under one model, task and seed, or a file that gives an item another
    prediction than the folder holds, are refused before anything is written: only one
    record could be kept.

    >>> ImportConfig(("a.jsonl",), task="chaosnli_snli", model="m").to_dict()["kind"]
    'import'
    """

    files: tuple[str, ...] = setting(
        help="prediction files (.json, .jsonl, .csv, .tsv, .txt, .gz)", positional=True, nargs="+"
    )
    format: str = setting(
        "auto",
        help="file format [auto: Baan et al. file names, .json official ChaosNLI, "
        ".csv/.tsv labels, HANS *preds*.txt hans, else jsonl]",
        choices=("auto", *predictions.FORMATS),
    )
    task: str | None = task_setting(
        default=None,
        help="the task the predictions are for, NAME[@SPLIT] (needed unless the file names say it)",
    )
    model: str | None = model_setting("model name (needed for jsonl)", label=True)
    seed: int | None = setting(None, help="seed to record [file name, or 0]")
    label_order: tuple[str, ...] | None = setting(
        None,
        help="order of a jsonl file's probabilities, e.g. e,c,n [the task's: e,n,c or 1,2]",
        parse=label_order,
    )
    # Declared here, not by the data folder mixin: the field order is config.json's.
    data_dir: str | None = data_dir_setting()
    split: str | None = split_setting()
    #: The tasks of the folder's records as given (a name or a task YAML's path), which
    #: :func:`import_predictions` writes into ``config.json`` so that ``items`` and
    #: ``view`` join their texts (not a flag: the files or ``--task`` say them).
    tasks: tuple[str, ...] = field(default=())

    KIND: ClassVar[str] = "import"
    IDENTITY: ClassVar[tuple[str, ...]] = ("kind",)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND, **asdict(self)}


def read_predictions(
    path: str | Path, config: ImportConfig, labels_of: Callable[[str], Sequence[str]]
) -> list[PredictionSet]:
    """The prediction sets of one file, with the config's overrides applied.

    >>> path = Path(run_dir) / "MNLI_dev_roberta-base_2.jsonl"  # Baan et al.: named by its name
    >>> _ = path.write_text('{"uid": "u1", "probs": [0.5, 0.3, 0.2], "pred": 0}\\n')
    >>> [s] = read_predictions(path, ImportConfig((), seed=7), lambda task: ())
    >>> s.task, s.model, s.seed  # the config's seed overrides the file name's
    ('chaosnli_mnli', 'roberta-base (Baan 2022)', 7)
    """
    fmt = predictions.detect_format(path) if config.format == "auto" else config.format
    if fmt not in predictions.FORMATS:
        raise ValueError(f"{path}: unknown format {fmt!r} (one of {list(predictions.FORMATS)})")
    if fmt == "baan2022":
        found = predictions.read_baan2022(path)
        sets = [found]
    else:
        if config.task is None:
            raise ValueError(f"{path}: a {fmt} file does not name its task; give --task")
        labels = labels_of(config.task)
        if fmt in ("labels", "hans"):
            if config.model is None:
                raise ValueError(f"{path}: a {fmt} file does not name its model; give --model")
            sets = [predictions.read_labels(path, labels, model=config.model, hans=fmt == "hans")]
        elif fmt == "chaosnli":
            sets = predictions.read_official(path, labels, config.task)
        else:
            if config.model is None:
                raise ValueError(f"{path}: a jsonl file does not name its model; give --model")
            order = _label_order(config.label_order, labels, path)
            sets = [predictions.read_jsonl(path, labels, model=config.model, file_order=order)]
    out = []
    for s in sets:
        task = config.task or s.task
        model = config.model or (f"{s.model} (Baan 2022)" if fmt == "baan2022" else s.model)
        seed = s.seed if config.seed is None else config.seed
        out.append(PredictionSet(s.path, s.format, model, seed, task, s.predictions))
    return out


def _split_of(config: ImportConfig) -> ImportConfig:
    """``config`` with a ``--task NAME@SPLIT`` read as ``--task NAME --split SPLIT``
    (:func:`nlieval.data.task_at`); two different splits are refused.

    >>> c = _split_of(ImportConfig((), task="snli@test")); c.task, c.split
    ('snli', 'test')
    >>> _split_of(ImportConfig((), task="snli@test", split="dev"))
    Traceback (most recent call last):
    ValueError: --task snli@test and --split dev name two splits; give one
    """
    if config.task is None:
        return config
    name, split = task_at(config.task)
    if split is not None and config.split not in (None, split):
        raise ValueError(
            f"--task {config.task} and --split {config.split} name two splits; give one"
        )
    return replace(config, task=name, split=split or config.split)


def _label_order(
    order: Sequence[str] | None, labels: Sequence[str], path: str | Path
) -> list[str] | None:
    if not order:
        return None
    try:
        parsed = [Label.parse(x).value for x in order]
    except ValueError as err:
        raise ValueError(f"{path}: --label-order: {err}") from None
    if sorted(parsed) != sorted(labels):
        raise ValueError(f"{path}: --label-order {list(order)} is not an order of {list(labels)}")
    return parsed


@dataclass(frozen=True)
class _Planned:
    pset: PredictionSet
    matched: tuple[tuple[Prediction, Item], ...]
    unmatched: int
    gold_checked: int
    gold_agree: int
    #: The first ids of the file that the task lacks, and the first items of the task
    #: the file gives no prediction for (their count is ``missing``).
    unmatched_ids: tuple[str, ...] = ()
    missing: int = 0
    missing_ids: tuple[str, ...] = ()


#: How many ids a listing of unmatched or missing ones names.
SHOWN_IDS = 3


def _plan(sets: Sequence[PredictionSet], datasets: Mapping[str, Dataset]) -> list[_Planned]:
    planned = []
    for s in sets:
        if s.task is None or s.task not in datasets:
            raise ValueError(f"{s.path}: no task for these predictions; give --task")
        by_id = {it.id: it for it in datasets[s.task].items}
        matched = tuple((p, by_id[p.item_id]) for p in s.predictions if p.item_id in by_id)
        with_gold = [(p, it) for p, it in matched if p.gold is not None and it.label is not None]
        agree = sum(1 for p, it in with_gold if it.label is not None and p.gold == it.label.value)
        if not matched:
            ids = ", ".join(p.item_id for p in s.predictions[:SHOWN_IDS])
            ds = datasets[s.task]
            raise ValueError(
                f"{s.path}: none of its {len(s.predictions)} ids (first: {ids}) names an item "
                f"of {s.task}, split {ds.split} (its ids: "
                f"{', '.join(list(by_id)[:SHOWN_IDS])}, ...): the file was made for another "
                "split (give --split, or --task NAME@SPLIT) or another copy of the task"
            )
        given = {p.item_id for p in s.predictions}
        unmatched = [p.item_id for p in s.predictions if p.item_id not in by_id]
        missing = [i for i in by_id if i not in given]
        planned.append(
            _Planned(
                s,
                matched,
                len(unmatched),
                len(with_gold),
                agree,
                tuple(unmatched[:SHOWN_IDS]),
                len(missing),
                tuple(missing[:SHOWN_IDS]),
            )
        )
    return planned


def _record(p: Prediction, item: Item, s: PredictionSet, labels: Sequence[str]) -> Record:
    return Record(
        task=str(s.task),
        item_id=item.id,
        model=s.model,
        k=0,
        seed=s.seed,
        labels=tuple(labels),
        loglik=predictions.log_probs(p.probs),
        probs=tuple(p.probs),
        pred=predictions.predicted_label(p, labels),
        gold=item.label.value if item.label is not None else None,
        meta={
            **dict(item.meta),
            "imported_from": p.where,
            "format": s.format,
            **({"label_only": True} if p.label_only else {}),
        },
    )


@dataclass(frozen=True)
class ImportedFile:
    """What one prediction set of an import gave: its ``rows``, the items ``matched`` by
    id (of the task's ``task_items``), the ids the task lacks (``unmatched``, the first
    named in ``unmatched_ids``), the items it gives nothing for (``missing``,
    ``missing_ids``) and the label check (``gold_agree`` of ``gold_checked``)."""

    file: str
    format: str
    model: str
    seed: int
    task: str
    rows: int
    matched: int
    unmatched: int
    unmatched_ids: tuple[str, ...]
    missing: int
    missing_ids: tuple[str, ...]
    task_items: int
    gold_checked: int
    gold_agree: int


@dataclass(frozen=True)
class ImportResult:
    """What :func:`import_predictions` returns: ``files`` (one per prediction set),
    ``scores`` (:func:`~nlieval.analyses.chaosnli.score_records` of the folder's records
    of ChaosNLI sets) and ``rows`` (:func:`~nlieval.metrics.summarize` of its records of
    other tasks)."""

    files: tuple[ImportedFile, ...]
    scores: Sequence[Mapping[str, Any]]
    rows: Sequence[Mapping[str, Any]]


def import_predictions(
    config: ImportConfig,
    out_dir: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = False,
) -> ImportResult:
    """Read every file of ``config`` (all files are read and checked before anything is
    written), write the matched predictions as records of the run folder ``out_dir``
    (resumable: records already there are skipped) and return an :class:`ImportResult`:
    per prediction set its counts (:class:`ImportedFile`), and the scores of the folder.

    >>> import json  # a ChaosNLI set of one item, and predictions for it and for another
    >>> _ = (Path(run_dir) / "chaosNLI_snli.jsonl").write_text(json.dumps({"uid": "u1",
    ...     "example": {"premise": "A man naps.", "hypothesis": "He sleeps."},
    ...     "label_count": [50, 50, 0], "majority_label": "e", "old_label": "n", "entropy": 1.0}))
    >>> _ = (Path(run_dir) / "p.jsonl").write_text('{"id": "u1", "probs": [0.2, 0.8, 0]}\\n'
    ...                                            '{"id": "u9", "probs": [1, 0, 0]}\\n')
    >>> cfg = ImportConfig((f"{run_dir}/p.jsonl",), task="chaosnli_snli", model="bert",
    ...                    data_dir=run_dir)
    >>> out = import_predictions(cfg, f"{run_dir}/run")
    >>> f = out.files[0]
    >>> f.matched, f.unmatched_ids, out.scores[0]["acc_original"]
    (1, ('u9',), 1.0)
    """
    config = _split_of(config)
    datasets: dict[str, Dataset] = {}

    def dataset(task: str) -> Dataset:
        if task not in datasets:
            datasets[task] = load_task(task, config.data_dir, config.split)
        return datasets[task]

    def labels_of(task: str) -> list[str]:
        return [lab.value for lab in dataset(task).labels]

    given: dict[str, str] = {}
    for f in config.files:
        other = given.setdefault(os.path.realpath(f), str(f))
        if other != str(f) or list(config.files).count(f) > 1:
            raise ValueError(f"{f}: given twice (as {other} too); give each file once")
    read = [s for f in config.files for s in read_predictions(f, config, labels_of)]
    # Records carry the name the task declares, as a run's do (a task YAML given by its
    # path is named by its ``name``): a folder named by the path would sit in another
    # column of grid than a run of the same task, and pair with it only where the path
    # still resolves from the current directory.
    sets = []
    for s in read:
        ds = dataset(str(s.task))
        datasets.setdefault(ds.task, ds)
        sets.append(replace(s, task=ds.task))
    planned = _plan(sets, datasets)
    _refuse_clashes(planned)
    folder = RunFolder(out_dir)
    old = folder.read_config() or {}
    kept = old.get("tasks") if not overwrite and old.get("kind") == config.KIND else None
    if isinstance(kept, list):
        _refuse_other_split(out_dir, old.get("split"), config.split, map(str, kept))
    specs = [*(kept if isinstance(kept, list) else []), *(str(s.task) for s in read)]
    config = replace(config, tasks=tuple(dict.fromkeys(map(str, specs))))
    if not overwrite and old.get("kind") == config.KIND:
        # Only a saved record equal to the one a file gives counts as done: another
        # prediction already there for the item would hide this one without a word.
        # Checked before the folder is started, which rewrites its config.json (a
        # folder of another command is refused there).
        saved = {r.key: r for r in folder.iter_records()}
        _refuse_path_named(out_dir, saved.values(), read, sets)
        for pl in planned:
            _refuse_saved(pl, saved, labels_of(str(pl.pset.task)))
    steps = [
        Step(
            f"{pl.pset.path}|{pl.pset.model}|{pl.pset.seed}",
            f"{Path(pl.pset.path).name} {pl.pset.model}",
            list(pl.matched),
            point=pl.pset,
            done_key=functools.partial(_record_key, pl.pset),
        )
        for pl in planned
    ]

    def work(
        _: None, step: Step[tuple[Prediction, Item]], chunk: Sequence[Any], __: Any
    ) -> list[Record]:
        s: PredictionSet = step.point
        labels = labels_of(str(s.task))
        return [_record(p, it, s, labels) for p, it in chunk]

    elapsed = execute(
        folder,
        config,
        steps,
        lambda _: None,
        work,
        overwrite=overwrite,
        progress=progress,
        chunk_size=1024,
    )
    summary = {
        **config.to_dict(),
        "model": ", ".join(dict.fromkeys(s.model for s in sets)),
        "tasks": sorted({str(s.task) for s in sets}),
        "shots": [0],
        "seeds": sorted({s.seed for s in sets}),
    }
    finalize(folder, summary, elapsed)
    files = tuple(
        ImportedFile(
            file=pl.pset.path,
            format=pl.pset.format,
            model=pl.pset.model,
            seed=pl.pset.seed,
            task=str(pl.pset.task),
            rows=len(pl.pset.predictions),
            matched=len(pl.matched),
            unmatched=pl.unmatched,
            unmatched_ids=pl.unmatched_ids,
            missing=pl.missing,
            missing_ids=pl.missing_ids,
            task_items=len(datasets[str(pl.pset.task)]),
            gold_checked=pl.gold_checked,
            gold_agree=pl.gold_agree,
        )
        for pl in planned
    )
    records = list(folder.iter_records())
    chaos = [r for r in records if r.task in CHAOSNLI_TASKS]
    others = [r for r in records if r.task not in CHAOSNLI_TASKS]
    return ImportResult(
        files=files,
        scores=chaosnli.score_records(chaos) if chaos else [],
        rows=summarize(others),
    )


def _record_key(s: PredictionSet, pair: tuple[Prediction, Item]) -> Any:
    return Record.key_of(s.model, None, str(s.task), 0, s.seed, pair[1].id)


def _refuse_other_split(
    out_dir: str | Path, held: str | None, given: str | None, tasks: Iterable[str]
) -> None:
    """Refuse (:class:`~nlieval.ground.FolderError`, one line, its advice in flags) an
    import whose split differs from the one a
    task the folder already holds was read from. ``config.json`` keeps one ``split`` for
    all the folder's records (``items`` and ``view`` read their texts from it), and the
    records of two splits under one model, task and seed would be pooled into one point
    without a word. ``None`` is the task's default split.

    >>> _refuse_other_split("run", "dev", "test", ["snli"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: run: holds snli split dev (an earlier import), not ...
    >>> _refuse_other_split("run", None, "dev", ["snli"])  # snli's default split is dev
    """
    if held == given:
        return
    for task in tasks:
        try:
            default = get_task(task).default_split
        except (KeyError, ValueError, OSError):
            default = None  # a task that no longer resolves: its split as written
        was, now = held or default, given or default
        if was != now:
            raise FolderError(
                f"{out_dir}: holds {task} split {was or 'default'} (an earlier import), not "
                f"split {now or 'default'}: a folder holds one split",
                advice="import into another --out, or pass --overwrite to replace what it holds",
            )


def _refuse_clashes(planned: Sequence[_Planned]) -> None:
    """Refuse (``ValueError`` naming both files) two prediction sets that give the same
    item under one model, task and seed: one record per item and sweep point is kept, so
    all but the first would be dropped without a word.

    >>> p = Prediction("u1", (1.0, 0.0, 0.0), None, "a.jsonl:1")
    >>> it = Item("u1", "P.", "H.", Label.ENTAILMENT)
    >>> def planned(path):
    ...     return _Planned(PredictionSet(path, "jsonl", "m", 0, "chaosnli_snli", (p,)),
    ...                     ((p, it),), 0, 0, 0)
    >>> _refuse_clashes([planned("a.jsonl"), planned("b.jsonl")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: b.jsonl: 1 prediction(s) for items a.jsonl also gives, ... first: id 'u1'): ...
    """
    first: dict[Any, str] = {}
    for pl in planned:
        s = pl.pset
        keys = [(_record_key(s, pair), pair[1].id) for pair in pl.matched]
        clash = [(first[key], item_id) for key, item_id in keys if key in first]
        if clash:
            other, item_id = clash[0]
            whose = "another model of this file" if other == s.path else other
            raise ValueError(
                f"{s.path}: {len(clash)} prediction(s) for items {whose} also gives, under "
                f"the same model, task and seed ({s.model!r}, {s.task}, seed {s.seed}; first: "
                f"id {item_id!r}): only one could be kept; give each file its own --model "
                "or --seed, or import them into separate folders"
            )
        first.update((key, s.path) for key, _ in keys)


def _refuse_path_named(
    out_dir: str | Path,
    saved: Iterable[Record],
    read: Sequence[PredictionSet],
    named: Sequence[PredictionSet],
) -> None:
    """Refuse to add to a folder whose records name a task YAML by the path it was given
    (as imports did before they took its declared name): the new records, under the name,
    would sit beside the old ones as another task (a
    :class:`~nlieval.ground.FolderError`, its advice in flags).

    >>> s = PredictionSet("p.csv", "labels", "m", 0, "t/task.yaml", ())
    >>> old = Record("t/task.yaml", "1", "m", 0, 0, ("a",), (0.0,), (1.0,), "a", None)
    >>> _refuse_path_named("run", [old], [s], [replace(s, task="t")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: run: its records name the task by the path t/task.yaml ...
    """
    renamed = {str(a.task): str(b.task) for a, b in zip(read, named, strict=True)}
    for r in saved:
        if renamed.get(r.task, r.task) != r.task:
            raise FolderError(
                f"{out_dir}: its records name the task by the path {r.task} (an earlier "
                f"import); new ones take the name it declares ({renamed[r.task]})",
                advice="import into a new folder, or pass --overwrite",
            )


def _refuse_saved(pl: _Planned, saved: Mapping[Any, Record], labels: Sequence[str]) -> None:
    """Refuse a prediction set whose items the folder already holds under its model, task
    and seed with other predictions (imported earlier from another file, or from this
    file before it was changed): a :class:`~nlieval.ground.FolderError`, its advice in
    flags."""
    s = pl.pset
    for pair in pl.matched:
        old = saved.get(_record_key(s, pair))
        if old is None:
            continue
        new = _record(*pair, s, labels)
        if (old.probs, old.pred) != (new.probs, new.pred):
            source = old.meta.get("imported_from", "an earlier import")
            raise FolderError(
                f"{s.path}: the run folder already holds another prediction for item "
                f"{pair[1].id!r} under the same model, task and seed ({s.model!r}, {s.task}, "
                f"seed {s.seed}), imported from {source}",
                advice="give this file its own --model or --seed, import it into another "
                "folder, or pass --overwrite",
            )


def _ids(count: int, first: Sequence[str]) -> str:
    if not count:
        return "0"
    more = ", ..." if count > len(first) else ""
    return f"{count} ({', '.join(first)}{more})"


def format_import(result: ImportResult) -> Document:
    """The per-file table of :func:`import_predictions` (ids the task lacks and items
    the file gives nothing for, counted and the first named), then the scores: ChaosNLI's
    for ChaosNLI sets, the results table for other tasks.

    >>> format_import(ImportResult((), [], []))[0].header[:4]
    ('file', 'model', 'seed', 'task')
    """
    head = ["file", "model", "seed", "task", "rows", "matched by id", "ids not in the task"]
    head += ["items without one", "file label = gold"]
    body: list[list[Cell | str | int]] = []
    for f in result.files:
        check = f"{f.gold_agree}/{f.gold_checked}" if f.gold_checked else "-"
        body.append(
            [Path(f.file).name, f.model, _int(f.seed), f.task, _int(f.rows),
             f"{f.matched} of {f.task_items}", _ids(f.unmatched, f.unmatched_ids),
             _ids(f.missing, f.missing_ids), check]
        )  # fmt: skip
    doc: list[Table | str] = [Table.of(head, body)]
    if result.scores:
        doc += ["", *chaosnli.format_table(result.scores)]
    if result.rows:
        doc += ["", *metrics_table(result.rows)]
    return doc


def _int(x: Any) -> Cell:
    return Cell(str(x), x if isinstance(x, int) and not isinstance(x, bool) else None)
