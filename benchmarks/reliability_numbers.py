"""Numbers no model should give, label maps that name an output twice, and training
setups that cannot give a true number (issue 34): a causal LM or a classifier whose
weights make NaN or infinite scores in process, a NaN record in a report, ``id2label``
of the wrong shape or size, a run that diverges, training sources that hold each other's
items or the test split's, and a LoRA rank no model has.

Every case is an error: one line naming the item, file or flag; what was written before
stays (checked by ``tests/backends/test_non_finite.py``, ``tests/test_metrics.py`` and
``tests/sci/test_train_refusals.py``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from reliability_kit import Case, invoke, nli_rows, task, write


def _poisoned_lm(model: str) -> Callable[[Path], list[str]]:
    """The tiny Llama with every weight NaN, run in process."""

    def argv(d: Path) -> list[str]:
        import torch
        from transformers import AutoModelForCausalLM

        folder = d / "nan-llama"
        if not folder.exists():
            shutil.copytree(model, folder)
            lm = AutoModelForCausalLM.from_pretrained(folder)
            with torch.no_grad():
                for p in lm.parameters():
                    p.fill_(float("nan"))
            lm.save_pretrained(folder)
        yaml = task(d, nli_rows(4), name="nan_lm")
        return ["run", "--model", str(folder), "--task", yaml, "--shots", "0",
                "--no-progress", "--out", str(d / "nan_lm_run")]  # fmt: skip

    return argv


def _classifier(
    bert: str, d: Path, name: str, change: Callable[[Any, dict[str, Any]], None]
) -> str:
    """A 3-way BertForSequenceClassification on ``bert``, its model and config.json
    changed by ``change``."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    folder = d / name
    if folder.exists():
        return str(folder)
    id2label = {0: "entailment", 1: "neutral", 2: "contradiction"}
    if change is _three_labels:  # a 2-output head, then a config of 3
        id2label = {0: "entailment", 1: "contradiction"}
    model = BertForSequenceClassification.from_pretrained(bert, id2label=id2label)
    config: dict[str, Any] = {}
    with torch.no_grad():
        change(model, config)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(bert).save_pretrained(folder)
    if config:
        path = folder / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
    return str(folder)


def _run_classifier(
    bert: str, name: str, change: Callable[[Any, dict[str, Any]], None], *extra: str
) -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        folder = _classifier(bert, d, name, change)
        yaml = task(d, nli_rows(6), name=f"{name}_task")
        return ["run", "--model", folder, "--task", yaml, "--device", "cpu", "--no-progress",
                "--out", str(d / f"{name}_run"), *extra]  # fmt: skip

    return argv


def _bias(value: float) -> Callable[[Any, dict[str, Any]], None]:
    def change(model: Any, config: dict[str, Any]) -> None:
        model.classifier.bias[0] = value

    return change


def _label_n(model: Any, config: dict[str, Any]) -> None:
    config["id2label"] = {str(i): f"LABEL_{i}" for i in range(3)}
    config["label2id"] = {f"LABEL_{i}": i for i in range(3)}


def _id2label_list(model: Any, config: dict[str, Any]) -> None:
    config["id2label"] = ["entailment", "neutral", "contradiction"]


def _three_labels(model: Any, config: dict[str, Any]) -> None:
    config["id2label"] = {"0": "entailment", "1": "neutral", "2": "contradiction"}
    config["label2id"] = {"entailment": 0, "neutral": 1, "contradiction": 2}


def _folder_with_nan_head(bert: str) -> Callable[[Path], list[str]]:
    def argv(d: Path) -> list[str]:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from nlieval.classifiers import ClassifierMeta, PairClassifier, save_classifier

        folder = d / "nan_ckpt"
        if not folder.exists():
            model = PairClassifier(AutoModel.from_pretrained(bert), 3)
            with torch.no_grad():
                model.head.bias[1] = float("nan")
            meta = ClassifierMeta(("entailment", "neutral", "contradiction"), max_length=32)
            save_classifier(model, AutoTokenizer.from_pretrained(bert), meta, folder)
        yaml = task(d, nli_rows(6), name="nan_ckpt_task")
        return ["run", "--model", str(folder), "--task", yaml, "--device", "cpu",
                "--no-progress", "--out", str(d / "nan_ckpt_run")]  # fmt: skip

    return argv


