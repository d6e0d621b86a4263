#!/usr/bin/env bash
# Build the lab VM's Vagrant box (libvirt provider) from Debian's own packages.
#
# Debian 12 is bootstrapped with mmdebstrap from the apt sources this machine already uses
# (no box catalogue, no image download), onto a disk image booted by extlinux, and added to
# Vagrant as shiftbed/debian12. The box is cached in $SHIFTBED_BOX_CACHE (default
# /var/cache/shiftbed/box) under the hash of its recipe (this script, its customize hook, the shell
# functions it shares with topo/debian13/build-root.sh and the package list),
# so a second build with the same recipe only checks the cache. An interrupted build leaves
# its work folder behind; the next build deletes it and starts clean.
#
# Usage: build-box.sh "PACKAGE ..."   (the project's Debian packages, baked into the box)
set -euo pipefail

BOX_NAME=${SHIFTBED_BOX_NAME:-shiftbed/debian12}
CACHE=${SHIFTBED_BOX_CACHE:-/var/cache/shiftbed/box}
SUITE=bookworm
DISK_GB=8
NEED_FREE_GB=${SHIFTBED_BOX_NEED_GB:-6}   # the root tree, the raw image and the box, with room to spare
HERE=$(cd "$(dirname "$0")" && pwd)
PROJECT_PACKAGES=${1:-}
# What the guest needs besides the project's packages: boot, log in over ssh, vagrant rsync.
BASE_PACKAGES="systemd-sysv udev linux-image-cloud-amd64 initramfs-tools ifupdown isc-dhcp-client
  openssh-server sudo rsync make ca-certificates python3 python3-venv iproute2 procps less"

say() { echo "make box: $*" >&2; }
die() { say "$*"; exit 1; }
. "$HERE/../debianroot.sh"

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap, a loop device and Vagrant's libvirt connection); run: sudo make box"
mkdir -p "$CACHE"
if ! ls "$CACHE"/shiftbed-debian12-*.box >/dev/null 2>&1; then
    need_free_gb "$CACHE" "$NEED_FREE_GB" "the box" SHIFTBED_BOX_CACHE
fi
for tool in mmdebstrap losetup sfdisk mkfs.ext4 extlinux qemu-img vagrant; do
    command -v "$tool" >/dev/null || die "missing $tool (make box installs it: run it through make)"
done

HASH=$(echo "$PROJECT_PACKAGES $BASE_PACKAGES" | recipe_hash "$0" "$HERE/box-customize.sh" "$HERE/../debianroot.sh")
BOX_FILE="$CACHE/shiftbed-debian12-$HASH.box"
STAMP="$CACHE/added-$HASH"            # the box in Vagrant is this recipe's

if [ -f "$BOX_FILE" ] && [ -f "$STAMP" ] && vagrant box list 2>/dev/null | grep -q "^$BOX_NAME .*libvirt"; then
    say "box $BOX_NAME is up to date (recipe $HASH, $BOX_FILE)"
    [ -f "$CACHE/driver" ] || "$HERE/kvm-probe.sh" "$CACHE/vmlinuz" > "$CACHE/driver"
    say "the VM runs with libvirt's domain type $(cat "$CACHE/driver")"
    exit 0
fi

