"""One way to name a model, whatever runs it: the model registry of every command.

A model is named by one string and at most one server address, with one rule for every
command (``run``, ``instruct``, ``generate``, ``train``'s evaluation):

- ``hf:NAME`` or a plain ``NAME``: a model loaded in process through transformers (an
  alias such as ``smollm2-135m``, a model folder, a ``.gguf`` file or a hub id; for
  ``run`` also a classifier folder written by ``nlieval train``, or any transformers
  sequence-classification model, folder or hub id, whose ``config.json`` architecture
  ends in ``ForSequenceClassification``: see :mod:`nlieval.backends.hf_classifier`; or
  a multiple-choice model, a folder ``nlieval train`` wrote for alpha-NLI or any one
  whose architecture ends in ``ForMultipleChoice``: :mod:`nlieval.backends.multiple_choice`);
- ``vllm:NAME``: the same models (alias, folder, ``.gguf`` or hub id) run in process by
  vLLM's offline engine (:mod:`nlieval.backends.vllm_engine`, options
  :class:`~nlieval.backends.vllm_engine.VLLMOptions`);
- ``server:NAME`` (``openai-completions:NAME`` is the same): the model ``NAME`` served by
  an OpenAI-compatible server (vLLM, SGLang, ...) at ``--api-base``;
- a plain ``NAME`` together with ``--api-base`` is the server's model ``NAME`` too;
- ``hf:NAME`` with ``--api-base``, or ``server:NAME`` without one, is refused.

The settings of each engine travel whole in one options object: :class:`HFOptions` for
transformers in process, :class:`~nlieval.backends.openai.ServerOptions` for a server;
each engine says what its own ``auto`` means. :func:`resolve` is the one place that says
what a model string is (:data:`Kind`): its :class:`ResolvedModel` knows its checkpoints,
labels, fingerprints and early check, and loads each checkpoint as a scorer (option
log-likelihoods, or a fine-tuned classifier) or a chat model, each asked of the object
of its kind (:data:`KINDS`, :class:`ModelKind`); a new engine is one more such object.
What a run's identity holds of a model is its engine and name
(:attr:`ModelSpec.engine`, :attr:`ModelSpec.name`), never the server's address: a folder
may be resumed against another server of the same model.

>>> parse_model("smollm2-135m")
ModelSpec(engine='hf', name='smollm2-135m')
>>> parse_model("llama-3.1-70b", "http://localhost:8000/v1")
ModelSpec(engine='server', name='llama-3.1-70b')
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

from ..ground import SettingError
from ..settings import options, setting, shared
from .base import ChoiceBackend, ClassifierBackend, GenerationBackend, LogLikelihoodBackend
from .openai import ServerOptions
from .options import HFOptions
from .vllm_engine import VLLMOptions
from .weights import (
    DEFAULT_MODEL,
    ModelError,
    ModelSource,
    local_kind,
    model_fingerprint,
    no_revision,
    parameter_count,
    resolve_model,
)

#: Prefixes that name a model on a server; the first is the one written in messages.
SERVER_PREFIXES = ("server:", "openai-completions:")
#: The prefix of a model loaded in process (the default, so it may be left out).
HF_PREFIX = "hf:"
#: The prefix of a model run in process by vLLM.
VLLM_PREFIX = "vllm:"

log = logging.getLogger(__name__)


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
        """The model string that means this model without an ``--api-base``.

        >>> ModelSpec("vllm", "smollm2-135m").label
        'vllm:smollm2-135m'
        """
        if self.engine == "vllm":
            return VLLM_PREFIX + self.name
        return self.name if self.engine == "hf" else SERVER_PREFIXES[0] + self.name

    @property
    def in_process(self) -> bool:
        """Whether the weights are loaded here (transformers or vLLM), not on a server.

        >>> ModelSpec("vllm", "m").in_process, ModelSpec("server", "m").in_process
        (True, False)
        """
        return self.engine != "server"


def parse_model(model: str, api_base: str | None = None) -> ModelSpec:
    """The one parsing rule of a ``--model`` string (see the module docstring).

    >>> parse_model("openai-completions:org/m", "http://h:8000/v1")
    ModelSpec(engine='server', name='org/m')
    >>> parse_model("hf:gpt2")
    ModelSpec(engine='hf', name='gpt2')
    >>> parse_model("server:org/m")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval...SettingError: --model server:org/m is a model on a server: give its address with ...
    >>> parse_model("hf:gpt2", "http://h:8000/v1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval...SettingError: --model hf:gpt2 is loaded in process, but --api-base names a server: ...
    >>> parse_model("vllm:smollm2-135m")
    ModelSpec(engine='vllm', name='smollm2-135m')
    """
    for prefix in SERVER_PREFIXES:
        if model.startswith(prefix):
            name = model[len(prefix) :]
            if not name:
                raise SettingError("model", f"--model {prefix}NAME needs the server's model name")
            if not api_base:
                raise SettingError(
                    ("model", "api_base"),
                    f"--model {model} is a model on a server: give its address with "
                    "--api-base (e.g. http://localhost:8000/v1)",
                )
            return ModelSpec("server", name)
    for prefix, engine in ((HF_PREFIX, "hf"), (VLLM_PREFIX, "vllm")):
        if not model.startswith(prefix):
            continue
        name = model[len(prefix) :]
        if not name:
            raise SettingError("model", f"--model {prefix}NAME needs a model name")
        if api_base:
            raise SettingError(
                ("model", "api_base"),
                f"--model {model} is loaded in process, but --api-base names a server: "
                "drop one of them",
            )
        return ModelSpec(engine, name)
    if not model:
        raise SettingError("model", "--model needs a model name")
    return ModelSpec("server" if api_base else "hf", model)


def model_label(model: str) -> str:
    """The spelling of a model string that a run folder keeps: ``hf:NAME`` is ``NAME``
    (loading in process is the default), any other string is kept as it is.

    >>> model_label("hf:smollm2-135m"), model_label("server:m")
    ('smollm2-135m', 'server:m')
    """
    return model[len(HF_PREFIX) :] if model.startswith(HF_PREFIX) else model


@dataclass(frozen=True)
class EngineOptions:
    """The options of every engine, declared once: each settings class that names a
    model (``run``'s, ``instruct``'s, :class:`ChatModel`) holds one field
    ``engines: EngineOptions = options(EngineOptions)``, its last, and a new engine with
    options of its own adds its field here alone. Each field is :func:`resolve`'s keyword
    of the same name; the flags, an experiment block's keys and ``config.json`` keep the
    options' own fields, flat, in this order.

    >>> EngineOptions().server is None, EngineOptions().hf.dtype
    (True, 'auto')
    """

    # Why one nested field and not a mixin of three: a dataclass puts a base class's
    # fields first, which would move these options before ``model`` in config.json and
    # in --help (and a base field with a default before ``model``, which has none, is an
    # error); a class decorator adding the fields is invisible to mypy's dataclass
    # plugin. Options inside options are read by settings.flat_dict and the flag builders.
    hf: HFOptions = options(HFOptions)
    server: ServerOptions | None = options(
        ServerOptions, when="api_base", optional=True, title="server"
    )
    vllm: VLLMOptions = options(VLLMOptions, title="vllm")

    def keywords(self) -> dict[str, Any]:
        """Each engine's options by the keyword of :func:`resolve` that takes them.

        >>> sorted(EngineOptions().keywords())
        ['hf', 'server', 'vllm']
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}


