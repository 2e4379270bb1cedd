"""Row parsers: turn one row of a file (a mapping of field names to values) into an
:class:`~nlieval.types.Item`, a drop reason, or None (:class:`MappedParser` for flat
formats through a :class:`FieldMap`, :class:`ChaosParser` for ChaosNLI), and
:func:`parse_label`. A bad row raises :class:`FieldError`; the reader adds the file
and the line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..types import ALPHA, Item, Label


class FieldError(Exception):
    """A problem in one row; the reader adds the file and the line."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


Row = Mapping[str, Any]
#: A row parser returns an Item, a drop reason (counted in ``Dataset.dropped``), or None
#: for a row that belongs to another split of a one-file dataset (SICK).
ParseResult = Item | str | None
RowParser = Callable[[Row, int], ParseResult]


def _req(row: Row, name: str) -> Any:
    if name not in row or row[name] is None:
        raise FieldError(name, "missing field")
    return row[name]


def _text(row: Row, name: str) -> str:
    value = _req(row, name)
    if isinstance(value, (dict, list, bool)):
        raise FieldError(name, f"expected text, found {type(value).__name__}")
    return str(value)


def norm_key(raw: object) -> str:
    """A raw label as a ``label_map`` key: its text, stripped and lower-cased."""
    return str(raw).strip().lower()


def parse_label(
    raw: object,
    labels: Sequence[Label],
    label_map: Mapping[str, Label] | None = None,
    field_name: str = "label",
) -> Label:
    """A raw label as a member of ``labels``: through ``label_map`` (keys compared as
    lower-cased strings), else :meth:`Label.parse`. Raises ``FieldError`` naming the field.

    >>> from nlieval.types import NLI2
    >>> parse_label("NOT_ENTAILMENT", NLI2).value
    'non-entailment'
    """
    key = norm_key(raw)
    if label_map and key in label_map:
        lab = label_map[key]
    else:
        try:
            lab = Label.parse(raw)
        except ValueError:
            lab = None
    if lab is None or lab not in labels:
        allowed = ", ".join(x.value for x in labels)
        raise FieldError(field_name, f"unknown label {raw!r} (this task's labels: {allowed})")
    return lab


@dataclass(frozen=True)
class FieldMap:
    """Which field of a row holds what. ``id=None``: the row's line number is the id,
    unless ``id_if_present`` names a field the row has (user data: a file's own ``id``);
    ``label=None``: the rows are unlabelled; ``meta``: fields copied to ``Item.meta``
    when present and not empty."""

    premise: str = "premise"
    hypothesis: str = "hypothesis"
    label: str | None = "label"
    id: str | None = None
    choices: tuple[str, ...] = ()
    meta: tuple[str, ...] = ()
    id_if_present: str | None = None


@dataclass(frozen=True)
class MappedParser:
    """The row parser for flat formats: a :class:`FieldMap` plus label handling.

    ``drop`` maps raw labels to a drop reason (SNLI's ``-``); ``where`` keeps only rows
    whose column equals a value (one file holding several splits); ``extra`` adds derived
    meta; ``const_meta`` is added to every item. ``fields.label = None`` reads the rows
    as unlabelled (label None).
    """

    fields: FieldMap
    labels: tuple[Label, ...]
    label_map: Mapping[str, Label] = field(default_factory=dict)
    drop: Mapping[str, str] = field(default_factory=dict)
    where: tuple[str, str] | None = None
    extra: Callable[[Row], dict[str, Any]] | None = None
    const_meta: Mapping[str, Any] = field(default_factory=dict)
    strict_ids: bool = False

    def __call__(self, row: Row, line: int) -> ParseResult:
        if self.where is not None:
            column, value = self.where
            if _text(row, column).strip().upper() != value.upper():
                return None
        f = self.fields
        label = self._label(row)
        if isinstance(label, str) and not isinstance(label, Label):  # Label is a str too
            return label  # a drop reason
        meta: dict[str, Any] = dict(self.const_meta)
        meta.update({k: row[k] for k in f.meta if row.get(k) not in (None, "")})
        if self.extra is not None:
            meta.update(self.extra(row))
        return Item(
            id=self._id(row, line),
            premise=_text(row, f.premise),
            hypothesis=_text(row, f.hypothesis),
            label=label,
            choices=tuple(_text(row, c) for c in f.choices),
            meta=meta,
        )

    def _id(self, row: Row, line: int) -> str:
        """The row's id: its id field, else the line number."""
        f = self.fields
        name = f.id
        if name is None and f.id_if_present is not None and row.get(f.id_if_present) is not None:
            name = f.id_if_present
        if name is None:
            return str(line)
        value = _text(row, name)
        if self.strict_ids and not value.strip():
            # A blank id would be one shared key for every such item of a run.
            raise FieldError(name, "empty id")
        return value

    def _label(self, row: Row) -> Label | str | None:
        """The row's label, None (unlabelled), or a drop reason."""
        name = self.fields.label
        if name is None:
            return None
        raw = row.get(name)
        if raw is None:
            raise FieldError(name, "missing field")
        key = str(raw).strip()
        if key in self.drop:
            return self.drop[key]
        return parse_label(raw, self.labels, self.label_map, name)


@dataclass(frozen=True)
class ChaosParser:
    """ChaosNLI rows: the item's label is the dataset's original label (``old_label``);
    the 100 human labels go to ``meta["human_counts"]`` in label-set order, which is the
    order of ``label_count`` ([e, n, c], or [1, 2] for alpha-NLI)."""

    labels: tuple[Label, ...]

    def __call__(self, row: Row, line: int) -> ParseResult:
        ex = _req(row, "example")
        if not isinstance(ex, Mapping):
            raise FieldError("example", "expected an object")
        try:
            keys = (
                ("obs1", "obs2", "hyp1", "hyp2")
                if self.labels == ALPHA
                else ("premise", "hypothesis")
            )
            texts = [_text(ex, k) for k in keys]
        except FieldError as err:
            raise FieldError(f"example.{err.field}", err.message) from None
        meta: dict[str, Any] = {
            "human_counts": self._counts(row),
            "majority_label": parse_label(
                _req(row, "majority_label"), self.labels, field_name="majority_label"
            ).value,
            "entropy": _number(row, "entropy"),
            "source": ex.get("source"),
        }
        if isinstance(row.get("old_labels"), list):
            meta["old_labels"] = list(row["old_labels"])
        return Item(
            id=_text(row, "uid"),
            premise=texts[0],
            hypothesis=texts[1],
            label=parse_label(_req(row, "old_label"), self.labels, field_name="old_label"),
            choices=tuple(texts[2:]),
            meta=meta,
        )

    def _counts(self, row: Row) -> list[int]:
        counts = _req(row, "label_count")
        if (
            not isinstance(counts, list)
            or len(counts) != len(self.labels)
            or not all(isinstance(c, int) and not isinstance(c, bool) for c in counts)
        ):
            raise FieldError("label_count", f"expected a list of {len(self.labels)} integer counts")
        return list(counts)


def _number(row: Row, name: str) -> float:
    value = _req(row, name)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise FieldError(name, f"not a number: {value!r}") from None
    if not math.isfinite(number):
        raise FieldError(name, f"not a finite number: {value!r}")
    return number
