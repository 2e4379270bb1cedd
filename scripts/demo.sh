#!/usr/bin/env bash
# Install, then evaluate the packaged default model (SmolLM2-135M) on the bundled smoke
# sample at 0 and 5 shots. Output: runs/demo (records.jsonl, results.json, summary.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
nlieval run --model smollm2-135m --task smoke --shots 0,5 --out runs/demo "$@"
