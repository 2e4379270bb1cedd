"""ChaosNLI: model predictions against the distribution of 100 human labels per item.

Records of one (model, checkpoint, task, k) are scored per seed on the items every seed
has, then averaged (mean and sample std), as in :func:`nlieval.metrics.summarize`; every
metric is an average over items: "old" accuracy against the original label
(``acc_original``), "new" against the ChaosNLI majority (``acc_majority``) and the
divergences of :mod:`~nlieval.analyses.label_distributions` (as the ChaosNLI reference
computes them; that module's public names are importable from here too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..data import fleiss_kappa, label_change_share, load_task
from ..ground import Cell, Document, Table
from ..metrics import METRICS as TABLE
from ..metrics import metrics
from ..significance import CONFIDENCE, wilson_interval
from ..types import Record
from .label_distributions import (
    ALPHA_ORDER,
    DIVERGENCES,
    EPS,
    NLI_ORDER,
    HumanBaseline,
    assign_bins,
    bin_edges,
    canonical_order,
    divergences,
    entropy_bits,
    human_distribution,
    human_line,
    item_divergences,
    model_distribution,
    split_half_exact,
    split_half_js,
)
from .notes import seeds_note
from .predictions import load_official, official_prediction

if TYPE_CHECKING:
    # pandas takes half a second to import: loaded by the functions that build frames, so
    # that `nlieval --help` (which imports every command's settings) does not pay it.
    import pandas as pd

__all__ = [
    "ALPHA_ORDER",
    "Against",
    "DIVERGENCES",
    "EPS",
    "GROUP",
    "HumanBaseline",
    "KEY",
    "METRICS",
    "NLI_ORDER",
    "UNIFORM",
    "all_correct_subset",
    "assign_bins",
    "bin_edges",
    "canonical_order",
    "common_items",
    "divergences",
    "entropy_bins",
    "entropy_bits",
    "fleiss_kappa",
    "format_all_correct",
    "format_bins_table",
    "format_table",
    "human_distribution",
    "human_line",
    "item_divergences",
    "item_frame",
    "label_change_share",
    "model_distribution",
    "prediction_frame",
    "report",
    "score_prediction_file",
    "score_predictions",
    "score_records",
    "split_half_exact",
    "split_half_js",
]

#: The ChaosNLI metrics of the one table (:data:`nlieval.metrics.METRICS`), computed here.
METRICS = tuple(m.name for m in metrics(source="chaosnli"))
UNIFORM = tuple(f"uniform_{m}" for m in DIVERGENCES)
GROUP = ["model", "checkpoint", "task", "k"]
Against = Literal["original", "majority"]


# --------------------------------------------------------------------------- item tables

KEY = [*GROUP, "seed", "item_id"]


def _frame(
    keys: Sequence[tuple[Any, ...]],
    counts: Sequence[Sequence[float]],
    probs: Sequence[Sequence[float]],
    correct_original: Sequence[bool],
    correct_majority: Sequence[bool],
) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(list(keys), columns=KEY)
    df["acc_original"] = np.asarray(correct_original, dtype=float)
    df["acc_majority"] = np.asarray(correct_majority, dtype=float)
    df["human_counts"] = [tuple(c) for c in counts]
    for col in ("entropy", *DIVERGENCES, *UNIFORM):
        df[col] = np.nan
    width = np.array([len(c) for c in counts], dtype=int)
    # Vectorised per label-set size: NLI (3) and alpha-NLI (2) records may be mixed.
    for w in np.unique(width):
        idx = [int(i) for i in np.flatnonzero(width == w)]
        h = np.asarray([counts[i] for i in idx], dtype=np.float64)
        m = np.asarray([probs[i] for i in idx], dtype=np.float64)
        per = item_divergences(h, m)
        uni = item_divergences(h, np.full_like(h, 1.0 / w))
        df.loc[idx, "entropy"] = entropy_bits(h)
        for name in DIVERGENCES:
            df.loc[idx, name] = per[name]
            df.loc[idx, f"uniform_{name}"] = uni[name]
    # The same record in two run folders counts once.
    return df.drop_duplicates(KEY, keep="first").reset_index(drop=True)


def item_frame(records: Iterable[Record]) -> pd.DataFrame:
    """One row per ChaosNLI record: correctness against both labels, the entropy of the
    human labels (bits) and the divergences of the model and of a uniform distribution.

    Records without ``human_counts`` in their meta (other tasks) are skipped; the model's
    probabilities are put in ChaosNLI order whatever the option order was.

    >>> r = Record("chaosnli_alphanli", "u1", "m", 0, 0, ("2", "1"), (0.0, 0.0),
    ...            (0.25, 0.75), "1", "1", meta={"human_counts": [75, 25],
    ...            "majority_label": "1"})
    >>> float(item_frame([r]).loc[0, "kl"])
    0.0
    """
    keys: list[tuple[Any, ...]] = []
    counts: list[Sequence[float]] = []
    probs: list[list[float]] = []
    right_o: list[bool] = []
    right_m: list[bool] = []
    for r in records:
        human = r.meta.get("human_counts")
        if human is None:
            continue
        order = canonical_order(r.labels)
        if len(human) != len(order):
            raise ValueError(f"{r.task} item {r.item_id}: {len(human)} human counts")
        keys.append((r.model, r.checkpoint or "", r.task, r.k, r.seed, r.item_id))
        counts.append(human)
        probs.append([r.probs[r.labels.index(lab)] for lab in order])
        right_o.append(r.gold is not None and r.pred == r.gold)
        right_m.append(r.pred is not None and r.pred == r.meta.get("majority_label"))
    return _frame(keys, counts, probs, right_o, right_m)


def _as_frame(records: Iterable[Record] | pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    return records if isinstance(records, pd.DataFrame) else item_frame(records)


def _shared_items(g: pd.DataFrame) -> pd.DataFrame:
    # Seeds compare like for like: only items scored under every seed of the group.
    n_seeds = g["seed"].nunique()
    return g[g.groupby("item_id")["seed"].transform("nunique") == n_seeds]


def _key_dict(key: tuple[Any, ...]) -> dict[str, Any]:
    model, ckpt, task, k = key
    return {"model": str(model), "checkpoint": ckpt or None, "task": str(task), "k": int(k)}


def _aggregate(g: pd.DataFrame) -> dict[str, Any]:
    """Per-seed means of every metric, then their mean and sample std over seeds."""
    per_seed = g.groupby("seed")[list(METRICS)].mean()
    out: dict[str, Any] = {"seeds": [int(s) for s in per_seed.index]}
    for name in METRICS:
        out[name] = float(per_seed[name].mean())
        out[name + "_std"] = float(per_seed[name].std(ddof=1)) if len(per_seed) > 1 else 0.0
    return out


def _score_frame(frame: pd.DataFrame, human: HumanBaseline | None = None) -> list[dict[str, Any]]:
    human = human or HumanBaseline()
    rows = []
    for key, g in frame.groupby(GROUP, sort=True):
        g = _shared_items(g)
        items = g.drop_duplicates("item_id")
        row = {**_key_dict(key), "n": len(items), **_aggregate(g)}
        row["uniform"] = {m: float(items[f"uniform_{m}"].mean()) for m in DIVERGENCES}
        row["human"] = human_line(items, str(key[2]), human)
        rows.append(row)
    return rows


def common_items(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of items that every system (model, checkpoint, k, seed) of their task
    scored: divergences of systems run on different items are then comparable.

    >>> common_items(item_frame([])).empty
    True
    """
    import pandas as pd

    if frame.empty:
        return frame
    systems = ["model", "checkpoint", "k", "seed"]
    keep = []
    for _, g in frame.groupby("task", sort=False):
        n_systems = len(g.drop_duplicates(systems))
        per_item = g.drop_duplicates([*systems, "item_id"]).groupby("item_id").size()
        keep.append(g[g["item_id"].isin(per_item.index[per_item == n_systems])])
    return pd.concat(keep).reset_index(drop=True)


