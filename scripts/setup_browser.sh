#!/usr/bin/env bash
# A browser for the tests marked `browser`: Debian's Chromium, driven by Playwright for
# Python (the `view` extra, installed into .venv by scripts/setup.sh). Playwright's own
# browser download is never used: the tests launch $NLIEVAL_CHROMIUM (default
# /usr/bin/chromium).
#
#   bash scripts/setup_browser.sh   # apt-get install chromium (once), then one headless launch
#
# Idempotent: with Chromium installed it only checks that Playwright starts it and renders a
# page (a few seconds). Needs root for apt-get the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/stage.sh
. scripts/stage.sh
CHROMIUM=${NLIEVAL_CHROMIUM:-/usr/bin/chromium}

if [ ! -x "$CHROMIUM" ]; then
    [ "$(id -u)" = 0 ] || { echo "setup_browser.sh: no $CHROMIUM, and apt-get needs root" >&2; exit 1; }
    stage chromium-apt "apt-get install chromium (Debian's Chromium and its libraries: 15-20 s the first time)" \
        apt_install chromium
fi
[ -x "$CHROMIUM" ] || { echo "setup_browser.sh: $CHROMIUM is still missing after apt-get" >&2; exit 1; }

PY=.venv/bin/python
[ -x "$PY" ] || PY=python
if ! "$PY" -c 'import playwright' 2>/dev/null; then
    echo "setup_browser.sh: Playwright is not installed in $PY (run scripts/setup.sh: the extra 'view')" >&2
    exit 1
fi
# One launch, as the tests do it (tests/helpers/browser.py), on an inline page: a browser
# that cannot start or render fails here, with its own message, before the tests.
stage chromium-check "Playwright launches $($CHROMIUM --version 2>/dev/null | head -1) headless once" \
    env PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$PY" -c '
from tests.helpers.browser import chromium
with chromium() as browser:
    page = browser.new_page()
    page.set_content("<p id=x>rendered</p>")
    assert page.inner_text("#x") == "rendered"
'