class NamesAModel:
    """What a settings class that holds ``model`` and ``engines`` (the options of every
    engine, :class:`EngineOptions`) says of its model: one rule, in every command's
    config.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Cfg(NamesAModel):
    ...     model: str
    ...     engines: EngineOptions = options(EngineOptions)
    >>> served = EngineOptions(server=ServerOptions("http://h:1/v1"))
    >>> Cfg("m").engine, Cfg("m", served).engine, Cfg("m", served).server.api_base
    ('hf', 'server', 'http://h:1/v1')
    """

    model: str
    engines: EngineOptions

    @property
    def hf(self) -> HFOptions:
        """The options of transformers in process."""
        return self.engines.hf

    @property
    def server(self) -> ServerOptions | None:
        """The options of a server (None without ``--api-base``)."""
        return self.engines.server

    @property
    def vllm(self) -> VLLMOptions:
        """The options of vLLM in process."""
        return self.engines.vllm

    @property
    def spec(self) -> ModelSpec:
        """What ``model`` names, and which engine runs it."""
        return parse_model(self.model, self.server.api_base if self.server else None)

    @property
    def engine(self) -> str:
        """``hf``, ``vllm`` or ``server`` (part of a run's identity; the address is not)."""
        return self.spec.engine

    def keep_label(self) -> ModelSpec:
        """Check ``model`` (a model string that means nothing fails here) and keep it in
        the spelling a run folder keeps (:func:`model_label`: ``hf:NAME`` is ``NAME``);
        for a frozen settings class's ``__post_init__``. Returns its :attr:`spec`.

        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Cfg(NamesAModel):
        ...     model: str
        ...     engines: EngineOptions = options(EngineOptions)
        >>> cfg = Cfg("hf:m"); cfg.keep_label(), cfg.model
        (ModelSpec(engine='hf', name='m'), 'm')
        """
        spec = self.spec
        object.__setattr__(self, "model", model_label(self.model))
        return spec

    def resolve(self, **extra: Any) -> ResolvedModel:
        """The model with the options of its engine (see :func:`resolve`); ``extra`` are
        :func:`resolve`'s other keywords.

        >>> served = EngineOptions(server=ServerOptions("http://h:1/v1"))
        >>> ChatModel("m", served).resolve().kind
        'server'
        """
        return resolve(self.model, **self.engines.keywords(), **extra)

    def saved_spelling(self, saved: NamesAModel | None) -> str:
        """The spelling of this model that a folder's config ``saved`` (as read back)
        keeps, when it names the same model (``server:m``, ``openai-completions:m`` and
        ``m`` with ``--api-base`` are one served model): the records keep one model
        name, and a resume with another spelling of it is not refused. Another model, or
        no saved config, keeps this spelling.

        >>> served = EngineOptions(server=ServerOptions("http://h:8000/v1"))
        >>> saved = ChatModel("server:m", served)
        >>> ChatModel("m", served).saved_spelling(saved)
        'server:m'
        >>> ChatModel("other", served).saved_spelling(saved)
        'other'
        """
        if saved is None or self.spec != saved.spec:
            return self.model
        return saved.model


