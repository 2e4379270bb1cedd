"""The generation protocol's declarations (issue 44 part 4b): a caller drives a backend
in the batches it declares, through ``iter_generate`` when it streams, passes ``stop``
only to a backend that takes it and cuts the others' answers itself; every engine ends
answers at the same stop strings (transformers on a tiny random model, a server through
the request's ``stop`` field). Expected cuts are written by hand or computed with
``str.split`` on answers generated without any stop."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import Generation, Stop, stream_answers
from nlieval.backends.generator import LocalChat
from nlieval.backends.openai import OpenAIChat
from tests.helpers.fake_openai import running

Conv = list[dict[str, str]]


def _convs(texts: Sequence[str]) -> list[Conv]:
    return [[{"role": "user", "content": t}] for t in texts]


class Echo:
    """Answers each conversation's last message, keeping the size and keywords of every
    call; declares what it is given."""

    name = "echo"

    def __init__(self, generation: Generation | None = None) -> None:
        if generation is not None:
            self.generation = generation
        self.calls: list[tuple[int, dict[str, Any]]] = []

    def generate(
        self, convs: Sequence[Conv], max_new_tokens: int = 32, temperature: float = 0.0,
        seed: int = 0, **kw: Any,
    ) -> list[str]:  # fmt: skip
        self.calls.append((len(convs), kw))
        return [c[-1]["content"] for c in convs]


TEXTS = [f"answer {n}. and more" for n in range(7)]


@pytest.mark.parametrize(
    ("generation", "sizes"),
    [
        (None, [7]),  # declares nothing: a list, as the protocol says
        (Generation(batch=3), [3, 3, 1]),
        (Generation(batch=1), [1] * 7),
        (Generation(batch=100), [7]),
    ],
)
def test_calls_follow_the_declared_batch(generation: Generation | None, sizes: list[int]) -> None:
    echo = Echo(generation)
    got = list(stream_answers(echo, _convs(TEXTS), 8))
    assert got == list(enumerate(TEXTS))
    assert [n for n, _ in echo.calls] == sizes


def test_stop_goes_to_a_backend_that_takes_it_and_is_cut_for_one_that_does_not() -> None:
    stop = Stop((".",))
    taker = Echo(Generation(batch=None, stop=True))
    # It takes stop, so what it answers is its own business: left as it is.
    assert [a for _, a in stream_answers(taker, _convs(TEXTS), stop=stop)] == TEXTS
    assert taker.calls == [(7, {"stop": stop})]
    plain = Echo(Generation(batch=None))
    got = [a for _, a in stream_answers(plain, _convs(TEXTS), stop=stop)]
    assert got == [f"answer {n}" for n in range(7)]
    assert plain.calls == [(7, {})]


def test_a_stop_rule_cuts_the_text_at_its_first_complete_prefix() -> None:
    plain = Echo()
    convs = _convs(['{"a": 1} then chatter', "no object here"])
    stop = Stop(rule=lambda text: text.endswith("}"))
    got = [a for _, a in stream_answers(plain, convs, stop=stop)]
    assert got == ['{"a": 1}', "no object here"]


class Streamer:
    """Streams answers in reverse order; a failure is yielded, not raised."""

    name = "streamer"
    generation = Generation(batch=None, streaming=True)

    def __init__(self) -> None:
        self.closed = False

    def generate(self, convs: Sequence[Conv], *args: Any, **kw: Any) -> list[str]:
        raise AssertionError("a streaming backend is asked through iter_generate")

    def iter_generate(
        self, convs: Sequence[Conv], *args: Any, **kw: Any
    ) -> Iterator[tuple[int, str | Exception]]:
        try:
            for i in reversed(range(len(convs))):
                yield i, RuntimeError("gone") if i == 0 else convs[i][-1]["content"]
        finally:
            self.closed = True


def test_a_streaming_backend_is_read_as_it_yields_and_closed_with_its_reader() -> None:
    s = Streamer()
    got = list(stream_answers(s, _convs(["a. b", "c. d", "e"]), stop=Stop((".",))))
    assert [(i, a) for i, a in got if isinstance(a, str)] == [(2, "e"), (1, "c")]
    assert isinstance(got[-1][1], RuntimeError) and got[-1][0] == 0
    s = Streamer()
    answers = stream_answers(s, _convs(["a", "b", "c"]))
    next(answers)
    answers.close()
    assert s.closed


def test_stop_checks_its_strings() -> None:
    with pytest.raises(ValueError, match="at most 4"):
        Stop(("a", "b", "c", "d", "e"))
    with pytest.raises(ValueError, match="empty"):
        Stop(("",))


def test_engines_declare_what_they_do(tiny_llama: Path) -> None:
    chat = LocalChat(str(tiny_llama), batch_size=5)
    assert Generation.of(chat) == Generation(batch=5, streaming=False, stop=True)
    server = OpenAIChat("m", "http://127.0.0.1:9/v1")
    assert Generation.of(server) == Generation(batch=None, streaming=True, stop=True)
    server.close()


# --------------------------------------------------------------------------- engines

USERS = ["A cat sits on a mat.", "Two dogs run through the snow.", "Say hi", "B", "A man."]


def _plain(chat: LocalChat, conv: Conv, max_new: int) -> str:
    """The greedy answer of ``conv`` from plain ``model.generate``: no batch, no cache,
    no stop."""
    import torch

    text = chat.tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    enc = chat.tok(text, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        out = chat.model.generate(
            **enc, max_new_tokens=max_new, do_sample=False, temperature=None, top_p=None,
            top_k=None, pad_token_id=chat.pad_id,
        )  # fmt: skip
    return str(chat.tok.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True))


def test_local_chat_ends_answers_before_a_stop_string(tiny_llama: Path) -> None:
    chat = LocalChat(str(tiny_llama), batch_size=2)
    convs = _convs(USERS)
    full = [_plain(chat, c, 16) for c in convs]
    # Two characters from inside the first answer: it ends before them.
    s = full[0][3:5]
    assert s.strip() and full[0].find(s) == 3
    want = [f.split(s, 1)[0] for f in full]
    got = chat.generate(convs, max_new_tokens=16, stop=Stop((s,)))
    assert got == want
    assert [chat.generate([c], max_new_tokens=16, stop=Stop((s,)))[0] for c in convs] == want


def test_a_server_gets_the_stop_strings_and_its_answer_is_cut() -> None:
    with running() as server:
        server.default = lambda body: ("ok", "one. two. three")
        with OpenAIChat("fake", server.url) as chat:
            got = list(stream_answers(chat, _convs(["x", "y"]), stop=Stop((". t",))))
            # The fake ignores "stop" as some servers do: the client cuts too.
            assert sorted(got) == [(0, "one"), (1, "one")]
            assert [r.get("stop") for r in server.requests] == [[". t"], [". t"]]
            server.requests.clear()
            chat.generate(_convs(["z"]))
            assert "stop" not in server.requests[0]  # no stop: the request as before
