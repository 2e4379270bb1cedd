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

# `apt_install PACKAGE...`: apt-get install, non-interactive, one line per package. The
# package lists are updated first when they do not know a package (a fresh machine), and
# once more after a failed install (stale lists name files the mirror no longer has).
apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    local install=(apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "$@")
    if ! apt-cache show "$@" >/dev/null 2>&1; then
        echo "==> apt-get update (the package lists do not know $*)"
        apt-get update -qq
    fi
    "${install[@]}" && return 0
    echo "==> apt-get install failed: apt-get update, then once more"
    apt-get update -qq && "${install[@]}"
}
