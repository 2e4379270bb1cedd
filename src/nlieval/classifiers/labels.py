"""Labels: which outputs of a classifier answer which labels of a task.

:func:`label_mapping` groups a classifier's outputs under a task's labels (a 3-way NLI
model's neutral and contradiction answer a 2-way task's non-entailment);
:func:`scored_record` makes an item's record from them. An off-the-shelf sequence
classifier names its outputs in ``id2label``: :func:`task_labels_of` reads them as task
labels, through a ``--label-map`` (:func:`parse_label_map`) where they are not. No torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..ground import SettingError
from ..settings import csv_list
from ..types import ALPHA, NLI2, NLI3, Item, Label, Record, softmax
from .folder import ClassifierError

#: Task labels whose names a model's ``id2label`` may use without a label map (the
#: alpha-NLI "1"/"2" are indices to most models, so they need an explicit map).
_BY_NAME = frozenset(lab.value for lab in Label if lab not in ALPHA)


# --------------------------------------------------------------------------- label map


class LabelMapError(SettingError, ClassifierError):
    """A model's outputs that its label map (the setting ``label_map``) does not make
    task labels: a classifier's error, said as a setting's (by its flag where the
    command has it, else by its name: :class:`~nlieval.ground.SettingError`)."""


def parse_label_map(text: str | Mapping[str, str] | Sequence[str]) -> tuple[str, ...]:
    """A label map in its one spelling: ``NAME=LABEL`` entries sorted by name, each label
    spelled as the task label it is. Takes the flag's text (``LABEL_0=entailment,...``),
    a mapping or entries; raises ValueError naming what is wrong.

    >>> parse_label_map("LABEL_1=Neutral, LABEL_0=e")
    ('LABEL_0=entailment', 'LABEL_1=neutral')
    >>> parse_label_map("LABEL_0=yes")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval...SettingError: --label-map LABEL_0=yes: 'yes' is not a label (entailment, neutral, ...)
    """
    if isinstance(text, str):
        entries: list[tuple[str, str]] = []
        for part in csv_list(text):
            name, sep, label = part.partition("=")
            if not sep or not name.strip() or not label.strip():
                raise SettingError(
                    "label_map",
                    f"--label-map: expected NAME=LABEL pairs separated by commas "
                    f"(e.g. LABEL_0=entailment), got {part!r}",
                )
            entries.append((name.strip(), label.strip()))
    elif isinstance(text, Mapping):
        entries = [(str(k).strip(), str(v).strip()) for k, v in text.items()]
    else:
        return parse_label_map(",".join(text))
    out: dict[str, str] = {}
    for name, label in entries:
        if name in out:
            raise SettingError("label_map", f"--label-map names {name} twice")
        try:
            out[name] = Label.parse(label).value
        except ValueError:
            known = ", ".join(lab.value for lab in Label)
            raise SettingError(
                "label_map", f"--label-map {name}={label}: {label!r} is not a label ({known})"
            ) from None
    return tuple(f"{name}={out[name]}" for name in sorted(out))


def label_map_dict(entries: Sequence[str]) -> dict[str, str]:
    """The entries of :func:`parse_label_map` as a dict (model label name -> task label).

    >>> label_map_dict(("LABEL_0=entailment",))
    {'LABEL_0': 'entailment'}
    """
    return dict(e.split("=", 1) for e in parse_label_map(entries))


def task_labels_of(
    id2label: Mapping[int, str],
    label_map: Mapping[str, str] | None = None,
    *,
    where: str = "the model",
) -> tuple[str, ...]:
    """The task label of each model output, in output order: through ``label_map`` (its
    names matched to the model's exactly, else case-insensitively, else as an output's
    index), else by the output's own name (case and spelling tolerant, see the module
    docstring). Raises :class:`~nlieval.classifiers.ClassifierError` naming the
    outputs that become no task label, or the names of ``label_map`` the model lacks.

    >>> task_labels_of({0: "CONTRADICTION", 1: "Entailment", 2: "neutral"})
    ('contradiction', 'entailment', 'neutral')
    >>> task_labels_of({0: "entailment", 1: "not_entailment"})
    ('entailment', 'non-entailment')
    >>> task_labels_of({0: "LABEL_0", 1: "LABEL_1"}, {"label_0": "e", "1": "non-entailment"})
    ('entailment', 'non-entailment')
    >>> task_labels_of({0: "LABEL_0", 1: "LABEL_1"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.classifiers.labels.LabelMapError: the model: no task label for its labels ...
    >>> task_labels_of({0: "LABEL_0", 1: "LABEL_1"}, {"0": "e", "LABEL_0": "c"})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.classifiers.labels.LabelMapError: --label-map names the output 0 of the model ...
    """
    n = len(id2label)
    if sorted(id2label) != list(range(n)):
        raise ClassifierError(f"{where}: id2label must number its labels 0..{n - 1}")
    names = [str(id2label[i]) for i in range(n)]
    chosen: dict[int, str] = {}
    named_by: dict[int, str] = {}
    unknown: list[str] = []
    for key, value in (label_map or {}).items():
        label = Label.parse(value).value
        hits = [i for i, m in enumerate(names) if m == key]
        hits = hits or [i for i, m in enumerate(names) if m.lower() == key.lower()]
        if not hits and key.isdigit() and int(key) < n:
            hits = [int(key)]
        if not hits:
            unknown.append(key)
        for i in hits:
            if i in named_by:
                # One output, two entries (by index and by name, or two spellings): the
                # later would silently win.
                raise LabelMapError(
                    "label_map",
                    f"--label-map names the output {i} of {where} ({names[i]}) twice: as "
                    f"{named_by[i]}={chosen[i]} and as {key}={label}; give each output one "
                    "entry",
                )
            chosen[i], named_by[i] = label, key
    if unknown:
        raise LabelMapError(
            "label_map",
            f"--label-map names {', '.join(unknown)}, which {where} does not have "
            f"(its labels: {', '.join(names)})",
        )
    out: list[str] = []
    unmapped: list[str] = []
    for i, name in enumerate(names):
        task_label = chosen.get(i) or _by_name(name)
        if task_label is None:
            unmapped.append(name)
        out.append(task_label or "")
    if unmapped:
        raise LabelMapError(
            "label_map",
            f"{where}: no task label for its labels {', '.join(unmapped)} (config.json "
            f"id2label); name them with --label-map, e.g. --label-map {unmapped[0]}=entailment",
        )
    return tuple(out)


def _by_name(name: str) -> str | None:
    try:
        label = Label.parse(name).value
    except ValueError:
        return None
    return label if label in _BY_NAME else None


# --------------------------------------------------------------------------- detection


# --------------------------------------------------------------------------- records


def label_mapping(
    model_labels: Sequence[Label | str], task_labels: Sequence[Label | str]
) -> list[tuple[int, ...]]:
    """Per task label, the model labels whose probabilities add up to it.

    Each task label takes the model outputs of its name (one, or several when a label map
    gives several outputs one name); on a 2-way entailment / non-entailment task (HANS) a
    3-way NLI model's neutral and contradiction both count as non-entailment, so
    p(non-entailment) = p(neutral) + p(contradiction). Every model output must go to a
    task label and every task label take one: else :class:`ClassifierError` names the
    labels left over.

    >>> label_mapping(["entailment", "neutral", "contradiction"], NLI2)
    [(0,), (1, 2)]
    >>> label_mapping(["contradiction", "entailment", "neutral"], NLI3)
    [(1,), (2,), (0,)]
    >>> label_mapping(["entailment", "non-entailment"], NLI3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.classifiers.folder.ClassifierError: ... no model label for neutral, contradiction; ...
    """
    model = [label_name(x) for x in model_labels]
    task = [label_name(x) for x in task_labels]
    groups = [tuple(i for i, m in enumerate(model) if m == t) for t in task]
    nli3 = {x.value for x in NLI3}
    non_ent = Label.NON_ENTAILMENT.value
    if set(task) == {x.value for x in NLI2} and non_ent not in model and nli3 <= set(model):
        merged = tuple(i for i, m in enumerate(model) if m in nli3 - {Label.ENTAILMENT.value})
        groups[task.index(non_ent)] = merged
    used = {i for g in groups for i in g}
    missing = [t for t, g in zip(task, groups, strict=True) if not g]
    extra = list(dict.fromkeys(m for i, m in enumerate(model) if i not in used))
    if missing or extra:
        why = "; ".join(
            part
            for part in (
                f"no model label for {', '.join(missing)}" if missing else "",
                f"no task label for the model's {', '.join(extra)}" if extra else "",
            )
            if part
        )
        raise ClassifierError(
            f"a classifier trained on ({', '.join(model)}) cannot answer a task labelled "
            f"({', '.join(task)}): {why}; only the same label set, or a 3-way NLI model on "
            "a 2-way entailment/non-entailment task, can be mapped"
        )
    return groups


def label_name(x: Label | str) -> str:
    """A task label as records name it.

    >>> label_name(Label.ENTAILMENT), label_name("1")
    ('entailment', '1')
    """
    return x.value if isinstance(x, Label) else str(x)


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


def scored_record(
    item: Item,
    logp: Sequence[float],
    mapping: Sequence[tuple[int, ...]],
    names: tuple[str, ...],
    task: str,
    model: str,
    k: int,
    seed: int,
    checkpoint: str | None,
) -> Record:
    """The record of one item: each task label's log-likelihood the log-sum-exp of the
    model's log-probabilities of its group in ``mapping`` (:func:`label_mapping`; a pair
    classifier's labels, or one choice each for a multiple-choice head), ``probs`` their
    softmax, ``pred`` the most probable (the first on a tie)."""
    loglik = tuple(_logsumexp([logp[i] for i in group]) for group in mapping)
    best = max(range(len(names)), key=lambda i: (loglik[i], -i))
    return Record(
        task=task,
        item_id=item.id,
        model=model,
        k=k,
        seed=seed,
        labels=names,
        loglik=loglik,
        probs=softmax(loglik),
        pred=names[best],
        gold=item.label.value if item.label is not None else None,
        checkpoint=checkpoint,
        meta=dict(item.meta),
    )
