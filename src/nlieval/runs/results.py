"""``results.json`` and ``summary.md`` of a run folder, recomputed from its records."""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from ..metrics import summarize
from .folder import RunFolder
from .tables import markdown_summary

#: Few-shot (or exemplar) ids per task, shot count and seed (or run).
Draws = Mapping[str, Mapping[int, Mapping[int, Sequence[str]]]]


def finalize(
    folder: RunFolder,
    config: Mapping[str, Any] | None,
    elapsed: float | None = None,
    timing: dict[str, dict[str, Any]] | None = None,
    *,
    data_info: Mapping[str, Mapping[str, Any]] | None = None,
    draws: Draws | None = None,
) -> dict[str, Any]:
    """Recompute the metrics from the saved records and (re)write results and summary.

    ``config`` is the folder's configuration as saved (None keeps the one in
    ``results.json``); ``data_info`` (per task) and ``draws`` (shot ids per task, k and
    seed) are merged into what ``results.json`` already holds, so a later call with none
    of them (``nlieval report``) keeps them.

    >>> from nlieval.types import Record
    >>> folder = RunFolder(run_dir)
    >>> folder.append([Record("t", i, "m", 0, 0, ("a", "b"), (0.0, -1.0), (0.7, 0.3), pred, "a")
    ...                for i, pred in (("1", "a"), ("2", "b"))])
    >>> m = finalize(folder, {"model": "m"})["metrics"][0]
    >>> m["accuracy"], round(m["macro_f1"], 4)  # F1 of a: 2/3, of b: 0
    (0.5, 0.3333)
    >>> finalize(folder, None)["config"]  # a later call without one keeps the saved config
    {'model': 'm'}
    """
    old = folder.read_results()
    results: dict[str, Any] = {
        "config": dict(config) if config is not None else old.get("config"),
        "environment": environment(),
        "data": old.get("data", {}),
        "draws": old.get("draws", {}),
        "timing": old.get("timing", {}),
    }
    for task, task_info in (data_info or {}).items():
        results["data"][task] = dict(task_info)
    for task, by_k in (draws or {}).items():
        for k, by_seed in by_k.items():
            saved = results["draws"].setdefault(task, {}).setdefault(str(k), {})
            saved.update({str(seed): list(ids) for seed, ids in by_seed.items()})
    if elapsed is not None:
        results["timing"]["last_invocation_s"] = round(elapsed, 2)
    if timing is None:
        timing = folder.read_timing() or results["timing"].get("sweep_points")
    if timing is not None:
        # Wall time of the scoring loop per sweep point, summed over invocations
        # (model loading excluded).
        results["timing"]["sweep_points"] = timing
    results["metrics"] = summarize(folder.iter_records())
    folder.write_results(results, markdown_summary(results))
    return results


def environment() -> dict[str, Any]:
    """Package versions, Python, platform and the git commit of nlieval's source."""
    versions: dict[str, str | None] = {}
    for pkg in (
        "nlieval",
        "torch",
        "transformers",
        "numpy",
        "scipy",
        "scikit-learn",
        "gguf",
        "accelerate",
    ):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "versions": versions,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_commit": _git_commit(),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(
        ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        timeout=5,
        check=False,
    ).stdout.strip()
    return out.stdout.strip() + ("-dirty" if dirty else "")
