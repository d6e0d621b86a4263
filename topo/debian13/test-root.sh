#!/usr/bin/env bash
# `make test-debian13`: the whole product on Debian 13, its Python 3.13 and os-ken, in a root built here.
#
# The root (build-root.sh, cached by recipe) is never changed: each run mounts an overlay of its own
# over it, holding a copy of this checkout's working tree at /shiftbed (so `make install` in the root
# builds the root's own .venv, never this checkout's). The root runs in namespaces of its own:
# - mounts: the overlay, /sys, /dev (with /dev/pts), a /proc and a tmpfs /run of its own (so it never
#   finds the host's Open vSwitch sockets). They exist only in that namespace and vanish with it;
# - processes: whatever the root kills by name (Mininet's cleanup, for one) cannot reach the host's.
# It shares the host's kernel and network, so only one Open vSwitch may run: the host's is stopped
# (only if it runs) for the root's own and started again as it was found (topo/hostovs.py), and no
# shiftbed fabric may start on the host meanwhile (this run holds the host's fabric lock). An
# interrupt ends the root's processes (shiftbed in the root tears down what it built), stops the
# root's Open vSwitch and restarts the host's; if this script itself was killed, the next run
# recovers first.
#
# Usage: test-root.sh
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${SHIFTBED_ROOT_CACHE:-/var/cache/shiftbed/debian13}
RUN="$CACHE/run"                             # this run's overlay (upper, work, merged), gone afterwards
RUN_DIR=${SHIFTBED_RUN_DIR:-/run/shiftbed}   # the host's shiftbed runtime folder (topo/runrecord.py)
STATE="$RUN_DIR/debian13-ovs.state"
OUT="$REPO/results/debian13"

die() { echo "make test-debian13: $*" >&2; exit 1; }

