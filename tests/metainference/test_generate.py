"""``nlieval generate``: prompt, parsing, retries of invalid answers, the output folder as a
task, and crash safety (a server that fails mid-run, a line cut mid-write, kill -9)
against a fake OpenAI-compatible server."""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from nlieval import data
from nlieval.backends import ChatModel, ResolvedModel, stand_in
from nlieval.backends.openai import OpenAIChat
from nlieval.cli import main
from nlieval.metainference.generated import (
    ITEMS,
    LEGACY_ANSWERS,
    SUMMARY,
    SYSTEM_PROMPT,
    Answer,
    Example,
    GenerateConfig,
    GenerateSummary,
    InvalidAnswer,
    build_messages,
    distinct_sentences,
    generate_items,
    parse_hypotheses,
    select_examples,
)
from nlieval.runs import CONFIG, RECORDS, TIMING, RunError
from nlieval.types import NLI3, Item, Label
from tests.helpers.cli_process import start_cli
from tests.helpers.fake_openai import FakeServer, running
from tests.helpers.records import saved_records, saved_rows

TARGETS = [
    "A man is playing a guitar on stage.",
    "Two dogs run through the snow.",
    "A child reads a book in the park.",
    "The woman is sleeping on a couch.",
    "A cat sits on a mat.",
]
POOL = [
    "A boy kicks a ball in the yard.",
    "A chef cuts onions in a kitchen.",
    "An old man feeds pigeons.",
    "Three girls jump rope.",
]


def _write_task(root: Path, targets: list[str] = TARGETS) -> Path:
    rows = []
    for n, premise in enumerate(targets):
        rows.append({"id": f"t{n}", "premise": premise, "hypothesis": f"H{n}.", "label": "e"})
    # The same premise again: generated for once, under the first item's id.
    rows.append({"id": "dup", "premise": targets[0], "hypothesis": "Other.", "label": "n"})
    pool = [
        {"id": f"p{n}{lab.value[0]}", "premise": p, "hypothesis": f"{lab.value} {n}.", "label": lab}
        for n, p in enumerate(POOL)
        for lab in NLI3
    ]
    pool.append({"id": "px", "premise": "Only two labels.", "hypothesis": "a.", "label": "e"})
    pool.append({"id": "py", "premise": "Only two labels.", "hypothesis": "b.", "label": "c"})
    # A pool premise that is also a target: never a solved example.
    pool += [
        {"id": f"pt{lab.value[0]}", "premise": TARGETS[1], "hypothesis": "x.", "label": lab}
        for lab in NLI3
    ]
    (root / "targets.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "pool.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pool))
    yaml = root / "tiny.yaml"
    yaml.write_text(
        "name: tiny\npath: targets.jsonl\npool: pool.jsonl\n"
        "fields: {id: id, label: label}\nlabels: [entailment, neutral, contradiction]\n"
    )
    return yaml


def good_answer(premise: str) -> str:
    return json.dumps(
        {
            "entailment": f"E: {premise}",
            "neutral": f"N: {premise}",
            "contradiction": f"C: {premise}",
        }
    )


class Responder:
    """Good JSON for every premise, unless a premise has a script of its own."""

    def __init__(self) -> None:
        self.scripts: dict[str, deque[tuple[Any, ...]]] = {}
        self.asked: list[str] = []

    def __call__(self, body: dict[str, Any]) -> tuple[Any, ...]:
        premise = body["messages"][-1]["content"].removeprefix("Premise: ")
        self.asked.append(premise)
        script = self.scripts.get(premise)
        if script:
            return script.popleft()
        return ("ok", good_answer(premise))


@pytest.fixture
def server_settings() -> dict[str, Any]:
    # The shared ``server`` fixture (tests/conftest.py), answering chat requests only.
    return {"lm": False, "default": Responder()}


def _chat(server: FakeServer, **kw: Any) -> OpenAIChat:
    opts: dict[str, Any] = {"timeout": 0.3, "retries": 2, "backoff": 0.01, "concurrency": 2}
    opts.update(kw)
    return OpenAIChat("fake-gen", server.url, **opts)


