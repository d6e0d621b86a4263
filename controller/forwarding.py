"""Proactive leaf-spine forwarding, computed as plain data (faucet style).

:class:`FabricForwarding` turns fabric parameters (and optional pins) into the
flow and group rules of every switch. It never touches a socket and imports
neither Ryu nor Mininet, so it is unit-tested by walking the rules
(``tests/unit/test_forwarding.py``); ``controller/fabric_app.py`` only
translates these rules into OpenFlow 1.3 messages.

Forwarding (IPv4 and ARP, routed on the destination address; no flooding):

- a leaf sends a packet for one of its own hosts out of that host's port;
- a leaf sends a packet for a host on another leaf to a *select* group whose
  buckets are its uplinks, one per spine (ECMP: Open vSwitch hashes the
  5-tuple, so different TCP connections spread over the spines);
- a spine sends a packet for host ``hn`` down to ``hn``'s leaf;
- a pin (higher priority, ingress leaf only) sends matching traffic for remote
  hosts to one chosen spine, to create contention on a chosen link.

Each path is host -> leaf -> spine -> leaf -> host or host -> leaf -> host,
so there are no loops. Anything else is dropped by the table-miss rule.

Table layout (the window scheduler, ``controller/gate.py``, relies on it):

- **table 0**: the fabric's rules at priorities below
  :data:`SCHEDULER_MIN_PRIORITY` (10000). Priorities ``>= 10000`` in table 0
  are reserved for the scheduler's gate rules at the ingress leaf: a drop
  rule there simply wins; a meter rule uses the instructions
  ``meter:M, goto_table:1``.
- **table 1**: an identical copy of the forwarding rules, the target of such
  ``goto_table`` instructions, so a metered flow is forwarded exactly as it
  would have been without the meter.
"""

from dataclasses import dataclass, field

from topo.tcp_ports import PORT_MASK, port_range_blocks
from topo.wiring import FabricParams, Wiring, fabric_wiring, leaf_dpid, spine_dpid

SCHEDULER_MIN_PRIORITY = 10000
PRIORITY_PIN_TOP = 9000  # first pin; later pins get lower priorities
PRIORITY_LOCAL_HOST = 2000
PRIORITY_REMOTE_HOST = 1000
PRIORITY_MISS = 0
MAX_PINS = PRIORITY_PIN_TOP - PRIORITY_LOCAL_HOST - 1

FORWARDING_TABLES = (0, 1)
GOTO_TABLE_AFTER_GATE = 1
ECMP_GROUP_ID = 1

ETH_TYPE_IPV4 = 0x0800
ETH_TYPE_ARP = 0x0806
IP_PROTOS = {"tcp": 6, "udp": 17}


@dataclass(frozen=True)
class FlowRule:
    """One flow entry. ``match`` uses Ryu ``OFPMatch`` keyword names; a value
    may be ``(value, mask)``. ``actions`` are ``("output", port)`` or
    ``("group", group_id)``, or ``("set_dscp", n)`` before them; no actions means drop."""

    dpid: int
    table: int
    priority: int
    match: dict
    actions: tuple = ()


@dataclass(frozen=True)
class GroupRule:
    """A select group: one bucket per output port, equal weights."""

    dpid: int
    group_id: int
    ports: tuple[int, ...]
    kind: str = "select"


@dataclass(frozen=True)
class Pin:
    """Send matching cross-leaf traffic through one spine.

    Fields left ``None`` match anything. Port ranges are inclusive
    ``(first, last)`` and need ``proto`` (``"tcp"`` by default). Example: all
    TCP traffic to iperf3 servers on ports 5201-5208 via spine 2:
    ``Pin(spine=2, dst_port_range=(5201, 5208))``.
    """

    spine: int
    src_host: str | None = None
    dst_host: str | None = None
    proto: str = "tcp"
    src_port_range: tuple[int, int] | None = None
    dst_port_range: tuple[int, int] | None = None
    dscp: int | None = None  # mark matching packets (1..7 pick a fair-share queue, topo/leafspine.py)

    @classmethod
    def from_dict(cls, data: dict) -> "Pin":
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"pin: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        data = dict(data)
        for key in ("src_port_range", "dst_port_range"):
            if data.get(key) is not None:
                data[key] = tuple(data[key])
        return cls(**data)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass
