#!/usr/bin/env bash
# Install, then run every test: unit tests on tiny random models, integration tests on
# the real benchmark files (NLIEVAL_DATA_DIR, default ../shared/data when it exists) and
# the tests on the real packaged models. Extra arguments go to pytest. Each stage says
# what it does and how long it took; pytest lists its 25 slowest tests.
# NLIEVAL_TEST_WORKERS (default 2) pytest processes share the tests (pytest-xdist): a
# test file stays on one worker, the tests on the packaged models all on one; the groups on
# a real engine or program are handed out first (conftest.py), so none of them is the tail.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/stage.sh
. scripts/stage.sh
start=$SECONDS
stage setup "scripts/setup.sh: .venv with nlieval, its test tools and the packaged models" \
    bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
# The packaged models' conversions (GGUF -> safetensors, 30-120 s each) are made once and
# kept in .cache/nlieval (ignored by git) for the vLLM server and every later test run;
# the tests keep everything else they convert out of it (conftest.py), and the one test
# that plants a file in a conversion works on a linked copy.
export NLIEVAL_CACHE="${NLIEVAL_CACHE:-$PWD/.cache/nlieval}"
if [ -z "${NLIEVAL_DATA_DIR:-}" ] && [ -d ../shared/data ]; then
    NLIEVAL_DATA_DIR="$(cd ../shared/data && pwd)"
    export NLIEVAL_DATA_DIR
fi
stage ruff "ruff check src tests benchmarks scripts" ruff check src tests benchmarks scripts
stage mypy "mypy (src/nlieval)" mypy
# What the stages below started is stopped on exit, in any case.
at_exit=()
stop_all() { for cmd in "${at_exit[@]}"; do $cmd || true; done; }
trap stop_all EXIT
# NLIEVAL_SLURM=1 (set by .ci/run): a one-node Slurm on this machine for the tests marked
# `slurm` (apt-get and root; stopped afterwards unless it was running already). Without
# it those tests skip when no Slurm answers; with it they fail.
if [ "${NLIEVAL_SLURM:-0}" = 1 ]; then
    [ -f /run/slurmctld.pid ] && kill -0 "$(cat /run/slurmctld.pid)" 2>/dev/null \
        || at_exit+=("bash scripts/slurm_stop.sh")
    stage slurm-setup "scripts/setup_slurm.sh: Slurm (slurm-wlm, munge) on this machine, one node" \
        bash scripts/setup_slurm.sh
fi
# NLIEVAL_BROWSER=1 (set by .ci/run): Debian's Chromium for the tests marked `browser`
# (Playwright drives it). Without it those tests skip when Chromium is missing; with it
# they fail.
if [ "${NLIEVAL_BROWSER:-0}" = 1 ]; then
    stage browser-setup "scripts/setup_browser.sh: Debian's Chromium, launched once by Playwright" \
        bash scripts/setup_browser.sh
fi
# NLIEVAL_LATEX=1 (set by .ci/run): Debian's pdflatex and booktabs for the tests marked
# `latex`. Without it those tests skip when pdflatex is missing; with it they fail.
if [ "${NLIEVAL_LATEX:-0}" = 1 ]; then
    stage latex-setup "scripts/setup_latex.sh: Debian's pdflatex with booktabs" \
        bash scripts/setup_latex.sh
fi
# NLIEVAL_VLLM=1 (set by .ci/run): build the vLLM CPU environment, serve the packaged
# SmolLM2 on a free port for the tests marked `vllm`, stop it afterwards; the tests marked
# `vllm_inproc` run vLLM in process in that environment. Without it those tests skip unless
# NLIEVAL_VLLM_URL names a running server (NLIEVAL_VLLM_PYTHON: the vLLM environment's Python).
if [ "${NLIEVAL_VLLM:-0}" = 1 ] && [ -z "${NLIEVAL_VLLM_URL:-}" ]; then
    PORT=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    stage vllm-setup "scripts/setup_vllm.sh: the vLLM CPU environment .venv-vllm (the first time: many minutes)" \
        bash scripts/setup_vllm.sh
    stage vllm-serve "scripts/vllm_serve.sh: vLLM serving the packaged SmolLM2 on port $PORT" \
        bash scripts/vllm_serve.sh "$PORT"
    at_exit+=("bash scripts/vllm_stop.sh $PORT")
    export NLIEVAL_VLLM_URL="http://127.0.0.1:$PORT/v1"
    # The tests marked `vllm_inproc` run nlieval itself in that environment.
    export NLIEVAL_VLLM_PYTHON="${VLLM_VENV:-$PWD/.venv-vllm}/bin/python"
fi
workers=${NLIEVAL_TEST_WORKERS:-2}
# The tests marked `slow` (the real vLLM engines scoring real items, minutes each) are
# left out here, so that this stage stays under 10 minutes on 2 cores, and run as a stage
# of their own when NLIEVAL_SLOW=1 (default: NLIEVAL_STRICT, so CI runs every test). A
# later -m in the arguments replaces this one.
stage pytest "pytest on src (doctests) and tests but the slow ones, $workers workers" \
    python -m pytest -q --doctest-modules -n "$workers" --dist loadgroup --no-loadscope-reorder \
    --durations=25 -m "not slow" src tests "$@"
if [ "${NLIEVAL_SLOW:-${NLIEVAL_STRICT:-0}}" = 1 ]; then
    stage pytest-slow "pytest on the tests marked slow, $workers workers" \
        python -m pytest -q -n "$workers" --dist loadgroup --no-loadscope-reorder \
        --durations=10 -m slow tests "$@"
fi
echo "==> test.sh: all stages done in $((SECONDS - start)) s"
