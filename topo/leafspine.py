"""The leaf-spine fabric as a Mininet ``Topo`` (also for ``mn --custom``).

Classroom use, from the repository root::

    sudo mn --custom topo/leafspine.py --topo leafspine,spines=2,leaves=2 \\
        --controller remote --switch ovs,datapath=user,protocols=OpenFlow13

with the fabric controller running (``.venv/bin/python -m controller``, same
parameters in its config). Links carry their own class (:class:`FabricLink`),
so ``mn`` applies the HTB rates, MTU 9000 and checksum-offload-off without
``--link``. Pass ``datapath=user`` when the ``openvswitch`` kernel module is
missing (``ls /sys/module/openvswitch``); leave it out when present.

``mn`` runs this file under ``/usr/bin/python3``, so it imports only the
standard library, Mininet and the pure ``topo/wiring.py`` and
``topo/tcp_ports.py`` next to it.
"""

import os
import sys

from mininet.link import TCIntf, TCLink
from mininet.node import Switch
from mininet.topo import Topo

try:
    from topo import tcp_ports
    from topo import wiring as numbering
except ModuleNotFoundError:  # `mn --custom topo/leafspine.py`: the repository is not on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(sys._getframe(0).f_code.co_filename))))
    from topo import tcp_ports
    from topo import wiring as numbering

JUMBO_MTU = numbering.MAX_MTU  # the default: the largest MTU the fabric supports
DEFAULT_QUEUE_MS = numbering.DEFAULT_QUEUE_MS  # per-port data queue (see FabricIntf.bwCmds; why 20 ms: wiring.py)
# A host's own interface queues what its sockets hand it, as a Linux interface's
# transmit queue does (txqueuelen 1000): it never drops its own packets. With the
# switch ports' 20 ms a host sending two 97-KB flows at 25 Mbit/s dropped ~7 of
# its own packets a burst, and when such a drop left a flow nothing in flight,
# the kernel resent it on its 200-ms probe timer: 19 of 5 240 bursts stalled
# 200 ms, none of 1 250 with this queue (bench/sender_stall.py, docs/accuracy.md).
HOST_QUEUE_FRAMES = 1000
FAIR_CLASSES = 7  # DSCP 1..7: one fair-share data class each (see FabricIntf.bwCmds)


def fair_classid(dscp: int) -> str:
    """The HTB class that carries data marked ``dscp`` (0: unmarked) on every fabric link."""
    return f"5:{0x21 + dscp:x}"


# Strict priority between jobs: every job's class keeps this share of the data
# rate as a floor and may borrow the whole link; HTB lends spare rate to the
# lowest ``prio`` first, so the first-ranked job takes all it can use and the
# next ones what it leaves. The floor is what makes it "strict" only nearly:
# a lower-ranked burst never stops dead (its connection stays alive).
PRIORITY_FLOOR_SHARE = 0.01


def data_queue_bytes(bw_mbps: float, queue_ms: float, mtu: int, on_host: bool) -> int:
    """Bytes each data FIFO of a port holds: ``queue_ms`` at the link rate (at least 8 frames) on a
    switch port, :data:`HOST_QUEUE_FRAMES` frames on a host's own interface."""
    frame = mtu + 14
    if on_host:
        return HOST_QUEUE_FRAMES * frame
    return max(int(bw_mbps * 1e6 / 8 * queue_ms / 1000), 8 * frame)


def data_class_cmd(dev: str, bw_mbps: float, dscp: int, rank: int | None, mtu: int = JUMBO_MTU) -> str:
    """tc command: re-rate the data class of ``dscp`` on ``dev`` (see :meth:`FabricIntf.bwCmds`).

    ``rank`` None: its fair share (the fabric's default); ``rank`` 0..7: strict
    priority, 0 first (:data:`PRIORITY_FLOOR_SHARE`)."""
    data_mbps = bw_mbps * 0.9
    rate = data_mbps / (FAIR_CLASSES + 1) if rank is None else data_mbps * PRIORITY_FLOOR_SHARE
    prio = 1 if rank is None else min(max(int(rank), 0), 7)
    return (f"tc class change dev {dev} parent 5:20 classid {fair_classid(dscp)} htb rate {rate:.6g}Mbit "
            f"ceil {bw_mbps:g}Mbit prio {prio} quantum {2 * mtu}")


