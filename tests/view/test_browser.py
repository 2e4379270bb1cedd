"""A real browser: Playwright drives Debian's headless Chromium (``tests/helpers/browser.py``)
over a page served from a local HTTP server, reads what it rendered and clicks.

Marked ``browser``. Without Chromium or Playwright these tests skip, and with
``NLIEVAL_BROWSER=1`` (``.ci/run``; ``scripts/setup_browser.sh`` installs Chromium) they fail.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import available_chromium

pytestmark = pytest.mark.browser

# A count shown in a table cell, raised by a button's script; the cell's width comes from
# the stylesheet, so a page that was not laid out has none.
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>nlieval test page</title>
<style>#count { display: inline-block; width: 120px; padding: 0 4px; }</style></head>
<body>
<table><tr><th>items</th><td id="count">41</td></tr></table>
<button id="more" onclick="more()">one more</button>
<script>
function more() {
  const cell = document.getElementById("count");
  cell.textContent = (parseInt(cell.textContent, 10) + 1) + " items";
}
</script>
</body></html>
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a local HTTP server over a folder holding ``index.html``."""
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text(PAGE, encoding="utf-8")
    handler = functools.partial(_QuietHandler, directory=str(root))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}"
        server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with available_chromium() as running:
        yield running


def test_chromium_renders_a_served_page_and_a_click_runs_its_script(
    browser: Any, site: str
) -> None:
    page = browser.new_page()
    try:
        page.goto(f"{site}/index.html", timeout=30_000)
        assert page.title() == "nlieval test page"
        cell = page.locator("#count")
        assert cell.inner_text() == "41"
        # Laid out by the stylesheet: 120 px of content and 4 px of padding on each side.
        box = cell.bounding_box()
        assert box is not None and box["width"] == pytest.approx(128)
        page.click("#more")
        assert cell.inner_text() == "42 items"
        page.click("#more")
        assert cell.inner_text() == "43 items"
    finally:
        page.close()


def test_a_file_url_is_rendered_too(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(PAGE.replace("41", "7"), encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(path.as_uri(), timeout=30_000)
        page.click("#more")
        assert page.inner_text("#count") == "8 items"
    finally:
        page.close()
