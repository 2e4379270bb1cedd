"""Benchmark loading: every supported benchmark, and user data, read into :class:`Item`.

Files are found by name anywhere under a data directory (``--data-dir`` or the
``NLIEVAL_DATA_DIR`` environment variable); each task lists, per split, the official
distribution files and the known variants, and the first one found is read. ``.gz``
files are decompressed on the fly. Without a data directory, tasks with a Hugging Face
hub copy are loaded through ``datasets`` (online only).

Filtering is never silent: every item left out is counted, by reason, in
:attr:`Dataset.dropped`. Malformed input raises :class:`DataError`, whose one-line
message names the file, the line and the field; with ``skip_bad=True`` bad lines are
skipped instead, logged and counted in :attr:`Dataset.skipped_bad`.

Formats follow the file extension: ``.jsonl`` (one JSON object a line), ``.csv``
(standard CSV quoting), ``.tsv``/``.txt`` (tab-separated, read verbatim without quote
processing, as the SNLI/MNLI/GLUE/SICK releases need), each optionally ``.gz``.
User data comes in through a task YAML file (see :func:`get_task`).

>>> ds = load_task("smoke")
>>> len(ds.items), ds.labels[0].value
(48, 'entailment')
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import gzip
import hashlib
import io
import json
import logging
import os
import random
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO, Any

from ..types import ALPHA, NLI2, NLI3, SCI4, Item, Label

log = logging.getLogger(__name__)

#: Environment variable naming the data directory when no ``data_dir`` is passed.
ENV_DATA_DIR = "NLIEVAL_DATA_DIR"

#: Template family of each ordered label set (see ``nlieval.choice.prompts.TEMPLATES``).
FAMILIES: dict[tuple[Label, ...], str] = {
    NLI3: "nli3",
    NLI2: "nli2",
    ALPHA: "alphanli",
    SCI4: "sci4",
}

# How many skipped lines are logged one by one before only the summary is logged.
_MAX_LOGGED_BAD = 5


class DataError(ValueError):
    """Bad input: carries ``path``, ``line`` (1-based, or None) and ``field`` (or None).

    ``str(err)`` is one line: ``{path}:{line}: field '{field}': {message}``, leaving out
    the parts that are None (``path`` is None only for errors about no file at all).

    >>> str(DataError("dev.jsonl", 3, "gold_label", "unknown label 'x'"))
    "dev.jsonl:3: field 'gold_label': unknown label 'x'"
    """

    def __init__(self, path: str | Path | None, line: int | None, field: str | None, message: str):
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.message = " ".join(str(message).split())  # one line, whatever the cause said
        where = "" if self.path is None else self.path
        if line is not None:
            where += f":{line}"
        parts = [where] if where else []
        if field is not None:
            parts.append(f"field '{field}'")
        parts.append(self.message)
        super().__init__(": ".join(parts))

    def __reduce__(self) -> tuple[Any, ...]:
        # The default would call DataError(formatted_message) and fail (4 arguments).
        return (type(self), (self.path, self.line, self.field, self.message))


class _FieldError(Exception):
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
RowOrError = tuple[int, dict[str, Any] | DataError]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Dataset:
    """One split of one task, as loaded.

    >>> ds = load_task("smoke")
    >>> ds.task, ds.split, ds.label_counts()["neutral"], dict(ds.dropped)
    ('smoke', 'test', 16, {})
    """

    task: str
    split: str
    labels: tuple[Label, ...]
    items: tuple[Item, ...]
    source: str
    dropped: Mapping[str, int] = field(default_factory=dict)
    skipped_bad: int = 0

    def __len__(self) -> int:
        return len(self.items)

    def label_counts(self) -> dict[str, int]:
        """Items per label value, in label-set order (plus ``"none"`` for unlabelled items)."""
        counts = Counter(it.label.value if it.label else "none" for it in self.items)
        out = {lab.value: counts.get(lab.value, 0) for lab in self.labels}
        if counts.get("none"):
            out["none"] = counts["none"]
        return out


# --------------------------------------------------------------------------- row parsers


def _req(row: Row, name: str) -> Any:
    if name not in row or row[name] is None:
        raise _FieldError(name, "missing field")
    return row[name]


def _text(row: Row, name: str) -> str:
    value = _req(row, name)
    if isinstance(value, (dict, list, bool)):
        raise _FieldError(name, f"expected text, found {type(value).__name__}")
    return str(value)


def _norm_key(raw: object) -> str:
    return str(raw).strip().lower()


def parse_label(
    raw: object,
    labels: Sequence[Label],
    label_map: Mapping[str, Label] | None = None,
    field_name: str = "label",
) -> Label:
    """A raw label as a member of ``labels``: through ``label_map`` (keys compared as
    lower-cased strings), else :meth:`Label.parse`. Raises ``_FieldError`` naming the field.

    >>> parse_label("NOT_ENTAILMENT", NLI2).value
    'non-entailment'
    """
    key = _norm_key(raw)
    if label_map and key in label_map:
        lab = label_map[key]
    else:
        try:
            lab = Label.parse(raw)
        except ValueError:
            lab = None
    if lab is None or lab not in labels:
        allowed = ", ".join(x.value for x in labels)
        raise _FieldError(field_name, f"unknown label {raw!r} (this task's labels: {allowed})")
    return lab


@dataclass(frozen=True)
class FieldMap:
    """Which field of a row holds what. ``id=None``: the row's line number is the id;
    ``label=None``: the rows are unlabelled; ``meta``: fields copied to ``Item.meta``
    when present and not empty."""

    premise: str = "premise"
    hypothesis: str = "hypothesis"
    label: str | None = "label"
    id: str | None = None
    choices: tuple[str, ...] = ()
    meta: tuple[str, ...] = ()


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
            id=_text(row, f.id) if f.id else str(line),
            premise=_text(row, f.premise),
            hypothesis=_text(row, f.hypothesis),
            label=label,
            choices=tuple(_text(row, c) for c in f.choices),
            meta=meta,
        )

    def _label(self, row: Row) -> Label | str | None:
        """The row's label, None (unlabelled), or a drop reason."""
        name = self.fields.label
        if name is None:
            return None
        raw = row.get(name)
        if raw is None:
            raise _FieldError(name, "missing field")
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
            raise _FieldError("example", "expected an object")
        try:
            keys = (
                ("obs1", "obs2", "hyp1", "hyp2")
                if self.labels == ALPHA
                else ("premise", "hypothesis")
            )
            texts = [_text(ex, k) for k in keys]
        except _FieldError as err:
            raise _FieldError(f"example.{err.field}", err.message) from None
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
            raise _FieldError(
                "label_count", f"expected a list of {len(self.labels)} integer counts"
            )
        return list(counts)