#: What a model string names, decided once, by :func:`resolve`: a causal language model,
#: an off-the-shelf sequence classifier (config.json architecture
#: ``*ForSequenceClassification``), a classifier folder written by ``nlieval train``, a
#: ``nlieval train`` output folder (one such checkpoint per seed), a multiple-choice model
#: (architecture ``*ForMultipleChoice``, or a classifier folder with a multiple-choice
#: head: it reads an item with its choices), or a model on a server.
Kind = Literal[
    "causal-lm",
    "sequence-classifier",
    "classifier-folder",
    "train-folder",
    "multiple-choice",
    "server",
]
#: A backend the caller makes itself, for one checkpoint (None: the model).
Load = Callable[[str | None], Any]

#: A backend, of whatever protocol.
B = TypeVar("B")


@dataclass(frozen=True)
class Checkpoint:
    """One model a resolved model may load: ``key`` names it in a sweep (None: the model
    itself), ``model`` and ``revision`` are what is loaded, ``kind`` what it is.

    >>> Checkpoint("step100", "org/m", "step100", "causal-lm").classifies
    False
    """

    key: str | None
    model: str
    revision: str | None
    kind: Kind

    @property
    def classifies(self) -> bool:
        """Whether it classifies pairs (its records come from its label probabilities)."""
        return KINDS[self.kind].classifies

    @property
    def chooses(self) -> bool:
        """Whether it is a multiple-choice model (its records come from a softmax over
        each item's choices).

        >>> Checkpoint(None, "folder", None, "multiple-choice").chooses
        True
        """
        return KINDS[self.kind].chooses