# --- inside the root's namespaces (first process of its PID namespace): mounts, the run, teardown ---
if [ "${1:-}" = --inside ]; then
    ROOT=$2
    M="$RUN/merged"
    mount -t overlay overlay -o "lowerdir=$ROOT,upperdir=$RUN/upper,workdir=$RUN/work" "$M"
    mount -t proc proc "$M/proc"
    mount --rbind /sys "$M/sys"
    mount --rbind /dev "$M/dev"
    mount -t tmpfs -o mode=0755 tmpfs "$M/run"
    mkdir -p "$M/root/.cache/pip" "$CACHE/pip" "$M/var/cache/apt/archives" "$CACHE/apt"
    mount --bind "$CACHE/pip" "$M/root/.cache/pip"   # pip's downloads, kept from run to run
    mount --bind "$CACHE/apt" "$M/var/cache/apt/archives"   # and apt's (make install's packages)
    cp /etc/resolv.conf "$M/etc/resolv.conf"
    # The root becomes this mount namespace's own root (pivot_root, not chroot): Mininet enters a host's
    # namespaces (mnexec -a), and entering a mount namespace resets a process's root to that namespace's,
    # which under chroot would be the host's. The host's tree is then detached altogether.
    cd "$M"
    pivot_root . mnt
    cd /
    umount -l /mnt
    in_root() { /usr/bin/env -u PYTHONPATH -u VIRTUAL_ENV HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
    # An interrupt (Ctrl-C, or SIGTERM from the host) goes to every process of the root as SIGINT, which
    # shiftbed answers by tearing down its network (none of the host's processes is in this namespace);
    # whatever still runs 20 s later gets SIGTERM. The run starts with SIGINT's default action, even if
    # this script was started with it ignored (a background job's), so that Ctrl-C reaches it.
    interrupted_at=""
    trap 'interrupted_at=${interrupted_at:-$SECONDS}; kill -INT -1 2>/dev/null || true' INT TERM
    in_root /usr/bin/env --default-signal=INT /bin/bash /shiftbed/topo/debian13/in-root.sh &
    stage=$!
    while kill -0 "$stage" 2>/dev/null; do
        if [ -n "$interrupted_at" ] && [ $((SECONDS - interrupted_at)) -ge 20 ]; then
            kill -TERM -1 2>/dev/null || true
            interrupted_at=$((SECONDS + 1000000))   # once
        fi
        sleep 1
    done
    wait "$stage" && status=0 || status=$?
    trap - INT TERM
    # what an interrupted fabric left (its run records are in this root's /run), then the root's OVS
    if [ -x /shiftbed/.venv/bin/shiftbed ]; then in_root /shiftbed/.venv/bin/shiftbed clean >&2 || true; fi
    in_root /usr/share/openvswitch/scripts/ovs-ctl stop >/dev/null 2>&1 || true
    exit "$status"
fi

# --- on the host ---
[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, mounts and Open vSwitch); run: sudo make test-debian13"
for tool in unshare pivot_root findmnt git python3; do
    command -v "$tool" >/dev/null || die "missing $tool"
done
cd "$REPO"
mkdir -p "$RUN_DIR"
exec 9<>"$RUN_DIR/fabric.lock"   # the lock every shiftbed fabric on this host takes (topo/runrecord.py)
flock -n 9 || die "another shiftbed fabric is running ($(cat "$RUN_DIR/fabric.lock")); wait for it to finish"
truncate -s 0 "$RUN_DIR/fabric.lock"; echo "make test-debian13, pid $$" > "$RUN_DIR/fabric.lock"
hostovs() { local verb=$1; shift; python3 -m topo.hostovs "$verb" "$STATE" "$@"; }
hostovs check   # refuses, one line, before anything is built or stopped

ROOT=$("$HERE/build-root.sh")

started=$SECONDS
finish() {
    local status=$?
    trap - EXIT INT TERM
    hostovs restore || status=1   # the root's process ended (by PID) if still running; the host's OVS back
    if [ -d "$RUN/upper/shiftbed/results/debian13" ]; then
        rm -rf "$OUT"; mkdir -p "$(dirname "$OUT")"
        cp -r "$RUN/upper/shiftbed/results/debian13" "$OUT"
    fi
    local left
    left=$(findmnt -rn -o TARGET | grep -F "$RUN" || true)
    if [ -n "$left" ]; then
        echo "make test-debian13: mounts left under $RUN: $(echo $left)" >&2; status=1
    elif [ "$status" = 0 ]; then
        rm -rf --one-file-system "$RUN"
    else   # what the failed stages wrote (results, logs) stays for a look, until the next run
        echo "make test-debian13: the root's files of this run stay in $RUN/upper until the next run" >&2
    fi
    echo "make test-debian13: $( [ $status = 0 ] && echo passed || echo failed) in $((SECONDS - started)) s; logs in $OUT" >&2
    exit "$status"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# a run killed before it removed its overlay: nothing is mounted there (its namespace is gone)
[ -d "$RUN" ] && rm -rf --one-file-system "$RUN"
mkdir -p "$RUN/upper/shiftbed" "$RUN/work" "$RUN/merged"
# this checkout as it is (tracked and new files, not ignored ones), at its own commit
git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$RUN/upper/shiftbed" -xf -
git -C "$RUN/upper/shiftbed" init -q
git -C "$RUN/upper/shiftbed" fetch -q --depth 1 "file://$REPO" "$(git rev-parse HEAD)"
git -C "$RUN/upper/shiftbed" reset -q FETCH_HEAD

hostovs stop    # recovers an interrupted run first; refuses, touching nothing, as check does
# The root keeps the host's fabric lock (fd 9) while any of its processes lives, even if this script is
# killed; its first process is asked to end (SIGTERM) if unshare is.
unshare --mount --pid --fork --kill-child=TERM --propagation private "$0" --inside "$ROOT" &
ns=$!
for _ in $(seq 50); do   # the namespace's first process, a child of unshare
    init=$(cat "/proc/$ns/task/$ns/children" 2>/dev/null || true)
    [ -n "$init" ] && break
    sleep 0.1
done
[ -n "$init" ] && hostovs track "$init"
wait "$ns"
