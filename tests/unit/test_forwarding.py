"""Forwarding rules as data: walk them like a switch would, no root, no Ryu."""

import itertools

import pytest

from controller.forwarding import (
    ECMP_GROUP_ID,
    SCHEDULER_MIN_PRIORITY,
    FabricForwarding,
    Pin,
    rule_matches,
)
from topo.wiring import FabricParams, fabric_wiring, leaf_dpid, leaf_name, spine_dpid, spine_name


def neighbours(wiring):
    """(switch name, port) -> (next node name, its port); hosts have port 0."""
    table = {}
    for node1, port1, node2, port2, _rate in wiring.links():
        table[(node1, port1)] = (node2, port2)
        table[(node2, port2)] = (node1, port1)
    return table


def lookup(forwarding, switch, table, packet):
    dpid = forwarding.wiring.dpids()[switch]
    candidates = [r for r in forwarding.flows_for(dpid) if r.table == table and rule_matches(r.match, packet)]
    assert candidates, f"{switch} table {table}: no rule (not even table-miss) for {packet}"
    best = max(r.priority for r in candidates)
    winners = [r for r in candidates if r.priority == best]
    assert len(winners) == 1, f"{switch}: ambiguous rules at priority {best}: {winners}"
    return winners[0]


def walk(forwarding, src, dst, packet_extra=None, table=0):
    """Every path a packet from host src to host dst can take (all ECMP buckets)."""
    wiring = forwarding.wiring
    links = neighbours(wiring)
    packet = {"eth_type": 0x0800, "ipv4_src": wiring.host(src).ip, "ipv4_dst": wiring.host(dst).ip,
              **(packet_extra or {})}
    groups = {(g.dpid, g.group_id): g for g in forwarding.groups()}
    paths = []

    def step(node, in_port, path):
        assert len(path) < 10, f"loop: {path}"
        if node.startswith("h"):
            paths.append(path)
            return
        rule = lookup(forwarding, node, table, {**packet, "in_port": in_port})
        assert rule.priority < SCHEDULER_MIN_PRIORITY
        if not rule.actions:
            paths.append(path + ["DROP"])
            return
        ((kind, value),) = [a for a in rule.actions if a[0] != "set_dscp"]  # marking does not route
        ports = [value] if kind == "output" else list(groups[(wiring.dpids()[node], value)].ports)
        for port in ports:
            assert port != in_port, f"{node} sends back out of its in_port {port}"
            nxt, nxt_port = links[(node, port)]
            assert nxt not in path, f"loop through {nxt}: {path}"
            step(nxt, nxt_port, path + [nxt])

    first_switch, first_port = links[(src, 0)]
    step(first_switch, first_port, [src, first_switch])
    return paths


@pytest.fixture
def fabric():
    return FabricForwarding(FabricParams(spines=2, leaves=4, hosts_per_leaf=2))


@pytest.mark.parametrize("table", [0, 1])
def test_every_pair_reaches_its_destination_without_loops(fabric, table):
    hosts = [h.name for h in fabric.wiring.hosts]
    for src, dst in itertools.permutations(hosts, 2):
        paths = walk(fabric, src, dst, table=table)
        assert paths and all(path[-1] == dst for path in paths), (src, dst, paths)
        if fabric.wiring.host(src).leaf == fabric.wiring.host(dst).leaf:
            assert paths == [[src, leaf_name(fabric.wiring.host(src).leaf), dst]]
        else:
            assert all(len(path) == 5 for path in paths)


def test_arp_is_routed_not_flooded(fabric):
    wiring = fabric.wiring
    for rule in fabric.flows():
        for action in rule.actions:
            assert action[0] in ("output", "group")
    packet = {"eth_type": 0x0806, "arp_tpa": wiring.host("h8").ip, "in_port": 1}
    rule = lookup(fabric, "leaf1", 0, packet)
    assert rule.actions == (("group", ECMP_GROUP_ID),)
    rule = lookup(fabric, "spine2", 0, {**packet, "in_port": 1})
    assert rule.actions == (("output", 4),)


def test_unknown_destination_is_dropped(fabric):
    rule = lookup(fabric, "leaf1", 0, {"eth_type": 0x0800, "ipv4_dst": "10.0.0.99", "in_port": 1})
    assert rule.actions == () and rule.priority == 0


def test_ecmp_spreads_across_all_spines():
    fabric = FabricForwarding(FabricParams(spines=3, leaves=2, hosts_per_leaf=1))
    paths = walk(fabric, "h1", "h2")
    assert sorted(path[2] for path in paths) == ["spine1", "spine2", "spine3"]
    for group in fabric.groups():
        assert group.kind == "select"
        assert group.ports == tuple(fabric.wiring.leaf_uplink_port(s) for s in (1, 2, 3))