# The priority class (see FabricIntf.bwCmds) takes TCP packets that never jump
# queued data of their own connection:
# - pure ACKs: under 128 bytes, 20-byte IP header, ACK set, neither PSH nor FIN;
# - SYNs (connection set-up carries no data);
# - packets under 1024 bytes with an ephemeral port at either end: iperf3's
#   control connections. A burst's data flows use pinned ports below the
#   ephemeral range (the port plan, topo/tcp_ports.py);
# - packets under 1024 bytes from a receiving client's data port (the
#   receivers' range, topo/tcp_ports.py): it sends no data, so these (the data
#   connection's cookie, its FIN) jump nothing of their own connection. In the
#   job's data class, the cookie of a burst's second flow waited up to ~20 ms
#   behind the first flow's data on every hop (docs/accuracy.md).
# Size alone (every packet under 128 bytes) also sent a data flow's small
# segments and FINs ahead of its queued data: the receiver saw a hole, SACKed,
# and the sender resent segments that were not lost (seen in solo captures).
# Pure ACKs alone left the control messages behind up to ``queue_ms`` of the
# other direction's data: a 2-worker ring's bursts took 10-35 ms longer at
# random, because iperf3 ends a test with three control round trips
# (docs/accuracy.md).
PURE_ACK_MATCH = ("match u16 0x0000 0xff80 at 2 match u8 0x06 0xff at 9 match u8 0x05 0x0f at 0 "
                  "match u8 0x10 0x19 at 33")
SYN_MATCH = "match u8 0x06 0xff at 9 match u8 0x05 0x0f at 0 match u8 0x02 0x02 at 33"
_SMALL_TCP = "match u16 0x0000 0xfc00 at 2 match u8 0x06 0xff at 9 match u8 0x05 0x0f at 0"
TCP_SRC_PORT_AT, TCP_DST_PORT_AT = 20, 22  # byte offsets of the TCP ports behind a 20-byte IPv4 header


def _port_match(block: tuple[int, int], offset: int) -> str:
    value, mask = block
    return f"match u16 {value:#06x} {mask:#06x} at {offset}"


CONTROL_MATCHES = tuple(f"{_SMALL_TCP} {_port_match(tcp_ports.EPHEMERAL_BLOCK, at)}"
                        for at in (TCP_SRC_PORT_AT, TCP_DST_PORT_AT))
RECEIVER_MATCH = f"{_SMALL_TCP} {_port_match(tcp_ports.RECEIVER_BLOCK, TCP_SRC_PORT_AT)}"
PRIORITY_MATCHES = (PURE_ACK_MATCH, SYN_MATCH, *CONTROL_MATCHES, RECEIVER_MATCH)

# Where a job's data is classified: after the ACK filter (prio 1), before the catch-all (prio 3).
JOB_FILTER = "parent 5:0 protocol ip prio 2 u32"


def source_port_filter(dev: str, src_port: int, dscp: int) -> str:
    """tc command: packets from ``src_port`` leaving ``dev`` go to the data class of ``dscp``.

    For a host's own link, which comes before the leaf where pins mark
    packets; same precedence as the DSCP filters (after ACKs, before the rest).
    """
    return (f"tc filter add dev {dev} {JOB_FILTER} match ip sport {int(src_port)} {tcp_ports.PORT_MASK:#06x} "
            f"flowid {fair_classid(dscp)}")


