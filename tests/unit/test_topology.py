"""Topology structure without root: counts, names, DPIDs, ports, links and rates."""

import pytest
from mininet.node import Host, OVSSwitch
from mininet.topo import Topo  # noqa: F401  (the Debian module must be importable)

from topo.leafspine import (
    FAIR_CLASSES,
    HOST_QUEUE_FRAMES,
    PRIORITY_MATCHES,
    PURE_ACK_MATCH,
    FabricIntf,
    FabricLink,
    LeafSpineTopo,
    data_queue_bytes,
    fair_classid,
    source_port_filter,
    topos,
)
from topo.wiring import (
    FabricParamError,
    FabricParams,
    fabric_wiring,
    rto_min_route_cmd,
    switch_name_for_dpid,
)


def build(**kwargs):
    return LeafSpineTopo(**kwargs)


def test_counts_and_names():
    topo = build(spines=2, leaves=4, hosts_per_leaf=2)
    assert topo.hosts() == [f"h{n}" for n in range(1, 9)]
    assert sorted(topo.switches()) == sorted(["leaf1", "leaf2", "leaf3", "leaf4", "spine1", "spine2"])
    assert len(topo.links()) == 8 + 4 * 2


def test_hosts_are_numbered_leaf_by_leaf():
    wiring = fabric_wiring(spines=2, leaves=3, hosts_per_leaf=3)
    assert [h.name for h in wiring.hosts_on_leaf(1)] == ["h1", "h2", "h3"]
    assert [h.name for h in wiring.hosts_on_leaf(3)] == ["h7", "h8", "h9"]
    assert [h.leaf_port for h in wiring.hosts_on_leaf(2)] == [1, 2, 3]


def test_dpids_are_explicit_and_distinct():
    topo = build(spines=3, leaves=3)
    dpids = {name: int(topo.nodeInfo(name)["dpid"], 16) for name in topo.switches()}
    assert dpids["leaf1"] == 0x101 and dpids["leaf3"] == 0x103
    assert dpids["spine1"] == 0x201 and dpids["spine3"] == 0x203
    assert len(set(dpids.values())) == len(dpids)
    assert all(switch_name_for_dpid(dpid) == name for name, dpid in dpids.items())


def test_ports_and_rates_follow_the_wiring():
    topo = build(spines=2, leaves=2, hosts_per_leaf=3, host_link_mbps=20, fabric_link_mbps=40)
    wiring = topo.wiring
    links = {}
    for a, b, info in topo.links(withInfo=True):
        assert info["cls"] is FabricLink
        ports = {info["node1"]: info["port1"], info["node2"]: info["port2"]}
        links[frozenset((a, b))] = (ports, info["bw"], info["mtu"])
    ports, bw, mtu = links[frozenset(("h5", "leaf2"))]
    assert ports == {"h5": 0, "leaf2": 2} and bw == 20 and mtu == 9000
    ports, bw, _ = links[frozenset(("leaf2", "spine1"))]
    assert ports == {"leaf2": wiring.leaf_uplink_port(1), "spine1": 2} and ports["leaf2"] == 4 and bw == 40
    assert len(links) == len(wiring.links())


def test_addresses_are_deterministic():
    wiring = fabric_wiring(spines=1, leaves=2, hosts_per_leaf=2)
    assert [h.ip for h in wiring.hosts] == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
    assert wiring.host("h3").mac == "00:00:00:00:00:03"
    topo = build(spines=1, leaves=2, hosts_per_leaf=2)
    assert topo.nodeInfo("h3") == {"ip": "10.0.0.3/8", "mac": "00:00:00:00:00:03"}


def test_mn_custom_entry_point():
    assert topos["leafspine"] is LeafSpineTopo


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"spines": 0}, "spines"),
        ({"leaves": -1}, "leaves"),
        ({"hosts_per_leaf": 0}, "hosts_per_leaf"),
        ({"spines": 2.5}, "spines"),
        ({"spines": 256}, "spines"),
        ({"host_link_mbps": -5}, "host_link_mbps"),
        ({"fabric_link_mbps": 0}, "fabric_link_mbps"),
        ({"fabric_link_mbps": float("nan")}, "fabric_link_mbps"),
        ({"host_link_mbps": 5000}, "host_link_mbps"),
        ({"host_link_mbps": "fast"}, "host_link_mbps"),
    ],
)
def test_bad_parameters_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        build(**kwargs)
    with pytest.raises(ValueError, match=f"^{field}: "):
        FabricParams(**kwargs)


