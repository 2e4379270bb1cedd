"""``nlieval instruct`` against a server that misbehaves: HTTP 200 answers that are not
JSON are tried again (and counted), and answers received before a stop are kept."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import main
from nlieval.types import SCI4
from tests.helpers.fake_openai import running
from tests.helpers.records import saved_records


def _task(tmp_path: Path, n: int) -> Path:
    with open(tmp_path / "test.jsonl", "w") as f:
        for i in range(n):
            row = {
                "id": f"t{i}",
                "s1": f"Premise {i}.",
                "s2": f"Hypothesis {i}.",
                "label": SCI4[i % 4].value,
            }
            f.write(json.dumps(row) + "\n")
    yaml = tmp_path / "sci.yaml"
    yaml.write_text(
        "name: mini\npath: test.jsonl\n"
        "labels: [contrasting, reasoning, entailment, neutral]\n"
        "fields: {id: id, premise: s1, hypothesis: s2, label: label}\n"
    )
    return yaml


def _answer(body: dict[str, Any]) -> tuple[Any, ...]:
    # Item i is answered with class (i // 4) % 4: a known, mixed accuracy.
    m = re.search(r"Premise (\d+)\.", body["messages"][-1]["content"])
    assert m is not None
    return ("ok", SCI4[(int(m.group(1)) // 4) % 4].value.capitalize())


def _argv(yaml: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [
        "instruct",
        "--model",
        "fake/chat",
        "--task",
        str(yaml),
        "--shots",
        "0",
        "--out",
        str(out),
        "--no-progress",
        "--api-base",
        url,
        *extra,
    ]


def test_five_percent_non_json_finishes_in_one_invocation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = 600
    yaml, out = _task(tmp_path, n), tmp_path / "run"
    with running() as server:
        server.default = _answer
        server.not_json_rate = 0.05
        assert main(_argv(yaml, out, server.url, "--concurrency", "8")) == 0
        bad = server.not_json_sent
    err = capsys.readouterr().err
    assert bad > 10  # about 5% of 600 (plus their retries)
    assert f"server faults tried again: {bad} ({bad} not JSON)" in err
    records = saved_records(out)
    assert sorted(int(r.item_id[1:]) for r in records) == list(range(n))
    for r in records:
        i = int(r.item_id[1:])
        assert r.pred == SCI4[(i // 4) % 4].value and r.gold == SCI4[i % 4].value
    acc = json.loads((out / "results.json").read_text())["metrics"][0]["accuracy"]
    assert acc == pytest.approx(sum((i // 4) % 4 == i % 4 for i in range(n)) / n)


def test_answers_received_before_a_stop_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml, out = _task(tmp_path, 40), tmp_path / "run"
    failing = {"on": True}

    def answer(body: dict[str, Any]) -> tuple[Any, ...]:
        if failing["on"] and "Premise 7." in body["messages"][-1]["content"]:
            return ("status", 400, '{"error": "bad request"}', {})
        return _answer(body)

    with running() as server:
        server.default = answer
        argv = _argv(yaml, out, server.url, "--retries", "0", "--concurrency", "4")
        assert main(argv) == 2
        assert "400" in capsys.readouterr().err
        # The first chunk (32 items) less the one that failed: every answer received.
        got = sorted(int(r.item_id[1:]) for r in saved_records(out))
        assert got == [i for i in range(32) if i != 7]
        failing["on"] = False
        sent = len(server.requests)
        assert main(argv) == 0
        assert len(server.requests) - sent == 40 - 31
    records = saved_records(out)
    assert sorted(int(r.item_id[1:]) for r in records) == list(range(40))
