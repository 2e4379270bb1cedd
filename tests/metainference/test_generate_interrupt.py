"""Ctrl-C (SIGINT) on ``nlieval generate`` against a server at any moment, then the same
command: as safe as kill -9. Nothing written before is changed, no row is written twice,
and the folder ends as an uninterrupted run's: a sentence is given at most ``--attempts``
answers in all, so one whose answers were all invalid before the interrupt is not asked
again (it was: 29 of 30 rows asked a second time after a resume)."""

from __future__ import annotations

import _thread
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nlieval.metainference.generated import GenerateConfig, generate_items
from nlieval.runs import RECORDS
from tests.helpers.cli_process import start_cli
from tests.helpers.fake_openai import FakeServer
from tests.metainference.test_generate import (
    ITEMS,
    Responder,
    _answers,
    _chat,
    _given,
    _lines,
    _write_task,
)

N = 12
TARGETS = [f"Person number {i} walks a dog." for i in range(N)]


class Invalid(Responder):
    """An answer that never parses for premises of an odd number, good JSON for the others;
    ``interrupt_at``: the n-th request also interrupts the main thread, as Ctrl-C does."""

    def __init__(self, interrupt_at: int = 0) -> None:
        super().__init__()
        self.interrupt_at = interrupt_at

    def __call__(self, body: dict[str, Any]) -> tuple[Any, ...]:
        answer = super().__call__(body)
        if len(self.asked) == self.interrupt_at:
            _thread.interrupt_main(signal.SIGINT)
        number = int(self.asked[-1].split()[2])
        return ("ok", "no JSON here") if number % 2 else answer


@pytest.fixture(autouse=True)
def _sigint_raises() -> Iterator[None]:
    # A pytest-xdist worker ignores SIGINT, so the simulated Ctrl-C would do nothing.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.fixture
def server_settings() -> dict[str, Any]:
    # The shared ``server`` fixture (tests/conftest.py), answering chat requests only.
    return {"lm": False, "default": Invalid()}


def _rows(out: Path) -> list[tuple[str, int, int, bool]]:
    return [(r["source_id"], r["request"], r["attempt"], r["valid"]) for r in _answers(out)]


@pytest.mark.parametrize("at", [1, 4, 9, 15])
def test_an_interrupt_at_any_request_resumes_as_an_uninterrupted_run(
    tmp_path: Path, server: FakeServer, at: int
) -> None:
    yaml = _write_task(tmp_path, TARGETS)
    config = GenerateConfig(str(yaml), attempts=2)
    with _chat(server, concurrency=2) as chat:
        generate_items(_given(chat), config, tmp_path / "reference")
    reference = _rows(tmp_path / "reference")
    # By hand: 6 premises parse at once, 6 never do and get 2 answers each.
    assert len(reference) == 6 + 6 * 2

    out = tmp_path / "gen"
    server.default = Invalid(interrupt_at=at)
    with _chat(server, concurrency=2) as chat, pytest.raises(KeyboardInterrupt):
        generate_items(_given(chat), config, out)
        time.sleep(5)  # the interrupt arrives once the last request is answered
    before = (out / RECORDS).read_bytes() if (out / RECORDS).exists() else b""  # by hand: bytes
    server.default = Invalid()
    with _chat(server, concurrency=2) as chat:
        generate_items(_given(chat), config, out)
    assert (out / RECORDS).read_bytes().startswith(before)  # nothing written is changed
    rows = _rows(out)
    assert len({r[:2] for r in rows}) == len(rows)  # no key twice
    answers = Counter(r[0] for r in rows)
    assert sorted(answers.items()) == sorted(Counter(r[0] for r in reference).items())
    assert sorted((r[0], r[2], r[3]) for r in rows) == sorted((r[0], r[2], r[3]) for r in reference)
    # The same command once more: the folder is complete, nothing is asked.
    asked = len(server.requests)
    with _chat(server, concurrency=2) as chat:
        generate_items(_given(chat), config, out)
    assert len(server.requests) == asked and len(_rows(out)) == len(rows)


def _n_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def test_ctrl_c_on_the_command_then_the_same_command(tmp_path: Path, server: FakeServer) -> None:
    n = 40
    targets = [f"Person number {i} walks a dog." for i in range(n)]
    yaml = _write_task(tmp_path, targets)
    server.hold = 0.2  # each request takes a while: the command is interrupted mid-way
    out = tmp_path / "gen"
    argv = ["generate", "--task", str(yaml), "--model", "fake-gen", "--api-base", server.url]
    argv += ["--out", str(out), "--concurrency", "2", "--retries", "0", "--no-progress"]
    proc = start_cli(*argv, "--attempts", "2", cwd=tmp_path)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and _n_lines(out / RECORDS) < 45:
        time.sleep(0.01)
    # 40 first answers, then 5 second ones of the 20 invalid: interrupted in round two.
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    # The tiny task holds fewer exemplar premises than --examples asks: said, then the line.
    assert [ln for ln in err.strip().splitlines() if not ln.startswith("WARNING ")] == [
        "nlieval: interrupted; run the same command again to resume"
    ]
    before = (out / RECORDS).read_bytes()  # by hand: bytes
    again = start_cli(*argv, "--attempts", "2", cwd=tmp_path)
    assert again.wait(timeout=120) == 0, again.stderr.read() if again.stderr else ""
    assert (out / RECORDS).read_bytes().startswith(before)
    rows = _answers(out)
    assert len({(r["source_id"], r["request"]) for r in rows}) == len(rows)
    per = Counter(r["source_id"] for r in rows)
    # Even-numbered premises parse at once (1 row), odd ones never (2 answers each).
    assert per == {f"t{i}": 1 if i % 2 == 0 else 2 for i in range(n)}
    assert len(_lines(out / ITEMS)) == 3 * (n // 2)


def test_a_full_disk_while_answers_arrive_is_one_line_and_resumes(
    tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from nlieval.runs import RunError
    from tests.runs.test_folder_files import FullDisk

    yaml = _write_task(tmp_path, TARGETS)
    config = GenerateConfig(str(yaml), attempts=2)
    with _chat(server, concurrency=1) as chat:
        generate_items(_given(chat), config, tmp_path / "reference")
    out = tmp_path / "gen"
    monkeypatch.setattr(os, "write", FullDisk(900, only=RECORDS))  # room for a few rows
    with _chat(server, concurrency=1) as chat, pytest.raises(RunError) as info:
        generate_items(_given(chat), config, out)
    monkeypatch.undo()
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(out / RECORDS))
    assert "No space left on device" in message and "run the same command again" in message
    before = (out / RECORDS).read_bytes()  # by hand: bytes
    assert before.endswith(b"}\n") and 0 < before.count(b"\n") < len(_rows(tmp_path / "reference"))
    with _chat(server, concurrency=1) as chat:
        generate_items(_given(chat), config, out)  # space freed: the same command
    assert (out / RECORDS).read_bytes().startswith(before)
    reference = _rows(tmp_path / "reference")
    assert sorted((r[0], r[2], r[3]) for r in _rows(out)) == sorted(
        (r[0], r[2], r[3]) for r in reference
    )
