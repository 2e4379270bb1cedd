"""Content hashes of model files: what a model's numbers depend on (see
:func:`nlieval.backends.weights.model_fingerprint`).

Hashing a 16 GB folder takes tens of seconds, so each file's hash is kept in the cache
folder under its path, size, modification time and inode: an edit that keeps all four
(deliberately) goes unseen, which is the same trust we place in the cache itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import stat
from pathlib import Path

from ..ground import FolderError, atomic_write, read_json

log = logging.getLogger(__name__)

#: Files of a model folder that a load reads: what its numbers can depend on. READMEs,
#: licences, images and training logs are left out, so editing a model card keeps identity.
MODEL_FILE_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".gguf",
    ".json",
    ".model",
    ".txt",
    ".jinja",
    ".py",
    ".tiktoken",
    ".vocab",
)

#: Files beside the weights that are not the model: nlieval's own bookkeeping.
NOT_MODEL_FILES = frozenset({"trainer_state.json", "training_args.bin", "marker.json"})

#: Written inside a converted GGUF folder: the source's hash and the folder's own.
MARKER = "nlieval-conversion.json"

_HASH_CACHE = "file-hashes.json"
_CHUNK = 1 << 22


def file_sha256(path: str | Path, cache: Path | None = None) -> str:
    """The SHA-256 of a file's bytes, kept in the folder ``cache`` (None: not kept) under
    its path and ``stat`` so that a resume does not hash gigabytes again.

    >>> p = Path(run_dir) / "w.bin"; _ = p.write_bytes(b"abc")
    >>> file_sha256(p, Path(run_dir)) == hashlib.sha256(b"abc").hexdigest()
    True
    """
    p = Path(path)
    st = p.stat()
    key = f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_dev}"
    if cache is None:
        return _sha256(p)
    cache_path = cache / _HASH_CACHE
    known = _read_cache(cache_path)
    if key in known:
        return known[key]
    digest = _sha256(p)
    known = _read_cache(cache_path)  # another process may have added entries meanwhile
    known[key] = digest
    _write_cache(cache_path, known)
    return digest


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with p.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _read_cache(path: Path) -> dict[str, str]:
    try:
        data = read_json(path)  # bounded; a DataError is a ValueError
    except (OSError, ValueError):
        return {}  # no cache, or a broken one: hashing again is always right
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def _write_cache(path: Path, known: dict[str, str]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(known, sort_keys=True))
    except (OSError, FolderError) as err:  # a read-only cache only costs a re-hash next time
        log.debug("cannot keep file hashes in %s: %s", path, err)


def model_files(folder: str | Path) -> list[Path]:
    """The files of a model folder that a load reads (see :data:`MODEL_FILE_SUFFIXES`),
    sorted; subfolders are other models (checkpoints) or not read.

    >>> [p.name for p in model_files(tiny_lm)][:3]
    ['chat_template.jinja', 'config.json', 'generation_config.json']
    """
    out = []
    for p in sorted(Path(folder).iterdir()):
        try:
            mode = p.stat().st_mode
        except OSError:
            continue  # a dangling link: no load reads it either
        if (
            stat.S_ISREG(mode)
            and p.suffix in MODEL_FILE_SUFFIXES
            and p.name not in NOT_MODEL_FILES
            and p.name != MARKER
        ):
            out.append(p)
    return out


def folder_fingerprint(folder: str | Path, cache: Path | None = None) -> str:
    """SHA-256 over the names and content hashes of a model folder's :func:`model_files`
    (``cache`` as for :func:`file_sha256`); a folder without any is a ValueError.

    >>> len(folder_fingerprint(tiny_lm))
    64
    """
    files = model_files(folder)
    if not files:
        raise ValueError(f"{folder}: no model files (config, weights, tokenizer) to read")
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.name}\0{file_sha256(p, cache)}\n".encode())
    return h.hexdigest()


def write_conversion_marker(folder: Path, source_sha256: str, cache: Path | None = None) -> None:
    """Record in a freshly converted folder what it was converted from and what it holds."""
    marker = {"source_sha256": source_sha256, "folder_sha256": folder_fingerprint(folder, cache)}
    (folder / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def conversion_holds(folder: Path, source_sha256: str, cache: Path | None = None) -> bool:
    """True when a converted folder's marker names this source and its files are still
    the ones converted; a folder planted in the cache (no marker, another source, other
    weights) is False, and the caller converts again."""
    try:
        marker = read_json(folder / MARKER)
    except (OSError, ValueError):
        return False
    if not isinstance(marker, dict) or marker.get("source_sha256") != source_sha256:
        return False
    try:
        return marker.get("folder_sha256") == folder_fingerprint(folder, cache)
    except (OSError, ValueError):
        return False
