"""Widen Open vSwitch's shared transmit socket (userspace datapath).

Why this exists. With ``datapath_type=netdev``, ovs-vswitchd sends every
packet for every system (veth) port of every bridge through *one* AF_PACKET
socket (``af_packet_sock()`` in OVS's ``lib/netdev-linux.c``), created on the
first send with the send buffer of ``net.core.wmem_default`` — 212 992 bytes
here. A packet stays charged to that buffer while it waits in its port's
qdisc, so the packets queued in *all* the fabric's link queues together must
fit into about 13 jumbo frames. When they do not, ``sendmmsg()`` fails and
OVS drops the rest of the batch without counting it anywhere: not in tc, not
in the interface statistics, not in ``ovs-appctl coverage/show``.

Measured (docs/accuracy.md): in a two-job run the socket's ``wmem_alloc``
reached 223 040 bytes; SYN-ACKs seen entering a switch never left it,
connections waited out the 1 s SYN timeout and a job's mean iteration came
out 50 % slower than the fluid model predicts. With the buffer raised, the
same scenario agrees within 6 %.

The fix raises that one socket's buffer in place: ``pidfd_getfd(2)`` gives
us a copy of ovs-vswitchd's descriptor, ``SO_SNDBUFFORCE`` sets the size
(root, Linux >= 5.6). Nothing else on the machine changes, and OVS is not
restarted (which would disturb other people's bridges).
"""

from __future__ import annotations

import ctypes
import os
import socket
from dataclasses import dataclass
from pathlib import Path

OVS_PIDFILE = Path("/var/run/openvswitch/ovs-vswitchd.pid")
PROC_NET_PACKET = Path("/proc/net/packet")
TX_SNDBUF_BYTES = 16 * 1024 * 1024  # the kernel doubles it: 32 MiB, far above any fabric's queues
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SYS_PIDFD_GETFD = 438  # same number on x86_64 and aarch64


class TxBufferError(RuntimeError):
    """The socket could not be found or widened (the message says why)."""


@dataclass(frozen=True)
class TxBuffer:
    """OVS's transmit socket before and after widening (bytes, as the kernel reports them)."""

    fd: int
    before_bytes: int
    after_bytes: int


def unbound_packet_socket_inodes(proc_net_packet: str) -> set[int]:
    """Inodes of the AF_PACKET sockets bound to no interface (``Iface`` 0).

    OVS's receive sockets are bound to their port; its shared transmit
    socket is not, which is how it is told apart."""
    lines = proc_net_packet.strip().splitlines()
    if not lines or lines[0].split()[:1] != ["sk"]:
        raise TxBufferError("unexpected /proc/net/packet format")
    header = lines[0].split()
    iface, inode = header.index("Iface"), header.index("Inode")
    return {int(fields[inode]) for fields in (line.split() for line in lines[1:])
            if len(fields) > max(iface, inode) and fields[iface] == "0"}


def socket_fds(pid: int, inodes: set[int]) -> list[int]:
    """The descriptors of process ``pid`` that refer to one of ``inodes``."""
    fds = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:[") and int(target[8:-1]) in inodes:
            fds.append(int(name))
    return sorted(fds)


def widen(min_bytes: int = TX_SNDBUF_BYTES) -> list[TxBuffer]:
    """Raise the send buffer of ovs-vswitchd's unbound AF_PACKET socket(s).

    Returns one entry per socket (none when OVS has not sent anything yet and
    so has no such socket). Raises :class:`TxBufferError` when OVS or the
    kernel refuses."""
    try:
        pid = int(OVS_PIDFILE.read_text().strip())
    except (OSError, ValueError) as exc:
        raise TxBufferError(f"cannot read ovs-vswitchd's pid from {OVS_PIDFILE}: {exc}") from None
    fds = socket_fds(pid, unbound_packet_socket_inodes(PROC_NET_PACKET.read_text()))
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    widened = []
    try:
        for target_fd in fds:
            fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, target_fd, 0)
            if fd < 0:
                raise TxBufferError(f"pidfd_getfd on ovs-vswitchd fd {target_fd}: {os.strerror(ctypes.get_errno())}")
            sock = socket.socket(fileno=fd)  # our copy; closing it leaves OVS's descriptor open
            try:
                before = sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
                if before < min_bytes:
                    sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, min_bytes)
                widened.append(TxBuffer(target_fd, before, sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)))
            finally:
                sock.close()
    finally:
        os.close(pidfd)
    return widened