# --------------------------------------------------------------------------- public scores


def score_records(
    records: Iterable[Record] | pd.DataFrame, human: HumanBaseline | None = None
) -> list[dict[str, Any]]:
    """One row per (model, checkpoint, task, k) of the ChaosNLI records given.

    Each row has ``n`` (items per seed), ``seeds``, the mean over seeds of ``js_distance``,
    ``js_divergence``, ``kl``, ``acc_original``, ``acc_majority`` (each with ``_std``) and
    ``uniform``: the divergences of a uniform distribution on the same items, and
    ``human``: the human-vs-human line on them (:func:`human_line`).

    >>> r = Record("chaosnli_alphanli", "u1", "m", 0, 0, ("1", "2"), (0.0, 0.0),
    ...            (0.5, 0.5), "1", "2", meta={"human_counts": [50, 50],
    ...            "majority_label": "1"})
    >>> row = score_records([r])[0]
    >>> row["acc_original"], row["acc_majority"], row["kl"]
    (0.0, 1.0, 0.0)
    """
    return _score_frame(_as_frame(records), human)


#: The accuracies of a bin that get an interval (against the original and the majority
#: label).
ACCURACIES = ("acc_original", "acc_majority")
#: Their interval, as tables, figures and JSON (``acc_interval``) name it.
INTERVAL = f"{CONFIDENCE:.0%} Wilson"


