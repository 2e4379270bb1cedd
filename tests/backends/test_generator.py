"""Batched local chat generation on tiny random models: same answers as one at a time."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends.generator import LocalChat
from nlieval.metainference.generated import answer_complete, iter_answers
from nlieval.metainference.generated_parse import json_object_closed

Conv = list[dict[str, str]]

SYSTEM = {"role": "system", "content": "Premise: A man is playing a guitar on stage. Answer:"}
SHOTS = [
    {"role": "user", "content": "Two dogs run through the snow."},
    {"role": "assistant", "content": "Entailment"},
    {"role": "user", "content": "The woman is sleeping."},
    {"role": "assistant", "content": "Contradiction"},
]
USERS = [
    "A cat sits on a mat.",
    "The woman is sleeping. Nobody is outside. A child reads a book in the park.",
    "A child reads",
    "Hypothesis 1 Hypothesis 2 Contrasting Reasoning However, Therefore,",
    "B",
    "Observation 1: Two dogs run.",
    "A person makes music.",
]


def _convs(users: list[str] = USERS) -> list[Conv]:
    return [[SYSTEM, *SHOTS, {"role": "user", "content": u}] for u in users]


def _alone(
    chat: LocalChat, conv: Conv, max_new: int, temperature: float = 0.0, seed: int = 0
) -> list[int]:
    """New token ids for one conversation through plain ``model.generate`` (no batch, no
    cache), seeded the way the one-at-a-time backend was."""
    import torch

    text = chat.tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    enc = chat.tok(text, return_tensors="pt", add_special_tokens=False)
    torch.manual_seed(seed)
    with torch.inference_mode():
        out = chat.model.generate(
            **enc,
            max_new_tokens=max_new,
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else None,
            top_p=None,
            top_k=None,
            pad_token_id=chat.pad_id,
        )
    new: list[int] = out[0, enc["input_ids"].shape[1] :].tolist()
    return new


def _text(chat: LocalChat, ids: list[int]) -> str:
    return str(chat.tok.decode(ids, skip_special_tokens=True))


@pytest.fixture(scope="module", params=["llama", "gemma"])
def chat(request: pytest.FixtureRequest) -> LocalChat:
    folder: Path = request.getfixturevalue(f"tiny_{request.param}")
    return LocalChat(str(folder))


@pytest.mark.parametrize("batch_size", [1, 2, 7])
@pytest.mark.parametrize("prefix_cache", [True, False])
def test_greedy_batches_equal_one_at_a_time(
    chat: LocalChat, batch_size: int, prefix_cache: bool
) -> None:
    convs = _convs()
    want = [_text(chat, _alone(chat, c, 12)) for c in convs]
    assert len(set(want)) > 1  # the prompts really lead to different answers
    chat.batch_size, chat.prefix_cache = batch_size, prefix_cache
    try:
        assert chat.generate(convs, max_new_tokens=12) == want
    finally:
        chat.batch_size, chat.prefix_cache = 16, True


def test_prefix_is_computed_once_and_reused(tiny_llama: Path) -> None:
    chat = LocalChat(str(tiny_llama), batch_size=2)
    convs = _convs()
    first = chat.generate(convs[:4], max_new_tokens=6)
    second = chat.generate(convs[4:], max_new_tokens=6)
    assert chat.counts["prefix_runs"] == 1
    # Every row took the system and exemplar turns from the cache.
    shared = chat.tok.apply_chat_template([SYSTEM, *SHOTS], tokenize=False)
    n_shared = len(chat.tok(shared, add_special_tokens=False)["input_ids"])
    assert chat.counts["prefix"] >= len(convs) * (n_shared - 2)
    assert first + second == [_text(chat, _alone(chat, c, 6)) for c in convs]


def test_sliding_window_model_takes_the_cache_when_rows_fit(tiny_gemma: Path) -> None:
    # tiny_gemma's window is 16 tokens: these conversations (7 prefix tokens, a short
    # template) fit, so the cached path with pads between prefix and suffix is used, and
    # must still equal one at a time.
    chat = LocalChat(str(tiny_gemma))
    chat.tok.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    chat.MIN_PREFIX = 2
    convs: list[Conv] = [
        [
            {"role": "user", "content": "The woman"},
            {"role": "assistant", "content": "A man"},
            {"role": "user", "content": u},
        ]
        for u in ("A cat", "Two dogs", "B")  # suffixes of 4, 4 and 2 tokens: pads in one row
    ]
    got = chat.generate(convs, max_new_tokens=3)
    assert chat.counts["prefix_runs"] == 1
    assert got == [_text(chat, _alone(chat, c, 3)) for c in convs]


@pytest.mark.parametrize("batch_size", [1, 3, 7])
def test_sampling_is_seeded_per_row_like_alone(chat: LocalChat, batch_size: int) -> None:
    convs = _convs()
    want = [_text(chat, _alone(chat, c, 10, temperature=1.3, seed=11)) for c in convs]
    chat.batch_size = batch_size
    try:
        got = chat.generate(convs, max_new_tokens=10, temperature=1.3, seed=11)
        other_seed = chat.generate(convs, max_new_tokens=10, temperature=1.3, seed=12)
    finally:
        chat.batch_size = 16
    assert got == want
    assert other_seed != got


def test_stop_rule_ends_each_row_at_its_first_complete_prefix(chat: LocalChat) -> None:
    convs = _convs()
    full = [_alone(chat, c, 12) for c in convs]

    def long_enough(text: str) -> bool:
        return len(text) >= 6

    want = []
    for ids in full:
        ids = [t for t in ids if t not in chat.eos_ids]
        # The shortest run of the answer's own tokens whose text satisfies the rule.
        n = next((n for n in range(1, len(ids) + 1) if long_enough(_text(chat, ids[:n]))), len(ids))
        want.append(_text(chat, ids[:n]))
    assert any(len(w) < len(_text(chat, f)) for w, f in zip(want, full, strict=True))
    chat.batch_size = 3
    try:
        assert chat.generate(convs, max_new_tokens=12, stop=long_enough) == want
    finally:
        chat.batch_size = 16


def test_iter_generate_yields_in_order_the_answers_of_generate(tiny_llama: Path) -> None:
    chat = LocalChat(str(tiny_llama), batch_size=3)
    convs = _convs()
    seen = list(chat.iter_generate(convs, max_new_tokens=5))
    assert [i for i, _ in seen] == list(range(len(convs)))
    assert [a for _, a in seen] == [_text(chat, _alone(chat, c, 5)) for c in convs]


def test_generate_command_answers_stop_once_the_json_parses(tiny_llama: Path) -> None:
    # A model that always writes the answer then chatters: the stop rule of `nlieval
    # generate` must cut right after the object, keeping the text before it.
    chat = LocalChat(str(tiny_llama), batch_size=2)
    answer = json.dumps({"entailment": "a {b}", "neutral": 'c "}"', "contradiction": "d"})
    ids = chat.tok(answer + " and more words after it", add_special_tokens=False)["input_ids"]
    _force(chat, ids)
    convs = _convs()[:3]
    got = dict(iter_answers(chat, convs, 60, 0.0, 0))
    n = next(n for n in range(1, len(ids) + 1) if answer_complete(_text(chat, ids[:n])))
    assert _text(chat, ids[:n]).startswith(answer)
    assert got == {i: _text(chat, ids[:n]) for i in range(3)}


def _force(chat: LocalChat, ids: list[int]) -> None:
    """Make the model write ``ids`` (then EOS) whatever the prompt: a logits hook keyed
    on the forward passes of each ``generate`` call (one per new token; the prefix run
    outside it is left alone)."""
    import torch

    model = chat.model
    original: Callable[..., Any] = model.forward
    original_generate: Callable[..., Any] = model.generate
    state = {"active": False, "step": 0}

    @functools.wraps(original_generate)
    def generate(*args: Any, **kwargs: Any) -> Any:
        state.update(active=True, step=0)
        try:
            return original_generate(*args, **kwargs)
        finally:
            state["active"] = False

    # wraps: the hook shows forward's own parameters, so the backend hands the cache over
    # under the name the installed transformers takes, as it does to the real forward.
    @functools.wraps(original)
    def forward(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if not state["active"]:  # the prefix run: nothing is generated from it
            return out
        step = int(state["step"])
        state["step"] = step + 1
        target = ids[step] if step < len(ids) else 1  # 1 = <eos>
        logits = torch.full_like(out.logits[:, -1:, :], -1e4)
        logits[..., target] = 0.0
        out.logits = logits
        return out

    model.forward = forward
    model.generate = generate


@pytest.mark.parametrize(
    ("text", "closed"),
    [
        ("", False),
        ("no braces", False),
        ('{"a": 1}', True),
        ('Sure: {"a": 1} bye', True),
        ('{"a": "}"', False),  # the brace is inside a string
        ('{"a": "\\"}"', False),  # an escaped quote does not end the string
        ('{"a": "\\\\"}', True),  # an escaped backslash does
        ('{"a": {"b": 1}', False),
        ('{"a": 1} {"b": ', False),
        ('} {"a": 1}', True),  # a stray closing brace in prose is ignored
        # A brace in quoted prose opens an object that never closes: no early stop, so
        # nothing is cut that the parser could still use.
        ('say "{" then {"a": 1}', False),
    ],
)
def test_json_object_closed(text: str, closed: bool) -> None:
    assert json_object_closed(text) is closed


def test_answer_complete_agrees_with_the_parser_on_longer_texts() -> None:
    ok = '{"entailment": "a", "neutral": "b", "contradiction": "c"}'
    assert answer_complete(ok) and answer_complete("```json\n" + ok)
    # A closed object that does not parse yet: a later one could, so go on.
    assert not answer_complete('{"entailment": "a"}')
    assert not answer_complete('{"x": ' + ok)  # the outer object is still open


@pytest.mark.models
def test_smollm2_batched_equals_one_at_a_time() -> None:
    chat = LocalChat("smollm2-135m", batch_size=4)
    convs = _convs(USERS[:4])
    assert chat.generate(convs, max_new_tokens=8) == [
        _text(chat, _alone(chat, c, 8)) for c in convs
    ]