@dataclass(frozen=True)
class ResolvedModel:
    """A model string with the options of its engine, resolved once by :func:`resolve`:
    what it is (:data:`Kind`), the checkpoints it is scored at, and how to check, label,
    fingerprint and load each of them. Every command that runs a model (``run``,
    ``instruct``, ``generate``, ``train``'s starting point) takes this one shape.

    ``sweep`` holds the checkpoints scored in turn (named by ``--checkpoints``, or a train
    folder's seeds); ``seeds`` a train folder's per-seed checkpoints. ``load_with`` is a
    backend the caller makes instead of the engine (a recording wrapper, a stand-in);
    ``checked`` False marks a stand-in whose name need not name real weights: no early
    check, no fingerprints, no labels (see :func:`stand_in`).

    >>> m = resolve("m", server=ServerOptions("http://h:8000/v1"))
    >>> m.kind, m.sweep, m.fingerprints(), m.takes_shots
    ('server', (), {}, True)
    """

    model: str
    spec: ModelSpec
    kind: Kind
    loads: tuple[Checkpoint, ...]
    sweep: tuple[str, ...] = ()
    seeds: tuple[str, ...] = ()
    hf: HFOptions = field(default_factory=HFOptions)
    server: ServerOptions | None = None
    vllm: VLLMOptions = field(default_factory=VLLMOptions)
    label_map: tuple[str, ...] = ()
    batch_size: int | str = "auto"
    top_logprobs: int | None = None
    load_with: Load | None = field(default=None, compare=False)
    checked: bool = True
    #: The backends made here that hold something to close (a server's client); weights
    #: in process hold nothing and are not kept, so a sweep lets each checkpoint go.
    _to_close: list[Any] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def takes_shots(self) -> bool:
        """False for a classifier: it reads the item alone, no prompt, no exemplars."""
        return not (KINDS[self.kind].classifies or KINDS[self.kind].chooses)

    def checkpoint(self, key: str | None) -> Checkpoint:
        """The checkpoint of ``key`` (one of ``sweep``; None: the model).

        >>> resolve(tiny_lm).checkpoint(None).kind
        'causal-lm'
        """
        for c in self.loads:
            if c.key == key:
                return c
        raise KeyError(f"{key} is not a checkpoint of {self.model}")

    def check(self) -> None:
        """Fail on a wrong local model name at once, before any folder is made or data read
        (a server's model is checked by its first answer; a sweep's checkpoints when they
        load).

        >>> resolve("server:anything", server=ServerOptions("http://h:1/v1")).check()
        >>> resolve("/no/such/model").check()
        Traceback (most recent call last):
        nlieval.backends.weights.ModelError: model path /no/such/model does not exist
        """
        if not self.checked or self.sweep:
            return
        self.way.check(self)

    def fingerprints(self) -> dict[str, str]:
        """The fingerprints of the weights the numbers come from, for a folder's identity
        (see :func:`nlieval.backends.weights.model_fingerprint`): ``model`` for the model,
        or ``model <checkpoint>`` per checkpoint of the sweep (a folder or a hub revision),
        or per seed of a train folder not swept (``model seed0``). A server's model has
        none here: what a server holds cannot be hashed from outside (its answers' model
        name is checked).

        >>> list(resolve(tiny_lm).fingerprints())
        ['model']
        """
        if not self.checked:
            return {}
        if self.sweep:
            out: dict[str, str] = {}
            for c in self.loads:
                assert c.key is not None
                # A path is the checkpoint's own weights; a hub revision is of the model.
                local = Path(c.key).expanduser().exists()
                out |= KINDS[c.kind].prints(
                    f"model {c.key}", c.model, None if local else c.revision
                )
            return out
        return self.way.model_prints(self)

    def labels(self) -> dict[str, tuple[str, ...]]:
        """For each sequence classifier among the model's checkpoints, the task labels of
        its outputs through ``label_map`` (see
        :func:`nlieval.classifiers.task_labels_of`), read from its config
        without loading weights. A ``label_map`` for a model with none is refused; outputs
        no label names raise :class:`~nlieval.classifiers.ClassifierError`.

        >>> resolve(tiny_lm).labels()
        {}
        """
        from ..classifiers import label_map_dict

        if not self.checked:
            return {}
        names = label_map_dict(self.label_map)
        out: dict[str, tuple[str, ...]] = {}
        for c in self.loads:
            labels = KINDS[c.kind].labels(c, names)
            if labels is not None:
                out[c.key or self.spec.name] = labels
        if self.label_map and not out:
            raise ValueError(not_a_sequence_classifier(self.model))
        return out

    def scorer(
        self, key: str | None = None
    ) -> LogLikelihoodBackend | ClassifierBackend | ChoiceBackend:
        """The backend that scores options at checkpoint ``key`` (None: the model): a
        server's completions endpoint, a fine-tuned classifier folder, an off-the-shelf
        sequence classifier (its outputs named through ``label_map``), a multiple-choice
        model or a causal LM in process, each with its engine's options whole.

        >>> lm = resolve(tiny_lm, batch_size=2).scorer()
        >>> type(lm).__name__, lm.batch_size
        ('HFCausalLM', 2)
        """
        if self.load_with is not None:
            backend: LogLikelihoodBackend | ClassifierBackend | ChoiceBackend
            backend = self.load_with(key)
            return backend
        c = self.checkpoint(key)
        return self._made(_way(self.spec, c.kind).scorer(self, c))

    def _made(self, backend: B) -> B:
        if callable(getattr(backend, "close", None)):
            self._to_close.append(backend)
        return backend

    def close(self) -> None:
        """Close the backends :meth:`scorer` and :meth:`chat` made that hold something (a
        server's client: its connections and the thread of its requests): the one rule
        of every run, which calls it when it ends, however it ends. A stand-in's backend
        (``load_with``) is its caller's to close.

        >>> model = resolve("served-model", server=ServerOptions(fake_server))
        >>> chat = model.chat()
        >>> chat.generate([[{"role": "user", "content": "Hi"}]], max_new_tokens=4)
        ['hello']
        >>> thread = chat._loop_thread; model.close(); chat._loop, thread.is_alive()
        (None, False)
        """
        while self._to_close:
            self._to_close.pop().close()

    def parameter_count(self) -> int:
        """The number of parameters of the model's weights, read from their files'
        headers without loading them (:func:`~nlieval.backends.weights.parameter_count`):
        the size axis of plots across models.

        >>> resolve(tiny_lm, checked=False).parameter_count() > 0
        True
        """
        return parameter_count(resolve_model(self.spec.name, self.hf.revision))

    def chat(self) -> GenerationBackend:
        """A chat backend: a server's chat endpoint, or a local transformers chat model
        answering through its chat template.

        >>> chat = resolve("served-model", server=ServerOptions(fake_server)).chat()
        >>> type(chat).__name__, chat.name
        ('OpenAIChat', 'served-model')
        """
        if self.load_with is not None:
            backend: GenerationBackend = self.load_with(None)
            return backend
        return self._made(self.way.chat(self))

    @property
    def way(self) -> ModelKind:
        """The object of this model's kind (:data:`KINDS`; vLLM's own for a model it
        runs): what its check, fingerprints, labels, scorer and chat are."""
        return _way(self.spec, self.kind)