def entropy_bins(records: Iterable[Record] | pd.DataFrame, n_bins: int = 5) -> list[dict[str, Any]]:
    """Metrics per quantile bin of the human-label entropy (bits), per
    (model, checkpoint, task, k). Bin edges are computed per task over the distinct items
    of the records; empty bins (from ties) give no row. Each accuracy has its
    :data:`~nlieval.significance.CONFIDENCE` Wilson interval over the bin's ``n`` items
    (``acc_original_low`` / ``_high``, :func:`nlieval.significance.wilson_interval`;
    of the mean over seeds where there are several, whose spread ``_std`` gives), named
    by ``acc_interval``.

    >>> rows = entropy_bins([], 5)
    >>> rows
    []
    """
    frame = _as_frame(records)
    if frame.empty:
        return []
    frame = frame.assign(bin=0)
    edges: dict[str, NDArray[np.float64]] = {}
    for task, g in frame.groupby("task"):
        edges[str(task)] = bin_edges(g.drop_duplicates("item_id")["entropy"], n_bins)
        frame.loc[g.index, "bin"] = assign_bins(g["entropy"], edges[str(task)])
    rows = []
    for key, g in frame.groupby(GROUP, sort=True):
        g = _shared_items(g)
        e = edges[str(key[2])]
        for b, gb in g.groupby("bin"):
            b = int(b)
            head = {**_key_dict(key), "bin": b, "lo": float(e[b]), "hi": float(e[b + 1])}
            row = {**head, "n": int(gb["item_id"].nunique()), **_aggregate(gb)}
            for name in ACCURACIES:
                row[f"{name}_low"], row[f"{name}_high"] = wilson_interval(row[name], row["n"])
            row["acc_interval"] = INTERVAL
            rows.append(row)
    return rows


def _system(col: tuple[Any, ...]) -> str:
    model, ckpt, k, seed = col
    return f"{model}" + (f"@{ckpt}" if ckpt else "") + f" k={k} seed={seed}"


def all_correct_subset(
    runs: Iterable[Record] | pd.DataFrame, against: Against = "original"
) -> list[dict[str, Any]]:
    """Per task, the items that every compared system got right, and metrics on them.

    A system is one (model, checkpoint, k, seed): every set of predictions counts. Only
    items that every system scored are candidates. ``against`` picks the label; the
    reference's "All Correct Count" uses the majority label.

    >>> all_correct_subset([])
    []
    """
    frame = _as_frame(runs)
    col = f"acc_{against}"
    out = []
    for task, g in frame.groupby("task", sort=True):
        wide = g.set_index(["item_id", "model", "checkpoint", "k", "seed"])[col].unstack(
            ["model", "checkpoint", "k", "seed"]
        )
        shared = wide[wide.notna().all(axis=1)]
        right = sorted(str(i) for i in shared.index[shared.astype(bool).all(axis=1)])
        out.append(
            {
                "task": str(task),
                "against": against,
                "systems": [_system(c) for c in wide.columns],
                "n_items": len(shared),
                "n_all_correct": len(right),
                "item_ids": right,
                "rows": _score_frame(g[g["item_id"].isin(right)]),
            }
        )
    return out


