"""``nlieval instruct``: a fake chat model answering in many shapes, run folders, resume."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import instruct as cli_instruct
from nlieval.cli import main
from nlieval.runs import loop
from nlieval.types import SCI4
from tests.helpers.chats import ConstantChat
from tests.helpers.records import saved_rows

# Answer shapes, and the class each must map to (None: unparsed, scored wrong).
SHAPES: list[tuple[str, str | None]] = [
    ("B", "reasoning"),
    ("(c)", "entailment"),
    ("Answer: Reasoning.", "reasoning"),
    ("**neutral**", "neutral"),
    ("not entailment", None),
    ("Contrasting", "contrasting"),
    ("I don't know :)", None),
    ("", None),
    ("d) Neutral", "neutral"),
    ("The relation is CONTRAST.", "contrasting"),
]
N_ITEMS = 20
UNPARSED_PER_RUN = sum(1 for n in range(N_ITEMS) if SHAPES[n % len(SHAPES)][1] is None)


def _gold(n: int) -> str:
    return SCI4[n % 4].value


def _expected_accuracy() -> float:
    return sum(SHAPES[n % len(SHAPES)][1] == _gold(n) for n in range(N_ITEMS)) / N_ITEMS


class ShapeChat:
    """Answers item n (read from its "Sentence 1: Premise n." turn) with shape n % 10;
    can fail (as a crash would) on a given call."""

    name = "shape-chat"

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.fail_on_call = fail_on_call
        self.calls = 0
        self.seen: list[list[dict[str, str]]] = []
        self.settings: set[tuple[int, float]] = set()

    def generate(
        self,
        conversations: Sequence[Sequence[dict[str, str]]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise KeyboardInterrupt("simulated crash")
        self.settings.add((max_new_tokens, temperature))
        out = []
        for conv in conversations:
            self.seen.append([dict(m) for m in conv])
            m = re.search(r"Sentence 1: Premise (\d+)\.", conv[-1]["content"])
            assert m is not None
            out.append(SHAPES[int(m.group(1)) % len(SHAPES)][0])
        return out


def _task(tmp_path: Path) -> Path:
    """A four-class task file with domains, and a pool file (its train split)."""
    test = tmp_path / "test.jsonl"
    pool = tmp_path / "pool.jsonl"
    with open(test, "w") as f:
        for n in range(N_ITEMS):
            row = {
                "id": f"t{n}",
                "s1": f"Premise {n}.",
                "s2": f"Hypothesis {n}.",
                "label": _gold(n),
                "domain": "acl" if n < 10 else "bio",
            }
            f.write(json.dumps(row) + "\n")
    with open(pool, "w") as f:
        for n in range(48):
            row = {"id": f"p{n}", "s1": f"Pool {n}.", "s2": f"Pool hyp {n}.", "label": _gold(n)}
            f.write(json.dumps(row) + "\n")
        # A test item copied into the pool under another id: never an exemplar.
        f.write(
            json.dumps({"id": "dup", "s1": "Premise 3.", "s2": "Hypothesis 3.", "label": _gold(3)})
            + "\n"
        )
    yaml = tmp_path / "sci.yaml"
    yaml.write_text(
        "name: mini\npath: test.jsonl\npool: pool.jsonl\n"
        "labels: [contrasting, reasoning, entailment, neutral]\n"
        "fields: {id: id, premise: s1, hypothesis: s2, label: label, meta: [domain]}\n"
    )
    return yaml


def _use(monkeypatch: pytest.MonkeyPatch, chat: ShapeChat, models: list[str] | None = None) -> None:
    def fake(config: Any) -> ShapeChat:
        if models is not None:
            models.append(config.model)
        return chat

    monkeypatch.setattr(cli_instruct, "instruct_backend", fake)


def _argv(yaml: Path, out: Path, *extra: str) -> list[str]:
    return [
        "instruct",
        "--model",
        "fake/chat",
        "--task",
        str(yaml),
        "--shots",
        "0,4",
        "--runs",
        "3",
        "--max-new-tokens",
        "12",
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]


def _records(out: Path) -> list[dict[str, Any]]:
    return saved_rows(out)


def test_instruct_records_unparsed_counts_and_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml, out = _task(tmp_path), tmp_path / "run"
    chat, models = ShapeChat(), []
    _use(monkeypatch, chat, models)
    assert main(_argv(yaml, out)) == 0
    table = capsys.readouterr().out
    assert models == ["fake/chat"]
    assert chat.settings == {(12, 0.0)}  # greedy, the given answer budget

    records = _records(out)
    # k=0 once, k=4 three runs
    assert Counter((r["k"], r["seed"]) for r in records) == {
        (0, 0): N_ITEMS,
        (4, 0): N_ITEMS,
        (4, 1): N_ITEMS,
        (4, 2): N_ITEMS,
    }
    for r in records:
        n = int(r["item_id"][1:])
        answer, expected = SHAPES[n % len(SHAPES)]
        assert r["answer"] == answer and r["pred"] == expected
        assert r["gold"] == _gold(n) and r["model"] == "fake/chat" and r["task"] == "mini"
        assert r["meta"] == {"domain": "acl" if n < 10 else "bio"}

    # Exemplars: the same set and order for every item of a run, other sets across runs,
    # one per class, from the pool only (never a test item, not even its copy "dup").
    shots: dict[tuple[int, int], set[tuple[str, ...]]] = defaultdict(set)
    for r in records:
        shots[(r["k"], r["seed"])].add(tuple(r["shots"]))
    assert all(len(s) == 1 for s in shots.values())
    run_sets = [set(next(iter(shots[(4, run)]))) for run in range(3)]
    assert run_sets[0].isdisjoint(run_sets[1]) and run_sets[1].isdisjoint(run_sets[2])
    assert run_sets[0].isdisjoint(run_sets[2])
    assert next(iter(shots[(0, 0)])) == ()
    for ids in run_sets:
        assert len(ids) == 4 and all(i.startswith("p") for i in ids)
        assert sorted(int(i[1:]) % 4 for i in ids) == [0, 1, 2, 3]
    prefixes = Counter(json.dumps(conv[:-1]) for conv in chat.seen if len(conv) > 2)
    assert sorted(prefixes.values()) == [N_ITEMS] * 3  # 3 runs, one prefix each
    assert "Premise 3." not in "".join(prefixes)  # the copied test item is no exemplar

    results = json.loads((out / "results.json").read_text())
    assert results["config"]["kind"] == "instruct"
    rows = {row["k"]: row for row in results["metrics"]}
    assert rows[0]["seeds"] == [0] and rows[4]["seeds"] == [0, 1, 2]
    for row in rows.values():
        assert [p["n_unparsed"] for p in row["per_seed"]] == [UNPARSED_PER_RUN] * len(row["seeds"])
        assert row["accuracy"] == pytest.approx(_expected_accuracy())
        assert row["n"] == N_ITEMS
    assert results["draws"]["mini"]["4"]["1"] == list(next(iter(shots[(4, 1)])))
    assert results["data"]["mini"]["pool_items_removed_as_test_items"] == 1

    # The printed table: macro F1, accuracy and unparsed answers per run (mean ± std).
    acc = f"{_expected_accuracy():.3f}"
    assert f"| fake/chat | mini | 0 | {N_ITEMS} | 1 |" in table
    assert f"| fake/chat | mini | 4 | {N_ITEMS} | 3 |" in table
    assert f"{acc} ± 0.000 | {UNPARSED_PER_RUN}.0 ± 0.0 |" in table
    assert "unparsed/run" in table
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# nlieval instruct: fake/chat")
    assert f"| {UNPARSED_PER_RUN}.0 ± 0.0 |" in summary

    # A finished run resumes without loading the model; the report reads the folder.
    _use(monkeypatch, ShapeChat(fail_on_call=1))
    assert main(_argv(yaml, out)) == 0
    assert len(_records(out)) == 4 * N_ITEMS
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert f"| {UNPARSED_PER_RUN}.0 ± 0.0 |" in capsys.readouterr().out
    assert json.loads((out / "results.json").read_text())["config"]["kind"] == "instruct"

    # The scientific report: unparsed answers are a confusion column of their own.
    assert main(["sci-report", str(out)]) == 0
    report = capsys.readouterr().out
    assert (
        "| gold \\ predicted | contrasting | reasoning | entailment | neutral | unparsed |"
        in report
    )
    assert "| mini | 4 | 20 | 3 |" in report and "acl" in report and "bio" in report


def test_crash_mid_point_resumes_without_duplicates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml = _task(tmp_path)
    monkeypatch.setattr(loop, "CHUNK", 8)  # 20 items: chunks of 8, 8, 4
    whole = tmp_path / "whole"
    _use(monkeypatch, ShapeChat())
    assert main(_argv(yaml, whole)) == 0

    out = tmp_path / "crashed"
    # Calls 1-3: k=0 (3 chunks); 4-5: two chunks of k=4 run 0; call 6 crashes.
    _use(monkeypatch, ShapeChat(fail_on_call=6))
    assert main(_argv(yaml, out)) == 130
    assert "resume" in capsys.readouterr().err
    assert len(_records(out)) == N_ITEMS + 16
    with open(out / "records.jsonl", "a") as f:
        f.write('{"task": "mini", "item_id": "t1')  # a write cut by the crash

    again = ShapeChat()
    _use(monkeypatch, again)
    assert main(_argv(yaml, out)) == 0
    assert len(again.seen) == 4 * N_ITEMS - (N_ITEMS + 16)  # only what was left
    records = _records(out)
    keys = [(r["k"], r["seed"], r["item_id"]) for r in records]
    assert len(keys) == len(set(keys)) == 4 * N_ITEMS

    def by_key(rs: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
        return {(r["k"], r["seed"], r["item_id"]): r for r in rs}

    assert by_key(records) == by_key(_records(whole))
    res_a = json.loads((out / "results.json").read_text())["metrics"]
    res_b = json.loads((whole / "results.json").read_text())["metrics"]
    assert [r["per_seed"] for r in res_a] == [r["per_seed"] for r in res_b]


def test_mismatched_rerun_and_wrong_task_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml, out = _task(tmp_path), tmp_path / "run"
    _use(monkeypatch, ShapeChat())
    argv = _argv(yaml, out)
    argv[argv.index("--shots") + 1] = "0"
    assert main(argv) == 0
    capsys.readouterr()
    assert main(_argv(yaml, out, "--max-new-tokens", "5")) == 2
    err = capsys.readouterr().err
    assert "other settings" in err and "max_new_tokens" in err
    assert main(["run", "--model", "smollm2-135m", "--task", "smoke", "--out", str(out)]) == 2
    assert "nlieval instruct" in capsys.readouterr().err
    # Tasks that are not four-class scientific NLI, shots that are no multiple of 4.
    other = tmp_path / "other"
    assert main(_argv(yaml, other)[:4] + ["smoke", "--out", str(other)]) == 2
    assert "four classes" in capsys.readouterr().err and not other.exists()
    assert main(_argv(yaml, other, "--shots", "0,6")) == 2
    assert "multiples of 4" in capsys.readouterr().err and not other.exists()


def test_real_scinli_pool_is_dev_and_balanced_limit(
    tmp_path: Path,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "sci"
    chat = ConstantChat("Reasoning", name="any")
    monkeypatch.setattr(cli_instruct, "instruct_backend", lambda config: chat)
    argv = ["instruct", "--task", "scinli", "--limit", "8", "--shots", "8", "--runs", "2"]
    argv += ["--balanced-limit", "--out", str(out), "--data-dir", str(data_dir)]
    assert main([*argv, "--no-progress"]) == 0
    records = _records(out)
    assert len(records) == 16 and all(r["item_id"].startswith("test_") for r in records)
    # SciNLI's test file is sorted by class: a plain --limit 8 would be all contrasting.
    assert Counter(r["gold"] for r in records if r["seed"] == 0) == {lab.value: 2 for lab in SCI4}
    assert all(len(r["shots"]) == 8 for r in records)
    assert all(s.startswith("dev_") for r in records for s in r["shots"])
    assert {r["model"] for r in records} == {"smollm2-135m"}
    info = json.loads((out / "results.json").read_text())["data"]["scinli"]
    assert info["split"] == "test" and info["pool"].endswith("(dev)")
    assert "| smollm2-135m | scinli | 8 | 8 | 2 |" in capsys.readouterr().out
    # The same folder without --balanced-limit would evaluate other items: refused.
    assert main([*argv[:-5], "--out", str(out), "--data-dir", str(data_dir)]) == 2
    assert "balanced_limit" in capsys.readouterr().err


def test_transformers_chat_backend_end_to_end(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The real local backend (chat template, greedy generate) on a random tiny model:
    # its answers are noise, and whatever does not parse is counted, not dropped.
    yaml, out = _task(tmp_path), tmp_path / "tiny"
    argv = ["instruct", "--model", str(tiny_llama), "--task", str(yaml), "--limit", "4"]
    argv += ["--shots", "0,4", "--runs", "1", "--max-new-tokens", "4"]
    assert main([*argv, "--out", str(out), "--no-progress", "--device", "cpu"]) == 0
    records = _records(out)
    assert len(records) == 8 and all(isinstance(r["answer"], str) for r in records)
    row = json.loads((out / "results.json").read_text())["metrics"][0]
    assert row["n_unparsed"] == sum(r["pred"] is None for r in records if r["k"] == row["k"])
    assert "unparsed/run" in capsys.readouterr().out


def test_openai_compatible_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.fake_openai import running

    yaml, out = _task(tmp_path), tmp_path / "served"
    monkeypatch.setattr(loop, "CHUNK", 8)
    failing = {"on": True}

    def answer(body: dict[str, Any]) -> tuple[Any, ...]:
        m = re.search(r"Premise (\d+)\.", body["messages"][-1]["content"])
        assert m is not None
        n = int(m.group(1))
        if failing["on"] and n >= 8:  # the second chunk fails for good (HTTP 400)
            return ("status", 400, '{"error": "bad request"}', {})
        return ("ok", SHAPES[n % len(SHAPES)][0])

    argv = _argv(yaml, out, "--api-base", "", "--retries", "0", "--concurrency", "2")
    argv[argv.index("--shots") + 1] = "0"
    with running() as server:
        server.default = answer
        argv[argv.index("--api-base") + 1] = server.url
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "400" in err and "run the same command again" in err
        assert len(_records(out)) == 8  # the first chunk is kept
        failing["on"] = False
        sent = len(server.requests)
        assert main(argv) == 0
        assert len(server.requests) - sent == N_ITEMS - 8
        bodies = server.requests
    records = _records(out)
    assert sorted(int(r["item_id"][1:]) for r in records) == list(range(N_ITEMS))
    for r in records:
        answer_text, expected = SHAPES[int(r["item_id"][1:]) % len(SHAPES)]
        assert r["answer"] == answer_text and r["pred"] == expected
        assert r["model"] == "fake/chat"
    assert {(b["model"], b["temperature"], b["max_tokens"]) for b in bodies} == {
        ("fake/chat", 0.0, 12)
    }
    assert bodies[0]["messages"][0]["role"] == "system"
    table = capsys.readouterr().out
    assert f"| fake/chat | mini | 0 | {N_ITEMS} | 1 |" in table
    assert f"| {UNPARSED_PER_RUN}.0 |" in table


def test_kill_9_mid_run_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    # `nlieval instruct` in a child process against the fake server, killed with SIGKILL
    # once some records are on disk; the same command then finishes the run.
    import signal
    import time

    from tests.helpers.cli_process import start_cli
    from tests.helpers.fake_openai import running

    yaml = _task(tmp_path)

    def answer(body: dict[str, Any]) -> tuple[Any, ...]:
        m = re.search(r"Premise (\d+)\.", body["messages"][-1]["content"])
        assert m is not None
        return ("ok", SHAPES[int(m.group(1)) % len(SHAPES)][0])

    def argv(out: Path, url: str) -> list[str]:
        args = _argv(yaml, out, "--api-base", url, "--concurrency", "1")
        return args[1:] if args[0] == "instruct" else args

    with running() as server:
        server.default = answer
        whole = tmp_path / "whole"
        ref = start_cli("instruct", *argv(whole, server.url), cwd=tmp_path)
        assert ref.wait(timeout=300) == 0, ref.communicate()[1]
        server.hold = 0.05  # about 20 answers a second: time to kill it mid-run
        out = tmp_path / "killed"
        proc = start_cli("instruct", *argv(out, server.url), cwd=tmp_path)
        records = out / "records.jsonl"  # by hand: torn (read while the run is killed)
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if records.is_file() and len(records.read_text().splitlines()) >= N_ITEMS:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        n_before = len(records.read_text().splitlines())
        assert N_ITEMS <= n_before < 4 * N_ITEMS, "not killed mid-run"
        server.hold = 0.0
        again = start_cli("instruct", *argv(out, server.url), cwd=tmp_path)
        assert again.wait(timeout=300) == 0, again.communicate()[1]
    got = _records(out)
    keys = [(r["k"], r["seed"], r["item_id"]) for r in got]
    assert len(keys) == len(set(keys)) == 4 * N_ITEMS
    want = {(r["k"], r["seed"], r["item_id"]): r for r in _records(whole)}
    assert {(r["k"], r["seed"], r["item_id"]): r for r in got} == want
    res_a = json.loads((out / "results.json").read_text())["metrics"]
    res_b = json.loads((whole / "results.json").read_text())["metrics"]
    assert [r["per_seed"] for r in res_a] == [r["per_seed"] for r in res_b]
