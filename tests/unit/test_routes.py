"""Flows' routes through the fabric (scenarios.routes, topo.wiring.Wiring.flow_links)."""

import ipaddress
import struct
import zlib

import pytest

from apps.jobmodel import JobSpec, Worker, data_flows
from controller.theory.schedule import compute_schedule
from scenarios import spec
from scenarios.routes import conflicts_of, ecmp_spine, flow_label, job_links, job_routes
from scenarios.sharedlink import fabric_params
from topo.tcp_ports import job_first_port
from topo.wiring import fabric_wiring

CHAIN = """\
name: chain
fabric: {spines: 2, leaves: 4, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}
jobs:
  - {name: A, period_ms: 400, comm_ms: 150, workers: [h1, h3], pin_spine: 1}
  - {name: B, period_ms: 400, comm_ms: 200, workers: [h4, h5], pin_spine: 1}
  - {name: C, period_ms: 400, comm_ms: 150, workers: [h6, h7], pin_spine: 1}
"""

MIXED = """\
name: mixed
fabric: {spines: 4, leaves: 3, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}
jobs:
  - {name: ring, period_ms: 400, comm_ms: 100, workers: [h1, h3, h5]}
  - {name: ps, period_ms: 800, comm_ms: 200, workers: [h2, h4, h6], pattern: ps}
  - {name: pinned, period_ms: 800, comm_ms: 200, workers: [h1, h6], pin_spine: 3}
"""


def _load(text):
    scenario = spec.parse(text, "s.yaml")
    return scenario, fabric_wiring(fabric_params(scenario))


def test_flow_links_cross_the_spine_only_between_leaves():
    wiring = fabric_wiring(spines=2, leaves=2, hosts_per_leaf=2)
    assert wiring.flow_links("h1", "h3", 2) == [("host-up", "h1"), ("up", 1, 2), ("down", 2, 2), ("host-down", "h3")]
    assert wiring.flow_links("h1", "h2", 2) == [("host-up", "h1"), ("host-down", "h2")]


def test_link_names_read_sender_first():
    wiring = fabric_wiring(spines=2, leaves=2, hosts_per_leaf=2)
    names = [wiring.link_name(link) for link in wiring.flow_links("h1", "h3", 1)]
    assert names == ["h1->leaf1", "leaf1->spine1", "spine1->leaf2", "leaf2->h3"]
    with pytest.raises(ValueError, match="not a directed link"):
        wiring.link_name(("sideways", 1))


def test_ecmp_hash_is_crc32_of_the_packed_four_tuple():
    packed = struct.pack("!4s4sHH", ipaddress.ip_address("10.0.0.1").packed,
                         ipaddress.ip_address("10.0.0.3").packed, 5201, 21585)
    assert ecmp_spine("10.0.0.1", "10.0.0.3", 5201, 21585, 7) == zlib.crc32(packed) % 7 + 1
    assert ecmp_spine("10.0.0.1", "10.0.0.3", 5201, 21585, 1) == 1


def test_ecmp_spreads_flows_over_every_spine():
    spines = {ecmp_spine("10.0.0.1", "10.0.0.3", port, port + 16384, 4) for port in range(5201, 5301)}
    assert spines == {1, 2, 3, 4}


def test_ecmp_needs_a_spine():
    with pytest.raises(ValueError, match="spines"):
        ecmp_spine("10.0.0.1", "10.0.0.3", 5201, 21585, 0)


def test_routes_number_flows_as_the_driver_does():
    scenario, wiring = _load(MIXED)
    routes = job_routes(scenario, wiring)
    for i, job in enumerate(scenario.jobs):
        workers = tuple(Worker(h, wiring.host(h).ip) for h in job.workers)
        driver = JobSpec(job.name, job.period_ms, job.comm_ms, workers, job.pattern, base_port=job_first_port(i))
        flows = data_flows(driver)
        ip_host = {w.ip: w.name for w in workers}
        expected = [flow_label(f["src_host"], ip_host[f["dst_ip"]], f["tcp_src"]) for f in flows]
        assert list(routes[job.name]) == expected
        for f, label in zip(flows, expected, strict=True):
            spine = job.pin_spine or ecmp_spine(f["src_ip"], f["dst_ip"], f["tcp_src"], f["tcp_dst"], 4)
            assert routes[job.name][label] == wiring.flow_links(f["src_host"], ip_host[f["dst_ip"]], spine)


def test_ps_routes_cover_both_phases_with_ports_counting_on():
    scenario, wiring = _load(MIXED)
    labels = list(job_routes(scenario, wiring)["ps"])
    first = job_first_port(1)
    assert labels == [f"h4->h2:{first}", f"h6->h2:{first + 1}", f"h2->h4:{first + 2}", f"h2->h6:{first + 3}"]


def test_a_pinned_job_crosses_only_its_spine():
    scenario, wiring = _load(MIXED)
    links = job_links(job_routes(scenario, wiring))["pinned"]
    assert {link[2] for link in links if link[0] == "up"} == {3}
    assert {link[1] for link in links if link[0] == "down"} == {3}


def test_job_links_are_the_union_of_its_flows_links():
    routes = {"a": {"f1": [("host-up", "h1"), ("up", 1, 1)], "f2": [("up", 1, 1), ("down", 1, 2)]}}
    assert job_links(routes) == {"a": {("host-up", "h1"), ("up", 1, 1), ("down", 1, 2)}}


def test_the_chain_meets_on_leaf2_and_leaf3_only():
    scenario, wiring = _load(CHAIN)
    graph = conflicts_of(scenario, wiring)
    pairs = graph.pairs()
    assert set(pairs) == {("A", "B"), ("B", "C")}
    assert {wiring.link_name(link) for link in pairs[("A", "B")]} == {"leaf2->spine1", "spine1->leaf2"}
    assert {wiring.link_name(link) for link in pairs[("B", "C")]} == {"leaf3->spine1", "spine1->leaf3"}
    assert graph.weight("A", "C") == 0
    assert graph.components() == [["A", "B", "C"]]


def test_the_chain_schedules_on_its_real_routes_but_not_on_one_link():
    scenario, wiring = _load(CHAIN)
    graph = conflicts_of(scenario, wiring)
    assert graph.pair_weights() == {frozenset("AB"): 2, frozenset("BC"): 2}
    timings = scenario.timings()
    assert compute_schedule(timings, 1.0, pair_weights=graph.pair_weights()).feasible
    assert not compute_schedule(timings, 1.0).feasible