def resolve(
    model: str,
    *,
    hf: HFOptions | None = None,
    server: ServerOptions | None = None,
    vllm: VLLMOptions | None = None,
    checkpoints: Sequence[str] = (),
    label_map: Sequence[str] = (),
    batch_size: int | str = "auto",
    top_logprobs: int | None = None,
    sweep_seeds: bool = False,
    load_with: Load | None = None,
    checked: bool = True,
) -> ResolvedModel:
    """The one place that says what a model string is (see :data:`Kind`): ``model`` is
    parsed by :func:`parse_model` with the address of ``server``; ``checkpoints`` are the
    sweep's (folders, loaded instead of the model, or hub revisions of it). With
    ``sweep_seeds`` a train folder's seeds become the sweep when none is named (``run``
    scores each seed's checkpoint in turn). A stand-in (``checked`` False) is resolved
    from the local folders alone: nothing is read from the hub.

    >>> m = resolve(tiny_lm)
    >>> m.kind, m.spec.engine, m.takes_shots, [c.key for c in m.loads]
    ('causal-lm', 'hf', True, [None])
    >>> resolve("server:org/m", server=ServerOptions("http://h:8000/v1")).spec
    ModelSpec(engine='server', name='org/m')
    """
    from ..classifiers import CHOICE_HEAD, classifier_checkpoints, folder_head, is_classifier_folder
    from .hf_classifier import is_sequence_classifier
    from .multiple_choice import is_multiple_choice

    spec = parse_model(model, server.api_base if server else None)
    opts = hf or HFOptions()
    if checkpoints and spec.engine != "hf":
        raise SettingError(
            "checkpoints",
            "--checkpoints needs a local model, not one on a server"
            if spec.engine == "server"
            # vLLM runs causal language models only; a sweep of checkpoints is the
            # transformers engine's.
            else "--checkpoints needs the transformers engine, not vllm:",
        )
    _check_revisions(spec, opts.revision, checkpoints)
    made = functools.partial(
        ResolvedModel,
        model_label(model),
        spec,
        hf=opts,
        server=server,
        vllm=vllm or VLLMOptions(),
        label_map=tuple(label_map),
        batch_size=batch_size,
        top_logprobs=top_logprobs,
        load_with=load_with,
        checked=checked,
    )
    if spec.engine == "server":
        return made("server", (Checkpoint(None, spec.name, None, "server"),))
    if spec.engine == "vllm":
        if is_classifier_folder(spec.name):
            raise SettingError("model", f"--model {model}: vLLM scores causal language models only")
        return made("causal-lm", (Checkpoint(None, spec.name, opts.revision, "causal-lm"),))

    def kind_of(name: str, revision: str | None) -> Kind:
        if is_classifier_folder(name):
            multiple = folder_head(name) == CHOICE_HEAD
            return "multiple-choice" if multiple else "classifier-folder"
        if checked and is_sequence_classifier(name, revision):
            return "sequence-classifier"
        if checked and is_multiple_choice(name, revision):
            return "multiple-choice"
        return "causal-lm"

    found = classifier_checkpoints(spec.name) if Path(spec.name).is_dir() else []
    seeds = tuple(str(p) for p in found) if found and found != [Path(spec.name)] else ()
    kind: Kind = "train-folder" if seeds else kind_of(spec.name, opts.revision)
    sweep = tuple(checkpoints) or (seeds if sweep_seeds else ())
    loads = []
    for key in sweep or (None,):
        # A path is loaded instead of the model; anything else is a hub revision of it
        # (_check_revisions has refused one that cannot be).
        if key is None or Path(key).expanduser().exists():
            name, revision = key or spec.name, opts.revision
        else:
            name, revision = spec.name, key
        loads.append(
            Checkpoint(key, name, revision, kind if key is None else kind_of(name, revision))
        )
    return made(kind, tuple(loads), sweep=sweep, seeds=seeds)


