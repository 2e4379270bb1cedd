"""``nlieval view`` over one folder of each kind the docs name (a run, an import, an
experiment's output folder with its cells at ``DIR/cells/NAME``), a mixed pair (a
``--limit 12`` run beside a ``--sample 12`` run of the same task) and a folder whose run
wrote no record, opened in Debian's headless Chromium from ``file://``: the site is
built, the overview lists the folder it cannot show with its reason, the results say
each cell's n and mark the cells on other items, every item shows its texts, and no
page logs an error.

Marked ``browser`` (skipped without Chromium and Playwright, see test_browser.py). The
folders are made from the packaged smoke task and the docs' MisMatched example: no
benchmark data is needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.data import load_task
from nlieval.experiments import read_experiment, run_experiment
from nlieval.runs import RunFolder
from tests.helpers.browser import available_chromium
from tests.helpers.hash_lm import HashLM
from tests.view.test_view_browser import Opened

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "mismatched"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with available_chromium() as running:
        yield running


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    out: dict[str, Path] = {}
    for name, cfg in (("limit", RunConfig("org/a", ("smoke",), limit=12)),
                      ("sample", RunConfig("org/b", ("smoke",), sample=12))):  # fmt: skip
        out[name] = root / name
        run(cfg, out[name], model=stand_in(cfg, lambda ck, m=cfg.model: HashLM(m)), progress=False)
    out["import"] = root / "import"
    argv = ["import", str(EXAMPLE / "bert.csv"), "--format", "labels", "--model", "bert"]
    assert main([*argv, "--task", str(EXAMPLE / "task.yaml"), "--out", str(out["import"])]) == 0
    file = root / "e.yaml"
    file.write_text(
        f"models: {{tiny: {{model: {tiny_llama}}}}}\n"
        "blocks: {base: {command: run, tasks: [smoke], limit: 3}}\n"
        "matrix: [{block: base, models: [tiny]}]\n"
    )
    out["experiment"] = root / "exp"
    assert not run_experiment(read_experiment(file), out["experiment"]).failed
    out["empty"] = root / "empty"
    out["empty"].mkdir()
    (out["empty"] / "config.json").write_text("{}\n")
    return out


@pytest.fixture(scope="module")
def site(folders: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kinds-site") / "site"
    assert main(["view", *map(str, folders.values()), "--out", str(out)]) == 0
    return out


def _opened(browser: Any, site: Path, page: str) -> tuple[Opened, list[str]]:
    opened = Opened(browser, site, page)
    logged: list[str] = []
    opened.page.on("console", lambda m: logged.append(m.text) if m.type == "error" else None)
    return opened, logged


def test_every_kind_of_folder_in_one_site(
    browser: Any, site: Path, folders: dict[str, Path]
) -> None:
    opened, logged = _opened(browser, site, "overview")
    try:
        shown = opened.page.locator("article.run h3").all_inner_texts()
        cell = str(folders["experiment"] / "cells" / "base-tiny")
        assert shown == [str(folders[k]) for k in ("limit", "sample", "import")] + [cell]
        skipped = opened.page.locator("ul.skipped li").all_inner_texts()
        assert skipped == [f"{folders['empty']}: its run wrote no record (yet)"]
    finally:
        opened.close()
    assert not logged, logged


def test_the_mixed_pair_shows_each_cell_n_and_marks_it(browser: Any, site: Path) -> None:
    opened, logged = _opened(browser, site, "results")
    try:
        head = opened.page.locator("#grid-0 thead th").all_inner_texts()
        at = next(i for i, h in enumerate(head) if h.startswith("smoke"))
        smoke = {}
        for r in opened.page.locator("#grid-0 tbody tr").all():
            smoke[r.locator("td").first.inner_text()] = r.locator("td").nth(at).inner_text()
        # smoke: org/a and org/b on 12 items each (other items), the tiny model on 3;
        # each cell says its n and is marked.
        tiny = next(k for k in smoke if k not in ("org/a", "org/b", "bert", "Average"))
        for model, n in (("org/a", 12), ("org/b", 12), (tiny, 3)):
            assert f"(n={n})" in smoke[model] and smoke[model].endswith("\u2020"), smoke
        assert "other items" in opened.page.locator("#page-results").inner_text()
    finally:
        opened.close()
    assert not logged, logged


def _runs_of(folder: Path) -> Path:
    # An experiment's one cell, else the folder itself.
    cells = folder / "cells"
    return next(cells.iterdir()) if cells.is_dir() else folder


def test_every_item_shows_its_texts(browser: Any, site: Path, folders: dict[str, Path]) -> None:
    texts = {(t, it.id): it.premise for t in ("smoke",) for it in load_task("smoke").items}
    texts.update({("mismatched-mini", it.id): it.premise
                  for it in load_task(str(EXAMPLE / "task.yaml")).items})  # fmt: skip
    opened, logged = _opened(browser, site, "items")
    page = opened.page
    try:
        # A row per task, k, seed and item, whichever folders scored it.
        total = opened.count()
        keys = {(r.task, r.k, r.seed, r.item_id) for f in folders.values() if f.name != "empty"
                for r in RunFolder(_runs_of(f)).records()}  # fmt: skip
        assert total == len(keys) > 12 + 12
        seen = 0
        while True:
            for tr in page.locator("#item-table tbody tr").all():
                cells = tr.locator("td").all_inner_texts()
                assert cells[4] == texts[(cells[1], cells[0])] != "", cells
                seen += 1
            if seen >= total:
                break
            page.click("#item-next")
            opened.ready()
        assert seen == total
    finally:
        opened.close()
    assert not logged, logged