def _given(chat: Any) -> ResolvedModel:
    # The chat backend of the test as the resolved model generate_items takes.
    return stand_in(ChatModel(chat.name), lambda _: chat)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _answers(folder: Path) -> list[dict[str, Any]]:
    """The folder's rows (``Answer``), read through the run folder."""
    return saved_rows(folder, Answer)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text",
    [
        '{"entailment": "a", "neutral": "b", "contradiction": "c"}',
        '```json\n{"entailment": "a", "neutral": "b", "contradiction": "c"}\n```',
        'Here you go:\n{"Entailment": " a ", "NEUTRAL": "b", "contradiction": "c"} Hope it helps',
        '{"answer": {"entailment": "a", "neutral": "b", "contradiction": "c"}}',
        '{"entailment": "x"} then {"entailment": "a", "neutral": "b", "contradiction": "c"}',
    ],
)
def test_parse_finds_the_object(text: str) -> None:
    assert parse_hypotheses(text) == dict(zip(NLI3, ["a", "b", "c"], strict=True))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("I cannot do that.", "no JSON object"),
        ('{"entailment": "a", "neutral": "b", "contradiction": "c"', "no complete JSON object"),
        ('{"entailment": "a", "neutral": "b"}', "missing key(s): contradiction"),
        ('{"entailment": "a", "neutral": "  ", "contradiction": "c"}', "neutral: empty"),
        ('{"entailment": "a", "neutral": 3, "contradiction": "c"}', "neutral: not a string"),
        ("[1, 2, 3]", "no JSON object"),
    ],
)
def test_parse_rejects_with_a_reason(text: str, problem: str) -> None:
    with pytest.raises(InvalidAnswer) as info:
        parse_hypotheses(text)
    assert str(info.value) == problem


# --------------------------------------------------------------------------- prompt


def test_examples_have_all_three_labels_and_never_a_target(tmp_path: Path) -> None:
    yaml = _write_task(tmp_path)
    pool, same = data.load_pool(str(yaml))
    assert not same
    chosen = select_examples(pool.items, 10, seed=0, exclude=TARGETS)
    assert sorted(ex.premise for ex in chosen) == sorted(POOL)  # all four, no more
    assert all(set(ex.hypotheses) == set(NLI3) for ex in chosen)
    # Deterministic by seed; another seed draws another subset or order.
    assert select_examples(pool.items, 2, seed=1) == select_examples(pool.items, 2, seed=1)
    draws = {tuple(e.source_id for e in select_examples(pool.items, 2, seed=s)) for s in range(8)}
    assert len(draws) > 1


