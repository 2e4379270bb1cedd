"""GenerateSummary is a frozen result all through: its invalid_reasons cannot be changed
after the fact (not by its maker's dict either), and summary.json holds them as before."""

from __future__ import annotations

import json

import pytest

from nlieval.metainference import GenerateSummary, format_summary


def _summary(reasons: dict[str, int]) -> GenerateSummary:
    return GenerateSummary(
        "m", "t", "dev", 0, premises=2, parsed_first_try=1, parsed_after_retries=0, failed=1,
        server_errors=0, not_attempted=0, answers=4, invalid_answers=3, server_failures=0,
        items=3, invalid_reasons=reasons, seconds=0.5, stopped=None,
    )  # fmt: skip


def test_invalid_reasons_cannot_be_changed() -> None:
    reasons = {"no JSON object": 2, "missing key(s): neutral": 1}
    summary = _summary(reasons)
    with pytest.raises(TypeError):
        summary.invalid_reasons["no JSON object"] = 5  # type: ignore[index]
    reasons["no JSON object"] = 5  # the maker's own dict changes later
    assert dict(summary.invalid_reasons) == {"no JSON object": 2, "missing key(s): neutral": 1}


def test_the_summary_json_and_text_hold_the_reasons_in_order() -> None:
    summary = _summary({"no JSON object": 2, "missing key(s): neutral": 1})
    # Written by hand: the fields in their order, the reasons as a JSON object.
    assert json.dumps(summary.to_dict()) == (
        '{"generator": "m", "task": "t", "split": "dev", "examples": 0, "premises": 2, '
        '"parsed_first_try": 1, "parsed_after_retries": 0, "failed": 1, "server_errors": 0, '
        '"not_attempted": 0, "answers": 4, "invalid_answers": 3, "server_failures": 0, '
        '"items": 3, "invalid_reasons": {"no JSON object": 2, "missing key(s): neutral": 1}, '
        '"seconds": 0.5, "stopped": null}'
    )
    assert "(3 invalid: no JSON object 2, missing key(s): neutral 1)" in format_summary(summary)
