"""A run folder's identity holds the model's weights by content: other weights under the
same path (a folder overwritten, a checkpoint replaced, a converted cache entry planted)
are refused on resume instead of sharing a metrics row with the first weights."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from nlieval.backends import ServerOptions, resolve, weights
from nlieval.backends.file_hashes import (
    conversion_holds,
    file_sha256,
    folder_fingerprint,
    write_conversion_marker,
)
from nlieval.backends.weights import (
    ModelError,
    hub_commit,
    local_hf_folder,
    model_fingerprint,
    resolve_model,
)
from nlieval.cli import main
from tests.helpers.engines import absent
from tests.helpers.tiny_models import tiny_model


def _records(out: Path) -> list[str]:
    # By hand: bytes (the lines written before are compared for being left as they were).
    return (out / "records.jsonl").read_text(encoding="utf-8").splitlines()


def test_weights_replaced_under_one_path_are_refused(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "model"
    shutil.copytree(tiny_llama, model)
    out = tmp_path / "out"
    argv = ["run", "--model", str(model), "--task", "smoke", "--no-progress", "--out", str(out)]
    assert main([*argv, "--limit", "2"]) == 0
    before = _records(out)
    saved = json.loads((out / "config.json").read_text())["fingerprints"]["model"]
    # Independently: the same hash over the same files, by name and content.
    h = hashlib.sha256()
    for p in sorted(model.iterdir()):
        if p.is_file() and p.suffix in (".json", ".safetensors", ".txt", ".model", ".jinja"):
            h.update(f"{p.name}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n".encode())
    assert saved == "files:" + h.hexdigest()

    # Other weights (another seed) written over the same folder.
    shutil.rmtree(model)
    tiny_model(model, "llama", seed=1)
    capsys.readouterr()
    assert main([*argv, "--limit", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "model:" in err and "other contents" in err
    assert _records(out) == before  # nothing scored by the new weights, nothing lost

    # Each invocation that wrote records says which weights made them.
    entries = [json.loads(x) for x in (out / "provenance.jsonl").read_text().splitlines()]
    assert [e["fingerprints"]["model"] for e in entries] == [saved]
    # Back to the first weights: the resume goes on.
    shutil.rmtree(model)
    shutil.copytree(tiny_llama, model)
    assert main([*argv, "--limit", "4"]) == 0
    assert _records(out)[:2] == before and len(_records(out)) == 4


def test_a_model_card_edit_keeps_the_identity(tmp_path: Path, tiny_llama: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(tiny_llama, model)
    first = folder_fingerprint(model)
    (model / "README.md").write_text("# a model card\n")
    assert folder_fingerprint(model) == first
    cfg = json.loads((model / "config.json").read_text())
    cfg["rms_norm_eps"] = 1e-3  # changes the numbers: changes the identity
    (model / "config.json").write_text(json.dumps(cfg))
    assert folder_fingerprint(model) != first


def test_file_hashes_are_kept_by_stat_and_redone_on_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from nlieval.backends import file_hashes

    monkeypatch.setattr(file_hashes, "_RACY_NS", 50_000_000)
    f = tmp_path / "w.bin"
    f.write_bytes(b"one")
    time.sleep(0.1)  # older than the racy window: its hash is kept
    cache = tmp_path / "cache"
    assert file_sha256(f, cache) == hashlib.sha256(b"one").hexdigest()
    assert (cache / "file-hashes.v2.json").is_file()
    f.write_bytes(b"two!")  # another size: another key
    assert file_sha256(f, cache) == hashlib.sha256(b"two!").hexdigest()
    (cache / "file-hashes.v2.json").write_text("{not json")  # a broken cache only costs a re-hash
    assert file_sha256(f, cache) == hashlib.sha256(b"two!").hexdigest()


def test_a_converted_folder_holds_only_what_its_marker_says(
    tmp_path: Path, tiny_llama: Path
) -> None:
    conv = tmp_path / "converted"
    shutil.copytree(tiny_llama, conv)
    assert not conversion_holds(conv, "ab" * 32)  # planted: no record of a conversion
    write_conversion_marker(conv, "ab" * 32)
    assert conversion_holds(conv, "ab" * 32)
    assert not conversion_holds(conv, "cd" * 32)  # converted from another GGUF
    weights = next(conv.glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of the weights
    weights.write_bytes(bytes(data))
    assert not conversion_holds(conv, "ab" * 32)


def test_checkpoints_and_train_folders_fingerprint_each_model(
    tmp_path: Path, tiny_llama: Path
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(tiny_llama, a)
    tiny_model(b, "llama", seed=1)
    prints = resolve(str(a), checkpoints=(str(a), str(b))).fingerprints()
    assert list(prints) == [f"model {a}", f"model {b}"]
    assert prints[f"model {a}"] == "files:" + folder_fingerprint(tiny_llama)
    assert prints[f"model {a}"] != prints[f"model {b}"]
    assert resolve("m", server=ServerOptions("http://h:1/v1")).fingerprints() == {}


def test_hub_commit_is_read_from_the_local_hub_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants

    sha = "1234567890abcdef1234567890abcdef12345678"
    repo = tmp_path / "models--org--model"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    (repo / "snapshots" / sha).mkdir(parents=True)
    (repo / "snapshots" / sha / "config.json").write_text("{}")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    assert hub_commit("org/model", None) == sha
    assert model_fingerprint(resolve_model("org/model")) == f"hub:org/model@{sha}"


@pytest.mark.models
def test_a_planted_conversion_of_the_packaged_model_is_converted_again(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        source = resolve_model("smollm2-135m")
    except ModelError as err:
        absent("the packaged models", "NLIEVAL_MODELS", f"{err}; run scripts/setup.sh")
    assert source.gguf_file is not None
    gguf = Path(source.path) / source.gguf_file
    expected = "gguf:" + hashlib.sha256(gguf.read_bytes()).hexdigest()
    converted = Path(local_hf_folder(source).path)  # the tests' one real conversion
    assert model_fingerprint(source) == expected
    # A cache of its own holding that conversion, its files hard links (no copy of the
    # weights): the planted file below replaces a link, never the shared conversion.
    cache = tmp_path / "cache"
    mine = cache / "models" / converted.name
    shutil.copytree(converted, mine, copy_function=os.link)
    monkeypatch.setenv("NLIEVAL_CACHE", str(cache))
    assert conversion_holds(mine, expected.removeprefix("gguf:"), cache)
    # Plant other weights under the cache entry's name: the config of another model.
    cfg = json.loads((mine / "config.json").read_text())
    cfg["rms_norm_eps"] = 0.5
    (mine / "config.json").unlink()
    (mine / "config.json").write_text(json.dumps(cfg))
    # The conversion itself is the one every packaged-model test runs on a fresh cache;
    # here it is counted, and stands in by linking the real conversion's files again.
    calls = []

    def convert(src: object, target: Path, sha: str) -> None:
        calls.append(sha)
        shutil.rmtree(target)
        shutil.copytree(converted, target, copy_function=os.link)

    monkeypatch.setattr(weights, "_convert_gguf", convert)
    with caplog.at_level(logging.WARNING):
        again = Path(local_hf_folder(source).path)
    assert again == mine and calls == [expected.removeprefix("gguf:")]
    assert "converting again" in caplog.text
    assert json.loads((again / "config.json").read_text())["rms_norm_eps"] != 0.5
    assert json.loads((converted / "config.json").read_text())["rms_norm_eps"] != 0.5
    # Converted again, the folder holds: the next load converts nothing.
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        local_hf_folder(source)
    assert "converting again" not in caplog.text and len(calls) == 1


def _replace_weights(model: Path, seed: int) -> None:
    shutil.rmtree(model)
    tiny_model(model, "llama", seed=seed)


@pytest.mark.parametrize("command", ["instruct", "generate"])
def test_chat_commands_refuse_other_weights_under_one_path(
    tmp_path: Path, tiny_llama: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "chat"
    shutil.copytree(tiny_llama, model)
    out = tmp_path / "out"
    labels = ["contrasting", "reasoning", "entailment", "neutral"]
    rows = [
        {"id": f"s{i}", "premise": f"We train {i}.", "hypothesis": "It works.", "label": lab}
        for i, lab in enumerate(labels * 2)
    ]
    (tmp_path / "sci.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = tmp_path / "sci.yaml"
    task.write_text(f"name: sci\npath: sci.jsonl\nlabels: [{', '.join(labels)}]\n")
    argv = [command, "--model", str(model), "--task", str(task), "--max-new-tokens", "4"]
    argv += ["--device", "cpu", "--no-progress", "--out", str(out)]
    argv += ["--shots", "0", "--runs", "1"] if command == "instruct" else ["--examples", "0"]
    main([*argv, "--limit", "2"])  # generate exits 1: a random model's answers do not parse
    before = _records(out)
    assert before
    _replace_weights(model, seed=1)
    capsys.readouterr()
    assert main([*argv, "--limit", "3"]) == 2
    err = capsys.readouterr().err.strip()  # one line: nothing loaded before the refusal
    assert len(err.splitlines()) == 1 and "model:" in err
    assert _records(out) == before


def test_generate_refuses_an_edited_data_file(
    tmp_path: Path, tiny_llama: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"id": f"g{i}", "premise": f"A man walks {i}.", "hypothesis": "He moves.", "label": lab}
        for i, lab in enumerate(["entailment", "neutral", "contradiction"] * 2)
    ]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = tmp_path / "t.yaml"
    task.write_text("name: g\npath: d.jsonl\nlabels: [entailment, neutral, contradiction]\n")
    out = tmp_path / "out"
    argv = ["generate", "--model", str(tiny_llama), "--task", str(task), "--examples", "0"]
    argv += ["--max-new-tokens", "4", "--device", "cpu", "--no-progress", "--out", str(out)]
    main([*argv, "--limit", "2"])
    before = _records(out)
    rows[4]["premise"] = "An edited premise."
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert main([*argv, "--limit", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "data g" in err
    assert _records(out) == before


def test_train_refuses_another_encoder_under_one_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.tiny_bert import make_tiny_bert

    words = ["a", "man", "walks", "moves", "the", "dog"]
    enc = make_tiny_bert(tmp_path / "enc", words)
    out = tmp_path / "out"
    argv = ["train", "--model", str(enc), "--task", "smoke", "--epochs", "1", "--seeds", "0,"]
    argv += ["--max-length", "16", "--device", "cpu", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    before = _records(out)
    assert before
    cfg = json.loads((Path(enc) / "config.json").read_text())
    cfg["layer_norm_eps"] = 1e-3  # another encoder under the same path
    (Path(enc) / "config.json").write_text(json.dumps(cfg))
    capsys.readouterr()
    assert main([*argv[:8], "0,1", *argv[9:]]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "model:" in err
    assert _records(out) == before