def test_messages_show_solved_examples_as_json_turns() -> None:
    ex = Example(
        "7", "A man sleeps.", dict(zip(NLI3, ["A person rests.", "B.", "C."], strict=True))
    )
    msgs = build_messages("A dog runs.", [ex, ex])
    assert msgs[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert [m["role"] for m in msgs[1:]] == ["user", "assistant"] * 2 + ["user"]
    assert msgs[1]["content"] == "Premise: A man sleeps."
    assert json.loads(msgs[2]["content"]) == {
        "entailment": "A person rests.",
        "neutral": "B.",
        "contradiction": "C.",
    }
    assert msgs[-1]["content"] == "Premise: A dog runs."
    for key in ("entailment", "neutral", "contradiction", "JSON"):
        assert key in SYSTEM_PROMPT


def test_distinct_sentences_keep_the_first_id() -> None:
    items = [
        Item("1", "P.", "H1.", None),
        Item("2", "P.", "H2.", None),
        Item("3", "Q.", "H1.", None),
    ]
    assert [(s.source_id, s.text) for s in distinct_sentences(items)] == [("1", "P."), ("3", "Q.")]
    assert [s.source_id for s in distinct_sentences(items, "hypothesis")] == ["1", "2"]


# --------------------------------------------------------------------------- runs


def test_generate_retries_invalid_json_and_writes_a_task(
    tmp_path: Path, server: FakeServer
) -> None:
    yaml = _write_task(tmp_path)
    responder: Responder = server.default  # type: ignore[assignment]
    responder.scripts[TARGETS[2]] = deque([("ok", "Sure! Entailment: a child reads.")])
    responder.scripts[TARGETS[4]] = deque([("ok", "no")] * 5)
    out = tmp_path / "gen"
    with _chat(server) as chat:
        summary = generate_items(_given(chat), GenerateConfig(str(yaml), attempts=3), out)
    assert summary.premises == 5
    assert (summary.parsed_first_try, summary.parsed_after_retries) == (3, 1)
    assert (summary.failed, summary.server_errors, summary.not_attempted) == (1, 0, 0)
    assert summary.answers == 3 + 2 + 3 and summary.invalid_answers == 4
    assert summary.invalid_reasons == {"no JSON object": 4}
    assert summary.examples == 4 and summary.stopped is None
    assert json.loads((out / SUMMARY).read_text())["parsed_after_retries"] == 1

    # Retries are sampled with other seeds; the first answer is greedy.
    asks = [(r["messages"][-1]["content"], r["temperature"], r["seed"]) for r in server.requests]
    assert sorted(a[1:] for a in asks if a[0].endswith(TARGETS[4])) == [
        (0.0, 0),
        (0.7, 1),
        (0.7, 2),
    ]
    # Every request shows the four solved examples, never a premise being generated for.
    for req in server.requests:
        shown = [m["content"] for m in req["messages"][1:-1] if m["role"] == "user"]
        assert sorted(shown) == sorted(f"Premise: {p}" for p in POOL)

    log = _answers(out)
    assert len(log) == 8 and sum(not r["valid"] for r in log) == 4
    assert {r["answer"] for r in log if not r["valid"]} == {
        "Sure! Entailment: a child reads.",
        "no",
    }

    ds = data.load_task(str(out / "task.yaml"))
    assert len(ds) == 12 and ds.labels == NLI3
    assert ds.label_counts() == {"entailment": 4, "neutral": 4, "contradiction": 4}
    first = ds.items[0]
    assert first.id == "gen:t0:entailment" and first.premise == TARGETS[0]
    assert first.hypothesis == f"E: {TARGETS[0]}" and first.label is Label.ENTAILMENT
    assert first.meta == {"generator": "fake-gen", "source_id": "t0", "attempt": 1}
    retried = next(it for it in ds.items if it.premise == TARGETS[2])
    assert retried.meta["attempt"] == 2


def test_every_fault_kind_in_a_run(tmp_path: Path, server: FakeServer) -> None:
    yaml = _write_task(tmp_path)
    responder: Responder = server.default  # type: ignore[assignment]
    bad_request = ("status", 400, '{"error": {"message": "prompt too long"}}')
    responder.scripts.update(
        {
            TARGETS[0]: deque([("status", 500, "oops")]),
            TARGETS[1]: deque([("slow", 1.0, good_answer("late"))]),
            TARGETS[2]: deque([("drop",)]),
            TARGETS[3]: deque([("raw", '{"choices": []}'), ("ok", "{bad json")]),
            TARGETS[4]: deque([bad_request]),
        }
    )
    out = tmp_path / "gen"
    with _chat(server) as chat:
        summary = generate_items(_given(chat), GenerateConfig(str(yaml)), out)
    # 500, slow and dropped were retried by the client (a body that is not JSON would be
    # too); an answer of the wrong shape and a 400 fail their premise at once, and bad
    # JSON is asked again.
    assert summary.parsed_first_try == 3 and summary.parsed_after_retries == 0
    assert summary.server_errors == 2 and summary.server_failures == 2
    assert summary.stopped is None
    errors = [r for r in _answers(out) if r["kind"] == "server_error"]
    assert {r["source_id"] for r in errors} == {"t3", "t4"}
    assert any("HTTP 400: prompt too long" in r["error"] for r in errors)

    # The server is fine again: a re-run asks only for the two missing premises.
    responder.asked.clear()
    with _chat(server) as chat:
        summary = generate_items(_given(chat), GenerateConfig(str(yaml)), out)
    assert sorted(set(responder.asked)) == sorted([TARGETS[3], TARGETS[4]])
    assert summary.parsed_first_try == 4 and summary.parsed_after_retries == 1
    assert summary.server_errors == 0
    ids = [r["id"] for r in _lines(out / ITEMS)]
    assert len(ids) == 15 == len(set(ids))
    # Requests are numbered on across invocations (the key of a row); a server failure
    # does not use up an attempt: t3's first answer is still greedy attempt 1.
    rows = _answers(out)
    keys = [(r["source_id"], r["request"]) for r in rows]
    assert len(keys) == len(set(keys))
    t3 = [
        (r["request"], r["attempt"], r["kind"], r["valid"], r["temperature"])
        for r in rows
        if r["source_id"] == "t3"
    ]
    assert t3 == [
        (1, 1, "server_error", False, 0.0),
        (2, 1, "answer", False, 0.0),
        (3, 2, "answer", True, 0.7),
    ]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_server_dies_mid_run_nothing_is_lost(tmp_path: Path, concurrency: int) -> None:
    yaml = _write_task(tmp_path)
    out = tmp_path / "gen"
    with running() as first:
        responder = Responder()
        first.default = responder
        # The third premise's request kills the server: every later request is refused.
        responder.scripts[TARGETS[2]] = deque([("die",)])
        with _chat(first, concurrency=concurrency) as chat:
            summary = generate_items(_given(chat), GenerateConfig(str(yaml)), out)
    # In flight together, an answer may land between failures; in order, it stops.
    assert summary.stopped or concurrency > 1
    done = summary.parsed_first_try
    if concurrency == 1:  # sent in order: the two before it were answered
        assert done == 2 and summary.server_errors == 3
    kept = _lines(out / ITEMS)
    assert len(kept) == 3 * done
    assert all(r["kind"] == "answer" for r in _answers(out) if r.get("valid"))
    before = {r["source_id"] for r in kept}

    with running() as second:
        again = Responder()
        second.default = again
        with _chat(second, concurrency=concurrency) as chat:
            summary = generate_items(_given(chat), GenerateConfig(str(yaml)), out)
    assert summary.stopped is None
    assert summary.parsed_first_try == 5 and summary.server_errors == 0
    assert not {f"t{TARGETS.index(p)}" for p in again.asked} & before  # none asked twice
    ids = [r["id"] for r in _lines(out / ITEMS)]
    assert len(ids) == 15 == len(set(ids))
    assert len(data.load_task(str(out / "task.yaml"))) == 15


def test_chunks_of_premises_retry_within_the_chunk(
    tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlieval.metainference import generated

    monkeypatch.setattr(generated, "PREMISES_PER_CHUNK", 2)
    yaml = _write_task(tmp_path)
    responder: Responder = server.default  # type: ignore[assignment]
    responder.scripts[TARGETS[0]] = deque([("ok", "no")])
    out = tmp_path / "gen"
    with _chat(server, concurrency=1) as chat:
        summary = generate_items(_given(chat), GenerateConfig(str(yaml)), out)
    assert (summary.parsed_first_try, summary.parsed_after_retries) == (4, 1)
    order = [TARGETS.index(p) for p in responder.asked]
    assert order == [0, 1, 0, 2, 3, 4]  # t0 asked again before the next chunk
    timing = json.loads((out / TIMING).read_text())
    assert [v["items"] for v in timing.values()] == [5]
    assert [r["id"] for r in _lines(out / ITEMS)][::3] == [f"gen:t{n}:entailment" for n in range(5)]


def test_crash_mid_write_is_repaired_on_resume(tmp_path: Path, server: FakeServer) -> None:
    yaml = _write_task(tmp_path)
    out = tmp_path / "gen"
    with _chat(server) as chat:
        generate_items(_given(chat), GenerateConfig(str(yaml), limit=2), out)
    # A kill -9 before items.jsonl was brought up to date, then mid-way through a line.
    items = (out / ITEMS).read_text().splitlines(keepends=True)
    (out / ITEMS).write_text("".join(items[:3]))
    with open(out / RECORDS, "a") as f:
        f.write('{"kind": "answer", "source_id": "t2", "request": 1, "pre')
    with _chat(server) as chat:
        summary = generate_items(_given(chat), GenerateConfig(str(yaml), limit=3), out)
    assert summary.parsed_first_try == 3
    ids = [r["id"] for r in _lines(out / ITEMS)]
    assert len(ids) == 9 == len(set(ids))
    assert len(_answers(out)) == 3


def test_other_settings_need_another_folder(tmp_path: Path, server: FakeServer) -> None:
    yaml = _write_task(tmp_path)
    out = tmp_path / "gen"
    with _chat(server) as chat:
        generate_items(_given(chat), GenerateConfig(str(yaml), limit=1), out)
        config = json.loads((out / CONFIG).read_text())
        assert config["kind"] == "generate" and config["example_ids"]
        assert (out / TIMING).is_file()
        with pytest.raises(RunError, match="seed: 0 -> 5"):
            generate_items(_given(chat), GenerateConfig(str(yaml), limit=1, seed=5), out)
        # attempts and max_server_errors are no part of the identity; nothing left to ask.
        sent = len(server.requests)
        config_b = GenerateConfig(str(yaml), limit=1, attempts=1, max_server_errors=9)
        assert generate_items(_given(chat), config_b, out).parsed_first_try == 1
        assert len(server.requests) == sent
        summary = generate_items(
            _given(chat), GenerateConfig(str(yaml), limit=1, seed=5), out, overwrite=True
        )
    assert summary.parsed_first_try == 1 and len(_lines(out / ITEMS)) == 3


def test_folders_of_other_commands_and_versions_are_refused(
    tmp_path: Path, server: FakeServer
) -> None:
    yaml = _write_task(tmp_path)
    old = tmp_path / "old"
    old.mkdir()
    (old / CONFIG).write_text('{"generator": "fake-gen"}\n')
    (old / LEGACY_ANSWERS).write_text('{"kind": "answer", "source_id": "t0"}\n')
    run = tmp_path / "run"
    run.mkdir()
    (run / CONFIG).write_text('{"kind": "run", "model": "m"}\n')
    with _chat(server) as chat:
        with pytest.raises(RunError, match=f"older `nlieval generate`.*{LEGACY_ANSWERS}"):
            generate_items(_given(chat), GenerateConfig(str(yaml), limit=1), old)
        with pytest.raises(RunError, match="holds a run of `nlieval run`"):
            generate_items(_given(chat), GenerateConfig(str(yaml), limit=1), run)
        summary = generate_items(
            _given(chat), GenerateConfig(str(yaml), limit=1), old, overwrite=True
        )
    assert summary.parsed_first_try == 1 and not (old / LEGACY_ANSWERS).exists()
    assert len(_answers(old)) == 1


def test_examples_need_three_labels(tmp_path: Path, server: FakeServer) -> None:
    with _chat(server) as chat:
        # The smoke pool has no premise with all three labels.
        with pytest.raises(ValueError, match="all three labels"):
            generate_items(_given(chat), GenerateConfig("smoke", limit=2), tmp_path / "a")
        summary = generate_items(
            _given(chat), GenerateConfig("smoke", limit=2, examples=0), tmp_path / "b"
        )
    assert summary.parsed_first_try == 2 and summary.examples == 0
    assert len(server.requests[0]["messages"]) == 2  # system and the premise only
    two = tmp_path / "two.yaml"
    (tmp_path / "two.jsonl").write_text('{"premise": "P.", "hypothesis": "H.", "label": "e"}\n')
    two.write_text("path: two.jsonl\nlabels: [entailment, non-entailment]\n")
    with _chat(server) as chat, pytest.raises(ValueError, match="--examples 0"):
        generate_items(_given(chat), GenerateConfig(str(two)), tmp_path / "c")


def test_local_chat_model(tmp_path: Path, tiny_llama: Path) -> None:
    yaml = _write_task(tmp_path)
    config = GenerateConfig(str(yaml), limit=2, attempts=2, max_new_tokens=4)
    summary = generate_items(ChatModel(str(tiny_llama)).resolve(), config, tmp_path / "gen")
    # A random-weight model writes no JSON: both premises asked twice, then counted.
    assert (summary.failed, summary.answers, summary.items) == (2, 4, 0)
    assert [r["attempt"] for r in _answers(tmp_path / "gen")] == [1, 1, 2, 2]


# --------------------------------------------------------------------------- kill -9


def _n_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def test_kill_9_mid_run_then_resume(tmp_path: Path, server: FakeServer) -> None:
    """``nlieval generate`` killed with SIGKILL while answers arrive, then run again:
    every premise once in the items, no row twice, none answered before the kill asked
    again, and the answers kept are the ones the server gave."""
    n = 40
    targets = [f"Person number {i} walks a dog." for i in range(n)]
    yaml = _write_task(tmp_path, targets)
    responder: Responder = server.default  # type: ignore[assignment]
    for i in range(0, n, 7):  # some answers are invalid first: retried in the same chunk
        responder.scripts[targets[i]] = deque([("ok", "no JSON here")])
    server.hold = 0.05  # each request takes a while, so the run is killed mid-way
    out = tmp_path / "gen"
    argv = ["generate", "--task", str(yaml), "--model", "fake-gen", "--api-base", server.url]
    argv += ["--out", str(out), "--concurrency", "2", "--retries", "0", "--no-progress"]
    proc = start_cli(*argv, cwd=tmp_path)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if _n_lines(out / RECORDS) >= 8:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # A line may be cut by the kill: only whole lines count (by hand: torn).
    text = (out / RECORDS).read_text()
    whole = text[: text.rfind("\n") + 1]
    rows_before = [json.loads(line) for line in whole.splitlines()]
    answered = {r["source_id"] for r in rows_before if r["valid"]}
    assert 0 < len(answered) < n
    asked_before = len(server.requests)

    again = start_cli(*argv, cwd=tmp_path)
    assert again.wait(timeout=120) == 0, again.stderr.read() if again.stderr else ""
    # Nothing saved before the kill was lost, nor asked for again.
    rows = _answers(out)
    assert rows[: len(rows_before)] == rows_before
    asked_after = {r["messages"][-1]["content"] for r in server.requests[asked_before:]}
    assert not {f"Premise: {targets[int(sid[1:])]}" for sid in answered} & asked_after
    keys = [(r["source_id"], r["request"]) for r in rows]
    assert len(keys) == len(set(keys))
    # Every premise exactly once in the dataset, with the server's answer.
    items = _lines(out / ITEMS)
    assert len(items) == 3 * n == len({it["id"] for it in items})
    assert [it["source_id"] for it in items[::3]] == [f"t{i}" for i in range(n)]
    for it in items:
        premise = targets[int(it["source_id"][1:])]
        assert it["hypothesis"] == json.loads(good_answer(premise))[it["label"]]
    summary = json.loads((out / SUMMARY).read_text())
    assert summary["premises"] == n and summary["items"] == 3 * n
    assert summary["parsed_first_try"] + summary["parsed_after_retries"] == n
    assert len(data.load_task(str(out / "task.yaml"))) == 3 * n


# --------------------------------------------------------------------------- CLI


def test_cli_generate_then_stats_and_run(
    tmp_path: Path, server: FakeServer, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml = _write_task(tmp_path)
    responder: Responder = server.default  # type: ignore[assignment]
    responder.scripts[TARGETS[1]] = deque(
        [("status", 503, "warming up", {"Retry-After": "0"}), ("ok", "```\n{}\n```")]
    )
    out = tmp_path / "gen"
    argv = ["generate", "--task", str(yaml), "--model", "fake-gen", "--api-base", server.url]
    argv += ["--out", str(out), "--timeout", "2", "--retries", "1", "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "parsed on first try   4" in text and "parsed after retries  1" in text
    assert f"nlieval run --task {out}/task.yaml" in text

    assert main(["stats", "--task", str(out / "task.yaml")]) == 0
    assert "15" in capsys.readouterr().out
    run = tmp_path / "run"
    argv = ["run", "--model", str(tiny_llama), "--task", str(out / "task.yaml")]
    assert main([*argv, "--out", str(run), "--no-progress"]) == 0
    assert len(saved_records(run)) == 15


def test_cli_stops_when_the_server_is_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml = _write_task(tmp_path)
    with running() as s:
        url = s.url
        s.kill()
    argv = ["generate", "--task", str(yaml), "--model", "m", "--api-base", url, "--retries", "0"]
    assert main([*argv, "--out", str(tmp_path / "gen"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "failed 3 requests in a row" in err and "run the same command again" in err


def test_cli_rejects_bad_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["generate", "--task", "smoke", "--api-base", "http://127.0.0.1:9/v1"]
    with pytest.raises(SystemExit) as info:  # argparse: the flag's own check
        main([*argv, "--attempts", "0", "--out", str(tmp_path)])
    assert info.value.code == 2
    assert "--attempts: expected a positive integer, got '0'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--attempts must be at least 1"):
        GenerateConfig("smoke", attempts=0)  # the same check from Python


@pytest.mark.data
def test_snli_premises_with_examples_from_the_test_split(
    tmp_path: Path, server: FakeServer, data_dir: Path
) -> None:
    out = tmp_path / "gen"
    config = GenerateConfig("snli", split="dev", max_sentences=4, data_dir=str(data_dir))
    with _chat(server) as chat:
        summary = generate_items(_given(chat), config, out)
    assert summary.premises == 4 and summary.parsed_first_try == 4
    assert summary.examples == 10
    dev = {it.premise.strip() for it in data.load_task("snli", data_dir, "dev").items}
    shown = [m["content"] for m in server.requests[0]["messages"][1:-1] if m["role"] == "user"]
    assert len(shown) == 10 and not {s.removeprefix("Premise: ") for s in shown} & dev
    ds = data.load_task(str(out / "task.yaml"))
    assert len(ds) == 12
    assert ds.items[0].meta["source_id"] == data.load_task("snli", data_dir, "dev").items[0].id


def test_generated_from_hypotheses_feed_the_chain_patterns(
    tmp_path: Path, server: FakeServer
) -> None:
    from nlieval.metainference.inferred import build

    yaml = _write_task(tmp_path)
    out = tmp_path / "gen"
    with _chat(server) as chat:
        summary = generate_items(
            _given(chat), GenerateConfig(str(yaml), sentences="hypothesis"), out
        )
    assert summary.premises == 6 and summary.parsed_first_try == 6
    source = data.load_task(str(yaml)).items
    generated = data.load_task(str(out / "task.yaml")).items
    chains = build(source, generated, patterns=["chain", "chain-reversal"])
    # Each source item (a, b) meets the three generated items (b, c): two orders each.
    assert len(chains) == 6 * 3 * 2
    assert {it.meta["input"] for it in chains if it.meta["sources"][0] == "t0"} == {
        "Eab & Ebc",
        "Eab & Nbc",
        "Eab & Cbc",
    }


def test_limit_is_the_first_items_and_max_sentences_the_first_sentences(
    tmp_path: Path, server: FakeServer
) -> None:
    # --limit means items, as in every command; the distinct sentences of those items are
    # generated for, and --max-sentences caps those. Items: premises A, A, B, C.
    premises = ["A dog runs.", "A dog runs.", "A bird sings.", "A cat naps."]
    rows = [{"id": f"i{n}", "premise": p, "hypothesis": f"H{n}.", "label": "e"} for n, p in
            enumerate(premises)]  # fmt: skip
    (tmp_path / "four.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    yaml = tmp_path / "four.yaml"
    yaml.write_text("name: four\npath: four.jsonl\nlabels: [entailment, neutral, contradiction]\n")
    cases = [
        ({"limit": 2}, ["A dog runs."]),  # items i0, i1: one premise
        ({"max_sentences": 2}, ["A dog runs.", "A bird sings."]),
        ({"limit": 3, "max_sentences": 1}, ["A dog runs."]),
        ({"limit": 4}, ["A dog runs.", "A bird sings.", "A cat naps."]),
    ]
    for n, (kw, want) in enumerate(cases):
        server.default = Responder()
        with _chat(server) as chat:
            config = GenerateConfig(str(yaml), examples=0, **kw)
            summary = generate_items(_given(chat), config, tmp_path / f"out{n}")
        assert sorted(server.default.asked) == sorted(want), kw
        assert summary.premises == len(want), kw
    with pytest.raises(ValueError, match="--max-sentences must be positive"):
        GenerateConfig(str(yaml), max_sentences=0)


class _Echo:
    """A chat model that writes the same three hypotheses for any premise."""

    name = "echo"

    def generate(
        self, conversations: list[Any], max_new_tokens: int = 32, temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:  # fmt: skip
        answer = '{"entailment": "A.", "neutral": "B.", "contradiction": "C."}'
        return [answer for _ in conversations]


def test_generate_returns_a_typed_summary_saved_as_summary_json(tmp_path: Path) -> None:
    """The result is a GenerateSummary; its counts are the task's distinct premises (each
    answered once, three items each) and summary.json holds its fields in their order."""
    yaml = _write_task(tmp_path)
    out = tmp_path / "gen"
    echo = stand_in(ChatModel("echo"), lambda _: _Echo())
    summary = generate_items(echo, GenerateConfig(str(yaml), examples=0), out)
    assert isinstance(summary, GenerateSummary)
    premises = len(set(TARGETS))  # the duplicate row of the task is asked once
    assert (summary.generator, summary.task, summary.examples) == ("echo", "tiny", 0)
    assert (summary.premises, summary.parsed_first_try, summary.answers) == (premises,) * 3
    assert (summary.items, summary.invalid_answers, summary.stopped) == (3 * premises, 0, None)
    saved = json.loads((out / SUMMARY).read_text())
    assert list(saved.items()) == list(summary.to_dict().items())
    assert list(saved) == [f.name for f in dataclasses.fields(GenerateSummary)]
