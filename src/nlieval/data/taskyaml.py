"""User tasks: reading a task YAML file into a :class:`~nlieval.data.rules.TaskSpec`
(:func:`task_from_yaml`, through :func:`nlieval.data.get_task`), building a row parser
from a field map (:func:`make_parser`), and writing a task YAML (:func:`write_task_yaml`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..ground import DataError, atomic_write, load_yaml, make_folder, read_small_text
from ..types import ALPHA, NLI3, Label
from .parsers import FieldError, FieldMap, MappedParser, norm_key, parse_label
from .rules import FAMILIES, FileRule, TaskSpec
from .templates import TemplateSource, read_template_file

#: Largest task YAML file, in bytes.
MAX_YAML_BYTES = 1_048_576

_YAML_KEYS = (
    "name",
    "path",
    "pool",
    "fields",
    "labels",
    "label_map",
    "family",
    "template",
    "template_file",
    "description",
)
_FIELD_KEYS = ("id", "premise", "hypothesis", "label", "choices", "meta")

#: The endings of a data file that ``--task`` reads as a task of its own (``.gz`` ok).
DATA_FILE_SUFFIXES = (".jsonl", ".csv", ".tsv")


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
        # Without an id key a file's own "id" field is the id where a row has one;
        # "id: null" numbers the lines whatever the file holds.
        id_if_present=None if "id" in spec else "id",
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
    _two_labels(labels, where)
    return labels


def _two_labels(labels: Sequence[Label], where: str | Path) -> None:
    # With one option every prediction is right: accuracy 1.0 that means nothing.
    if len(labels) < 2:
        raise DataError(
            where, None, "labels", f"{len(labels)} label(s): a task needs at least two options"
        )


def _label_map(raw: Any, labels: tuple[Label, ...], where: str | Path) -> dict[str, Label]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise DataError(where, None, "label_map", "expected a mapping raw value -> label")
    out: dict[str, Label] = {}
    first: dict[str, Any] = {}
    for k, v in raw.items():
        key = norm_key(k)
        # Raw labels are matched as text, stripped and lower-cased: 1 and "1", or "E"
        # and "e", are one key, and which of their labels wins would be chance.
        if key in first:
            raise DataError(
                where,
                None,
                "label_map",
                f"keys {first[key]!r} and {k!r} are the same raw label {key!r} once "
                "compared as text (stripped, lower-cased): keep one",
            )
        first[key] = k
        try:
            out[key] = parse_label(v, labels)
        except FieldError as err:
            raise DataError(where, None, "label_map", err.message) from None
    return out


def make_parser(
    labels: Sequence[Label],
    fields: Mapping[str, Any] | None = None,
    label_map: Mapping[Any, Any] | None = None,
    where: str | Path = "<fields>",
) -> MappedParser:
    """A row parser for user data from a field map (as in a task YAML's ``fields``; a key
    left out reads the field of its own name, and ``id`` the row's ``id`` field where it
    has one, else the line number). Its ids are strict: a blank id is an error, and so is
    a repeated one when the rows are read.

    >>> from nlieval.types import NLI3
    >>> p = make_parser(NLI3, {"premise": "s1", "hypothesis": "s2", "label": "y"}, {0: "e"})
    >>> p({"s1": "A cat naps.", "s2": "A cat rests.", "y": 0}, 1).label.value
    'entailment'
    """
    labels = tuple(labels)
    _two_labels(labels, where)
    fmap = _field_map(fields, where)
    if fmap.choices and len(fmap.choices) != len(labels):
        raise DataError(
            where, None, "fields.choices", f"{len(fmap.choices)} choices for {len(labels)} labels"
        )
    if labels == ALPHA and not fmap.choices:
        raise DataError(
            where, None, "fields.choices", "alpha-NLI style tasks need the two hypothesis fields"
        )
    return MappedParser(
        fmap, labels, label_map=_label_map(label_map, labels, where), strict_ids=True
    )


def task_from_yaml(path: Path) -> TaskSpec:
    """The user task of a task YAML file (the keys: see :func:`nlieval.data.get_task`)."""
    doc = read_yaml_mapping(path)
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
        pool = _rel(path, doc["pool"], "pool")
        # A missing pool is an error, not a silent fall-back to shots from the test split.
        if not pool.exists():
            raise DataError(path, None, "pool", f"no such file: {pool}")
        splits["train"] = (FileRule(parser, path=pool),)
    template = _template(doc, path)
    name = str(doc.get("name") or path.stem)
    desc = str(doc.get("description") or f"user task from {path}")
    return TaskSpec(name, labels, family, "test", desc, splits, None, template, str(path))


def is_data_file(name: str | Path) -> bool:
    """Whether ``--task NAME`` names a data file (jsonl, csv or tsv, ``.gz`` ok).

    >>> is_data_file("my.jsonl"), is_data_file("my.CSV.gz"), is_data_file("my.yaml")
    (True, True, False)
    """
    return str(name).lower().removesuffix(".gz").endswith(DATA_FILE_SUFFIXES)


def task_from_data_file(path: Path) -> TaskSpec:
    """A data file as a task of its own: its rows read with the default fields of
    :func:`make_parser` (premise, hypothesis, label, and id where a row has one) and the
    labels entailment, neutral, contradiction (another label set or other field
    names need a task YAML); named by the file's name up to its first dot; the file is
    the ``test`` split, and few-shot examples come from it too (never an item's own).

    >>> from nlieval.data import load_task
    >>> p = Path(run_dir) / "mine.jsonl"
    >>> row = '{"id": "cat-1", "premise": "A cat naps.", "hypothesis": "A cat rests.", '
    >>> _ = p.write_text(row + '"label": "entailment"}\\n', encoding="utf-8")
    >>> task_from_data_file(p).name, [it.id for it in load_task(str(p)).items]
    ('mine', ['cat-1'])
    """
    if not path.is_file():
        why = "not a regular file" if path.exists() else "no such file"
        raise DataError(path, None, None, f"{why} (a data file named as a task)")
    parser = make_parser(NLI3, None, None, path)
    splits = {"test": (FileRule(parser, path=path),)}
    name = path.name.split(".")[0]
    desc = f"data file {path}"
    return TaskSpec(name, NLI3, "nli3", "test", desc, splits, None, None, str(path))


def _template(doc: Mapping[str, Any], path: Path) -> TemplateSource | None:
    """The task's own template: ``template:`` is the text itself, ``template_file:``
    names a file (relative to the YAML's folder) under the file rules of
    :mod:`.templates`."""
    text, file = doc.get("template"), doc.get("template_file")
    if text is not None and file is not None:
        raise DataError(path, None, "template_file", "give template: or template_file:, not both")
    if file is not None:
        where = _rel(path, file, "template_file")
        try:
            return read_template_file(where, f"template_file {where} of {path}")
        except DataError as err:
            raise DataError(path, None, "template_file", str(err)) from None
    if text is None:
        return None
    if not isinstance(text, str):
        raise DataError(path, None, "template", "expected a Jinja template string")
    if "{{" not in text and "{%" not in text:
        # Once, template: took a file name too, read relative to wherever nlieval ran.
        raise DataError(
            path,
            None,
            "template",
            f"{text[:60]!r} prints nothing of the item: template: is the template text "
            "itself; to read a file, name it with template_file: (relative to this file)",
        )
    return TemplateSource(text, f"template of {path}")


def _rel(yaml_path: Path, value: Any, key: str) -> Path:
    if not isinstance(value, str) or not value:
        raise DataError(yaml_path, None, key, "expected a file path")
    p = Path(value).expanduser()
    return p if p.is_absolute() else yaml_path.parent / p


def read_yaml_mapping(
    path: str | Path, what: str = "task", max_bytes: int = MAX_YAML_BYTES
) -> dict[str, Any]:
    """A YAML file of at most ``max_bytes`` holding one mapping (a ``what`` file: task,
    prompt, ...), read by :func:`nlieval.ground.load_yaml` (no aliases, no key given
    twice); every failure is one
    :class:`~nlieval.data.DataError` line naming the file (and the line).

    >>> from pathlib import Path
    >>> p = Path(run_dir) / "x.yaml"
    >>> _ = p.write_text("a: &x [1]\\nb: *x\\n")
    >>> read_yaml_mapping(p, "prompt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: ...x.yaml:2: invalid YAML: aliases (*name) are not allowed
    """
    doc = load_yaml(read_small_text(path, max_bytes), path)
    if not isinstance(doc, dict):
        raise DataError(path, None, None, f"expected a mapping of {what} settings")
    return doc


def write_task_yaml(path: str | Path, spec_dict: Mapping[str, Any]) -> Path:
    """Write a task YAML file that :func:`nlieval.data.load_task` (and ``nlieval run
    --task PATH``) reads; return its path.

    ``spec_dict`` holds the task YAML keys (see :func:`nlieval.data.get_task`), written
    in its order; ``path`` and ``pool`` are relative to the YAML file's folder. Its keys
    are checked as the reader checks them: an unknown key, or no ``path``, raises
    :class:`DataError` before anything is written. Values are plain YAML (text, numbers,
    lists, mappings, None); a :class:`~nlieval.types.Label` is written as its value and
    a tuple as a list. The file is UTF-8 (non-ASCII text written as is), its folder is
    created when missing, and it is replaced atomically (written beside it, then
    renamed), so a reader never sees half a file.

    >>> from nlieval.data import load_task
    >>> from nlieval.types import NLI3
    >>> folder = Path(run_dir)
    >>> row = '{"premise": "A cat naps.", "hypothesis": "A cat rests.", "label": "e"}'
    >>> _ = (folder / "items.jsonl").write_text(row + "\\n", encoding="utf-8")
    >>> spec = {"name": "demo", "path": "items.jsonl", "labels": NLI3,
    ...         "label_map": {"e": "entailment"}}
    >>> yaml_path = write_task_yaml(folder / "task.yaml", spec)
    >>> print(yaml_path.read_text(encoding="utf-8"), end="")
    name: demo
    path: items.jsonl
    labels:
    - entailment
    - neutral
    - contradiction
    label_map:
      e: entailment
    >>> ds = load_task(str(yaml_path))
    >>> ds.task, ds.label_counts()
    ('demo', {'entailment': 1, 'neutral': 0, 'contradiction': 0})
    """
    import yaml

    path = Path(path)
    for key in spec_dict:
        if key not in _YAML_KEYS:
            raise DataError(path, None, str(key), f"unknown key; allowed: {', '.join(_YAML_KEYS)}")
    if "path" not in spec_dict:
        raise DataError(path, None, "path", "missing: the data file (jsonl, csv or tsv)")
    text = yaml.safe_dump(_plain(spec_dict), sort_keys=False, allow_unicode=True)
    make_folder(path.parent)  # the folder the caller named (it may be a link)
    atomic_write(path, text, root=path.parent)
    return path


def _plain(value: Any) -> Any:
    """``value`` with labels as their values and tuples as lists (for ``yaml.safe_dump``)."""
    if isinstance(value, Label):
        return value.value
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
