# shellcheck shell=bash
# Sourced by the scripts: `stage NAME WHAT command...` says what a step does, runs it and
# says how long it took (and its exit status when it failed), so a long step is never
# silent and a slow one shows.
stage() {
    local name=$1 what=$2 start=$SECONDS rc=0
    shift 2
    printf '==> %s: %s\n' "$name" "$what"
    "$@" || rc=$?
    if [ "$rc" = 0 ]; then
        printf '==> %s: done in %s s\n' "$name" "$((SECONDS - start))"
    else
        printf '==> %s: FAILED (exit %s) after %s s\n' "$name" "$rc" "$((SECONDS - start))"
    fi
    return "$rc"
}
