#!/usr/bin/env bash
# mmdebstrap's customize hook for the lab VM's box: make the bootstrapped tree a Vagrant guest.
# $1: the root tree; $2: Vagrant's insecure public key (Vagrant swaps it for a key of its own at
# the first `vagrant up`).
set -euo pipefail
ROOT=$1
VAGRANT_KEY=$2

echo shiftbed > "$ROOT/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tshiftbed\n' > "$ROOT/etc/hosts"
echo 'LABEL=shiftbed-root / ext4 errors=remount-ro 0 1' > "$ROOT/etc/fstab"

# The first NIC (eth0 with net.ifnames=0) is Vagrant's management network, by DHCP.
cat > "$ROOT/etc/network/interfaces" <<'EOF'
auto lo
iface lo inet loopback

allow-hotplug eth0
iface eth0 inet dhcp
EOF

# The vagrant user: password vagrant, sudo without password, the insecure key.
chroot "$ROOT" useradd --create-home --shell /bin/bash --user-group vagrant
echo 'vagrant:vagrant' | chroot "$ROOT" chpasswd
echo 'vagrant ALL=(ALL) NOPASSWD: ALL' > "$ROOT/etc/sudoers.d/vagrant"
chmod 0440 "$ROOT/etc/sudoers.d/vagrant"
install -d -m 0700 -o 1000 -g 1000 "$ROOT/home/vagrant/.ssh"
install -m 0600 -o 1000 -g 1000 "$VAGRANT_KEY" "$ROOT/home/vagrant/.ssh/authorized_keys"
# No reverse DNS look-up on login: the guest has no resolver for its own network.
echo 'UseDNS no' > "$ROOT/etc/ssh/sshd_config.d/shiftbed.conf"
# Host keys are made at the first boot, not baked into every copy of the box.
rm -f "$ROOT"/etc/ssh/ssh_host_*
mkdir -p "$ROOT/etc/systemd/system/ssh.service.d"
printf '[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen -A\nExecStartPre=/usr/sbin/sshd -t\n' > "$ROOT/etc/systemd/system/ssh.service.d/hostkeys.conf"

die() { echo "make box: $*" >&2; exit 1; }
. "$(dirname "$0")/../debianroot.sh"
trust_host_cas "$ROOT"

# A root console on the serial port, for `virsh console` when ssh is not up.
chroot "$ROOT" systemctl enable serial-getty@ttyS0.service >/dev/null 2>&1 || true
chroot "$ROOT" apt-get clean
rm -f "$ROOT/etc/machine-id"; touch "$ROOT/etc/machine-id"
