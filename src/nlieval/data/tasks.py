"""The built-in tasks (:data:`TASKS`): per benchmark, the label set, the official
distribution files and known variants of each split, and the Hugging Face hub copy.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from ..types import ALPHA, NLI2, NLI3, SCI4, Label
from .parsers import ChaosParser, FieldError, FieldMap, MappedParser, Row
from .rules import FileRule, HubSpec, TaskSpec

_DASH = {"-": "gold label '-'"}
_ENC = {"0": Label.ENTAILMENT, "1": Label.NEUTRAL, "2": Label.CONTRADICTION}
_NO_GOLD = {"-1": "no gold label (-1)"}


def _annotator_columns(row: Row) -> dict[str, Any]:
    # The TSV releases spread annotator labels over label1..label5 (empty when fewer).
    if "label1" not in row:
        return {}
    labels = [row[f"label{i}"] for i in range(1, 6) if row.get(f"label{i}")]
    return {"annotator_labels": labels}


def _anli_csv_meta(row: Row) -> dict[str, Any]:
    tags = row.get("tags")
    if isinstance(tags, str) and tags.startswith("["):
        try:
            return {"tags": list(ast.literal_eval(tags))}
        except (ValueError, SyntaxError):
            pass
    return {}


def _bert_correct(row: Row) -> dict[str, Any]:
    raw = row.get("number of correct responses (out of 100)")
    return {"bert_correct_of_100": int(raw)} if raw not in (None, "") else {}


def _sick_meta(row: Row) -> dict[str, Any]:
    raw = row.get("relatedness_score")
    if raw in (None, ""):
        return {}
    try:
        value = float(raw)
    except ValueError:
        raise FieldError("relatedness_score", f"not a number: {raw!r}") from None
    if not math.isfinite(value):
        raise FieldError("relatedness_score", f"not a finite number: {raw!r}")
    return {"relatedness": value}


def _snli_parser(extra_meta: tuple[str, ...] = ()) -> MappedParser:
    fields = FieldMap(
        "sentence1", "sentence2", "gold_label", id="pairID", meta=("annotator_labels", *extra_meta)
    )
    return MappedParser(fields, NLI3, drop=_DASH, extra=_annotator_columns)


def _snli_spec() -> TaskSpec:
    p = _snli_parser()

    def rules(split: str) -> tuple[FileRule, ...]:
        official = FileRule(p, (f"snli_1.0_{split}.jsonl", f"snli_1.0_{split}.txt"))
        return official, FileRule(p, (f"{split}.tsv",), folder="snli")

    hub_p = MappedParser(FieldMap(), NLI3, label_map=_ENC, drop=_NO_GOLD)
    hub = HubSpec(
        "stanfordnlp/snli", None, {"train": "train", "dev": "validation", "test": "test"}, hub_p
    )
    return TaskSpec(
        "snli",
        NLI3,
        "nli3",
        "dev",
        "SNLI 1.0 (gold label '-' dropped)",
        {s: rules(s) for s in ("train", "dev", "test")},
        hub,
    )


def _mnli_spec(matched: bool) -> TaskSpec:
    which = "matched" if matched else "mismatched"
    p = _snli_parser(("genre", "promptID"))
    dev = [
        FileRule(
            p,
            (
                f"multinli_1.0_dev_{which}.jsonl",
                f"multinli_1.0_dev_{which}.txt",
                f"dev_{which}.tsv",
            ),
        )
    ]
    if matched:
        # "BERTs of a feather" copy of dev_matched: index, premise, hypothesis, gold_label.
        bert = FieldMap("premise", "hypothesis", "gold_label", id="index")
        dev.append(
            FileRule(
                MappedParser(bert, NLI3, drop=_DASH, extra=_bert_correct),
                ("mnli_development_set_number_of_correct_responses.txt",),
            )
        )
    train = (
        FileRule(p, ("multinli_1.0_train.jsonl", "multinli_1.0_train.txt")),
        FileRule(p, ("train.tsv",), folder="mnli"),
    )
    hub_p = MappedParser(
        FieldMap(id="pairID", meta=("genre", "promptID")), NLI3, label_map=_ENC, drop=_NO_GOLD
    )
    hub = HubSpec(
        "nyu-mll/multi_nli", None, {"train": "train", f"dev_{which}": f"validation_{which}"}, hub_p
    )
    name = "mnli_m" if matched else "mnli_mm"
    return TaskSpec(
        name,
        NLI3,
        "nli3",
        f"dev_{which}",
        f"MultiNLI 1.0 dev {which}",
        {"train": train, f"dev_{which}": tuple(dev)},
        hub,
    )


def _hans_spec() -> TaskSpec:
    official = MappedParser(
        FieldMap(
            "sentence1",
            "sentence2",
            "gold_label",
            id="pairID",
            meta=("heuristic", "subcase", "template"),
        ),
        NLI2,
    )
    derived = MappedParser(
        FieldMap("sentence1", "sentence2", "gold_label", meta=("heuristic",)), NLI2
    )
    # The saved HF dataset in hans.zip numbers labels 0=non-entailment, 1=entailment.
    zipped = MappedParser(
        FieldMap("sentence1", "sentence2", "labels", meta=("heuristic",)),
        NLI2,
        label_map={"0": Label.NON_ENTAILMENT, "1": Label.ENTAILMENT},
    )
    arrow = "hans_datasets/{}/data-00000-of-00001.arrow"
    evals = (
        FileRule(official, ("heuristics_evaluation_set.txt", "heuristics_evaluation_set.jsonl")),
        FileRule(derived, ("hans_eval_30k.derived.jsonl",)),
        FileRule(zipped, ("hans.zip",), members=(arrow.format("validation"), arrow.format("test"))),
    )
    train = (
        FileRule(official, ("heuristics_train_set.txt", "heuristics_train_set.jsonl")),
        FileRule(zipped, ("hans.zip",), members=(arrow.format("train"),)),
    )
    hub_p = MappedParser(
        FieldMap(meta=("heuristic", "subcase", "template")),
        NLI2,
        label_map={"0": Label.ENTAILMENT, "1": Label.NON_ENTAILMENT},
    )
    hub = HubSpec("jhu-cogsci/hans", None, {"train": "train", "eval": "validation"}, hub_p)
    return TaskSpec(
        "hans",
        NLI2,
        "nli2",
        "eval",
        "HANS evaluation set (30,000 items)",
        {"train": train, "eval": evals},
        hub,
    )


def _anli_spec(rnd: int) -> TaskSpec:
    tag = f"R{rnd}"
    official = MappedParser(FieldMap(id="uid", meta=("reason",)), NLI3, const_meta={"round": tag})
    annot = MappedParser(
        FieldMap("context", "statement", "gold_label", id="uid", meta=("reason",)),
        NLI3,
        extra=_anli_csv_meta,
        const_meta={"round": tag},
    )
    splits: dict[str, tuple[FileRule, ...]] = {}
    for split in ("train", "dev", "test"):
        rules = [FileRule(official, (f"{split}.jsonl",), folder=tag)]
        if split == "dev":
            rules.append(FileRule(annot, (f"ANLI_analysis_r{rnd}_dev.csv",)))
        splits[split] = tuple(rules)
    hub_p = MappedParser(
        FieldMap(id="uid", meta=("reason",)), NLI3, label_map=_ENC, const_meta={"round": tag}
    )
    hub = HubSpec("facebook/anli", None, {s: f"{s}_r{rnd}" for s in splits}, hub_p)
    return TaskSpec(f"anli_r{rnd}", NLI3, "nli3", "dev", f"ANLI v1.0 round {rnd}", splits, hub)


def _alphanli_spec() -> TaskSpec:
    official = MappedParser(
        FieldMap("obs1", "obs2", "__label__", id="story_id", choices=("hyp1", "hyp2")), ALPHA
    )
    dev = (
        FileRule(official, ("dev.jsonl",), companion="dev-labels.lst"),
        FileRule(ChaosParser(ALPHA), ("chaosNLI_alphanli.jsonl",)),
    )
    train = (FileRule(official, ("train.jsonl",), companion="train-labels.lst"),)
    hub_p = MappedParser(
        FieldMap(
            "observation_1", "observation_2", "label", choices=("hypothesis_1", "hypothesis_2")
        ),
        ALPHA,
        drop={"0": "no gold label (0)"},
    )
    hub = HubSpec("allenai/art", None, {"train": "train", "dev": "validation"}, hub_p)
    return TaskSpec(
        "alphanli",
        ALPHA,
        "alphanli",
        "dev",
        "alpha-NLI (ART) dev",
        {"train": train, "dev": dev},
        hub,
    )


def _chaosnli_spec(name: str, file: str, base: TaskSpec) -> TaskSpec:
    # The few-shot pool is the original dataset's train split when it is there.
    splits = {"train": base.splits["train"], "dev": (FileRule(ChaosParser(base.labels), (file,)),)}
    return TaskSpec(
        f"chaosnli_{name}",
        base.labels,
        base.family,
        "dev",
        f"ChaosNLI v1.0 {name} subset (100 human labels per item)",
        splits,
    )


def _scinli_spec() -> TaskSpec:
    p = MappedParser(FieldMap("sentence1", "sentence2", "label", id="id", meta=("domain",)), SCI4)
    # Folder match: dev/test file names are generic; "scinli.*" also excludes MSciNLI.
    splits = {
        s: (FileRule(p, (f"{s}.jsonl", f"{s}.csv"), folder="scinli.*"),)
        for s in ("train", "dev", "test")
    }
    return TaskSpec("scinli", SCI4, "sci4", "test", "SciNLI (ACL 2022)", splits)


def _sick_spec() -> TaskSpec:
    def one_file(split: str) -> MappedParser:
        fields = FieldMap("sentence_A", "sentence_B", "entailment_label", id="pair_ID")
        return MappedParser(fields, NLI3, where=("SemEval_set", split), extra=_sick_meta)

    per_file = MappedParser(
        FieldMap("sentence_A", "sentence_B", "entailment_judgment", id="pair_ID"),
        NLI3,
        extra=_sick_meta,
    )
    names = {
        "train": "SICK_train.txt",
        "trial": "SICK_trial.txt",
        "test": "SICK_test_annotated.txt",
    }
    splits = {
        s: (FileRule(one_file(s), ("SICK.txt",)), FileRule(per_file, (names[s],)))
        for s in ("train", "trial", "test")
    }
    return TaskSpec("sick", NLI3, "nli3", "test", "SICK (SemEval 2014 split)", splits)


def _rte_spec() -> TaskSpec:
    labelled = MappedParser(FieldMap("sentence1", "sentence2", "label", id="index"), NLI2)
    unlabelled = MappedParser(FieldMap("sentence1", "sentence2", None, id="index"), NLI2)
    splits: dict[str, tuple[FileRule, ...]] = {}
    for split in ("train", "dev", "test"):
        p = unlabelled if split == "test" else labelled
        # Folder match: GLUE uses dev.tsv/train.tsv for several tasks.
        splits[split] = (
            FileRule(p, (f"{split}.tsv",), folder="rte"),
            FileRule(p, ("RTE.zip",), members=(f"RTE/{split}.tsv",)),
        )
    hub_p = MappedParser(
        FieldMap("sentence1", "sentence2", "label", id="idx"),
        NLI2,
        label_map={"0": Label.ENTAILMENT, "1": Label.NON_ENTAILMENT},
        drop={"-1": "no gold label (-1)"},
    )
    hub = HubSpec("nyu-mll/glue", "rte", {"train": "train", "dev": "validation"}, hub_p)
    return TaskSpec("rte", NLI2, "nli2", "dev", "RTE (GLUE); test has no labels", splits, hub)


def _smoke_spec() -> TaskSpec:
    p = _snli_parser()
    splits = {
        "train": (FileRule(p, resource="smoke_train.jsonl"),),
        "test": (FileRule(p, resource="smoke.jsonl"),),
    }
    return TaskSpec(
        "smoke", NLI3, "nli3", "test", "bundled 48-item sample (no data dir needed)", splits
    )


def _build_tasks() -> dict[str, TaskSpec]:
    snli, mnli_m, alpha = _snli_spec(), _mnli_spec(True), _alphanli_spec()
    tasks = [
        snli,
        mnli_m,
        _mnli_spec(False),
        _hans_spec(),
        _anli_spec(1),
        _anli_spec(2),
        _anli_spec(3),
        alpha,
        _chaosnli_spec("snli", "chaosNLI_snli.jsonl", snli),
        _chaosnli_spec("mnli", "chaosNLI_mnli_m.jsonl", mnli_m),
        _chaosnli_spec("alphanli", "chaosNLI_alphanli.jsonl", alpha),
        _scinli_spec(),
        _sick_spec(),
        _rte_spec(),
        _smoke_spec(),
    ]
    return {t.name: t for t in tasks}


#: Every built-in task by name.
TASKS: dict[str, TaskSpec] = _build_tasks()
