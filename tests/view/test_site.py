"""The data ``nlieval view`` writes, read back from the site's script files (no browser):
the filter flags of hand-made items, the JS distances, the escaping of texts, the grid as
``nlieval grid`` prints it, where the site may be written, and ``--serve``."""

from __future__ import annotations

import json
import math
import shlex
import threading
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import main
from nlieval.data import load_task
from nlieval.runs import RunError, RunFolder
from nlieval.types import Record
from nlieval.view import ViewConfig, build_site, serve
from tests.helpers.task_files import premise_task

NLI = ("entailment", "neutral", "contradiction")
ATTACK = "<img src=x onerror=alert(1)></script><script>alert(2)</script><!-- & \u2028"


def _rec(model: str, item: str, pred: str, gold: str, task: str = "t", **meta: Any) -> Record:
    probs = tuple(0.8 if lab == pred else 0.1 for lab in NLI)
    loglik = tuple(math.log(p) for p in probs)
    return Record(task, item, model, 0, 0, NLI, loglik, probs, pred, gold,
                  prompt=f"prompt of {item} for {model}", meta=meta)  # fmt: skip


def read_js(path: Path) -> Any:
    """The JSON a data file of the site registers (``NLIEVAL.meta(...)``, ``chunk(n, ...)``)."""
    text = path.read_text(encoding="ascii").strip()
    assert text.endswith(");")
    body = text[text.index("(") + 1 : -2]
    if text.startswith("NLIEVAL.chunk("):
        body = body.split(", ", 1)[1]
    return json.loads(body)


@pytest.fixture
def hand_made(tmp_path: Path) -> tuple[Path, Path]:
    # Items whose flags are known by hand:
    # 1: both right.                      -> none
    # 2: a right, b wrong                 -> disagree, any-wrong
    # 3: both wrong, the same label       -> all-wrong, any-wrong
    # 4: both wrong, different labels     -> disagree, all-wrong, any-wrong
    # 5: both right; majority != gold     -> majority-changed
    chaos = {"human_counts": [10, 80, 10], "majority_label": "neutral"}
    rows = [("1", "entailment", "entailment", "entailment", {}),
            ("2", "neutral", "contradiction", "neutral", {}),
            ("3", "neutral", "neutral", "entailment", {}),
            ("4", "neutral", "contradiction", "entailment", {}),
            ("5", "entailment", "entailment", "entailment", chaos)]  # fmt: skip
    a, b = tmp_path / "exp" / "a", tmp_path / "exp" / "b"
    a.mkdir(parents=True)
    b.mkdir()
    RunFolder(a).append([_rec("ma", i, pa, g, **m) for i, pa, _pb, g, m in rows])
    RunFolder(b).append([_rec("mb", i, pb, g, **m) for i, pa, pb, g, m in rows])
    return a, b


def test_the_filter_flags_of_hand_made_items(hand_made: tuple[Path, Path], tmp_path: Path) -> None:
    site = build_site(ViewConfig(runs=tuple(map(str, hand_made)), out=str(tmp_path / "site")))
    meta = read_js(site / "data" / "meta.js")
    ix = meta["items"]
    assert ix["id"] == ["1", "2", "3", "4", "5"]
    names = ix["filters"]
    kept = {
        f: [ix["id"][i] for i in range(5) if ix["flags"][i] >> names.index(f) & 1] for f in names
    }
    assert kept == {"disagree": ["2", "4"], "all-wrong": ["3", "4"],
                    "any-wrong": ["2", "3", "4"], "majority-changed": ["5"]}  # fmt: skip
    assert ix["wrong"] == [0, 1, 2, 2, 0]
    assert ix["preds"] == {"ma": ["entailment", "neutral", "neutral", "neutral", "entailment"],
                           "mb": ["entailment", "contradiction", "neutral", "contradiction",
                                  "entailment"]}  # fmt: skip
    row = read_js(site / "data" / "chunk-00000.js")["rows"][4]
    assert row["human"] == {"entailment": 10, "neutral": 80, "contradiction": 10}
    ma = row["models"][0]
    assert ma["prompt"] == "prompt of 5 for ma" and ma["probs"] == [0.8, 0.1, 0.1]
    # Entropy of (0.8, 0.1, 0.1) in bits, and the JS distance (natural log) between the
    # humans' (0.1, 0.8, 0.1) and the model's (0.8, 0.1, 0.1), by hand.
    h, p = (0.1, 0.8, 0.1), (0.8, 0.1, 0.1)
    mid = [(x + y) / 2 for x, y in zip(h, p, strict=True)]
    kl = lambda a, b: sum(x * math.log(x / y) for x, y in zip(a, b, strict=True))  # noqa: E731
    assert ma["entropy"] == pytest.approx(-(0.8 * math.log2(0.8) + 0.2 * math.log2(0.1)))
    assert ma["js"] == pytest.approx(math.sqrt((kl(h, mid) + kl(p, mid)) / 2))
    assert ix["js"]["ma"][:4] == [None] * 4  # no human labels there


