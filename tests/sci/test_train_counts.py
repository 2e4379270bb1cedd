"""``nlieval train``'s counts are the items it trained on (issue 43, rule 2): the items
that reach the training step are recorded and compared with train.json (per source,
after sampling, after the dev hold-out) and with the line the terminal prints; a source
size above what the source holds is a warning naming both numbers."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
yaml = pytest.importorskip("yaml")

from nlieval.cli import main  # noqa: E402
from tests.helpers.records import saved_records  # noqa: E402
from tests.helpers.tiny_bert import make_tiny_bert  # noqa: E402

WORDS = ["cat", "dog", "a", "the", "no", "sees"]
CUE = {"entailment": "a", "neutral": "the", "contradiction": "no"}


def _task(folder: Path, name: str, n: int) -> str:
    labels = list(CUE)
    rows = [
        {"id": str(i), "premise": f"{['cat', 'dog'][i % 2]} sees {name}{i}",
         "hypothesis": f"{CUE[labels[i % 3]]} {['cat', 'dog'][i // 3 % 2]}",
         "label": labels[i % 3]}
        for i in range(n)
    ]  # fmt: skip
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / f"{name}.yaml").write_text(
        yaml.safe_dump({"path": f"{name}.jsonl", "labels": labels})
    )
    return str(folder / f"{name}.yaml")


def test_train_json_and_the_terminal_count_the_items_trained_on(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nlieval.sci.train_model import batch_logits as real

    seen: list[str] = []

    def recording(model: Any, tokenizer: Any, items: Any, *rest: Any) -> Any:
        if model.training:  # a training step, not an evaluation of dev
            seen.extend(it.id for it in items)
        return real(model, tokenizer, items, *rest)

    monkeypatch.setattr("nlieval.sci.train_loop.batch_logits", recording)
    enc = make_tiny_bert(tmp_path / "bert", WORDS)
    # a has 30 items and is asked for 500; b (20 items) is asked for 9.
    a, b, test = _task(tmp_path, "a", 30), _task(tmp_path, "b", 20), _task(tmp_path, "t", 12)
    argv = ["train", "--model", str(enc), "--task", f"{a}@test:500,{b}@test:9",
            "--test-task", test, "--epochs", "1", "--seeds", "0,", "--device", "cpu",
            "--max-length", "16", "--out", str(tmp_path / "run"), "--no-progress"]  # fmt: skip
    with caplog.at_level(logging.WARNING):
        assert main(argv) == 0
    out = capsys.readouterr().out
    info = json.loads((tmp_path / "run" / "seed0" / "train.json").read_text())
    train, dev = info["data"]["train"], info["data"]["dev"]
    # One epoch: every training item reaches the model once.
    assert len(seen) == len(set(seen)) == train["n"]
    per_source = {
        name: sum(i.startswith(f"{name}/") for i in seen) for name in ("a@test", "b@test")
    }
    assert train["sources"] == per_source
    assert train["n"] + dev["n"] == 30 + 9  # all of a, 9 of b, before the dev hold-out
    assert f"training set: {per_source['a@test']} a@test + {per_source['b@test']} b@test" in out
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("500" in m and "30" in m and "a.yaml" in m for m in warned), warned
    assert not any(":9 " in m for m in warned), warned
    records = saved_records(tmp_path / "run")
    assert len(records) == info["data"]["test"]["n"] == 12
