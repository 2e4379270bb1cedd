"""One way to name a model, whatever runs it: the model registry of every command.

A model is named by one string and at most one server address, with one rule for every
command (``run``, ``instruct``, ``generate``, ``train``'s evaluation):

- ``hf:NAME`` or a plain ``NAME``: a model loaded in process through transformers (an
  alias such as ``smollm2-135m``, a model folder, a ``.gguf`` file or a hub id; for
  ``run`` also a classifier folder written by ``nlieval train``, or any transformers
  sequence-classification model, folder or hub id, whose ``config.json`` architecture
  ends in ``ForSequenceClassification``: see :mod:`nlieval.backends.hf_classifier`);
- ``server:NAME`` (``openai-completions:NAME`` is the same): the model ``NAME`` served by
  an OpenAI-compatible server (vLLM, SGLang, ...) at ``--api-base``;
- a plain ``NAME`` together with ``--api-base`` is the server's model ``NAME`` too;
- ``hf:NAME`` with ``--api-base``, or ``server:NAME`` without one, is refused.

The settings of each engine travel in one options object: :class:`HFOptions` for
transformers in process, :class:`~nlieval.backends.openai.ServerOptions` for a server.
:func:`load_scorer` (option log-likelihoods, or a fine-tuned classifier) and
:func:`load_generator` (chat answers) make the backend; a new engine is one more branch
here. What a run's identity holds of a model is its engine and name
(:attr:`ModelSpec.engine`, :attr:`ModelSpec.name`), never the server's address: a folder
may be resumed against another server of the same model.

>>> parse_model("smollm2-135m")
ModelSpec(engine='hf', name='smollm2-135m')
>>> parse_model("llama-3.1-70b", "http://localhost:8000/v1")
ModelSpec(engine='server', name='llama-3.1-70b')
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..settings import options, setting
from .base import ClassifierBackend, GenerationBackend, LogLikelihoodBackend
from .openai import ServerOptions
from .placement import parse_max_memory
from .weights import DEFAULT_MODEL, ModelError, ModelSource, model_fingerprint, resolve_model

#: Prefixes that name a model on a server; the first is the one written in messages.
SERVER_PREFIXES = ("server:", "openai-completions:")
#: The prefix of a model loaded in process (the default, so it may be left out).
HF_PREFIX = "hf:"
ENGINES = ("hf", "server")

log = logging.getLogger(__name__)

#: Rows per forward pass of a local chat model when the batch size is ``auto``.
CHAT_BATCH = 16
#: Sentence pairs per forward pass of a fine-tuned classifier when the batch size is ``auto``.
CLASSIFIER_BATCH = 32


@dataclass(frozen=True)
class ModelSpec:
    """What a model string means: the ``engine`` that runs it (``hf`` or ``server``) and
    the ``name`` that engine is given (for ``hf``: alias, folder, ``.gguf`` or hub id;
    for ``server``: the server's model name).

    >>> ModelSpec("server", "qwen2.5-7b").label
    'server:qwen2.5-7b'
    >>> ModelSpec("hf", "smollm2-135m").label
    'smollm2-135m'
    """

    engine: str
    name: str

    @property
    def label(self) -> str:
        """The model string that means this model without an ``--api-base``."""
        return self.name if self.engine == "hf" else SERVER_PREFIXES[0] + self.name


def parse_model(model: str, api_base: str | None = None) -> ModelSpec:
    """The one parsing rule of a ``--model`` string (see the module docstring).

    >>> parse_model("openai-completions:org/m", "http://h:8000/v1")
    ModelSpec(engine='server', name='org/m')
    >>> parse_model("hf:gpt2")
    ModelSpec(engine='hf', name='gpt2')
    >>> parse_model("server:org/m")
    Traceback (most recent call last):
    ValueError: --model server:org/m is a model on a server: give its address with --api-base (e.g. http://localhost:8000/v1)
    >>> parse_model("hf:gpt2", "http://h:8000/v1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: --model hf:gpt2 is loaded in process, but --api-base names a server: ...
    """
    for prefix in SERVER_PREFIXES:
        if model.startswith(prefix):
            name = model[len(prefix) :]
            if not name:
                raise ValueError(f"--model {prefix}NAME needs the server's model name")
            if not api_base:
                raise ValueError(
                    f"--model {model} is a model on a server: give its address with "
                    "--api-base (e.g. http://localhost:8000/v1)"
                )
            return ModelSpec("server", name)
    if model.startswith(HF_PREFIX):
        name = model[len(HF_PREFIX) :]
        if not name:
            raise ValueError(f"--model {HF_PREFIX}NAME needs a model name")
        if api_base:
            raise ValueError(
                f"--model {model} is loaded in process, but --api-base names a server: "
                "drop one of them"
            )
        return ModelSpec("hf", name)
    if not model:
        raise ValueError("--model needs a model name")
    return ModelSpec("server" if api_base else "hf", model)


def model_label(model: str) -> str:
    """The spelling of a model string that a run folder keeps: ``hf:NAME`` is ``NAME``
    (loading in process is the default), any other string is kept as it is.

    >>> model_label("hf:smollm2-135m"), model_label("server:m")
    ('smollm2-135m', 'server:m')
    """
    return model[len(HF_PREFIX) :] if model.startswith(HF_PREFIX) else model


class NamesAModel:
    """What a settings class that holds ``model`` and ``server`` (its options, None
    without ``--api-base``) says of its model: one rule, in every command's config.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Cfg(NamesAModel):
    ...     model: str
    ...     server: ServerOptions | None = None
    >>> Cfg("m").engine, Cfg("m", ServerOptions("http://h:1/v1")).engine
    ('hf', 'server')
    """

    model: str
    server: ServerOptions | None

    @property
    def spec(self) -> ModelSpec:
        """What ``model`` names, and which engine runs it."""
        return parse_model(self.model, self.server.api_base if self.server else None)

    @property
    def engine(self) -> str:
        """``hf`` or ``server`` (part of a run's identity; the address is not)."""
        return self.spec.engine


@dataclass(frozen=True)
class HFOptions:
    """How to run a model in process through transformers (torch).

    ``device_map`` (``auto``) spreads a model over several devices through accelerate and
    ``max_memory`` (``0=70GiB,1=70GiB,cpu=200GiB``) caps each; neither changes results.

    >>> HFOptions().dtype
    'auto'
    >>> HFOptions(max_memory="0=70GiB")
    Traceback (most recent call last):
    ValueError: --max-memory needs --device-map (e.g. auto)
    """

    dtype: str = setting(
        "auto", help="weights' type: auto (fp32 on CPU, bf16 on GPU), float32, bfloat16"
    )
    device: str = setting("auto", help="cpu, cuda, cuda:1, mps (auto: a GPU when there is one)")
    revision: str | None = setting(None, help="hub revision of the model")
    prefix_cache: bool = setting(
        True,
        help="recompute the shared start of the prompts (the few-shot prefix) for every "
        "item (same results, slower)",
        names=("--no-prefix-cache",),
    )
    prefix_attention: str = setting(
        "cascade",
        help="how rows attend to a cached prefix: cascade (its keys/values held once and "
        "shared by every row) or rows (a copy in each row; architectures cascade does not "
        "cover use it anyway); same results",
        choices=("cascade", "rows"),
    )
    device_map: str | None = setting(
        None, help="auto: spread a model too large for one device over all GPUs (then CPU, disk)"
    )
    max_memory: str | None = setting(
        None,
        help="with --device-map: memory per device, e.g. 0=70GiB,1=70GiB,cpu=200GiB",
        metavar="DEV=SIZE,...",
    )

    def __post_init__(self) -> None:
        if self.max_memory is not None:
            if self.device_map is None:
                raise ValueError("--max-memory needs --device-map (e.g. auto)")
            parse_max_memory(self.max_memory)  # a bad spelling fails before any model loads


def check_model(spec: ModelSpec, revision: str | None = None) -> None:
    """Fail on a wrong local model name at once, before any folder is made or data read
    (a server's model is checked by its first answer).

    >>> check_model(ModelSpec("server", "anything"))
    >>> check_model(ModelSpec("hf", "/no/such/model"))
    Traceback (most recent call last):
    nlieval.backends.weights.ModelError: model path /no/such/model does not exist
    """
    from .classifier import is_classifier_folder

    if spec.engine == "hf" and not is_classifier_folder(spec.name):
        resolve_model(spec.name, revision)


def model_fingerprints(
    spec: ModelSpec,
    revision: str | None = None,
    checkpoints: tuple[str, ...] = (),
) -> dict[str, str]:
    """The fingerprints of the weights a run's numbers come from, for its folder's identity
    (see :func:`nlieval.backends.weights.model_fingerprint`): ``model`` for the model, or
    ``model <checkpoint>`` per checkpoint of a sweep (a folder or a hub revision), or per
    seed's checkpoint of a ``nlieval train`` folder. A server's model has none here: what
    a server holds cannot be hashed from outside (its answers' model name is checked).

    >>> list(model_fingerprints(ModelSpec("hf", tiny_lm)))
    ['model']
    >>> model_fingerprints(ModelSpec("server", "llama"))
    {}
    """
    from .classifier import classifier_checkpoints, is_classifier_folder

    if spec.engine == "server":
        return {}
    if checkpoints:
        out: dict[str, str] = {}
        for ckpt in checkpoints:
            local = Path(ckpt).exists()
            if local and is_classifier_folder(ckpt):
                out |= _classifier_prints(f"model {ckpt}", Path(ckpt))
                continue
            source = resolve_model(ckpt if local else spec.name, None if local else ckpt)
            out |= _fingerprint(f"model {ckpt}", source)
        return out
    found = classifier_checkpoints(spec.name) if Path(spec.name).is_dir() else []
    if found and found != [Path(spec.name)]:
        return {k: v for p in found for k, v in _classifier_prints(f"model {p.name}", p).items()}
    if found:
        return _classifier_prints("model", Path(spec.name))
    return _fingerprint("model", resolve_model(spec.name, revision))


def _classifier_prints(key: str, folder: Path) -> dict[str, str]:
    # A classifier checkpoint's own files; a LoRA checkpoint holds only adapters and a
    # head, so the base model they go on (named in its description) is part of it too.
    from .classifier import read_meta

    out = {key: model_fingerprint(ModelSource(folder.name, str(folder)))}
    meta = read_meta(folder)
    if meta.adapter is not None:
        out |= _fingerprint(f"{key} base", resolve_model(meta.base_model))
    return out


def _fingerprint(name: str, source: ModelSource) -> dict[str, str]:
    try:
        return {name: model_fingerprint(source)}
    except ModelError:
        if source.is_local:
            raise
        # A hub revision whose commit neither the local hub cache nor the hub can name
        # cannot be loaded either: that load's own error says what is wrong, after the
        # folder's settings are checked, and no record can come from the model.
        log.info("no commit for %s@%s yet: checked once it loads", source.path, source.revision)
        return {}


def _which(spec: ModelSpec, revision: str | None, checkpoint: str | None) -> tuple[str, str | None]:
    """The model to load and its hub revision, for one of a sweep's checkpoints: a local
    folder is loaded instead of the model (a revision means nothing to a folder), anything
    else is a revision of it."""
    if checkpoint is None or Path(checkpoint).exists():
        return checkpoint or spec.name, revision
    return spec.name, checkpoint


def classifier_labels(
    spec: ModelSpec,
    revision: str | None = None,
    checkpoints: tuple[str, ...] = (),
    label_map: Mapping[str, str] | None = None,
) -> dict[str, tuple[str, ...]]:
    """For each of the model (or its checkpoints) that is an off-the-shelf sequence
    classifier, the task labels of its outputs through ``label_map`` (see
    :func:`nlieval.backends.hf_classifier.task_labels_of`), read from its config without
    loading weights; empty for any other model. Raises
    :class:`~nlieval.backends.classifier.ClassifierError` for outputs no label names.

    >>> classifier_labels(ModelSpec("hf", tiny_lm)), classifier_labels(ModelSpec("server", "m"))
    ({}, {})
    """
    from .classifier import is_classifier_folder
    from .hf_classifier import is_sequence_classifier, model_id2label, task_labels_of

    if spec.engine != "hf":
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for ckpt in checkpoints or (None,):
        model, rev = _which(spec, revision, ckpt)
        if is_classifier_folder(model) or not is_sequence_classifier(model, rev):
            continue
        where = model if rev is None or Path(model).exists() else f"{model}@{rev}"
        out[ckpt or spec.name] = task_labels_of(model_id2label(model, rev), label_map, where=where)
    return out


def load_scorer(
    spec: ModelSpec,
    *,
    hf: HFOptions | None = None,
    server: ServerOptions | None = None,
    batch_size: int | str = "auto",
    top_logprobs: int | None = None,
    checkpoint: str | None = None,
    label_map: Mapping[str, str] | None = None,
) -> LogLikelihoodBackend | ClassifierBackend:
    """The backend that scores options for ``spec``: a server's completions endpoint, a
    fine-tuned classifier folder (``nlieval train``), an off-the-shelf sequence
    classifier (:class:`~nlieval.backends.hf_classifier.HFSequenceClassifier`, its
    outputs named through ``label_map``), or a causal LM in process.

    ``checkpoint`` is one of a sweep's checkpoints: a folder (loaded instead of the
    model) or a hub revision. ``batch_size`` is rows per forward pass, or prompts per
    request to a server; ``top_logprobs`` the K of the server's one-request-per-item
    scoring (None: the backend's default). ``label_map`` (model label name -> task label)
    is refused for any model but a sequence classifier.

    >>> lm = load_scorer(ModelSpec("hf", tiny_lm), batch_size=2)
    >>> type(lm).__name__, lm.batch_size
    ('HFCausalLM', 2)
    """
    if spec.engine == "server":
        if server is None:
            raise ValueError(f"--model {spec.label} needs --api-base")
        if checkpoint is not None:
            raise ValueError("--checkpoints needs a local model, not one on a server")
        from .completions import DEFAULT_TOP_LOGPROBS, CompletionsLM

        k = DEFAULT_TOP_LOGPROBS if top_logprobs is None else top_logprobs
        return CompletionsLM(spec.name, server, batch_size=batch_size, top_logprobs=k)
    from .classifier import EncoderClassifier, is_classifier_folder
    from .hf import HFCausalLM
    from .hf_classifier import HFSequenceClassifier, is_sequence_classifier

    opts = hf or HFOptions()
    model, revision = _which(spec, opts.revision, checkpoint)
    bs = batch_size if isinstance(batch_size, int) else CLASSIFIER_BATCH
    sequence_classifier = not is_classifier_folder(model) and is_sequence_classifier(
        model, revision
    )
    if label_map and not sequence_classifier:
        raise ValueError(not_a_sequence_classifier(model))
    if is_classifier_folder(model):
        return EncoderClassifier(model, device=opts.device, batch_size=bs)
    if sequence_classifier:
        return HFSequenceClassifier(
            model,
            revision=revision,
            label_map=label_map,
            dtype=opts.dtype,
            device=opts.device,
            batch_size=bs,
            device_map=opts.device_map,
            max_memory=parse_max_memory(opts.max_memory) if opts.max_memory else None,
        )
    return HFCausalLM(
        model,
        revision=revision,
        dtype=opts.dtype,
        device=opts.device,
        batch_size=batch_size,
        prefix_cache=opts.prefix_cache,
        cascade=opts.prefix_attention == "cascade",
        device_map=opts.device_map,
        max_memory=parse_max_memory(opts.max_memory) if opts.max_memory else None,
    )


def not_a_sequence_classifier(model: str) -> str:
    """The one line refusing ``--label-map`` for ``model``.

    >>> not_a_sequence_classifier("smollm2-135m")  # doctest: +ELLIPSIS
    '--label-map names the outputs of a sequence-classification model ...'
    """
    return (
        "--label-map names the outputs of a sequence-classification model (config.json "
        f"architectures ending in ForSequenceClassification); {model} is not one"
    )


def load_generator(
    spec: ModelSpec | str,
    *,
    hf: HFOptions | None = None,
    server: ServerOptions | None = None,
    batch_size: int | str = "auto",
) -> GenerationBackend:
    """A chat backend for ``spec``: a server's chat endpoint, or a local transformers
    chat model answering through its chat template. A string is parsed by
    :func:`parse_model` with the address of ``server``.

    >>> chat = load_generator("served-model", server=ServerOptions(fake_server))
    >>> type(chat).__name__, chat.name
    ('OpenAIChat', 'served-model')
    """
    if isinstance(spec, str):
        spec = parse_model(spec, server.api_base if server else None)
    if spec.engine == "server":
        if server is None:
            raise ValueError(f"--model {spec.label} needs --api-base")
        from .openai import OpenAIChat

        return OpenAIChat(spec.name, server)
    from .generator import LocalChat

    opts = hf or HFOptions()
    return LocalChat(
        spec.name,
        revision=opts.revision,
        dtype=opts.dtype,
        device=opts.device,
        batch_size=batch_size if isinstance(batch_size, int) else CHAT_BATCH,
        prefix_cache=opts.prefix_cache,
    )


@dataclass(frozen=True)
class ChatModel(NamesAModel):
    """The chat model of a command that only needs one (``generate``): the model string
    and the options of its engines, as flags.

    >>> ChatModel("m", server=ServerOptions("http://h:8000/v1")).spec
    ModelSpec(engine='server', name='m')
    """

    model: str = setting(
        help="chat model run in process (alias, folder, .gguf or hub id); with --api-base "
        "the server's model name",
        cli_default=DEFAULT_MODEL,
    )
    hf: HFOptions = options(HFOptions)
    server: ServerOptions | None = options(
        ServerOptions, when="api_base", optional=True, title="server"
    )

    def load(self) -> GenerationBackend:
        """The backend (see :func:`load_generator`)."""
        return load_generator(self.spec, hf=self.hf, server=self.server)

    def check(self) -> None:
        """Fail on a wrong model string or a missing address at once, before any data is
        read or weights load (what :meth:`load` would say later).

        >>> ChatModel("server:m").check()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: --model server:m is a model on a server: give its address with --api-base ...
        """
        check_model(self.spec, self.hf.revision)

    def fingerprints(self) -> dict[str, str]:
        """The weights' fingerprints for a run folder's identity (see
        :func:`model_fingerprints`; none for a server's model).

        >>> list(ChatModel(tiny_lm).fingerprints())
        ['model']
        """
        return model_fingerprints(self.spec, self.hf.revision)
