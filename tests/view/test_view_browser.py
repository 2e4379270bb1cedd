"""The site of ``nlieval view`` in Debian's headless Chromium, opened from ``file://`` with
every request that leaves the site folder blocked (and counted): the results page shows
what ``nlieval grid`` prints, the figures page the figures of ``nlieval figure`` and
``nlieval plots`` from the site folder, each filter keeps as many items as ``nlieval
items``, an item opens to the prompt its record holds, and a premise made of markup shows
as text and runs nothing.

Marked ``browser`` (skipped without Chromium and Playwright, see test_browser.py); the run
folders are made by stand-in models over the real data (``NLIEVAL_DATA_DIR``).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nlieval.backends import stand_in
from nlieval.choice import RunConfig, run
from nlieval.cli import main
from nlieval.data import load_task
from nlieval.runs import RunFolder
from tests.helpers.browser import available_chromium
from tests.helpers.hash_lm import HashLM
from tests.helpers.task_files import premise_task
from tests.view.test_site import read_js

pytestmark = pytest.mark.browser

TASKS = ("snli", "hans", "chaosnli_snli", "chaosnli_mnli", "chaosnli_alphanli")
CHAOS = "acc_original,acc_majority,js_distance,kl"
ATTACK = "<img src=x onerror=alert(1)></script><script>alert(2)</script><!--"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with available_chromium() as running:
        yield running


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    if not os.environ.get("NLIEVAL_DATA_DIR"):
        pytest.skip("NLIEVAL_DATA_DIR is not set")
    root = tmp_path_factory.mktemp("view-runs")
    out = []
    for name in ("org/small", "org/big"):
        cfg = RunConfig(name, TASKS, shots=(0, 1), limit=16)
        folder = root / name.split("/")[1]
        run(cfg, folder, model=stand_in(cfg, lambda ck, s=name: HashLM(s)), progress=False)
        out.append(str(folder))
    return out


@pytest.fixture(scope="module")
def site(runs: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view-site") / "site"
    assert main(["view", *runs, "--out", str(out)]) == 0
    return out


class Opened:
    """A page of the site from file://, with the requests that left the site folder
    refused and kept, and any dialog kept (and dismissed)."""

    def __init__(self, browser: Any, site: Path, page: str = "overview") -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.outside: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        inside = site.resolve().as_uri() + "/"
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r: Any) -> None:
            if r.request.url.startswith(inside):
                r.continue_()
            else:
                self.outside.append(r.request.url)
                r.abort()

        self.page.route("**/*", route)
        self.page.goto((site / "index.html").resolve().as_uri() + "#" + page, timeout=30_000)
        self.ready()

    def ready(self) -> None:
        # The script marks the body once the rows a change asked for are on the page.
        self.page.wait_for_selector("body[data-ready=yes]", timeout=30_000)

    def count(self) -> int:
        self.ready()
        return int(self.page.inner_text("#item-count"))

    def close(self) -> None:
        assert not self.outside, self.outside
        assert not self.errors, self.errors
        self.page.close()


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _md_rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in lines[:1] + lines[2:]]


def results_match_grid(
    browser: Any, site: Path, runs: list[str], capsys: pytest.CaptureFixture[str]
) -> list[list[list[str]]]:
    """Each table of the results page, cell for cell, is what the `nlieval grid` command
    the page names prints (over the folders given); returns the tables."""
    opened = Opened(browser, site, "results")
    tables = []
    try:
        for at in range(opened.page.locator("table.grid").count()):
            argv = shlex.split(opened.page.inner_text(f"#grid-command-{at}"))
            assert argv[:2] == ["nlieval", "grid"] and set(argv[2:]) >= set(runs[:1])
            table = opened.page.locator(f"#grid-{at}")
            shown = [table.locator("thead th").all_inner_texts()]
            for tr in table.locator("tbody tr").all():
                shown.append(tr.locator("td").all_inner_texts())
            expected = _md_rows(_cli(capsys, *argv[1:]))
            assert [[c.strip() for c in row] for row in shown] == expected
            tables.append(expected)
    finally:
        opened.close()
    return tables


def filters_match_items(
    opened: Opened, runs: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[list[dict[str, Any]], dict[tuple[str, ...], int]]:
    """The count of each filter (and of two pairs) is that of `nlieval items --filter`;
    returns the unfiltered listing and the counts."""
    page = opened.page
    listed = json.loads(_cli(capsys, "items", *runs, "--format", "json", "--max-rows", "100000"))
    assert opened.count() == len(listed)
    counts = {}
    for combo in (("disagree",), ("all-wrong",), ("any-wrong",), ("majority-changed",),
                  ("disagree", "any-wrong"), ("all-wrong", "majority-changed")):  # fmt: skip
        for f in combo:
            page.check(f"#filter-{f}")
        counts[combo] = opened.count()
        argv = ["items", *runs, "--filter", ",".join(combo), "--format", "json"]
        assert counts[combo] == len(json.loads(_cli(capsys, *argv, "--max-rows", "100000")))
        for f in combo:
            page.uncheck(f"#filter-{f}")
    return listed, counts


def test_the_results_page_shows_what_nlieval_grid_prints(
    browser: Any, site: Path, runs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    tables = results_match_grid(browser, site, runs, capsys)
    assert len(tables) == 3  # accuracy, macro F1 (the metric table's label metrics), ChaosNLI
    for table in tables:
        # a header, two models at two k, the mean of the two models at each k
        assert len(table) == 1 + 2 * 2 + 2


def test_a_click_on_a_heading_sorts_the_grid_by_its_numbers(
    browser: Any, site: Path, runs: list[str]
) -> None:
    # The page sorts by the numbers the data carries beside the texts: the column of the
    # first task (a score "0.562", "0.562 (n=16)"), then k, in both directions.
    opened = Opened(browser, site, "results")
    try:
        page = opened.page
        for col in (2, 1):
            head = page.locator("#grid-0 thead th").nth(col)
            for descending in (True, False):
                head.click()
                texts = page.locator(f"#grid-0 tbody tr td:nth-child({col + 1})").all_inner_texts()
                shown = [float(t.split()[0]) for t in texts]
                assert shown == sorted(shown, reverse=descending)
    finally:
        opened.close()


def test_the_figures_page_shows_the_figures_of_the_site_folder(
    browser: Any, site: Path, runs: list[str]
) -> None:
    opened = Opened(browser, site, "figures")
    page = opened.page
    try:
        # SNLI, HANS and the ChaosNLI sets at k=0,1: accuracy vs shots, and the two
        # ChaosNLI figures of `nlieval plots`.
        files = ["figures/accuracy_vs_shots.svg", "figures/plots/accuracy_by_entropy.svg",
                 "figures/plots/divergence.svg"]  # fmt: skip
        shown = read_js(site / "data" / "meta.js")["figures"]["shown"]
        assert [f["file"] for f in shown] == files
        page.wait_for_function(
            "() => [...document.querySelectorAll('#page-figures img')].every(i => i.complete)",
            timeout=30_000,
        )
        images = page.eval_on_selector_all(
            "#page-figures img", "s => s.map(i => [i.src, i.naturalWidth, i.clientWidth])"
        )
        assert [src for src, _n, _w in images] == [(site / f).resolve().as_uri() for f in files]
        # Loaded (an image that failed has no natural width) and laid out on the page.
        assert all(n > 0 and w > 0 for _src, n, w in images), images
        captions = page.locator("#page-figures figcaption code").all_inner_texts()
        assert captions == [f["command"] for f in shown]
        assert captions[0].startswith("nlieval figure shots " + shlex.join(runs))
        assert captions[1].startswith("nlieval plots " + shlex.join(runs))
    finally:
        opened.close()  # nothing requested outside the site folder, no script error


def test_each_filter_keeps_as_many_items_as_nlieval_items(
    browser: Any, site: Path, runs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    opened = Opened(browser, site, "items")
    page = opened.page
    try:
        listed, counts = filters_match_items(opened, runs, capsys)
        assert len(listed) == 2 * 16 * len(TASKS)  # two k, 16 items a task
        assert 0 < counts[("disagree",)] < counts[("any-wrong",)] < len(listed)
        # A field of the items: HANS's heuristic, counted from the task's own data.
        hans = {it.id: it for it in load_task("hans").items}
        for heuristic in ("lexical_overlap", "subsequence", "constituent"):
            page.select_option("#field-heuristic", heuristic)
            mine = [r for r in listed if r["task"] == "hans"]
            expected = sum(hans[r["id"]].meta["heuristic"] == heuristic for r in mine)
            assert opened.count() == expected
        page.select_option("#field-heuristic", "")
        # Text search over premise and hypothesis, whole texts, any case.
        # (alpha-NLI's two hypotheses are its choices, searched too).
        choices = {(t, it.id): it.choices for t in TASKS for it in load_task(t).items}
        word = "man"
        page.fill("#item-search", word.upper())
        expected = sum(
            word in "\n".join([r["id"], r["premise"], r["hypothesis"],
                                *choices[(r["task"], r["id"])]]).lower()
            for r in listed
        )  # fmt: skip
        assert 0 < expected == opened.count()
        page.fill("#item-search", "")
        assert opened.count() == len(listed)
    finally:
        opened.close()


def test_sorting_paging_and_an_item_with_its_prompt(
    browser: Any, site: Path, runs: list[str]
) -> None:
    opened = Opened(browser, site, "items")
    page = opened.page
    try:
        page.select_option("#item-sort", "entropy")
        page.check("#item-descending")
        opened.count()
        ids = page.locator("#item-table tbody tr td:first-child").all_inner_texts()
        assert len(ids) == 50
        page.click("#item-next")
        opened.ready()
        assert page.inner_text("#item-page").startswith("page 2 of ")
        page.click("#item-prev")
        opened.ready()
        first = page.locator("#item-table tbody tr").first
        first.click()
        detail = page.locator("#item-detail")
        task, item_id = detail.locator("h2").inner_text().split(" ", 1)
        # The highest human entropy first: a ChaosNLI item.
        assert task.startswith("chaosnli_")
        wanted = [
            r for r in RunFolder(runs[1]).records() if r.task == task and r.item_id == item_id
        ]
        prompts = detail.locator("details.prompt pre").all_text_contents()
        assert wanted and wanted[0].prompt and wanted[0].prompt in prompts
    finally:
        opened.close()


def test_markup_in_the_data_shows_as_text_and_runs_nothing(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = premise_task(tmp_path, "attack", {"x1": ATTACK, "x2": "A dog runs."})
    cfg = RunConfig("<b>m</b>", (str(task),))
    folder = tmp_path / "run"
    run(cfg, folder, model=stand_in(cfg, lambda ck: HashLM("m")), progress=False)
    site = tmp_path / "site"
    assert main(["view", str(folder), "--out", str(site)]) == 0
    for name in ("overview", "results", "items"):
        opened = Opened(browser, site, name)
        page = opened.page
        try:
            if name == "items":
                page.locator("#item-table tbody tr").first.click()
                cells = page.locator("#item-table tbody tr").first.locator("td")
                assert cells.nth(4).inner_text() == ATTACK
                assert ATTACK in page.locator("#item-detail").inner_text()
                page.fill("#item-search", "onerror")
                assert opened.count() == 1
            # Nothing of the data became an element: no image but the site's figures, no
            # script but the page's, no bold model name; no dialog, no request out of the
            # site (checked on close).
            figures = read_js(site / "data" / "meta.js")["figures"]["shown"]
            images = page.eval_on_selector_all("img", "s => s.map(e => e.getAttribute('src'))")
            assert images == [f["file"] for f in figures] and page.locator("b").count() == 0
            scripts = page.eval_on_selector_all("script", "s => s.map(e => e.src)")
            assert all(s.rsplit("/", 2)[-2] in ("assets", "data") for s in scripts)
            assert "<b>m</b>" in page.locator("body").inner_text()
            page.wait_for_timeout(200)
            assert not opened.dialogs
        finally:
            opened.close()


@pytest.mark.models
def test_both_packaged_models_over_snli_hans_and_chaosnli(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Acceptance: the packaged models over SNLI, HANS and the three ChaosNLI sets (a few
    items each): every number of the results page is `nlieval grid`'s, every filter's
    count `nlieval items`'."""
    if not os.environ.get("NLIEVAL_DATA_DIR"):
        pytest.skip("NLIEVAL_DATA_DIR is not set")
    runs = []
    for model in ("smollm2-135m", "gemma3-270m"):
        out = str(tmp_path / model)
        argv = ["run", "--model", model, "--task", ",".join(TASKS), "--limit", "6"]
        _cli(capsys, *argv, "--no-progress", "--out", out)
        runs.append(out)
    site = tmp_path / "site"
    _cli(capsys, "view", *runs, "--out", str(site))
    tables = results_match_grid(browser, site, runs, capsys)
    assert [len(t) for t in tables] == [1 + 2 + 1] * 3
    opened = Opened(browser, site, "items")
    try:
        listed, counts = filters_match_items(opened, runs, capsys)
        assert len(listed) == 6 * len(TASKS)
    finally:
        opened.close()