class FabricIntf(TCIntf):
    """A TC-shaped interface that also sets its MTU (jumbo frames by default).

    Jumbo frames are what lets the single-threaded userspace datapath keep up
    (docs/platform.md: 4 flows at 50 Mbit/s hold 98 % with MTU 9000, 34 % with 1500).
    """

    def config(self, mtu=JUMBO_MTU, queue_ms=DEFAULT_QUEUE_MS, **params):
        self.mtu = int(mtu)
        self.queue_ms = queue_ms
        self.cmd("ip link set dev", self, "mtu", self.mtu)
        return super().config(**params)

    def bwCmds(self, bw=None, **kwargs):
        """Mininet's HTB class, split in two: small packets (ACKs) first, data behind.

        - Data waits in a byte-limited FIFO holding ``queue_ms`` at the link
          rate (at least 8 frames) on a switch port, :data:`HOST_QUEUE_FRAMES`
          frames on a host's own interface (:func:`data_queue_bytes`).
        - Pure TCP ACKs, SYNs and iperf3's control messages
          (:data:`PRIORITY_MATCHES`) get their own class with priority. A
          link carries one direction's data and the other direction's ACKs;
          in one FIFO the ACKs waited behind up to ``queue_ms`` of data, so a
          two-way burst (a 2-worker ring) ramped up over RTTs of tens of ms
          and reached ~27 of 50 Mbit/s (docs/gate.md). Both classes may borrow the whole rate.
        - Data is shared fairly between *jobs*: one HTB class per DSCP value
          1..:data:`FAIR_CLASSES` (``shiftbed run`` marks each job's packets
          at its ingress leaf, and on the sending host classifies them by
          source port) plus one for unmarked traffic, equal
          rates, each able to borrow the whole link. Two jobs' bursts on a
          link get half each from their first packet, as in the fluid model;
          FIFO sharing left it to TCP, whose fresh flow (a few jumbo frames of
          window) lost out to an established one for most of a 60-100 ms
          burst (docs/accuracy.md). A real fabric's RTTs are microseconds, so
          there TCP converges within a negligible part of a burst.
        - An explicit HTB quantum (two frames) silences "quantum is big".
        """
        cmds, parent = super().bwCmds(bw=bw, **kwargs)
        mtu = getattr(self, "mtu", JUMBO_MTU)
        quantum = f" quantum {2 * mtu}"
        cmds = [cmd + quantum if " htb rate " in cmd else cmd for cmd in cmds]
        queue_ms = getattr(self, "queue_ms", DEFAULT_QUEUE_MS)
        if bw is not None and queue_ms and parent.strip() == "parent 5:1":
            node = getattr(self, "node", None)
            limit_bytes = data_queue_bytes(bw, queue_ms, mtu, on_host=node is not None and not isinstance(node, Switch))
            share = bw * 0.9 / (FAIR_CLASSES + 1)
            cmds += [
                f"%s class add dev %s parent 5:1 classid 5:10 htb rate {bw * 0.1}Mbit ceil {bw}Mbit prio 0{quantum}",
                f"%s class add dev %s parent 5:1 classid 5:20 htb rate {bw * 0.9}Mbit ceil {bw}Mbit prio 1{quantum}",
                "%s qdisc add dev %s parent 5:10 handle 11: pfifo limit 1000",
            ]
            cmds += [f"%s filter add dev %s parent 5:0 protocol ip prio 1 u32 {match} flowid 5:10"
                     for match in PRIORITY_MATCHES]
            for dscp in range(FAIR_CLASSES + 1):  # 0: unmarked traffic
                classid = fair_classid(dscp)
                cmds += [
                    f"%s class add dev %s parent 5:20 classid {classid} htb rate {share}Mbit ceil {bw}Mbit "
                    f"prio 1{quantum}",
                    f"%s qdisc add dev %s parent {classid} handle {0x30 + dscp:x}: bfifo limit {limit_bytes}",
                ]
                if dscp:
                    cmds.append(f"%s filter add dev %s {JOB_FILTER} match ip tos {dscp << 2:#04x} 0xfc flowid {classid}")
            cmds.append("%s filter add dev %s parent 5:0 protocol all prio 3 u32 match u32 0 0 flowid 5:21")
        return cmds, parent


class FabricLink(TCLink):
    """veth pair with HTB rate, MTU and TX/RX checksum offload off on both ends.

    Offload must be off: with the userspace datapath, TCP through veth hangs
    otherwise (docs/platform.md).
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("cls1", FabricIntf)
        kwargs.setdefault("cls2", FabricIntf)
        kwargs.setdefault("txo", False)
        kwargs.setdefault("rxo", False)
        super().__init__(*args, **kwargs)


class LeafSpineTopo(Topo):
    """Leaf-spine: every leaf links to every spine; hosts hang off leaves.

    Names, DPIDs, ports, IPs and MACs come from :func:`topo.wiring.fabric_wiring`
    (leaves ``0x100 + L``, spines ``0x200 + S``). Bad parameters raise
    ``ValueError`` with a one-line message naming the parameter.
    """

    def build(self, spines=2, leaves=2, hosts_per_leaf=2, host_link_mbps=50.0,
              fabric_link_mbps=50.0, mtu=JUMBO_MTU, queue_ms=DEFAULT_QUEUE_MS):
        params = numbering.FabricParams(spines, leaves, hosts_per_leaf, host_link_mbps, fabric_link_mbps)
        numbering.check_mtu(mtu)
        numbering.check_queue_ms(queue_ms)
        self.wiring = numbering.fabric_wiring(params)
        for leaf in range(1, leaves + 1):
            self.addSwitch(numbering.leaf_name(leaf), dpid=f"{numbering.leaf_dpid(leaf):016x}", protocols="OpenFlow13")
        for spine in range(1, spines + 1):
            self.addSwitch(numbering.spine_name(spine), dpid=f"{numbering.spine_dpid(spine):016x}", protocols="OpenFlow13")
        for host in self.wiring.hosts:
            self.addHost(host.name, ip=f"{host.ip}/8", mac=host.mac)
            self.addLink(host.name, numbering.leaf_name(host.leaf), port1=0, port2=host.leaf_port,
                         cls=FabricLink, bw=host_link_mbps, mtu=mtu, queue_ms=queue_ms)
        for leaf in range(1, leaves + 1):
            for spine in range(1, spines + 1):
                self.addLink(numbering.leaf_name(leaf), numbering.spine_name(spine),
                             port1=self.wiring.leaf_uplink_port(spine),
                             port2=self.wiring.spine_downlink_port(leaf),
                             cls=FabricLink, bw=fabric_link_mbps, mtu=mtu, queue_ms=queue_ms)


topos = {"leafspine": LeafSpineTopo}
