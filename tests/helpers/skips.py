"""In CI no test may skip unless it is listed here with its reason (issue 46).

``.ci/run`` sets ``NLIEVAL_STRICT=1``. Under it a test that skips for any reason not
listed in :data:`ALLOWED` is reported as a failure naming the skip's own reason: a
missing component (a packaged model, the vLLM environment, the benchmark files, a
library), a fixture that found nothing, a condition that is always true on this machine.
A green CI then means every test ran. Outside CI skips stay skips, so a laptop without
Slurm or Chromium still runs the rest.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

#: The switch ``.ci/run`` sets.
STRICT = "NLIEVAL_STRICT"

#: Tests allowed to skip in CI: a node id (or the start of one, ending in ``::`` or
#: ``[``) and why skipping there is right. Empty: every test runs in CI.
ALLOWED: dict[str, str] = {}


def strict() -> bool:
    """Whether a skip is a failure here (``NLIEVAL_STRICT=1``)."""
    return os.environ.get(STRICT) == "1"


def allowed(nodeid: str, allow: dict[str, str] | None = None) -> str | None:
    """The listed reason ``nodeid`` may skip for, or None.

    >>> allowed("tests/a.py::test_x[1]", {"tests/a.py::test_x[": "why"})
    'why'
    >>> allowed("tests/a.py::test_y", {"tests/a.py::test_x": "why"}) is None
    True
    """
    table = ALLOWED if allow is None else allow
    for key, why in table.items():
        if nodeid == key or (key.endswith(("::", "[")) and nodeid.startswith(key)):
            return why
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and strict()) or hasattr(report, "wasxfail"):
        return
    if allowed(item.nodeid) is not None:
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"{STRICT}=1 and this test skipped ({reason}); in CI every test runs unless "
        "tests/helpers/skips.py ALLOWED lists it with a reason"
    )