if [ ! -f "$BOX_FILE" ]; then
    [ -f /usr/lib/syslinux/mbr/mbr.bin ] || die "missing /usr/lib/syslinux/mbr/mbr.bin (package syslinux-common)"
    VAGRANT_KEY=$(ls /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant.pub 2>/dev/null | head -1)
    [ -n "$VAGRANT_KEY" ] || die "Vagrant's insecure public key not found (package vagrant)"

    WORK="$CACHE/work"
    LOOP=""
    cleanup() {
        mountpoint -q "$WORK/mnt" 2>/dev/null && umount "$WORK/mnt"
        [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
        return 0
    }
    trap cleanup EXIT
    if [ -d "$WORK" ]; then
        say "removing an unfinished build in $WORK"
        mountpoint -q "$WORK/mnt" 2>/dev/null && umount "$WORK/mnt"
        for dev in $(losetup -j "$WORK/disk.raw" -O NAME -n 2>/dev/null); do losetup -d "$dev"; done
        rm -rf "$WORK"
    fi
    rm -f "$CACHE"/shiftbed-debian12-*.box "$CACHE"/added-* "$CACHE/vmlinuz" "$CACHE/driver"
    mkdir -p "$WORK/mnt"

    started=$(date +%s)
    say "bootstrapping Debian 12 ($SUITE) from this machine's apt sources"
    # The host's local CA certificates go in too: where the host reaches the package
    # registries through an intercepting proxy, so does the guest.
    mmdebstrap --quiet --variant=minbase \
        --include="$(echo $BASE_PACKAGES $PROJECT_PACKAGES | tr ' ' ',')" \
        --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d"; echo "MODULES=most" > "$1/etc/initramfs-tools/conf.d/shiftbed"' \
        --customize-hook="\"$HERE/box-customize.sh\" \"\$1\" \"$VAGRANT_KEY\"" \
        "$SUITE" "$WORK/root" /etc/apt/sources.list.d/debian.sources

    cp "$(ls "$WORK"/root/boot/vmlinuz-* | sort -V | tail -1)" "$CACHE/vmlinuz"   # for kvm-probe.sh
    say "writing the disk image"
    truncate -s "${DISK_GB}G" "$WORK/disk.raw"
    echo 'start=2048, type=83, bootable' | sfdisk --quiet "$WORK/disk.raw"
    # extlinux reads ext4 without the 64bit and metadata_csum features.
    LOOP=$(losetup --find --show --offset $((2048 * 512)) "$WORK/disk.raw")
    mkfs.ext4 -q -L shiftbed-root -O ^64bit,^metadata_csum -d "$WORK/root" "$LOOP"
    mount "$LOOP" "$WORK/mnt"
    mkdir -p "$WORK/mnt/boot/extlinux"
    extlinux --install "$WORK/mnt/boot/extlinux" 2>/dev/null
    kernel=$(cd "$WORK/mnt/boot" && ls vmlinuz-* | sort -V | tail -1)
    cat > "$WORK/mnt/boot/extlinux/extlinux.conf" <<EOF
DEFAULT debian
TIMEOUT 0
LABEL debian
  LINUX /boot/$kernel
  INITRD /boot/initrd.img-${kernel#vmlinuz-}
  APPEND root=LABEL=shiftbed-root ro console=ttyS0,115200 net.ifnames=0 biosdevname=0
EOF
    umount "$WORK/mnt"
    losetup -d "$LOOP"; LOOP=""
    dd if=/usr/lib/syslinux/mbr/mbr.bin of="$WORK/disk.raw" bs=440 count=1 conv=notrunc status=none

    say "packing the box"
    qemu-img convert -O qcow2 "$WORK/disk.raw" "$WORK/box.img"
    printf '{"provider": "libvirt", "format": "qcow2", "virtual_size": %d}\n' "$DISK_GB" > "$WORK/metadata.json"
    cat > "$WORK/Vagrantfile" <<'EOF'
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |libvirt|
    libvirt.disk_bus = "virtio"
  end
end
EOF
    tar -C "$WORK" -cf "$BOX_FILE.part" metadata.json Vagrantfile box.img
    mv "$BOX_FILE.part" "$BOX_FILE"
    rm -rf "$WORK"
    trap - EXIT
    say "built $BOX_FILE in $(( $(date +%s) - started )) s"
fi

vagrant box add --force --name "$BOX_NAME" --provider libvirt "$BOX_FILE" >/dev/null
# vagrant-libvirt copies a box into the storage pool once and reuses the copy by name: a copy of
# an older build of this box must go, or new machines would boot the old image.
if virsh -c qemu:///system pool-info default >/dev/null 2>&1; then
    for volume in $(virsh -c qemu:///system vol-list default 2>/dev/null | awk '{print $1}' \
                    | grep "^${BOX_NAME//\//-VAGRANTSLASH-}_vagrant_box_image_" || true); do
        virsh -c qemu:///system vol-delete --pool default "$volume" >/dev/null
    done
fi
touch "$STAMP"
say "box $BOX_NAME added to Vagrant (recipe $HASH)"
"$HERE/kvm-probe.sh" "$CACHE/vmlinuz" > "$CACHE/driver"
say "the VM runs with libvirt's domain type $(cat "$CACHE/driver")"
