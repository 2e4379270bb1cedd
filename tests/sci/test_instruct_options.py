"""A prompt file declares its options (the letter or word of each class), and the answers
are read in exactly those: the MisMatched study's order a-d = entailment, reasoning,
contrasting, neutral scores "c." as contrasting, where the shipped A-D order reads C as
entailment."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import main
from nlieval.data import DataError, read_prompt_file
from nlieval.sci import instruct_prompt as ip
from nlieval.sci.instruct import parse_answer
from nlieval.types import Item, Label
from tests.sci.test_instruct_cli import N_ITEMS, _records, _task

C, R, E, N = Label.CONTRASTING, Label.REASONING, Label.ENTAILMENT, Label.NEUTRAL
# The study's order, written out by hand from the issue: a-d = E, R, C, N.
TABLE3 = [("a", E), ("b", R), ("c", C), ("d", N)]


def _serve_and_run(tmp_path: Path, answers: dict[int, str], *prompt: str) -> list[dict[str, Any]]:
    from tests.helpers.fake_openai import running

    yaml, out = _task(tmp_path), tmp_path / f"run{len(prompt)}"

    def answer(body: dict[str, Any]) -> tuple[Any, ...]:
        m = re.search(r"Premise (\d+)\.", body["messages"][-1]["content"])
        assert m is not None
        return ("ok", answers.get(int(m.group(1)), "c."))

    with running() as server:
        server.default = answer
        argv = ["instruct", "--model", "fake/chat", "--task", str(yaml), "--shots", "0"]
        argv += ["--runs", "1", "--api-base", server.url, "--retries", "0"]
        assert main([*argv, "--out", str(out), "--no-progress", *prompt]) == 0
        system = server.requests[0]["messages"][0]["content"]
    assert ("a. " in system) == bool(prompt)  # the study's letters reached the model
    return _records(out)


def test_a_chat_model_answering_c_is_contrasting_with_the_studys_prompt(tmp_path: Path) -> None:
    odd = {1: "(C) because it criticises", 2: "c) Contrasting", 3: "E.", 4: "c. Reasoning"}
    records = _serve_and_run(tmp_path, odd, "--prompt", "mismatched")
    got = {int(r["item_id"][1:]): r["pred"] for r in records}
    assert len(got) == N_ITEMS
    # Hand mapping: c / (C) / c) are option c = contrasting; "E." names no declared
    # option; "c. Reasoning" has a letter and a word that disagree.
    want = {n: "contrasting" for n in range(N_ITEMS)} | {3: None, 4: None}
    assert got == want
    # The same answers under the shipped prompt (A-D = C, R, E, N): c is entailment.
    shipped = {int(r["item_id"][1:]): r["pred"] for r in _serve_and_run(tmp_path, odd)}
    assert shipped[0] == "entailment" and shipped[2] is None and shipped[3] is None


def test_the_studys_prompt_lists_its_letters_in_its_order() -> None:
    prompt = ip.InstructPrompt.load("mismatched")
    assert [(tok, lab) for tok, lab in prompt.options] == TABLE3
    lines = prompt.system().splitlines()
    starts = [line[:3] for line in lines if re.match(r"^[a-d]\. ", line)]
    assert starts == ["a. ", "b. ", "c. ", "d. "]
    assert "criticises" in next(line for line in lines if line.startswith("c. "))
    ex = Item("e1", "X grows.", "Y grows.", R)
    msgs = prompt.build_messages(Item("t", "A.", "B.", None), [ex])
    assert msgs[2] == {"role": "assistant", "content": "b."}  # an exemplar answers its letter
    assert prompt.version != ip.PROMPT_VERSION


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("c", C), ("C.", C), ("(c)", C), ("c)", C), ("Answer: c", C), ("a", E),
        ("d - none of these", N), ("B: it follows", R),
        ("e", None), ("A reasoning relation.", R), ("c. Reasoning", None), ("cc.", None),
    ],
)  # fmt: skip
def test_answers_are_read_in_the_declared_options(answer: str, expected: Label | None) -> None:
    assert parse_answer(answer, TABLE3) is expected


def test_word_options_are_read_like_letters() -> None:
    words = [("yes", E), ("no", N), ("maybe", R), ("but", C)]
    assert parse_answer("Yes.", words) is E
    assert parse_answer("(no)", words) is N
    assert parse_answer("nobody knows", words) is None  # "no" must stand alone
    assert parse_answer("A", words) is None  # A-D are not options of this prompt


PROMPT = """kind: instruct
system: "{% for c in classes %}{{ c.letter }}={{ c.name }} {% endfor %}"
user: "{{ premise }} / {{ hypothesis }}"
assistant: "{{ letter }}"
"""


def _file(tmp_path: Path, options: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(PROMPT + options, encoding="utf-8")
    return path


def test_declared_forms_of_an_option_are_one_option(tmp_path: Path) -> None:
    body = "options: {neutral: '(w)', reasoning: 'X.', contrasting: 'y)', entailment: z}\n"
    prompt = ip.InstructPrompt.load(_file(tmp_path, body))
    assert prompt.system() == "w=Neutral X=Reasoning y=Contrasting z=Entailment "
    assert parse_answer("x", prompt.options) is R and parse_answer("(W)", prompt.options) is N


def test_the_default_options_declared_leave_the_prompts_identity(tmp_path: Path) -> None:
    bare = ip.InstructPrompt.load(_file(tmp_path, "")).version
    body = "options: {contrasting: A, reasoning: B, entailment: C, neutral: D}\n"
    assert ip.InstructPrompt.load(_file(tmp_path, body)).version == bare
    body = "options: {reasoning: B, contrasting: A, entailment: C, neutral: D}\n"
    assert ip.InstructPrompt.load(_file(tmp_path, body)).version != bare  # another order
    shipped = ip.InstructPrompt.load()
    assert shipped.version == ip.PROMPT_VERSION and [t for t, _ in shipped.options] == list("ABCD")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("options: {contrasting: a, reasoning: A, entailment: c, neutral: d}\n", "also the option"),
        ("options: {contrasting: a, reasoning: b, entailment: c}\n", "missing neutral"),
        ("options: {contrasting: a, reasoning: b, entailment: c, neutral: d, x: e}\n", "unknown x"),
        ("options: {contrasting: 'a b', reasoning: b, entailment: c, neutral: d}\n", "no option"),
        ("options: {contrasting: no, reasoning: b, entailment: c, neutral: d}\n", "in quotes"),
        ("options: [a, b, c, d]\n", "must map label names"),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, options: str, message: str) -> None:
    with pytest.raises((DataError, ValueError)) as err:
        ip.InstructPrompt.load(_file(tmp_path, options))
    text = str(err.value)
    assert message in text and "p.yaml" in text and "\n" not in text


def test_a_generate_prompt_has_no_options(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "kind: generate\nsystem: S.\nuser: '{{ premise }}'\nassistant: '{{ entailment }}'\n"
        "options: {entailment: a}\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError, match="only instruct prompts have options"):
        read_prompt_file(path, "generate")


def test_an_unknown_shipped_name_is_one_line() -> None:
    with pytest.raises(DataError, match=r"no such prompt file.*shipped: mismatched"):
        ip.InstructPrompt.load("mismatch")


def test_records_hold_the_raw_answer_and_its_class(tmp_path: Path) -> None:
    records = _serve_and_run(tmp_path, {0: "a."}, "--prompt", "mismatched")
    first = next(r for r in records if r["item_id"] == "t0")
    assert (first["answer"], first["pred"]) == ("a.", "entailment")
    assert json.loads((tmp_path / "run2" / "config.json").read_text())["prompt_version"] != (
        ip.PROMPT_VERSION
    )
