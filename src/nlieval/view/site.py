"""The site of ``nlieval view``: the data of the pages, computed here from run folders by
the library functions of ``grid`` and ``items``, and the figures of ``figure`` and
``plots`` (SVG files), written as JavaScript files beside a static page and its assets
(``resources/view``, hand-written, no build step). Each folder's records are read once
and handed to every table and figure.

The data travels as ``<script>`` files that register it (``NLIEVAL.meta({...})``,
``NLIEVAL.chunk(n, {...})``): Chromium refuses ``fetch`` of a ``file://`` JSON, and a
script tag loads from ``file://`` as from a server. The item details come in chunks that
the page loads when it shows them; what the filters and the sort need (the index) comes
at once.
"""

from __future__ import annotations

import functools
import http.server
import json
import math
import shlex
import shutil
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analyses import (
    FILTERS,
    PLOTS,
    Grid,
    PlotsConfig,
    chaosnli,
    grid_text,
    item_flags,
    item_listing,
    write_plots,
)
from ..commands import command_line
from ..data import data_dir_setting
from ..ground import DataError, atomic_write, check_inside, make_folder
from ..metrics import METRICS, Metric, metrics
from ..plotting import series_name
from ..reports import (
    FigureAxes,
    FigureConfig,
    GridConfig,
    ReportConfig,
    figure_from,
    grid_of,
    listing_inputs,
    report,
)
from ..runs import NamedRuns, RunError, RunFolder, flat, read_named
from ..settings import out_setting, setting
from ..types import Item, Record
from .sci import infer_page, sci_page

#: Items per chunk file: a page of the browser loads one or two.
CHUNK = 500
#: The file that marks a folder as a site of ``nlieval view``: only such a folder is
#: written over (its old data removed), never a folder of the user's own files.
MARK = ".nlieval-view"
ASSETS = Path(__file__).resolve().parent.parent / "resources" / "view"
#: The ChaosNLI grid of the results page, as ``nlieval grid --metrics`` takes it.
CHAOS_VALUES = ("acc_original", "acc_majority", "js_distance", "kl")
#: The site's folder of figures (SVG: sharp at any zoom, shown by ``<img>``, which runs
#: no script an SVG might hold).
FIGURES = "figures"
_SKIP_FIELDS = frozenset({"human_counts", "majority_label"})
#: The most values a field of the items may have to be offered as a drop-down filter.
MAX_CHOICES = 20


def grid_metrics() -> list[Metric]:
    """The metrics of the results page's grids, one grid each: those of the metric table
    scored from the gold and predicted labels alone, which every folder the view shows
    holds, in the table's order.

    >>> [m.name for m in grid_metrics()]
    ['accuracy', 'macro_f1']
    """
    return [m for m in metrics(source="records") if m.corpus is not None]


