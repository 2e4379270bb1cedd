"""A run folder's identity is what its numbers depend on: the data as read and the prompt
template, by content, not by path. A resume after either changed is refused with one line,
and nothing already in the folder is touched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.runs import RunError
from tests.helpers.hash_lm import HashLM

LABELS = ("entailment", "neutral", "contradiction")


def _task(folder: Path, n: int = 8, edit: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        premise = f"Premise number {i}." if i != edit else f"An edited premise {i}."
        label = LABELS[i % 3]
        rows.append({"id": f"p{i}", "premise": premise, "hypothesis": f"H {i}.", "label": label})
    (folder / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    yaml = folder / "t.yaml"
    yaml.write_text("name: mini\npath: d.jsonl\nlabels: [entailment, neutral, contradiction]\n")
    return yaml


def _run(task: Path, out: Path, extra: tuple[Path, ...] = (), **kw: Any) -> Any:
    # A hub-id spelling: the CLI's model check passes it without loading anything.
    cfg = RunConfig("org/hash", (str(task), *map(str, extra)), **kw)
    return run(cfg, out, model=stand_in(cfg, lambda ck: HashLM()), progress=False)


def _lines(out: Path) -> list[str]:
    # By hand: bytes (the lines written before are compared for being left as they were).
    return (out / "records.jsonl").read_text().splitlines()


def test_an_edited_data_file_is_refused(tmp_path: Path) -> None:
    task, out = _task(tmp_path / "data"), tmp_path / "r"
    _run(task, out, limit=3)
    before = _lines(out)
    _task(tmp_path / "data", edit=5)  # a line beyond the first 3 is edited
    with pytest.raises(RunError, match=r"other contents \(data mini: [0-9a-f]{16} -> [0-9a-f]{16}"):
        _run(task, out, limit=6)
    assert _lines(out) == before  # nothing of the first invocation is lost or mixed
    # The same contents again: the run resumes.
    _task(tmp_path / "data")
    _run(task, out, limit=6)
    assert len(_lines(out)) == 6


def test_another_copy_of_the_same_data_resumes_and_other_data_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Contents, not paths: the task YAML moved with its file is the same data.
    task, out = _task(tmp_path / "a"), tmp_path / "r"
    _run(task, out, limit=2)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    _run(tmp_path / "b" / "t.yaml", out, limit=4)
    assert len(_lines(out)) == 4
    _task(tmp_path / "c", edit=0)
    argv = ["run", "--model", "org/hash", "--task", str(tmp_path / "c" / "t.yaml"), "--limit", "5"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "data mini" in err and "--overwrite" in err
    assert len(_lines(out)) == 4


def test_a_changed_template_file_is_refused(tmp_path: Path) -> None:
    task, out = _task(tmp_path / "data"), tmp_path / "r"
    template = tmp_path / "block.j2"
    template.write_text("Premise: {{ premise }}\nHyp: {{ hypothesis }}\n{{ options }}\nAnswer:")
    _run(task, out, limit=2, template=str(template))
    template.write_text("P: {{ premise }}\nH: {{ hypothesis }}\n{{ options }}\nAnswer:")
    with pytest.raises(RunError, match="prompt mini k=0 seed=0"):
        _run(task, out, limit=4, template=str(template))
    assert len(_lines(out)) == 2


def test_fingerprints_are_kept_and_a_new_task_adds_its_own(tmp_path: Path) -> None:
    task, out = _task(tmp_path / "data"), tmp_path / "r"
    _run(task, out, limit=2, shots=(0,))
    saved = json.loads((out / "config.json").read_text())["fingerprints"]
    assert set(saved) == {"data mini", "prompt mini k=0 seed=0"}
    _run(task, out, limit=2, shots=(0, 2))  # a shot count added: its pool and prompt too
    grown = json.loads((out / "config.json").read_text())["fingerprints"]
    assert {k: grown[k] for k in saved} == saved
    assert {"pool mini", "prompt mini k=2 seed=0"} <= set(grown)


class Neutral:
    """A chat model that always answers Neutral."""

    name = "neutral-bot"

    def generate(self, conversations: Any, max_new_tokens: int = 32, **kw: Any) -> list[str]:
        return ["Neutral"] * len(conversations)


def _sci_task(folder: Path, edit: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    classes = ("contrasting", "reasoning", "entailment", "neutral")
    rows = [
        {"id": f"s{i}", "s1": f"Sentence {i}." if i != edit else "Edited.", "s2": f"Then {i}.",
         "label": classes[i % 4]}
        for i in range(8)
    ]  # fmt: skip
    (folder / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    yaml = folder / "t.yaml"
    yaml.write_text(
        "name: sci\npath: d.jsonl\nlabels: [contrasting, reasoning, entailment, neutral]\n"
        "fields: {id: id, premise: s1, hypothesis: s2, label: label}\n"
    )
    return yaml


def test_instruct_refuses_edited_data(tmp_path: Path) -> None:
    from nlieval.sci.instruct import InstructConfig, run_instruct

    task, out = _sci_task(tmp_path / "d"), tmp_path / "i"
    cfg = InstructConfig("org/bot", (str(task),), shots=(0,), limit=2, split=None)
    run_instruct(cfg, out, stand_in(cfg, lambda _: Neutral()), progress=False)
    _sci_task(tmp_path / "d", edit=7)
    more = InstructConfig("org/bot", (str(task),), shots=(0,), limit=4, split=None)
    with pytest.raises(RunError, match="data sci"):
        run_instruct(more, out, stand_in(more, lambda _: Neutral()), progress=False)
    assert len(_lines(out)) == 2


def test_a_smaller_limit_later_keeps_the_folder_config_true(tmp_path: Path) -> None:
    # The metrics are over every record of the folder: its config says so.
    task, out = _task(tmp_path / "data"), tmp_path / "r"
    _run(task, out, limit=5, shots=(0,))
    res = _run(task, out, limit=2, shots=(0,))
    assert [m["n"] for m in res.metrics] == [5]
    assert res.config["limit"] == 5
    assert json.loads((out / "config.json").read_text())["limit"] == 5
    assert "limit 5" in (out / "summary.md").read_text()
    res = _run(task, out, shots=(0,))  # no limit: every item, and the config says so
    assert [m["n"] for m in res.metrics] == [8] and res.config["limit"] is None


def test_two_tasks_of_one_name_are_refused(tmp_path: Path) -> None:
    # Their records would share keys: the second's items would be taken as done.
    a, b = _task(tmp_path / "a"), _task(tmp_path / "b", edit=1)
    with pytest.raises(ValueError, match="both named 'mini'"):
        _run(a, tmp_path / "r", extra=(b,))
    assert not (tmp_path / "r").exists()


def test_fingerprints_bind_only_once_records_exist(tmp_path: Path) -> None:
    # A first attempt stopped before scoring (wrong files, Ctrl-C) leaves no record:
    # the corrected data is taken, not refused.
    from nlieval.runs import RunFolder

    task, out = _task(tmp_path / "data"), tmp_path / "r"
    RunFolder(out).start(RunConfig("org/hash", (str(task),)), fingerprints={"data mini": "0" * 16})
    _run(task, out, limit=2)
    saved = json.loads((out / "config.json").read_text())["fingerprints"]
    assert saved["data mini"] != "0" * 16 and len(_lines(out)) == 2
