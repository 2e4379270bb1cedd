"""Prompts longer than the model's context window are refused by name, before any of
them costs a forward pass (issue: a 5 MB premise took 16.8 GB and never finished)."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from nlieval.backends import HFOptions, PromptTooLongError, ScoreRequest
from nlieval.backends.hf import HFCausalLM
from nlieval.cli import main
from nlieval.runs import loop
from tests.helpers.records import saved_records
from tests.helpers.task_files import premise_task


def test_the_backend_refuses_before_any_forward_pass(tiny_llama: Path) -> None:
    lm = HFCausalLM(str(tiny_llama), HFOptions(device="cpu"))
    assert lm.context_window == 2048  # the fixture's max_position_embeddings
    # About 3,000 tokens: under window x longest token in characters, so it is tokenized;
    # its length is checked against the tokenizer run on the whole text by itself.
    long = "The cat sat on the mat. " * 500
    n_whole = len(AutoTokenizer.from_pretrained(tiny_llama)(long + "Answer: A")["input_ids"])
    assert n_whole > 2048
    reqs = [ScoreRequest("Short. Answer:", (" A", " B")), ScoreRequest(long + "Answer:", (" A",))]
    with pytest.raises(PromptTooLongError) as err:
        lm.loglikelihood(reqs)
    assert list(err.value.lengths) == [1] and err.value.limit == 2048
    assert not err.value.at_least and abs(err.value.lengths[1] - n_whole) <= 2
    assert lm.counts["forward_calls"] == 0


def test_a_5mb_premise_stops_the_run_with_one_line_and_keeps_earlier_records(
    tmp_path: Path, tiny_llama: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    premises = {f"i{n}": f"A man walks dog number {n}." for n in range(6)}
    premises["huge"] = "The cat sat on the mat. " * (5_000_000 // 24)
    yaml = premise_task(tmp_path, "long", premises)
    monkeypatch.setattr(loop, "CHUNK", 3)  # shortest first: two chunks before the huge item
    monkeypatch.setattr(loop, "CHUNK_SECONDS", 0)  # chunks of 3 throughout
    out = tmp_path / "run"
    argv = ["run", "--model", str(tiny_llama), "--task", str(yaml), "--out", str(out),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr
    (err,) = [line for line in stderr.splitlines() if line.startswith("nlieval:")]
    assert str(tmp_path / "items.jsonl") in err and "'huge'" in err
    assert "at least" in err and "context window of 2048" in err
    kept = [r.item_id for r in saved_records(out)]
    assert sorted(kept) == [f"i{n}" for n in range(6)]
