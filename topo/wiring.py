"""The leaf-spine wiring as plain data: names, DPIDs, port numbers, addresses.

One pure function, :func:`fabric_wiring`, decides every name and number of a
leaf-spine fabric from its parameters. The Mininet topology
(``topo/leafspine.py``) builds exactly this, and the controller
(``controller/forwarding.py``) computes its rules from exactly this, without
Mininet (the controller runs under eventlet, where ``mininet`` cannot be
imported). Standard library only.

Numbering (deterministic, documented in ``docs/fabric.md``):

- hosts ``h1..hN`` leaf by leaf: leaf ``l`` (1-based) holds hosts
  ``(l-1)*hosts_per_leaf + 1 .. l*hosts_per_leaf``;
- host ``hn``: IP ``10.0.0.0 + n`` (prefix /8), MAC ``00:00:00:00:00:01`` + n - 1,
  one interface ``hn-eth0``;
- DPIDs: ``leafL`` = ``0x100 + L``, ``spineS`` = ``0x200 + S`` (so at most 255 of
  each);
- leaf ports: ``1..hosts_per_leaf`` go to its hosts in order, then
  ``hosts_per_leaf + S`` goes to ``spineS``;
- spine ports: port ``L`` goes to ``leafL``.
"""

import ipaddress
import math
from dataclasses import dataclass

# The fabric's bounds, for the builder and the scenario schema (scenarios/spec.py) alike.
LEAF_DPID_BASE = 0x100
SPINE_DPID_BASE = 0x200
MAX_SWITCHES_PER_TIER = 255
MAX_LINK_MBPS = 1000  # Mininet's TCLink ignores rates above 1000 Mbit/s (and shapes nothing)
HOST_IP_BASE = ipaddress.IPv4Address("10.0.0.0")
HOST_PREFIX_LEN = 8
# One machine emulates the whole fabric (a shell and a namespace per host, dozens of tc commands
# a port); this many hosts also keeps every interface name within Linux's 15 characters
# (leaf255-eth4351) and every address within 10.0.0.0/8.
MAX_HOSTS = 4096
MIN_MTU, MAX_MTU = 576, 9000
MAX_QUEUE_MS = 10_000
# Per-port data queue, in ms at the link rate. At 10 ms (8 jumbo frames at 50 Mbit/s) the
# userspace switch's scheduling jitter overflowed leaf uplinks and solo bursts lost packets:
# 44-46 of 50 Mbit/s in some runs, under the 90 % fidelity line. 20 ms removed those drops
# (docs/accuracy.md).
DEFAULT_QUEUE_MS = 20
# Hosts' minimum TCP retransmission timeout, ms (a route metric; Linux's own is 200 ms).
MIN_TCP_RTO_MIN_MS, MAX_TCP_RTO_MIN_MS = 1, 1000
KERNEL_TCP_RTO_MIN_MS = 200  # Linux's own, where a fabric sets none


class FabricParamError(ValueError):
    """A fabric parameter out of bounds; the message starts with its name (``field``)."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class FabricParams:
    """The five numbers that define a leaf-spine fabric (validated on creation)."""

    spines: int = 2
    leaves: int = 2
    hosts_per_leaf: int = 2
    host_link_mbps: float = 50.0
    fabric_link_mbps: float = 50.0

    def __post_init__(self):
        for name in ("spines", "leaves", "hosts_per_leaf"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise FabricParamError(name, f"must be a whole number, got {value!r}")
            if value < 1:
                raise FabricParamError(name, f"must be at least 1, got {value}")
        for name in ("spines", "leaves"):
            if getattr(self, name) > MAX_SWITCHES_PER_TIER:
                raise FabricParamError(name, f"at most {MAX_SWITCHES_PER_TIER} (DPID numbering), got {getattr(self, name)}")
        hosts = self.leaves * self.hosts_per_leaf
        if hosts > MAX_HOSTS:
            raise FabricParamError("hosts_per_leaf", f"at most {MAX_HOSTS} hosts in all (leaves × hosts_per_leaf), "
                                                     f"got {hosts}")
        for name in ("host_link_mbps", "fabric_link_mbps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
                raise FabricParamError(name, f"must be a finite number of Mbit/s, got {value!r}")
            if not 0 < value <= MAX_LINK_MBPS:
                raise FabricParamError(name, f"must be in (0, {MAX_LINK_MBPS}] Mbit/s, got {value}")

    @classmethod
    def from_dict(cls, data: dict) -> "FabricParams":
        """Build from a mapping (e.g. a JSON config), naming unknown keys."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown fabric parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**data)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def check_mtu(mtu) -> None:
    """Every port's MTU, bytes; :class:`FabricParamError` if out of bounds."""
    if isinstance(mtu, bool) or not isinstance(mtu, int) or not MIN_MTU <= mtu <= MAX_MTU:
        raise FabricParamError("mtu", f"must be a whole number in [{MIN_MTU}, {MAX_MTU}], got {mtu!r}")