# --------------------------------------------------------------------------- prediction files


def prediction_frame(
    path: str | Path, task: str, data_dir: str | Path | None = None
) -> pd.DataFrame:
    """The item table (as :func:`item_frame`) of a prediction file in the official ChaosNLI
    format, ``{model: {uid: {uid, logits | predicted_probabilities, predicted_label}}}``,
    against the human labels of ``task`` (``chaosnli_snli``, ``chaosnli_mnli`` or
    ``chaosnli_alphanli``). Every item of the task must have a prediction from every model.

    >>> import json, math
    >>> row = {"uid": "u1", "label_count": [50, 50, 0], "majority_label": "e", "old_label": "n",
    ...        "entropy": 1.0, "example": {"premise": "A man naps.", "hypothesis": "He sleeps."}}
    >>> _ = (Path(run_dir) / "chaosNLI_snli.jsonl").write_text(json.dumps(row) + "\\n")
    >>> path = Path(run_dir) / "preds.json"
    >>> _ = path.write_text(json.dumps({"m": {"u1": {"predicted_probabilities": [0.25, 0.75, 0],
    ...                                              "predicted_label": "neutral"}}}))
    >>> frame = prediction_frame(path, "chaosnli_snli", data_dir=run_dir)
    >>> frame.loc[0, ["acc_original", "acc_majority"]].tolist()  # original n, majority e
    [1.0, 0.0]
    >>> math.isclose(frame.loc[0, "kl"], 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75))
    True
    """
    raw = load_official(path)
    ds = load_task(task, data_dir)
    order = tuple(lab.value for lab in ds.labels)
    if not ds.items or "human_counts" not in ds.items[0].meta or order != canonical_order(order):
        raise ValueError(f"{task} is not a ChaosNLI task (no human label counts)")
    keys: list[tuple[Any, ...]] = []
    counts, probs, right_o, right_m = [], [], [], []
    for model, preds in raw.items():
        missing = [it.id for it in ds.items if it.id not in preds]
        if missing:
            raise ValueError(
                f"{path}: {model!r} has no prediction for {len(missing)} of {len(ds)} "
                f"{task} items, e.g. {missing[0]!r}"
            )
        for it in ds.items:
            where = f"{path}: {model!r} {it.id!r}"
            p, pred = official_prediction(preds[it.id], order, where)
            probs.append(p)
            keys.append((str(model), "", task, 0, 0, it.id))
            counts.append(it.meta["human_counts"])
            right_o.append(it.label is not None and pred == it.label.value)
            right_m.append(pred == it.meta["majority_label"])
    return _frame(keys, counts, probs, right_o, right_m)


