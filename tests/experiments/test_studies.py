"""The parts of a study a file leaves out until given (an axis given as [], a scan
without a corpus), the ``contamination`` block and the ``epg`` output, and the
overrides a study's file is run with on a laptop (one block's models or axis)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nlieval.experiments import Experiment, plan_cells, read_experiment, run_experiment
from nlieval.experiments.report import check_outputs
from nlieval.ground import DataError
from tests.helpers.figures import hlines_of, record_savefig, series_of
from tests.helpers.records import saved_rows

TEXT = """\
experiment: parts
backoff: 0
models:
  tiny: {model: MODEL}
blocks:
  base: {command: run, tasks: [smoke], limit: 6, shots: [0]}
  series: {command: run, tasks: [smoke], limit: 2, shots: [0]}
  scan: {command: contamination, tasks: [smoke], limit: 6, corpus: CORPUS}
matrix:
  - {block: base, models: [tiny]}
  - {block: series, models: [tiny], checkpoints: []}
  - {block: scan}
outputs:
  dyn: {kind: dynamics, label: Figure 9, blocks: [series]}
  epg: {kind: epg, label: Figure 7, blocks: [base], scores: scan}
"""


def _file(folder: Path, model: str, corpus: str = "[]") -> Path:
    path = folder / "e.yaml"
    path.write_text(TEXT.replace("MODEL", model).replace("CORPUS", corpus))
    return path


def test_an_empty_axis_or_a_scan_without_corpus_makes_no_cell(tmp_path: Path) -> None:
    path = _file(tmp_path, "m")
    assert [c.name for c in plan_cells(read_experiment(path), estimate=False)] == ["base-tiny"]
    given = read_experiment(path, ["series.checkpoints=a,b", "scan.corpus=c.txt"])
    cells = {c.name: c for c in plan_cells(given, estimate=False)}
    assert sorted(cells) == ["base-tiny", "scan", "series-tiny"]
    assert cells["series-tiny"].config["checkpoints"] == ["a", "b"]
    # A global axis override leaves out the blocks whose command lacks the axis.
    shots = read_experiment(path, ["shots=0,1", "scan.corpus=c.txt"])
    assert {c.name for c in plan_cells(shots, estimate=False)} == {"base-tiny", "scan"}


def test_epg_from_a_contamination_block_and_skipped_outputs(
    tmp_path: Path, tiny_llama: Path
) -> None:
    items = [
        json.loads(line)
        for line in (Path(__file__).parents[2] / "src/nlieval/resources/smoke.jsonl")
        .read_text()
        .splitlines()[:6]
    ]
    corpus = tmp_path / "corpus.txt"
    # Two of the six items appear whole in the corpus.
    corpus.write_text("".join(f"{it['sentence1']} {it['sentence2']}\n" for it in items[:2]))
    path = _file(tmp_path, str(tiny_llama), str(corpus))
    out = tmp_path / "out"
    summary = run_experiment(read_experiment(path), out)
    assert not summary.failed
    report = out / "report"
    for name in ("epg.md", "epg.png", "epg.pdf"):
        assert (report / name).stat().st_size > 0
    index = (report / "index.md").read_text()
    assert "## Figure 9: dyn (dynamics)\n\nnot written: skipped: series makes no cell" in index
    # EPG at t = 0.5 by hand: accuracy on all items minus on those scoring <= 0.5.
    scores = {
        json.loads(line)["item_id"]: json.loads(line)["score"]
        for line in (out / "cells/scan/scores.jsonl").read_text().splitlines()
    }
    records = saved_rows(out / "cells/base-tiny")
    right = {r["item_id"]: r["pred"] == r["gold"] for r in records}
    clean = [i for i in right if scores[i] <= 0.5]
    assert len(clean) == 4
    epg = sum(right.values()) / 6 - sum(right[i] for i in clean) / 4
    row = next(line for line in (report / "epg.md").read_text().splitlines() if "| 0.5 |" in line)
    assert row.split("|")[-2].strip() == f"{epg:+.4f}"
    # A second call: the same report, byte for byte (the PDF included).
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    again = run_experiment(read_experiment(path), out)
    assert not any(o.attempts for o in again.outcomes)
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before


def test_block_models_override_changes_that_block_alone(tmp_path: Path) -> None:
    path = _file(tmp_path, "m")
    text = path.read_text().replace("tiny: {model: m}", "tiny: {model: m}\n  other: {model: o}")
    path.write_text(text)
    exp = read_experiment(path, ["base.models=other"])
    assert [e.models for e in exp.matrix] == [("other",), ("tiny",), ()]
    with pytest.raises(DataError, match=r"^--set bsae.models=other: .*did you mean 'base'\?$"):
        read_experiment(path, ["bsae.models=other"])


@pytest.mark.parametrize(
    ("before", "after", "key"),
    [
        (", scores: scan}", "}", "scores"),
        ("scores: scan}", "scores: scna}", "scores"),
    ],
)
def test_a_bad_block_option_of_an_output_is_one_line(
    tmp_path: Path, before: str, after: str, key: str
) -> None:
    path = _file(tmp_path, "m")
    path.write_text(path.read_text().replace(before, after))
    with pytest.raises(DataError) as err:
        check_outputs(read_experiment(path))
    assert str(err.value).startswith(f"{path}:15: field '{key}':")
    assert "\n" not in str(err.value)


def test_a_dynamics_output_is_drawn_once_into_png_and_pdf(
    tmp_path: Path, tiny_llama: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from nlieval.runs import RunFolder

    steps = [tmp_path / "step-1", tmp_path / "step-2"]
    for step in steps:
        shutil.copytree(tiny_llama, step)
    path = _file(tmp_path, str(tiny_llama))
    given = read_experiment(path, [f"series.checkpoints={steps[0]},{steps[1]}"])
    out = tmp_path / "out"
    saved = record_savefig(monkeypatch)
    summary = run_experiment(given, out)
    assert not summary.failed
    report = out / "report"
    # As every figure of a report: PNG and PDF, here of the one checkpoint cell.
    png, pdf = report / "dyn-series-tiny.png", report / "dyn-series-tiny.pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    # Drawn once: the one figure of the dynamics output saved twice (PNG, PDF).
    [fig] = [f for f in saved.figures if f.axes and f.axes[0].get_ylabel() == "accuracy"]
    assert saved.saves_of(fig) == 2
    # What it draws: per checkpoint (x 0, 1 in the given order) the share of the
    # cell's two items answered right, from the cell's own records.
    records = RunFolder(out / "cells" / "series-tiny").records()
    accuracy = [
        sum(r.pred == r.gold for r in mine) / len(mine)
        for mine in ([r for r in records if r.checkpoint == str(s)] for s in steps)
    ]
    acc_ax, nll_ax = fig.axes
    assert series_of(acc_ax) == {"accuracy": ([0.0, 1.0], accuracy)}
    assert hlines_of(acc_ax) == [(pytest.approx(1 / 3), "random (1/3)")]  # the smoke task: 3-way
    assert nll_ax.get_ylabel() == "mean gold NLL"
    assert [t.get_text() for t in nll_ax.get_xticklabels()] == ["step-1", "step-2"]
    index = (report / "index.md").read_text()
    assert "dyn-series-tiny.png" in index and "dyn-series-tiny.pdf" in index


# --------------------------------------------------------------------------- Lost in Inference
# The shipped file against values read by hand from the paper
# (../shared/docs/papers/003_dbc6b414281a4f28.txt; 000_cbbee423e898d24d.txt).

LII = Path(__file__).parents[2] / "experiments" / "lost-in-inference.yaml"

#: 003's tables and figures that a computation makes, by output name.
LII_LABELS = {
    "figure-1": "Figure 1",
    "figure-2": "Figure 2",
    "table-1": "Table 1",
    "figure-3": "Figure 3",
    "table-2": "Table 2",
    "table-3": "Table 3",
    "figure-5a": "Figure 5 a",
    "figure-5b": "Figure 5 b",
    "figure-6": "Figure 6",
    "figure-7": "Figure 7",
    "table-4": "Table 4",
    "text-4-4-label-change": "§4.4 in-text label change (32% / 25% / 11%)",
}
#: §3.2: Meta-Llama 3.1 {8, 70, 405}B, Mistral 7B / Mixtral 8x{7, 22}B (base models).
LII_SIX = {
    "meta-llama/Llama-3.1-8B",
    "meta-llama/Llama-3.1-70B",
    "meta-llama/Llama-3.1-405B",
    "mistralai/Mistral-7B-v0.1",
    "mistralai/Mixtral-8x7B-v0.1",
    "mistralai/Mixtral-8x22B-v0.1",
}
#: §3.1 / Appendix A: ANLI round 3, HANS, MNLI (matched dev), SNLI, alpha-NLI.
LII_FIVE = {"anli_r3", "hans", "mnli_m", "snli", "alphanli"}


def _options(exp: Experiment, name: str) -> dict[str, Any]:
    out = next(o for o in exp.outputs if o.name == name)
    return {"kind": out.kind, "label": out.label, "blocks": out.blocks,
            **{s.key: s.value for s in out.options}}  # fmt: skip


def test_lost_in_inference_outputs_carry_the_papers_numbers() -> None:
    exp = read_experiment(LII)
    check_outputs(exp)
    assert {o.name: o.label for o in exp.outputs} == LII_LABELS
    # Defect 2: Table 3 is ChaosNLI original vs majority accuracy (not the shot grid), in
    # percent with two decimals, a row per model; Figure 5 a/b are figures, not a table.
    t3 = _options(exp, "table-3")
    assert (t3["kind"], t3["blocks"], t3["rows"]) == ("grid", ("chaosnli",), ["model"])
    assert t3["metrics"] == ["acc_original", "acc_majority"]
    assert (t3["percent"], t3["digits"]) == (True, 2)
    assert not [o for o in exp.outputs if o.kind == "grid" and "benchmarks" in o.blocks]
    for name in ("figure-5a", "figure-5b", "figure-7"):
        assert _options(exp, name)["kind"] == "chaosnli-figure"
    # §4.4: Figure 5 a is Llama 8B and 405B; Appendix B: Figure 7 the other four.
    assert _options(exp, "figure-5a")["models"] == ["llama-3.1-8b", "llama-3.1-405b"]
    # §1: accuracy "as computed on the majority label".
    assert _options(exp, "figure-5a")["curves"] == _options(exp, "figure-7")["curves"] == "majority"
    fig7 = set(_options(exp, "figure-7")["models"])
    assert fig7 == {"llama-3.1-70b", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b"}
    # Table 2's three MNLI items, found by their premises in chaosNLI_mnli_m.jsonl.
    assert _options(exp, "table-2")["ids"] == ["113193c", "125391e", "67610c"]
    # BERT-large JSD of the ChaosNLI scoreboard (Nie et al. 2020b), on 5 b and 6.
    bert = ["chaosnli_snli=0.23", "chaosnli_mnli=0.3152", "chaosnli_alphanli=0.3055"]
    assert _options(exp, "figure-5b")["reference"] == bert
    assert _options(exp, "figure-6")["reference"] == bert
    # Appendix D: 4M tokens a step, so a step is 4e6 training tokens.
    assert _options(exp, "figure-2")["scale"] == 4_000_000
    assert "documents do not name" not in LII.read_text()


def test_lost_in_inference_settings_are_the_papers() -> None:
    exp = read_experiment(LII)
    hub = {m.name: m.model.removeprefix("server:") for m in exp.models}
    entries = {e.block: e for e in exp.matrix}
    for block in ("benchmarks", "chaosnli"):
        assert {hub[m] for m in entries[block].models} == LII_SIX
    # 000 adds Gemma 2 {2, 9, 27}B.
    assert {"google/gemma-2-2b", "google/gemma-2-9b", "google/gemma-2-27b"} <= set(hub.values())
    for block in exp.blocks:
        if block.command == "run":
            # Footnote 3: the few-shot examples of each k drawn once and kept fixed.
            assert block.value("seeds") == [0], block.name
    assert set(exp.block("benchmarks").value("tasks")) == LII_FIVE
    # §4.2: "four-shot performance" on all five benchmarks (Figure 2, Table 1).
    assert set(exp.block("dynamics").value("tasks")) == LII_FIVE
    assert exp.block("dynamics").value("shots") == [4]
    assert exp.block("contamination").value("n") == 8  # §4.3: 8-grams
    assert set(_options(exp, "table-4")["tasks"]) == LII_FIVE
    assert [c.name for c in plan_cells(exp, estimate=False)] == [
        f"{b}-{m}" for b in ("benchmarks", "chaosnli") for m in entries[b].models
    ]
    laptop = read_experiment(LII, ["models=smollm2-135m", "limit=4", "benchmarks.shots=0,1"])
    cells = plan_cells(laptop, estimate=False)
    assert [c.name for c in cells] == ["benchmarks-smollm2-135m", "chaosnli-smollm2-135m"]


def test_the_prompts_are_table_5_word_for_word() -> None:
    import jinja2

    from nlieval.choice.prompts import PromptBuilder
    from nlieval.types import ALPHA, NLI3, Item, Label

    # 003 Table 5, as printed (MNLI, SNLI, ANLI and AbductiveNLI).
    nli = (
        '{% for x in few_shot -%}\nPremise: {{ x["premise"] }}\nHypothesis: '
        '{{ x["hypothesis"] }}\nA. Entailment\nB. Neutral\nC. Contradiction\nAnswer: '
        '{{ x["answer"] }}\n\n{% endfor -%}\nPremise: {{ premise }}\nHypothesis: '
        "{{ hypothesis }}\nA. Entailment\nB. Neutral\nC. Contradiction\nAnswer: {{ choice_text }}"
    )
    alpha = (
        '{% for x in few_shot -%}\nObservation 1: {{ x["obs1"] }}\nObservation 2: '
        '{{ x["obs2"] }}\nA. {{ x["choices"]["A"] }}\nB. {{ x["choices"]["B"] }}\nAnswer: '
        '{{ x["answer"] }}\n\n{% endfor -%}\nObservation 1: {{ obs1 }}\nObservation 2: '
        '{{ obs2 }}\nA. {{ choices["A"] }}\nB. {{ choices["B"] }}\nAnswer: {{ choice_text }}'
    )
    shot = Item("s", "A man sleeps.", "A man is awake.", Label.CONTRADICTION)
    test = Item("t", "A cat sits.", "An animal sits.", Label.ENTAILMENT)
    p = PromptBuilder("nli3", NLI3, [shot]).build(test)
    paper = jinja2.Template(nli).render(
        few_shot=[{"premise": "A man sleeps.", "hypothesis": "A man is awake.", "answer": "C"}],
        premise="A cat sits.", hypothesis="An animal sits.", choice_text="A",
    )  # fmt: skip
    assert p.text + p.continuations[0] == paper
    shot = Item("s", "Ron got a job.", "Ron was fired.", Label.HYP2, ("Hard work.", "Rude."))
    test = Item("t", "Sandy lived in NY.", "Sandy moved.", None, ("It stormed.", "A job."))
    p = PromptBuilder("alphanli", ALPHA, [shot]).build(test)
    paper = jinja2.Template(alpha).render(
        few_shot=[{"obs1": "Ron got a job.", "obs2": "Ron was fired.", "answer": "B",
                   "choices": {"A": "Hard work.", "B": "Rude."}}],
        obs1="Sandy lived in NY.", obs2="Sandy moved.", choices={"A": "It stormed.", "B": "A job."},
        choice_text="B",
    )  # fmt: skip
    assert p.text + p.continuations[1] == paper


# --------------------------------------------------------------------------- the shipped
# MisMatched (002) and meta-inference (004) files: their declarations against values read
# from the papers by hand.

EXPERIMENTS = Path(__file__).parents[2] / "experiments"


def _settings(exp: Experiment, block: str) -> dict[str, object]:
    return {s.key: s.value for s in exp.block(block).settings}


def test_mismatched_file_is_paper_002() -> None:
    exp = read_experiment(EXPERIMENTS / "mismatched.yaml")
    check_outputs(exp)
    models = {m.name: m.model for m in exp.models}
    # Section 4.1: the four open instruct LLMs by the variants it names.
    llms = {
        "meta-llama/Llama-2-13b-chat-hf",
        "meta-llama/Llama-3.1-8B-Instruct",
        "mistralai/Mistral-7B-Instruct-v0.3",
        "microsoft/Phi-3-medium-128k-instruct",
    }
    entry = next(e for e in exp.matrix if e.block == "instruct-llms")
    assert {models[m] for m in entry.models} == llms
    # Appendix C: 5 epochs, patience 2, Adam; Section 4.2: 3 seeds.
    enc = _settings(exp, "encoders")
    assert (enc["epochs"], enc["patience"], enc["optimizer"], enc["seeds"]) == (5, 2, "adam", 3)
    # Section 4.1 / Appendix D: zero-shot and 4 exemplars, 3 runs, the Table 3 prompt.
    llm = _settings(exp, "instruct-llms")
    assert (llm["shots"], llm["runs"], llm["prompt"]) == ([0, 4], 3, "mismatched-table3")
    assert _settings(exp, "shot-scaling")["shots"] == [4, 8, 12, 16]  # Table 6
    assert _settings(exp, "hyp-only")["hypothesis_only"] is True  # Table 7
    assert _settings(exp, "lora")["epochs"] == 3  # Appendix C, Table 15
    outputs = {o.name: o for o in exp.outputs}
    for name, number in (
        ("table-2", "Table 2"),
        ("table-4", "Table 4"),
        ("table-5", "Table 5"),
        ("table-6", "Table 6"),
        ("table-7", "Table 7"),
        ("tables-8-16", "Tables 8 and 16"),
        ("table-9", "Table 9"),
        ("table-11", "Table 11"),
        ("table-15", "Table 15"),
    ):
        assert (outputs[name].label or "").startswith(number)
    # The paper's Table 4 has no Average row.
    assert {s.key: s.value for s in outputs["table-4"].options}["no_average"] is True
    cells = {c.name for c in plan_cells(exp, estimate=False)}
    # Parts whose data is not here make no cell until given.
    assert not {c for c in cells if c.startswith(("in-domain", "lora", "implicit"))}


def test_meta_inference_file_is_paper_004() -> None:
    exp = read_experiment(EXPERIMENTS / "meta-inference.yaml")
    check_outputs(exp)
    models = {m.name: m.model for m in exp.models}
    # Appendix D: the three generators.
    gens = {models[m] for e in exp.matrix if e.block.startswith("generated-") for m in e.models}
    assert gens == {
        "meta-llama/Llama-3.2-3B-Instruct",
        "meta-llama/Llama-3.3-70B-Instruct",
        "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    }
    # Appendix E: the last 2 layers, Adam at 0.001, batch 64, 10 epochs, no weight decay.
    bert = _settings(exp, "bert")
    assert (bert["top_layers"], bert["optimizer"], bert["lr"]) == (2, "adam", 0.001)
    assert (bert["batch_size"], bert["epochs"], bert["weight_decay"]) == (64, 10, 0)
    assert _settings(exp, "bert-hyp")["hypothesis_only"] is True
    # Section 5.3: the inferred items come from SNLI test.
    for block in ("items", "chains-ds-r1", "chains-ll33", "sources"):
        assert _settings(exp, block)["split"] == "test"
    assert _settings(exp, "bert")["test_split"] == "test"
    labels = {o.name: o.label or "" for o in exp.outputs}
    assert labels["table-2"].startswith("Table 2")
    for col in ("snli", "ll32", "ll33", "ds-r1"):
        assert labels[f"table-3-{col}"].startswith("Table 3, column")
    assert labels["tables-4-7"].startswith("Tables 4 and 7")
    assert labels["tables-8-9"].startswith("Tables 8 and 9")
    t3 = next(o for o in exp.outputs if o.name == "table-3-snli")
    assert {s.key: s.value for s in t3.options}["reference_by"] == "hypothesis_only=true"
