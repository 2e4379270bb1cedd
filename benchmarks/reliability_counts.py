"""Counts that are what was used, and model folders checked for what their kind needs
(issue 43, rules 2 and 3).

Counts: a selection larger than the split (``--limit``, ``--sample``, ``--balanced-limit``,
a training source's ``NAME:N``, ``infer build --limit``, ``generate --limit``,
``contamination --limit``) must go on with every item and say so, naming both numbers: the
right answer is a warning; exit 0 without a word lets the typed number stand for the used
one. So must ``items`` when its ``--max-rows`` (default 20) cuts the listing; a number
that cannot be the count used (``contamination --scores`` with ``--limit``, which scans
nothing; ``items --max-rows 0``) is one line.

Model folders: a tiny folder of each kind the registry decides (causal LM, sequence
classifier, multiple-choice model, ``nlieval train`` pair classifier, LoRA checkpoint)
with one needed file removed or a tensor taken out of its weights; the right answer is one
line naming the file, before anything is scored; exit 0 is a model partly drawn at random
scored as if trained. ``train --init-from`` a folder missing encoder weights is the user's
choice of start: a warning.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

from reliability_kit import Case, invoke, nli_rows, sci_task, task

_n = itertools.count()


def _fresh(d: Path, stem: str) -> Path:
    folder = d / f"counts-{stem}-{next(_n)}"
    folder.mkdir()
    return folder


def _drop_tensors(file: Path, prefix: str) -> None:
    from safetensors.torch import load_file, save_file

    state = load_file(str(file))
    kept = {k: v for k, v in state.items() if not k.startswith(prefix)}
    assert len(kept) < len(state), f"no tensor of {file} starts with {prefix}"
    save_file(kept, str(file), metadata={"format": "pt"})


def _remove(folder: Path, *names: str) -> None:
    for name in names:
        (folder / name).unlink(missing_ok=True)


BERT_TOKENIZER = ("vocab.txt", "tokenizer.json", "tokenizer_config.json")
LLAMA_TOKENIZER = ("tokenizer.json", "tokenizer_config.json")
WORDS = ["a", "man", "walks", "moves", "in", "the", "park"]


def _bert(f: Path, head: str, **config: object) -> Path:
    from tests.helpers.tiny_bert import make_tiny_bert

    return make_tiny_bert(f / "m", WORDS, head=head, **config)


def _pair_classifier(d: Path, bert: str, f: Path) -> Path:
    """An ``nlieval train`` pair classifier of ``bert`` (one epoch on 12 items)."""
    t = task(f, nli_rows(12), "pool: t.jsonl\n")
    argv = ["train", "--model", bert, "--task", t, "--epochs", "1", "--max-length", "16",
            "--seeds", "0,", "--device", "cpu", "--no-progress", "--no-test",
            "--out", str(f / "clf")]  # fmt: skip
    rc, err = invoke(argv, d)
    assert rc == 0, err
    return f / "clf" / "seed0"


def _lora(d: Path, model: str, f: Path) -> Path:
    t = task(f, nli_rows(12), "pool: t.jsonl\n")
    argv = ["train", "--model", model, "--task", t, "--lora", "2,4", "--epochs", "1",
            "--max-length", "16", "--seeds", "0,", "--device", "cpu", "--no-progress",
            "--no-test", "--out", str(f / "lora")]  # fmt: skip
    rc, err = invoke(argv, d)
    assert rc == 0, err
    return f / "lora" / "seed0"


def cases(model: str, bert: str) -> list[Case]:
    def run_on(folder: Path, f: Path, *extra: str) -> list[str]:
        return ["run", "--model", str(folder), "--task", "smoke", "--limit", "2",
                "--no-progress", "--device", "cpu", "--out", str(f / "o"), *extra]  # fmt: skip

    # --- rule 2: a selection larger than the split ------------------------------------
    def run_limit(d: Path) -> list[str]:
        f = _fresh(d, "limit")
        return ["run", "--model", model, "--task", "smoke", "--limit", "500", "--no-progress",
                "--out", str(f / "o")]  # fmt: skip

    def run_sample(d: Path) -> list[str]:
        f = _fresh(d, "sample")
        return ["run", "--model", model, "--task", "smoke", "--sample", "500", "--no-progress",
                "--out", str(f / "o")]  # fmt: skip

    def instruct_balanced(d: Path) -> list[str]:
        f = _fresh(d, "instruct")
        t = sci_task(f, n=8)
        return ["instruct", "--model", model, "--task", t, "--split", "test", "--limit", "50",
                "--balanced-limit", "--shots", "0", "--max-new-tokens", "2", "--no-progress",
                "--out", str(f / "o")]  # fmt: skip

    def train_source(d: Path) -> list[str]:
        f = _fresh(d, "source")
        t = task(f, nli_rows(12), "pool: t.jsonl\n")
        return ["train", "--model", bert, "--task", f"{t}:500", "--epochs", "1",
                "--max-length", "16", "--seeds", "0,", "--device", "cpu", "--no-progress",
                "--no-test", "--out", str(f / "o")]  # fmt: skip

    def infer_build(d: Path) -> list[str]:
        f = _fresh(d, "infer")
        return ["infer", "build", "--task", "smoke", "--limit", "500", "--out", str(f / "o")]

    def contamination_limit(d: Path) -> list[str]:
        f = _fresh(d, "contam")
        (f / "c.txt").write_text("nothing of the task here\n")
        return ["contamination", "--task", "smoke", "--corpus", str(f / "c.txt"), "--limit",
                "500", "--workers", "1", "--out", str(f / "s.jsonl")]  # fmt: skip

    def contamination_scores_limit(d: Path) -> list[str]:
        # A scores file scans nothing: every item of it would be used under the number typed.
        f = _fresh(d, "contam-scores")
        (f / "s.jsonl").write_text(
            "".join(
                json.dumps({"task": "smoke", "item_id": f"smoke-{i:02d}", "score": 0.0}) + "\n"
                for i in range(1, 49)
            )
        )
        return ["contamination", "--scores", str(f / "s.jsonl"), "--limit", "10"]

    def contamination_scored_twice(d: Path) -> list[str]:
        # One item scored twice: the summary counted 2 items, EPG scored it once.
        f = _fresh(d, "contam-twice")
        row = json.dumps({"task": "smoke", "item_id": "smoke-01", "score": 0.0}) + "\n"
        (f / "s.jsonl").write_text(row * 2)
        return ["contamination", "--scores", str(f / "s.jsonl")]

    def _imported(f: Path, n: int) -> Path:
        rows = [{"id": f"smoke-{i:02d}", "probs": [0.6, 0.3, 0.1]} for i in range(1, n + 1)]
        (f / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        rc, err = invoke(["import", str(f / "p.jsonl"), "--task", "smoke", "--model", "m",
                          "--out", str(f / "run")])  # fmt: skip
        assert rc == 0, err
        return f / "run"

    def items_default_limit(d: Path) -> list[str]:
        f = _fresh(d, "items")
        return ["items", str(_imported(f, 30))]  # 30 rows, the default --max-rows 20

    def items_limit_zero(d: Path) -> list[str]:
        f = _fresh(d, "items0")
        return ["items", str(_imported(f, 5)), "--max-rows", "0"]

    # --- rule 3: a model folder missing what its kind needs -----------------------------
    def lm_no_tokenizer(d: Path) -> list[str]:
        f = _fresh(d, "lm-tok")
        m = Path(shutil.copytree(model, f / "m"))
        _remove(m, *LLAMA_TOKENIZER)
        return run_on(m, f)

    def lm_no_head(d: Path) -> list[str]:
        f = _fresh(d, "lm-head")
        m = Path(shutil.copytree(model, f / "m"))
        _drop_tensors(m / "model.safetensors", "lm_head.")
        return run_on(m, f)

    def lm_layer_missing(d: Path) -> list[str]:
        f = _fresh(d, "lm-layer")
        m = Path(shutil.copytree(model, f / "m"))
        _drop_tensors(m / "model.safetensors", "model.layers.1.")
        return run_on(m, f)

    def seq_no_head(d: Path) -> list[str]:
        f = _fresh(d, "seq-head")
        labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
        m = _bert(f, "BertForSequenceClassification", id2label=labels)
        _drop_tensors(m / "model.safetensors", "classifier.")
        return run_on(m, f)

    def seq_no_tokenizer(d: Path) -> list[str]:
        f = _fresh(d, "seq-tok")
        labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
        m = _bert(f, "BertForSequenceClassification", id2label=labels)
        _remove(m, *BERT_TOKENIZER)
        return run_on(m, f)

    def mc_no_head(d: Path) -> list[str]:
        f = _fresh(d, "mc-head")
        m = _bert(f, "BertForMultipleChoice")
        _drop_tensors(m / "model.safetensors", "classifier.")
        return ["run", "--model", str(m), "--task", "alphanli", "--limit", "2", "--no-progress",
                "--device", "cpu", "--out", str(f / "o")]  # fmt: skip

    def clf_no_head(d: Path) -> list[str]:
        f = _fresh(d, "clf-head")
        c = _pair_classifier(d, bert, f)
        _remove(c, "classifier_head.safetensors")
        return run_on(c, f)

    def clf_no_tokenizer(d: Path) -> list[str]:
        f = _fresh(d, "clf-tok")
        c = _pair_classifier(d, bert, f)
        _remove(c, *BERT_TOKENIZER)
        return run_on(c, f)

    def clf_encoder_layer(d: Path) -> list[str]:
        f = _fresh(d, "clf-enc")
        c = _pair_classifier(d, bert, f)
        _drop_tensors(c / "model.safetensors", "encoder.layer.1.")
        return run_on(c, f)

    def clf_labels_unlike_head(d: Path) -> list[str]:
        f = _fresh(d, "clf-labels")
        c = _pair_classifier(d, bert, f)
        meta = json.loads((c / "nlieval_classifier.json").read_text())
        meta["labels"] = ["entailment", "non-entailment"]
        (c / "nlieval_classifier.json").write_text(json.dumps(meta))
        return run_on(c, f)

    def lora_no_adapters(d: Path) -> list[str]:
        f = _fresh(d, "lora-ad")
        c = _lora(d, model, f)
        _remove(c, "adapter_model.safetensors")
        return run_on(c, f)

    def lora_no_head(d: Path) -> list[str]:
        f = _fresh(d, "lora-head")
        c = _lora(d, model, f)
        _drop_tensors(c / "adapter_model.safetensors", "base_model.model.score")
        return run_on(c, f)

    def init_from_partial(d: Path) -> list[str]:
        f = _fresh(d, "init")
        c = _pair_classifier(d, bert, f)
        _drop_tensors(c / "model.safetensors", "encoder.layer.1.")
        t = task(f, nli_rows(12, "j"), "pool: t.jsonl\n", name="t2")
        return ["train", "--model", bert, "--task", t, "--init-from", str(c), "--epochs", "1",
                "--max-length", "16", "--seeds", "0,", "--device", "cpu", "--no-progress",
                "--no-test", "--out", str(f / "second")]  # fmt: skip

    return [
        Case("run", "counts: --limit 500 of 48 items", run_limit, "warning"),
        Case("run", "counts: --sample 500 of 48 items", run_sample, "warning"),
        Case("instruct", "counts: --balanced-limit 50 of 8", instruct_balanced, "warning"),
        Case("train", "counts: source NAME:500 of 12", train_source, "warning"),
        Case("infer build", "counts: --limit 500 of 48 items", infer_build, "warning"),
        Case("contamination", "counts: --limit 500 of 48 items", contamination_limit, "warning"),
        Case("contamination", "counts: --scores with --limit 10", contamination_scores_limit),
        Case("contamination", "counts: --scores, an item twice", contamination_scored_twice),
        Case("items", "counts: 30 rows cut to the default 20", items_default_limit, "warning"),
        Case("items", "counts: --max-rows 0", items_limit_zero),
        Case("run", "folder: causal LM, no tokenizer", lm_no_tokenizer),
        Case("run", "folder: causal LM, lm_head missing", lm_no_head),
        Case("run", "folder: causal LM, a layer missing", lm_layer_missing),
        Case("run", "folder: seq. classifier, head missing", seq_no_head),
        Case("run", "folder: seq. classifier, no tokenizer", seq_no_tokenizer),
        Case("run", "folder: multiple-choice, head missing", mc_no_head),
        Case("run", "folder: train classifier, no head file", clf_no_head),
        Case("run", "folder: train classifier, no tokenizer", clf_no_tokenizer),
        Case("run", "folder: train classifier, encoder layer", clf_encoder_layer),
        Case("run", "folder: train classifier, 2 labels 3 outputs", clf_labels_unlike_head),
        Case("run", "folder: LoRA, no adapter weights", lora_no_adapters),
        Case("run", "folder: LoRA, head not in adapters", lora_no_head),
        Case("train", "--init-from: encoder layer missing", init_from_partial, "warning"),
    ]
