"""Prompts as data: the shipped prompt files give the prompts of before, byte for byte; a
prompt file of one's own changes the prompt and the run's identity; an escape is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nlieval.backends import stand_in
from nlieval.cli import main
from nlieval.data import DataError
from nlieval.ground.sandbox import BadTemplate
from nlieval.metainference import generated_prompt as gp
from nlieval.runs import RunError
from nlieval.sci import instruct
from nlieval.sci import instruct_prompt as ip
from nlieval.types import NLI3, SCI4, Item
from tests.helpers.records import saved_records
from tests.sci.test_instruct import FakeChat

FIXTURE = Path(__file__).parents[1] / "fixtures" / "prompts_before_files.json"
DATA = os.environ.get("NLIEVAL_DATA_DIR")
PAPER = Path(__file__).parents[2] / "docs" / "examples" / "prompts"


def _before() -> dict[str, object]:
    # Written by the code before prompts became files (its git history has it), so this
    # is the old code's output, not the new code's.
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_shipped_files_give_the_prompts_of_before_byte_for_byte() -> None:
    want = _before()
    ex = [
        Item(f"e{n}", f'Premise {n} with "quotes" and é.', f"Hypothesis {n}.", lab)
        for n, lab in enumerate(SCI4)
    ]
    item = Item("t1", "Our method halves the error.", "Thus it is useful.", None)
    assert ip.build_messages(item, ex, True) == want["instruct_system_role"]
    assert ip.build_messages(item, ex, False) == want["instruct_no_system_role"]
    assert ip.build_messages(item, (), True) == want["instruct_zero_shot"]
    assert ip.InstructPrompt.load().version == want["instruct_version"]
    hyps = [
        ["A man rests.", "A man dreams of é.", "A man runs."],
        ["Animals play.", "Dogs play fetch.", "Cats sleep."],
    ]
    examples = [
        gp.Example("s1", 'A man sleeps "deeply".', dict(zip(NLI3, hyps[0], strict=True))),
        gp.Example("s2", "Two dogs play.", dict(zip(NLI3, hyps[1], strict=True))),
    ]
    assert gp.build_messages("A girl rides a bike.", examples) == want["generate"]
    assert gp.build_messages("A girl rides a bike.", ()) == want["generate_zero"]
    assert gp.GeneratePrompt.load().version == want["generate_version"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


MINE = """kind: instruct
system: |-
  Label the pair. {% for c in classes %}[{{ c.letter }}] {{ c.name }} = {{ c.definition }}
  {% endfor %}({{ k }} examples)
