"""Prompt files: the chat prompts of ``nlieval instruct`` and ``nlieval generate`` as data.

A prompt file is a YAML mapping (at most :data:`MAX_PROMPT_BYTES`, no aliases) of Jinja
templates, one per part of the conversation, rendered by the command that reads it in
the bounded sandbox task templates use:

- ``kind``: ``instruct`` or ``generate`` (a file for one command is refused by the other);
- ``system``: the instructions (the system turn, or the top of the first user turn);
- ``user``: the turn of one item (an exemplar's or the test item's);
- ``assistant``: an exemplar's answer turn;
- ``definitions`` (instruct only): one line of text per class, by label name, given to
  ``system`` as ``classes``;
- ``options`` (instruct only): the option of each class, by label name, in the order the
  prompt lists them: a letter or a word (``c``, ``C.``, ``(c)`` and ``c)`` all declare
  ``c``), given to ``system`` as each class's ``letter``; the answers are read in exactly
  these options (default: A, B, C, D in the task's label order);
- ``exemplar_turns`` (default true): exemplars as earlier user/assistant turns; false when
  ``system`` writes them itself (it gets them as ``exemplars``);
- ``description``: free text, not sent.

Which variables each part knows is the reading command's (``nlieval instruct`` and
``nlieval generate`` document theirs). The defaults the commands ship are such files
(:func:`shipped_prompt`). :attr:`PromptFile.digest` hashes what the file says, not where
it is, so a run folder's identity holds the prompt by content.

>>> p = shipped_prompt("instruct")
>>> p.kind, sorted(p.definitions)[:2], len(p.digest)
('instruct', ['contrasting', 'entailment'], 64)
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..ground import DataError
from ..types import LETTERS, SCI4
from .readers import format_of, text_rows
from .taskyaml import read_yaml_mapping

#: Largest prompt file, in bytes.
MAX_PROMPT_BYTES = 65_536
#: Most solved examples an exemplar file may hold.
MAX_EXEMPLARS = 1_000
#: Longest text of an exemplar field, in characters.
MAX_EXEMPLAR_CHARS = 20_000

KINDS = ("instruct", "generate")
_TEXT_KEYS = ("system", "user", "assistant")
_KEYS = frozenset({"kind", "description", "definitions", "options", "exemplar_turns", *_TEXT_KEYS})
#: An option as declared: a letter or word, in parentheses or followed by ``.`` or ``)``.
_OPTION = re.compile(r"\(?\s*([A-Za-z0-9]+)\s*[.)]?")
#: The options of a prompt that declares none: A-D in the scientific classes' order.
DEFAULT_OPTIONS: tuple[tuple[str, str], ...] = tuple(
    (lab.value, LETTERS[n]) for n, lab in enumerate(SCI4)
)


@dataclass(frozen=True)
class PromptFile:
    """The parts of a prompt file (module docstring), and ``origin``, where it came from
    (for error messages; not part of :attr:`digest`)."""

    kind: str
    system: str
    user: str
    assistant: str
    definitions: Mapping[str, str] = field(default_factory=dict)
    exemplar_turns: bool = True
    origin: str = "prompt"
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """SHA-256 of the parts that shape a prompt (everything but ``origin`` and the
        description): equal for two files that prompt alike, wherever they are. Options
        that declare what a file without them gets (:data:`DEFAULT_OPTIONS`) change
        nothing, so they leave the digest of the file without them."""
        body: dict[str, Any] = {
            "kind": self.kind,
            "system": self.system,
            "user": self.user,
            "assistant": self.assistant,
            "definitions": dict(sorted(self.definitions.items())),
            "exemplar_turns": self.exemplar_turns,
        }
        if self.options and tuple(self.options.items()) != DEFAULT_OPTIONS:
            body["options"] = list(self.options.items())  # a list: the order counts
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def templates(self) -> dict[str, str]:
        """The three template texts by part name.

        >>> sorted(shipped_prompt("generate").templates())
        ['assistant', 'system', 'user']
        """
        return {"system": self.system, "user": self.user, "assistant": self.assistant}


def _parse(doc: Mapping[str, Any], origin: str, where: str | Path, kind: str) -> PromptFile:
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise DataError(where, None, unknown[0], f"unknown key; a prompt file has {sorted(_KEYS)}")
    if doc.get("kind") != kind:
        raise DataError(
            where, None, "kind", f"is {doc.get('kind')!r}; this command reads kind: {kind}"
        )
    parts = {}
    for name in _TEXT_KEYS:
        value = doc.get(name)
        if not isinstance(value, str) or not value.strip():
            raise DataError(where, None, name, "must be non-empty template text")
        parts[name] = value
    definitions = doc.get("definitions") or {}
    if not isinstance(definitions, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in definitions.items()
    ):
        raise DataError(where, None, "definitions", "must map label names to text")
    if definitions and kind != "instruct":
        raise DataError(where, None, "definitions", "only instruct prompts define classes")
    turns = doc.get("exemplar_turns", True)
    if not isinstance(turns, bool):
        raise DataError(where, None, "exemplar_turns", "must be true or false")
    options = _options(doc.get("options"), where, kind)
    return PromptFile(
        kind, **parts, definitions=definitions, exemplar_turns=turns, origin=origin,
        options=options,
    )  # fmt: skip


def _options(value: Any, where: str | Path, kind: str) -> dict[str, str]:
    """The ``options`` of a prompt file: label name -> option, as declared, each option a
    letter or word (``(c)``, ``c.`` and ``c)`` are ``c``), no two alike in any case."""
    if value is None:
        return {}
    if kind != "instruct":
        raise DataError(where, None, "options", "only instruct prompts have options")
    if not isinstance(value, dict) or not value:
        raise DataError(where, None, "options", "must map label names to option letters or words")
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for label, raw in value.items():
        # YAML reads a bare yes/no/on/off as true/false: not the word the file shows.
        plain = isinstance(raw, str | int) and not isinstance(raw, bool)
        m = _OPTION.fullmatch(str(raw).strip()) if plain else None
        if not isinstance(label, str) or m is None:
            raise DataError(
                where, None, f"options.{label}",
                f"{raw!r} is no option: a letter or word, e.g. c, C., (c) or c) "
                "(in quotes when it is yes, no, on or off)",
            )  # fmt: skip
        token = m.group(1)
        if token.lower() in seen:
            raise DataError(
                where, None, f"options.{label}",
                f"{token!r} is also the option of {seen[token.lower()]}: options must differ",
            )  # fmt: skip
        seen[token.lower()] = label
        out[label] = token
    return out


def read_prompt_file(path: str | Path, kind: str) -> PromptFile:
    """A prompt file of ``kind`` (``instruct`` or ``generate``) under the file rules (a
    regular UTF-8 file of at most 64 KiB); every fault is one :class:`DataError` line
    naming the file and the key. The templates are compiled by the reading command.

    >>> p = Path(run_dir) / "mine.yaml"
    >>> _ = p.write_text("kind: generate\\nsystem: Write.\\nuser: 'P: {{ premise }}'\\n"
    ...                  "assistant: '{{ entailment }}'\\n")
    >>> read_prompt_file(p, "generate").user
    'P: {{ premise }}'
    >>> read_prompt_file(p, "instruct")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: ...mine.yaml: field 'kind': is ...; this command reads ...
    """
    if kind not in KINDS:
        raise ValueError(f"unknown prompt kind {kind!r}: {', '.join(KINDS)}")
    doc = read_yaml_mapping(path, "prompt", MAX_PROMPT_BYTES)
    return _parse(doc, f"prompt file {path}", path, kind)


def shipped_prompt(kind: str, name: str | None = None) -> PromptFile:
    """The default prompt of ``nlieval instruct`` or ``nlieval generate``, from the
    package's ``resources/prompts/{kind}.yaml`` (a file like any user's), or the shipped
    prompt ``name`` of that kind (``resources/prompts/{kind}-{name}.yaml``, see
    :func:`shipped_names`).

    >>> shipped_prompt("generate").user
    'Premise: {{ premise }}'
    >>> list(shipped_prompt("instruct", "mismatched").options.values())
    ['a', 'b', 'c', 'd']
    """
    if kind not in KINDS:
        raise ValueError(f"unknown prompt kind {kind!r}: {', '.join(KINDS)}")
    if name is not None and name not in shipped_names(kind):
        known = ", ".join(shipped_names(kind)) or "none"
        raise DataError(
            name, None, None,
            f"no such prompt file, nor a shipped {kind} prompt (shipped: {known})",
        )  # fmt: skip
    stem = kind if name is None else f"{kind}-{name}"
    ref = resources.files("nlieval") / "resources" / "prompts" / f"{stem}.yaml"
    with resources.as_file(ref) as path:
        doc = read_yaml_mapping(path, "prompt", MAX_PROMPT_BYTES)
    return _parse(doc, f"shipped {stem} prompt", ref.name, kind)


def shipped_names(kind: str) -> list[str]:
    """The names of the prompts of ``kind`` the package ships besides its default.

    >>> shipped_names("instruct")
    ['mismatched', 'mismatched-table3']
    """
    folder = resources.files("nlieval") / "resources" / "prompts"
    prefix = f"{kind}-"
    return sorted(
        f.name[len(prefix) : -len(".yaml")]
        for f in folder.iterdir()
        if f.name.startswith(prefix) and f.name.endswith(".yaml")
    )


def read_prompt(value: str | Path, kind: str) -> PromptFile:
    """What ``--prompt VALUE`` names: a prompt file (:func:`read_prompt_file`), or, when
    ``VALUE`` is a plain name (no ``/``, no ``.``) and no such file exists, the shipped
    prompt of that name (:func:`shipped_prompt`).

    >>> read_prompt("mismatched", "instruct").origin
    'shipped instruct-mismatched prompt'
    """
    text = str(value)
    if "/" not in text and "." not in text and not Path(text).exists():
        return shipped_prompt(kind, text)
    return read_prompt_file(value, kind)


#: The names of a pair's sentences in a file of labelled pairs: nlieval's, or SciNLI's
#: (the names ``nlieval build distant`` and ``build implicit`` write).
PAIR_NAMES = (("premise", "hypothesis"), ("sentence1", "sentence2"))


def pair_fields(path: str | Path) -> dict[str, str]:
    """The field map of a file of labelled pairs (``instruct --exemplars``): ``premise``,
    ``hypothesis``, ``label`` and ``id``, or ``sentence1``/``sentence2`` for the two
    sentences when the file's first row has those and no ``premise``.

    >>> p = Path(run_dir) / "built.jsonl"
    >>> _ = p.write_text('{"sentence1": "A.", "sentence2": "B.", "label": "neutral"}\\n')
    >>> pair_fields(p)["premise"], pair_fields(p)["hypothesis"]
    ('sentence1', 'sentence2')
    """
    first: dict[str, Any] = {}
    for _, row in text_rows(Path(path), format_of(Path(path).name)):
        if isinstance(row, DataError):
            raise row
        first = row
        break
    names = next(
        (pair for pair in PAIR_NAMES if pair[0] in first and PAIR_NAMES[0][0] not in first),
        PAIR_NAMES[0],
    )
    return {"premise": names[0], "hypothesis": names[1], "label": "label", "id": "id"}


def read_solved_examples(
    path: str | Path, fields: Sequence[str], max_rows: int = MAX_EXEMPLARS
) -> list[dict[str, str]]:
    """The rows of an exemplar file (jsonl or csv/tsv), each with the text ``fields``
    (non-empty strings of at most :data:`MAX_EXEMPLAR_CHARS`) and an ``id`` (the row's own,
    else ``line N``), in file order. A missing or empty field, or a file of more than
    ``max_rows`` rows, is one :class:`DataError` line naming the file, line and field.

    >>> p = Path(run_dir) / "ex.jsonl"
    >>> _ = p.write_text('{"premise": "A dog runs.", "entailment": "An animal moves."}\\n')
    >>> read_solved_examples(p, ["premise", "entailment"])
    [{'premise': 'A dog runs.', 'entailment': 'An animal moves.', 'id': 'line 1'}]
    """
    out: list[dict[str, str]] = []
    for line, row in text_rows(Path(path), format_of(Path(path).name)):
        if isinstance(row, DataError):
            raise row
        if len(out) >= max_rows:
            raise DataError(path, line, None, f"more than {max_rows} exemplars")
        got: dict[str, str] = {}
        for name in fields:
            value = row.get(name)
            if not isinstance(value, str) or not value.strip():
                raise DataError(path, line, name, "missing or empty")
            if len(value) > MAX_EXEMPLAR_CHARS:
                raise DataError(path, line, name, f"longer than {MAX_EXEMPLAR_CHARS:,} characters")
            got[name] = value.strip()
        ident = row.get("id")
        got["id"] = str(ident) if isinstance(ident, str | int) and str(ident) else f"line {line}"
        out.append(got)
    if not out:
        raise DataError(path, None, None, "holds no exemplars")
    return out
