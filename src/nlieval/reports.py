"""Tables from results, recomputed from saved records: one run's summary (:func:`report`),
the papers' grids across runs (:func:`grid_of`), breakdowns by item field
(:func:`breakdown_from`), items side by side (:func:`items_from`), figures across models
(:func:`figure_from`): one function of each command's settings."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from .analyses import (
    FILTERS,
    GRID_KEYS,
    SORTS,
    Grid,
    ReferenceLine,
    baseline_lines,
    breakdown,
    breakdown_table,
    by_fields,
    chaosnli,
    checkpoint_positions,
    compare_runs,
    grid,
    intervals,
    item_listing,
    listing_table,
    metric_rows,
    render_grid,
)
from .analyses import CompareConfig as CompareConfig  # the settings of `nlieval compare`
from .backends import ModelError, resolve
from .data import data_dir_setting, load_task
from .ground import DataError, Document, SettingError, read_json, render
from .metrics import METRICS, group_records, listed, metrics, summarize
from .plotting import (
    DYNAMICS_METRICS,
    FIGURE_KINDS,
    FigureData,
    FigureKind,
    FigurePaths,
    FigureWidth,
    figure_format,
)
from .runs import (
    NamedRuns,
    PooledRuns,
    RunError,
    RunFolder,
    finalize,
    flat,
    given_names,
    instruct_table,
    iter_run_records,
    keep_apart,
    metrics_table,
    name_setting,
    read_named,
    read_results,
    run_labels,
    run_timing,
    run_warnings,
)
from .settings import csv_list, out_setting, positive_int, setting, table_format
from .significance import Resampling
from .types import Item, Record

log = logging.getLogger(__name__)


def report(cfg: ReportConfig, held: Sequence[Sequence[Record]] | None = None) -> str:
    """:func:`report_document` of ``cfg`` in Markdown.

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("entailment", "neutral"),
    ...                            (-0.1, -2.0), (0.87, 0.13), "entailment", "neutral")])
    >>> print(report(ReportConfig(runs=(run_dir,))).splitlines()[2])  # accuracy 0, NLL 2
    | m | t | 0 | 1 | 1 | 0.000 | n/a | 2.000 | 0.500 | E 100% N 0% | E 0 N 1 |
    """
    return render(report_document(cfg, held), "md")


def report_document(cfg: ReportConfig, held: Sequence[Sequence[Record]] | None = None) -> Document:
    """Recompute metrics from the records of the run folders of ``cfg`` (``runs``); no
    model is loaded.

    With ``write``, each folder's ``results.json`` and ``summary.md`` are rewritten from its
    records. Returns a table over all folders (values; :func:`nlieval.ground.render`
    writes it): a row per model, task and k, where
    two folders of one model on the same task and k are two rows named by what differs
    in their ``config.json`` or by ``names`` (:func:`nlieval.runs.read_named`), or with
    ``pool`` one row over both folders' items. ``held``: each folder's records as
    already read (:func:`nlieval.runs.read_named`), for a table of records read once.

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("entailment", "neutral"),
    ...                            (-0.1, -2.0), (0.87, 0.13), "entailment", "neutral")])
    >>> report_document(ReportConfig(runs=(run_dir,)))[0].rows[0][5]  # wrong: accuracy 0
    Cell(text='0.000', value=0.0)
    >>> sorted(p.name for p in Path(run_dir).iterdir())  # with ``write``
    ['provenance.jsonl', 'records.jsonl', 'results.json', 'summary.md']
    """
    folders, write, names, pool = list(cfg.runs), cfg.write, cfg.name or (), cfg.pool
    runs = [RunFolder(f) for f in folders]
    for rf in runs:
        if not rf.exists():
            raise RunError(f"{rf.path} is not a run folder (no config.json or records.jsonl)")
    # Read (and refused where two folders cannot be told apart) before anything is written.
    named = read_named(folders, names, pool=pool, held=held)
    results = [
        finalize(rf, rf.read_config(), invocation="report") if write else read_results(rf)
        for rf in runs
    ]
    # One folder: finalize has just summarised its records; several: each folder's models
    # under their own names.
    if write and len(runs) == 1 and not names:
        rows: Sequence[Mapping[str, Any]] = results[0].metrics
    else:
        rows = summarize(flat(named))
    timing: dict[str, Any] = {}
    for res, recs in zip(results, named, strict=True):
        own = run_timing(res)
        shown = {r.model for r in recs}
        if own and len(shown) == 1:
            # The folder's one model as the table names it (two folders: two timings).
            own = {shown.pop(): next(iter(own.values()))}
        timing.update(own)
    if all((res.config or {}).get("kind") == "instruct" for res in results):
        table = instruct_table(rows, timing)
    else:
        table = metrics_table(rows, timing)
    # What a run recorded of its items (--limit took the first N, of one label).
    return [*table, *(line for w in run_warnings(folders) for line in ("", w))]


@dataclass(frozen=True)
class ReportConfig(PooledRuns):
    """What ``nlieval report`` is asked: the run folders (their names, pooled or not), and
    whether to rewrite their ``results.json`` and ``summary.md`` (:func:`report_document`).

    >>> ReportConfig(runs=("runs/a",)).write
    True
    """

    write: bool = setting(
        True, help="print only; leave results.json as it is", names=("--no-write",)
    )
    format: str = table_format()


def grid_of(cfg: GridConfig, held: Sequence[Sequence[Record]] | None = None) -> Grid:
    """The grid table (:func:`nlieval.analyses.grid`) of the metric rows of the run folders
    of ``cfg`` (``runs``; below, each of its settings by the name of what it holds),
    recomputed from their records once, to render in several formats
    (:func:`grid_table`): :func:`nlieval.metrics.summarize` rows, or for the ChaosNLI
    values (``acc_original``, ``acc_majority``, ``js_distance``, ``kl``, ...) the
    rows of :func:`nlieval.analyses.chaosnli.score_records` over the ChaosNLI records.
    ``reference`` is a run folder (also one of ``folders`` or not) of one model whose row
    the others' gaps are taken to.

    Each folder is scored on its own: two folders of one model on the same sweep point
    (two templates, balanced or not) are two rows, named by what differs in their
    ``config.json`` (:func:`~nlieval.runs.run_labels`), or by the user's ``names`` (RUN,
    NAME: :func:`~nlieval.runs.given_names`), never one row over both folders' items. A row or
    column key that is no key of the metric rows is a field of the items (``domain``,
    ``genre``, ...): each value is scored apart, and with ``overall`` all items pooled
    once more (:func:`nlieval.analyses.grid.by_fields`).

    ``reference_by`` (``KEY=VALUE``) gives each model its own reference: the folders whose
    ``config.json`` holds KEY=VALUE (VALUE may be a glob, ``*hyp*``; a path matches by its
    file name or stem, a list by any of its values) are the references, and every other
    folder's rows get a gap column to the reference folder of its model (``config.json``'s
    ``model``): :func:`reference_pairs`.

    ``names`` (``--name [RUN=]NAME`` pairs, :func:`nlieval.runs.given_names`) names a
    folder's rows as the user wants them (``Llama 8B``): RUN a folder of one model, or a
    model as the table names it.

    ``ci`` (a confidence level such as 0.95) adds each cell's bootstrap interval over items
    (:func:`nlieval.analyses.grid.intervals`, ``resamples`` draws seeded by ``seed``).
    ``held``: the records of each of ``folders`` as already read (in their order),
    not read again (a ``reference`` outside ``folders`` is read).

    ``over_checkpoints`` counts a model's checkpoints as its seeds: ``nlieval run --model
    TRAIN_FOLDER`` scores each seed model as a checkpoint, and they become one row with
    mean ± std over the training seeds.

    Each row says which items it was scored on (the labelled items every seed scored, as
    :func:`~nlieval.metrics.summarize` takes them), so that the cells of a task on
    different items are refused, or with ``allow_mixed`` marked (:func:`~nlieval.analyses.grid`).

    >>> from nlieval.types import Record
    >>> def rec(model, pred):
    ...     return Record("t", "1", model, 0, 0, ("entailment", "neutral"), (-0.1, -2.0),
    ...                   (0.87, 0.13), pred, "neutral")
    >>> a, b = Path(run_dir) / "a", Path(run_dir) / "b"; a.mkdir(); b.mkdir()
    >>> RunFolder(a).append([rec("m1", "neutral")]); RunFolder(b).append([rec("m2", "entailment")])
    >>> g = grid_of(GridConfig(runs=(str(a), str(b)), reference=str(b)))
    >>> [(c.row[0], c.mean) for c in g.cells]
    [('m1', 1.0), ('m2', 0.0), ('m1 - m2', 1.0)]
    """
    folders: Sequence[str | Path] = cfg.runs
    index, columns, values, reference = cfg.rows, cfg.cols, cfg.metrics, cfg.reference
    average, overall, names = not cfg.no_average, not cfg.no_overall, cfg.name or ()
    ci, resamples, seed, reference_by = cfg.ci, cfg.resamples, cfg.seed, cfg.reference_by
    over_checkpoints, allow_mixed = cfg.over_checkpoints, cfg.allow_mixed
    paths = list(folders)
    resolved = [Path(p).resolve() for p in paths]
    if reference is not None and Path(reference).resolve() not in resolved:
        paths.append(reference)
    chaos = [v for v in values if v in METRICS and METRICS[v].source == "chaosnli"]
    if chaos and len(chaos) != len(values):
        raise ValueError(f"ChaosNLI values ({', '.join(chaos)}) cannot share a grid with others")
    if chaos and ci is not None:
        bounded = metrics(source="records", bootstrap=True)
        raise ValueError(f"intervals (--ci) are for {listed(bounded, last=' and ')}")
    seen: dict[Path, str | Path] = {}
    for path in paths:
        if Path(path).resolve() in seen:
            raise ValueError(f"{path} is given twice (as {seen[Path(path).resolve()]})")
        seen[Path(path).resolve()] = path
    given = list(held) if held is not None else []
    if held is not None and len(given) != len(folders):
        raise ValueError(f"records of {len(given)} folders given for {len(folders)} folders")
    read: list[list[Record]] = []
    for at, path in enumerate(paths):
        # Each folder read once (or not at all, where its records are given).
        recs = list(given[at]) if at < len(given) else list(iter_run_records([path]))
        read.append(over_replicates(recs) if over_checkpoints else recs)
    configs = [RunFolder(p).read_config() or {} for p in paths]
    labels = given_names(paths, read, run_labels(paths, read, configs), names)
    # Two folders the user named alike would share a row. A record keeps its model
    # unless it is named otherwise (a copy of each of 150,000 records costs seconds).
    renamed = [
        [replace(r, model=lab[r.model]) if r.model in lab else r for r in recs]
        for recs, lab in zip(read, labels, strict=True)
    ]
    keep_apart(paths, renamed, poolable=False)

    def score(records: list[Record]) -> list[dict[str, Any]]:
        if chaos:
            rows = chaosnli.score_records([r for r in records if "human_counts" in r.meta])
        else:
            rows = summarize(records)
        if ci is not None:
            bounds = intervals(records, values, confidence=ci, resamples=resamples, seed=seed)
            rows = [
                {**r, **{f"{m}_ci": lh for m, lh in bounds.get(_point(r), {}).items()}}
                for r in rows
            ]
        scored = scored_items(records)
        return [{**r, "item_ids": scored.get(_point(r))} for r in rows]

    fields = [n for n in (*index, *columns) if n not in GRID_KEYS and n != "metric"]

    def scored(path: str | Path, records: list[Record]) -> list[dict[str, Any]]:
        try:
            return by_fields(records, fields, score, overall=overall)
        except DataError as err:
            where = RunFolder(path).records_path
            raise DataError(where, err.line, err.field, err.message) from None
        except SettingError as err:
            raise SettingError(err.fields, f"{path}: {err.message}") from None
        except ValueError as err:
            if type(err) is not ValueError:
                raise  # a record's own error names its item already (NonFiniteRecord)
            raise ValueError(f"{path}: {err}") from None

    rows: list[dict[str, Any]] = []
    for path, records in zip(paths, renamed, strict=True):
        if not [r for r in records if not chaos or "human_counts" in r.meta]:
            # A folder that fills no cell would vanish from the table without a word.
            what = "ChaosNLI records" if chaos else "records"
            raise ValueError(f"{path}: no {what} to score for {', '.join(values)}")
    # After keep_apart only folders of other seeds of one setup (an experiment's seed
    # cells) share a sweep point: scored at once, their cell is the mean and spread over
    # all their seeds.
    try:
        rows = by_fields(flat(renamed), fields, score, overall=overall)
    except (DataError, ValueError):
        for path, records in zip(paths, renamed, strict=True):
            scored(path, records)  # the folder whose record is at fault names the error
        raise
    # The cells in the order of the models (as one summary of all folders gave them), each
    # point's field values in by_fields' order.
    rows.sort(key=_row_order)
    ref_key: dict[str, Any] | None = None
    if reference is not None:
        ref_at = [Path(p).resolve() for p in paths].index(Path(reference).resolve())
        ref_models = {(labels[ref_at].get(r.model, r.model), r.checkpoint) for r in read[ref_at]}
        if len(ref_models) != 1:
            raise RunError(f"{reference}: a reference run holds one model, not {len(ref_models)}")
        model, ckpt = ref_models.pop()
        ref_key = {"model": model, "checkpoint": ckpt}
    own: dict[str, str | None] | None = None
    name = "reference"
    if reference_by is not None:
        own = reference_pairs(paths, read, configs, labels, reference_by)
        # The gap column names the reference by its value (hyp-only), or by KEY=VALUE where
        # the value alone says nothing (true, 0).
        value = reference_by.partition("=")[2]
        is_literal = value.lower() in ("true", "false", "null") or value.lstrip("-").isdigit()
        name = reference_by if is_literal else value.strip("*?") or reference_by
    g = grid(
        rows,
        index=index,
        columns=columns,
        values=values,
        average=average,
        reference=ref_key,
        allow_mixed=allow_mixed,
        references=own,
        reference_name=name,
    )
    # What a run recorded of its items (--limit took the first N, of one label) is said
    # under every table made from it.
    warned = run_warnings(paths)
    return replace(g, notes=(*g.notes, *warned)) if warned else g


def _row_order(row: Mapping[str, Any]) -> tuple[str, str, str, int]:
    k = row.get("k")
    return (str(row["model"]), str(row.get("checkpoint") or ""), str(row.get("task")),
            k if isinstance(k, int) else -1)  # fmt: skip


def _point(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["model"], row["checkpoint"], row["task"], row["k"])


def _matches(value: Any, wanted: str) -> bool:
    # A config value matches as written or as a glob (*hyp*); a path also by its file
    # name or stem; a list when one of its values does.
    if isinstance(value, list):
        return any(_matches(v, wanted) for v in value)
    if isinstance(value, bool):
        return wanted.lower() == str(value).lower()
    if isinstance(value, str):
        return any(fnmatchcase(v, wanted) for v in (value, Path(value).name, Path(value).stem))
    return value is not None and wanted == json.dumps(value)


def reference_pairs(
    folders: Sequence[str | Path],
    records: Sequence[Sequence[Record]],
    configs: Sequence[Mapping[str, Any]],
    labels: Sequence[Mapping[str, str]],
    reference_by: str,
) -> dict[str, str | None]:
    """Each model's own reference (``reference_by``: ``KEY=VALUE``): a folder whose
    ``config.json`` KEY is VALUE (or matches it as a glob; a path by its file name or
    stem, a list by any value) is a reference run; any
    other folder's model (by its ``config.json`` ``model``, else the records' model) gets
    the model name (``labels``, :func:`run_labels`) of the reference run of the same
    model, or None where there is none. Two references of one model are an error, and so
    is a KEY=VALUE that no folder holds.

    >>> from nlieval.types import Record
    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), "a", "a")
    >>> recs = [[r], [replace(r, model="m-hyp")], [replace(r, model="n")]]
    >>> cfgs = [{"model": "base"}, {"model": "base", "hypothesis_only": True}, {"model": "n"}]
    >>> reference_pairs(["a", "b", "c"], recs, cfgs, [{}, {}, {}], "hypothesis_only=true")
    {'m': 'm-hyp', 'n': None}
    """
    key, sep, wanted = reference_by.partition("=")
    if not sep or not key or not wanted:
        raise SettingError(
            "reference_by", f"--reference-by {reference_by!r}: write KEY=VALUE (template=hyp-only)"
        )

    def identity(i: int, model: str) -> str:
        return str(configs[i].get("model") or model)

    refs: dict[str, list[tuple[int, str]]] = {}
    mains: list[tuple[int, str]] = []
    for i, recs in enumerate(records):
        is_ref = _matches(configs[i].get(key), wanted)
        for model in sorted({r.model for r in recs}):
            if is_ref:
                refs.setdefault(identity(i, model), []).append((i, model))
            else:
                mains.append((i, model))
    if not refs:
        raise ValueError(f"no run folder's config.json holds {key}={wanted}: no reference run")
    out: dict[str, str | None] = {}
    for i, model in mains:
        found = refs.get(identity(i, model), [])
        if len({j for j, _ in found}) > 1:
            named = ", ".join(str(folders[j]) for j, _ in found)
            raise ValueError(f"{folders[i]}: several reference runs of its model: {named}")
        # One reference folder of several models: the one of this model, if it holds it.
        if len(found) > 1:
            found = [(j, m) for j, m in found if m == model]
        label = labels[i].get(model, model)
        out[label] = labels[found[0][0]].get(found[0][1], found[0][1]) if found else None
    return out


def scored_items(records: Iterable[Record]) -> dict[tuple[Any, ...], frozenset[str]]:
    """The item ids each (model, checkpoint, task, k) of ``records`` is scored on: those
    every seed scored, and of them the labelled ones when there are any (the items of
    ``n`` in :func:`~nlieval.metrics.summarize`).

    >>> from nlieval.types import Record
    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), "a", "a")
    >>> scored_items([r, replace(r, item_id="2"), replace(r, item_id="3", gold=None),
    ...               replace(r, seed=1), replace(r, item_id="3", gold=None, seed=1)])
    {('m', None, 't', 0): frozenset({'1'})}
    """
    out: dict[tuple[Any, ...], frozenset[str]] = {}
    for key, by_seed in group_records(records).items():
        common = set.intersection(*({r.item_id for r in recs} for recs in by_seed.values()))
        labelled = {r.item_id for recs in by_seed.values() for r in recs if r.gold is not None}
        out[key] = frozenset(common & labelled or common)
    return out


def over_replicates(records: Sequence[Record]) -> list[Record]:
    """The records of one folder with each (checkpoint, seed) pair as a seed of its own
    and no checkpoint: a ``nlieval train`` folder's seed checkpoints (or a run over them)
    as replicates of one model.

    >>> from nlieval.types import Record
    >>> r = Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0), (.7, .3), "a", "a")
    >>> [(x.checkpoint, x.seed) for x in over_replicates([replace(r, checkpoint="seed0"),
    ...     replace(r, checkpoint="seed1"), replace(r, checkpoint="seed1", seed=3)])]
    [(None, 0), (None, 1), (None, 2)]
    """
    pairs = sorted({(r.checkpoint or "", r.seed) for r in records})
    index = {p: i for i, p in enumerate(pairs)}
    return [replace(r, checkpoint=None, seed=index[(r.checkpoint or "", r.seed)]) for r in records]


def breakdown_from(cfg: BreakdownConfig, fmt: str | None = None) -> str:
    """What ``nlieval breakdown`` prints: :func:`nlieval.analyses.breakdown` of the records
    of ``cfg.runs`` by ``cfg.by`` as a table in ``fmt`` (None: ``cfg.format``; ``md``,
    ``latex``, ``csv`` or ``json``: :func:`nlieval.analyses.breakdown_table`),
    each folder's model under its own name where two folders hold one model on the same
    task and k (:func:`nlieval.runs.read_named`: ``names``, or ``pool`` for one row over
    both folders' items).

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("entailment", "neutral"),
    ...     (-0.1, -2.0), (0.87, 0.13), "entailment", "entailment", meta={"genre": "fiction"})])
    >>> print(breakdown_from(BreakdownConfig(runs=(run_dir,), by=("genre",))).splitlines()[2])
    | m | t | 0 | fiction | 1 | 1.000 | n/a | 1.000 | n/a |
    """
    folders, by = cfg.runs, cfg.by
    reading: list[Path] = []  # the folder whose records are being read
    named = read_named(folders, cfg.name or (), pool=cfg.pool)

    def records() -> Iterable[Record]:
        for folder, recs in zip(folders, named, strict=True):
            reading[:] = [RunFolder(folder).records_path]
            yield from recs

    try:
        rows = breakdown(records(), by)
    except DataError as err:
        if err.path is not None or not reading:
            raise
        raise DataError(reading[0], err.line, err.field, err.message) from None
    return breakdown_table(rows, by, fmt or cfg.format)


def _named(
    folders: Sequence[str | Path],
    names: Sequence[tuple[str, str]],
    held: Sequence[Sequence[Record]] | None = None,
) -> tuple[list[Record], dict[str, str]]:
    """The records of ``folders``, each folder's under a name as the model: the user's
    ``names`` (``--name [RUN=]NAME``: :func:`nlieval.runs.given_names`); else, for a
    checkpoint run of one model, the folder's own name (its model is often the first
    checkpoint's path, which names a series badly); else the model, told apart from a
    folder of the same model by what differs in their ``config.json``
    (:func:`nlieval.runs.run_labels`). Also each new name -> the model as recorded (two
    folders of one model: two names of one model). ``held``: the records of each folder
    as already read."""
    if held is None:
        held = [list(iter_run_records([folder])) for folder in folders]
    configs = [RunFolder(f).read_config() or {} for f in folders]
    labels = run_labels(folders, held, configs)
    for i, (folder, records) in enumerate(zip(folders, held, strict=True)):
        models = {r.model for r in records}
        if len(models) == 1 and all(r.checkpoint for r in records):
            labels[i] = {models.pop(): Path(folder).resolve().name}
    labels = given_names(folders, held, labels, names)
    shown: list[list[Record]] = []
    renamed: dict[str, str] = {}
    for records, label in zip(held, labels, strict=True):
        shown.append([])
        for r in records:
            name = label.get(r.model)
            if name and name != r.model:
                renamed[name] = r.model
                r = replace(r, model=name)
            shown[-1].append(r)
    # Two folders the user named alike would be one series.
    keep_apart(folders, shown, poolable=False)
    return flat(shown), renamed


def _parameters(model: str) -> float:
    """The parameters of ``model`` as a run recorded it, counted from its weights'
    headers; a model whose weights this machine cannot count (a server's, a folder gone)
    is a ValueError saying to give its size (``--sizes``), whatever command draws it.

    >>> _parameters("server:org/m")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: server:org/m: no weights here to count parameters in (a server's model); ...
    """
    try:
        return float(resolve(model, checked=False).parameter_count())
    except ModelError as err:
        why = str(err)
    except ValueError:
        # The string as recorded, without the settings of the run that wrote it (a
        # server's address): its refusal would advise that run's flags.
        why = f"{model}: no weights here to count parameters in (a server's model)"
    raise ValueError(f"{why}; give its size with --sizes {model}=PARAMETERS") from None


def _figure(
    kind: str,
    folders: Sequence[str | Path],
    path: FigurePaths,
    *,
    baselines: Sequence[str | Path] = (),
    sizes: Mapping[str, float] | None = None,
    pattern: str | None = None,
    scale: float = 1.0,
    positions: Mapping[str, float] | None = None,
    metric: str = "accuracy",
    axis: str = "training tokens",
    width: float | None = None,
    names: Sequence[tuple[str, str]] = (),
    palette: Iterable[str] | None = None,
    held: Sequence[Sequence[Record]] | None = None,
    references: Mapping[str, Mapping[str, float]] | None = None,
) -> Path:
    """One figure across the models of ``folders`` (recomputed from their records), in
    the format of ``path``'s extension (several paths: the one drawing in each format),
    ``width`` inches wide (the text width if None):

    * ``shots``: accuracy vs shots, a line per model, one panel per task
      (:func:`nlieval.analyses.plot_accuracy_vs_shots`);
    * ``size``: accuracy vs parameters (``sizes``: model -> parameters; None: counted from
      each model's weight files, :func:`nlieval.backends.weights.parameter_count`);
    * ``dynamics``: ``metric`` over checkpoints on a token or step axis, several models in
      one panel (positions from the checkpoint names by ``pattern`` times ``scale``, or
      the ``positions`` table; ``js_distance`` needs ChaosNLI records).

    ``palette`` holds the model names of every figure of the call (an experiment's
    report): a model's colour and marker are then the same in all of them
    (:func:`nlieval.plotting.styles`).
    ``names`` (``--name [RUN=]NAME`` pairs) name the series instead of the model paths
    (a checkpoint run of one model is named by its folder without them). Each of
    ``baselines`` is a run folder drawn as one line per system at the figure's own
    metric (accuracy, or a dynamics figure's ``metric``): a system scored at several k
    at its largest k, stated in its name (:func:`nlieval.plotting.reference_levels`).
    ``held``: the records of each of ``folders`` as already read. ``references``: more
    reference lines given by value (name -> task -> level, at the figure's metric).
    """
    records, renamed = _named(folders, names, held)
    figure = FIGURES.get(kind)
    if figure is None:
        known = list(FIGURES)
        raise ValueError(f"unknown figure {kind!r}: {', '.join(known[:-1])} or {known[-1]}")
    # The options a kind takes decide what is prepared for its drawing.
    if "metric" not in figure.options:
        metric = "accuracy"
    lines: dict[str, dict[str, float]] = {}
    for f in baselines:
        lines.update(baseline_lines(f, metric))
    lines.update({k: dict(v) for k, v in (references or {}).items()})
    rows = metric_rows(records, metric) if "metric" in figure.options else summarize(records)
    if "sizes" in figure.options:
        if sizes is None:
            # Weights are found by the model as recorded, whatever name it is drawn under.
            models = dict(renamed)
            models.update((m, m) for m in {str(r["model"]) for r in rows} - set(renamed))
            sizes = {name: _parameters(original) for name, original in models.items()}
        else:  # a size given for the model as recorded holds for each of its names too
            sizes = {**sizes, **{n: sizes[m] for n, m in renamed.items() if m in sizes}}
    if "positions" in figure.options:
        ckpts = sorted({str(r["checkpoint"]) for r in rows if r.get("checkpoint")})
        if positions is None:
            if pattern is None:
                raise ValueError("a dynamics figure needs --pattern (or a positions table)")
            positions = checkpoint_positions(ckpts, pattern, scale)
        else:
            positions = _match_positions(ckpts, positions)
    return figure.draw(
        FigureData(
            rows=rows,
            path=path,
            lines=lines,
            width=width,
            names=palette,
            metric=metric,
            axis=axis,
            sizes=sizes or {},
            positions=positions or {},
        )
    )


def _match_positions(ckpts: Sequence[str], table: Mapping[str, float]) -> dict[str, float]:
    # A table written by one tool may name a checkpoint folder by another spelling of
    # the same path (relative, absolute, trailing slash): match those as well.
    out: dict[str, float] = {}
    resolved = {str(Path(k).resolve()): v for k, v in table.items()}
    for ck in ckpts:
        if ck in table:
            out[ck] = float(table[ck])
        elif str(Path(ck).resolve()) in resolved:
            out[ck] = float(resolved[str(Path(ck).resolve())])
    missing = [ck for ck in ckpts if ck not in out]
    if missing:
        raise ValueError(f"the positions table has no entry for {', '.join(missing[:3])}")
    return out


def items_from(cfg: ItemsConfig) -> str:
    """What ``nlieval items`` prints: the items of the run folders of ``cfg`` side by side
    (:func:`nlieval.analyses.listing.item_listing` with its filters and sort, only those
    of ``ids`` when given, the first ``limit`` items, at most ``max_rows`` rows), a row
    per task, k, seed and item, as a table in its ``format``
    (:func:`nlieval.analyses.listing_table`: texts cut in Markdown and LaTeX unless
    ``full``), their texts read from each folder's tasks (its ``config.json``:
    tasks, split and data folder; ``data_dir`` replaces the saved one). Each folder's
    model is a column of its own: two folders of one model on the same task and k are
    named by what differs in their ``config.json``, or by ``names``
    (:func:`nlieval.runs.read_named`), and the filters compare those columns.

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("smoke", "smoke-01", "m", 0, 0, ("entailment",
    ...     "neutral", "contradiction"), (-1.0, -2.0, -3.0), (0.6, 0.3, 0.1), "entailment",
    ...     "entailment")])
    >>> _ = (Path(run_dir) / "config.json").write_text('{"tasks": ["smoke"]}')
    >>> print(items_from(ItemsConfig(runs=(run_dir,))).splitlines()[2][:37])
    | smoke | 0 | 0 | smoke-01 | A man in
    """
    named, items = listing_inputs(cfg.runs, data_dir=cfg.data_dir, names=cfg.name or ())
    rows = item_listing(named, items, cfg.filter or (), cfg.sort, None, cfg.ids, limit=cfg.limit)
    if len(rows) > cfg.max_rows:
        log.warning(
            "items: --max-rows %d lists %d of the %d rows kept (a row per task, k, seed and item)",
            cfg.max_rows,
            cfg.max_rows,
            len(rows),
        )
        rows = rows[: cfg.max_rows]
    return listing_table(rows, None if cfg.full else 60, cfg.format)


def listing_inputs(
    folders: Sequence[str | Path],
    *,
    data_dir: str | Path | None = None,
    names: Sequence[tuple[str, str]] = (),
    held: Sequence[Sequence[Record]] | None = None,
) -> tuple[list[Record], dict[str, dict[str, Item]]]:
    """What :func:`items_from` lists (and ``nlieval view`` shows): the records of
    ``folders`` (``held``: as already read, one list per folder), each model named as
    the listing's column, and task -> item id -> item of the tasks their ``config.json``
    names (``data_dir`` replaces the saved one).

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0),
    ...     (0.7, 0.3), "a", "a")])
    >>> recs, items = listing_inputs([run_dir])
    >>> [r.model for r in recs], items
    (['m'], {})
    """
    items: dict[str, dict[str, Item]] = {}
    for folder in folders:
        cfg = RunFolder(folder).read_config() or {}
        # A run names its tasks; a folder of `nlieval import` its one task.
        specs = cfg.get("tasks") or ([cfg["task"]] if isinstance(cfg.get("task"), str) else [])
        for spec in specs:
            ds = load_task(str(spec), data_dir or cfg.get("data_dir"), cfg.get("split"))
            by_id = {it.id: it for it in ds.items}
            items.setdefault(ds.task, {}).update(by_id)
            # A folder of `nlieval import` made before imports took the YAML's declared
            # name names its records by the path (newer ones are refused to add to it).
            items.setdefault(str(spec), {}).update(by_id)
    return flat(read_named(folders, names, poolable=False, held=held)), items


# --------------------------------------------------------------------------- commands
# The settings of the commands across run folders (``grid``, ``compare``, ``breakdown``,
# ``items``, ``figure``): each field is a flag of its command (nlieval.cli.args), the run
# folders are the command's positional arguments.


def _table_format() -> Any:
    return table_format("csv", "json")


def _table_out() -> Any:
    return out_setting("write the table here instead of printing it", None)


@dataclass(frozen=True, kw_only=True)
class _GridLayout(NamedRuns):
    runs: tuple[str, ...] = ()
    rows: tuple[str, ...] = setting(
        ("model",),
        help="row keys: model, checkpoint, task, k, metric, or a field of the items (domain, "
        "genre, round, heuristic, a task YAML's meta field), which adds an Overall row: all "
        "the items pooled, not the mean of the field's cells",
        parse=csv_list,
    )
    cols: tuple[str, ...] = setting(
        ("task",),
        help="column keys, as --rows (an item field adds an Overall column)",
        parse=csv_list,
    )
    metrics: tuple[str, ...] = setting(
        ("accuracy",),
        help=f"values: {listed(metrics(source='records'))}, or the ChaosNLI "
        f"{listed(metrics(source='chaosnli'))}",
        parse=csv_list,
    )
    reference: str | None = setting(None, help="run folder to take each row's gap to")
    reference_by: str | None = setting(
        None,
        help="KEY=VALUE of config.json that marks the reference runs (template=hyp-only, "
        "hypothesis_only=true, a glob: files=*hyp*): a gap column of each model to the "
        "reference run of its own model (config.json's model); n/a and a note where it has "
        "none",
        metavar="KEY=VALUE",
    )
    no_average: bool = setting(False, help="no Average row (the mean of the models)")
    no_overall: bool = setting(
        False,
        help="no Overall row or column for an item field (Overall: all items pooled and "
        "scored at once, not the mean of the field's cells)",
    )
    ci: float | None = setting(
        None,
        help="add each cell's bootstrap interval over items at this level, e.g. 0.95",
        metavar="LEVEL",
    )


@dataclass(frozen=True, kw_only=True)
class GridConfig(Resampling, _GridLayout):
    """What ``nlieval grid`` draws: :func:`grid_table`.

    >>> GridConfig(runs=("a",)).rows, GridConfig().resamples
    (('model',), 2000)
    """

    over_checkpoints: bool = setting(
        False, help="a model's checkpoints are its seeds (a run over a train folder's seed models)"
    )
    allow_mixed: bool = setting(
        False,
        help="put cells of one task scored on different items side by side, marked "
        "(refused without it)",
    )
    format: str = _table_format()
    percent: bool = setting(
        False, help="proportions (accuracy, F1) x 100; a gold NLL, JS or KL as it is"
    )
    digits: int | None = setting(
        None, help="digits after the point, in every format [md, latex: 3; csv, json: all]"
    )
    out: str | None = _table_out()


def grid_table(cfg: GridConfig) -> str:
    """The grid of ``cfg`` (:func:`grid_of`) rendered as ``cfg.format``
    (:func:`nlieval.analyses.render_grid`).

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("entailment", "neutral"),
    ...                            (-0.1, -2.0), (0.87, 0.13), "entailment", "neutral")])
    >>> print(grid_table(GridConfig(runs=(run_dir,), no_average=True)).splitlines()[-1])
    | m | 0.000 |
    """
    return render_grid(grid_of(cfg), cfg.format, percent=cfg.percent, digits=cfg.digits)


def compare_report(cfg: CompareConfig) -> list[dict[str, Any]]:
    """What ``nlieval compare`` tests: the rows of
    :func:`nlieval.analyses.compare_runs` of ``cfg``."""
    return compare_runs(cfg)


@dataclass(frozen=True, kw_only=True)
class BreakdownConfig(PooledRuns):
    """What ``nlieval breakdown`` tabulates: :func:`breakdown_from`.

    >>> BreakdownConfig(by=("genre",)).format
    'md'
    """

    runs: tuple[str, ...] = ()
    by: tuple[str, ...] = setting(help="fields, e.g. heuristic,gold", parse=csv_list)
    format: str = _table_format()
    out: str | None = _table_out()


@dataclass(frozen=True, kw_only=True)
class ItemsConfig(NamedRuns):
    """What ``nlieval items`` lists: :func:`items_from`.

    >>> ItemsConfig().max_rows, ItemsConfig().limit
    (20, None)
    """

    runs: tuple[str, ...] = ()
    filter: tuple[str, ...] | None = setting(
        None, help=f"any of {', '.join(FILTERS)}", parse=csv_list
    )
    sort: str = setting("id", help="order of the items", choices=SORTS)
    limit: int | None = setting(
        None,
        help="the first N items of the listing, every row of each (a row per k and seed)",
        parse=positive_int,
    )
    max_rows: int = setting(20, help="rows at most", parse=positive_int)
    data_dir: str | None = data_dir_setting(saved=True)
    ids: tuple[str, ...] | None = setting(
        None, help="only these item ids, e.g. 12,407", parse=csv_list
    )
    full: bool = setting(False, help="whole texts (md, latex; csv and json always have them)")
    format: str = _table_format()
    out: str | None = _table_out()


#: The figures of ``nlieval figure`` (name -> its kind): the table
#: :data:`nlieval.plotting.FIGURE_KINDS` itself, which the command's choices and help, the
#: experiment files' check and their schema read.
FIGURES: Mapping[str, FigureKind] = FIGURE_KINDS


@dataclass(frozen=True, kw_only=True)
class FigureAxes:
    r"""What a figure's x axis needs besides the records: the parameters of each model
    (a ``size`` figure) and each checkpoint's position (a ``dynamics`` figure), as
    ``nlieval figure`` and ``nlieval view`` take them.

    >>> FigureAxes(pattern=r"step(\d+)").scale
    1
    """

    sizes: tuple[str, ...] | None = setting(
        None, help="MODEL=PARAMETERS,...: each model's size (accuracy vs size)", parse=csv_list
    )
    pattern: str | None = setting(
        None, help=r"checkpoint name -> number, e.g. step(\d+) (accuracy over checkpoints)"
    )
    # 1, not 1.0: the help shows it as [1].
    scale: float = setting(1, help="x per captured number")
    positions: str | None = setting(None, help="JSON file: checkpoint -> x position")


@dataclass(frozen=True, kw_only=True)
class FigureConfig(ReferenceLine, FigureAxes, FigureWidth):
    """What ``nlieval figure`` draws: :func:`figure_from`.

    >>> FigureConfig(kind="shots", out="f.png").metric
    'accuracy'
    """

    kind: str = "shots"
    runs: tuple[str, ...] = ()
    out: str = out_setting("figure to write: .pdf or .svg (vector) or .png (300 dpi)")
    baseline: tuple[str, ...] = ()
    name: tuple[tuple[str, str], ...] | None = name_setting()
    metric: str = setting(
        "accuracy", help="what a dynamics figure follows", choices=DYNAMICS_METRICS
    )
    axis: str = setting("training tokens", help="x axis title")


def _positions(path: str) -> dict[str, float]:
    """The table of ``--positions``: a JSON object of checkpoint -> finite number, read
    with the file rules (a regular file, bounded in size and depth); else one line.

    >>> p = Path(run_dir) / "pos.json"; _ = p.write_text('{"step1": 1, "step2": NaN}')
    >>> _positions(str(p))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: .../pos.json: field 'step2': NaN is not a finite number
    """
    raw = read_json(path, finite=True)
    if not isinstance(raw, dict):
        found = type(raw).__name__
        raise DataError(
            path, None, None, f"expected a JSON object of checkpoint -> position, found {found}"
        )
    out = {}
    for k, v in raw.items():
        # A bool is an int to Python; 1e400 written as an integer overflows a float.
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise DataError(path, None, k, f"expected a number, found {type(v).__name__}")
        try:
            out[str(k)] = float(v)
        except OverflowError:
            digits = len(str(abs(v)))
            raise DataError(path, None, k, f"{digits} digits: not a finite number") from None
    return out


def figure_from(
    cfg: FigureConfig,
    palette: Iterable[str] | None = None,
    held: Sequence[Sequence[Record]] | None = None,
    *,
    also: Sequence[str | Path] = (),
) -> Path:
    """What ``nlieval figure`` draws (:func:`_figure`) of ``cfg``: its ``sizes``
    (``MODEL=PARAMETERS`` entries) as numbers, its ``positions`` read from the JSON file
    it names; ``palette``, the model names of every figure of a report (one colour and
    marker per model across them); ``held``, the records of each of ``cfg.runs`` as
    already read; ``also``: more paths the same drawing is saved at (``f.pdf`` beside
    ``f.png``: the records read and the figure drawn once). Returns ``cfg.out``."""
    sizes = None
    if cfg.sizes:
        sizes = {}
        for pair in cfg.sizes:
            name, _, value = pair.rpartition("=")
            try:
                sizes[name] = float(value)
            except ValueError:
                raise ValueError(f"--sizes: {pair!r} is not MODEL=PARAMETERS") from None
            if not math.isfinite(sizes[name]) or sizes[name] <= 0:
                # The axis is logarithmic: a size of 0 or less has no place on it.
                raise ValueError(f"--sizes: {pair!r}: the size is not a positive number")
    paths = (cfg.out, *also)
    for path in paths:
        figure_format(path)  # an unknown extension before any record is read
    positions = _positions(cfg.positions) if cfg.positions else None
    return _figure(
        cfg.kind,
        cfg.runs,
        paths if also else cfg.out,
        baselines=cfg.baseline,
        sizes=sizes,
        pattern=cfg.pattern,
        scale=cfg.scale,
        positions=positions,
        metric=cfg.metric,
        axis=cfg.axis,
        width=cfg.inches,
        names=cfg.name or (),
        palette=palette,
        held=held,
        references=cfg.lines(),
    )
