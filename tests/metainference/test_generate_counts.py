"""``nlieval generate --examples N`` uses and records the solved examples it drew, and
asking for more than the pool holds is a warning naming both numbers (issue 43, rule 2).
The premises with all three labels are counted from the pool file with plain json."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import ChatModel, stand_in
from nlieval.metainference.generated import GenerateConfig, generate_items

LABELS = ("entailment", "neutral", "contradiction")


class RecordingChat:
    """A chat model that keeps every conversation and answers three hypotheses."""

    name = "recording-chat"

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def generate(self, conversations: Any, *args: Any, **kw: Any) -> list[str]:
        self.seen += list(conversations)
        answer = '{"entailment": "A.", "neutral": "B.", "contradiction": "C."}'
        return [answer] * len(conversations)


def _task(folder: Path) -> Path:
    """A pool of 3 premises with all three labels, 1 premise with two, and 2 test rows."""
    pool = [(f"Pool premise {p}.", lab) for p in range(3) for lab in LABELS]
    pool += [("Half premise.", "entailment"), ("Half premise.", "neutral")]
    rows = [
        {"id": f"p{i}", "s1": s, "s2": f"H {i}.", "label": lab} for i, (s, lab) in enumerate(pool)
    ]
    test = [{"id": f"t{i}", "s1": f"Target {i}.", "s2": "H.", "label": "neutral"} for i in range(2)]
    for name, data in (("pool.jsonl", rows), ("test.jsonl", test)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in data))
    yaml = folder / "t.yaml"
    yaml.write_text(
        "name: gen\npath: test.jsonl\npool: pool.jsonl\nlabels: [entailment, neutral, "
        "contradiction]\nfields: {id: id, premise: s1, hypothesis: s2, label: label}\n"
    )
    return yaml


def _full_premises(pool: Path) -> int:
    labels: dict[str, set[str]] = {}
    for line in pool.read_text().splitlines():
        row = json.loads(line)
        labels.setdefault(row["s1"].strip(), set()).add(row["label"])
    return sum(have == set(LABELS) for have in labels.values())


def _shown(conversation: Any) -> int:
    # A solved example is a user turn answered by an assistant turn before the last ask.
    return sum(1 for m in conversation if m["role"] == "assistant")


@pytest.mark.parametrize("asked", [50, 2])
def test_generate_examples_are_those_used_and_a_short_pool_is_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, asked: int
) -> None:
    task = _task(tmp_path)
    have = _full_premises(tmp_path / "pool.jsonl")
    assert have == 3
    chat = RecordingChat()
    with caplog.at_level(logging.WARNING):
        summary = generate_items(
            stand_in(ChatModel("echo"), lambda _: chat),
            GenerateConfig(str(task), examples=asked),
            tmp_path / "g",
        )
    used = min(asked, have)
    assert summary.examples == used
    assert chat.seen and {_shown(c) for c in chat.seen} == {used}
    warned = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and f"--examples {asked}" in r.getMessage()
    ]
    if asked > have:
        assert warned and str(have) in warned[0], caplog.text
    else:
        assert not warned, caplog.text