def test_the_counts_equal_nlieval_items(
    hand_made: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = list(map(str, hand_made))
    assert main(["view", *runs, "--out", str(tmp_path / "site")]) == 0
    capsys.readouterr()
    ix = read_js(tmp_path / "site" / "data" / "meta.js")["items"]
    for combo in (["disagree"], ["all-wrong"], ["any-wrong"], ["majority-changed"],
                  ["disagree", "all-wrong"]):  # fmt: skip
        need = sum(1 << ix["filters"].index(f) for f in combo)
        shown = sum(flags & need == need for flags in ix["flags"])
        argv = ["items", *runs, "--filter", ",".join(combo), "--format", "json", "--max-rows", "99"]
        assert main(argv) == 0
        assert shown == len(json.loads(capsys.readouterr().out)), combo


def test_texts_are_escaped_in_the_script_files(tmp_path: Path) -> None:
    task = premise_task(tmp_path, "attack", {"x1": ATTACK, "x2": "A dog runs."})
    folder = tmp_path / "run"
    folder.mkdir()
    RunFolder(folder).append([_rec("m", "x1", "neutral", "entailment", "attack"),
                              _rec("m", "x2", "entailment", "entailment", "attack")])  # fmt: skip
    (folder / "config.json").write_text(json.dumps({"tasks": [str(task)], "note": ATTACK}))
    site = build_site(ViewConfig(runs=(str(folder),), out=str(tmp_path / "site")))
    for path in (site / "data").iterdir():
        raw = path.read_bytes()
        # Nothing in a data file can end a script, open a comment or a tag, or a line.
        assert b"<" not in raw and b">" not in raw and b"&" not in raw
        assert max(raw) < 128
    rows = read_js(site / "data" / "chunk-00000.js")["rows"]
    assert rows[0]["premise"] == ATTACK  # and it reads back whole
    assert read_js(site / "data" / "meta.js")["runs"][0]["config"]["note"] == ATTACK


def test_the_results_are_the_grid_that_nlieval_grid_prints(
    hand_made: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = list(map(str, hand_made))
    site = build_site(ViewConfig(runs=tuple(runs), out=str(tmp_path / "site")))
    grids = read_js(site / "data" / "meta.js")["grids"]
    assert main(["grid", *runs]) == 0
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("|")]
    acc = grids[0]
    assert "| " + " | ".join(acc["header"]) + " |" == table[0]
    assert ["| " + " | ".join(r) + " |" for r in acc["rows"]] == table[2:]
    # ma is right on 3 of 5 items (1, 2, 5), mb on 2 (1, 5): by hand.
    assert acc["rows"][0][1:] == ["0.600"] and acc["rows"][1][1:] == ["0.400"]
    # The numbers behind the texts (the page sorts by them): a model's name is text; the
    # last row, the mean of the two.
    assert acc["values"] == [[None, pytest.approx(v)] for v in (3 / 5, 2 / 5, 1 / 2)]
    # One grid per metric of the table scored from labels alone, then ChaosNLI's.
    assert [g["title"] for g in grids] == ["accuracy", "macro F1", "ChaosNLI"]
    assert main(["grid", *runs, "--metrics", "macro_f1"]) == 0
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("|")]
    assert ["| " + " | ".join(r) + " |" for r in grids[1]["rows"]] == table[2:]


