"""A model's answer of JSON nested thousands deep is an invalid answer (one line, the
item kept as failed), not a RecursionError that ends the run."""

from __future__ import annotations

import pytest

from nlieval.metainference.generated_parse import InvalidAnswer, answer_complete, parse_hypotheses
from nlieval.types import Label


@pytest.mark.parametrize(
    "answer",
    ['{"e": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"a": ' * 50_000 + "1" + "}" * 50_000],
)
def test_an_answer_nested_deep_is_invalid_not_a_recursion_error(answer: str) -> None:
    with pytest.raises(InvalidAnswer, match="nested too deeply"):
        parse_hypotheses(answer)
    assert answer_complete(answer) is False


def test_a_good_object_before_deep_nesting_is_still_read() -> None:
    good = '{"entailment": "x", "neutral": "y", "contradiction": "z"}'
    assert parse_hypotheses(good + " " + "{" * 100_000)[Label.NEUTRAL] == "y"
