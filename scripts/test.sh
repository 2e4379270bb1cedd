#!/usr/bin/env bash
# Install, then run every test: unit tests on tiny random models, integration tests on
# the real benchmark files (NLIEVAL_DATA_DIR, default ../shared/data when it exists) and
# the tests on the real packaged models. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
if [ -z "${NLIEVAL_DATA_DIR:-}" ] && [ -d ../shared/data ]; then
    NLIEVAL_DATA_DIR="$(cd ../shared/data && pwd)"
    export NLIEVAL_DATA_DIR
fi
ruff check src tests benchmarks scripts
mypy
python -m pytest -q --doctest-modules src tests "$@"
