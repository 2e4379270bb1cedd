"""``results.json`` and ``summary.md`` of a run folder, recomputed from its records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..metrics import summarize
from ..types import Record
from .folder import RESULTS, RunFolder
from .schema import Provenance, Results
from .tables import markdown_summary

#: Few-shot (or exemplar) ids per task, shot count and seed (or run).
Draws = Mapping[str, Mapping[int, Mapping[int, Sequence[str]]]]


def finalize(
    folder: RunFolder[Record],
    config: Mapping[str, Any] | None,
    elapsed: float | None = None,
    timing: dict[str, dict[str, Any]] | None = None,
    *,
    data_info: Mapping[str, Mapping[str, Any]] | None = None,
    draws: Draws | None = None,
    invocation: str | None = None,
) -> Results:
    """Recompute the metrics from the saved records and (re)write results and summary.

    ``config`` is the folder's configuration as saved (None keeps the one in
    ``results.json``); ``data_info`` (per task) and ``draws`` (shot ids per task, k and
    seed) are merged into what ``results.json`` already holds, so a later call with none
    of them (``nlieval report``) keeps them. ``invocation`` (``"report"``, or the command
    of a writer that did not append its provenance when it started) appends this
    process's provenance first; provenance already there is never rewritten.

    >>> from nlieval.types import Record
    >>> folder = RunFolder(run_dir)
    >>> folder.append([Record("t", i, "m", 0, 0, ("a", "b"), (0.0, -1.0), (0.7, 0.3), pred, "a")
    ...                for i, pred in (("1", "a"), ("2", "b"))])
    >>> m = finalize(folder, {"model": "m"}).metrics[0]
    >>> m["accuracy"], m["macro_f1"]  # gold a only: macro F1 is undefined (metrics.macro_f1)
    (0.5, nan)
    >>> again = finalize(folder, None, invocation="report")  # keeps the saved config
    >>> again.config, again.version, [p.command for p in again.provenance]
    ({'model': 'm'}, 2, ['report'])
    """
    saved = read_results(folder)
    data = {k: dict(v) for k, v in saved.data.items()}
    saved_draws = {t: {k: dict(v) for k, v in by_k.items()} for t, by_k in saved.draws.items()}
    times = dict(saved.timing)
    for task, task_info in (data_info or {}).items():
        data[task] = dict(task_info)
    for task, by_k in (draws or {}).items():
        for k, by_seed in by_k.items():
            keep = saved_draws.setdefault(task, {}).setdefault(str(k), {})
            keep.update({str(seed): list(ids) for seed, ids in by_seed.items()})
    if elapsed is not None:
        times["last_invocation_s"] = round(elapsed, 2)
    if timing is None:
        timing = folder.read_timing() or times.get("sweep_points")
    if timing is not None:
        # Wall time of the scoring loop per sweep point, summed over invocations
        # (model loading excluded).
        times["sweep_points"] = timing
    if invocation is not None:
        folder.append_provenance(Provenance.now(invocation).to_dict())
    results = Results(
        config=dict(config) if config is not None else saved.config,
        metrics=tuple(summarize(folder.iter_records())),
        provenance=tuple(Provenance.from_dict(p) for p in folder.read_provenance()),
        data=data,
        draws=saved_draws,
        timing=times,
    )
    folder.write_results(results.to_dict(), markdown_summary(results))
    return results


def read_results(folder: RunFolder[Any]) -> Results:
    """The folder's ``results.json`` (an empty :class:`Results` when it has none yet);
    a file of a newer version, or not of this shape, is a :class:`RunError`."""
    if not folder.has(RESULTS):
        return Results()
    return Results.from_dict(folder.read_results(), folder.path / RESULTS)


def run_warnings(folders: Iterable[str | Path]) -> list[str]:
    """The warnings recorded in the ``results.json`` of each of ``folders`` (per task:
    ``--limit 12 takes the first 12 items, labelled ...``), each once, in order: the one
    place every table made from run folders takes the notes it must carry.

    >>> run_warnings([run_dir])  # a folder without results.json warns of nothing
    []
    """
    out: list[str] = []
    for path in folders:
        for info in read_results(RunFolder(Path(path))).data.values():
            for line in info.get("warnings") or ():
                if str(line) not in out:
                    out.append(str(line))
    return out