class FabricForwarding:
    """The rules of every switch for one fabric; see the module docstring."""

    params: FabricParams
    pins: tuple[Pin, ...] = ()
    wiring: Wiring = field(init=False)

    def __post_init__(self):
        self.wiring = fabric_wiring(self.params)
        self.pins = tuple(self.pins)
        if len(self.pins) > MAX_PINS:
            raise ValueError(f"pins: at most {MAX_PINS}, got {len(self.pins)}")
        for index, pin in enumerate(self.pins):
            self._validate_pin(index, pin)

    def _validate_pin(self, index: int, pin: Pin) -> None:
        where = f"pins[{index}]"
        if isinstance(pin.spine, bool) or not isinstance(pin.spine, int) or not 1 <= pin.spine <= self.params.spines:
            raise ValueError(f"{where}.spine: must be 1..{self.params.spines}, got {pin.spine!r}")
        for key in ("src_host", "dst_host"):
            name = getattr(pin, key)
            if name is not None:
                try:
                    self.wiring.host(name)
                except KeyError as exc:
                    raise ValueError(f"{where}.{key}: {exc.args[0]}") from None
        if pin.proto not in IP_PROTOS:
            raise ValueError(f"{where}.proto: must be one of {', '.join(IP_PROTOS)}, got {pin.proto!r}")
        for key in ("src_port_range", "dst_port_range"):
            span = getattr(pin, key)
            if span is None:
                continue
            if (not isinstance(span, tuple) or len(span) != 2
                    or not all(isinstance(p, int) and not isinstance(p, bool) for p in span)
                    or not 1 <= span[0] <= span[1] <= 65535):
                raise ValueError(f"{where}.{key}: must be (first, last) with 1 <= first <= last <= 65535, got {span!r}")
        if pin.dscp is not None and (isinstance(pin.dscp, bool) or not isinstance(pin.dscp, int)
                                     or not 0 <= pin.dscp <= 63):
            raise ValueError(f"{where}.dscp: must be 0..63, got {pin.dscp!r}")
        if pin.src_host and pin.dst_host:
            if self.wiring.host(pin.src_host).leaf == self.wiring.host(pin.dst_host).leaf:
                raise ValueError(f"{where}: {pin.src_host} and {pin.dst_host} share a leaf; traffic between them never reaches a spine")

    # -- rules ------------------------------------------------------------

    def groups(self) -> list[GroupRule]:
        """One ECMP select group per leaf (only when there is a spine to choose)."""
        uplinks = tuple(self.wiring.leaf_uplink_port(s) for s in range(1, self.params.spines + 1))
        return [GroupRule(leaf_dpid(leaf), ECMP_GROUP_ID, uplinks) for leaf in range(1, self.params.leaves + 1)]

    def flows(self) -> list[FlowRule]:
        """Every flow rule of every switch, for each table in :data:`FORWARDING_TABLES`."""
        rules = []
        for table in FORWARDING_TABLES:
            for leaf in range(1, self.params.leaves + 1):
                rules += self._leaf_flows(leaf, table)
            for spine in range(1, self.params.spines + 1):
                rules += self._spine_flows(spine, table)
        return rules

    def flows_for(self, dpid: int) -> list[FlowRule]:
        return [rule for rule in self.flows() if rule.dpid == dpid]

    def groups_for(self, dpid: int) -> list[GroupRule]:
        return [group for group in self.groups() if group.dpid == dpid]

    def dpids(self) -> list[int]:
        return list(self.wiring.dpids().values())

    def _leaf_flows(self, leaf: int, table: int) -> list[FlowRule]:
        dpid = leaf_dpid(leaf)
        rules = [FlowRule(dpid, table, PRIORITY_MISS, {})]
        for host in self.wiring.hosts:
            if host.leaf == leaf:
                priority, actions = PRIORITY_LOCAL_HOST, (("output", host.leaf_port),)
            else:
                priority, actions = PRIORITY_REMOTE_HOST, (("group", ECMP_GROUP_ID),)
            rules += _host_rules(dpid, table, priority, host.ip, actions)
        for index, pin in enumerate(self.pins):
            rules += self._pin_flows(leaf, table, PRIORITY_PIN_TOP - index, pin)
        return rules

    def _spine_flows(self, spine: int, table: int) -> list[FlowRule]:
        dpid = spine_dpid(spine)
        rules = [FlowRule(dpid, table, PRIORITY_MISS, {})]
        for host in self.wiring.hosts:
            actions = (("output", self.wiring.spine_downlink_port(host.leaf)),)
            rules += _host_rules(dpid, table, PRIORITY_LOCAL_HOST, host.ip, actions)
        return rules

    def _pin_flows(self, leaf: int, table: int, priority: int, pin: Pin) -> list[FlowRule]:
        """Pin rules at ``leaf`` for every remote destination the pin covers."""
        if pin.src_host and self.wiring.host(pin.src_host).leaf != leaf:
            return []
        base = {"eth_type": ETH_TYPE_IPV4, "ip_proto": IP_PROTOS[pin.proto]}
        if pin.src_host:
            base["ipv4_src"] = self.wiring.host(pin.src_host).ip
        actions = (("output", self.wiring.leaf_uplink_port(pin.spine)),)
        if pin.dscp is not None:
            actions = (("set_dscp", pin.dscp),) + actions
        port_matches = _port_matches(pin)
        rules = []
        for host in self.wiring.hosts:
            if host.leaf == leaf or (pin.dst_host and host.name != pin.dst_host):
                continue
            for ports in port_matches:
                rules.append(FlowRule(leaf_dpid(leaf), table, priority,
                                      {**base, "ipv4_dst": host.ip, **ports}, actions))
        return rules


