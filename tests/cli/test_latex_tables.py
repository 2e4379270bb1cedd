"""``--format latex`` compiles: a table of grid, compare, breakdown, chaosnli, sci-report
and infer report (issue 31, acceptance 3), and of report, items, stats and dynamics, each
pasted into a document that pdflatex (Debian's texlive with booktabs,
``scripts/setup_latex.sh``) must turn into a PDF.

Marked ``latex``: without pdflatex the tests skip, and with ``NLIEVAL_LATEX=1``
(``.ci/run``) they fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from nlieval.choice import RunConfig
from nlieval.cli import main
from nlieval.runs import RunFolder
from nlieval.types import Record
from tests.helpers.engines import absent

pytestmark = pytest.mark.latex

NLI = ("entailment", "neutral", "contradiction")


@pytest.fixture(scope="module")
def pdflatex() -> str:
    found = shutil.which("pdflatex")
    if found is None:
        absent("pdflatex", "NLIEVAL_LATEX", "no pdflatex; run scripts/setup_latex.sh")
    assert found is not None
    return found


def _compile(pdflatex: str, table: str, where: Path) -> None:
    where.mkdir()
    doc = "\n".join(
        [r"\documentclass{article}", r"\usepackage{booktabs}", r"\begin{document}", table,
         r"\end{document}"]
    )  # fmt: skip
    (where / "t.tex").write_text(doc, encoding="utf-8")
    done = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert (where / "t.pdf").read_bytes()[:5] == b"%PDF-"


def _folder(
    path: Path, model: str, task: str, records: list[Record], checkpoints: tuple[str, ...] = ()
) -> str:
    rf = RunFolder(path)
    rf.start(RunConfig(model=model, tasks=(task,), checkpoints=checkpoints))
    rf.append(records)
    return str(path)


def _records(model: str, flip: int) -> list[Record]:
    # Six smoke items, two seeds; the genre (with LaTeX's special characters) to break down by.
    return [
        Record("smoke", f"smoke-0{i}", model, 0, seed, NLI, (-0.5, -1.0, -2.0), (0.6, 0.3, 0.1),
               NLI[(i + seed * flip) % 3], NLI[i % 3], meta={"genre": "fic_tion & 50%"})
        for i in range(1, 7)
        for seed in (0, 1)
    ]  # fmt: skip


def _chaos(model: str) -> list[Record]:
    meta = {"human_counts": [60, 30, 10], "majority_label": "entailment"}
    return [
        Record("chaosnli_snli", str(i), model, 0, 0, NLI, (-0.5, -1.0, -2.0), (0.6, 0.3, 0.1),
               NLI[i % 2], "entailment", meta=meta)
        for i in range(6)
    ]  # fmt: skip


def _latex(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()  # what making the folders printed
    assert main([*argv, "--format", "latex"]) == 0
    out = capsys.readouterr().out
    assert r"\toprule" in out and r"\midrule" in out and r"\bottomrule" in out
    assert "|---" not in out
    return out


def test_tables_of_six_commands_compile(
    pdflatex: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _folder(tmp_path / "a", "org/model_a", "smoke", _records("org/model_a", 1))
    b = _folder(tmp_path / "b", "org/model#b", "smoke", _records("org/model#b", 2))
    c = _folder(tmp_path / "c", "chaos_m", "chaosnli_snli", _chaos("chaos_m"))
    tables = {
        "grid": _latex(["grid", a, b, "--metrics", "accuracy,gold_nll", "--percent"], capsys),
        "compare": _latex(["compare", a, b, "--resamples", "200"], capsys),
        "breakdown": _latex(["breakdown", a, b, "--by", "genre"], capsys),
        "chaosnli": _latex(["chaosnli", c, "--bins", "2"], capsys),
        "sci-report": _latex(["sci-report", a, b], capsys),
        "infer report": _latex(_infer_report(tmp_path), capsys),
    }
    assert r"org/model\_a" in tables["grid"] and r"fic\_tion \& 50\%" in tables["breakdown"]
    for name, table in tables.items():
        _compile(pdflatex, table, tmp_path / name.replace(" ", "-"))


def test_tables_of_the_other_table_commands_compile(
    pdflatex: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _folder(tmp_path / "a", "org/model_a", "smoke", _records("org/model_a", 1))
    steps = [
        replace(r, checkpoint=f"step{step}", pred=NLI[(i + step) % 3])
        for step in (0, 10, 20)
        for i, r in enumerate(_chaos("m"))
    ]
    dyn = _folder(tmp_path / "dyn", "m", "chaosnli_snli", steps, ("step0", "step10", "step20"))
    tables = {
        "report": _latex(["report", a, "--no-write"], capsys),
        "items": _latex(["items", a, "--full"], capsys),
        "stats": _latex(["stats", "--task", "smoke"], capsys),
        "dynamics": _latex(["dynamics", dyn], capsys),
    }
    assert "seed" in tables["items"].splitlines()[2]
    for name, table in tables.items():
        _compile(pdflatex, table, tmp_path / name)


def _infer_report(tmp: Path) -> list[str]:
    # Two source items and their reversals (infer build), a run that answers neutral.
    src = tmp / "src"
    src.mkdir()
    rows = [
        {"id": i, "premise": "A man sleeps.", "hypothesis": h, "label": label}
        for i, h, label in [
            ("e1", "A man rests.", "entailment"),
            ("c1", "He runs.", "contradiction"),
        ]
    ]
    (src / "src.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (src / "src.yaml").write_text(
        "name: src\npath: src.jsonl\nfields: {id: id}\n"
        "labels: [entailment, neutral, contradiction]\n"
    )
    items = tmp / "inf"
    assert main(["infer", "build", "--task", str(src / "src.yaml"), "--out", str(items)]) == 0
    ids = [json.loads(line)["id"] for line in (items / "items.jsonl").read_text().splitlines()]
    run = tmp / "infer-run"
    run.mkdir()
    records = [
        Record("inferred", i, "m", 0, 0, NLI, (0.0, 0.0, 0.0), (1 / 3,) * 3, "neutral", None)
        for i in ids
    ]
    (run / "records.jsonl").write_text("".join(r.to_json() + "\n" for r in records))
    return ["infer", "report", str(run), "--items", str(items)]
