"""The shipped ``mismatched-table3`` prompt is the MisMatched paper's Table 3 word for word
(the expected text below is copied from the paper, 002 Table 3), and a prompt whose
instructions render empty sends no system turn and prepends nothing."""

from __future__ import annotations

import pytest

from nlieval.data.prompt_files import read_prompt
from nlieval.sci.instruct_prompt import InstructPrompt
from nlieval.types import Item, Label

# Paper 002, Table 3, between "<human>: " and " <bot>:", with <sentence1>/<sentence2> filled.
TABLE3 = (
    "Consider the following two sentences:\n"
    "Sentence1: S1 Sentence2: S2 Based only on the information available in these two "
    "sentences, which of the following options is true? a. Sentence1 generalizes, "
    "specifies or has an equivalent meaning with Sentence2. b. Sentence1 presents the "
    "reason, cause, or condition for the result or conclusion made Sentence2. c. Sentence2 "
    "mentions a comparison, criticism, juxtaposition, or a limitation of something said in "
    "Sentence1. d. Sentence1 and Sentence2 are independent."
)


def _item(i: str, p: str, h: str, label: Label | None = None) -> Item:
    return Item(id=i, premise=p, hypothesis=h, label=label)


@pytest.mark.parametrize("system_role", [True, False])
def test_table3_prompt_is_the_papers_text_in_user_turns_only(system_role: bool) -> None:
    prompt = InstructPrompt(read_prompt("mismatched-table3", "instruct"))
    ex = _item("e", "E1", "E2", Label.REASONING)
    msgs = prompt.build_messages(_item("t", "S1", "S2"), [ex], system_role=system_role)
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[-1]["content"] == TABLE3
    assert msgs[0]["content"] == TABLE3.replace("S1", "E1").replace("S2", "E2")
    # Option b is reasoning in the paper's list.
    assert msgs[1]["content"] == "b."