def _host_rules(dpid, table, priority, ip, actions) -> list[FlowRule]:
    """IPv4 and ARP rules toward one host address."""
    return [
        FlowRule(dpid, table, priority, {"eth_type": ETH_TYPE_IPV4, "ipv4_dst": ip}, actions),
        FlowRule(dpid, table, priority, {"eth_type": ETH_TYPE_ARP, "arp_tpa": ip}, actions),
    ]


def _port_matches(pin: Pin) -> list[dict]:
    """The cross product of the pin's source and destination port blocks."""
    proto = pin.proto
    src_blocks = port_range_blocks(*pin.src_port_range) if pin.src_port_range else [None]
    dst_blocks = port_range_blocks(*pin.dst_port_range) if pin.dst_port_range else [None]
    matches = []
    for src in src_blocks:
        for dst in dst_blocks:
            match = {}
            if src is not None:
                match[f"{proto}_src"] = _masked(src)
            if dst is not None:
                match[f"{proto}_dst"] = _masked(dst)
            matches.append(match)
    return matches


def _masked(block: tuple[int, int]):
    value, mask = block
    return value if mask == PORT_MASK else (value, mask)


def rule_matches(match: dict, packet: dict) -> bool:
    """Does an OpenFlow match (with optional masks) match a packet's header fields?

    Prerequisites are implied by the fields present, as in OpenFlow: a rule
    with ``ipv4_dst`` only matches packets that have that field.
    """
    for key, want in match.items():
        if key not in packet:
            return False
        value, mask = want if isinstance(want, tuple) else (want, None)
        have = packet[key]
        if mask is None:
            if have != value:
                return False
        elif (have & mask) != (value & mask):
            return False
    return True
