#!/usr/bin/env bash
# Print the safetensors folder of a packaged model (default smollm2-135m), converting the
# GGUF on first use (about 30 s, then cached in ~/.cache/nlieval or $NLIEVAL_CACHE).
# Uses nlieval's own resolve_model/local_hf_folder from .venv, so the folder is the one
# nlieval itself loads: vLLM and the HF backend then read the same weights.
#
#   scripts/vllm_model_dir.sh [ALIAS]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${NLIEVAL_PYTHON:-$PWD/.venv/bin/python}
HF_HUB_OFFLINE=1 "$PY" - "${1:-smollm2-135m}" <<'EOF'
import sys

# The module moved from nlieval.models to nlieval.backends.weights; accept either.
from nlieval.backends.weights import local_hf_folder, resolve_model

print(local_hf_folder(resolve_model(sys.argv[1])).path)
EOF
