"""The settings of ``nlieval contamination`` (:class:`ContaminationConfig`) and what the
command does with them (:func:`contamination_report`): scores from a corpus scan or a
scores file, then EPG on a run's records."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import ItemSelection, TaskFiles, get_task, tasks_setting
from ..metrics import metrics
from ..plotting import FigureWidth, figure_format, plot_epg
from ..runs import atomic_write, iter_run_records
from ..settings import csv_list, out_setting, setting
from .epg import DEFAULT_THRESHOLDS, epg
from .ngrams import DEFAULT_N
from .scan import SHARD_BYTES, ScanOptions, corpus_files
from .scores import read_scores, score_summary, score_tasks, write_scores


def thresholds(text: str) -> tuple[float, ...] | str:
    """``--thresholds``: comma-separated numbers, or ``distinct`` (every score seen).

    >>> thresholds("0,0.5"), thresholds("distinct")
    ((0.0, 0.5), 'distinct')
    """
    if text == "distinct":
        return text
    try:
        return tuple(float(x) for x in csv_list(text))
    except ValueError:
        raise ValueError(
            f"--thresholds takes comma-separated numbers or 'distinct', got {text!r}"
        ) from None


@dataclass(frozen=True)
class ContaminationConfig(TaskFiles, ItemSelection, FigureWidth):
    """What ``nlieval contamination`` is asked: a scan of ``corpus`` for the items of
    ``tasks`` (or the scores of a ``scores`` file, kept to ``tasks`` when given), then,
    with ``run``, EPG over ``thresholds``.

    >>> ContaminationConfig(tasks=("smoke",), corpus=("c.txt",)).n
    8
    >>> ContaminationConfig(tasks=("smoke",))
    Traceback (most recent call last):
    ValueError: contamination needs --task and --corpus (or --scores FILE)
    >>> ContaminationConfig(scores="s.jsonl", limit=10)
    Traceback (most recent call last):
    ValueError: --limit chooses the items to scan; --scores scans none (give --limit to the scan)
    >>> ContaminationConfig(scores="s.jsonl", plot="epg.png")
    Traceback (most recent call last):
    ValueError: --plot needs --run (EPG is computed on a run's records)
    """

    corpus: tuple[str, ...] = setting(
        (),
        help="corpus files or folders: text (a document a line) or jsonl, .gz ok",
        nargs="+",
    )
    tasks: tuple[str, ...] = tasks_setting(
        (), note=" (with --scores: the tasks whose scores to keep) [with --scores: all]"
    )
    n: int = setting(DEFAULT_N, help="n-gram length")
    tokenizer: str = setting(
        "regex", help="regex (lower-cased \\w+ runs), whitespace, or hf:<model-or-folder>"
    )
    text_field: str = setting("text", help="jsonl field holding the text")
    fmt: str = setting("auto", help="", names=("--format",), choices=("auto", "text", "jsonl"))
    workers: int | None = setting(None, help="processes [local cores]")
    ray: str | None = setting(
        None,
        help="scan with Ray: a local one, or a cluster ('auto', 'ray://host:10001')",
        nargs="?",
        const="local",
        metavar="ADDRESS",
    )
    shard_mb: int = setting(SHARD_BYTES >> 20, help=f"[{SHARD_BYTES >> 20}]")
    out: str = out_setting("per-item scores", "contamination.jsonl")
    scores: str | None = setting(None, help="read scores from this file; do not scan")
    run: str | tuple[str, ...] | None = setting(
        None,
        help="run folder whose records EPG is computed on (repeat the flag for several: "
        "one line per model in each panel of --plot)",
        action="append",
        metavar="RUN",
    )
    thresholds: tuple[float, ...] | str = setting(
        DEFAULT_THRESHOLDS,
        help="comma-separated t, or 'distinct' (every score seen) [0,0.1,...,0.9]",
        parse=thresholds,
    )
    # Any metric of the table that records give (accuracy, macro F1, gold NLL, ...).
    metric: str = setting(
        "accuracy", help="", choices=lambda: tuple(m.name for m in metrics(source="records"))
    )
    plot: str | None = setting(None, help="write EPG vs %% contaminated to this .pdf, .svg or .png")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.scores and (not self.tasks or not self.corpus):
            raise ValueError("contamination needs --task and --corpus (or --scores FILE)")
        if self.scores and (self.limit is not None or self.sample is not None):
            # Each is a count of items scanned: with a scores file nothing is, and every
            # item of the file would be counted and used under the number typed.
            flag = "--limit" if self.limit is not None else "--sample"
            raise ValueError(
                f"{flag} chooses the items to scan; --scores scans none (give {flag} to the scan)"
            )
        if not self.run and self.plot:
            raise ValueError("--plot needs --run (EPG is computed on a run's records)")
        if self.plot:
            figure_format(self.plot)

    @property
    def runs(self) -> tuple[str, ...]:
        """The run folders of ``run`` (one name, or those of the repeated flag)."""
        if self.run is None:
            return ()
        return (self.run,) if isinstance(self.run, str) else tuple(self.run)


def _scan(config: ContaminationConfig) -> dict[str, Any]:
    if config.ray is not None and importlib.util.find_spec("ray") is None:
        raise ValueError("--ray needs Ray installed (pip install ray)")
    items = {}
    for name in config.tasks:
        ds = config.load(name, config.split)
        # Records carry the task's registered name: scores must use the same.
        items[get_task(name).name] = config.select_items(ds.items, f"{name} {ds.split}")
    scores, result = score_tasks(
        items,
        config.corpus,
        config.n,
        config.tokenizer,
        ScanOptions(config.fmt, config.text_field),
        config.workers,
        config.shard_mb << 20,
        use_ray=config.ray is not None,
        ray_address=None if config.ray in (None, "local") else config.ray,
    )
    out = write_scores(scores, config.out)
    summary = {
        "n": config.n,
        "tokenizer": config.tokenizer,
        "corpus": [str(p) for p in corpus_files(config.corpus)],
        "tasks": score_summary(scores),
        "scan": result.stats(),
    }
    side = out.with_name((out.stem if out.suffix == ".jsonl" else out.name) + ".summary.json")
    atomic_write(side, json.dumps(summary, indent=2) + "\n", root=side.parent)
    return {"scores": scores, "scan": result.stats(), "out": out, "summary": side}


def contamination_report(
    config: ContaminationConfig, *, also: Sequence[str | Path] = ()
) -> dict[str, Any]:
    """What ``nlieval contamination`` does. Returns ``scores`` (one row per item);
    after a scan also ``scan`` (what it read, :meth:`ScanResult.stats`), ``out`` (the
    scores file) and ``summary`` (``<out stem>.summary.json``: settings, per-task
    summary, corpus read, throughput); with ``run``, ``epg`` (rows over the thresholds)
    and ``plot`` (the figure, when asked; ``also``: more paths the same drawing is saved
    at, ``epg.pdf`` beside ``epg.png``).

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "c.txt").write_text("a man is sleeping on a bench in the park today\\n")
    >>> cfg = ContaminationConfig(tasks=("smoke",), corpus=(str(folder / "c.txt"),),
    ...                           limit=2, out=str(folder / "s.jsonl"), workers=1)
    >>> got = contamination_report(cfg)
    >>> len(got["scores"]), got["summary"].name, "epg" in got
    (2, 's.summary.json', False)
    """
    got: dict[str, Any]
    if config.scores:
        scores = read_scores(config.scores)
        if config.tasks:
            wanted = {get_task(t).name for t in config.tasks}
            held = {str(s["task"]) for s in scores}
            absent = sorted(wanted - held)
            if absent:
                # Its table would have no row for it: 0 items, said by nothing.
                raise ValueError(
                    f"{config.scores}: no score of task {', '.join(absent)} (it scores "
                    f"{', '.join(sorted(held)) or 'nothing'})"
                )
            scores = [s for s in scores if s["task"] in wanted]
        got = {"scores": scores}
    else:
        got = _scan(config)
    if not config.runs:
        return got
    cuts: Sequence[float]
    if isinstance(config.thresholds, str):  # "distinct"
        cuts = sorted({float(s["score"]) for s in got["scores"]})
    else:
        cuts = config.thresholds
    # Every folder's records: EPG has a row per model (and checkpoint, k) of them all.
    rows = epg(iter_run_records(config.runs), got["scores"], cuts, config.metric)
    got["epg"] = rows
    if config.plot:
        paths = (config.plot, *also)
        got["plot"] = plot_epg(rows, paths if also else config.plot, width=config.inches)
    return got


def format_summary(scores: list[dict[str, Any]]) -> str:
    """The share of items contaminated per task, as a Markdown table.

    >>> print(format_summary([{"task": "t", "score": 1.0}]).splitlines()[-1])
    | t | 1 | 1.0000 | 100.0 | 100.0 | 100.0 |
    """
    lines = [
        "| task | items | mean score | % > 0 | % >= 0.5 | % = 1 |",
        "|---|---|---|---|---|---|",
    ]
    for r in score_summary(scores):
        lines.append(
            f"| {r['task']} | {r['n_items']} | {r['mean_score']:.4f} | {r['pct_any']:.1f} "
            f"| {r['pct_half']:.1f} | {r['pct_full']:.1f} |"
        )
    return "\n".join(lines)
