"""Fingerprints and LoRA bases that must not be fooled (issue 34, parts 4 and 5).

Each case makes a run folder (or a LoRA checkpoint) with a first invocation, then changes
the model's weights in a way that keeps what a quick look sees: the size and modification
time restored after an edit in place (``touch -r``), the file-hash cache put back as it
was before the edit, a shard in a subfolder named by ``model.safetensors.index.json``
replaced, a LoRA checkpoint's base replaced (used, or trained on again by a resume).
The right answer is one line saying what changed; exit 0 is a silent wrong result.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import time
from pathlib import Path

from reliability_kit import Case, invoke, nli_rows, task

_n = itertools.count()


def _fresh(d: Path, stem: str) -> Path:
    folder = d / f"trust-{stem}-{next(_n)}"
    folder.mkdir()
    return folder


def _first(argv: list[str], cwd: Path) -> None:
    rc, err = invoke(argv, cwd)
    assert rc == 0 and "nlieval: error" not in err, err


def _copy_model(model: str, f: Path, name: str = "model") -> Path:
    dst = f / name
    shutil.copytree(model, dst)
    time.sleep(2.1)  # older than the hash cache's racy window: its hashes are kept
    return dst


def _edit_in_place(path: Path) -> None:
    """Other bytes, same size, same inode, the modification time put back (touch -r)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[-64:] = bytes(b ^ 0x55 for b in data[-64:])
    with path.open("r+b") as fh:
        fh.write(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _cache() -> Path:
    from nlieval.backends.weights import cache_dir

    return cache_dir() / "file-hashes.v2.json"


def _retrained(base: Path) -> None:
    from tests.helpers.tiny_models import tiny_model

    shutil.rmtree(base)
    tiny_model(base, "llama", seed=11)


def cases(model: str, bert: str) -> list[Case]:
    def run_argv(f: Path, m: str, *extra: str) -> list[str]:
        return [
            "run",
            "--model",
            m,
            "--task",
            "smoke",
            "--no-progress",
            "--out",
            str(f / "o"),
            *extra,
        ]

    def touched(d: Path) -> list[str]:
        f = _fresh(d, "touch")
        m = _copy_model(model, f)
        _first([*run_argv(f, str(m)), "--limit", "2"], d)
        _edit_in_place(next(m.glob("*.safetensors")))
        return [*run_argv(f, str(m)), "--limit", "4"]

    def cache_restored(d: Path) -> list[str]:
        f = _fresh(d, "cache")
        m = _copy_model(model, f)
        _first([*run_argv(f, str(m)), "--limit", "2"], d)
        saved = _cache().read_text() if _cache().is_file() else "{}"
        _edit_in_place(next(m.glob("*.safetensors")))
        _cache().write_text(saved)  # the cache as it was before the edit
        return [*run_argv(f, str(m)), "--limit", "4"]

    def shard_in_subfolder(d: Path) -> list[str]:
        f = _fresh(d, "shard")
        m = _copy_model(model, f)
        weights = m / "model.safetensors"
        (m / "shards").mkdir()
        weights.rename(m / "shards" / "model-00001-of-00001.safetensors")
        from safetensors import safe_open

        with safe_open(str(m / "shards" / "model-00001-of-00001.safetensors"), "np") as fh:
            names = list(fh.keys())
        index = {
            "metadata": {},
            "weight_map": {n: "shards/model-00001-of-00001.safetensors" for n in names},
        }
        (m / "model.safetensors.index.json").write_text(json.dumps(index))
        _first([*run_argv(f, str(m)), "--limit", "2"], d)
        other = _fresh(d, "shard-other")
        from tests.helpers.tiny_models import tiny_model

        tiny_model(other / "m", "llama", seed=3)
        shutil.copy(
            other / "m" / "model.safetensors", m / "shards" / "model-00001-of-00001.safetensors"
        )
        return [*run_argv(f, str(m)), "--limit", "4"]

    def lora_argv(base: str, f: Path, seeds: str = "0,") -> list[str]:
        t = task(f, nli_rows(12), "pool: t.jsonl\n")
        return ["train", "--model", base, "--task", t, "--lora", "2,4", "--epochs", "1",
                "--max-length", "16", "--seeds", seeds, "--device", "cpu", "--no-progress",
                "--no-test", "--out", str(f / "lora")]  # fmt: skip

    def lora_base_replaced(d: Path) -> list[str]:
        f = _fresh(d, "lorabase")
        base = _copy_model(model, f, "base")
        _first(lora_argv(str(base), f), d)
        _retrained(base)
        return ["run", "--model", str(f / "lora" / "seed0"), "--task", "smoke", "--limit", "4",
                "--no-progress", "--out", str(f / "scored")]  # fmt: skip

    def lora_resumed(d: Path) -> list[str]:
        f = _fresh(d, "lorares")
        base = _copy_model(model, f, "base")
        _first(lora_argv(str(base), f), d)
        _retrained(base)
        return lora_argv(str(base), f, seeds="0,1")

    return [
        Case("run", "resume: weights edited in place, touch -r", touched),
        Case("run", "resume: hash cache from before the edit", cache_restored),
        Case("run", "resume: a shard in a subfolder replaced", shard_in_subfolder),
        Case("run", "LoRA checkpoint: base replaced", lora_base_replaced),
        Case("train", "resume --lora: base replaced", lora_resumed),
    ]
