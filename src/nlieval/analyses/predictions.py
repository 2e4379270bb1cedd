"""Prediction files of classifiers made elsewhere: the one reader of each format.

Three formats give a probability distribution per item id, and two a predicted label per
item id, so that classifiers made elsewhere can be compared with language models on any
task (:mod:`nlieval.analyses.imports` turns them into run folders):

``baan2022``
    The files of Baan et al. (2022), ``{SNLI,MNLI}_{dev,test}_{model}_{seed}.json[l][.gz]``:
    one JSON object per line with ``uid``, ``probs`` (or ``logits``), ``pred`` and ``true``
    as label **indices in the order 0 = entailment, 1 = contradiction, 2 = neutral**
    (not the usual e/n/c). Task, model and seed come from the file name.
``chaosnli``
    The official ChaosNLI prediction file, one JSON document
    ``{model: {uid: {uid, predicted_probabilities | logits, predicted_label}}}`` with the
    probabilities in ChaosNLI order ([e, n, c], or [1, 2] for alpha-NLI).
``jsonl``
    One object per line: ``id`` (or ``uid``) and ``probs`` (or ``probabilities``,
    ``predicted_probabilities``, ``logits``), optionally ``pred`` (a label); the
    probabilities in the task's label order unless another order is given.
``labels``
    A predicted label per item, from a ``.jsonl``, ``.csv`` or ``.tsv`` file: the id in
    ``id``, ``uid`` or ``pairID``, the label in ``pred``, ``prediction``, ``label`` or
    ``predicted_label``. A label alone is no distribution: the record keeps a one-hot
    distribution and no log-likelihood (``gold NLL`` is n/a for it).
``hans``
    The HANS prediction files of McCoy et al. (2019), ``bert_preds.txt`` and kin: a csv
    ``pairID,gold_label`` whose second column, despite its name, holds each item's
    predicted label. On a two-way task (entailment / non-entailment) the 3-way
    predictions neutral and contradiction both count as non-entailment, HANS's own rule.

Every bad entry raises ``ValueError`` with one line naming the file, the line (or the
model and uid of a JSON document) and the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .. import ground
from ..types import Label

#: How far from 1 a file's predicted probabilities may sum (rounding in the file).
PROB_TOLERANCE = 1e-3
Format = Literal["baan2022", "chaosnli", "jsonl", "labels", "hans"]
FORMATS: tuple[str, ...] = ("baan2022", "chaosnli", "jsonl", "labels", "hans")
#: Baan et al.'s label indices (verified against the SNLI gold labels; see SOURCES.md).
BAAN_ORDER: tuple[str, ...] = ("entailment", "contradiction", "neutral")
BAAN_NAME = re.compile(
    r"^(?P<set>SNLI|MNLI)_(?P<half>dev|test)_(?P<model>.+)_(?P<seed>\d+)\.jsonl?(\.gz)?$"
)
BAAN_TASKS = {"SNLI": "chaosnli_snli", "MNLI": "chaosnli_mnli"}
PROB_FIELDS = ("probs", "probabilities", "predicted_probabilities")
ID_FIELDS = ("id", "uid")
LABEL_ID_FIELDS = ("id", "uid", "pairID")
LABEL_FIELDS = ("pred", "prediction", "label", "predicted_label")


@dataclass(frozen=True)
class Prediction:
    """One item's prediction: ``probs`` in the label order of the reader's ``labels``;
    ``pred`` the predicted label (None: take the most probable); ``gold`` the label the
    file itself gives (Baan's ``true``), used only to check the label order."""

    item_id: str
    probs: tuple[float, ...]
    pred: str | None
    where: str
    gold: str | None = None
    #: The file gave a label, not a distribution: ``probs`` is one-hot.
    label_only: bool = False


@dataclass(frozen=True)
class PredictionSet:
    """The predictions of one model (and seed) from one file; ``task`` None when the file
    does not say which ChaosNLI set it is for."""

    path: str
    format: str
    model: str
    seed: int
    task: str | None
    predictions: tuple[Prediction, ...]


def detect_format(path: str | Path) -> Format:
    """The format a file name suggests: Baan et al.'s names, ``.json`` (one document:
    official ChaosNLI), ``.csv``/``.tsv`` (labels), HANS's ``*preds*.txt``, else jsonl.

    >>> detect_format("SNLI_dev_roberta-base_0.jsonl.gz"), detect_format("p.json")
    ('baan2022', 'chaosnli')
    >>> detect_format("bert_preds.txt"), detect_format("mine.csv"), detect_format("p.jsonl")
    ('hans', 'labels', 'jsonl')
    """
    name = Path(path).name
    if BAAN_NAME.match(name):
        return "baan2022"
    if name.endswith(".json"):
        return "chaosnli"
    if name.lower().removesuffix(".gz").endswith((".csv", ".tsv")):
        return "labels"
    if "preds" in name and name.endswith(".txt"):
        return "hans"
    return "jsonl"


def _json_lines(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for line in ground.read_jsonl(path):  # this module's read_jsonl reads predictions
        yield f"{line.path}:{line.line}", line.value


def probabilities(values: Any, width: int, where: str, name: str) -> list[float]:
    """Validated probabilities from a field: ``width`` finite numbers, >= 0, summing to 1
    (within :data:`PROB_TOLERANCE`); a field named ``logits`` is put through a softmax.

    >>> probabilities([2.0, 2.0], 2, "f:1", "logits")
    [0.5, 0.5]
    >>> probabilities([0.5, 0.6], 2, "f:1", "probs")
    Traceback (most recent call last):
    ValueError: f:1: probs must be >= 0 and sum to 1 (within 0.001), got [0.5, 0.6]
    """
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name} must be a list of numbers") from None
    if arr.shape != (width,):
        shown = arr.tolist() if arr.ndim else values
        raise ValueError(f"{where}: {name}: expected {width} values, got {shown}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{where}: {name} must be finite, got {arr.tolist()}")
    if name == "logits":
        # scipy is slow to import: loaded only for a file of logits.
        from scipy.special import softmax

        return [float(x) for x in softmax(arr)]
    if (arr < 0).any() or abs(float(arr.sum()) - 1.0) > PROB_TOLERANCE:
        raise ValueError(
            f"{where}: {name} must be >= 0 and sum to 1 (within {PROB_TOLERANCE}), "
            f"got {arr.tolist()}"
        )
    return [float(x) for x in arr]


def _field(row: Mapping[str, Any], names: Sequence[str]) -> str | None:
    return next((n for n in names if n in row), None)


def _item_id(row: Mapping[str, Any], where: str, names: Sequence[str] = ID_FIELDS) -> str:
    name = _field(row, names)
    if name is None:
        raise ValueError(f"{where}: no item id (field {' or '.join(map(repr, names))})")
    value = row[name]
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value) == "":
        raise ValueError(f"{where}: {name} must be a non-empty string, got {value!r}")
    return str(value)