def _number(row: Row, name: str) -> float:
    value = _req(row, name)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise _FieldError(name, f"not a number: {value!r}") from None


def _annotator_columns(row: Row) -> dict[str, Any]:
    # The TSV releases spread annotator labels over label1..label5 (empty when fewer).
    if "label1" not in row:
        return {}
    labels = [row[f"label{i}"] for i in range(1, 6) if row.get(f"label{i}")]
    return {"annotator_labels": labels}


def _anli_csv_meta(row: Row) -> dict[str, Any]:
    tags = row.get("tags")
    if isinstance(tags, str) and tags.startswith("["):
        try:
            return {"tags": list(ast.literal_eval(tags))}
        except (ValueError, SyntaxError):
            pass
    return {}


def _bert_correct(row: Row) -> dict[str, Any]:
    raw = row.get("number of correct responses (out of 100)")
    return {"bert_correct_of_100": int(raw)} if raw not in (None, "") else {}


def _sick_meta(row: Row) -> dict[str, Any]:
    raw = row.get("relatedness_score")
    try:
        return {"relatedness": float(raw)} if raw not in (None, "") else {}
    except ValueError:
        raise _FieldError("relatedness_score", f"not a number: {raw!r}") from None


# --------------------------------------------------------------------------- reading rows


def _format_of(name: str) -> str:
    """``jsonl``, ``csv``, ``tsv``, ``lst``, ``zip`` or ``arrow``, from a file name (.gz ok)."""
    base = name.lower().removesuffix(".gz")
    suffix = base.rsplit(".", 1)[-1] if "." in base else ""
    formats = {
        "jsonl": "jsonl",
        "json": "jsonl",
        "ndjson": "jsonl",
        "csv": "csv",
        "tsv": "tsv",
        "txt": "tsv",
        "lst": "lst",
        "zip": "zip",
        "arrow": "arrow",
    }
    if suffix not in formats:
        raise DataError(name, None, None, "unknown file type (expected .jsonl, .csv or .tsv)")
    return formats[suffix]


@contextmanager
def _open_text(path: Path, member: str | None = None) -> Iterator[IO[str]]:
    """Text of a file, a ``.gz`` file, or a member of a zip archive."""
    where = f"{path}!{member}" if member else str(path)
    if not path.is_file():
        raise DataError(path, None, None, "no such file")
    try:
        if member is not None:
            with zipfile.ZipFile(path) as zf, zf.open(member) as raw:
                yield io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        elif path.name.lower().endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8-sig", newline="") as fh:
                yield fh
        else:
            with path.open(encoding="utf-8-sig", newline="") as fh:
                yield fh
    except UnicodeDecodeError:
        raise DataError(where, None, None, "not UTF-8 text") from None
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile, KeyError) as err:
        raise DataError(where, None, None, f"cannot read: {err}") from None


def _json_rows(fh: IO[str], where: str) -> Iterator[RowOrError]:
    seen = False
    for n, text in enumerate(fh, 1):
        if not text.strip():
            continue
        seen = True
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as err:
            yield n, DataError(where, n, None, f"malformed JSON: {err.msg} (column {err.colno})")
            continue
        if not isinstance(obj, dict):
            yield (
                n,
                DataError(where, n, None, f"expected a JSON object, found {type(obj).__name__}"),
            )
        else:
            yield n, obj
    if not seen:
        raise DataError(where, None, None, "empty file (no rows)")


def _table_rows(fh: IO[str], where: str, fmt: str) -> Iterator[RowOrError]:
    # The TSV releases (SNLI/MNLI .txt, GLUE, SICK) do not quote fields but their text
    # contains quote characters, so quotes must not be interpreted there.
    if fmt == "tsv":
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(fh)
    try:
        header = next(reader, None)
        if header is None:
            raise DataError(where, None, None, "empty file (no header)")
        names = [h.strip() for h in header]
        seen = False
        while True:
            start = reader.line_num + 1  # a quoted csv row may span several lines
            values = next(reader, None)
            if values is None:
                break
            if not values or values == [""]:
                continue
            seen = True
            if len(values) != len(names):
                msg = f"expected {len(names)} columns (as the header), found {len(values)}"
                yield start, DataError(where, start, None, msg)
            else:
                yield start, dict(zip(names, values, strict=True))
    except csv.Error as err:
        raise DataError(where, reader.line_num, None, f"malformed {fmt}: {err}") from None
    if not seen:
        raise DataError(where, None, None, "no data rows after the header")


def _text_rows(path: Path, fmt: str, member: str | None = None) -> Iterator[RowOrError]:
    """``(line, row or DataError)`` for each row of a jsonl/csv/tsv file (or zip member)."""
    where = f"{path}!{member}" if member else str(path)
    with _open_text(path, member) as fh:
        if fmt == "jsonl":
            yield from _json_rows(fh, where)
        elif fmt in ("csv", "tsv"):
            yield from _table_rows(fh, where, fmt)
        else:
            raise DataError(where, None, None, f"cannot read rows from a {fmt} file")


