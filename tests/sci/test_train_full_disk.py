"""A disk that fills while ``train`` saves a checkpoint (safetensors): one line naming the
seed's folder, the records written before are kept, and the same command resumes once
space is freed."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from nlieval.runs import RunError  # noqa: E402
from nlieval.sci.train import train  # noqa: E402
from tests.helpers.records import saved_rows
from tests.sci.test_train import _config, syn, tiny_bert  # noqa: E402, F401

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _full_disk_for(name: str, as_oserror: bool) -> Any:
    import safetensors.torch
    from safetensors import SafetensorError

    real = safetensors.torch.serialize_file

    def serialize(tensors: Any, filename: Any, metadata: Any = None) -> None:
        if f".{name}." not in str(filename):  # the temporary folder of this seed's save
            return real(tensors, filename, metadata=metadata)
        if as_oserror:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        # What safetensors raises when the disk is full (its Rust I/O error as text).
        raise SafetensorError(
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No '
            'space left on device" })'
        )

    return serialize


def _records(out: Path) -> list[dict[str, Any]]:
    return saved_rows(out)


@pytest.mark.parametrize("as_oserror", [False, True])
def test_a_full_disk_while_saving_a_seed_is_one_line_and_resumes(
    tiny_bert: Path,  # noqa: F811
    syn: dict[str, str],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    as_oserror: bool,
) -> None:
    import safetensors.torch

    config = _config(tiny_bert, syn, tmp_path, epochs=1, limit=12, seeds=(0, 1))
    monkeypatch.setattr(safetensors.torch, "serialize_file", _full_disk_for("seed1", as_oserror))
    with pytest.raises(RunError) as info:
        train(config, progress=False)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "seed1"))
    assert "No space left on device" in message and "run the same command again" in message
    before = _records(tmp_path)
    assert {r["seed"] for r in before} == {0} and len(before) == 12  # seed 0 scored, kept
    assert not (tmp_path / "seed1").exists()  # no half checkpoint
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".seed1.")]  # no temp
    monkeypatch.undo()  # space freed: the same command
    results = train(config, progress=False)
    after = _records(tmp_path)
    assert after[:12] == before
    assert sorted((r["seed"], r["item_id"]) for r in after) == sorted(
        (s, r["item_id"]) for s in (0, 1) for r in before
    )
    assert [s["seed"] for s in results.seeds] == [0, 1]
