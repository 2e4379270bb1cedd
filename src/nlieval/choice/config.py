"""The configuration of an ``nlieval run`` folder."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from ..backends.placement import parse_max_memory


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run. ``IDENTITY`` fields must match to resume a folder;
    the others (tasks, shots, seeds, limit) may grow between invocations.

    ``limit`` takes the first n items of each task; ``sample`` instead takes a seeded
    random n of them, stratified by gold label (:func:`nlieval.data.sample_items`,
    seed ``sample_seed``). The two cannot be combined.

    A ``model`` of the form ``openai-completions:NAME`` is scored by the server at
    ``api_base`` (:class:`~nlieval.backends.completions.CompletionsLM`; ``batch_size`` is
    then prompts per request), with the API key read from the environment variable
    ``api_key_env``, ``timeout`` seconds per request, ``retries`` and at most
    ``concurrency`` requests in flight; ``top_logprobs`` > 0 scores single-token options
    from one request per item (the K top log-probs of the next token), 0 from one echo
    request per option. The server's address is not part of a run's identity: a folder
    may be resumed against another server of the same model.

    ``device_map`` (``auto``) spreads a local model over several devices through
    accelerate, ``max_memory`` (``0=70GiB,1=70GiB,cpu=200GiB``) caps each; neither changes
    results, so neither is part of the identity.

    >>> RunConfig("smollm2-135m", ("scinli",), sample=40).sample_seed
    0
    """

    model: str
    tasks: tuple[str, ...]
    shots: tuple[int, ...] = (0,)
    seeds: tuple[int, ...] = (0,)
    limit: int | None = None
    sample: int | None = None
    sample_seed: int = 0
    split: str | None = None
    data_dir: str | None = None
    template: str | None = None
    balanced: bool = False
    batch_size: int | str = "auto"
    dtype: str = "auto"
    device: str = "auto"
    revision: str | None = None
    checkpoints: tuple[str, ...] = ()
    skip_bad: bool = False
    save_prompts: bool = True
    prefix_cache: bool = True
    device_map: str | None = None
    max_memory: str | None = None
    api_base: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    retries: int = 4
    concurrency: int = 8
    top_logprobs: int = 20

    KIND: ClassVar[str] = "run"
    IDENTITY: ClassVar[tuple[str, ...]] = (
        "model",
        "split",
        "template",
        "balanced",
        "dtype",
        "revision",
        "sample",
        "sample_seed",
    )

    def __post_init__(self) -> None:
        if self.max_memory is not None:
            if self.device_map is None:
                raise ValueError("--max-memory needs --device-map (e.g. auto)")
            parse_max_memory(self.max_memory)  # a bad spelling fails before any model loads
        if self.limit is not None and self.sample is not None:
            raise ValueError(
                "--limit (the first N items) and --sample (a random N) cannot be combined"
            )
        if self.top_logprobs < 0:
            raise ValueError(f"--top-logprobs must be 0 or more, got {self.top_logprobs}")
        for name in ("limit", "sample"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be positive, got {value}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunConfig:
        known = {f.name for f in fields(cls)}
        kw: dict[str, Any] = {
            k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in known
        }
        return cls(**kw)
