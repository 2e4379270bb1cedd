"""The settings of ``nlieval generate``: what a run does (:class:`GenerateConfig`) and
the ``config.json`` of its folder, with what the settings resolved to
(:class:`GenerateFolderConfig`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from ..data import Dataset, data_dir_setting, split_setting, task_setting
from ..settings import count, positive_int, setting
from .generated_prompt import PROMPT_VERSION, Example


@dataclass(frozen=True)
class GenerateConfig:
    """What ``nlieval generate`` does; ``limit``, ``max_sentences``, ``attempts``,
    ``retry_temperature``, ``data_dir``, ``skip_bad`` and ``max_server_errors`` may change
    between runs of one folder, the others are its identity (see
    :attr:`GenerateFolderConfig.IDENTITY`). ``limit`` is the first N items, as in every
    command; ``max_sentences`` the first N distinct sentences of those items.

    ``attempts`` answers at most per sentence, over every run of the folder (a larger
    value asks the sentences whose answers were all invalid again): the first at
    ``temperature`` with ``seed``, the n-th at ``max(temperature, retry_temperature)``
    with ``seed + n - 1``.
    The run stops after ``max_server_errors`` requests in a row failed for good.
    """

    task: str = task_setting("whose premises to use")
    split: str | None = split_setting()
    limit: int | None = setting(
        None, help="the first N items of the task (their distinct sentences)", parse=positive_int
    )
    max_sentences: int | None = setting(
        None, help="the first N distinct sentences (of the --limit items)", parse=positive_int
    )
    sentences: str = setting(
        "premise",
        help="write hypotheses for the task's premises, or for its hypotheses (for the "
        "chain patterns of `infer build --generated`)",
        choices=("premise", "hypothesis"),
    )
    examples: int = setting(10, help="solved examples from the task's pool", parse=count)
    exemplars: str | None = setting(
        None,
        help="exemplar file (jsonl/csv: premise, entailment, neutral, contradiction[, id]): "
        "its solved examples, all and in file order, instead of --examples drawn from the pool",
    )
    prompt: str | None = setting(
        None,
        help="prompt file (YAML: system, user and assistant templates; docs/prompts.md) "
        "[the shipped prompt]",
    )
    seed: int = setting(0, help="draws the examples; seed of answer 1")
    attempts: int = setting(
        3, help="answers at most per sentence, over every run of the folder", parse=positive_int
    )
    temperature: float = setting(0.0, help="of the first answer (0: greedy)")
    retry_temperature: float = setting(
        0.7, help="at least this temperature when asking again after an invalid answer"
    )
    max_new_tokens: int = setting(160, help="per answer", parse=positive_int)
    data_dir: str | None = data_dir_setting()
    skip_bad: bool = setting(False, help="skip malformed data lines (counted)")
    max_server_errors: int = setting(
        3, help="stop after this many requests in a row failed for good", parse=positive_int
    )

    def __post_init__(self) -> None:
        for name in ("attempts", "max_server_errors", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
        if self.examples < 0:
            raise ValueError("--examples must be 0 or more")
        for name in ("limit", "max_sentences"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be positive, got {value}")

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
    prompt_version: int | str = PROMPT_VERSION
    limit: int | None = None
    attempts: int = 3
    retry_temperature: float = 0.7
    data_dir: str | None = None
    max_server_errors: int = 3
    data: str = ""
    #: a folder written before --limit meant items has its sentences' limit as limit
    max_sentences: int | None = None

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
        prompt_version: int | str = PROMPT_VERSION,
    ) -> GenerateFolderConfig:
        return cls(
            generator=generator,
            task=config.task,
            split=ds.split,
            sentences=config.sentences,
            examples=len(examples) if config.exemplars else config.examples,
            example_ids=tuple(ex.source_id for ex in examples),
            seed=config.seed,
            temperature=config.temperature,
            max_new_tokens=config.max_new_tokens,
            prompt_version=prompt_version,
            limit=config.limit,
            attempts=config.attempts,
            retry_temperature=config.retry_temperature,
            data_dir=config.data_dir,
            max_server_errors=config.max_server_errors,
            data=str(ds.source),
            max_sentences=config.max_sentences,
        )