@dataclass(frozen=True, kw_only=True)
class ViewConfig(FigureAxes, NamedRuns):
    """What ``nlieval view`` writes: :func:`build_site` of ``runs`` (run folders, or
    folders holding run folders) into ``out``; with ``serve``, served on ``host``. The
    figures page draws accuracy vs size with ``sizes``, and the checkpoints of a run at
    the positions of ``pattern`` (times ``scale``) or ``positions``, as ``nlieval
    figure`` does.

    >>> ViewConfig(runs=("runs/a",), out="site").host
    '127.0.0.1'
    """

    runs: tuple[str, ...] = ()
    out: str = out_setting("folder to write the site into (made; an older site there is replaced)")
    data_dir: str | None = data_dir_setting(saved=True)
    serve: bool = setting(False, help="then serve the site over HTTP until interrupted")
    host: str = setting("127.0.0.1", help="address --serve binds")
    port: int = setting(8000, help="port --serve listens on (0: any free one)")
    ci: float | None = setting(
        None,
        help="add each grid cell's bootstrap interval over items at this level, e.g. 0.95 "
        "(as nlieval grid --ci)",
        metavar="LEVEL",
    )


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>``: ASCII only (U+2028 cannot end
    a line), and ``<``, ``>`` and ``&`` escaped, so that a ``</script>`` or ``<!--`` in a
    premise cannot end the script or open a comment; NaN is refused (JSON has none).

    >>> print(script_json({"p": "</script><!--&"}))
    {"p": "\\u003c/script\\u003e\\u003c!--\\u0026"}
    """
    text = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(", ", ": "))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


#: Where an experiment's output folder keeps its cells' run folders (``DIR/cells/NAME``).
CELLS = "cells"


@dataclass(frozen=True)
class Shown:
    """The run folders of a site (``folders``, each with its records in ``held``) and
    the folders given that it cannot show (``skipped``: each ``{"folder", "reason"}``)."""

    folders: list[str]
    held: list[list[Record]]
    skipped: list[dict[str, str]]


def _inner(folder: Path) -> list[Path]:
    # The run folders one level down (a folder of run folders) and, for an experiment's
    # output folder, those of its cells (DIR/cells/NAME), each in name order.
    out: list[Path] = []
    for at in (folder, folder / CELLS):
        if at.is_dir() and not at.is_symlink():
            out += sorted(p for p in at.iterdir() if p.is_dir() and RunFolder(p).exists())
    return out


def shown_folders(folders: Sequence[str | Path]) -> Shown:
    """The run folders of ``folders``: a run folder of any command (run, import, train,
    instruct) as itself; any other folder replaced by the run folders in it, one level
    down, and an experiment's cells (``DIR/cells/NAME``), in name order. Each is read
    once; one that cannot be shown (no records yet, unreadable records, no run folder
    in it) is skipped with its reason, so that the rest of the site is built.

    >>> shown = shown_folders([run_dir]); shown.folders, shown.skipped[0]["reason"]
    ([], 'no run folder, and holds none (nor cells/NAME of an experiment)')
    """
    out = Shown([], [], [])

    def skip(folder: str | Path, reason: str) -> None:
        out.skipped.append({"folder": str(folder), "reason": reason})

    for folder in folders:
        path = Path(folder)
        if not path.is_dir():
            skip(folder, "no such folder")
            continue
        if RunFolder(path).exists():
            candidates = [path]
        else:
            candidates = _inner(path)
            if not candidates:
                skip(folder, "no run folder, and holds none (nor cells/NAME of an experiment)")
                continue
        for run in candidates:
            name = str(folder) if run == path else str(run)
            try:
                records = RunFolder(run).records()
            except (RunError, DataError) as err:
                skip(name, f"its records cannot be read: {err}")
                continue
            if not records:
                skip(name, "its run wrote no record (yet)")
                continue
            out.folders.append(name)
            out.held.append(records)
    return out


def run_folders(folders: Sequence[str | Path]) -> list[str]:
    """The run folders of ``folders`` that the site shows (:func:`shown_folders`); none
    at all is a RunError that names each folder and why.

    >>> run_folders([run_dir])
    Traceback (most recent call last):
    nlieval.ground.errors.FolderError: nothing to show: ... no run folder, and holds none ...
    """
    return _some(shown_folders(folders)).folders


def _some(shown: Shown) -> Shown:
    if not shown.folders:
        said = "; ".join(f"{s['folder']}: {s['reason']}" for s in shown.skipped)
        raise RunError(f"nothing to show: {said}")
    return shown


def _name_flags(names: Sequence[tuple[str, str]]) -> list[str]:
    # The --name flags of a command line, as the user gave them (RUN=NAME, or NAME alone).
    return [a for run, name in names for a in ("--name", f"{run}={name}" if run else name)]


def _grid_table(cfg: GridConfig, title: str, held: Sequence[Sequence[Record]]) -> dict[str, Any]:
    # The cells as text, as `nlieval grid` prints them, from the one Grid.
    grid = grid_of(cfg, held)
    text = grid_text(grid)
    command = [*command_line("grid"), *cfg.runs, *_name_flags(cfg.name or ())]
    command += ["--rows", ",".join(cfg.rows), "--metrics", ",".join(cfg.metrics)]
    command += ["--ci", str(cfg.ci)] if cfg.ci is not None else []
    command += ["--allow-mixed"] if any(c.mixed for c in grid.cells) else []
    return {"title": title, "runs": list(cfg.runs), "command": shlex.join(command),
            "header": list(text.header), "rows": [list(r) for r in text.rows],
            "values": _grid_values(grid), "notes": list(text.notes)}  # fmt: skip


def _grid_values(grid: Grid) -> list[list[float | None]]:
    # The numbers behind grid_text's cells, row for row (the page sorts by them): a
    # number key (k) as it is, a cell's mean (unscaled, as the page prints it); None for
    # text, an empty cell, or a metric undefined on its items.
    def key(v: Any) -> float | None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        return v if isinstance(v, int) else _finite(v)

    def mean(rk: tuple[Any, ...], ck: tuple[Any, ...]) -> float | None:
        c = grid.value(rk, ck)
        return None if c is None else _finite(c.mean)

    return [[*(key(v) for v in rk), *(mean(rk, ck) for ck in grid.cols)] for rk in grid.rows]


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _overview(folder: str, records: Sequence[Record]) -> dict[str, Any]:
    rf = RunFolder(folder)
    models = sorted({r.model + (f"@{r.checkpoint}" if r.checkpoint else "") for r in records})
    return {
        "folder": folder,
        "config": rf.read_config(),
        "provenance": rf.read_provenance(),
        "models": models,
        "tasks": sorted({r.task for r in records}),
        "points": sorted({(r.k, r.seed) for r in records}),
        "records": len(records),
        "summary": report(ReportConfig(runs=(folder,), write=False), held=[records]),
    }


def _model_details(recs: Sequence[tuple[str, Record]]) -> list[dict[str, Any]]:
    # Entropy (bits) of each model's distribution, and its JS distance to the humans where
    # the record holds their counts: the library's definitions, one call per label count.
    out: list[dict[str, Any]] = []
    for _name, r in recs:
        probs = [float(p) for p in r.probs]
        out.append({"pred": r.pred, "labels": list(r.labels), "probs": probs,
                    "loglik": [_finite(float(x)) for x in r.loglik], "prompt": r.prompt,
                    "entropy": None, "js": None})  # fmt: skip
    by_size: dict[int, list[int]] = defaultdict(list)
    for i, (_name, r) in enumerate(recs):
        if r.probs:
            by_size[len(r.probs)].append(i)
    for idx in by_size.values():
        ent = chaosnli.entropy_bits([recs[i][1].probs for i in idx])
        for i, e in zip(idx, ent, strict=True):
            out[i]["entropy"] = _finite(float(e))
        human = [i for i in idx if recs[i][1].meta.get("human_counts")]
        if human:
            js = chaosnli.item_divergences(
                [recs[i][1].meta["human_counts"] for i in human], [recs[i][1].probs for i in human]
            )["js_distance"]
            for i, d in zip(human, js, strict=True):
                out[i]["js"] = _finite(float(d))
    return out


def site_data(
    folders: Sequence[str | Path],
    *,
    data_dir: str | Path | None = None,
    names: Sequence[tuple[str, str]] = (),
    chunk: int = CHUNK,
    ci: float | None = None,
    held: Sequence[Sequence[Record]] | None = None,
    skipped: Sequence[Mapping[str, str]] = (),
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The data of the pages: ``meta`` (the overview of each run folder, the results
    grids, the :class:`~nlieval.analyses.Grid` of :func:`nlieval.reports.grid_of` as
    ``nlieval grid`` prints it (:func:`nlieval.analyses.grid_text`), and the item index:
    one entry per row of :func:`nlieval.analyses.item_listing` with its filter flags from
    :func:`nlieval.analyses.item_flags`, its fields and each model's prediction) and the
    chunks (``chunk`` rows each, in the index order: texts, human counts, each model's
    distribution, log-likelihoods, entropy, JS distance and prompt). ``ci``: the
    grids with each cell's bootstrap interval at that level (``nlieval grid --ci``).
    ``meta`` also holds the confusion page (``sci``) and the meta-inference page
    (``infer``) of :mod:`nlieval.view.sci`, None and empty without such folders.
    ``held``: the records of each run folder of ``folders`` as already read (else read
    here, once, by :func:`shown_folders`, which also gives ``skipped``: the folders
    given that the site cannot show, each with its reason, listed on the overview).

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0),
    ...     (0.7, 0.3), "b", "a")])
    >>> meta, chunks = site_data([run_dir])
    >>> meta["items"]["count"], meta["items"]["flags"], chunks[0]["rows"][0]["models"][0]["pred"]
    (1, [6], 'b')
    """
    if held is None:
        found = _some(shown_folders(folders))
        runs, held, skipped = found.folders, found.held, [*skipped, *found.skipped]
    else:
        runs = [str(f) for f in folders]
    folders = runs
    unread: dict[str, str] = {}
    try:
        records, items = listing_inputs(folders, data_dir=data_dir, names=names, held=held)
    except DataError:
        # A task whose data is not here: its folder's rows show labels without texts
        # (said on the page), the other folders' texts are joined as ever.
        records = flat(read_named(folders, names, poolable=False, held=held))
        items = {}
        for folder, own in zip(folders, held, strict=True):
            try:
                items.update(listing_inputs([folder], data_dir=data_dir, held=[own])[1])
            except DataError as err:
                unread[folder] = str(err)
    if not records:
        raise RunError(f"no records in {', '.join(map(str, folders))}")
    rows = item_listing(records, items)
    textless = _textless(folders, held, items, unread)
    models = sorted({m for r in rows for m in r["predictions"]})
    joined: dict[tuple[str, int, int, str], dict[str, Record]] = defaultdict(dict)
    for r in records:
        name = r.model + (f"@{r.checkpoint}" if r.checkpoint else "")
        joined[(r.task, r.k, r.seed, r.item_id)][name] = r

    def item_of(row: Mapping[str, Any]) -> Item | None:
        return items.get(row["task"], {}).get(row["id"])

    seen: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if (it := item_of(row)) is not None:
            for key, v in it.meta.items():
                # Fields to filter by are categories (heuristic, genre, round): not a
                # number that takes a value per item.
                if key not in _SKIP_FIELDS and isinstance(v, (str, int, bool)):
                    seen[key].add(str(v))
    # A field of few values is a drop-down; one of many (ANLI's free-text reason) is
    # text: searched, and shown in the item, never a list of every value.
    fields = sorted(f for f, values in seen.items() if len(values) <= MAX_CHOICES)
    text_fields = sorted(f for f in seen if f not in fields)
    index: dict[str, Any] = {
        "count": len(rows), "models": models, "filters": list(FILTERS), "fields": fields,
        "chunk": chunk, "task": [], "id": [], "k": [], "seed": [], "gold": [], "majority": [],
        "entropy": [], "wrong": [], "flags": [], "preds": {m: [] for m in models},
        "model_entropy": {m: [] for m in models}, "js": {m: [] for m in models},
        "values": {f: [] for f in fields}, "textless": textless, "text_fields": text_fields,
    }  # fmt: skip
    chunks: list[dict[str, Any]] = []
    # Each model's record of each row, their entropies and divergences in one call.
    per_row = []
    for row in rows:
        by_model = joined[(row["task"], row["k"], row["seed"], row["id"])]
        per_row.append([(m, by_model[m]) for m in models if m in by_model])
    all_details = _model_details([pair for recs in per_row for pair in recs])
    done = 0
    for at, row in enumerate(rows):
        for key in ("task", "id", "k", "seed", "gold", "majority", "wrong"):
            index[key].append(row[key])
        index["entropy"].append(_finite(row["entropy"]))
        flags = item_flags(row)
        index["flags"].append(sum(1 << i for i, f in enumerate(FILTERS) if flags[f]))
        for m in models:
            index["preds"][m].append(row["predictions"].get(m))
        item = item_of(row)
        for f in fields:
            v = item.meta.get(f) if item is not None else None
            index["values"][f].append(None if v is None else str(v))
        if at % chunk == 0:
            chunks.append({"rows": []})
        recs = per_row[at]
        details = all_details[done : done + len(recs)]
        done += len(recs)
        shown = dict(zip((m for m, _r in recs), details, strict=True))
        for m in models:
            index["model_entropy"][m].append(shown[m]["entropy"] if m in shown else None)
            index["js"][m].append(shown[m]["js"] if m in shown else None)
        chunks[-1]["rows"].append({
            "premise": row["premise"], "hypothesis": row["hypothesis"],
            "choices": list(item.choices) if item is not None else [],
            "human": row["human"],
            "texts": {f: str(item.meta[f]) for f in text_fields
                      if item is not None and item.meta.get(f) is not None},
            "models": [{"name": m, **d} for (m, _r), d in zip(recs, details, strict=True)],
        })  # fmt: skip
    overview = [_overview(folder, recs) for folder, recs in zip(folders, held, strict=True)]
    # Rows by model, and by checkpoint and k where the folders hold several (one cell
    # per sweep point, as `nlieval grid --rows model,k` needs them).
    index_keys = ["model"]
    if any(r.checkpoint for r in records):
        index_keys.append("checkpoint")
    if len({r.k for r in records}) > 1:
        index_keys.append("k")
    rows_of = tuple(index_keys)
    every_run = tuple(folders)
    # Folders scored on different items are shown side by side, each cell with its n and
    # those on other items marked, as `nlieval grid --allow-mixed` prints them.
    # One grid per metric of the table that every kind of folder holds (scored from the
    # labels alone: an import or a chat model has no log-likelihood), each titled by
    # its label; with --ci, the intervals of each that can be resampled.
    grids = [
        _grid_table(
            GridConfig(
                runs=every_run,
                rows=rows_of,
                metrics=(m.name,),
                ci=ci if m.bootstrap else None,
                name=tuple(names) or None,
                allow_mixed=True,
            ),
            m.label,
            held,
        )
        for m in grid_metrics()
    ]
    # The ChaosNLI grid over the folders that hold ChaosNLI records (as `nlieval grid
    # --metrics acc_original,...` of those folders; the others would stop it).
    chaos_at = _chaos_at(held)
    if chaos_at:
        chaos = tuple(folders[i] for i in chaos_at)
        values = tuple(v for v in CHAOS_VALUES if v in METRICS)
        named = tuple(_names_of(chaos, folders, names)) or None
        g = GridConfig(runs=chaos, rows=rows_of, metrics=values, name=named, allow_mixed=True)
        grids.append(_grid_table(g, "ChaosNLI", [held[i] for i in chaos_at]))
    meta = {
        "runs": overview,
        "skipped": [dict(s) for s in skipped],
        "grids": grids,
        "items": index,
        "sci": sci_page(folders, held),
        "infer": infer_page(folders, data_dir, held),
    }
    return meta, chunks


