"""In CI (``NLIEVAL_STRICT=1``) a skip that ``tests/helpers/skips.py`` does not list is a
failure, a listed one stays a skip, and outside CI nothing changes (issue 46)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

def test_needs_a_component():
    pytest.skip("no such component here")

def test_listed():
    pytest.skip("allowed here")

def test_runs():
    assert 1 + 1 == 2
"""

PLUGIN = """
from tests.helpers.skips import pytest_runtest_makereport  # noqa: F401
"""


@pytest.mark.parametrize("strict", [True, False])
def test_an_unlisted_skip_fails_only_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    from tests.helpers import skips

    monkeypatch.setenv("NLIEVAL_STRICT", "1" if strict else "0")
    monkeypatch.setattr(skips, "ALLOWED", {"test_suite.py::test_listed": "listed, with a reason"})
    pytester.makepyfile(test_suite=SUITE, listing=PLUGIN)
    pytester.syspathinsert()
    result = pytester.runpytest_inprocess("-p", "listing", "-p", "no:cacheprovider")
    if strict:
        result.assert_outcomes(passed=1, failed=1, skipped=1)
        result.stdout.fnmatch_lines(["*NLIEVAL_STRICT=1 and this test skipped*no such component*"])
    else:
        result.assert_outcomes(passed=1, skipped=2)


def test_every_listed_skip_names_a_reason() -> None:
    from tests.helpers.skips import ALLOWED

    assert all(why.strip() for why in ALLOWED.values())
