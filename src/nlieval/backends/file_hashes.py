"""Content hashes of model files: what a model's numbers depend on (see
:func:`nlieval.backends.weights.model_fingerprint`).

Hashing a 16 GB folder takes tens of seconds, so each file's hash is kept in the cache
folder under its path, size, modification and change times, inode and device. The change
time (``st_ctime``) is what ``touch -r`` cannot set back: any write, rename or ``utime``
moves it, so an edit in place with the size and modification time restored is hashed
again. An entry of the cache only saves time: it is used when its key matches the file's
``stat`` exactly and the bytes at both ends of the file (its first and last 64 KiB, where
safetensors and GGUF keep the header that names every tensor) are still those that were
hashed; otherwise the file is hashed again. So an old, copied or hand-edited cache cannot
make a changed file pass for the old one, and an entry copied onto another file, with
the key rewritten to that file's ``stat``, is caught by the other file's own header.
Someone who forges both, for a file that differs only in its middle, is out of reach of
any cache (they can write the weights, or nlieval itself, just as well).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import time
from pathlib import Path

from ..ground import DataError, FolderError, atomic_write, make_folder, read_json

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

#: Entries of this shape (hash and check of the ends) live in a file of their own, so
#: that an older nlieval sharing the cache folder neither reads them as bare hashes nor
#: is read: its ``file-hashes.json`` is left as it is.
_HASH_CACHE = "file-hashes.v2.json"
_CHUNK = 1 << 22
#: Bytes read at each end of a file to check a cache entry before it is used.
_SAMPLE = 1 << 16
#: A cache entry: the file's SHA-256, then the SHA-256 of its size and ends (_ends).
_ENTRY = re.compile(r"[0-9a-f]{64} [0-9a-f]{64}")
#: A file changed this recently may change again within the same tick of the clock that
#: stamps it, leaving its ``stat`` as it was: its hash is not kept (git's "racily clean").
_RACY_NS = 2_000_000_000
#: The size bound of a sharded checkpoint's index (``*.index.json``): a 400B model's
#: weight map is under 2 MB.
_INDEX_BYTES = 64 << 20


def file_sha256(path: str | Path, cache: Path | None = None) -> str:
    """The SHA-256 of a file's bytes, kept in the folder ``cache`` (None: not kept) under
    its path and ``stat`` so that a resume does not hash gigabytes again.

    >>> p = Path(run_dir) / "w.bin"; _ = p.write_bytes(b"abc")
    >>> file_sha256(p, Path(run_dir)) == hashlib.sha256(b"abc").hexdigest()
    True
    """
    p = Path(path)
    if cache is None:
        return _sha256(p)
    key = _stat_key(p)
    cache_path = cache / _HASH_CACHE
    known = _read_cache(cache_path)
    ends = _ends(p)
    if key in known:
        digest, _, checked = known[key].partition(" ")
        if checked == ends:
            return digest
        log.debug("%s: its cached hash is of other bytes; hashing it again", p)
    digest = _sha256(p)
    if _stat_key(p) != key or time.time_ns() - p.stat().st_ctime_ns < _RACY_NS:
        return digest  # changed while read, or may still change unseen: not kept
    known = _read_cache(cache_path)  # another process may have added entries meanwhile
    known[key] = f"{digest} {ends}"
    _write_cache(cache_path, known)
    return digest


def _ends(p: Path) -> str:
    """SHA-256 of a file's size and its first and last :data:`_SAMPLE` bytes."""
    with p.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        h = hashlib.sha256(f"{size}\n".encode())
        h.update(f.read(_SAMPLE))
        if size > _SAMPLE:
            f.seek(max(_SAMPLE, size - _SAMPLE))
            h.update(f.read(_SAMPLE))
    return h.hexdigest()


def _stat_key(p: Path) -> str:
    st = p.stat()
    fields = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    return "|".join(map(str, (p.resolve(), *fields)))


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
    # An entry of another shape (an older nlieval's bare hash, a hand edit) is no entry.
    return {str(k): v for k, v in data.items() if isinstance(v, str) and _ENTRY.fullmatch(v)}


def _write_cache(path: Path, known: dict[str, str]) -> None:
    try:
        make_folder(path.parent)  # the cache folder (it may be a link)
        atomic_write(path, json.dumps(known, sort_keys=True), root=path.parent)
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


def indexed_shards(folder: str | Path) -> list[tuple[str, Path]]:
    """The weight files that a sharded checkpoint's index (``*.index.json``, its
    ``weight_map``) names outside the folder's top level, as (name in the index, path),
    sorted: a load reads them, so a fingerprint must hold them. A shard named but not a
    regular file, or an index that is not JSON, is a :class:`~nlieval.ground.DataError`.

    >>> indexed_shards(tiny_lm)  # one file of weights, no index
    []
    """
    top = Path(folder)
    out: dict[str, Path] = {}
    for index in model_files(top):
        if not index.name.endswith(".index.json"):
            continue
        try:
            data = read_json(index, _INDEX_BYTES)  # bounded in size and depth
        except DataError as err:
            raise DataError(index, None, None, f"not a JSON index of shards: {err}") from None
        names = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(names, dict):
            continue  # not an index of weights: its own bytes are in the fingerprint
        for name in {v for v in names.values() if isinstance(v, str)}:
            if Path(name).name == name:
                continue  # a top-level file: among model_files already
            path = top / name  # where the loader looks (os.path.join of folder and name)
            try:
                regular = stat.S_ISREG(path.stat().st_mode)
            except OSError:
                regular = False
            if not regular:
                raise DataError(index, None, "weight_map", f"names {name!r}: not a file")
            out[name] = path
    return sorted(out.items())


def folder_fingerprint(folder: str | Path, cache: Path | None = None) -> str:
    """SHA-256 over the names and content hashes of a model folder's :func:`model_files`,
    then of the shards its index names in subfolders (:func:`indexed_shards`) (``cache``
    as for :func:`file_sha256`); a folder without model files is a ValueError.

    >>> len(folder_fingerprint(tiny_lm))
    64
    """
    files = [(p.name, p) for p in model_files(folder)]
    if not files:
        raise ValueError(f"{folder}: no model files (config, weights, tokenizer) to read")
    # Shards come after the top-level files, so that a folder without any keeps the
    # fingerprint it always had.
    h = hashlib.sha256()
    for name, p in [*files, *indexed_shards(folder)]:
        h.update(f"{name}\0{file_sha256(p, cache)}\n".encode())
    return h.hexdigest()


def write_conversion_marker(folder: Path, source_sha256: str, cache: Path | None = None) -> None:
    """Record in a freshly converted folder what it was converted from and what it holds."""
    marker = {"source_sha256": source_sha256, "folder_sha256": folder_fingerprint(folder, cache)}
    atomic_write(folder / MARKER, json.dumps(marker, indent=2) + "\n", root=folder)


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
