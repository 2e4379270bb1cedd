"""A model of an experiment file served by an OpenAI-compatible server (``api_base`` and
its options in the model's entry), end to end against the fake server of the server
tests: the cells' records equal those of ``nlieval run`` / ``nlieval instruct`` with
``--api-base`` of the same server, and a bad server entry (a URL that is none, a server
that does not answer) is one line naming the file, the line and the key, the other
cells done."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import main
from nlieval.experiments import (
    LocalExecutor,
    experiment_status,
    plan_cells,
    read_experiment,
    run_experiment,
)
from nlieval.ground import DataError
from tests.helpers.fake_openai import FakeServer
from tests.helpers.records import saved_rows
from tests.sci.test_instruct_cli import N_ITEMS, _task

# The line of each key is counted by hand: `api_base` of `scorer` is on line 6.
TEXT = """\
experiment: served
backoff: 0
models:
  scorer:
    model: "openai-completions:tiny"
    api_base: "URL"
    concurrency: 2
    retries: 1
  chat:
    model: fake/chat
    api_base: "URL"
    retries: 0
blocks:
  scored: {command: run, tasks: [smoke], limit: 4, shots: [0, 1]}
  asked: {command: instruct, tasks: [TASK], shots: [0], runs: 1}
matrix:
  - {block: scored, models: [scorer]}
  - {block: asked, models: [chat]}
outputs:
  table: {kind: grid, blocks: [scored], rows: [model, k]}
"""


def _answer(body: dict[str, Any]) -> tuple[Any, ...]:
    # A chat answer that depends on the item alone: the same records whoever asks.
    m = re.search(r"Premise (\d+)\.", body["messages"][-1]["content"])
    assert m is not None
    return ("ok", "abcd"[int(m.group(1)) % 4] + ".")


def _file(tmp_path: Path, url: str, chat_url: str | None = None) -> Path:
    path = tmp_path / "e.yaml"
    text = TEXT.replace("TASK", str(_task(tmp_path)))
    text = text.replace('"URL"', f'"{url}"', 1).replace('"URL"', f'"{chat_url or url}"')
    path.write_text(text)
    return path


def _records(folder: Path) -> list[dict[str, Any]]:
    rows = saved_rows(folder)
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def test_cells_of_a_served_model_equal_the_commands_with_api_base(
    tmp_path: Path, server: FakeServer
) -> None:
    server.default = _answer
    path = _file(tmp_path, server.url)
    summary = run_experiment(
        read_experiment(path), tmp_path / "x", executor=LocalExecutor(sleep=lambda s: None)
    )
    assert [(o.cell, o.state) for o in summary.outcomes] == [
        ("scored-scorer", "done"),
        ("asked-chat", "done"),
    ]
    direct = tmp_path / "direct"
    base = ["--api-base", server.url, "--no-progress", "--retries", "0"]
    assert main(["run", "--model", "openai-completions:tiny", "--task", "smoke", "--limit", "4",
                 "--shots", "0,1", "--out", str(direct / "run"), *base]) == 0  # fmt: skip
    sci = str(tmp_path / "sci.yaml")
    assert main(["instruct", "--model", "fake/chat", "--task", sci, "--shots", "0",
                 "--runs", "1", "--out", str(direct / "instruct"), *base]) == 0  # fmt: skip
    cells = tmp_path / "x" / "cells"
    scored = _records(cells / "scored-scorer")
    asked = _records(cells / "asked-chat")
    assert len(scored) == 4 * 2 and len(asked) == N_ITEMS
    assert scored == _records(direct / "run")
    assert asked == _records(direct / "instruct")
    # The entry's server options reached the cell (a direct run's defaults differ).
    config = json.loads((cells / "scored-scorer" / "config.json").read_text())
    assert (config["api_base"], config["concurrency"], config["retries"]) == (server.url, 2, 1)


def _closed_port() -> int:
    # A port that was free a moment ago: nothing listens there.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_server_that_does_not_answer_names_its_entry(
    tmp_path: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.default = _answer
    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    path = _file(tmp_path, dead, chat_url=server.url)
    out = tmp_path / "x"
    assert main(["experiment", "run", str(path), "--out", str(out)]) == 1
    rows = {r["cell"]: r for r in experiment_status(out)}
    assert rows["asked-chat"]["state"] == "done" and rows["asked-chat"]["records"] == N_ITEMS
    error = rows["scored-scorer"]["error"]
    assert rows["scored-scorer"]["state"] == "failed" and "\n" not in error
    assert error.startswith(f"cell scored-scorer: {path}:6: field 'api_base': ServerError: ")
    assert "connection failed" in error
    printed = capsys.readouterr().out
    assert f"{path}:6: field 'api_base'" in printed and "2 cells" in printed


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("localhost:8000", "must start with http:// or https://"),
        ("http://", "needs a host"),
        ("http://:8000/v1", "needs a host"),
        ("http://127.0.0.1:99999/v1", "ports are 1 to 65535"),
        ("http://127.0.0.1:80a/v1", "is not a URL"),
        ("http://my host:8000/v1", "it holds a space"),
    ],
)
def test_a_bad_server_url_is_one_line_before_anything_runs(
    tmp_path: Path, url: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, url, chat_url="http://127.0.0.1:8000/v1")
    with pytest.raises(DataError) as err:
        plan_cells(read_experiment(path), estimate=False)
    assert str(err.value).startswith(f"{path}:6: field 'api_base': ")
    assert message in str(err.value) and "\n" not in str(err.value)
    assert main(["experiment", "run", str(path), "--out", str(tmp_path / "x")]) == 2
    # The command line says the file's key where the library names its flag.
    said = str(err.value).replace("--api-base", "api_base")
    assert capsys.readouterr().err.strip() == f"nlieval: error: {said}"
    assert not (tmp_path / "x" / "cells").exists()
