"""Off-the-shelf NLI classifiers: any Hugging Face ``AutoModelForSequenceClassification``.

A model folder or hub id is such a classifier when its ``config.json`` lists an
architecture ending in ``ForSequenceClassification`` (``RobertaForSequenceClassification``,
``BertForSequenceClassification``, ``LlamaForSequenceClassification``...; see
:func:`is_sequence_classifier`). Its outputs are named by ``config.id2label``; each name
becomes a task label (:func:`nlieval.classifiers.task_labels_of`):

- by name, case-insensitive, in the common spellings: ``ENTAILMENT``, ``Entailment``,
  ``entailment``, ``e``; ``not_entailment``, ``non-entailment``, ``NonEntailment`` for
  2-way models (the spellings :meth:`nlieval.types.Label.parse` reads);
- or through a label map (``--label-map LABEL_0=entailment,LABEL_1=neutral,...``), whose
  names are the model's own (exact, else case-insensitive, else the output's index).

A model output that becomes no task label is refused with one line naming it. Several
outputs may become one task label (their probabilities add up), and on a 2-way
entailment / non-entailment task (HANS) a 3-way model's neutral and contradiction both
count as non-entailment: p(non-entailment) = p(neutral) + p(contradiction), the sum of
the softmax probabilities (:func:`nlieval.classifiers.label_mapping`).

:class:`HFSequenceClassifier` is the :class:`~nlieval.backends.base.ClassifierBackend`:
log-softmax over the model's outputs, in the model's order, named by task label; the
records are made by :func:`nlieval.backends.classifier.classify_records`, the path of
every classifier.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..classifiers import ClassifierError, task_labels_of
from ..ground import MAX_JSON_BYTES, DataError, parse_json, read_small_text
from .finite import check_scores
from .options import HFOptions
from .placement import input_device, pick_placement
from .weights import ALIASES, ModelError, load_tokenizer, refuse_new_weights, resolve_model

log = logging.getLogger(__name__)

#: The end of an architecture name that ``AutoModelForSequenceClassification`` loads.
ARCHITECTURE_SUFFIX = "ForSequenceClassification"

#: Encoders whose position ids start after the padding index (RoBERTa's scheme): their
#: ``max_position_embeddings`` counts ``pad_token_id + 1`` positions no token can use.
_OFFSET_POSITIONS = frozenset(
    {
        "roberta",
        "roberta-prelayernorm",
        "xlm-roberta",
        "xlm-roberta-xl",
        "camembert",
        "data2vec-text",
        "longformer",
        "mpnet",
        "ibert",
    }
)

#: Tokenizers without a maximum say ``model_max_length`` = 1e30; below this it is real.
_NO_LIMIT = 1_000_000


def config_json(name: str, revision: str | None = None) -> dict[str, Any] | None:
    """The ``config.json`` of a transformers model folder or hub id (from the local hub
    cache, else the hub), or None: no such file (an alias, a ``.gguf``, no folder, the
    hub unreachable), or not a JSON object.

    >>> config_json("/no/such/folder") is None
    True
    """
    if name in ALIASES or name.endswith(".gguf"):
        return None
    path = Path(name).expanduser()
    if path.is_dir():
        file = path / "config.json"
        if not file.is_file():
            return None
        try:
            text = read_small_text(file, MAX_JSON_BYTES)
        except DataError:
            return None  # not a regular file, too large, not UTF-8: the load says why
    elif path.exists() or name.startswith((".", "/", "~")) or name.count("/") != 1:
        return None
    else:
        try:
            from huggingface_hub import hf_hub_download, try_to_load_from_cache

            cached = try_to_load_from_cache(name, "config.json", revision=revision)
            if not isinstance(cached, str):
                cached = hf_hub_download(name, "config.json", revision=revision)
            text = read_small_text(cached, MAX_JSON_BYTES)
        except Exception:  # noqa: BLE001 (offline, gated, missing: the load says why)
            return None
    try:
        d = parse_json(text, name)
    except DataError:
        return None
    return d if isinstance(d, dict) else None


def is_sequence_classifier(name: str, revision: str | None = None) -> bool:
    """True when ``name`` (a folder or hub id) is a transformers sequence-classification
    model: its ``config.json`` lists an architecture ending in ``ForSequenceClassification``.

    >>> is_sequence_classifier("/no/such/folder"), is_sequence_classifier(tiny_encoder)
    (False, False)
    """
    config = config_json(name, revision)
    arch = config.get("architectures") if config else None
    return isinstance(arch, list) and any(str(a).endswith(ARCHITECTURE_SUFFIX) for a in arch)


def check_id2label(name: str, revision: str | None = None) -> None:
    """Refuse, in one line naming the file and field, a ``config.json`` whose
    ``id2label`` is not an object of output index -> label name (a list, numbers as
    names...), which transformers fails on deep inside. A config that cannot be read is
    left to the load, which says why.

    >>> import json, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "config.json").write_text(json.dumps({"id2label": ["e", "c"]}))
    >>> check_id2label(str(folder))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.ground.errors.DataError: .../config.json: field 'id2label': must map each output ...
    """
    config = config_json(name, revision)
    raw = config.get("id2label") if config else None
    if raw is None:
        return
    ok = isinstance(raw, dict) and all(
        isinstance(k, str) and k.strip().isdigit() and isinstance(v, str) for k, v in raw.items()
    )
    if not ok:
        where = Path(name) / "config.json" if Path(name).is_dir() else f"{name} config.json"
        shown = json.dumps(raw)
        raise DataError(
            where,
            None,
            "id2label",
            'must map each output index to its label name ({"0": "entailment", ...}), got '
            f"{shown if len(shown) <= 80 else shown[:77] + '...'}",
        )


def model_id2label(name: str, revision: str | None = None) -> dict[int, str]:
    """A sequence classifier's ``id2label`` as transformers reads its config (no weights
    are loaded). A config that cannot be read is a one-line
    :class:`~nlieval.backends.weights.ModelError`.

    >>> model_id2label("/no/such/folder")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.backends.weights.ModelError: cannot read the config of /no/such/folder: ...
    """
    from transformers import AutoConfig

    check_id2label(name, revision)
    try:
        config = AutoConfig.from_pretrained(name, revision=revision)
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"cannot read the config of {name}: {first}") from None
    return {int(k): str(v) for k, v in config.id2label.items()}


def _shapes_unlike_config(folder: str) -> str | None:
    """The first head tensor of a local folder's safetensors weights whose number of
    outputs is not that of its ``config.json`` (``classifier.bias: [2], the config
    [3]``), read from the files' headers and a weightless copy of the model; None when
    they agree, or when it cannot be told (no local safetensors, names that differ).
    Found before loading, so that transformers' report of the mismatch is never
    printed."""
    import torch
    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForSequenceClassification

    files = sorted(Path(folder).glob("*.safetensors")) if Path(folder).is_dir() else []
    if not files:
        return None
    try:
        auto: Any = AutoModelForSequenceClassification  # from_config is unannotated
        config = AutoConfig.from_pretrained(folder)
        with torch.device("meta"):
            skeleton = auto.from_config(config)
        # The head's tensors only (their first size is the number of labels): the body
        # of a quantized checkpoint is stored in other shapes than the config's.
        n = int(config.num_labels)
        expected = {k: list(v.shape) for k, v in skeleton.state_dict().items()}
        head = {k: v for k, v in expected.items() if v and v[0] == n}
        for file in files:
            with safe_open(str(file), framework="pt") as f:
                for key in f.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                    shape = list(f.get_slice(key).get_shape())
                    if key in head and shape and shape[0] != n:
                        return f"{key}: {shape}, the config {head[key]}"
    except Exception:  # noqa: BLE001 (a model it cannot tell about: the load says why)
        return None
    return None


def max_pair_length(tokenizer: Any, config: Any) -> int:
    """The longest input the model takes, in tokens: the tokenizer's ``model_max_length``
    and the model's position embeddings (less RoBERTa's offset), whichever is smaller;
    512 when neither says.

    >>> from types import SimpleNamespace as NS
    >>> max_pair_length(NS(model_max_length=10**30),
    ...                 NS(max_position_embeddings=514, model_type="roberta", pad_token_id=1))
    512
    """
    limits: list[int] = []
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < _NO_LIMIT:
        limits.append(tok_max)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        pad = getattr(config, "pad_token_id", None)
        offset = 0
        if getattr(config, "model_type", "") in _OFFSET_POSITIONS:
            offset = (pad if isinstance(pad, int) else 1) + 1
        limits.append(positions - offset)
    return min(limits) if limits else 512


# --------------------------------------------------------------------------- the backend


class HFSequenceClassifier:
    """A transformers sequence-classification model as a
    :class:`~nlieval.backends.base.ClassifierBackend`.

    ``labels`` are the task labels of the model's outputs, in the model's order (see
    :func:`task_labels_of`); ``model_labels`` its own names. :meth:`classify` returns the
    log-softmax of the logits. Each pair is the tokenizer's own pair encoding of
    (premise, hypothesis), cut longest-sentence first to :func:`max_pair_length`. Pads
    are the model's ``pad_token_id`` (a decoder classifier reads the last token that is
    not one); a model without one is run one pair at a time. Results do not depend on
    ``batch_size`` (beyond float rounding).

    >>> from transformers import AutoTokenizer, BertForSequenceClassification
    >>> id2label = {0: "contradiction", 1: "entailment", 2: "neutral"}  # any order
    >>> BertForSequenceClassification.from_pretrained(tiny_encoder, id2label=id2label
    ...     ).save_pretrained(run_dir)
    >>> _ = AutoTokenizer.from_pretrained(tiny_encoder).save_pretrained(run_dir)
    >>> clf = HFSequenceClassifier(run_dir, HFOptions(device="cpu"))
    >>> clf.labels
    ('contradiction', 'entailment', 'neutral')
    >>> import math
    >>> [round(sum(map(math.exp, row)), 6) for row in clf.classify([("A man.", "He.")])]
    [1.0]
    """

    name: str
    labels: tuple[str, ...]

    def __init__(
        self,
        model: str,
        options: HFOptions | None = None,
        *,
        revision: str | None = None,
        batch_size: int | str = "auto",
        label_map: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> None:
        """The classifier ``model`` run with the engine's ``options`` whole (their
        defaults are :class:`~nlieval.backends.options.HFOptions`'); ``revision`` (a
        checkpoint's) overrides theirs; ``batch_size`` ``auto`` is
        :data:`~nlieval.backends.classifier.AUTO_BATCH` pairs per forward pass."""
        import torch
        from transformers import AutoModelForSequenceClassification

        from .classifier import AUTO_BATCH

        options = options or HFOptions()
        batch_size = batch_size if isinstance(batch_size, int) else AUTO_BATCH
        if batch_size < 1:
            raise ClassifierError(f"batch_size must be positive, got {batch_size}")
        source = resolve_model(model, revision or options.revision)
        device, torch_dtype = pick_placement(options.device, options.dtype)
        spread, self._offload = options.spread_kwargs()
        kwargs: dict[str, Any] = {"dtype": torch_dtype, **spread}
        if source.revision:
            kwargs["revision"] = source.revision
        check_id2label(source.path, source.revision)
        wrong = _shapes_unlike_config(source.path)
        if wrong is not None:
            n = len(model_id2label(source.path, source.revision))
            raise ModelError(
                f"cannot load classifier {source.name!r}: its weights do not fit its "
                f"config.json, whose id2label names {n} labels: {wrong}; a head with "
                "another number of outputs, or a config of another model"
            )
        self.tokenizer: Any = load_tokenizer(source.path, source.name, revision=source.revision)
        try:
            self.model: Any
            self.model, info = AutoModelForSequenceClassification.from_pretrained(
                source.path, output_loading_info=True, **kwargs
            )
        except (OSError, ValueError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else ""
            raise ModelError(f"cannot load classifier {source.name!r}: {first}") from None
        except RuntimeError as err:
            if "mismatch" not in str(err):
                raise
            # transformers refuses weights of other shapes than the config's (after
            # printing a report): for a classifier, a head of another size than id2label.
            n = len(model_id2label(source.path, source.revision))
            raise ModelError(
                f"cannot load classifier {source.name!r}: its weights do not fit its "
                f"config.json, whose id2label names {n} labels (the outputs of its head): "
                "a head with another number of outputs, or a config of another model"
            ) from None
        refuse_new_weights(info, source.path, "sequence classifier")
        if not spread:
            self.model.to(torch.device(device))
        self.model.eval()
        self.name = name or source.name
        config = self.model.config
        id2label = {int(k): str(v) for k, v in config.id2label.items()}
        self.model_labels = tuple(id2label[i] for i in sorted(id2label))
        self.labels = task_labels_of(id2label, label_map, where=self.name)
        self.batch_size = batch_size
        self.max_length = max_pair_length(self.tokenizer, config)
        pad = config.get_text_config().pad_token_id
        if pad is not None and self.tokenizer.pad_token_id != pad:
            # The model finds each row's last token by this id: padding with another one
            # would make a row's answer depend on its batch.
            self.tokenizer.pad_token = self.tokenizer.convert_ids_to_tokens(int(pad))
        #: Without a pad id the model cannot tell padding from text: one pair per pass.
        self.one_at_a_time = pad is None
        if self.one_at_a_time:
            log.info("%s has no pad_token_id: classifying one pair per forward pass", self.name)
        params = inspect.signature(self.model.forward).parameters
        self._takes_token_types = "token_type_ids" in params

    def classify(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        """Per pair (premise, hypothesis), the log-probability of each of :attr:`labels`;
        a NaN or an infinity is refused (:class:`~nlieval.backends.finite.NonFiniteScore`)."""
        import torch

        from ..classifiers import encode_pairs

        pairs = list(pairs)
        # Similar lengths batched together waste less on padding; results go back in order.
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        size = 1 if self.one_at_a_time else self.batch_size
        device = input_device(self.model)
        out: list[list[float]] = [[] for _ in pairs]
        with torch.no_grad():
            for start in range(0, len(order), size):
                idx = order[start : start + size]
                enc = encode_pairs(
                    self.tokenizer, [pairs[i] for i in idx], max_length=self.max_length
                )
                inputs = {
                    k: v.to(device)
                    for k, v in enc.items()
                    if k != "token_type_ids" or self._takes_token_types
                }
                logits = self.model(**inputs).logits
                logp = torch.log_softmax(logits.float(), dim=-1).cpu()
                for row, i in enumerate(idx):
                    out[i] = logp[row].tolist()
        check_scores(out, self.name, "log-probability")
        return out