def _label(raw: Any, labels: Sequence[str], where: str, name: str) -> str:
    try:
        value = Label.parse(raw).value
    except ValueError:
        value = ""
    if value not in labels:
        raise ValueError(f"{where}: {name} {raw!r} is not one of {list(labels)}")
    return value


def _index_label(raw: Any, order: Sequence[str], where: str, name: str) -> str:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw < len(order):
        raise ValueError(f"{where}: {name} must be a label index 0-{len(order) - 1}, got {raw!r}")
    return order[raw]


def _reorder(
    probs: Sequence[float], file_order: Sequence[str], labels: Sequence[str]
) -> tuple[float, ...]:
    return tuple(probs[file_order.index(lab)] for lab in labels)


def _check_unique(preds: Sequence[Prediction], path: Path) -> None:
    seen: dict[str, str] = {}
    for p in preds:
        if p.item_id in seen:
            raise ValueError(f"{p.where}: id {p.item_id!r} again (first at {seen[p.item_id]})")
        seen[p.item_id] = p.where


def read_baan2022(
    path: str | Path, labels: Sequence[str] = ("entailment", "neutral", "contradiction")
) -> PredictionSet:
    """A prediction file of Baan et al. (2022); probabilities put in ``labels`` order.

    >>> import gzip, json
    >>> path = Path(run_dir) / "SNLI_dev_roberta-base_0.jsonl.gz"  # probs in order e, c, n
    >>> with gzip.open(path, "wt") as f:
    ...     _ = f.write(json.dumps({"uid": "u1", "probs": [0.7, 0.1, 0.2], "pred": 2, "true": 1}))
    >>> s = read_baan2022(path); p = s.predictions[0]
    >>> s.task, s.model, s.seed, p.probs, p.pred, p.gold
    ('chaosnli_snli', 'roberta-base', 0, (0.7, 0.2, 0.1), 'neutral', 'contradiction')
    """
    p = Path(path)
    m = BAAN_NAME.match(p.name)
    if m is None:
        raise ValueError(
            f"{p}: not a Baan et al. file name ({{SNLI,MNLI}}_{{dev,test}}_MODEL_SEED.json[l][.gz])"
        )
    if set(labels) != set(BAAN_ORDER):
        raise ValueError(f"{p}: Baan et al. files are 3-way NLI, not {list(labels)}")
    preds = []
    for where, row in _json_lines(p):
        uid = _item_id(row, where)
        name = _field(row, ("probs", "logits"))
        if name is None:
            raise ValueError(f"{where}: neither probs nor logits")
        probs = probabilities(row[name], 3, where, name)
        pred = _index_label(row["pred"], BAAN_ORDER, where, "pred") if "pred" in row else None
        gold = _index_label(row["true"], BAAN_ORDER, where, "true") if "true" in row else None
        preds.append(Prediction(uid, _reorder(probs, BAAN_ORDER, labels), pred, where, gold))
    _check_unique(preds, p)
    return PredictionSet(
        str(p), "baan2022", m["model"], int(m["seed"]), BAAN_TASKS[m["set"]], tuple(preds)
    )


