"""The printed tables of the commands across run folders are unchanged by how they are
built (issue 44, acceptance 5): the Markdown, LaTeX and CSV of ``grid``, ``breakdown``,
``items``, ``compare``, ``report``, ``chaosnli``, ``dynamics`` and ``stats`` on folders
made here are, byte for byte, what the commands printed before their tables became values
(``tests/fixtures/table_outputs.json``, written by the code of commit b140a4b, when every
table was Markdown text converted to LaTeX)."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import replace
from pathlib import Path

from nlieval.choice import RunConfig
from nlieval.cli import main
from nlieval.runs import RunFolder
from nlieval.types import Record

FIXTURE = Path(__file__).parent.parent / "fixtures" / "table_outputs.json"
NLI = ("entailment", "neutral", "contradiction")


def _folder(
    path: Path, model: str, records: list[Record], checkpoints: tuple[str, ...] = ()
) -> str:
    rf = RunFolder(path)
    rf.start(RunConfig(model=model, tasks=(records[0].task,), checkpoints=checkpoints))
    rf.append(records)
    return str(path)


def _smoke(model: str, flip: int, k: int = 0) -> list[Record]:
    # Six smoke items at two seeds; genre (with LaTeX's special characters) to break down by.
    return [
        Record("smoke", f"smoke-0{i}", model, k, seed, NLI, (-0.5, -1.0 - i / 10, -2.0),
               (0.6, 0.3, 0.1), NLI[(i + seed * flip) % 3], NLI[i % 3],
               meta={"genre": "fic_tion & 50%" if i % 2 else "gov",
                     "heuristic": "lex" if i < 4 else "sub"})
        for i in range(1, 7)
        for seed in (0, 1)
    ]  # fmt: skip


def _chaos(model: str, shift: int = 0) -> list[Record]:
    return [
        Record("chaosnli_snli", str(i), model, 0, 0, NLI, (-0.5, -1.0 - i / 7, -2.0 + shift),
               (0.6, 0.3, 0.1), NLI[(i + shift) % 3], "entailment",
               meta={"human_counts": [60 - 5 * i, 30 + 3 * i, 10 + 2 * i],
                     "majority_label": "entailment"})
        for i in range(8)
    ]  # fmt: skip


def outputs(tmp: Path) -> dict[str, str]:
    """What each command prints on the folders made in ``tmp`` (``tmp`` written TMP)."""
    a = _folder(tmp / "a", "org/model_a", _smoke("org/model_a", 1) + _smoke("org/model_a", 1, 2))
    b = _folder(tmp / "b", "org/model#b", _smoke("org/model#b", 2) + _smoke("org/model#b", 2, 2))
    c = _folder(tmp / "c", "chaos_m", _chaos("chaos_m"))
    d = _folder(tmp / "d", "chaos_n", _chaos("chaos_n", 1))
    steps = [
        replace(r, checkpoint=f"step{s}", pred=NLI[(i + s) % 3])
        for s in (0, 10, 20)
        for i, r in enumerate(_chaos("m"))
    ]
    dyn = _folder(tmp / "dyn", "m", steps, ("step0", "step10", "step20"))
    rows = ["--rows", "model,k"]
    cases = {
        "grid": (
            ["grid", a, b, *rows, "--metrics", "accuracy,gold_nll", "--percent"],
            "md latex csv",
        ),
        "grid_ci": (["grid", a, b, *rows, "--ci", "0.9", "--resamples", "50"], "md latex csv"),
        "grid_genre": (["grid", a, b, *rows, "--cols", "genre", "--metrics", "macro_f1"], "md"),
        "grid_chaos": (["grid", c, d, "--metrics", "acc_original,js_distance"], "md"),
        "breakdown": (["breakdown", a, b, "--by", "genre"], "md latex csv"),
        "breakdown2": (["breakdown", a, "--by", "heuristic,gold"], "md"),
        "items": (["items", a, b, "--filter", "disagree"], "md latex csv"),
        "compare": (["compare", a, b, "--resamples", "100"], "md latex"),
        "report": (["report", a, b, "--no-write"], "md latex"),
        "report_chaos": (["report", c, "--no-write"], "md"),
        "chaosnli": (["chaosnli", c, d, "--bins", "2"], "md latex"),
        "dynamics": (["dynamics", dyn], "md latex"),
        "stats": (["stats", "--task", "smoke", "--split", "all"], "md latex"),
    }
    out = {}
    for name, (argv, formats) in cases.items():
        for fmt in formats.split():
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert main([*argv, "--format", fmt]) == 0, (name, fmt)
            out[f"{name}.{fmt}"] = buf.getvalue().replace(str(tmp), "TMP")
    return out


def test_the_printed_tables_are_unchanged(tmp_path: Path) -> None:
    want = json.loads(FIXTURE.read_text(encoding="utf-8"))
    got = outputs(tmp_path)
    assert sorted(got) == sorted(want)
    for name, text in got.items():
        assert text == want[name], name