#: What a checkpoint may be, in every refusal of one.
CHECKPOINT_IS = (
    "a checkpoint is a path (a model folder or .gguf file, loaded instead of --model) or "
    "a hub revision (branch, tag or commit) of a hub model --model owner/name"
)


def _check_revisions(spec: ModelSpec, revision: str | None, checkpoints: Sequence[str]) -> None:
    """Refuse, in one line, every hub revision that cannot apply: ``--revision`` of a
    server's model, of a packaged model, a folder or a .gguf file, or beside
    ``--checkpoints`` (each checkpoint names its weights, so it would be dropped); a
    checkpoint that is no path of a model that is no hub id (a packaged model's name
    among them). Each of these used to be dropped without a word, and another model's
    numbers came out under the name. Reads local paths only, never the hub.

    >>> _check_revisions(ModelSpec("hf", "org/m"), None, ("step100", "main"))
    >>> _check_revisions(ModelSpec("hf", "smollm2-135m"), None, ("gemma3-270m",))
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval...SettingError: --checkpoints gemma3-270m: a packaged model is not a checkpoint of ...
    """
    if revision is not None:
        if spec.engine == "server":
            raise SettingError(
                "revision",
                f"--revision {revision}: a server's model takes no hub revision (the server "
                "loads its own weights); drop --revision",
            )
        if checkpoints:
            raise SettingError(
                ("revision", "checkpoints"),
                f"--revision {revision} with --checkpoints: each checkpoint names the "
                "weights it loads, so the revision would be dropped; give it as a checkpoint",
            )
        kind = local_kind(spec.name)
        if kind is not None:
            raise ModelError(no_revision(spec.name, revision, kind))
    model_kind = local_kind(spec.name)
    for key in checkpoints:
        key_kind = local_kind(key)
        if key_kind == "packaged model":
            raise SettingError(
                ("checkpoints", "model"),
                f"--checkpoints {key}: a packaged model is not a checkpoint of {spec.name}; "
                + CHECKPOINT_IS,
            )
        if key_kind is not None and not Path(key).expanduser().exists():
            raise SettingError(
                ("checkpoints", "model"), f"--checkpoints {key}: no such path; {CHECKPOINT_IS}"
            )
        if key_kind is None and model_kind is not None:
            raise SettingError(
                ("checkpoints", "model"),
                f"--checkpoints {key}: not a path, and --model {spec.name} is a "
                f"{model_kind}, which takes no hub revision; {CHECKPOINT_IS}",
            )


def stand_in(config: NamesAModel, load: Load) -> ResolvedModel:
    """The model of ``config`` with backends that ``load(checkpoint)`` makes instead of its
    engine (a test's stand-in, a backend already loaded): its kind read from local
    folders only, and no early check, fingerprints or labels (the name need not name real
    weights).

    >>> m = stand_in(ChatModel("any-name"), lambda ckpt: "a backend")
    >>> m.kind, m.scorer(), m.fingerprints()
    ('causal-lm', 'a backend', {})
    """
    return config.resolve(load_with=load, checked=False)


def not_a_sequence_classifier(model: str) -> str:
    """The one line refusing ``--label-map`` for ``model``.

    >>> not_a_sequence_classifier("smollm2-135m")  # doctest: +ELLIPSIS
    '--label-map names the outputs of a sequence-classification model ...'
    """
    return (
        "--label-map names the outputs of a sequence-classification model (config.json "
        f"architectures ending in ForSequenceClassification); {model} is not one"
    )


def _classifier_prints(key: str, folder: Path) -> dict[str, str]:
    # A classifier checkpoint's own files; a LoRA checkpoint holds only adapters and a
    # head, so the base model they go on (named in its description) is part of it too.
    from ..classifiers import read_meta
    from .lora_classifier import lora_base

    out = {key: model_fingerprint(ModelSource(folder.name, str(folder)))}
    meta = read_meta(folder)
    if meta.adapter is not None:
        out |= _fingerprint(f"{key} base", lora_base(meta.base_model, meta.adapter, str(folder)))
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