#: The largest official prediction file read (all models of one ChaosNLI set are a few MB).
MAX_OFFICIAL_BYTES = 1 << 28


def load_official(path: str | Path) -> Mapping[str, Mapping[str, Any]]:
    """The raw ``{model: {uid: prediction}}`` of an official ChaosNLI prediction file.

    >>> path = Path(run_dir) / "p.json"
    >>> _ = path.write_text('{"m": {"u1": {"logits": [0, 0, 0], "predicted_label": "neutral"}}}')
    >>> load_official(path)["m"]["u1"]["predicted_label"]
    'neutral'
    >>> _ = path.write_text('{"m": [0.2, 0.8]}'); load_official(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: .../p.json: expected {model: {uid: prediction}}
    """
    # A regular file (a FIFO is refused, not waited on), bounded in size and depth.
    raw = ground.read_json(path, MAX_OFFICIAL_BYTES)
    if not isinstance(raw, Mapping) or not all(isinstance(v, Mapping) for v in raw.values()):
        raise ValueError(f"{path}: expected {{model: {{uid: prediction}}}}")
    return raw


def official_prediction(p: Any, labels: Sequence[str], where: str) -> tuple[list[float], str]:
    """Probabilities (from ``predicted_probabilities``, else a softmax of ``logits``) and
    the ``predicted_label`` of one entry of an official prediction file.

    >>> official_prediction({"logits": [0, 0], "predicted_label": 2}, ("1", "2"), "f")
    ([0.5, 0.5], '2')
    """
    if not isinstance(p, Mapping):
        raise ValueError(f"{where}: a prediction must be an object, got {type(p).__name__}")
    name = "predicted_probabilities" if "predicted_probabilities" in p else "logits"
    if name not in p:
        raise ValueError(f"{where}: neither predicted_probabilities nor logits")
    probs = probabilities(p[name], len(labels), where, name)
    return probs, _label(p.get("predicted_label"), labels, where, "predicted_label")


def read_official(path: str | Path, labels: Sequence[str], task: str | None) -> list[PredictionSet]:
    """One :class:`PredictionSet` per model of an official ChaosNLI prediction file
    (seed 0), probabilities in ``labels`` order (the file's: ChaosNLI order).

    >>> path = Path(run_dir) / "p.json"
    >>> _ = path.write_text('{"m": {"u1": {"predicted_probabilities": [0.2, 0.5, 0.3],'
    ...                     ' "predicted_label": "contradiction"}}}')
    >>> [s] = read_official(path, ("entailment", "neutral", "contradiction"), "chaosnli_snli")
    >>> s.model, s.seed, s.task, s.predictions[0].probs, s.predictions[0].pred
    ('m', 0, 'chaosnli_snli', (0.2, 0.5, 0.3), 'contradiction')
    """
    out = []
    for model, entries in load_official(path).items():
        preds = []
        for uid, entry in entries.items():
            where = f"{path}: {model!r} {uid!r}"
            probs, label = official_prediction(entry, labels, where)
            preds.append(Prediction(str(uid), tuple(probs), label, where))
        out.append(PredictionSet(str(path), "chaosnli", str(model), 0, task, tuple(preds)))
    return out


