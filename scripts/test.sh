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
# NLIEVAL_VLLM=1 (set by .ci/run): build the vLLM CPU environment, serve the packaged
# SmolLM2 on a free port for the tests marked `vllm`, stop it afterwards. Without it those
# tests skip unless NLIEVAL_VLLM_URL names a running server.
if [ "${NLIEVAL_VLLM:-0}" = 1 ] && [ -z "${NLIEVAL_VLLM_URL:-}" ]; then
    PORT=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    bash scripts/setup_vllm.sh
    bash scripts/vllm_serve.sh "$PORT"
    trap 'bash scripts/vllm_stop.sh "$PORT"' EXIT
    export NLIEVAL_VLLM_URL="http://127.0.0.1:$PORT/v1"
fi
python -m pytest -q --doctest-modules src tests "$@"