def model_setting(
    help: str | None = None, *, cli_default: str = DEFAULT_MODEL, label: bool = False
) -> Any:
    """``--model``, declared here once: the model string :func:`resolve` reads, the
    packaged default when none is given. ``help``: what the command does with it (by
    default, a command that talks to a chat model: ``generate``, ``instruct``).
    ``cli_default``: a command whose model is of one kind only has that kind's packaged
    default (``train``: the encoder ``minilm``, which ``sci`` resolves itself).

    ``label``: a command that loads no model (``import``), whose ``--model`` is the name
    its records are labelled with, as a run's model is: any text, None by default (the
    files name it). The same flag, in this one factory rather than a second one, so that
    the engines' door stays narrow.

    >>> model_setting().metadata["flag"].cli_default == DEFAULT_MODEL
    True
    >>> model_setting("model name", label=True).default is None
    True
    """
    if help is None:
        help = (
            "chat model run in process (alias, folder, .gguf or hub id); with --api-base "
            "the server's model name"
        )
    if label:
        return shared("model", setting(None, help=help))
    return shared("model", setting(help=help, cli_default=cli_default))


class ModelKind:
    """What one kind of model (:data:`Kind`) means, in one object: its early check, the
    fingerprints of its weights, the task labels of its outputs, its scorer and its chat
    model. :func:`resolve` decides the kind once; :class:`ResolvedModel` asks the kind's
    object (:data:`KINDS`) instead of branching on the kind. This one is a causal
    language model run in process by transformers; the other kinds change what differs.

    >>> KINDS["causal-lm"].classifies, KINDS["classifier-folder"].classifies
    (False, True)
    """

    #: Whether it classifies sentence pairs (records from its label probabilities; no
    #: prompt, so no shots).
    classifies = False
    #: Whether it chooses among an item's choices (records from a softmax over them).
    chooses = False

    def check(self, model: ResolvedModel) -> None:
        """Fail on a wrong local model name at once (the weights are found, not loaded)."""
        resolve_model(model.spec.name, model.hf.revision)

    def prints(self, key: str, name: str, revision: str | None) -> dict[str, str]:
        """The fingerprint of the weights ``name`` (at hub ``revision``) under ``key``."""
        return _fingerprint(key, resolve_model(name, revision))

    def model_prints(self, model: ResolvedModel) -> dict[str, str]:
        """The fingerprints of the model as a whole (no sweep): ``model``."""
        return self.prints("model", model.spec.name, model.hf.revision)

    def labels(self, c: Checkpoint, names: Mapping[str, str]) -> tuple[str, ...] | None:
        """The task labels of the outputs of checkpoint ``c`` through the label map
        ``names``, read from its config; None for a model whose outputs are not labels."""
        return None

    def scorer(
        self, model: ResolvedModel, c: Checkpoint
    ) -> LogLikelihoodBackend | ClassifierBackend | ChoiceBackend:
        """The backend that scores at checkpoint ``c``; a label map is refused for any
        model but a sequence classifier."""
        if model.label_map:
            raise ValueError(not_a_sequence_classifier(c.model))
        return self.load(model, c)

    def load(
        self, model: ResolvedModel, c: Checkpoint
    ) -> LogLikelihoodBackend | ClassifierBackend | ChoiceBackend:
        """The engine's backend of checkpoint ``c``, with the model's options whole."""
        from .hf import HFCausalLM

        return HFCausalLM(c.model, model.hf, revision=c.revision, batch_size=model.batch_size)

    def chat(self, model: ResolvedModel) -> GenerationBackend:
        """A chat model answering through its chat template, in process."""
        from .generator import LocalChat

        return LocalChat(model.spec.name, model.hf, batch_size=model.batch_size)


class _SequenceClassifier(ModelKind):
    # An off-the-shelf *ForSequenceClassification model: its outputs named in its
    # config's id2label, through --label-map where they are not task labels.
    classifies = True

    def labels(self, c: Checkpoint, names: Mapping[str, str]) -> tuple[str, ...] | None:
        from ..classifiers import task_labels_of
        from .hf_classifier import model_id2label

        where = (
            c.model if c.revision is None or Path(c.model).exists() else f"{c.model}@{c.revision}"
        )
        return task_labels_of(model_id2label(c.model, c.revision), names, where=where)

    def scorer(
        self, model: ResolvedModel, c: Checkpoint
    ) -> LogLikelihoodBackend | ClassifierBackend | ChoiceBackend:
        from ..classifiers import label_map_dict
        from .hf_classifier import HFSequenceClassifier

        return HFSequenceClassifier(
            c.model,
            model.hf,
            revision=c.revision,
            batch_size=model.batch_size,
            label_map=label_map_dict(model.label_map),
        )


