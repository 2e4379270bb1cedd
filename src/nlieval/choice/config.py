"""The configuration of an ``nlieval run`` folder; its fields are also the command's flags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..backends import (
    EngineOptions,
    NamesAModel,
    ResolvedModel,
    model_setting,
)
from ..classifiers import label_map_dict, parse_label_map
from ..data import ItemSelection, data_dir_setting, split_setting, tasks_setting
from ..settings import (
    batch_size,
    csv_list,
    flat_dict,
    from_flat_dict,
    options,
    seed_list,
    setting,
    shot_counts,
)


@dataclass(frozen=True)
class RunConfig(ItemSelection, NamesAModel):
    """Everything that defines a run. ``IDENTITY`` fields must match to resume a folder;
    the others (tasks, shots, seeds, limit) may grow between invocations.

    ``limit`` takes the first n items of each task; ``sample`` instead takes a seeded
    random n of them, stratified by gold label (:func:`nlieval.data.sample_items`,
    seed ``sample_seed``). The two cannot be combined.

    ``model`` follows the one rule of :func:`nlieval.backends.registry.parse_model`: with
    ``server`` options (``--api-base``) it is the server's model, scored through
    :class:`~nlieval.backends.completions.CompletionsLM` (``batch_size`` is then prompts
    per request; ``top_logprobs`` > 0 scores single-token options from one request per
    item, 0 from one echo request per option). Its identity is its engine and name, not
    the server's address: a folder may be resumed against another server of the model.
    ``hf`` holds the settings of a model run in process; ``device_map`` and ``max_memory``
    change no result, so they are not part of the identity.

    ``label_map`` names the outputs of an off-the-shelf sequence classifier
    (:mod:`nlieval.backends.hf_classifier`) as task labels, ``NAME=LABEL`` entries (the
    flag's ``LABEL_0=entailment,LABEL_1=neutral,...``, or a dict); kept sorted by name.
    It decides what every probability means, so it is part of the identity.

    >>> RunConfig("smollm2-135m", ("scinli",), sample=40).sample_seed
    0
    >>> from nlieval.backends import ServerOptions
    >>> served = EngineOptions(server=ServerOptions("http://h:8000/v1"))
    >>> RunConfig("m", ("snli",), engines=served).engine
    'server'
    >>> RunConfig("m", ("snli",), label_map="LABEL_1=n,LABEL_0=e").label_map
    ('LABEL_0=entailment', 'LABEL_1=neutral')
    """

    model: str = model_setting(
        "alias (smollm2-135m, gemma3-270m), model folder, .gguf file, hub id or "
        "classifier folder, run in process (hf:NAME says so explicitly); with --api-base "
        "the server's model (server:NAME says so explicitly)"
    )
    tasks: tuple[str, ...] = tasks_setting()
    shots: tuple[int, ...] = setting(
        (0,),
        help="comma-separated shot counts k",
        names=("--shots", "--num_fewshot"),
        parse=shot_counts,
    )
    seeds: tuple[int, ...] = setting(
        (0,), help="number of few-shot draws (3 = seeds 0,1,2) or a list (1,5,7)", parse=seed_list
    )
    split: str | None = split_setting()
    data_dir: str | None = data_dir_setting()
    template: str | None = setting(None, help="Jinja template string or file for the blocks")
    balanced: bool = setting(False, help="label-balanced few-shot draws")
    batch_size: int | str = setting(
        "auto",
        help="rows per forward pass, or prompts per request to a server (auto: each "
        "engine's own: what fits in memory for a causal LM in process, 32 pairs for a "
        "classifier, 16 prompts per request to a server)",
        names=("--batch-size", "--batch_size"),
        parse=batch_size,
    )
    checkpoints: tuple[str, ...] = setting(
        (),
        help="ordered checkpoints (folders or hub revisions) to evaluate in turn",
        parse=csv_list,
    )
    skip_bad: bool = setting(False, help="skip malformed data lines (counted)")
    save_prompts: bool = setting(
        True, help="do not store prompt texts in records", names=("--no-prompts",)
    )
    top_logprobs: int = setting(
        20,
        help="with --api-base: score single-token options from the K top log-probs of one "
        "request per item (vLLM; at most its --max-logprobs); 0: one echo request per option",
        metavar="K",
    )
    label_map: tuple[str, ...] = setting(
        (),
        help="names of a sequence classifier's outputs as task labels, when its config's "
        "id2label does not use them (e.g. LABEL_0=entailment,LABEL_1=neutral,"
        "LABEL_2=contradiction)",
        parse=parse_label_map,
        metavar="NAME=LABEL,...",
    )
    engines: EngineOptions = options(EngineOptions)

    KIND: ClassVar[str] = "run"
    #: Settings that may grow between invocations; the folder keeps their union.
    GROWS: ClassVar[tuple[str, ...]] = ("tasks", "shots", "seeds", "limit", "checkpoints")
    IDENTITY: ClassVar[tuple[str, ...]] = (
        "model",
        "engine",
        "split",
        "template",
        "balanced",
        "dtype",
        "revision",
        "sample",
        "sample_seed",
        "label_map",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        spec = self.keep_label()  # a model string that means nothing fails here
        # Any spelling (the flag's text, a dict, entries) is kept as one: the identity.
        object.__setattr__(self, "label_map", parse_label_map(self.label_map))
        if spec.engine == "server" and self.checkpoints:
            raise ValueError("--checkpoints needs a local model, not one on a server")
        if self.top_logprobs < 0:
            raise ValueError(f"--top-logprobs must be 0 or more, got {self.top_logprobs}")

    @property
    def label_names(self) -> dict[str, str]:
        """``label_map`` as a dict (model label name -> task label).

        >>> RunConfig("m", ("snli",), label_map="LABEL_0=e").label_names
        {'LABEL_0': 'entailment'}
        """
        return label_map_dict(self.label_map)

    def resolve(self, **extra: Any) -> ResolvedModel:
        """The model with everything that says how to score it: engine options,
        checkpoints (a train folder's seeds when none are named), label map, batch size
        (see :func:`nlieval.backends.resolve`; ``extra``: its other keywords).

        >>> from nlieval.backends import ServerOptions
        >>> served = EngineOptions(server=ServerOptions("http://h:8000/v1"))
        >>> RunConfig("m", ("snli",), engines=served).resolve().kind
        'server'
        """
        return super().resolve(
            checkpoints=self.checkpoints,
            label_map=self.label_map,
            batch_size=self.batch_size,
            top_logprobs=self.top_logprobs,
            sweep_seeds=True,
            **extra,
        )

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON form of ``config.json`` (the engine included)."""
        return {**flat_dict(self), "engine": self.engine}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunConfig:
        if "folder_format" not in d and not str(d.get("model", "")).startswith(
            "openai-completions:"
        ):
            # Before one naming rule, `run` scored a plain model in process whatever
            # --api-base said: such a folder's model is the local one.
            d = {**d, "api_base": None}
        return from_flat_dict(cls, d)
