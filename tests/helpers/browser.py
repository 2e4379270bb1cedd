"""Debian's Chromium driven by Playwright, for the tests marked ``browser``.

Playwright's own browser download is never used (CI reaches only PyPI and Debian): the
browser is ``$NLIEVAL_CHROMIUM`` (default ``/usr/bin/chromium``, installed by
``scripts/setup_browser.sh``), headless, in a fresh empty profile that Playwright makes for
each launch. The flags keep Chromium from opening connections of its own (updates, sync,
QUIC): on a closed network those are refused, and a page could wait on them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM = os.environ.get("NLIEVAL_CHROMIUM", "/usr/bin/chromium")

CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",  # root in CI: Chromium's sandbox refuses to start as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@contextmanager
def chromium() -> Iterator[Any]:
    """A running headless Chromium (a Playwright ``Browser``), closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS), timeout=60_000
        )
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def available_chromium() -> Iterator[Any]:
    """:func:`chromium`, or the test skipped (failed in CI) when Chromium or Playwright
    is missing: the one check of the browser tests' module fixtures."""
    from tests.helpers.engines import absent

    if not os.access(CHROMIUM, os.X_OK):
        absent("a browser", "NLIEVAL_BROWSER", f"no {CHROMIUM}; run scripts/setup_browser.sh")
    try:
        import playwright  # noqa: F401
    except ImportError:
        absent("a browser", "NLIEVAL_BROWSER", "Playwright is not installed (the extra 'view')")
    with chromium() as running:
        yield running