def test_pin_by_destination_port_range_uses_one_spine(fabric):
    pinned = FabricForwarding(fabric.params, pins=[Pin(spine=2, dst_port_range=(5201, 5208))])
    for port in (5201, 5204, 5208):
        paths = walk(pinned, "h1", "h7", {"ip_proto": 6, "tcp_src": 40000, "tcp_dst": port})
        assert paths == [["h1", "leaf1", "spine2", "leaf4", "h7"]]
    for port in (5200, 5209):
        paths = walk(pinned, "h1", "h7", {"ip_proto": 6, "tcp_src": 40000, "tcp_dst": port})
        assert len(paths) == 2  # not pinned: ECMP
    paths = walk(pinned, "h1", "h2", {"ip_proto": 6, "tcp_src": 40000, "tcp_dst": 5201})
    assert paths == [["h1", "leaf1", "h2"]]  # same leaf: never leaves it


def test_pin_by_host_pair_and_precedence(fabric):
    pins = [Pin(spine=1, src_host="h1", dst_host="h5"), Pin(spine=2, dst_port_range=(5201, 5201))]
    pinned = FabricForwarding(fabric.params, pins=pins)
    tcp = {"ip_proto": 6, "tcp_src": 40000, "tcp_dst": 5201}
    assert walk(pinned, "h1", "h5", tcp) == [["h1", "leaf1", "spine1", "leaf3", "h5"]]  # first pin wins
    assert walk(pinned, "h2", "h5", tcp) == [["h2", "leaf1", "spine2", "leaf3", "h5"]]
    assert len(walk(pinned, "h1", "h5", {"ip_proto": 17, "udp_src": 1, "udp_dst": 2})) == 2  # tcp only
    # pins live on the ingress leaf only
    assert all(r.priority <= 2000 for r in pinned.flows_for(spine_dpid(1)))
    assert any(r.priority > 2000 for r in pinned.flows_for(leaf_dpid(1)))


def test_a_pin_with_a_dscp_marks_before_it_outputs(fabric):
    pinned = FabricForwarding(fabric.params, pins=[Pin(spine=2, dst_port_range=(5201, 5208), dscp=3)])
    pin_rules = [r for r in pinned.flows_for(leaf_dpid(1)) if r.priority > 2000]
    assert pin_rules and all(r.actions == (("set_dscp", 3), ("output", fabric.wiring.leaf_uplink_port(2)))
                             for r in pin_rules)
    assert walk(pinned, "h1", "h7", {"ip_proto": 6, "tcp_src": 40000, "tcp_dst": 5201}) == [
        ["h1", "leaf1", "spine2", "leaf4", "h7"]]


def test_pin_by_source_port(fabric):
    pinned = FabricForwarding(fabric.params, pins=[Pin(spine=1, src_port_range=(6000, 6003))])
    assert walk(pinned, "h3", "h8", {"ip_proto": 6, "tcp_src": 6002, "tcp_dst": 5201}) == [
        ["h3", "leaf2", "spine1", "leaf4", "h8"]]


@pytest.mark.parametrize(
    "pin, message",
    [
        (Pin(spine=3), r"pins\[0\]\.spine"),
        (Pin(spine=0), r"pins\[0\]\.spine"),
        (Pin(spine=1, src_host="h99"), r"pins\[0\]\.src_host"),
        (Pin(spine=1, proto="icmp"), r"pins\[0\]\.proto"),
        (Pin(spine=1, dst_port_range=(10, 5)), r"pins\[0\]\.dst_port_range"),
        (Pin(spine=1, src_host="h1", dst_host="h2"), "share a leaf"),
        (Pin(spine=1, dscp=64), r"pins\[0\]\.dscp"),
    ],
)
def test_bad_pins_are_refused(fabric, pin, message):
    with pytest.raises(ValueError, match=message):
        FabricForwarding(fabric.params, pins=[pin])


def test_pin_from_dict():
    pin = Pin.from_dict({"spine": 2, "dst_port_range": [5201, 5202]})
    assert pin == Pin(spine=2, dst_port_range=(5201, 5202))
    with pytest.raises(ValueError, match="unknown"):
        Pin.from_dict({"spine": 2, "port": 5})


def test_fabric_priorities_leave_room_for_the_scheduler(fabric):
    assert all(rule.priority < SCHEDULER_MIN_PRIORITY for rule in fabric.flows())
    assert {rule.table for rule in fabric.flows()} == {0, 1}


def test_rule_counts_are_small(fabric):
    wiring = fabric_wiring(fabric.params)
    per_switch_table = 1 + 2 * len(wiring.hosts)
    assert len(fabric.flows()) == 2 * per_switch_table * (4 + 2)
    assert len(fabric.flows_for(leaf_dpid(1))) == 2 * per_switch_table
    assert spine_name(1) in wiring.dpids()