user: "S1: {{ premise }} | S2: {{ hypothesis }}"
assistant: "It is {{ label }}."
definitions: {contrasting: opposes, reasoning: follows, entailment: restates, neutral: none}
"""


def test_a_prompt_file_of_ones_own_is_what_the_model_sees(tmp_path: Path) -> None:
    prompt = ip.InstructPrompt.load(_write(tmp_path / "mine.yaml", MINE))
    ex = [Item(f"e{n}", f"P{n}.", f"H{n}.", lab) for n, lab in enumerate(SCI4)]
    msgs = prompt.build_messages(Item("t", "A.", "B.", None), ex)
    assert msgs[0]["content"].startswith("Label the pair. [A] Contrasting = opposes\n[B] Reas")
    assert msgs[0]["content"].endswith("(4 examples)")
    assert msgs[1] == {"role": "user", "content": "S1: P0. | S2: H0."}
    assert msgs[2] == {"role": "assistant", "content": "It is contrasting."}
    assert prompt.version != ip.PROMPT_VERSION and len(prompt.version) == 12
    # Same content elsewhere: the same version (contents, not paths).
    moved = ip.InstructPrompt.load(_write(tmp_path / "other.yaml", MINE))
    assert moved.version == prompt.version


@pytest.mark.parametrize(
    "body",
    [
        "{{ premise.__class__.__mro__ }}",
        "{{ ''.__class__.__subclasses__() }}",
        "{% for x in range(10) %}{% endfor %}",
        "{{ premise.ljust(10**9) }}",
    ],
)
def test_an_escape_in_a_prompt_file_is_refused(tmp_path: Path, body: str) -> None:
    path = _write(tmp_path / "bad.yaml", MINE.replace("S1: {{ premise }}", body))
    with pytest.raises((BadTemplate, ValueError)) as err:
        p = ip.InstructPrompt.load(path)
        p.build_messages(Item("t", "A.", "B.", None))
    message = str(err.value)
    assert "\n" not in message and "bad.yaml" in message


def test_a_broken_prompt_file_is_one_line_naming_file_and_key(tmp_path: Path) -> None:
    cases = {
        "kind: generate\nsystem: a\nuser: b\nassistant: c\n": "kind",
        "kind: instruct\nsystem: a\nuser: b\n": "assistant",
        "kind: instruct\nsystem: a\nuser: b\nassistant: c\ncolour: red\n": "colour",
        "kind: instruct\nsystem: a\nuser: b\nassistant: c\ndefinitions: {neutral: x}\n": "missing",
        "kind: instruct\nsystem: '{{ secret }}'\nuser: b\nassistant: c\n": "secret",
    }
    for text, word in cases.items():
        path = _write(tmp_path / "p.yaml", text)
        with pytest.raises((DataError, ValueError)) as err:
            ip.InstructPrompt.load(path)
        assert word in str(err.value) and "p.yaml" in str(err.value), text


@pytest.mark.skipif(not DATA, reason="needs NLIEVAL_DATA_DIR")
def test_a_custom_prompt_and_exemplar_file_are_the_runs_identity(tmp_path: Path) -> None:
    chat = FakeChat(["Neutral"])
    cfg = instruct.InstructConfig("fake-chat", shots=(0, 4), runs=(0,), limit=3)
    out = tmp_path / "run"
    instruct.run_instruct(cfg, out, stand_in(cfg, lambda _: chat), progress=False)
    assert chat.seen[0][0]["content"] == ip.SYSTEM_PROMPT
    mine = _write(tmp_path / "mine.yaml", MINE)
    with pytest.raises(RunError, match="prompt_version"):
        other = instruct.InstructConfig(
            "fake-chat", shots=(0, 4), runs=(0,), limit=3, prompt=str(mine)
        )
        instruct.run_instruct(other, out, stand_in(other, lambda _: chat), progress=False)
    # A folder of its own with the custom prompt and exemplars from a file of one's own.
    rows = [
        {"id": f"x{n}", "premise": f"Known {n}.", "hypothesis": f"Thus {n}.", "label": lab.value}
        for n, lab in enumerate(SCI4)
    ]
    exemplars = _write(tmp_path / "ex.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    chat = FakeChat(["Neutral"])
    cfg = instruct.InstructConfig(
        "fake-chat", shots=(4,), runs=(0,), limit=3, prompt=str(mine), exemplars=str(exemplars)
    )
    instruct.run_instruct(cfg, tmp_path / "mine", stand_in(cfg, lambda _: chat), progress=False)
    conv = chat.seen[0]
    assert conv[0]["content"].startswith("Label the pair.")
    assert sorted(m["content"] for m in conv if m["role"] == "assistant") == sorted(
        f"It is {lab.value}." for lab in SCI4
    )
    records = saved_records(tmp_path / "mine")
    assert sorted(records[0].shots) == ["x0", "x1", "x2", "x3"]
    # The same exemplar ids with another text: the pool's fingerprint refuses a resume.
    rows[0]["premise"] = "Edited."
    _write(exemplars, "".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(RunError):
        instruct.run_instruct(cfg, tmp_path / "mine", stand_in(cfg, lambda _: chat), progress=False)


def test_the_studys_generation_prompt_as_files() -> None:
    # docs/examples/prompts holds the meta-inference study's prompt (Appendix C) as a
    # prompt file and its 10 worked examples as an exemplar file.
    prompt = gp.GeneratePrompt.load(PAPER / "generate-appendix-c.yaml")
    examples = gp.read_examples(PAPER / "generate-appendix-c.jsonl")
    assert len(examples) == 10
    msgs = prompt.build_messages("A man plays a guitar.", examples)
    assert [m["role"] for m in msgs] == ["system"] + ["user", "assistant"] * 10 + ["user"]
    assert msgs[0]["content"].startswith("You are native speaker of English")
    assert msgs[1]["content"] == (
        "Premise: A smiling man holds a small child wearing pink and red."
    )
    answer = json.loads(msgs[2]["content"])
    assert list(answer) == ["contradiction", "entailment", "neutral"]  # the study's order
    assert answer["neutral"] == "A man is holding his daughter."
    assert msgs[-1]["content"] == "Premise: A man plays a guitar."


@pytest.mark.skipif(not DATA, reason="needs NLIEVAL_DATA_DIR")
def test_generate_takes_a_prompt_and_exemplar_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["generate", "--task", "snli", "--limit", "1", "--api-base", "http://127.0.0.1:9"]
    bad = _write(
        tmp_path / "bad.yaml",
        "kind: generate\nsystem: '{{ n.__class__ }}'\nuser: '{{ premise }}'\nassistant: a\n",
    )
    assert main([*argv, "--prompt", str(bad), "--out", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nlieval: error: system of prompt file") and "\n" not in err
    assert "bad.yaml line 1: refused" in err
    assert not (tmp_path / "g" / "records.jsonl").exists()


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        (
            "instruct",
            MINE.replace("S1: {{ premise }} | S2: {{ hypothesis }}", "Classify this pair."),
        ),
        (
            "generate",
            "kind: generate\nsystem: S.\nuser: Write three.\nassistant: '{{ neutral }}'\n",
        ),
        ("generate", "kind: generate\nsystem: S.\nuser: '{{ \"premise\" }}'\nassistant: a\n"),
    ],
)
def test_a_user_turn_naming_no_item_variable_is_one_line(
    tmp_path: Path, kind: str, text: str
) -> None:
    # Every item would get the same prompt, and be scored against its own gold label.
    path = _write(tmp_path / "same.yaml", text)
    load = ip.InstructPrompt.load if kind == "instruct" else gp.GeneratePrompt.load
    with pytest.raises(BadTemplate) as err:
        load(path)
    message = str(err.value)
    assert message.startswith(f"user of prompt file {path}: names no item variable")
    assert "\n" not in message


def test_a_hypothesis_only_user_turn_is_a_prompt(tmp_path: Path) -> None:
    path = _write(tmp_path / "hyp.yaml", MINE.replace("S1: {{ premise }} | ", ""))
    prompt = ip.InstructPrompt.load(path)
    assert prompt.user(Item("1", "A.", "B.", None)) == "S2: B."


def test_instruct_with_a_prompt_naming_no_item_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _write(
        tmp_path / "same.yaml", MINE.replace("S1: {{ premise }} | S2: {{ hypothesis }}", "Go.")
    )
    out = tmp_path / "run"
    argv = ["instruct", "--model", "m", "--api-base", "http://127.0.0.1:9", "--prompt", str(bad)]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "names no item variable" in err and "\n" not in err
    assert not out.exists()
