#!/usr/bin/env bash
# Stop the one-node Slurm of scripts/setup_slurm.sh: slurmd, slurmctld, then munged, each by
# the process id in its pid file (SIGTERM, a bounded wait, then SIGKILL). Jobs still
# running are ended with their slurmd. The packages, configuration and state stay; run
# scripts/setup_slurm.sh to start them again.
set -euo pipefail
stop() {
    local name=$1 pidfile=$2 pid
    if [ ! -f "$pidfile" ] || ! pid=$(cat "$pidfile") || ! kill -0 "$pid" 2>/dev/null; then
        echo "$name: not running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do
        kill -0 "$pid" 2>/dev/null || { echo "$name: stopped ($pid)"; return 0; }
        sleep 0.5
    done
    kill -KILL "$pid" 2>/dev/null || true
    echo "$name: killed ($pid) after 15 s"
}
stop slurmd /run/slurmd.pid
stop slurmctld /run/slurmctld.pid
stop munged /run/munge/munged.pid