def score_predictions(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of :func:`score_records` for a :func:`prediction_frame`, in file order, with
    ``k`` None and no ``seeds`` (published predictions have no sweep point).

    >>> from dataclasses import replace
    >>> r = Record("chaosnli_alphanli", "u1", "z", 0, 0, ("1", "2"), (0.0, 0.0), (0.5, 0.5),
    ...            "1", "2", meta={"human_counts": [50, 50], "majority_label": "1"})
    >>> rows = score_predictions(item_frame([r, replace(r, model="a")]))
    >>> [(row["model"], row["k"], row["seeds"], row["kl"]) for row in rows]  # not sorted
    [('z', None, [], 0.0), ('a', None, [], 0.0)]
    """
    first = {m: i for i, m in enumerate(dict.fromkeys(frame["model"]))}
    rows = sorted(_score_frame(frame), key=lambda r: first[r["model"]])
    for r in rows:
        r.update(k=None, seeds=[])
    return rows


def score_prediction_file(
    path: str | Path, task: str, data_dir: str | Path | None = None
) -> list[dict[str, Any]]:
    """One row per model of an official-format prediction file (see
    :func:`prediction_frame`), in file order.

    That is ``score_predictions(prediction_frame(path, task, data_dir))`` (see their
    examples) with each row's ``source`` set to ``str(path)``.
    """
    rows = score_predictions(prediction_frame(path, task, data_dir))
    for r in rows:
        r["source"] = str(path)
    return rows


# --------------------------------------------------------------------------- tables


def _num(row: Mapping[str, Any], name: str, digits: int = 4, each: bool = False) -> Cell:
    text = f"{row[name]:.{digits}f}"
    seeds = len(row.get("seeds") or ())
    if seeds > 1:
        text += f" ± {row[name + '_std']:.{digits}f}" + (f" ({seeds} seeds)" if each else "")
    return Cell(text, float(row[name]))


def _seeds(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], bool]:
    """The lines under a table that say how many seeds are behind its ± (grid's words),
    and whether each cell must name its count (the rows differ)."""
    note, each = seeds_note(n for r in rows if (n := len(r.get("seeds") or ())) > 1)
    return (["", note] if note else []), each


def _k(row: Mapping[str, Any]) -> Cell:
    return Cell("-") if row.get("k") is None else Cell(str(row["k"]), row["k"])


def format_table(rows: Sequence[Mapping[str, Any]]) -> Document:
    """The table of :func:`score_records` or :func:`score_prediction_file` rows, as
    values: the ChaosNLI metrics of :data:`nlieval.metrics.METRICS` (their labels and
    digits), with a uniform-baseline line and a human-vs-human line per task and item
    count (JS distance is the reference's "JSD" column; "-" for a metric they lack);
    under it, how many seeds are behind a ± (:func:`nlieval.analyses.notes.seeds_note`).

    >>> format_table([])
    ['(no ChaosNLI records)']
    """
    if not rows:
        return ["(no ChaosNLI records)"]
    ckpt = any(r.get("checkpoint") for r in rows)
    head = ["model", *(["checkpoint"] if ckpt else []), "task", "k", "n"]
    shown = metrics(source="chaosnli")
    head += [m.label for m in shown]
    body: list[list[Cell | str]] = []
    baselines: dict[tuple[str, int], Mapping[str, Any]] = {}
    notes, each = _seeds(rows)
    for r in rows:
        cells = [r["model"], *([r.get("checkpoint") or "-"] if ckpt else []), r["task"], _k(r)]
        body.append([*cells, Cell(str(r["n"]), r["n"]),
                     *(_num(r, m.name, m.digits, each) for m in shown)])  # fmt: skip
        baselines.setdefault((r["task"], r["n"]), r)
    for (task, n), r in baselines.items():
        u = r["uniform"]
        cells = ["uniform (baseline)", *(["-"] if ckpt else []), task, "-", Cell(str(n), n)]
        body.append([*cells, *(_maybe(u.get(m.name), m.digits) for m in shown)])
        h = r.get("human")
        if h:
            values = [_maybe(h.get(m.name), m.digits) if m.name in DIVERGENCES else Cell("-")
                      for m in shown]  # fmt: skip
            body.append([h["label"], *(["-"] if ckpt else []), task, "-", Cell(str(n), n), *values])
    return [Table.of(head, body, notes=notes)]


def _maybe(value: float | None, digits: int = 4) -> Cell:
    return Cell("-") if value is None else Cell(f"{value:.{digits}f}", float(value))


def format_bins_table(rows: Sequence[Mapping[str, Any]]) -> Document:
    """The table of :func:`entropy_bins` rows, as values: each accuracy with its
    interval (:data:`INTERVAL`, named in the heading and in a note), the JS distance and
    KL (labels of :data:`nlieval.metrics.METRICS`, 3 digits), and how many seeds are
    behind a ±.

    >>> format_bins_table([])
    ['(no ChaosNLI records)']
    """
    if not rows:
        return ["(no ChaosNLI records)"]
    ckpt = any(r.get("checkpoint") for r in rows)
    head = ["model", *(["checkpoint"] if ckpt else []), "task", "k", "entropy (bits)", "n"]
    level = INTERVAL
    head += [f"{TABLE[m].label} [{level}]" for m in ACCURACIES]
    head += [TABLE["js_distance"].label, TABLE["kl"].label]
    notes, each = _seeds(rows)
    body = []
    for r in rows:
        cells: list[Cell | str] = [r["model"], *([r.get("checkpoint") or "-"] if ckpt else [])]
        cells += [r["task"], _k(r), f"{r['lo']:.3f}–{r['hi']:.3f}", Cell(str(r["n"]), r["n"])]
        for m in ACCURACIES:
            low, high = r.get(f"{m}_low"), r.get(f"{m}_high")
            shown = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
            value = _num(r, m, 3, each)
            cells.append(Cell(value.text + shown, value.value))
        body.append([*cells, _num(r, "js_distance", 3, each), _num(r, "kl", 3, each)])
    interval = (
        f"[ , ]: {level} interval of the accuracy over the bin's n items (of the mean "
        "over seeds where there are several)"
    )
    return [Table.of(head, body, notes=["", interval, *notes[1:]])]


def format_all_correct(subsets: Sequence[Mapping[str, Any]]) -> Document:
    """Summary of :func:`all_correct_subset`, as lines and tables: counts, then metrics
    on the subset.

    >>> format_all_correct([])
    ['(no ChaosNLI records)']
    """
    if not subsets:
        return ["(no ChaosNLI records)"]
    parts: list[Document] = []
    for s in subsets:
        parts.append(
            [
                f"{s['task']}: {s['n_all_correct']} of {s['n_items']} items right "
                f"(against the {s['against']} label) for all {len(s['systems'])} systems"
            ]
        )
        if s["rows"]:
            parts.append(format_table(s["rows"]))
    return _apart(parts)


def _apart(parts: Sequence[Document]) -> Document:
    # Blocks one after another with a blank line between.
    out: list[Table | str] = []
    for i, part in enumerate(parts):
        out += [*([""] if i else []), *part]
    return out


def format_report(result: Mapping[str, Any]) -> Document:
    """What ``nlieval chaosnli`` (and ``chaosnli-score``) print of a :func:`report`, as
    tables and lines (:func:`nlieval.ground.render` writes them): the scores, accuracy by
    human-label entropy, the all-correct subsets (an experiment's ``chaosnli`` output
    writes the same).

    >>> format_report(report([]))[-1]
    '(no ChaosNLI records)'
    """
    return _apart(
        (
            format_table(result["scores"]),
            ["Accuracy by human-label entropy (quantile bins):"],
            format_bins_table(result["entropy_bins"]),
            ["Items every compared system got right:"],
            format_all_correct(result["all_correct"]),
        )
    )


def report(
    records: Iterable[Record] | pd.DataFrame,
    n_bins: int = 5,
    against: Against = "original",
    human: HumanBaseline | None = None,
    common: bool = False,
) -> dict[str, Any]:
    """Everything ``nlieval chaosnli`` shows: ``scores`` (:func:`score_records`, with the
    uniform and human lines), ``entropy_bins`` and ``all_correct``; with ``common`` only
    the items every system of a task scored (see :func:`common_items`).

    >>> report([])["scores"]
    []
    """
    frame = _as_frame(records)
    if common:
        frame = common_items(frame)
    return {
        "scores": score_records(frame, human),
        "entropy_bins": entropy_bins(frame, n_bins),
        "all_correct": all_correct_subset(frame, against),
        "human": {
            "exact": (human or HumanBaseline()).splits is None,
            "splits": (human or HumanBaseline()).splits,
            "seed": (human or HumanBaseline()).seed,
            "published": dict((human or HumanBaseline()).published),
        },
        "common_items": common,
    }
