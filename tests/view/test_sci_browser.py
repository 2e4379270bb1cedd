"""The confusion and meta-inference pages of ``nlieval view`` in Debian's headless
Chromium, from ``file://`` with every request that leaves the site folder refused: the
tables shown are what ``nlieval sci-report`` and ``nlieval infer report`` print (the
commands the pages name, run here), each run's confusion matrix is the one
``sci-report --json`` writes, the inferred items show their texts, input items and the
labels each reading allows (``infer report --format json``), the pattern filter keeps as
many items as the items file holds of that pattern, and markup in a premise or a model
name shows as text and runs nothing.

Marked ``browser`` (skipped without Chromium and Playwright, see test_browser.py); the
folders are made without a model (tests/view/test_sci.py).
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nlieval.cli import main
from tests.view.test_sci import SOURCE, cli, make_infer, make_sci, md_tables
from tests.view.test_site import read_js
from tests.view.test_view_browser import ATTACK, Opened, browser  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("view-sci-browser")
    sci = make_sci(root / "sci")
    infer = make_infer(root / "infer")
    site = root / "site"
    assert main(["view", *sci, infer["run"], infer["source"], "--out", str(site)]) == 0
    return {"sci": sci, "infer": infer, "site": site}


def _table(page: Any, selector: str) -> list[list[str]]:
    table = page.locator(selector)
    shown = [table.locator("thead th").all_inner_texts()]
    for tr in table.locator("tbody tr").all():
        shown.append(tr.locator("td").all_inner_texts())
    return [[c.strip() for c in row] for row in shown]


def test_the_confusion_page_shows_what_sci_report_prints(
    browser: Any,  # noqa: F811
    made: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    opened = Opened(browser, made["site"], "confusion")
    page = opened.page
    try:
        assert page.locator("#page-confusion").is_visible()
        argv = shlex.split(page.inner_text("#sci-command"))
        assert argv[:2] == ["nlieval", "sci-report"] and argv[2:] == made["sci"]
        report = tmp_path / "report.json"
        expected = md_tables(cli(capsys, *argv[1:], "--json", str(report)))
        scores = page.locator("table[id^=sci-table-]").count()
        matrices = page.locator("table.confusion[id^=confusion-]:not([id*=-run-])").count()
        assert matrices == 3  # fake/chat at k=0 and k=4, <b>m</b> at k=0
        shown = [_table(page, f"#sci-table-{i}") for i in range(scores)]
        shown += [_table(page, f"#confusion-{i}") for i in range(matrices)]
        assert shown == expected
        # Each run's matrix, behind its summary, is the one sci-report --json writes.
        rows = json.loads(report.read_text())["rows"]
        for i, row in enumerate(rows):
            runs = page.locator(f"table[id^=confusion-{i}-run-]")
            if row["runs"] < 2:
                assert runs.count() == 0
                continue
            page.locator(f"#confusion-{i} + details summary").click()
            assert runs.count() == row["runs"] == 3
            ncol = len(expected[scores + i][0]) - 1
            for m, run in enumerate(row["per_run"]):
                cells = _table(page, f"#confusion-{i}-run-{m}")[1:]
                assert [[int(x) for x in r[1:]] for r in cells] == [
                    c[:ncol] for c in run["confusion"]
                ]
                assert [r[0] for r in cells] == row["labels"]
    finally:
        opened.close()


def test_the_meta_inference_page_shows_the_items_and_what_infer_report_prints(
    browser: Any,  # noqa: F811
    made: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    infer = made["infer"]
    opened = Opened(browser, made["site"], "inferred")
    page = opened.page
    try:
        argv = shlex.split(page.inner_text("#infer-command-0"))
        assert argv == ["nlieval", "infer", "report", infer["run"], "--items", infer["items"],
                        "--source-run", infer["source"]]  # fmt: skip
        expected = md_tables(cli(capsys, *argv[1:]))
        assert len(expected) == 2  # one sweep point: unfiltered and filtered
        shown = [_table(page, f"#infer-0-table-{i}") for i in range(len(expected))]
        assert shown == expected
        rows = json.loads(cli(capsys, *argv[1:], "--format", "json"))
        allowed = {(r["input"], r["target"]): r for r in rows if r["subset"] == "all"}
        lines = [
            json.loads(x) for x in Path(infer["items"], "items.jsonl").read_text().splitlines()
        ]
        assert page.inner_text("#infer-0-count") == str(len(lines))
        table = page.locator("#infer-0-items")
        header = table.locator("thead th").all_inner_texts()
        readings = ["MC", "SC", "EI"]
        assert header[-4:] == [f"{r} allows" for r in readings] + ["predictions"]
        trs = table.locator("tbody tr")
        assert trs.count() == len(lines)
        for at, line in enumerate(lines):
            tr = trs.nth(at)
            cells = tr.locator("td").all_inner_texts()
            assert cells[:6] == [line["id"], line["pattern"], line["input"], line["target"],
                                 line["premise"], line["hypothesis"]]  # fmt: skip
            # The input items: each id, its label, its premise and hypothesis.
            ids = tr.locator(".source-id").all_inner_texts()
            assert ids == line["sources"]
            assert tr.locator(".source-premise").all_inner_texts() == [
                SOURCE[s][0] for s in line["sources"]
            ]
            assert tr.locator(".source-hypothesis").all_inner_texts() == [
                SOURCE[s][1] for s in line["sources"]
            ]
            row = allowed[line["input"], line["target"]]
            for name, cell in zip(readings, cells[7:10], strict=True):
                labels = ", ".join(row["allowed"][name]) or "none"
                assert cell == f"{row['inferred'][name]} (allowed: {labels})"
        # An answer against two readings (by hand: C(a,b) forces C(b,a) under MC and
        # SC; EI rules out E only), and one without a verdict under MC (N is vacuous).
        preds = table.locator("tbody tr[data-id='inf:reversal:c2'] .prediction")
        assert (
            preds.inner_text() == "m, k=0, seed=0: neutral; consistent under EI; not under MC, SC"
        )
        assert "inconsistent" in (preds.get_attribute("class") or "")
        preds = table.locator("tbody tr[data-id='inf:reversal:n1'] .prediction")
        assert preds.inner_text() == "m, k=0, seed=0: neutral; consistent under SC, EI"
        # The pattern filter keeps the items file's items of that pattern.
        for pattern, n in Counter(x["pattern"] for x in lines).items():
            page.select_option("#infer-0-pattern", pattern)
            assert page.inner_text("#infer-0-count") == str(n)
            assert table.locator("tbody tr").count() == n
            assert set(table.locator("tbody tr td:nth-child(2)").all_inner_texts()) == {pattern}
    finally:
        opened.close()


def test_a_site_without_such_folders_keeps_their_tabs_hidden(
    browser: Any,  # noqa: F811
    made: dict[str, Any],
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    assert main(["view", made["infer"]["source"], "--out", str(site)]) == 0
    opened = Opened(browser, site, "confusion")  # asked for, but there is none: overview
    try:
        assert opened.page.locator("#tab-confusion").is_hidden()
        assert opened.page.locator("#tab-inferred").is_hidden()
        assert opened.page.locator("#page-overview").is_visible()
    finally:
        opened.close()


def test_markup_in_inferred_items_and_model_names_shows_as_text(
    browser: Any,  # noqa: F811
    made: dict[str, Any],
    tmp_path: Path,
) -> None:
    # Premise A of the source items is markup: it is the hypothesis of their reversals,
    # a premise of the input items, and a sentence of the shared-premise items' sources.
    infer = make_infer(tmp_path / "infer", premise_a=ATTACK)
    site = tmp_path / "site"
    assert main(["view", *made["sci"], infer["run"], infer["source"], "--out", str(site)]) == 0
    for name in ("confusion", "inferred"):
        opened = Opened(browser, site, name)
        page = opened.page
        try:
            if name == "inferred":
                rev = page.locator("#infer-0-items tbody tr[data-id='inf:reversal:e1'] td")
                assert rev.nth(5).inner_text() == ATTACK
                premises = page.locator("#infer-0-items .source-premise").all_inner_texts()
                assert premises.count(ATTACK) == 3 + 6 * 2  # 3 reversals, 6 pairs of two
            else:
                assert "Confusion, <b>m</b>, mini, k=0 (1 run):" in page.inner_text("body")
            # Nothing of the data became an element: no image but the site's own figures,
            # no bold, no script but the page's; no dialog, no request out of the site
            # (checked on close).
            images = page.eval_on_selector_all("img", "s => s.map(e => e.getAttribute('src'))")
            figures = read_js(site / "data" / "meta.js")["figures"]["shown"]
            assert images == [f["file"] for f in figures]
            assert page.locator("b").count() == 0
            scripts = page.eval_on_selector_all("script", "s => s.map(e => e.src)")
            assert all(s.rsplit("/", 2)[-2] in ("assets", "data") for s in scripts)
            page.wait_for_timeout(200)
            assert not opened.dialogs
        finally:
            opened.close()
