#!/usr/bin/env bash
# vLLM in process against the transformers engine (and, with a server, the vLLM server
# path) on the same items: predictions, max |dLL| and items/s, through
# benchmarks/compare_runs.py.
#
#   benchmarks/vllm_inproc.sh OUT [LIMIT]        # default 40 items per task
#
# Needs the vLLM environment of scripts/setup_vllm.sh ($VLLM_VENV, default .venv-vllm) with
# nlieval's dependencies, and .venv. With NLIEVAL_VLLM_URL set (scripts/vllm_serve.sh), the
# server path runs the same items too.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1
LIMIT=${2:-40}
VPY=${VLLM_VENV:-$PWD/.venv-vllm}/bin/python
PY=${NLIEVAL_PYTHON:-$PWD/.venv/bin/python}
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
export VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} VLLM_NO_USAGE_STATS=1
SWEEPS=("snli,anli_r3 0,5" "alphanli,hans 0")
for engine in vllm hf server; do
    [ "$engine" = server ] && [ -z "${NLIEVAL_VLLM_URL:-}" ] && continue
    for i in "${!SWEEPS[@]}"; do
        read -r tasks shots <<<"${SWEEPS[$i]}"
        case $engine in
        vllm) "$VPY" -m nlieval run --model vllm:smollm2-135m --enforce-eager \
            --max-model-len 2048 --tasks "$tasks" --shots "$shots" --limit "$LIMIT" \
            --out "$OUT/vllm$i" --no-progress ;;
        hf) "$PY" -m nlieval run --model smollm2-135m --device cpu --tasks "$tasks" \
            --shots "$shots" --limit "$LIMIT" --out "$OUT/hf$i" --no-progress ;;
        server) "$PY" -m nlieval run --model smollm2-135m --api-base "$NLIEVAL_VLLM_URL" \
            --tasks "$tasks" --shots "$shots" --limit "$LIMIT" --out "$OUT/server$i" \
            --no-progress ;;
        esac >/dev/null
    done
done
for i in "${!SWEEPS[@]}"; do
    "$PY" benchmarks/compare_runs.py "$OUT/hf$i" "$OUT/vllm$i"
    [ -d "$OUT/server$i" ] && "$PY" benchmarks/compare_runs.py "$OUT/hf$i" "$OUT/server$i"
done
