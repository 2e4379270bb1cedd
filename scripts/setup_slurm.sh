#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the tests marked `slurm` (submitit jobs).
#
#   bash scripts/setup_slurm.sh     # install (apt), configure, start; waits until the node is idle
#   bash scripts/slurm_stop.sh      # stop the daemons again
#
# Debian's slurm-wlm and munge, root only, no systemd: munged, slurmctld and slurmd are
# started here as plain daemons. The node is this machine (its own CPU count and memory as
# `slurmd -C` reports them), reached at 127.0.0.1 so that no name lookup is needed; no
# cgroups, no accounting database. Idempotent: a second call while the node is idle and the
# configuration unchanged only checks and returns. Every wait is bounded (SLURM_WAIT_S,
# default 60 s) and ends with the reason and the end of the daemon's log.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/stage.sh
. scripts/stage.sh
WAIT_S=${SLURM_WAIT_S:-60}
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
LOG_DIR=/var/log/slurm
MUNGE_KEY=/etc/munge/munge.key
[ "$(id -u)" = 0 ] || { echo "setup_slurm.sh: needs root (apt-get, the daemons run as root)" >&2; exit 1; }

# The node's state ('' when no controller answers in 20 s).
node_state() { timeout 20 sinfo -h -N -o '%T' 2>/dev/null | head -1; }
# Whether the daemon of this pid file runs (checked before sinfo: with no controller,
# sinfo retries for about 10 s before it gives up).
running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# 1. The packages.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
        || ! command -v sinfo >/dev/null || ! command -v munged >/dev/null; then
    stage slurm-apt "apt-get install slurm-wlm munge (Debian's Slurm, about 4 MB: 10-20 s the first time)" \
        apt_install slurm-wlm munge
fi

# 2. The configuration: this node as slurmd sees it (CPUs, sockets, cores, memory), so
# that the controller never drains it for a mismatch.
host=$(hostname -s)
hw=$(slurmd -C | head -1 | sed -n 's/^NodeName=[^ ]* //p' | sed 's/ *UpTime=.*//')
[ -n "$hw" ] || { echo "setup_slurm.sh: 'slurmd -C' printed no node line" >&2; exit 1; }
want=$(cat <<EOF
# Written by nlieval's scripts/setup_slurm.sh: one node, this machine.
ClusterName=nlieval
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
# A 2-core machine under a test load may answer a ping late: give it a minute per message
# and 10 minutes before the node is called down (defaults 10 s and 5 min).
MessageTimeout=60
SlurmdTimeout=600
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
)
changed=0
if [ "$(cat "$CONF" 2>/dev/null)" != "$want" ]; then
    mkdir -p "$CONF_DIR" "$LOG_DIR" /var/spool/slurmctld /var/spool/slurmd
    printf '%s\n' "$want" >"$CONF"
    echo "==> slurm-conf: wrote $CONF (node $host: $hw)"
    changed=1
fi

# Everything already runs with this configuration: nothing to do.
if [ "$changed" = 0 ] && running /run/slurmctld.pid && running /run/slurmd.pid \
        && [ "$(node_state)" = idle ]; then
    echo "==> slurm: node $host idle (sinfo): already running"
    exit 0
fi

# 3. munge: a key (made once), then the daemon, checked with a credential round trip.
if [ ! -s "$MUNGE_KEY" ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
    echo "==> munge-key: created $MUNGE_KEY"
fi
chown munge:munge "$MUNGE_KEY" /etc/munge && chmod 0400 "$MUNGE_KEY" && chmod 0700 /etc/munge
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    echo "==> munged: start"
    runuser -u munge -- /usr/sbin/munged
    start=$SECONDS
    until munge -n 2>/dev/null | unmunge >/dev/null 2>&1; do
        if ((SECONDS - start > WAIT_S)); then
            echo "setup_slurm.sh: munged does not answer after ${WAIT_S}s; /var/log/munge/munged.log:" >&2
            tail -20 /var/log/munge/munged.log >&2 || true
            exit 1
        fi
        sleep 1
    done
fi

# 4. The controller and the node daemon (they fork into the background themselves). A
# running one is restarted when the configuration changed.
if [ "$changed" = 1 ]; then
    for pidfile in /run/slurmd.pid /run/slurmctld.pid; do
        if running "$pidfile"; then
            kill "$(cat "$pidfile")"
            for _ in $(seq 1 20); do running "$pidfile" || break; sleep 0.5; done
        fi
    done
fi
running /run/slurmctld.pid || { echo "==> slurmctld: start"; slurmctld; }
running /run/slurmd.pid || { echo "==> slurmd: start"; slurmd; }

# 5. Bounded wait until the node is idle; a node left down or drained is resumed once.
start=$SECONDS
resumed=0
while :; do
    state=$(node_state)
    [ "$state" = idle ] && break
    case $state in
        down* | drain* | fail*)
            if [ "$resumed" = 0 ]; then
                scontrol update NodeName="$host" State=RESUME 2>/dev/null || true
                resumed=1
            fi ;;
    esac
    if ((SECONDS - start > WAIT_S)); then
        echo "setup_slurm.sh: node $host is not idle after ${WAIT_S}s (state: '${state:-no answer from slurmctld}')" >&2
        sinfo -R 2>&1 | sed 's/^/  sinfo -R: /' >&2 || true
        for log in slurmctld slurmd; do
            echo "  last lines of $LOG_DIR/$log.log:" >&2
            tail -10 "$LOG_DIR/$log.log" 2>/dev/null | sed 's/^/    /' >&2 || true
        done
        exit 1
    fi
    sleep 1
done
echo "==> slurm: node $host idle after $((SECONDS - start)) s ($(sinfo --version))"
