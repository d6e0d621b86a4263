#!/usr/bin/env bash
# Start or stop what Vagrant's libvirt provider needs, on a machine without systemd.
#
#   libvirt.sh start   # virtlogd and libvirtd if libvirt does not answer; the `default` storage pool if missing
#   libvirt.sh stop    # ends and removes only what `start` started or created (recorded in $STATE)
#
# Where systemd runs libvirt already, `start` finds it answering and starts nothing.
set -euo pipefail

STATE=${SHIFTBED_LIBVIRT_STATE:-/run/shiftbed/libvirt}
URI=qemu:///system
POOL_DIR=/var/lib/libvirt/images

say() { echo "libvirt: $*" >&2; }

answering() { virsh -c "$URI" version >/dev/null 2>&1; }

# A recorded PID is ours only while it still runs the program we started.
ours() {
    local pidfile=$1 program=$2 pid
    [ -f "$pidfile" ] || return 1
    pid=$(cat "$pidfile")
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "$program"
}

start() {
    mkdir -p "$STATE"
    if ! answering; then
        [ "$(id -u)" = 0 ] || { say "libvirt is not running; start it as root (sudo make box)"; exit 1; }
        if ! pgrep -x virtlogd >/dev/null; then
            virtlogd --daemon --pid-file "$STATE/virtlogd.pid"
            echo virtlogd >> "$STATE/started"
        fi
        libvirtd --daemon --pid-file "$STATE/libvirtd.pid"
        echo libvirtd >> "$STATE/started"
        for _ in $(seq 50); do answering && break; sleep 0.2; done
        answering || { say "libvirtd did not answer on $URI within 10 s"; exit 1; }
        say "started libvirtd (pid $(cat "$STATE/libvirtd.pid"))"
    fi
    # libvirt turns on IPv4 forwarding for the NAT network Vagrant makes; `stop` puts it back.
    [ -f "$STATE/ip_forward" ] || cat /proc/sys/net/ipv4/ip_forward > "$STATE/ip_forward"
    if ! virsh -c "$URI" pool-info default >/dev/null 2>&1; then
        mkdir -p "$POOL_DIR"
        virsh -c "$URI" pool-define-as default dir --target "$POOL_DIR" >/dev/null
        virsh -c "$URI" pool-start default >/dev/null
        echo pool >> "$STATE/started"
        say "defined the storage pool 'default' at $POOL_DIR"
    elif ! virsh -c "$URI" pool-info default | grep -q 'State: *running'; then
        virsh -c "$URI" pool-start default >/dev/null
    fi
}

stop() {
    [ -f "$STATE/started" ] || { [ -f "$STATE/ip_forward" ] && restore_forwarding; return 0; }
    if grep -qx pool "$STATE/started" && answering; then
        virsh -c "$URI" pool-destroy default >/dev/null 2>&1 || true
        virsh -c "$URI" pool-undefine default >/dev/null 2>&1 || true
    fi
    for daemon in libvirtd virtlogd; do
        if grep -qx "$daemon" "$STATE/started" && ours "$STATE/$daemon.pid" "$daemon"; then
            kill "$(cat "$STATE/$daemon.pid")"
            say "stopped $daemon"
        fi
    done
    restore_forwarding
    rm -f "$STATE/started" "$STATE"/*.pid
}

restore_forwarding() {
    cat "$STATE/ip_forward" > /proc/sys/net/ipv4/ip_forward
    rm -f "$STATE/ip_forward"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