def read_jsonl(
    path: str | Path,
    labels: Sequence[str],
    *,
    model: str,
    seed: int = 0,
    task: str | None = None,
    file_order: Sequence[str] | None = None,
) -> PredictionSet:
    """A plain jsonl of id and probabilities (see the module docstring); ``file_order``
    is the order of the file's probabilities (default: ``labels``).

    >>> path = Path(run_dir) / "preds.jsonl"
    >>> _ = path.write_text('{"id": "u1", "probs": [0.1, 0.6, 0.3]}\\n')  # order c, e, n
    >>> s = read_jsonl(path, ("entailment", "neutral", "contradiction"), model="my-bert",
    ...                file_order=("contradiction", "entailment", "neutral"))
    >>> s.model, s.predictions[0].probs, s.predictions[0].pred
    ('my-bert', (0.6, 0.3, 0.1), None)
    """
    order = tuple(file_order or labels)
    if sorted(order) != sorted(labels):
        raise ValueError(
            f"{path}: label order {list(order)} is not a permutation of {list(labels)}"
        )
    p = Path(path)
    preds = []
    for where, row in _json_lines(p):
        uid = _item_id(row, where)
        name = _field(row, (*PROB_FIELDS, "logits"))
        if name is None:
            raise ValueError(f"{where}: no probabilities (field 'probs' or 'logits')")
        probs = probabilities(row[name], len(order), where, name)
        pred = _label(row["pred"], labels, where, "pred") if row.get("pred") is not None else None
        preds.append(Prediction(uid, _reorder(probs, order, labels), pred, where))
    _check_unique(preds, p)
    return PredictionSet(str(p), "jsonl", model, seed, task, tuple(preds))


def two_way(label: str, labels: Sequence[str]) -> str:
    """``label`` on the task's ``labels``: a 3-way neutral or contradiction is
    non-entailment on a two-way entailment / non-entailment task (HANS's rule), any other
    label stays as it is.

    >>> two_way("neutral", ("entailment", "non-entailment")), two_way("neutral", ("1", "2"))
    ('non-entailment', 'neutral')
    """
    two = {"entailment", "non-entailment"}
    if set(labels) == two and label in ("neutral", "contradiction"):
        return "non-entailment"
    return label


def read_labels(
    path: str | Path,
    labels: Sequence[str],
    *,
    model: str,
    seed: int = 0,
    task: str | None = None,
    hans: bool = False,
) -> PredictionSet:
    """A file of predicted labels keyed by item id (``labels``, or ``hans``: the HANS
    prediction files, whose ``gold_label`` column holds the predictions); each
    prediction is one-hot over ``labels``.

    >>> path = Path(run_dir) / "bert_preds.txt"
    >>> _ = path.write_text("pairID,gold_label\\nex0,entailment\\nex1,contradiction\\n")
    >>> s = read_labels(path, ("entailment", "non-entailment"), model="bert", hans=True)
    >>> [(p.item_id, p.pred, p.probs) for p in s.predictions]
    [('ex0', 'entailment', (1.0, 0.0)), ('ex1', 'non-entailment', (0.0, 1.0))]
    """
    from ..data import format_of, text_rows

    p = Path(path)
    fmt = "csv" if hans else format_of(p.name)
    fields = ("gold_label",) if hans else LABEL_FIELDS
    preds = []
    for line, row in text_rows(p, fmt):
        if isinstance(row, ground.DataError):
            raise row
        where = f"{p}:{line}"
        uid = _item_id(row, where, ("pairID",) if hans else LABEL_ID_FIELDS)
        name = _field(row, fields)
        if name is None:
            raise ValueError(f"{where}: no label (field {' or '.join(map(repr, fields))})")
        try:
            raw = Label.parse(row[name]).value
        except ValueError:
            raw = str(row[name])
        label = _label(two_way(raw, labels), labels, where, name)
        probs = tuple(1.0 if lab == label else 0.0 for lab in labels)
        preds.append(Prediction(uid, probs, label, where, label_only=True))
    _check_unique(preds, p)
    return PredictionSet(str(p), "hans" if hans else "labels", model, seed, task, tuple(preds))


def predicted_label(p: Prediction, labels: Sequence[str]) -> str:
    """The prediction's label: the file's, or the most probable (ties to the first).

    >>> predicted_label(Prediction("1", (0.2, 0.8), None, "f:1"), ("1", "2"))
    '2'
    """
    if p.pred is not None:
        return p.pred
    return labels[max(range(len(labels)), key=lambda i: (p.probs[i], -i))]


def log_probs(probs: Sequence[float]) -> tuple[float, ...]:
    """Natural logs of probabilities, with 0 mapped to the log of the smallest positive
    double (a run record keeps finite log-likelihoods).

    >>> log_probs([1.0, 0.0])[0]
    0.0
    """
    return tuple(math.log(max(x, 5e-324)) for x in probs)
