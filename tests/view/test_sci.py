"""The confusion and meta-inference pages of ``nlieval view`` (their data, read back from
the site's script files; no browser): the confusion matrices are what ``nlieval
sci-report`` prints and writes with ``--json``, counted here by hand too; the inferred
items are those of the items file ``infer build`` wrote, with their input items' texts
and the labels ``nlieval infer report`` says each reading allows, and the report's
tables are the command's.

The folders are made without a model: ``nlieval instruct`` with a fake chat model (the
one of tests/sci/test_instruct_cli.py) and ``nlieval import`` of labels.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import instruct as cli_instruct
from nlieval.cli import main
from nlieval.types import SCI4
from nlieval.view import ViewConfig, build_site
from nlieval.view.sci import is_sci_folder
from tests.sci.test_instruct_cli import N_ITEMS, SHAPES, ShapeChat, _argv, _task
from tests.view.test_site import read_js

NLI = ("entailment", "neutral", "contradiction")
A = "A man sleeps on a couch."
B = "Two dogs run in the snow."
# Source items sharing premises: reversals of each, and shared-premise pairs.
SOURCE = {
    "e1": (A, "A person rests.", "entailment"),
    "n1": (A, "A man sleeps after work.", "neutral"),
    "c1": (A, "A man runs a marathon.", "contradiction"),
    "e2": (B, "Animals are outside.", "entailment"),
    "c2": (B, "Two cats sleep indoors.", "contradiction"),
}
# The model's labels on the source items: right on e1, n1, c1; wrong on e2, c2.
ON_SOURCE = {"e1": "entailment", "n1": "neutral", "c1": "contradiction", "e2": "neutral",
             "c2": "entailment"}  # fmt: skip


def imported_labels(n: int) -> str:
    """The label the imported model "<b>m</b>" gives SciNLI-style item n."""
    return SCI4[(3 * n + 1) % 4].value


def make_sci(root: Path) -> list[str]:
    """Two scientific-NLI folders on a 20-item four-class task: ``nlieval instruct`` of a
    fake chat model (k=0 once, k=4 three runs; unparsed answers) and an import of labels
    under the model name ``<b>m</b>``."""
    root.mkdir(parents=True, exist_ok=True)
    yaml = _task(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli_instruct, "instruct_backend", lambda config: ShapeChat())
        assert main(_argv(yaml, root / "instruct")) == 0
    labels = root / "labels.csv"
    labels.write_text("id,pred\n" + "".join(f"t{n},{imported_labels(n)}\n" for n in range(N_ITEMS)))
    argv = ["import", str(labels), "--format", "labels", "--task", str(yaml)]
    assert main([*argv, "--model", "<b>m</b>", "--out", str(root / "imported")]) == 0
    return [str(root / "instruct"), str(root / "imported")]


def inferred_label(at: int) -> str:
    """The label the model gives the inferred item on line ``at`` of the items file."""
    return NLI[at % 3]


def make_infer(root: Path, premise_a: str = A) -> dict[str, str]:
    """``infer build`` on :data:`SOURCE` (premise A replaced by ``premise_a``), the
    model ``m``'s labels imported on the inferred items and on the source items."""
    root.mkdir(parents=True, exist_ok=True)
    rows = [{"id": k, "premise": premise_a if p == A else p, "hypothesis": h, "label": lab}
            for k, (p, h, lab) in SOURCE.items()]  # fmt: skip
    (root / "src.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    src = root / "src.yaml"
    src.write_text(
        "name: src\npath: src.jsonl\nfields: {id: id}\n"
        "labels: [entailment, neutral, contradiction]\n"
    )
    items = root / "inf"
    assert main(["infer", "build", "--task", str(src), "--out", str(items)]) == 0
    ids = [json.loads(line)["id"] for line in (items / "items.jsonl").read_text().splitlines()]
    on_inferred = root / "inferred.csv"
    on_inferred.write_text("id,pred\n" + "".join(f"{i},{inferred_label(at)}\n"
                                                 for at, i in enumerate(ids)))  # fmt: skip
    on_source = root / "source.csv"
    on_source.write_text("id,pred\n" + "".join(f"{k},{v}\n" for k, v in ON_SOURCE.items()))
    out = {"items": str(items), "run": str(root / "imp-inf"), "source": str(root / "imp-src")}
    for path, task, folder in ((on_inferred, items / "task.yaml", out["run"]),
                               (on_source, src, out["source"])):  # fmt: skip
        argv = ["import", str(path), "--format", "labels", "--task", str(task)]
        assert main([*argv, "--model", "m", "--out", folder]) == 0
    return out


def md_tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of a command's output: header and rows of cells."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if not set(line) <= set("|-"):
                current.append([c.replace("\\|", "|") for c in cells])
        elif current:
            tables.append(current)
            current = []
    return tables


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("view-sci")
    sci = make_sci(root / "sci")
    infer = make_infer(root / "infer")
    runs = (*sci, infer["run"], infer["source"])
    site = build_site(ViewConfig(runs=runs, out=str(root / "site")))
    return {"sci": sci, "infer": infer, "meta": read_js(site / "data" / "meta.js"), "root": root}


def test_only_the_scientific_folders_are_on_the_confusion_page(folders: dict[str, Any]) -> None:
    sci = folders["meta"]["sci"]
    assert sci["folders"] == folders["sci"]
    assert sci["command"].split()[:2] == ["nlieval", "sci-report"]
    # An infer run and its source run are NLI folders: no confusion page for them.
    assert not is_sci_folder(folders["infer"]["run"])
    assert not is_sci_folder(folders["infer"]["source"])


def _confusions(meta: dict[str, Any]) -> list[dict[str, Any]]:
    # Told by the table's kind, never by its title's text.
    return [b for b in meta["sci"]["blocks"] if b.get("kind") == "confusion"]


def test_the_confusion_matrices_are_sci_reports_and_counted_by_hand(
    folders: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    meta = folders["meta"]
    report = tmp_path / "report.json"
    text = cli(capsys, "sci-report", *folders["sci"], "--json", str(report))
    shown = [[b["header"], *b["rows"]] for b in meta["sci"]["blocks"] if "header" in b]
    assert shown == md_tables(text)
    titles = [b["text"][-1] for b in _confusions(meta)]
    assert titles == [ln for ln in text.splitlines() if ln.startswith("Confusion, ")]
    # By hand: the fake chat answers item n with shape n % 10 (None: unparsed); gold is
    # SCI4[n % 4]; k=0 is one run, k=4 three runs of the same answers.
    classes = [c.value for c in SCI4]
    once = Counter((SCI4[n % 4].value, SHAPES[n % len(SHAPES)][1] or "unparsed")
                   for n in range(N_ITEMS))  # fmt: skip
    columns = [*classes, "unparsed"]
    expected = [[g, *(str(once[g, p]) for p in columns)] for g in classes]
    by_title = {b["text"][-1]: b for b in _confusions(meta)}
    k0 = by_title["Confusion, fake/chat, mini, k=0 (1 run):"]
    k4 = by_title["Confusion, fake/chat, mini, k=4 (3 runs summed):"]
    assert k0["header"] == ["gold \\ predicted", *columns] and k0["rows"] == expected
    # The counts come as numbers beside the texts (the page shades by them).
    assert k0["values"] == [[None, *(once[g, p] for p in columns)] for g in classes]
    assert k0["runs"] == []
    assert k4["rows"] == [[g, *(str(3 * int(x)) for x in rest)] for g, *rest in expected]
    assert [r["title"] for r in k4["runs"]] == ["seed 0", "seed 1", "seed 2"]
    assert all(r["rows"] == expected for r in k4["runs"])
    assert all(r["values"] == k0["values"] for r in k4["runs"])
    # The imported labels: no unparsed answer, so no unparsed column (as sci-report).
    imp = by_title["Confusion, <b>m</b>, mini, k=0 (1 run):"]
    pairs = Counter((SCI4[n % 4].value, imported_labels(n)) for n in range(N_ITEMS))
    assert imp["header"] == ["gold \\ predicted", *classes]
    assert imp["rows"] == [[g, *(str(pairs[g, p]) for p in classes)] for g in classes]
    # Each run's matrix is the one sci-report --json writes.
    rows = json.loads(report.read_text())["rows"]
    for block, row in zip(_confusions(meta), rows, strict=True):
        ncol = len(block["header"]) - 1
        got = [r[1:] for run in block["runs"] for r in run["values"]]
        want = [c[:ncol] for p in row["per_run"] for c in p["confusion"]] if row["runs"] > 1 else []
        assert got == want


def test_the_inferred_items_with_their_inputs_and_allowed_labels(
    folders: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    infer = folders["infer"]
    (page,) = folders["meta"]["infer"]
    assert (page["folder"], page["items_folder"], page["source_run"]) == (
        infer["run"],
        infer["items"],
        infer["source"],
    )
    argv = page["command"].split()
    assert argv == ["nlieval", "infer", "report", infer["run"], "--items", infer["items"],
                    "--source-run", infer["source"]]  # fmt: skip
    text = cli(capsys, *argv[1:])
    shown = [[b["header"], *b["rows"]] for b in page["blocks"] if "header" in b]
    assert shown == md_tables(text)
    assert page["blocks"][-1]["text"] == [text.strip().splitlines()[-1]]  # the frames line
    rows = json.loads(cli(capsys, *argv[1:], "--format", "json"))
    allowed = {(r["input"], r["target"]): r["allowed"] for r in rows}
    inferred_as = {(r["input"], r["target"]): r["inferred"] for r in rows}
    lines = [json.loads(x) for x in Path(infer["items"], "items.jsonl").read_text().splitlines()]
    assert [it["id"] for it in page["items"]] == [x["id"] for x in lines]
    assert Counter(it["pattern"] for it in page["items"]) == {"reversal": 5, "shared-premise": 8}
    for at, (it, line) in enumerate(zip(page["items"], lines, strict=True)):
        assert (it["premise"], it["hypothesis"]) == (line["premise"], line["hypothesis"])
        assert (it["input"], it["target"]) == (line["input"], line["target"])
        key = (it["input"], it["target"])
        assert {n: r["allowed"] for n, r in it["readings"].items()} == allowed[key]
        assert {n: r["inferred"] for n, r in it["readings"].items()} == inferred_as[key]
        assert [s["id"] for s in it["sources"]] == line["sources"]
        for s in it["sources"]:
            p, h, lab = SOURCE[s["id"]]
            assert (s["premise"], s["hypothesis"], s["label"]) == (p, h, lab)
        (pred,) = it["predictions"]
        assert (pred["point"], pred["pred"]) == ("m, k=0, seed=0", inferred_label(at))
    # By hand, two items: the reversal of e1 answered E (line 0): E(a,b) allows E or C
    # for (b, a) under MC, anything under SC, and rules out C under EI; E is allowed by
    # all three. The reversal of n1 (line 1) answered N: N can never hold under MC (no
    # verdict, consistent with none), SC rules out C only, EI nothing.
    first = page["items"][0]
    assert (first["id"], first["predictions"][0]["pred"]) == ("inf:reversal:e1", "entailment")
    assert first["readings"]["EI"] == {"inferred": "~C", "allowed": ["E", "N"]}
    assert first["predictions"][0]["consistent"] == ["MC", "SC", "EI"]
    assert first["predictions"][0]["inconsistent"] == []
    second = page["items"][1]
    assert (second["id"], second["predictions"][0]["pred"]) == ("inf:reversal:n1", "neutral")
    assert second["readings"]["MC"] == {"inferred": "vacuous", "allowed": []}
    assert second["predictions"][0]["consistent"] == ["SC", "EI"]
    assert second["predictions"][0]["inconsistent"] == []  # no verdict under MC
    # The reversal of c2 (line 4) answered N: C(a,b) forces C(b,a) under MC and SC;
    # EI rules out E only.
    fifth = page["items"][4]
    assert (fifth["id"], fifth["predictions"][0]["pred"]) == ("inf:reversal:c2", "neutral")
    assert fifth["predictions"][0]["consistent"] == ["EI"]
    assert fifth["predictions"][0]["inconsistent"] == ["MC", "SC"]


def test_a_site_of_nli_folders_alone_has_neither_page(folders: dict[str, Any]) -> None:
    site = build_site(
        ViewConfig(runs=(folders["infer"]["source"],), out=str(folders["root"] / "plain"))
    )
    meta = read_js(site / "data" / "meta.js")
    assert meta["sci"] is None and meta["infer"] == []


def test_an_import_on_the_four_classes_in_another_order_is_scientific(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # MisMatched's task file (docs/examples) lists the SciNLI classes in its own order.
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mismatched"
    argv = ["import", str(example / "bert.csv"), "--format", "labels"]
    cli(
        capsys,
        *argv,
        "--task",
        str(example / "task.yaml"),
        "--model",
        "bert",
        "--out",
        str(tmp_path),
    )
    assert is_sci_folder(tmp_path)


def test_a_run_of_a_train_folder_is_scientific(tmp_path: Path) -> None:
    # `nlieval run --model <train folder>` (or its seed folder) on an NLI task: a
    # fine-tuned classifier, as sci-report reads it.
    (tmp_path / "clf" / "seed0").mkdir(parents=True)
    (tmp_path / "clf" / "config.json").write_text('{"kind": "train"}')
    for model, expected in (("clf", True), ("clf/seed0", True), ("gpt2", False)):
        run = tmp_path / f"run-{model.replace('/', '-')}"
        run.mkdir()
        cfg = {"kind": "run", "tasks": ["snli"], "model": str(tmp_path / model)}
        (run / "config.json").write_text(json.dumps(cfg))
        (run / "records.jsonl").write_text("")
        assert is_sci_folder(run) is expected, model


@pytest.mark.parametrize("answered", [True, False])
def test_an_edited_items_file_is_one_line_naming_it(
    answered: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An item's input labels made unreadable after the run; the item answered (the
    # report reads it) or not (only the item list does).
    infer = make_infer(tmp_path / "infer")
    path = Path(infer["items"], "items.jsonl")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[0]["input"] = "Xab &"
    if not answered:
        lines[0]["id"] = "inf:reversal:unanswered"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    capsys.readouterr()
    argv = ["view", infer["run"], infer["source"], "--out", str(tmp_path / "site")]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert infer["items"] in err and "expected a formula" in err
