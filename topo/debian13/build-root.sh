#!/usr/bin/env bash
# Build the Debian 13 root that `make test-debian13` runs shiftbed in, from Debian's own packages.
#
# Debian 13 (trixie) is bootstrapped with mmdebstrap from the mirrors this machine's apt already
# uses, minimal (no Python: `make install` in the root installs the rest), into $SHIFTBED_ROOT_CACHE
# (default /var/cache/shiftbed/debian13) under the hash of its recipe (this script and the package list).
# A second build with the same recipe only finds it; a changed recipe replaces it. An interrupted
# build leaves its work folder behind; the next build deletes it and starts clean. The finished
# root is never changed afterwards: a run writes to an overlay of its own (test-root.sh).
#
# Usage: build-root.sh. Prints the root's path.
set -euo pipefail

CACHE=${SHIFTBED_ROOT_CACHE:-/var/cache/shiftbed/debian13}
SUITE=trixie
NEED_FREE_GB=${SHIFTBED_ROOT_NEED_GB:-4}   # the root (~1 GB) and a run's overlay with its venv (~2 GB)
HERE=$(cd "$(dirname "$0")" && pwd)
# A minimal root, as a container image comes (no Python): what a user types `make install` with, from a
# git checkout, and the certificates apt and pip reach their mirrors with; and `mount`, which
# test-root.sh itself needs to detach the host's tree once the root is its own. Everything else, Python
# included, is what `make install` itself installs in the root, as on such a machine.
BASE_PACKAGES="make git ca-certificates mount"

die() { echo "make test-debian13: $*" >&2; exit 1; }
. "$HERE/../debianroot.sh"

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, mounts and Open vSwitch); run: sudo make test-debian13"
mkdir -p "$CACHE"
HASH=$(echo "$BASE_PACKAGES" | recipe_hash "$0" "$HERE/../debianroot.sh")
ROOT="$CACHE/root-$HASH"
if [ -d "$ROOT" ]; then
    echo "make test-debian13: the Debian 13 root is up to date (recipe $HASH, $ROOT)" >&2
    echo "$ROOT"
    exit 0
fi
need_free_gb "$CACHE" "$NEED_FREE_GB" "the Debian 13 root" SHIFTBED_ROOT_CACHE
command -v mmdebstrap >/dev/null || die "missing mmdebstrap (make test-debian13 installs it: run it through make)"

WORK="$CACHE/work"
if [ -d "$WORK" ]; then
    echo "make test-debian13: removing an unfinished build in $WORK" >&2
    rm -rf --one-file-system "$WORK"
fi
mkdir -p "$WORK"
started=$(date +%s)
echo "make test-debian13: bootstrapping Debian 13 ($SUITE) from this machine's apt mirrors" >&2
apt_sources_for "$SUITE" > "$WORK/debian.sources"
mmdebstrap --quiet --variant=apt \
    --include="$(echo $BASE_PACKAGES | tr ' ' ',')" \
    "$SUITE" "$WORK/root" "$WORK/debian.sources"
trust_host_cas "$WORK/root"
chroot "$WORK/root" apt-get clean
# the roots of older recipes go; this one arrives whole or not at all
rm -rf --one-file-system "$CACHE"/root-*
mv "$WORK/root" "$ROOT"
rm -rf "$WORK"
echo "make test-debian13: built the Debian 13 root in $(( $(date +%s) - started )) s ($ROOT)" >&2
echo "$ROOT"