def _arrow_rows(path: Path, members: Sequence[str]) -> Iterator[RowOrError]:
    """Rows of Arrow stream files inside a zip (a ``datasets.save_to_disk`` folder)."""
    import pyarrow as pa  # optional: only this reader needs it

    n = 0
    with zipfile.ZipFile(path) as zf:
        for member in members:
            try:
                table = pa.ipc.open_stream(pa.py_buffer(zf.read(member))).read_all()
            except (KeyError, pa.ArrowInvalid) as err:
                raise DataError(f"{path}!{member}", None, None, f"cannot read: {err}") from None
            for row in table.to_pylist():
                n += 1  # numbered across members, so ids stay unique
                yield n, row


def _label_lines(path: Path) -> list[tuple[int, str]]:
    with _open_text(path) as fh:
        lines = [(n, t.strip()) for n, t in enumerate(fh, 1) if t.strip()]
    if not lines:
        raise DataError(path, None, None, "empty file (no labels)")
    return lines


def _with_label_file(rows: Iterable[RowOrError], lst: Path, key: str) -> Iterator[RowOrError]:
    """Join a jsonl file with its one-label-per-line companion (alpha-NLI ``*-labels.lst``)."""
    rows, labels = list(rows), _label_lines(lst)
    if len(rows) != len(labels):
        raise DataError(
            lst, None, None, f"{len(labels)} labels for {len(rows)} rows of the data file"
        )
    for (n, row), (ln, lab) in zip(rows, labels, strict=True):
        if isinstance(row, DataError):
            yield n, row
        elif lab not in ("1", "2"):
            yield n, DataError(lst, ln, "label", f"unknown label {lab!r} (expected 1 or 2)")
        else:
            yield n, {**row, key: lab}


# --------------------------------------------------------------------------- file rules


@dataclass(frozen=True)
class FileRule:
    """One way to get a split: which file, and how to parse its rows.

    ``names``: file names searched under the data dir (case-insensitive; ``.gz`` variants
    accepted); ``folder``: a regex that some folder on the way to the file (or the data dir
    itself) must match in full, case-insensitive (ANLI rounds share file names);
    ``members``: files inside a zip; ``companion``: a label file next to the data file;
    ``path``/``resource``: a fixed file (user tasks, the bundled smoke sample).
    """

    parser: RowParser
    names: tuple[str, ...] = ()
    folder: str | None = None
    members: tuple[str, ...] = ()
    companion: str | None = None
    path: Path | None = None
    resource: str | None = None

    def describe(self) -> str:
        what = " or ".join(f"{n}[.gz]" if not n.endswith(".zip") else n for n in self.names)
        if self.members:
            what += f" (containing {', '.join(self.members)})"
            if self.members[0].endswith(".arrow"):
                what += " with pyarrow installed"
        if self.folder:
            what += f" in a folder matching '{self.folder}'"
        if self.companion:
            what += f" next to {self.companion}"
        return what

    def locate(self, index: Mapping[str, list[Path]], root: Path) -> Path | None:
        """The first matching file under ``root`` (sorted paths), or None."""
        for name in self.names:
            for cand in (name, name + ".gz"):
                for p in index.get(cand.lower(), []):
                    if self._accepts(p, root):
                        return p
        return None

    def _accepts(self, p: Path, root: Path) -> bool:
        if self.folder is not None:
            folders = [root.name, *p.relative_to(root).parent.parts]
            if not any(re.fullmatch(self.folder, d, re.IGNORECASE) for d in folders):
                return False
        if self.companion is not None and self._companion_of(p) is None:
            return False
        if self.members:
            if any(m.endswith(".arrow") for m in self.members) and not _has_pyarrow():
                log.info("%s: skipped, reading it needs pyarrow", p)
                return False
            try:
                with zipfile.ZipFile(p) as zf:
                    return set(self.members) <= set(zf.namelist())
            except (OSError, zipfile.BadZipFile):
                return False
        return True

    def _companion_of(self, p: Path) -> Path | None:
        assert self.companion is not None
        for cand in (self.companion, self.companion + ".gz"):
            if (p.parent / cand).is_file():
                return p.parent / cand
        return None

    def rows(self, p: Path) -> tuple[Iterator[RowOrError], str]:
        """The rows of the located file, and a description of what was read."""
        if self.members:
            if self.members[0].endswith(".arrow"):
                return _arrow_rows(p, self.members), f"{p}!{','.join(self.members)}"
            member = self.members[0]
            return _text_rows(p, _format_of(member), member), f"{p}!{member}"
        if self.companion is not None:
            lst = self._companion_of(p)
            assert lst is not None
            return _with_label_file(_text_rows(p, "jsonl"), lst, "__label__"), f"{p} + {lst}"
        return _text_rows(p, _format_of(p.name)), str(p)


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class HubSpec:
    """A Hugging Face hub copy: dataset id, config, our split -> hub split, row parser."""

    path: str
    name: str | None
    splits: Mapping[str, str]
    parser: RowParser