def _textless(
    folders: Sequence[str],
    held: Sequence[Sequence[Record]],
    items: Mapping[str, Any],
    unread: Mapping[str, str] = {},  # noqa: B006 - read only
) -> list[str]:
    """One line per folder whose records are of a task with no texts to join (labels
    without texts), saying why: its ``config.json`` names no task (an import made before
    imports recorded theirs), its tasks' data could not be read (``unread``: the error),
    or the task's items lack the records' ids."""
    out = []
    for folder, recs in zip(folders, held, strict=True):
        tasks = sorted({r.task for r in recs if not items.get(r.task)})
        if not tasks:
            continue
        cfg = RunFolder(folder).read_config() or {}
        if folder in unread:
            why = unread[folder]
        elif not cfg.get("tasks") and not isinstance(cfg.get("task"), str):
            why = (
                "its config.json names no task (an import made before imports recorded "
                "their tasks): import its files again to join them"
            )
        else:
            why = "its tasks' data has no such items here (give --data-dir)"
        out.append(f"{folder} holds labels without texts for {', '.join(tasks)}: {why}")
    return out


def _chaos_at(held: Sequence[Sequence[Record]]) -> list[int]:
    # The folders that hold ChaosNLI records (human label counts), by their place.
    return [i for i, recs in enumerate(held) if any("human_counts" in r.meta for r in recs)]


