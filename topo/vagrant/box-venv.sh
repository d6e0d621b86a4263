#!/usr/bin/env bash
# mmdebstrap's customize hook for the lab VM's box: the venv that provisioning (`make install` in
# /vagrant) would build, built now at the host's speed, so that `vagrant up` under software
# emulation finds it ready and `make install` there only checks it.
# $1: the root tree; $2: this checkout; $3: a pip download cache kept between builds.
#
# The venv is made by the Makefile's own rule ($(STAMP): the same pip command, constraints and
# checks) in /vagrant, the path the Vagrantfile syncs the repository to; the synced folder leaves
# /.venv alone. The copy of the checkout it is built from is replaced by the first sync; the stamp
# stays newer than the synced requirement files, so provisioning reinstalls nothing unless
# they changed (and then the box's recipe hash changed too, and the box is built anew).
set -euo pipefail
ROOT=$1
REPO=$2
PIP_CACHE=$3

mkdir -p "$ROOT/vagrant" "$ROOT/root/.cache/pip" "$PIP_CACHE"
tar -C "$REPO" --exclude=__pycache__ --exclude='*.egg-info' -cf - \
    Makefile README.md pyproject.toml setup.py requirements*.txt apps controller scenarios topo \
    | tar -C "$ROOT/vagrant" -xf -
mount --bind "$PIP_CACHE" "$ROOT/root/.cache/pip"
trap 'umount "$ROOT/root/.cache/pip"' EXIT
chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    make --no-print-directory -C /vagrant .venv/.shiftbed-installed
