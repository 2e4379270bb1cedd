"""The records of `nlieval instruct` keep every field the task keeps for an item (not
only its domain), so that `grid --cols genre` or `breakdown --by source` can group them."""

from __future__ import annotations

from nlieval.sci.instruct import evaluate_instruct
from nlieval.types import SCI4, Item
from tests.helpers.chats import ConstantChat


def test_every_item_field_reaches_the_records() -> None:
    items = [
        Item("a", "S1.", "S2.", SCI4[0], meta={"domain": "acl", "source": "scinli"}),
        Item("b", "S1.", "S2.", SCI4[1], meta={"genre": "fiction"}),
        Item("c", "S1.", "S2.", SCI4[2]),
    ]
    records = evaluate_instruct(ConstantChat("Neutral", name="chat"), items, [], k=0, run=0)
    assert [r.meta for r in records] == [
        {"domain": "acl", "source": "scinli"},
        {"genre": "fiction"},
        {},
    ]