def _nan_records(model: str) -> Callable[[Path], list[str]]:
    """A run of 20 records, two of them with a NaN and a -Infinity log-likelihood."""

    def argv(d: Path) -> list[str]:
        good = d / "nf_good_run"
        if not good.exists():
            yaml = task(d, nli_rows(20), name="nf_twenty")
            rc, err = invoke(["run", "--model", model, "--task", yaml, "--shots", "0",
                              "--no-progress", "--out", str(good)])  # fmt: skip
            assert rc == 0, err
        bad = d / "nf_bad_run"
        if not bad.exists():
            shutil.copytree(good, bad)
            lines = (bad / "records.jsonl").read_text().splitlines(keepends=True)
            for n, token in ((4, "NaN"), (11, "-Infinity")):
                row = json.loads(lines[n])
                row["loglik"][0] = "@"
                lines[n] = json.dumps(row).replace('"@"', token) + "\n"
            (bad / "records.jsonl").write_text("".join(lines))
        return ["grid", str(bad), "--metrics", "gold_nll"]

    return argv


def _smoke_test_copy(d: Path) -> str:
    """A task YAML of another name on a copy of the file of smoke's test split."""
    src = resources.files("nlieval") / "resources" / "smoke.jsonl"
    with resources.as_file(src) as path:
        shutil.copy(path, d / "mysmoke.jsonl")
    fields = "{premise: sentence1, hypothesis: sentence2, label: gold_label, id: pairID}"
    labels = "[entailment, neutral, contradiction]"
    return str(
        write(d / "mysmoke.yaml", f"path: mysmoke.jsonl\nlabels: {labels}\nfields: {fields}\n")
    )


def cases(model: str, bert: str) -> list[Case]:
    """The cases of this file (see the module docstring)."""
    train = ["train", "--model", bert, "--epochs", "2", "--seeds", "1", "--device", "cpu",
             "--no-progress"]  # fmt: skip
    return [
        Case("run", "causal LM with NaN weights", _poisoned_lm(model)),
        Case("run", "classifier head bias NaN",
             _run_classifier(bert, "nf_nan", _bias(float("nan")))),
        Case("run", "classifier head bias +inf",
             _run_classifier(bert, "nf_inf", _bias(float("inf")))),
        Case("run", "classifier folder, NaN head", _folder_with_nan_head(bert)),
        Case("run", "label map: output by index and name",
             _run_classifier(bert, "nf_map", _label_n, "--label-map",
                             "0=entailment,LABEL_0=contradiction")),
        Case("run", "label map: LABEL_0 and label_0",
             _run_classifier(bert, "nf_map2", _label_n, "--label-map",
                             "LABEL_0=entailment,label_0=contradiction")),
        Case("run", "id2label a list", _run_classifier(bert, "nf_list", _id2label_list)),
        Case("run", "id2label 3 over a 2-output head",
             _run_classifier(bert, "nf_three", _three_labels)),
        Case("grid", "2 of 20 records NaN/-inf", _nan_records(model)),
        Case("train", "diverged (--lr 5e5)",
             lambda d: [*train, "--task", "smoke", "--lr", "5e5", "--out", str(d / "nf_lr")]),
        Case("train", "one source twice (smoke@train,smoke)",
             lambda d: [*train, "--task", "smoke@train,smoke", "--out", str(d / "nf_twice")]),
        Case("train", "test split again through a YAML",
             lambda d: [*train, "--task", f"smoke@train,{_smoke_test_copy(d)}@test",
                        "--out", str(d / "nf_test_again")]),
        Case("train", "--lora 100000000,16",
             lambda d: ["train", "--model", model, "--task", "smoke", "--lora", "100000000,16",
                        "--no-progress", "--out", str(d / "nf_lora")]),
    ]  # fmt: skip
