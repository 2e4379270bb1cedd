#!/usr/bin/env bash
# Stop a server started by scripts/vllm_serve.sh [PORT] (default 8000).
#
#   scripts/vllm_stop.sh [PORT]
#
# vllm_serve.sh starts it with setsid, so its PID is also its process group: SIGTERM to
# the group stops the API server, the EngineCore and the worker together (about 5 s).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VLLM_VENV:-$PWD/.venv-vllm}
PIDFILE=$VENV/serve-${1:-8000}.pid
[ -f "$PIDFILE" ] || { echo "no $PIDFILE: nothing to stop" >&2; exit 0; }
PID=$(cat "$PIDFILE")
if kill -TERM -- "-$PID" 2>/dev/null; then
    # Bounded wait; whatever is left after 30 s gets SIGKILL.
    for _ in $(seq 1 30); do
        pgrep -g "$PID" >/dev/null || break
        sleep 1
    done
    kill -KILL -- "-$PID" 2>/dev/null || true
    echo "stopped $PID" >&2
else
    echo "process group $PID was not running" >&2
fi
rm -f "$PIDFILE"