def test_bad_mtu():
    with pytest.raises(ValueError, match="^mtu: "):
        build(mtu=100000)


def test_params_from_dict_names_unknown_keys():
    assert FabricParams.from_dict({"spines": 3}).spines == 3
    with pytest.raises(ValueError, match="spine"):
        FabricParams.from_dict({"spine": 3})


def test_loads_the_way_mn_custom_does(tmp_path):
    """`mn --custom topo/leafspine.py` execs the file under /usr/bin/python3 without the repo on sys.path."""
    import subprocess
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "topo" / "leafspine.py"
    code = (f"customs = {{}}; exec(compile(open({str(path)!r}).read(), {str(path)!r}, 'exec'), customs, customs); "
            "topo = customs['topos']['leafspine'](spines=2, leaves=3); print(len(topo.switches()), len(topo.hosts()))")
    result = subprocess.run(["/usr/bin/python3", "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["5", "6"]


def port_queue_commands(bw=50, queue_ms=20, mtu=9000, node=None):
    """The tc commands one fabric port gets (no interface is touched)."""
    intf = FabricIntf.__new__(FabricIntf)
    intf.mtu, intf.queue_ms, intf.node = mtu, queue_ms, node
    cmds, parent = intf.bwCmds(bw=bw)
    return [c % ("tc", "eth0") for c in cmds], parent


def test_each_job_mark_gets_its_own_equal_data_class_and_fifo():
    cmds, parent = port_queue_commands()
    assert parent.strip() == "parent 5:1"
    classes = [c for c in cmds if " class add " in c and "parent 5:20 " in c]
    assert [c.split("classid ")[1].split()[0] for c in classes] == [fair_classid(d) for d in range(FAIR_CLASSES + 1)]
    # 90 % of 50 Mbit/s in FAIR_CLASSES + 1 = 8 equal shares: 45 / 8 = 5.625; each may take the link
    assert FAIR_CLASSES + 1 == 8 and all("rate 5.625Mbit ceil 50Mbit" in c for c in classes)
    fifos = [c for c in cmds if "bfifo" in c]
    assert len(fifos) == FAIR_CLASSES + 1 and all("limit 125000" in c for c in fifos)  # 20 ms at 50 Mbit/s
    for dscp in range(1, FAIR_CLASSES + 1):
        assert any(f"match ip tos {dscp << 2:#04x} 0xfc flowid {fair_classid(dscp)}" in c for c in cmds)
    # ACKs first, then marked data, then everything else into the unmarked class
    prios = [(int(c.split(" prio ")[1].split()[0]), c.split("flowid ")[1]) for c in cmds if " filter add " in c]
    assert prios[0] == (1, "5:10") and prios[-1] == (3, fair_classid(0))


def u32_matches(selector: str, packet: bytes) -> bool:
    """Evaluate tc u32 ``match u8|u16|u32 VALUE MASK at OFFSET`` terms (all must hold) on an IP packet."""
    words = selector.split()
    sizes = {"u8": 1, "u16": 2, "u32": 4}
    for i in range(0, len(words), 6):
        assert words[i] == "match" and words[i + 4] == "at", selector
        size, value, mask, offset = sizes[words[i + 1]], int(words[i + 2], 0), int(words[i + 3], 0), int(words[i + 5])
        if int.from_bytes(packet[offset:offset + size], "big") & mask != value:
            return False
    return True


def test_the_priority_class_takes_acks_syns_and_control_but_no_data_flow_segment():
    """A data flow's small segments and FINs stay behind the data sent before it (no reordering);
    iperf3's control messages (an ephemeral port at one end) and what a receiving client sends on
    its data connection do not wait behind other flows' data."""
    from scapy.layers.inet import IP, TCP, UDP

    def tcp(flags, payload=b"", options=(), sport=5201, dport=21585):
        return bytes(IP(src="10.0.0.1", dst="10.0.0.3") / TCP(sport=sport, dport=dport, flags=flags,
                                                              options=list(options)) / payload)

    def prioritised(packet):
        return any(u32_matches(m, packet) for m in PRIORITY_MATCHES)

    timestamps = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]
    sack = timestamps + [("NOP", None), ("NOP", None), ("SAck", (100, 200, 300, 400))]
    assert u32_matches(PURE_ACK_MATCH, tcp("A", options=timestamps))
    assert u32_matches(PURE_ACK_MATCH, tcp("A", options=sack))
    assert u32_matches(PURE_ACK_MATCH, tcp("SA"))
    assert prioritised(tcp("S", options=timestamps))  # a data flow's SYN: no data to overtake
    # a data flow (pinned ports below 32768): small segments and FINs stay with its data
    assert not prioritised(tcp("PA", b"x" * 24, timestamps))
    assert not prioritised(tcp("FA", options=timestamps))
    assert not prioritised(tcp("A", b"x" * 1448, timestamps))
    # iperf3's control connection: an ephemeral client port at either end
    assert prioritised(tcp("PA", b"x" * 300, timestamps, sport=41234, dport=5201))
    assert prioritised(tcp("PA", b"x", timestamps, sport=5201, dport=41234))
    assert prioritised(tcp("FA", options=timestamps, sport=5201, dport=41234))
    assert not prioritised(tcp("PA", b"x" * 1448, timestamps, sport=41234, dport=5201))  # bulk on ephemeral ports
    # a receiving client's data port (16384-32767) sends no data: its cookie and FIN may pass
    assert prioritised(tcp("PA", b"x" * 37, timestamps, sport=21585, dport=5201))
    assert prioritised(tcp("FA", options=timestamps, sport=21585, dport=5201))
    assert not prioritised(tcp("PA", b"x" * 1448, timestamps, sport=21585, dport=5201))
    assert not prioritised(tcp("PA", b"x" * 24, timestamps, sport=5201, dport=21585))  # the sender's tail
    assert not prioritised(bytes(IP() / UDP(sport=40000, dport=40001) / b"x"))
    assert all(any(f"u32 {m} flowid 5:10" in c for c in port_queue_commands()[0]) for m in PRIORITY_MATCHES)


def test_port_queue_holds_queue_ms_at_the_link_rate_and_at_least_8_frames():
    deep, _ = port_queue_commands(bw=50, queue_ms=40)
    assert all("limit 250000" in c for c in deep if "bfifo" in c)
    shallow, _ = port_queue_commands(bw=50, queue_ms=5)
    assert all(f"limit {8 * 9014}" in c for c in shallow if "bfifo" in c)


def test_a_hosts_own_interface_queues_a_thousand_frames_and_never_the_switch_ports_depth():
    assert data_queue_bytes(25, 20, 9000, on_host=True) == HOST_QUEUE_FRAMES * 9014 == 9_014_000
    assert data_queue_bytes(25, 20, 9000, on_host=False) == 8 * 9014  # 62.5 kB at 25 Mbit/s: 8 frames
    assert data_queue_bytes(50, 40, 9000, on_host=False) == 250_000
    on_host, _ = port_queue_commands(bw=25, node=Host.__new__(Host))
    on_switch, _ = port_queue_commands(bw=25, node=OVSSwitch.__new__(OVSSwitch))
    assert all("limit 9014000" in c for c in on_host if "bfifo" in c)
    assert all(f"limit {8 * 9014}" in c for c in on_switch if "bfifo" in c)


def test_a_source_port_filter_joins_the_dscp_filters_precedence():
    cmd = source_port_filter("h1-eth0", 5201, 3)
    dscp_filters = [c for c in port_queue_commands()[0] if "match ip tos" in c]
    assert " prio 2 u32 " in cmd and all(" prio 2 u32 " in c for c in dscp_filters)
    assert cmd.endswith(f"match ip sport 5201 0xffff flowid {fair_classid(3)}")


def test_the_minimum_rto_restates_the_hosts_fabric_route():
    assert rto_min_route_cmd("h3-eth0", "10.0.0.3", 10) == (
        "ip route change 10.0.0.0/8 dev h3-eth0 proto kernel scope link src 10.0.0.3 rto_min 10ms")
    for bad in (0, 0.5, 1001, float("nan"), True):
        with pytest.raises(FabricParamError, match="tcp_rto_min_ms"):
            rto_min_route_cmd("h3-eth0", "10.0.0.3", bad)