def _names_of(
    subset: Sequence[str], folders: Sequence[str], names: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The ``--name`` entries of ``names`` (given for ``folders``) that name a folder of
    ``subset`` or a model: a NAME alone stands for the folder at its place.

    >>> _names_of(["b"], ["a", "b"], [("", "A"), ("", "B")])
    [('b', 'B')]
    >>> _names_of(["b"], ["a", "b"], [("a", "A"), ("gpt2", "G")])
    [('gpt2', 'G')]
    """
    if names and all(not run for run, _ in names) and len(names) == len(folders):
        names = [(str(f), name) for f, (_, name) in zip(folders, names, strict=True)]
    kept = {Path(f).resolve() for f in subset}
    every = {Path(f).resolve() for f in folders}
    return [
        (run, name)
        for run, name in names
        if Path(run).resolve() in kept or Path(run).resolve() not in every
    ]


def site_figures(
    cfg: ViewConfig, folders: Sequence[str], held: Sequence[Sequence[Record]], where: Path
) -> dict[str, Any]:
    """Write the figures of the site into ``where`` (SVG) by the functions of ``nlieval
    figure`` and ``nlieval plots``, and return what the figures page shows: ``shown``,
    each figure's title, file (under the site) and the command that draws it; ``notes``,
    why a figure is not there. Accuracy vs shots of every folder; where there are
    ChaosNLI records, the two ChaosNLI figures of ``plots`` (accuracy by human-label
    entropy, divergence from the humans) of those folders; accuracy vs size with
    ``cfg.sizes``; where there are checkpoints, their dynamics at ``cfg.pattern`` or
    ``cfg.positions``. One colour and marker per model across the figures (the names
    of every model of ``folders``).

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0),
    ...     (0.7, 0.3), "a", "a")])
    >>> cfg = ViewConfig(runs=(run_dir,), out=f"{run_dir}/site")
    >>> figs = site_figures(cfg, [run_dir], [RunFolder(run_dir).records()], Path(cfg.out))
    >>> [f["file"] for f in figs["shown"]], figs["notes"]
    (['figures/accuracy_vs_shots.svg'], [])
    """
    names = tuple(cfg.name or ())
    per_folder = read_named(folders, names, poolable=False, held=held)
    named = flat(per_folder)
    # One palette of the names the figures draw: the ChaosNLI figures are given the
    # records under the user's names too (`nlieval plots` has no --name), so a model has
    # one colour and marker in every figure of the site.
    palette = sorted({series_name({"model": r.model, "checkpoint": r.checkpoint})
                      for r in named})  # fmt: skip
    shown: list[dict[str, Any]] = []
    notes: list[str] = []

    def figure(kind: str, title: str, runs: Sequence[int], flags: Sequence[str] = ()) -> None:
        name = {"shots": "accuracy_vs_shots", "size": "accuracy_vs_size"}.get(kind, kind)
        path = where / f"{name}.svg"
        paths = tuple(folders[i] for i in runs)
        own = tuple(_names_of(paths, folders, names)) or None
        fig = FigureConfig(
            kind=kind, runs=paths, out=str(path), name=own, sizes=cfg.sizes,
            pattern=cfg.pattern, scale=cfg.scale, positions=cfg.positions,
        )  # fmt: skip
        figure_from(fig, palette=palette, held=[held[i] for i in runs])
        command = [*command_line("figure"), kind, *paths, "--out", str(path)]
        command += _name_flags(own or ())
        shown.append({"title": title, "file": f"{FIGURES}/{path.name}",
                      "command": shlex.join([*command, *flags])})  # fmt: skip

    every = range(len(folders))
    if any(r.gold is not None for r in named):
        figure("shots", "accuracy vs shots", every)
    else:
        notes.append("accuracy vs shots: no record with a gold label")
    at = _chaos_at(held)
    if at:
        chaos = tuple(folders[i] for i in at)
        plots = PlotsConfig(runs=chaos, out=str(where / "plots"), plot_format="svg")
        lines = write_plots(plots, palette=palette, held=[per_folder[i] for i in at])
        command = shlex.join([*command_line("plots"), *chaos, "--out", plots.out,
                              "--plot-format", "svg"])  # fmt: skip
        titles = ("accuracy by human-label entropy (ChaosNLI)",
                  "divergence from the human labels (ChaosNLI)")  # fmt: skip
        for plot, title in zip(PLOTS[1:], titles, strict=True):
            file = where / "plots" / Path(plot).with_suffix(".svg").name
            if file.is_file():
                rel = file.relative_to(where.parent).as_posix()
                shown.append({"title": title, "file": rel, "command": command})
        notes += [line for line in lines if line.startswith("skipped")]
    if cfg.sizes:
        figure("size", "accuracy vs parameters", every, ["--sizes", ",".join(cfg.sizes)])
    elif len({r.model for r in named}) > 1:
        notes.append("accuracy vs parameters: give --sizes MODEL=PARAMETERS,... to draw it")
    steps = [i for i, recs in enumerate(held) if any(r.checkpoint for r in recs)]
    if steps and (cfg.pattern or cfg.positions):
        flags = ["--positions", cfg.positions] if cfg.positions else ["--pattern", str(cfg.pattern)]
        flags += ["--scale", str(cfg.scale)] if cfg.scale != 1 and not cfg.positions else []
        figure("dynamics", "accuracy over checkpoints", steps, flags)
    elif steps:
        notes.append(
            "accuracy over checkpoints: give --pattern (or --positions) to place the "
            "checkpoints on an axis"
        )
    return {"shown": shown, "notes": notes}


def build_site(cfg: ViewConfig) -> Path:
    """Write the site of ``cfg.runs`` into ``cfg.out``: ``index.html``, ``assets/`` (the
    page's script and style, copied from the package), ``data/`` (:func:`site_data` as
    ``meta.js`` and ``chunk-NNNNN.js``) and ``figures/`` (:func:`site_figures`). Each
    folder's records are read once. A folder ``out`` that holds other files than an
    older site is refused; an older site there is replaced.

    >>> from nlieval.types import Record
    >>> RunFolder(run_dir).append([Record("t", "1", "m", 0, 0, ("a", "b"), (-1.0, -2.0),
    ...     (0.7, 0.3), "a", "a")])
    >>> site = build_site(ViewConfig(runs=(run_dir,), out=f"{run_dir}/site"))
    >>> sorted(p.name for p in (site / "data").iterdir())
    ['chunk-00000.js', 'meta.js']
    >>> sorted(p.name for p in (site / "figures").iterdir())
    ['accuracy_vs_shots.svg']
    """
    shown = _some(shown_folders(cfg.runs))
    folders, held = shown.folders, shown.held
    names = cfg.name or ()
    meta, chunks = site_data(
        folders, data_dir=cfg.data_dir, names=names, ci=cfg.ci, held=held, skipped=shown.skipped
    )
    out = Path(cfg.out)
    if out.exists():
        if not out.is_dir():
            raise RunError(f"{out}: not a folder")
        if any(out.iterdir()) and not (out / MARK).is_file():
            raise RunError(f"{out}: a folder of other files, not a site of nlieval view")
        # A sub-folder that is a link (an older site's data kept elsewhere) is refused
        # before anything is removed or written: the site writes only inside itself.
        for sub in ("data", "assets", FIGURES, MARK, "index.html"):
            check_inside(out / sub, out)
        for sub in ("data", "assets", FIGURES):
            if (out / sub).is_dir():
                shutil.rmtree(out / sub)
    make_folder(out / "data", root=out)
    make_folder(out / "assets", root=out)
    make_folder(out / FIGURES, root=out)
    atomic_write(
        out / MARK, "a site written by nlieval view; it replaces this folder's data\n", root=out
    )
    for name in ("app.js", "sci.js", "style.css"):
        text = (ASSETS / name).read_text(encoding="utf-8")
        atomic_write(out / "assets" / name, text, root=out)
    atomic_write(out / "index.html", (ASSETS / "index.html").read_text(encoding="utf-8"), root=out)
    meta["figures"] = site_figures(cfg, folders, held, out / FIGURES)
    atomic_write(out / "data" / "meta.js", f"NLIEVAL.meta({script_json(meta)});\n", root=out)
    for n, part in enumerate(chunks):
        text = f"NLIEVAL.chunk({n}, {script_json(part)});\n"
        atomic_write(out / "data" / f"chunk-{n:05d}.js", text, root=out)
    return out


class _SiteHandler(http.server.SimpleHTTPRequestHandler):
    # The site folder alone (SimpleHTTPRequestHandler maps no path outside `directory`),
    # no listing of a folder, and a quiet log.
    def list_directory(self, path: Any) -> None:
        self.send_error(404, "no listing")
        return None

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(
    site: str | Path, host: str = "127.0.0.1", port: int = 8000
) -> http.server.ThreadingHTTPServer:
    """An HTTP server (not yet serving: call ``serve_forever``) of the folder ``site``
    alone, bound to ``host`` (the loopback unless told otherwise) on ``port`` (0: any free
    one; the bound one is ``server_address[1]``).

    >>> _ = (Path(run_dir) / "index.html").write_text("<!doctype html>")
    >>> server = serve(run_dir, port=0); server.server_address[0]
    '127.0.0.1'
    >>> server.server_close()
    """
    root = Path(site)
    if not (root / "index.html").is_file():
        raise RunError(f"{root}: no index.html to serve")
    handler = functools.partial(_SiteHandler, directory=str(root.resolve()))
    return http.server.ThreadingHTTPServer((host, port), handler)
