#!/usr/bin/env bash
# vLLM in process against the transformers engine (and, with a server, the vLLM server
# path) on the same items: predictions, max |dLL| and items/s, through
# benchmarks/compare_runs.py; then `nlieval instruct` on the first INSTRUCT items of
# SciNLI (default 20, 0 to skip) through both engines: the same greedy answer texts?
#
#   benchmarks/vllm_inproc.sh OUT [LIMIT]        # default 40 items per task
#   INSTRUCT=0 benchmarks/vllm_inproc.sh OUT 200 # scoring only
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
INSTRUCT=${INSTRUCT:-20}
[ "$INSTRUCT" -gt 0 ] || exit 0
ARGS=(--task scinli --limit "$INSTRUCT" --shots 0 --no-progress)
"$VPY" -m nlieval instruct --model vllm:smollm2-135m --enforce-eager --max-model-len 2048 \
    "${ARGS[@]}" --out "$OUT/vllm-instruct" >/dev/null
"$PY" -m nlieval instruct --model smollm2-135m --device cpu "${ARGS[@]}" \
    --out "$OUT/hf-instruct" >/dev/null
"$PY" - "$OUT/hf-instruct" "$OUT/vllm-instruct" <<'EOF'
import sys

from nlieval.runs import iter_run_records

hf, vllm = ({r.item_id: r for r in iter_run_records([f])} for f in sys.argv[1:])
same = sum(vllm.get(i) is not None and vllm[i].answer == r.answer for i, r in hf.items())
preds = sum(vllm.get(i) is not None and vllm[i].pred == r.pred for i, r in hf.items())
print(f"instruct, {len(hf)} SciNLI items: the same greedy answer text for {same}, "
      f"the same prediction for {preds}")
EOF
