"""Model fingerprints cannot be fooled: an edit in place with the size and modification
time restored (``touch -r``), a cache of hashes kept from before (or edited), a converted
folder planted under the old marker, shards in a subfolder named by the index."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from nlieval.backends import file_hashes
from nlieval.backends.file_hashes import (
    conversion_holds,
    file_sha256,
    folder_fingerprint,
    indexed_shards,
    write_conversion_marker,
)
from nlieval.cli import main
from nlieval.ground import DataError

#: The fingerprint of a folder holding config.json = b'{"a": 1}' and model.safetensors =
#: b"weights", derived by hand (hashlib over "name\0sha256\n" per file, sorted by name):
#: run folders made before must keep their fingerprints for the same bytes.
KNOWN = "7b02161b547f5d9d54fb205586f292c0ce4964bff9878cc14fb7cb0256ca9e20"


@pytest.fixture(autouse=True)
def _short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # Files made by a test are hashed a moment later: a short window (and a sleep past
    # it) lets the cache keep them, as it keeps a model written minutes before a run.
    monkeypatch.setattr(file_hashes, "_RACY_NS", 50_000_000)


def _settle() -> None:
    time.sleep(0.1)  # past the racy window above: the hashes are kept


def _edit_in_place(path: Path) -> bytes:
    """Flip the last byte, keeping the size, the inode and (``touch -r``) the mtime."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    with path.open("r+b") as f:
        f.write(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
    )
    return bytes(data)


def test_the_fingerprint_of_the_same_bytes_is_unchanged(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b'{"a": 1}')
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "README.md").write_text("a model card")
    cache = tmp_path.parent / f"{tmp_path.name}-cache"
    assert folder_fingerprint(tmp_path) == KNOWN
    _settle()
    assert folder_fingerprint(tmp_path, cache) == KNOWN  # hashed, kept
    assert folder_fingerprint(tmp_path, cache) == KNOWN  # from the cache


def test_an_edit_in_place_with_the_mtime_restored_is_hashed_again(tmp_path: Path) -> None:
    f, cache = tmp_path / "w.safetensors", tmp_path / "cache"
    f.write_bytes(b"0123456789")
    _settle()
    assert file_sha256(f, cache) == hashlib.sha256(b"0123456789").hexdigest()
    assert json.loads((cache / "file-hashes.v2.json").read_text())  # kept
    new = _edit_in_place(f)
    assert file_sha256(f, cache) == hashlib.sha256(new).hexdigest()


def test_a_cache_kept_from_before_the_edit_does_not_vouch(tmp_path: Path) -> None:
    f, cache = tmp_path / "w.safetensors", tmp_path / "cache"
    f.write_bytes(b"0123456789")
    _settle()
    file_sha256(f, cache)
    saved = (cache / "file-hashes.v2.json").read_text()
    new = _edit_in_place(f)
    assert file_sha256(f, cache) == hashlib.sha256(new).hexdigest()
    # The cache restored (a backup, a copy from another machine), or its entry for this
    # file edited to the file's size, mtime, inode and device: the change time differs.
    entries = json.loads(saved)
    st = f.stat()
    forged = {
        k.rsplit("|", 5)[0]
        + f"|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns - 1}|{st.st_ino}|{st.st_dev}": v
        for k, v in entries.items()
    }
    for cached in (entries, forged):
        (cache / "file-hashes.v2.json").write_text(json.dumps(cached))
        assert file_sha256(f, cache) == hashlib.sha256(new).hexdigest()


def test_a_racy_file_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_hashes, "_RACY_NS", 3600 * 10**9)
    f, cache = tmp_path / "w.bin", tmp_path / "cache"
    f.write_bytes(b"abc")
    assert file_sha256(f, cache) == hashlib.sha256(b"abc").hexdigest()
    assert not (cache / "file-hashes.v2.json").exists()


def test_a_conversion_edited_under_its_marker_is_not_taken(
    tmp_path: Path, tiny_llama: Path
) -> None:
    conv, cache = tmp_path / "converted", tmp_path / "cache"
    shutil.copytree(tiny_llama, conv)
    _settle()
    write_conversion_marker(conv, "ab" * 32, cache)
    assert conversion_holds(conv, "ab" * 32, cache)
    # Other weights planted in place, under the marker of the real conversion.
    _edit_in_place(next(conv.glob("*.safetensors")))
    assert not conversion_holds(conv, "ab" * 32, cache)
    # Another model's folder moved in with the old marker copied over.
    other = tmp_path / "other"
    shutil.copytree(tiny_llama, other)
    shutil.copy2(conv / file_hashes.MARKER, other / file_hashes.MARKER)
    (other / "config.json").write_text(
        json.dumps({**json.loads((other / "config.json").read_text()), "rms_norm_eps": 0.5})
    )
    assert not conversion_holds(other, "ab" * 32, cache)


def _sharded(folder: Path) -> None:
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_bytes(b'{"a": 1}')
    index = {"metadata": {}, "weight_map": {"w1": "sub/a.safetensors", "w2": "sub/a.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    (folder / "sub" / "a.safetensors").write_bytes(b"shard a")


def test_shards_in_a_subfolder_named_by_the_index_are_in_the_fingerprint(
    tmp_path: Path,
) -> None:
    _sharded(tmp_path)
    entries = [
        ("config.json", b'{"a": 1}'),
        ("model.safetensors.index.json", (tmp_path / "model.safetensors.index.json").read_bytes()),
        ("sub/a.safetensors", b"shard a"),
    ]
    h = hashlib.sha256()
    for name, data in entries:
        h.update(f"{name}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    assert folder_fingerprint(tmp_path) == h.hexdigest()
    assert indexed_shards(tmp_path) == [("sub/a.safetensors", tmp_path / "sub" / "a.safetensors")]
    first = folder_fingerprint(tmp_path)
    (tmp_path / "sub" / "a.safetensors").write_bytes(b"shard b")  # another model's shard
    assert folder_fingerprint(tmp_path) != first


def test_a_shard_the_index_names_but_missing_is_one_line(tmp_path: Path) -> None:
    _sharded(tmp_path)
    (tmp_path / "sub" / "a.safetensors").unlink()
    with pytest.raises(DataError, match=r"model.safetensors.index.json: field 'weight_map': "):
        folder_fingerprint(tmp_path)
    (tmp_path / "model.safetensors.index.json").write_text("{not json")
    with pytest.raises(DataError, match="not a JSON index"):
        folder_fingerprint(tmp_path)


def _records(out: Path) -> list[str]:
    # By hand: bytes (the lines written before are compared for being left as they were).
    return (out / "records.jsonl").read_text(encoding="utf-8").splitlines()


def test_run_refuses_weights_edited_in_place_with_the_mtime_restored(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, out = tmp_path / "model", tmp_path / "out"
    shutil.copytree(tiny_llama, model)
    _settle()
    argv = ["run", "--model", str(model), "--task", "smoke", "--no-progress", "--out", str(out)]
    assert main([*argv, "--limit", "2"]) == 0
    before = _records(out)
    _edit_in_place(next(model.glob("*.safetensors")))
    capsys.readouterr()
    assert main([*argv, "--limit", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "model:" in err and "other contents" in err
    assert _records(out) == before
