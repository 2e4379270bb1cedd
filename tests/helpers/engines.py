"""What a test on an outside component (a Slurm cluster, a browser) does when it is missing:
skip outside CI, fail in CI.

``.ci/run`` sets ``NLIEVAL_SLURM=1`` and ``NLIEVAL_BROWSER=1`` and starts the components
(``scripts/test.sh``); there a missing one is a broken set-up that must not pass as a skip.
"""

from __future__ import annotations

import os

import pytest


def absent(component: str, env_var: str, reason: str) -> None:
    """Skip the test (``reason`` says what is missing), or fail it when ``env_var`` is 1
    or in CI (``NLIEVAL_STRICT=1``, :mod:`tests.helpers.skips`)."""
    if os.environ.get(env_var) == "1" or os.environ.get("NLIEVAL_STRICT") == "1":
        pytest.fail(f"{env_var}=1 but {component} is not available: {reason}", pytrace=False)
    pytest.skip(f"{component} is not available ({reason}); {env_var}=1 makes this a failure")
