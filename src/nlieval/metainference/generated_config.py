"""The settings of ``nlieval generate``: what a run does (:class:`GenerateConfig`) and
the ``config.json`` of its folder, with what the settings resolved to
(:class:`GenerateFolderConfig`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from ..data import Dataset
from .generated_prompt import PROMPT_VERSION, Example


@dataclass(frozen=True)
class GenerateConfig:
    """What ``nlieval generate`` does; ``limit``, ``attempts``, ``retry_temperature``,
    ``data_dir``, ``skip_bad`` and ``max_server_errors`` may change between runs of one
    folder, the others are its identity (see :attr:`GenerateFolderConfig.IDENTITY`).

    ``attempts`` answers at most per sentence and run: the first at ``temperature`` with
    ``seed``, the n-th at ``max(temperature, retry_temperature)`` with ``seed + n - 1``.
    The run stops after ``max_server_errors`` requests in a row failed for good.
    """

    task: str
    split: str | None = None
    limit: int | None = None
    sentences: str = "premise"
    examples: int = 10
    seed: int = 0
    attempts: int = 3
    temperature: float = 0.0
    retry_temperature: float = 0.7
    max_new_tokens: int = 160
    data_dir: str | None = None
    skip_bad: bool = False
    max_server_errors: int = 3

    def sampling(self, attempt: int) -> tuple[float, int]:
        """Temperature and seed of the ``attempt``-th answer (1-based).

        >>> GenerateConfig("snli").sampling(1), GenerateConfig("snli").sampling(3)
        ((0.0, 0), (0.7, 2))
        """
        if attempt <= 1:
            return self.temperature, self.seed
        return max(self.temperature, self.retry_temperature), self.seed + attempt - 1


@dataclass(frozen=True)
class GenerateFolderConfig:
    """The ``config.json`` of a ``generate`` folder: the settings, with what they resolved
    to (the generator's name, the split, the solved examples' ids, the data file).
    ``IDENTITY`` fields must match to resume the folder.

    >>> cfg = GenerateFolderConfig("m", "snli", "test", "premise", 0, (), 0, 0.0, 160)
    >>> cfg.to_dict()["kind"], cfg.to_dict()["example_ids"]
    ('generate', [])
    """

    generator: str
    task: str
    split: str
    sentences: str
    examples: int
    example_ids: tuple[str, ...]
    seed: int
    temperature: float
    max_new_tokens: int
    prompt_version: int = PROMPT_VERSION
    limit: int | None = None
    attempts: int = 3
    retry_temperature: float = 0.7
    data_dir: str | None = None
    max_server_errors: int = 3
    data: str = ""

    KIND: ClassVar[str] = "generate"
    IDENTITY: ClassVar[tuple[str, ...]] = (
        "generator",
        "task",
        "split",
        "sentences",
        "examples",
        "example_ids",
        "seed",
        "temperature",
        "max_new_tokens",
        "prompt_version",
    )

    def to_dict(self) -> dict[str, Any]:
        # JSON types (a list, not a tuple), as config.json reads back on resume.
        d: dict[str, Any] = {"kind": self.KIND, **asdict(self)}
        d["example_ids"] = list(self.example_ids)
        return d

    @classmethod
    def of(
        cls,
        generator: str,
        config: GenerateConfig,
        ds: Dataset,
        examples: Sequence[Example],
    ) -> GenerateFolderConfig:
        return cls(
            generator=generator,
            task=config.task,
            split=ds.split,
            sentences=config.sentences,
            examples=config.examples,
            example_ids=tuple(ex.source_id for ex in examples),
            seed=config.seed,
            temperature=config.temperature,
            max_new_tokens=config.max_new_tokens,
            limit=config.limit,
            attempts=config.attempts,
            retry_temperature=config.retry_temperature,
            data_dir=config.data_dir,
            max_server_errors=config.max_server_errors,
            data=str(ds.source),
        )
