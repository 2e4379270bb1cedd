#!/usr/bin/env bash
# Start a vLLM CPU server on 127.0.0.1 in the background, wait until it answers, print its PID.
#
#   scripts/vllm_serve.sh [PORT [MODEL_FOLDER]]   # default 8000, the converted smollm2-135m
#   kill "$(cat "${VLLM_VENV:-.venv-vllm}/serve-PORT.pid")"   # stop it (or kill the printed PID)
#
# Run scripts/setup_vllm.sh first. The model is served under the name $VLLM_SERVED_NAME
# (default smollm2-135m). The log goes to $VENV/serve-PORT.log. Start-up takes about
# 1-2 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VLLM_VENV:-$ROOT/.venv-vllm}
PORT=${1:-8000}
MODEL_DIR=${2:-$("$ROOT/scripts/vllm_model_dir.sh")}
NAME=${VLLM_SERVED_NAME:-smollm2-135m}
WAIT_S=${VLLM_WAIT_S:-600}
LOG=$VENV/serve-$PORT.log
PIDFILE=$VENV/serve-$PORT.pid
URL=http://127.0.0.1:$PORT/v1/models

[ -x "$VENV/bin/vllm" ] || { echo "no $VENV/bin/vllm: run scripts/setup_vllm.sh" >&2; exit 1; }

# Something already answers on this port: say so instead of starting a second server.
if curl -sf -m 5 "$URL" >/dev/null 2>&1; then
    echo "a server already answers on $URL (pid file: $PIDFILE)" >&2
    cat "$PIDFILE" 2>/dev/null || true
    exit 0
fi

# Quirk 3: vLLM picks its platform from this; without it it looks for a GPU.
export VLLM_TARGET_DEVICE=cpu
# No Hugging Face hub here; everything is in MODEL_DIR.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# KV cache size in GiB. The default (4 GiB) is far more than a 135M model with
# --max-model-len 2048 needs; 1 GiB still holds hundreds of sequences.
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
# No usage reports (there is no internet anyway).
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1

# --dtype float32: the converted weights are fp32 and log-probabilities are compared with
# the fp32 HF backend. --max-model-len: the config says 8192; a short limit keeps the
# KV cache small. setsid: the server gets its own process group, so that stopping it
# (kill PID) is not tied to this shell.
setsid "$VENV/bin/vllm" serve "$MODEL_DIR" \
    --served-model-name "$NAME" \
    --host 127.0.0.1 --port "$PORT" \
    --dtype float32 --max-model-len "${VLLM_MAX_MODEL_LEN:-2048}" \
    >"$LOG" 2>&1 </dev/null &
PID=$!
echo "$PID" >"$PIDFILE"

# Wait (bounded) until /v1/models answers; stop early if the server died.
start=$SECONDS
until curl -sf -m 5 "$URL" >/dev/null 2>&1; do
    if ! kill -0 "$PID" 2>/dev/null; then
        echo "vllm serve exited during start-up; last lines of $LOG:" >&2
        tail -30 "$LOG" >&2
        exit 1
    fi
    if ((SECONDS - start > WAIT_S)); then
        echo "no answer from $URL after ${WAIT_S}s; stopping $PID; see $LOG" >&2
        kill "$PID" 2>/dev/null || true
        exit 1
    fi
    sleep 3
done
echo "vllm serve ready on http://127.0.0.1:$PORT (model $NAME, $((SECONDS - start))s); log $LOG" >&2
echo "$PID"
