"""Every count a command writes about its inputs is the count it used (issue 43, rule 2):
a stand-in engine records what reaches it, and the items of results.json, summary.md and
the records are compared with that; asking for more items than a split holds is a
warning naming both numbers, in every command that selects items."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from tests.helpers.hash_lm import HashLM
from tests.helpers.records import saved_records

SMOKE_TEST = 48  # the packaged smoke task's test split (src/nlieval/resources/smoke.jsonl)


def _smoke_test_lines() -> int:
    # Counted from the file itself, not through nlieval's reader.
    import nlieval

    path = Path(nlieval.__file__).parent / "resources" / "smoke.jsonl"
    return sum(1 for line in path.read_text().splitlines() if line.strip())


class Recording(HashLM):
    """:class:`HashLM` that keeps the prompt of every request it scores."""

    def __init__(self) -> None:
        super().__init__()
        self.contexts: list[str] = []

    def loglikelihood(self, requests: Any, progress: Any = None) -> list[list[float]]:
        self.contexts += [r.context for r in requests]
        return super().loglikelihood(requests, progress)


def _warned(caplog: pytest.LogCaptureFixture, *numbers: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and all(n in r.getMessage() for n in numbers)
    ]


@pytest.mark.parametrize("flag", ["limit", "sample"])
def test_run_counts_what_reached_the_model_and_warns_of_a_short_split(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, flag: str
) -> None:
    assert _smoke_test_lines() == SMOKE_TEST
    engine = Recording()
    asked = {"limit": 500 if flag == "limit" else None, "sample": 500 if flag == "sample" else None}
    cfg = RunConfig(model="hash", tasks=("smoke",), shots=(0,), seeds=(0,), **asked)
    with caplog.at_level(logging.WARNING):
        res = run(cfg, tmp_path / "r", model=stand_in(cfg, lambda _: engine), progress=False)
    seen = len(engine.contexts)
    assert seen == SMOKE_TEST
    saved = json.loads((tmp_path / "r" / "results.json").read_text())
    assert saved["data"]["smoke"]["items"] == seen
    assert [m["n"] for m in res.metrics] == [seen]
    assert len(saved_records(tmp_path / "r")) == seen
    summary = (tmp_path / "r" / "summary.md").read_text()
    assert f"| smoke | 0 | {seen} |" in summary and f"{seen} of {seen} items" in summary
    assert _warned(caplog, f"--{flag} 500", "500", str(SMOKE_TEST)), caplog.text


def test_a_selection_within_the_split_is_not_warned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = Recording()
    cfg = RunConfig(model="hash", tasks=("smoke",), shots=(0,), seeds=(0,), limit=SMOKE_TEST)
    with caplog.at_level(logging.WARNING):
        run(cfg, tmp_path / "r", model=stand_in(cfg, lambda _: engine), progress=False)
    assert len(engine.contexts) == SMOKE_TEST
    assert not _warned(caplog, "asks for"), caplog.text


class RecordingChat:
    """A chat model that keeps every conversation it is given; answers Neutral, or the
    three hypotheses ``generate`` asks for."""

    name = "recording-chat"

    def __init__(self, answer: str = "Neutral") -> None:
        self.answer = answer
        self.seen: list[Any] = []

    def generate(self, conversations: Any, *args: Any, **kw: Any) -> list[str]:
        self.seen += list(conversations)
        return [self.answer] * len(conversations)


def _sci_task(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    classes = ("contrasting", "reasoning", "entailment", "neutral")
    rows = [
        {"id": f"s{i}", "s1": f"Sentence {i}.", "s2": f"Then {i}.", "label": classes[i % 4]}
        for i in range(n)
    ]
    (folder / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    yaml = folder / "t.yaml"
    yaml.write_text(
        "name: sci\npath: d.jsonl\nlabels: [contrasting, reasoning, entailment, neutral]\n"
        "fields: {id: id, premise: s1, hypothesis: s2, label: label}\n"
    )
    return yaml


@pytest.mark.parametrize("balanced", [False, True])
def test_instruct_counts_what_reached_the_model_and_warns_of_a_short_split(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, balanced: bool
) -> None:
    from nlieval.sci.instruct import InstructConfig, run_instruct

    task, chat = _sci_task(tmp_path / "d", 8), RecordingChat()
    cfg = InstructConfig(
        "org/bot", (str(task),), shots=(0,), limit=50, split=None, balanced_limit=balanced
    )
    with caplog.at_level(logging.WARNING):
        run_instruct(cfg, tmp_path / "i", stand_in(cfg, lambda _: chat), progress=False)
    assert len(chat.seen) == 8
    saved = json.loads((tmp_path / "i" / "results.json").read_text())
    (data,) = saved["data"].values()
    assert data["items"] == 8
    assert [m["n"] for m in saved["metrics"]] == [8]
    assert len(saved_records(tmp_path / "i")) == 8
    assert _warned(caplog, "--limit 50", "50", "8"), caplog.text


def test_generate_counts_the_premises_asked_and_warns_of_a_short_task(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The distinct premises of smoke's test split, counted from the file.
    import nlieval
    from nlieval.backends import ChatModel
    from nlieval.metainference.generated import GenerateConfig, generate_items

    rows = [
        json.loads(line)
        for line in (Path(nlieval.__file__).parent / "resources" / "smoke.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    ]
    premises = len({r["sentence1"].strip() for r in rows})
    chat = RecordingChat('{"entailment": "A.", "neutral": "B.", "contradiction": "C."}')
    with caplog.at_level(logging.WARNING):
        summary = generate_items(
            stand_in(ChatModel("echo"), lambda _: chat),
            GenerateConfig("smoke", limit=500, examples=0),
            tmp_path / "g",
        )
    assert summary.premises == premises
    # One conversation per premise at most, and each premise in exactly one.
    asked = {json.dumps(c, sort_keys=True) for c in chat.seen}
    assert len(asked) == len(chat.seen) <= premises
    assert summary.items == 3 * premises
    assert _warned(caplog, "--limit 500", "500", str(premises)), caplog.text


def test_infer_build_uses_and_reports_what_it_found(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from nlieval.metainference.commands import InferBuildConfig, build_inferred

    with caplog.at_level(logging.WARNING):
        got = build_inferred(InferBuildConfig(task="smoke", out=str(tmp_path / "b"), limit=500))
    assert len(got["items"]) == SMOKE_TEST
    assert _warned(caplog, "--limit 500", "500", str(SMOKE_TEST)), caplog.text
