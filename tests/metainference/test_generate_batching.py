"""``nlieval generate`` drives its chat model as the model declares (issue 44 part 4b): an
engine that schedules any number of conversations itself (vLLM) gets all the premises of
a chunk in one call (as one that declares nothing), one that declares a batch gets at
most that many per call, and every answer ends where the JSON object has closed
whatever the engine. ``instruct`` keeps
each call within the declared batch too."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nlieval.backends import ChatModel, Generation, stand_in
from nlieval.metainference.generated import GenerateConfig, generate_items
from nlieval.runs import RECORDS
from nlieval.sci.instruct_answers import evaluate_instruct
from nlieval.types import Item, Label

N = 30
ANSWER = '{"entailment": "A.", "neutral": "B.", "contradiction": "C."}'


class Counting:
    """Answers every conversation with ``ANSWER`` and then some chatter; keeps the size
    of every call."""

    name = "counting"

    def __init__(self, generation: Generation | None = None) -> None:
        if generation is not None:
            self.generation = generation
        self.calls: list[int] = []

    def generate(self, conversations: Sequence[Any], *args: Any, **kw: Any) -> list[str]:
        self.calls.append(len(conversations))
        return [ANSWER + "\nI hope this helps!" for _ in conversations]


def _task(folder: Path) -> Path:
    rows = [{"id": f"t{i}", "s1": f"Premise {i}.", "s2": "H.", "label": "e"} for i in range(N)]
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    yaml = folder / "t.yaml"
    yaml.write_text(
        "name: gen\npath: test.jsonl\nlabels: [entailment, neutral, contradiction]\n"
        "fields: {id: id, premise: s1, hypothesis: s2, label: label}\n"
    )
    return yaml


def _generate(tmp_path: Path, chat: Counting) -> list[dict[str, Any]]:
    summary = generate_items(
        stand_in(ChatModel(chat.name), lambda _: chat),
        GenerateConfig(str(_task(tmp_path)), examples=0),
        tmp_path / "g",
    )
    assert summary.premises == N and summary.parsed_first_try == N
    lines = (tmp_path / "g" / RECORDS).read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_an_engine_that_schedules_itself_gets_every_premise_in_one_call(tmp_path: Path) -> None:
    chat = Counting(Generation(batch=None, stop=True))
    _generate(tmp_path, chat)
    assert chat.calls == [N]  # was one call per premise (30)


def test_a_declared_batch_bounds_each_call(tmp_path: Path) -> None:
    chat = Counting(Generation(batch=8))
    _generate(tmp_path, chat)
    assert chat.calls == [8, 8, 8, 6]


def test_a_backend_that_declares_nothing_gets_a_list_and_its_answers_are_cut(
    tmp_path: Path,
) -> None:
    chat = Counting()
    rows = _generate(tmp_path, chat)
    assert chat.calls == [N]  # was one call per premise
    # It cannot stop itself: its answers end where the JSON object closed, as a
    # transformers model's do (the chatter after it was kept before).
    assert {r["answer"] for r in rows} == {ANSWER}


def test_instruct_keeps_each_call_within_the_declared_batch() -> None:
    items = [Item(str(i), "A.", "B.", Label.NEUTRAL) for i in range(5)]
    chat = Counting(Generation(batch=2))
    records = evaluate_instruct(chat, items, [], k=0, run=0, batch_size=32)
    assert chat.calls == [2, 2, 1]  # was [5]: the whole chunk in one call
    assert len(records) == 5
