#!/usr/bin/env bash
# Can KVM here run the box's own (stock Debian) kernel? Prints the libvirt domain type to use:
# `kvm`, or `qemu` (QEMU's software emulation, TCG) with one line on stderr saying why.
#
# /dev/kvm existing is not enough: inside a cloud VM without nested virtualisation, /dev/kvm can
# be a paravirtual device (PVM) that runs only kernels built for it, and a stock kernel hangs or
# stops with an emulation failure. So the probe boots the kernel with no root file system and
# waits for the panic that proves it ran: seconds under real KVM.
# Usage: kvm-probe.sh VMLINUZ
set -uo pipefail
KERNEL=$1
WAIT_S=${SHIFTBED_KVM_PROBE_S:-30}
KVM=${SHIFTBED_KVM_DEVICE:-/dev/kvm}

why=""
if [ ! -e "$KVM" ]; then
    why="no $KVM (no hardware virtualisation here)"
elif [ ! -r "$KVM" ] || [ ! -w "$KVM" ]; then
    why="no permission on $KVM (add yourself to group kvm, or run as root)"
else
    out=$(timeout "$WAIT_S" qemu-system-x86_64 -enable-kvm -cpu host -m 256 -smp 1 -nographic \
          -no-reboot -kernel "$KERNEL" -append "console=ttyS0 panic=-1" 2>&1)
    if ! grep -q "Kernel panic" <<<"$out"; then
        why="KVM here cannot run a stock Debian kernel (no nested virtualisation: its kernel hung or failed within ${WAIT_S} s)"
    fi
fi
if [ -n "$why" ]; then
    echo "make box: $why; the VM will run under QEMU's software emulation (TCG), several times slower" >&2
    echo qemu
else
    echo kvm
fi