@dataclass(frozen=True)
class TaskSpec:
    """A benchmark (or user task): its label set, template family and where its data is.

    ``splits`` maps a split name to the :class:`FileRule` alternatives, in order of
    preference; ``template`` is a user task's own Jinja template (None: the family's).

    >>> get_task("hans").labels == NLI2, get_task("hans").default_split
    (True, 'eval')
    """

    name: str
    labels: tuple[Label, ...]
    family: str
    default_split: str
    description: str
    splits: Mapping[str, tuple[FileRule, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    hub: HubSpec | None = field(default=None, compare=False, repr=False)
    template: str | None = None
    path: str | None = None  # the YAML file of a user task


# --------------------------------------------------------------------------- the tasks

_DASH = {"-": "gold label '-'"}
_ENC = {"0": Label.ENTAILMENT, "1": Label.NEUTRAL, "2": Label.CONTRADICTION}
_NO_GOLD = {"-1": "no gold label (-1)"}


def _snli_parser(extra_meta: tuple[str, ...] = ()) -> MappedParser:
    fields = FieldMap(
        "sentence1", "sentence2", "gold_label", id="pairID", meta=("annotator_labels", *extra_meta)
    )
    return MappedParser(fields, NLI3, drop=_DASH, extra=_annotator_columns)


def _snli_spec() -> TaskSpec:
    p = _snli_parser()

    def rules(split: str) -> tuple[FileRule, ...]:
        official = FileRule(p, (f"snli_1.0_{split}.jsonl", f"snli_1.0_{split}.txt"))
        return official, FileRule(p, (f"{split}.tsv",), folder="snli")

    hub_p = MappedParser(FieldMap(), NLI3, label_map=_ENC, drop=_NO_GOLD)
    hub = HubSpec(
        "stanfordnlp/snli", None, {"train": "train", "dev": "validation", "test": "test"}, hub_p
    )
    return TaskSpec(
        "snli",
        NLI3,
        "nli3",
        "dev",
        "SNLI 1.0 (gold label '-' dropped)",
        {s: rules(s) for s in ("train", "dev", "test")},
        hub,
    )


def _mnli_spec(matched: bool) -> TaskSpec:
    which = "matched" if matched else "mismatched"
    p = _snli_parser(("genre", "promptID"))
    dev = [
        FileRule(
            p,
            (
                f"multinli_1.0_dev_{which}.jsonl",
                f"multinli_1.0_dev_{which}.txt",
                f"dev_{which}.tsv",
            ),
        )
    ]
    if matched:
        # "BERTs of a feather" copy of dev_matched: index, premise, hypothesis, gold_label.
        bert = FieldMap("premise", "hypothesis", "gold_label", id="index")
        dev.append(
            FileRule(
                MappedParser(bert, NLI3, drop=_DASH, extra=_bert_correct),
                ("mnli_development_set_number_of_correct_responses.txt",),
            )
        )
    train = (
        FileRule(p, ("multinli_1.0_train.jsonl", "multinli_1.0_train.txt")),
        FileRule(p, ("train.tsv",), folder="mnli"),
    )
    hub_p = MappedParser(
        FieldMap(id="pairID", meta=("genre", "promptID")), NLI3, label_map=_ENC, drop=_NO_GOLD
    )
    hub = HubSpec(
        "nyu-mll/multi_nli", None, {"train": "train", f"dev_{which}": f"validation_{which}"}, hub_p
    )
    name = "mnli_m" if matched else "mnli_mm"
    return TaskSpec(
        name,
        NLI3,
        "nli3",
        f"dev_{which}",
        f"MultiNLI 1.0 dev {which}",
        {"train": train, f"dev_{which}": tuple(dev)},
        hub,
    )


def _hans_spec() -> TaskSpec:
    official = MappedParser(
        FieldMap(
            "sentence1",
            "sentence2",
            "gold_label",
            id="pairID",
            meta=("heuristic", "subcase", "template"),
        ),
        NLI2,
    )
    derived = MappedParser(
        FieldMap("sentence1", "sentence2", "gold_label", meta=("heuristic",)), NLI2
    )
    # The saved HF dataset in hans.zip numbers labels 0=non-entailment, 1=entailment.
    zipped = MappedParser(
        FieldMap("sentence1", "sentence2", "labels", meta=("heuristic",)),
        NLI2,
        label_map={"0": Label.NON_ENTAILMENT, "1": Label.ENTAILMENT},
    )
    arrow = "hans_datasets/{}/data-00000-of-00001.arrow"
    evals = (
        FileRule(official, ("heuristics_evaluation_set.txt", "heuristics_evaluation_set.jsonl")),
        FileRule(derived, ("hans_eval_30k.derived.jsonl",)),
        FileRule(zipped, ("hans.zip",), members=(arrow.format("validation"), arrow.format("test"))),
    )
    train = (
        FileRule(official, ("heuristics_train_set.txt", "heuristics_train_set.jsonl")),
        FileRule(zipped, ("hans.zip",), members=(arrow.format("train"),)),
    )
    hub_p = MappedParser(
        FieldMap(meta=("heuristic", "subcase", "template")),
        NLI2,
        label_map={"0": Label.ENTAILMENT, "1": Label.NON_ENTAILMENT},
    )
    hub = HubSpec("jhu-cogsci/hans", None, {"train": "train", "eval": "validation"}, hub_p)
    return TaskSpec(
        "hans",
        NLI2,
        "nli2",
        "eval",
        "HANS evaluation set (30,000 items)",
        {"train": train, "eval": evals},
        hub,
    )


def _anli_spec(rnd: int) -> TaskSpec:
    tag = f"R{rnd}"
    official = MappedParser(FieldMap(id="uid", meta=("reason",)), NLI3, const_meta={"round": tag})
    annot = MappedParser(
        FieldMap("context", "statement", "gold_label", id="uid", meta=("reason",)),
        NLI3,
        extra=_anli_csv_meta,
        const_meta={"round": tag},
    )
    splits: dict[str, tuple[FileRule, ...]] = {}
    for split in ("train", "dev", "test"):
        rules = [FileRule(official, (f"{split}.jsonl",), folder=tag)]
        if split == "dev":
            rules.append(FileRule(annot, (f"ANLI_analysis_r{rnd}_dev.csv",)))
        splits[split] = tuple(rules)
    hub_p = MappedParser(
        FieldMap(id="uid", meta=("reason",)), NLI3, label_map=_ENC, const_meta={"round": tag}
    )
    hub = HubSpec("facebook/anli", None, {s: f"{s}_r{rnd}" for s in splits}, hub_p)
    return TaskSpec(f"anli_r{rnd}", NLI3, "nli3", "dev", f"ANLI v1.0 round {rnd}", splits, hub)


def _alphanli_spec() -> TaskSpec:
    official = MappedParser(
        FieldMap("obs1", "obs2", "__label__", id="story_id", choices=("hyp1", "hyp2")), ALPHA
    )
    dev = (
        FileRule(official, ("dev.jsonl",), companion="dev-labels.lst"),
        FileRule(ChaosParser(ALPHA), ("chaosNLI_alphanli.jsonl",)),
    )
    train = (FileRule(official, ("train.jsonl",), companion="train-labels.lst"),)
    hub_p = MappedParser(
        FieldMap(
            "observation_1", "observation_2", "label", choices=("hypothesis_1", "hypothesis_2")
        ),
        ALPHA,
        drop={"0": "no gold label (0)"},
    )
    hub = HubSpec("allenai/art", None, {"train": "train", "dev": "validation"}, hub_p)
    return TaskSpec(
        "alphanli",
        ALPHA,
        "alphanli",
        "dev",
        "alpha-NLI (ART) dev",
        {"train": train, "dev": dev},
        hub,
    )


def _chaosnli_spec(name: str, file: str, base: TaskSpec) -> TaskSpec:
    # The few-shot pool is the original dataset's train split when it is there.
    splits = {"train": base.splits["train"], "dev": (FileRule(ChaosParser(base.labels), (file,)),)}
    return TaskSpec(
        f"chaosnli_{name}",
        base.labels,
        base.family,
        "dev",
        f"ChaosNLI v1.0 {name} subset (100 human labels per item)",
        splits,
    )


def _scinli_spec() -> TaskSpec:
    p = MappedParser(FieldMap("sentence1", "sentence2", "label", id="id", meta=("domain",)), SCI4)
    # Folder match: dev/test file names are generic; "scinli.*" also excludes MSciNLI.
    splits = {
        s: (FileRule(p, (f"{s}.jsonl", f"{s}.csv"), folder="scinli.*"),)
        for s in ("train", "dev", "test")
    }
    return TaskSpec("scinli", SCI4, "sci4", "test", "SciNLI (ACL 2022)", splits)


def _sick_spec() -> TaskSpec:
    def one_file(split: str) -> MappedParser:
        fields = FieldMap("sentence_A", "sentence_B", "entailment_label", id="pair_ID")
        return MappedParser(fields, NLI3, where=("SemEval_set", split), extra=_sick_meta)

    per_file = MappedParser(
        FieldMap("sentence_A", "sentence_B", "entailment_judgment", id="pair_ID"),
        NLI3,
        extra=_sick_meta,
    )
    names = {
        "train": "SICK_train.txt",
        "trial": "SICK_trial.txt",
        "test": "SICK_test_annotated.txt",
    }
    splits = {
        s: (FileRule(one_file(s), ("SICK.txt",)), FileRule(per_file, (names[s],)))
        for s in ("train", "trial", "test")
    }
    return TaskSpec("sick", NLI3, "nli3", "test", "SICK (SemEval 2014 split)", splits)


def _rte_spec() -> TaskSpec:
    labelled = MappedParser(FieldMap("sentence1", "sentence2", "label", id="index"), NLI2)
    unlabelled = MappedParser(FieldMap("sentence1", "sentence2", None, id="index"), NLI2)
    splits: dict[str, tuple[FileRule, ...]] = {}
    for split in ("train", "dev", "test"):
        p = unlabelled if split == "test" else labelled
        # Folder match: GLUE uses dev.tsv/train.tsv for several tasks.
        splits[split] = (
            FileRule(p, (f"{split}.tsv",), folder="rte"),
            FileRule(p, ("RTE.zip",), members=(f"RTE/{split}.tsv",)),
        )
    hub_p = MappedParser(
        FieldMap("sentence1", "sentence2", "label", id="idx"),
        NLI2,
        label_map={"0": Label.ENTAILMENT, "1": Label.NON_ENTAILMENT},
        drop={"-1": "no gold label (-1)"},
    )
    hub = HubSpec("nyu-mll/glue", "rte", {"train": "train", "dev": "validation"}, hub_p)
    return TaskSpec("rte", NLI2, "nli2", "dev", "RTE (GLUE); test has no labels", splits, hub)


def _smoke_spec() -> TaskSpec:
    p = _snli_parser()
    splits = {
        "train": (FileRule(p, resource="smoke_train.jsonl"),),
        "test": (FileRule(p, resource="smoke.jsonl"),),
    }
    return TaskSpec(
        "smoke", NLI3, "nli3", "test", "bundled 48-item sample (no data dir needed)", splits
    )


def _build_tasks() -> dict[str, TaskSpec]:
    snli, mnli_m, alpha = _snli_spec(), _mnli_spec(True), _alphanli_spec()
    tasks = [
        snli,
        mnli_m,
        _mnli_spec(False),
        _hans_spec(),
        _anli_spec(1),
        _anli_spec(2),
        _anli_spec(3),
        alpha,
        _chaosnli_spec("snli", "chaosNLI_snli.jsonl", snli),
        _chaosnli_spec("mnli", "chaosNLI_mnli_m.jsonl", mnli_m),
        _chaosnli_spec("alphanli", "chaosNLI_alphanli.jsonl", alpha),
        _scinli_spec(),
        _sick_spec(),
        _rte_spec(),
        _smoke_spec(),
    ]
    return {t.name: t for t in tasks}


#: Every built-in task by name.
TASKS: dict[str, TaskSpec] = _build_tasks()


# --------------------------------------------------------------------------- user tasks

_YAML_KEYS = (
    "name",
    "path",
    "pool",
    "fields",
    "labels",
    "label_map",
    "family",
    "template",
    "description",
)
_FIELD_KEYS = ("id", "premise", "hypothesis", "label", "choices", "meta")


def _field_map(spec: Mapping[str, Any] | None, where: str | Path) -> FieldMap:
    spec = dict(spec or {})
    for key, value in spec.items():
        if key not in _FIELD_KEYS:
            raise DataError(
                where, None, f"fields.{key}", f"unknown key; allowed: {', '.join(_FIELD_KEYS)}"
            )
        ok = (
            isinstance(value, list)
            if key in ("choices", "meta")
            else isinstance(value, str) or value is None
        )
        if not ok or (isinstance(value, list) and not all(isinstance(v, str) for v in value)):
            raise DataError(
                where,
                None,
                f"fields.{key}",
                "expected a field name" + ("" if key not in ("choices", "meta") else " list"),
            )
    return FieldMap(
        premise=spec.get("premise", "premise"),
        hypothesis=spec.get("hypothesis", "hypothesis"),
        label=spec.get("label", "label"),
        id=spec.get("id"),
        choices=tuple(spec.get("choices", ())),
        meta=tuple(spec.get("meta", ())),
    )


def _label_set(raw: Any, where: str | Path) -> tuple[Label, ...]:
    if not isinstance(raw, list) or not raw:
        raise DataError(where, None, "labels", "expected a non-empty list of label names")
    try:
        labels = tuple(Label.parse(x) for x in raw)
    except ValueError as err:
        raise DataError(where, None, "labels", str(err)) from None
    if len(set(labels)) != len(labels):
        raise DataError(where, None, "labels", "a label is listed twice")
    return labels


def _label_map(raw: Any, labels: tuple[Label, ...], where: str | Path) -> dict[str, Label]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise DataError(where, None, "label_map", "expected a mapping raw value -> label")
    try:
        return {_norm_key(k): parse_label(v, labels) for k, v in raw.items()}
    except _FieldError as err:
        raise DataError(where, None, "label_map", err.message) from None


def make_parser(
    labels: Sequence[Label],
    fields: Mapping[str, Any] | None = None,
    label_map: Mapping[Any, Any] | None = None,
    where: str | Path = "<fields>",
) -> MappedParser:
    """A row parser for user data from a field map (as in a task YAML's ``fields``).

    >>> p = make_parser(NLI3, {"premise": "s1", "hypothesis": "s2", "label": "y"}, {0: "e"})
    >>> p({"s1": "A cat naps.", "s2": "A cat rests.", "y": 0}, 1).label.value
    'entailment'
    """
    labels = tuple(labels)
    fmap = _field_map(fields, where)
    if fmap.choices and len(fmap.choices) != len(labels):
        raise DataError(
            where, None, "fields.choices", f"{len(fmap.choices)} choices for {len(labels)} labels"
        )
    if labels == ALPHA and not fmap.choices:
        raise DataError(
            where, None, "fields.choices", "alpha-NLI style tasks need the two hypothesis fields"
        )
    return MappedParser(fmap, labels, label_map=_label_map(label_map, labels, where))


def _task_from_yaml(path: Path) -> TaskSpec:
    doc = _read_yaml(path)
    for key in doc:
        if key not in _YAML_KEYS:
            raise DataError(path, None, str(key), f"unknown key; allowed: {', '.join(_YAML_KEYS)}")
    if "path" not in doc:
        raise DataError(path, None, "path", "missing: the data file (jsonl, csv or tsv)")
    family = doc.get("family")
    if family is not None and family not in FAMILIES.values():
        raise DataError(
            path,
            None,
            "family",
            f"unknown family {family!r}; known: {', '.join(FAMILIES.values())}",
        )
    if "labels" in doc:
        labels = _label_set(doc["labels"], path)
    elif family is not None:
        labels = next(ls for ls, fam in FAMILIES.items() if fam == family)
    else:
        raise DataError(path, None, "labels", "missing: the ordered label set")
    # Label sets without a family of their own use the generic premise/hypothesis layout.
    family = family or FAMILIES.get(labels, "nli3")
    parser = make_parser(labels, doc.get("fields"), doc.get("label_map"), path)
    splits = {"test": (FileRule(parser, path=_rel(path, doc["path"], "path")),)}
    if doc.get("pool"):
        splits["train"] = (FileRule(parser, path=_rel(path, doc["pool"], "pool")),)
    template = doc.get("template")
    if template is not None and not isinstance(template, str):
        raise DataError(path, None, "template", "expected a Jinja template string")
    name = str(doc.get("name") or path.stem)
    desc = str(doc.get("description") or f"user task from {path}")
    return TaskSpec(name, labels, family, "test", desc, splits, None, template, str(path))


def _rel(yaml_path: Path, value: Any, key: str) -> Path:
    if not isinstance(value, str) or not value:
        raise DataError(yaml_path, None, key, "expected a file path")
    p = Path(value).expanduser()
    return p if p.is_absolute() else yaml_path.parent / p


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    if not path.is_file():
        raise DataError(path, None, None, "no such file")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as err:
        line = err.problem_mark.line + 1 if err.problem_mark is not None else None
        raise DataError(path, line, None, f"invalid YAML: {err.problem}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise DataError(path, None, None, f"invalid YAML: {err}") from None
    if not isinstance(doc, dict):
        raise DataError(path, None, None, "expected a mapping of task settings")
    return doc


# --------------------------------------------------------------------------- public API


def resolve_data_dir(data_dir: str | Path | None = None) -> Path | None:
    """The data directory: the argument, else ``$NLIEVAL_DATA_DIR``, else None.

    A directory that is named but does not exist raises :class:`DataError`.

    >>> resolve_data_dir("/") == Path("/")
    True
    """
    raw = data_dir if data_dir not in (None, "") else os.environ.get(ENV_DATA_DIR) or None
    if raw is None:
        return None
    path = Path(raw).expanduser()
    if not path.is_dir():
        why = "is not a directory" if path.exists() else "does not exist"
        raise DataError(path, None, None, f"data directory {why}")
    return path


def get_task(name_or_path: str) -> TaskSpec:
    """A built-in task by name, or a user task from a YAML file.

    The YAML keys: ``path`` (the data, relative to the YAML file; jsonl/csv/tsv, .gz ok),
    ``labels`` (the ordered label set), and optionally ``name``, ``pool`` (few-shot
    pool file), ``fields`` (``id``, ``premise``, ``hypothesis``, ``label`` (null: no
    labels), ``choices``, ``meta``: field names in the file; without ``id`` the line
    number is the id), ``label_map`` (raw value -> label), ``family`` (derived from the
    label set when absent), ``template`` (a Jinja template string), ``description``.
    The data is the task's ``test`` split and the pool its ``train`` split.

    >>> get_task("snli").family
    'nli3'
    """
    if name_or_path in TASKS:
        return TASKS[name_or_path]
    p = Path(name_or_path).expanduser()
    if p.suffix.lower() in (".yaml", ".yml") or p.is_file():
        return _task_from_yaml(p)
    raise DataError(
        None,
        None,
        None,
        f"unknown task {name_or_path!r}; valid tasks: "
        f"{', '.join(TASKS)}, or the path of a task YAML file",
    )


def load_task(
    name_or_path: str,
    data_dir: str | Path | None = None,
    split: str | None = None,
    skip_bad: bool = False,
) -> Dataset:
    """One split (default: the task's default split) of a task.

    >>> ds = load_task("smoke")
    >>> ds.split, len(ds)
    ('test', 48)
    """
    spec = get_task(name_or_path)
    split = split or spec.default_split
    return _load_split(spec, split, resolve_data_dir(data_dir), skip_bad)


def seeded_rng(seed: int, *keys: object) -> random.Random:
    """A random generator for one seed and one purpose (a document, a class, a run).

    Seeded from a SHA-256 of ``repr((seed, *keys))``: stable across processes and Python
    versions, unlike ``hash()`` of a string.

    >>> seeded_rng(0, "x").random() == seeded_rng(0, "x").random()
    True
    """
    digest = hashlib.sha256(repr((seed, *keys)).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def sample_items(items: Sequence[Item], n: int, seed: int = 0) -> tuple[Item, ...]:
    """A seeded random subset of ``n`` items, stratified by gold label, in file order.

    Each label (unlabelled items form one group) gets its share of ``n`` by largest
    remainder, so the label shares match the file's (SciNLI test, 1,000 per class and
    sorted by class: ``n = 40`` gives 10 per class). Within a label the items are a
    prefix of a permutation seeded by ``seed`` and the label, so a larger ``n`` mostly
    keeps the items of a smaller one. ``n`` at least the number of items keeps them all.

    >>> items = [Item(str(i), "p", "h", NLI3[i // 4]) for i in range(12)]
    >>> picked = sample_items(items, 6, seed=1)
    >>> [it.label.value[0] for it in picked], picked == sample_items(items, 6, seed=1)
    (['e', 'e', 'n', 'n', 'c', 'c'], True)
    """
    if n < 1:
        raise ValueError(f"the sample size must be positive, got {n}")
    if n >= len(items):
        return tuple(items)
    groups: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(it.label.value if it.label is not None else "", []).append(i)
    keys = sorted(groups)
    quota = {k: n * len(groups[k]) // len(items) for k in keys}
    # Largest remainder first (n * size mod total), ties in alphabetical label order.
    by_remainder = sorted(keys, key=lambda k: -(n * len(groups[k]) % len(items)))
    for k in by_remainder[: n - sum(quota.values())]:
        quota[k] += 1
    keep: set[int] = set()
    for k in keys:
        order = list(groups[k])
        random.Random(f"sample:{seed}:{k}").shuffle(order)
        keep.update(order[: quota[k]])
    return tuple(it for i, it in enumerate(items) if i in keep)


def load_pool(
    name_or_path: str,
    data_dir: str | Path | None = None,
    skip_bad: bool = False,
    split: str | None = None,
) -> tuple[Dataset, bool]:
    """The few-shot pool of a task, and whether it is the evaluated split itself.

    The train split when it is there, else another split with labels (in the task's
    split order), else the evaluated split (``split``, default: the task's default).
    The flag is True when the pool is the evaluated data (also when another split reads
    the same rows, see :func:`same_data`): callers must then keep each test item out of
    its own shots.

    >>> pool, same = load_pool("smoke")
    >>> pool.split, len(pool), same
    ('train', 12, False)
    """
    spec = get_task(name_or_path)
    test_split = split or spec.default_split
    root = resolve_data_dir(data_dir)
    others = [s for s in spec.splits if s != test_split]
    others.sort(key=lambda s: s != "train")  # stable: train first, then the declared order
    for cand in others:
        if not _available(spec, cand, root):
            continue
        pool = _load_split(spec, cand, root, skip_bad)
        if any(it.label is not None for it in pool.items):
            return pool, _same_rows(spec, cand, test_split, root)
    return _load_split(spec, test_split, root, skip_bad), True


def _same_rows(spec: TaskSpec, a: str, b: str, root: Path | None) -> bool:
    plan_a, plan_b = _plan(spec, a, root), _plan(spec, b, root)
    if plan_a is None or plan_b is None:
        return a == b
    (rule_a, path_a), (rule_b, path_b) = plan_a, plan_b
    same_rule = dataclasses.replace(rule_a, path=None) == dataclasses.replace(rule_b, path=None)
    return same_rule and path_a.resolve() == path_b.resolve()


def same_data(
    name_or_path: str, split_a: str, split_b: str, data_dir: str | Path | None = None
) -> bool:
    """True when two splits of a task are the same rows of the same file: a task YAML
    whose ``pool`` is its ``path`` (as ``nlieval build`` writes them). Splits that share
    a file but not its rows (SICK's one file) are not the same data.

    >>> same_data("smoke", "train", "test"), same_data("smoke", "test", "test")
    (False, True)
    """
    return _same_rows(get_task(name_or_path), split_a, split_b, resolve_data_dir(data_dir))


def read_items(
    path: str | Path,
    fmt: str | None = None,
    *,
    labels: Sequence[Label] = NLI3,
    fields: Mapping[str, Any] | None = None,
    label_map: Mapping[Any, Any] | None = None,
    parser: RowParser | None = None,
    skip_bad: bool = False,
) -> Dataset:
    """Read one jsonl/csv/tsv file (``.gz`` ok) with a field map or a row parser.

    ``fmt`` overrides the format guessed from the extension. The dataset's task is the
    file's stem and its split ``"file"``.

    >>> ds = read_items(resources.files("nlieval") / "resources" / "smoke.jsonl",
    ...                 fields={"premise": "sentence1", "hypothesis": "sentence2",
    ...                         "label": "gold_label", "id": "pairID"})
    >>> len(ds)
    48
    """
    path = Path(str(path))
    parser = parser or make_parser(labels, fields, label_map)
    labels = tuple(getattr(parser, "labels", labels))
    rows = _text_rows(path, fmt or _format_of(path.name))
    items, dropped, bad = _collect(rows, parser, str(path), skip_bad)
    return Dataset(path.name.split(".")[0], "file", labels, items, str(path), dropped, bad)


# --------------------------------------------------------------------------- loading


def _index(root: Path) -> dict[str, list[Path]]:
    """Every file under ``root`` by lower-cased name, paths sorted (hidden folders skipped)."""
    index: dict[str, list[Path]] = {}
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:  # a symlink loop
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in filenames:
            index.setdefault(fn.lower(), []).append(Path(dirpath) / fn)
    for paths in index.values():
        paths.sort()
    return index


def _fixed_path(rule: FileRule) -> Path | None:
    if rule.path is not None:
        return rule.path
    if rule.resource is not None:
        return Path(str(resources.files("nlieval") / "resources" / rule.resource))
    return None


def _plan(spec: TaskSpec, split: str, root: Path | None) -> tuple[FileRule, Path] | None:
    """The rule and file that would be read for a split, or None."""
    rules = spec.splits.get(split, ())
    for rule in rules:
        fixed = _fixed_path(rule)
        if fixed is not None:
            return rule, fixed
    if root is None:
        return None
    index = _index(root)
    for rule in rules:
        found = rule.locate(index, root)
        if found is not None:
            return rule, found
    return None


def _available(spec: TaskSpec, split: str, root: Path | None) -> bool:
    plan = _plan(spec, split, root)
    if plan is not None:
        return plan[1].is_file()
    return root is None and spec.hub is not None and split in spec.hub.splits


def _check_split(spec: TaskSpec, split: str) -> None:
    known = set(spec.splits) | (set(spec.hub.splits) if spec.hub else set())
    if split not in known:
        raise DataError(
            None,
            None,
            "split",
            f"task {spec.name} has no split {split!r}; splits: {', '.join(sorted(known))}",
        )


def _load_split(spec: TaskSpec, split: str, root: Path | None, skip_bad: bool) -> Dataset:
    _check_split(spec, split)
    plan = _plan(spec, split, root)
    if plan is not None:
        rule, path = plan
        rows, source = rule.rows(path)
        items, dropped, bad = _collect(rows, rule.parser, source, skip_bad)
    elif root is None and spec.hub is not None and split in spec.hub.splits:
        return _load_hub(spec, split, skip_bad)
    else:
        raise _not_found(spec, split, root)
    log.info(
        "%s %s: %d items from %s (dropped: %s)",
        spec.name,
        split,
        len(items),
        source,
        dropped or "none",
    )
    return Dataset(spec.name, split, spec.labels, items, source, dropped, bad)


def _not_found(spec: TaskSpec, split: str, root: Path | None) -> DataError:
    looked = "; ".join(r.describe() for r in spec.splits.get(split, ()))
    if root is not None:
        return DataError(root, None, None, f"no file for {spec.name} {split}: looked for {looked}")
    return DataError(
        None,
        None,
        None,
        f"no data for {spec.name} {split}: looked for {looked}; "
        f"set --data-dir or {ENV_DATA_DIR} to the folder holding it",
    )


def _load_hub(spec: TaskSpec, split: str, skip_bad: bool) -> Dataset:
    hub = spec.hub
    assert hub is not None
    try:
        import datasets
    except ImportError:
        raise DataError(
            None,
            None,
            None,
            f"{spec.name}: no data dir is set and the 'datasets' package is "
            f"not installed; set --data-dir or {ENV_DATA_DIR}, or pip install "
            "'nlieval[hub]'",
        ) from None
    source = f"hf:{hub.path}" + (f"/{hub.name}" if hub.name else "") + f":{hub.splits[split]}"
    table = datasets.load_dataset(hub.path, hub.name, split=hub.splits[split])
    rows = ((n, dict(r)) for n, r in enumerate(table, 1))
    items, dropped, bad = _collect(rows, hub.parser, source, skip_bad)
    return Dataset(spec.name, split, spec.labels, items, source, dropped, bad)


def _collect(
    rows: Iterable[RowOrError], parser: RowParser, where: str, skip_bad: bool
) -> tuple[tuple[Item, ...], dict[str, int], int]:
    """Parse rows into items, counting drops; bad rows raise, or are skipped and counted."""
    items: list[Item] = []
    dropped: Counter[str] = Counter()
    bad = 0
    for line, row in rows:
        try:
            if isinstance(row, DataError):
                raise row
            try:
                out = parser(row, line)
            except _FieldError as err:
                raise DataError(where, line, err.field, err.message) from None
        except DataError as err:
            if not skip_bad:
                raise
            bad += 1
            if bad <= _MAX_LOGGED_BAD:
                log.warning("skipped bad line: %s", err)
            continue
        if isinstance(out, str):
            dropped[out] += 1
        elif out is not None:
            items.append(out)
    if bad:
        log.warning("%s: skipped %d bad line(s)", where, bad)
    if not items:
        why = (
            f"{bad} bad line(s) skipped"
            if bad
            else f"dropped: {dict(dropped)}"
            if dropped
            else "no rows"
        )
        raise DataError(where, None, None, f"no usable items ({why})")
    return _unique_ids(items, where), dict(dropped), bad


def _unique_ids(items: list[Item], where: str) -> tuple[Item, ...]:
    # Shots are kept apart from the test item by id, so ids must be unique; some official
    # files reuse one id for several items (alpha-NLI story_id), which then get "#2", "#3".
    counts = Counter(it.id for it in items)
    if len(counts) == len(items):
        return tuple(items)
    seen: Counter[str] = Counter()
    out = []
    for it in items:
        seen[it.id] += 1
        out.append(it if seen[it.id] == 1 else dataclasses.replace(it, id=f"{it.id}#{seen[it.id]}"))
    dup = sum(c - 1 for c in counts.values() if c > 1)
    log.warning("%s: %d repeated id(s) made unique with a #n suffix", where, dup)
    return tuple(out)