class _ClassifierFolder(ModelKind):
    # A checkpoint folder of `nlieval train` with a pair head: its own files are its
    # identity (and a LoRA checkpoint's base model), and nothing is looked up by name.
    classifies = True

    def check(self, model: ResolvedModel) -> None:
        pass  # its folder is read when it loads: a missing file is one line then

    def prints(self, key: str, name: str, revision: str | None) -> dict[str, str]:
        return _classifier_prints(key, Path(name))

    def load(
        self, model: ResolvedModel, c: Checkpoint
    ) -> LogLikelihoodBackend | ClassifierBackend | ChoiceBackend:
        from .classifier import EncoderClassifier

        return EncoderClassifier(c.model, model.hf, batch_size=model.batch_size)


class _TrainFolder(ModelKind):
    # The output folder of `nlieval train`: a checkpoint folder per seed (run scores
    # each in turn, as a sweep of classifier folders).
    classifies = True

    def model_prints(self, model: ResolvedModel) -> dict[str, str]:
        return {
            k: v
            for p in map(Path, model.seeds)
            for k, v in _classifier_prints(f"model {p.name}", p).items()
        }


class _MultipleChoice(ModelKind):
    # A *ForMultipleChoice model, or a checkpoint folder of `nlieval train` with a
    # multiple-choice head (saved whole, so its files are found as a model's).
    chooses = True

    def load(
        self, model: ResolvedModel, c: Checkpoint
    ) -> LogLikelihoodBackend | ClassifierBackend | ChoiceBackend:
        from .multiple_choice import HFMultipleChoice

        return HFMultipleChoice(c.model, model.hf, revision=c.revision, batch_size=model.batch_size)


class _Server(ModelKind):
    # A model on an OpenAI-compatible server: checked by its first answer (its model
    # name), and with no fingerprint here (what a server holds cannot be hashed from
    # outside).
    def check(self, model: ResolvedModel) -> None:
        pass

    def model_prints(self, model: ResolvedModel) -> dict[str, str]:
        return {}

    def scorer(
        self, model: ResolvedModel, c: Checkpoint
    ) -> LogLikelihoodBackend | ClassifierBackend | ChoiceBackend:
        from .completions import CompletionsLM

        assert model.server is not None  # parse_model refuses a server without one
        return CompletionsLM(
            c.model, model.server, batch_size=model.batch_size, top_logprobs=model.top_logprobs
        )

    def chat(self, model: ResolvedModel) -> GenerationBackend:
        from .openai import OpenAIChat

        assert model.server is not None
        return OpenAIChat(model.spec.name, model.server)


class _VLLMCausalLM(ModelKind):
    # A causal language model run in process by vLLM (the only kind that engine runs).
    def check(self, model: ResolvedModel) -> None:
        from .vllm_engine import require_vllm

        require_vllm()
        super().check(model)

    def scorer(
        self, model: ResolvedModel, c: Checkpoint
    ) -> LogLikelihoodBackend | ClassifierBackend | ChoiceBackend:
        from .vllm_engine import VLLMCausalLM

        return VLLMCausalLM(c.model, model.vllm, model.hf, revision=c.revision)

    def chat(self, model: ResolvedModel) -> GenerationBackend:
        from .vllm_engine import VLLMChat

        return VLLMChat(model.spec.name, model.vllm, model.hf)


#: The object of each kind, the one table :class:`ResolvedModel` asks.
KINDS: dict[Kind, ModelKind] = {
    "causal-lm": ModelKind(),
    "sequence-classifier": _SequenceClassifier(),
    "classifier-folder": _ClassifierFolder(),
    "train-folder": _TrainFolder(),
    "multiple-choice": _MultipleChoice(),
    "server": _Server(),
}
#: vLLM's object for the one kind it runs (a causal language model).
VLLM_KIND: ModelKind = _VLLMCausalLM()


def _way(spec: ModelSpec, kind: Kind) -> ModelKind:
    # The engine runs the kind: vLLM runs causal language models only (resolve refuses
    # anything else for it), with its own scorer, chat and check.
    return VLLM_KIND if spec.engine == "vllm" else KINDS[kind]


@dataclass(frozen=True)
class ChatModel(NamesAModel):
    """The chat model of a command that only needs one (``generate``): the model string
    and the options of its engines, as flags.

    >>> ChatModel("m", EngineOptions(server=ServerOptions("http://h:8000/v1"))).spec
    ModelSpec(engine='server', name='m')
    """

    model: str = model_setting()
    engines: EngineOptions = options(EngineOptions)
