"""Stand-in chat models for the tests of ``nlieval instruct``: what a chat backend's
``generate`` takes, answered without a model."""

from __future__ import annotations

from collections.abc import Sequence


class ConstantChat:
    """Answers ``answer`` to every conversation, whatever its settings; ``name`` is the
    backend's name."""

    def __init__(self, answer: str, name: str = "constant-chat") -> None:
        self.answer = answer
        self.name = name

    def generate(
        self,
        conversations: Sequence[Sequence[dict[str, str]]],
        max_new_tokens: int = 32,
        temperature: float = 0.0,
        seed: int = 0,
    ) -> list[str]:
        return [self.answer] * len(conversations)