def test_a_folder_of_run_folders_and_where_the_site_may_go(
    hand_made: tuple[Path, Path], tmp_path: Path
) -> None:
    experiment = hand_made[0].parent
    out = tmp_path / "site"
    build_site(ViewConfig(runs=(str(experiment),), out=str(out)))
    assert read_js(out / "data" / "meta.js")["items"]["models"] == ["ma", "mb"]
    (out / "data" / "chunk-00099.js").write_text("stale")
    build_site(ViewConfig(runs=(str(hand_made[0]),), out=str(out)))  # an older site: replaced
    assert sorted(p.name for p in (out / "data").iterdir()) == ["chunk-00000.js", "meta.js"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(RunError, match="not a site of nlieval view"):
        build_site(ViewConfig(runs=(str(hand_made[0]),), out=str(mine)))
    assert (mine / "notes.txt").read_text() == "keep me"
    with pytest.raises(RunError, match="nothing to show: .*no run folder, and holds none"):
        build_site(ViewConfig(runs=(str(mine),), out=str(tmp_path / "other")))


def test_serve_gives_the_site_folder_alone(hand_made: tuple[Path, Path], tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("not for the web")
    site = build_site(ViewConfig(runs=(str(hand_made[0]),), out=str(tmp_path / "site")))
    with serve(site, port=0) as server:
        assert server.server_address[0] == "127.0.0.1"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(f"{base}/index.html", timeout=10) as answer:
            assert b"nlieval view" in answer.read()
        for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/data/"):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(base + path, timeout=10)
            assert err.value.code == 404, path
        server.shutdown()


def test_the_page_script_never_parses_markup_and_loads_nothing_from_elsewhere() -> None:
    from nlieval.view.site import ASSETS

    script = (ASSETS / "app.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function", "fetch(", "XMLHttpRequest"):  # fmt: skip
        assert sink not in script, sink
    page = (ASSETS / "index.html").read_text(encoding="utf-8")
    assert "http:" not in page and "https:" not in page and "//" not in page.split("<body>")[1]
    assert "script-src 'self'" in page and "default-src 'none'" in page


def test_a_folder_of_nlieval_import_shows_its_items_texts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An import's config.json names its one task ("task"), its records the task as given.
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mismatched"
    folder = tmp_path / "bert"
    argv = ["import", str(example / "bert.csv"), "--format", "labels"]
    assert (
        main([*argv, "--task", str(example / "task.yaml"), "--model", "bert", "--out", str(folder)])
        == 0
    )
    assert main(["items", str(folder), "--ids", "eng-1"]) == 0
    assert "| The alloy was heated to 900 C. |" in capsys.readouterr().out
    site = build_site(ViewConfig(runs=(str(folder),), out=str(tmp_path / "site")))
    meta = read_js(site / "data" / "meta.js")
    at = meta["items"]["id"].index("eng-1")
    assert read_js(site / "data" / "chunk-00000.js")["rows"][at]["premise"] == (
        "The alloy was heated to 900 C."
    )
    assert meta["items"]["fields"] == ["domain"]


def test_nlieval_view_serve_prints_the_address_and_stops_on_ctrl_c(
    hand_made: tuple[Path, Path], tmp_path: Path
) -> None:
    import signal

    from tests.helpers.cli_process import start_cli

    site = tmp_path / "site"
    proc = start_cli("view", str(hand_made[0]), "--out", str(site), "--serve", "--port", "0",
                     cwd=tmp_path)  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(f"written: {site / 'index.html'}")
        line = proc.stdout.readline()
        assert line.startswith(f"serving {site} at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].split()[0]
        with urllib.request.urlopen(url + "data/meta.js", timeout=30) as answer:
            assert answer.read().startswith(b"NLIEVAL.meta(")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out == "stopped\n", err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_intervals_where_asked_are_those_of_nlieval_grid_ci(
    hand_made: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = list(map(str, hand_made))
    site = build_site(ViewConfig(runs=tuple(runs), out=str(tmp_path / "site"), ci=0.9))
    acc = read_js(site / "data" / "meta.js")["grids"][0]
    assert acc["command"].endswith("--rows model --metrics accuracy --ci 0.9")
    assert main(["grid", *runs, "--ci", "0.9"]) == 0
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("|")]
    assert ["| " + " | ".join(r) + " |" for r in acc["rows"]] == table[2:]
    assert "[" in acc["rows"][0][1]  # an interval in the cell: 0.600 [low, high]


def _svg(path: Path) -> ET.Element:
    # A whole SVG document: it parses as XML and its root is an <svg> of the SVG namespace.
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", path
    return root


def test_the_figures_of_folders_with_chaosnli_records(
    hand_made: tuple[Path, Path], tmp_path: Path
) -> None:
    runs = tuple(map(str, hand_made))
    site = build_site(ViewConfig(runs=runs, out=str(tmp_path / "site")))
    figures = read_js(site / "data" / "meta.js")["figures"]
    files = [f["file"] for f in figures["shown"]]
    assert files == ["figures/accuracy_vs_shots.svg", "figures/plots/accuracy_by_entropy.svg",
                     "figures/plots/divergence.svg"]  # fmt: skip
    for f in files:
        _svg(site / f)
    shots, entropy, divergence = figures["shown"]
    assert shots["command"] == " ".join(
        ["nlieval figure shots", *runs, "--out", str(site / "figures" / "accuracy_vs_shots.svg")]
    )
    plots = str(site / "figures" / "plots")
    assert entropy["command"] == divergence["command"]
    assert entropy["command"] == " ".join(
        ["nlieval plots", *runs, "--out", plots, "--plot-format svg"]
    )
    # Two models and no --sizes: the size figure says what it needs; no checkpoints.
    assert figures["notes"] == [
        "accuracy vs parameters: give --sizes MODEL=PARAMETERS,... to draw it"
    ]
    # The commands the page names run as they are written, and write those files again.
    for f in (shots, entropy):
        (site / f["file"]).unlink()
        assert main(shlex.split(f["command"])[1:]) == 0
        _svg(site / f["file"])


def test_the_figures_of_a_folder_without_chaosnli_records(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    RunFolder(folder).append([_rec("m", "1", "neutral", "neutral"),
                              _rec("m", "2", "neutral", "entailment")])  # fmt: skip
    site = build_site(ViewConfig(runs=(str(folder),), out=str(tmp_path / "site")))
    figures = read_js(site / "data" / "meta.js")["figures"]
    assert [f["file"] for f in figures["shown"]] == ["figures/accuracy_vs_shots.svg"]
    assert figures["notes"] == []
    assert sorted(p.name for p in (site / "figures").iterdir()) == ["accuracy_vs_shots.svg"]
    # matplotlib's SVG draws; it holds no script (and <img> would run none).
    root = _svg(site / "figures" / "accuracy_vs_shots.svg")
    assert not list(root.iter("{http://www.w3.org/2000/svg}script"))


def test_the_dynamics_and_size_figures_where_asked(tmp_path: Path) -> None:
    folder = tmp_path / "dyn"
    folder.mkdir()
    recs = [replace(_rec(m, i, p, "neutral"), checkpoint=f"out/step{s}")
            for m in ("ma", "mb") for s in (100, 200)
            for i, p in (("1", "neutral"), ("2", "entailment"))]  # fmt: skip
    RunFolder(folder).append(recs)
    out = tmp_path / "site"
    site = build_site(ViewConfig(runs=(str(folder),), out=str(out)))
    figures = read_js(site / "data" / "meta.js")["figures"]
    assert figures["notes"] == [
        "accuracy vs parameters: give --sizes MODEL=PARAMETERS,... to draw it",
        "accuracy over checkpoints: give --pattern (or --positions) to place the checkpoints "
        "on an axis",
    ]
    cfg = ViewConfig(runs=(str(folder),), out=str(out), pattern=r"step(\d+)", scale=1000,
                     sizes=("ma=1e6", "mb=2e6"))  # fmt: skip
    build_site(cfg)
    figures = read_js(site / "data" / "meta.js")["figures"]
    assert figures["notes"] == []
    shown = {f["file"]: f["command"] for f in figures["shown"]}
    assert list(shown) == ["figures/accuracy_vs_shots.svg", "figures/accuracy_vs_size.svg",
                           "figures/dynamics.svg"]  # fmt: skip
    for f in shown:
        _svg(site / f)
    assert shown["figures/dynamics.svg"].endswith("--pattern 'step(\\d+)' --scale 1000")
    assert shown["figures/accuracy_vs_size.svg"].endswith("--sizes ma=1e6,mb=2e6")


def test_each_records_file_is_read_once(
    hand_made: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []
    original = RunFolder.iter_records

    def counted(self: RunFolder[Record]) -> Any:
        reads.append(self.path.resolve())
        return original(self)

    monkeypatch.setattr(RunFolder, "iter_records", counted)
    build_site(ViewConfig(runs=tuple(map(str, hand_made)), out=str(tmp_path / "site")))
    # Both folders hold ChaosNLI records: the grids, summaries, items and all figures.
    assert sorted(reads) == sorted(p.resolve() for p in hand_made)


def test_one_palette_for_every_figure_of_the_site(
    hand_made: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nlieval.plotting.results as drawn

    seen: list[frozenset[str]] = []
    original = drawn.canvas_palette

    def kept(names: Any, shown: Any = ()) -> Any:
        names, shown = list(names or ()), list(shown)
        seen.append(frozenset([*names, *shown]))
        return original(names, shown)

    # Every figure's styles come from plotting.palette (the call's names, then the rest).
    monkeypatch.setattr(drawn, "canvas_palette", kept)
    runs = tuple(map(str, hand_made))
    cfg = ViewConfig(runs=runs, out=str(tmp_path / "site"), name=(("", "A"), ("", "B")))
    build_site(cfg)
    # Every figure, those of `plots` (which has no --name) included, draws the models as
    # the user named them, A and B, from one palette of those names: a model has one
    # colour and marker across the page (before, `plots` drew ma and mb, styled as the
    # third and fourth names of a palette of four).
    assert len(seen) == 4  # figure shots; plots: shots, by entropy, divergence
    assert set(seen) == {frozenset({"A", "B"})}


def test_every_kind_of_folder_the_docs_name_and_those_it_cannot_show(tmp_path: Path) -> None:
    # An experiment's output folder keeps its cells two levels down (DIR/cells/NAME) and
    # a report beside them; a cell whose run wrote no record yet (config.json alone), a
    # folder of other files and a missing one are listed with their reason, the rest shown.
    exp = tmp_path / "exp"
    for name, model in (("c1", "ma"), ("c2", "mb")):
        (exp / "cells" / name).mkdir(parents=True)
        RunFolder(exp / "cells" / name).append([_rec(model, "1", "neutral", "neutral")])
    (exp / "report").mkdir()
    (exp / "report" / "index.md").write_text("# report")
    empty = exp / "cells" / "c3"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("no run")
    runs = (str(exp), str(plain), str(tmp_path / "missing"))
    site = build_site(ViewConfig(runs=runs, out=str(tmp_path / "site")))
    meta = read_js(site / "data" / "meta.js")
    cells = [str(exp / "cells" / "c1"), str(exp / "cells" / "c2")]
    assert [r["folder"] for r in meta["runs"]] == cells
    assert meta["items"]["models"] == ["ma", "mb"]
    skipped = {s["folder"]: s["reason"] for s in meta["skipped"]}
    assert skipped == {
        str(empty): "its run wrote no record (yet)",
        str(plain): "no run folder, and holds none (nor cells/NAME of an experiment)",
        str(tmp_path / "missing"): "no such folder",
    }


def test_folders_scored_on_different_items_are_shown_with_their_n_and_marked(
    tmp_path: Path,
) -> None:
    # A 3-item run beside a 1-item run of the same task (a --limit beside a --sample):
    # shown, each cell with its n, the cells on other items marked (grid --allow-mixed).
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    RunFolder(a).append([_rec("ma", i, "neutral", "neutral") for i in ("1", "2", "3")])
    RunFolder(b).append([_rec("mb", "4", "neutral", "entailment")])
    site = build_site(ViewConfig(runs=(str(a), str(b)), out=str(tmp_path / "site")))
    grid = read_js(site / "data" / "meta.js")["grids"][0]
    cells = {row[0]: row[1] for row in grid["rows"]}
    # By hand: ma right on 3 of 3, mb on 0 of 1.
    assert cells["ma"].startswith("1.000 (n=3)") and cells["ma"].endswith("\u2020")
    assert cells["mb"].startswith("0.000 (n=1)") and cells["mb"].endswith("\u2020")
    assert any("other items" in n for n in grid["notes"])
    assert grid["command"].endswith("--allow-mixed")


def test_a_folder_of_labels_without_texts_says_so_and_why(tmp_path: Path) -> None:
    # An import made before imports recorded their tasks: config.json names none, so no
    # text can be joined; the Items page says so instead of showing empty rows silently.
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mismatched"
    folder = tmp_path / "bert"
    argv = ["import", str(example / "bert.csv"), "--format", "labels", "--model", "bert"]
    assert main([*argv, "--task", str(example / "task.yaml"), "--out", str(folder)]) == 0
    config = json.loads((folder / "config.json").read_text())
    config.pop("tasks", None)
    config["task"] = None
    (folder / "config.json").write_text(json.dumps(config))
    site = build_site(ViewConfig(runs=(str(folder),), out=str(tmp_path / "site")))
    [line] = read_js(site / "data" / "meta.js")["items"]["textless"]
    assert line.startswith(f"{folder} holds labels without texts for ")
    assert "names no task" in line


def test_a_field_of_many_values_is_searched_text_not_a_drop_down(tmp_path: Path) -> None:
    # 25 items, each with its own free-text reason (ANLI's kind) and one of 3 rounds:
    # the round is a filter, the reason is text in the item (searched, shown), no filter.
    rows = [{"id": f"i{n}", "sentence1": f"Premise {n}.", "sentence2": f"Hypothesis {n}.",
             "label": "neutral", "round": f"r{n % 3}", "reason": f"because of thing {n}"}
            for n in range(25)]  # fmt: skip
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "task.yaml").write_text(
        "name: free-text\npath: items.jsonl\n"
        "fields: {premise: sentence1, hypothesis: sentence2, meta: [round, reason]}\n"
        "labels: [entailment, neutral, contradiction]\n"
    )
    (tmp_path / "preds.csv").write_text("id,pred\n" + "".join(f"i{n},neutral\n" for n in range(25)))
    folder = tmp_path / "run"
    argv = ["import", str(tmp_path / "preds.csv"), "--format", "labels", "--model", "m"]
    assert main([*argv, "--task", str(tmp_path / "task.yaml"), "--out", str(folder)]) == 0
    site = build_site(ViewConfig(runs=(str(folder),), out=str(tmp_path / "site")))
    index = read_js(site / "data" / "meta.js")["items"]
    assert (index["fields"], index["text_fields"]) == (["round"], ["reason"])
    assert "reason" not in index["values"]
    rows_shown = read_js(site / "data" / "chunk-00000.js")["rows"]
    at = index["id"].index("i7")
    assert rows_shown[at]["texts"] == {"reason": "because of thing 7"}


def test_a_folder_whose_task_data_is_not_here_shows_labels_and_the_rest_its_texts(
    tmp_path: Path,
) -> None:
    # An import of a task (a YAML since moved away) beside a run of the packaged smoke
    # task: the site is built, the import's rows say why they have no text, smoke's
    # rows have theirs.
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mismatched"
    task = tmp_path / "task"
    task.mkdir()
    for name in ("task.yaml", "items.jsonl"):
        (task / name).write_text((example / name).read_text())
    imported = tmp_path / "bert"
    argv = ["import", str(example / "bert.csv"), "--format", "labels", "--model", "bert"]
    assert main([*argv, "--task", str(task / "task.yaml"), "--out", str(imported)]) == 0
    (task / "items.jsonl").unlink()
    smoke = tmp_path / "smoke"
    smoke.mkdir()
    RunFolder(smoke).append([Record("smoke", "smoke-01", "m", 0, 0, NLI, (-0.1, -2.0, -3.0),
                                    (0.8, 0.1, 0.1), "entailment", "entailment")])  # fmt: skip
    (smoke / "config.json").write_text(json.dumps({"tasks": ["smoke"]}))
    site = build_site(ViewConfig(runs=(str(imported), str(smoke)), out=str(tmp_path / "site")))
    index = read_js(site / "data" / "meta.js")["items"]
    [line] = index["textless"]
    assert line.startswith(f"{imported} holds labels without texts for mismatched-mini: ")
    assert "items.jsonl" in line
    rows = read_js(site / "data" / "chunk-00000.js")["rows"]
    at = index["id"].index("smoke-01")
    assert rows[at]["premise"] == load_task("smoke").items[0].premise != ""