def check_queue_ms(queue_ms) -> None:
    """Every port's data queue, ms at its link rate; :class:`FabricParamError` if out of bounds."""
    if isinstance(queue_ms, bool) or not isinstance(queue_ms, int | float) or not _finite(queue_ms) \
            or not 0 < queue_ms <= MAX_QUEUE_MS:
        raise FabricParamError("queue_ms", f"must be in (0, {MAX_QUEUE_MS}] ms, got {queue_ms!r}")


def check_tcp_rto_min_ms(rto_min_ms) -> None:
    """The hosts' minimum TCP retransmission timeout, ms; :class:`FabricParamError` if out of bounds."""
    if isinstance(rto_min_ms, bool) or not isinstance(rto_min_ms, int | float) or not _finite(rto_min_ms) \
            or not MIN_TCP_RTO_MIN_MS <= rto_min_ms <= MAX_TCP_RTO_MIN_MS:
        raise FabricParamError("tcp_rto_min_ms",
                               f"must be in [{MIN_TCP_RTO_MIN_MS}, {MAX_TCP_RTO_MIN_MS}] ms, got {rto_min_ms!r}")


def rto_min_route_cmd(dev: str, ip: str, rto_min_ms: float) -> str:
    """``ip route`` command that gives a host's fabric route a minimum TCP retransmission timeout.

    A route metric, so it lives in the host's namespace only; the route is restated as the kernel
    made it for the host's address (``ip route change`` replaces every attribute)."""
    check_tcp_rto_min_ms(rto_min_ms)
    return (f"ip route change {HOST_IP_BASE}/{HOST_PREFIX_LEN} dev {dev} proto kernel scope link src {ip} "
            f"rto_min {rto_min_ms:g}ms")


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


@dataclass(frozen=True)
class HostWiring:
    name: str
    number: int  # n in hn
    leaf: int  # 1-based leaf index
    leaf_port: int  # port on the leaf that faces this host
    ip: str
    mac: str


