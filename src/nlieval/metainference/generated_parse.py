"""Reading a chat model's answer for generated items: the three hypotheses of the first
complete JSON object in it (:func:`parse_hypotheses`), or :class:`InvalidAnswer` saying
why not, and whether a partial answer may already stop (:func:`answer_complete`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ..types import NLI3, Label

#: The JSON keys of an answer, in the order of :data:`~nlieval.types.NLI3`.
KEYS: tuple[str, ...] = tuple(lab.value for lab in NLI3)


class InvalidAnswer(ValueError):
    """An answer that is not a JSON object with three non-empty hypotheses (says why)."""


def json_object_closed(text: str) -> bool:
    """Whether ``text`` holds a top-level ``{...}`` that has closed and nothing is open
    after it (braces inside JSON strings do not count).

    Hand-written because a JSON parser only says whether a complete text parses, not
    whether a growing text has closed its object; it follows the JSON grammar's strings
    and escapes, the only places where a brace is not structure.

    >>> [json_object_closed(t) for t in ('{"a": "}"', '{"a": "}"}', 'x {"a": {"b": 1}} y')]
    [False, True, True]
    >>> json_object_closed('{"a": 1} {"b":')
    False
    """
    depth = 0
    closed = False
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == "{":
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            closed = closed or depth == 0
        elif ch == '"' and depth > 0:
            in_string = True
    return closed and depth == 0


def _json_objects(text: str) -> Iterator[Any]:
    # Every JSON value that starts at a "{": finds the object inside code fences, after
    # "Sure, here it is:" and before trailing chatter, and nested objects too.
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        except RecursionError:
            # Nested too deeply to read; every "{" inside would fail the same way after
            # as long a walk, so the search stops here.
            raise InvalidAnswer("a JSON value nested too deeply to read") from None
        yield obj


def _hypotheses(obj: Any) -> dict[Label, str]:
    if not isinstance(obj, dict):
        raise InvalidAnswer("the JSON value is not an object")
    norm = {str(k).strip().lower(): v for k, v in obj.items()}
    missing = [k for k in KEYS if k not in norm]
    if missing:
        raise InvalidAnswer(f"missing key(s): {', '.join(missing)}")
    out = {}
    for lab in NLI3:
        value = norm[lab.value]
        if not isinstance(value, str):
            raise InvalidAnswer(f"{lab.value}: not a string")
        if not value.strip():
            raise InvalidAnswer(f"{lab.value}: empty")
        out[lab] = " ".join(value.split())
    return out


def parse_hypotheses(text: str) -> dict[Label, str]:
    """The three hypotheses of an answer, by label; raises :class:`InvalidAnswer`.

    The first JSON object in the text with all three keys (any case) and non-empty
    string values is taken; code fences and text around it are ignored.

    >>> parse_hypotheses('```json\\n{"Entailment": "x", "neutral": "y", "contradiction": "z"}```')[
    ...     Label.ENTAILMENT]
    'x'
    >>> parse_hypotheses('{"entailment": "x", "neutral": ""}')
    Traceback (most recent call last):
    nlieval.metainference.generated_parse.InvalidAnswer: missing key(s): contradiction
    """
    problems = []
    for obj in _json_objects(text):
        try:
            return _hypotheses(obj)
        except InvalidAnswer as err:
            problems.append(str(err))
    if problems:
        raise InvalidAnswer(problems[0])
    if "{" in text:
        raise InvalidAnswer("no complete JSON object")
    raise InvalidAnswer("no JSON object")


def answer_complete(text: str) -> bool:
    """Whether generation may stop after ``text``: a JSON object has closed and the
    text parses, so any continuation parses to the same hypotheses (the parser takes the
    first valid object, and every object opened so far has closed).

    >>> answer_complete('{"entailment": "a", "neutral": "b", "contradiction": "c"}')
    True
    >>> answer_complete('{"entailment": "a"}'), answer_complete('{"entailment": "a", "ne')
    (False, False)
    """
    if not json_object_closed(text):
        return False
    try:
        parse_hypotheses(text)
    except InvalidAnswer:
        return False
    return True