@dataclass(frozen=True)
class Wiring:
    """Every name, DPID and port of a fabric; see the module docstring."""

    params: FabricParams
    hosts: tuple[HostWiring, ...]

    @property
    def leaf_names(self) -> list[str]:
        return [leaf_name(leaf) for leaf in range(1, self.params.leaves + 1)]

    @property
    def spine_names(self) -> list[str]:
        return [spine_name(spine) for spine in range(1, self.params.spines + 1)]

    def host(self, name: str) -> HostWiring:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(f"no host {name!r} in this fabric (h1..h{len(self.hosts)})")

    def hosts_on_leaf(self, leaf: int) -> list[HostWiring]:
        return [host for host in self.hosts if host.leaf == leaf]

    def leaf_uplink_port(self, spine: int) -> int:
        """Port on every leaf that faces ``spineS`` (1-based)."""
        return self.params.hosts_per_leaf + spine

    @staticmethod
    def spine_downlink_port(leaf: int) -> int:
        """Port on every spine that faces ``leafL`` (1-based)."""
        return leaf

    def flow_links(self, src: str, dst: str, spine: int) -> list[tuple]:
        """The directed links a flow from host ``src`` to host ``dst`` crosses (through ``spine``).

        Links are tuples: ``("host-up", h)``, ``("up", leaf, spine)``, ``("down", spine, leaf)``,
        ``("host-down", h)``; a flow within one leaf crosses no spine. :meth:`link_name` names them.
        """
        a, b = self.host(src).leaf, self.host(dst).leaf
        fabric = [("up", a, spine), ("down", spine, b)] if a != b else []
        return [("host-up", src), *fabric, ("host-down", dst)]

    def link_name(self, link: tuple) -> str:
        """A directed link of :meth:`flow_links` named sender first: ``leaf1->spine1``,
        ``spine1->leaf2``, ``h1->leaf1``, ``leaf2->h3`` (a host link needs its host's leaf)."""
        kind = link[0]
        if kind == "up":
            return f"{leaf_name(link[1])}->{spine_name(link[2])}"
        if kind == "down":
            return f"{spine_name(link[1])}->{leaf_name(link[2])}"
        if kind == "host-up":
            return f"{link[1]}->{leaf_name(self.host(link[1]).leaf)}"
        if kind == "host-down":
            return f"{leaf_name(self.host(link[1]).leaf)}->{link[1]}"
        raise ValueError(f"not a directed link of this fabric: {link!r}")

    def dpids(self) -> dict[str, int]:
        """Switch name -> DPID, leaves then spines."""
        names = {leaf_name(leaf): leaf_dpid(leaf) for leaf in range(1, self.params.leaves + 1)}
        names.update({spine_name(spine): spine_dpid(spine) for spine in range(1, self.params.spines + 1)})
        return names

    def links(self) -> list[tuple[str, int, str, int, float]]:
        """Every link as (node1, port1, node2, port2, rate_mbps); host ports are 0."""
        result = [
            (host.name, 0, leaf_name(host.leaf), host.leaf_port, self.params.host_link_mbps)
            for host in self.hosts
        ]
        for leaf in range(1, self.params.leaves + 1):
            for spine in range(1, self.params.spines + 1):
                result.append(
                    (leaf_name(leaf), self.leaf_uplink_port(spine), spine_name(spine),
                     self.spine_downlink_port(leaf), self.params.fabric_link_mbps)
                )
        return result


def leaf_name(leaf: int) -> str:
    return f"leaf{leaf}"


def spine_name(spine: int) -> str:
    return f"spine{spine}"


def leaf_dpid(leaf: int) -> int:
    return LEAF_DPID_BASE + leaf


def spine_dpid(spine: int) -> int:
    return SPINE_DPID_BASE + spine


def switch_name_for_dpid(dpid: int) -> str:
    """``0x101`` -> ``leaf1``; unknown DPIDs come back as hex."""
    if LEAF_DPID_BASE < dpid <= LEAF_DPID_BASE + MAX_SWITCHES_PER_TIER:
        return leaf_name(dpid - LEAF_DPID_BASE)
    if SPINE_DPID_BASE < dpid <= SPINE_DPID_BASE + MAX_SWITCHES_PER_TIER:
        return spine_name(dpid - SPINE_DPID_BASE)
    return f"{dpid:#x}"


def host_ip(number: int) -> str:
    return str(HOST_IP_BASE + number)


def host_mac(number: int) -> str:
    return ":".join(f"{byte:02x}" for byte in number.to_bytes(6, "big"))


def fabric_wiring(params: FabricParams | None = None, **kwargs) -> Wiring:
    """The wiring of a fabric, from a :class:`FabricParams` or its keyword fields."""
    if params is None:
        params = FabricParams(**kwargs)
    elif kwargs:
        raise TypeError("pass either params or keyword fields, not both")
    hosts = []
    for leaf in range(1, params.leaves + 1):
        for slot in range(1, params.hosts_per_leaf + 1):
            number = (leaf - 1) * params.hosts_per_leaf + slot
            hosts.append(HostWiring(f"h{number}", number, leaf, slot, host_ip(number), host_mac(number)))
    return Wiring(params, tuple(hosts))
