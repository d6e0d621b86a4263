"""The link the plan's one-link model shares (scenarios.sharedlink): which uplink, and what each job puts on it."""

import pytest

from scenarios import spec
from scenarios.sharedlink import (
    fabric_params,
    job_uplinks,
    max_min_rates,
    peak_load_mbps,
    planned_headroom,
    planned_solo_mbps,
    shared_link,
)
from topo.wiring import fabric_wiring

THREE_LEAVES = """\
name: three
fabric: {spines: 2, leaves: 3, hosts_per_leaf: 3, host_link_mbps: 40, fabric_link_mbps: 40}
jobs:
  - {name: a, period_ms: 250, comm_ms: 60, workers: [h1, h4]}
  - {name: b, period_ms: 500, comm_ms: 130, workers: [h2, h7]}
  - {name: c, period_ms: 1000, comm_ms: 50, workers: [h5, h8]}
  - {name: d, period_ms: 1000, comm_ms: 50, workers: [h3, h6], pin_spine: 2}
"""


def _load(text):
    scenario = spec.parse(text, "s.yaml")
    return scenario, fabric_wiring(fabric_params(scenario))


def test_a_job_crosses_the_uplink_of_each_of_its_leaves_through_its_spine():
    scenario, wiring = _load(THREE_LEAVES)
    uplinks = {job.name: job_uplinks(job, wiring) for job in scenario.jobs}
    assert uplinks == {"a": {(1, 1), (2, 1)}, "b": {(1, 1), (3, 1)}, "c": {(2, 1), (3, 1)}, "d": {(1, 2), (2, 2)}}


def test_the_shared_link_is_the_uplink_most_jobs_cross():
    scenario, wiring = _load(THREE_LEAVES)
    link = shared_link(scenario, wiring)  # (1, 1) and (2, 1) both carry two jobs: the lowest leaf wins
    assert (link.name, link.interface) == ("leaf1->spine1", "leaf1-eth4")
    assert link.uplink == ("up", 1, 1) and link.downlink == ("down", 1, 1)


def test_a_job_on_one_leaf_crosses_no_uplink():
    scenario, wiring = _load(THREE_LEAVES.replace("[h5, h8]", "[h5, h6]").replace("[h3, h6]", "[h3, h9]"))
    assert job_uplinks(scenario.jobs[2], wiring) == set()


def test_max_min_rates_fill_the_tightest_link_first():
    # f1 and f2 share x (30); f2 and f3 share y (100): f1 = f2 = 15, f3 takes the rest of y
    rates = max_min_rates({"f1": ["x"], "f2": ["x", "y"], "f3": ["y"]}, {"x": 30.0, "y": 100.0})
    assert rates == {"f1": 15.0, "f2": 15.0, "f3": 85.0}


PS_AND_RING = """\
name: ps
fabric: {spines: 1, leaves: 3, hosts_per_leaf: 2, host_link_mbps: 40, fabric_link_mbps: 40}
jobs:
  - {name: ps, period_ms: 500, comm_ms: 160, pattern: ps, workers: [h3, h1, h5]}
  - {name: ring, period_ms: 250, comm_ms: 80, workers: [h2, h4]}
"""


def test_a_parameter_servers_flows_share_its_link_so_each_puts_half_on_the_uplink():
    scenario, wiring = _load(PS_AND_RING)
    link = shared_link(scenario, wiring)
    assert link.name == "leaf1->spine1" and link.mbps == 40
    # h1 -> h3 crosses leaf1's uplink, but h3's link also carries h5 -> h3: 20 of 40 Mbit/s
    assert planned_solo_mbps(scenario, wiring, {job.name: link for job in scenario.jobs}) == {"ps": 20.0, "ring": 40.0}
    assert planned_headroom(scenario, wiring, link) == {"ps": 2.0, "ring": 1.0}


def test_a_fabric_twice_as_fast_as_the_hosts_has_room_for_two_bursts():
    scenario, wiring = _load(PS_AND_RING.replace("fabric_link_mbps: 40", "fabric_link_mbps: 80"))
    link = shared_link(scenario, wiring)
    assert link.mbps == 80
    assert planned_headroom(scenario, wiring, link) == {"ps": 4.0, "ring": 2.0}


def test_a_fabric_slower_than_the_hosts_bounds_each_burst_at_its_own_links():
    scenario, wiring = _load(PS_AND_RING.replace("host_link_mbps: 40", "host_link_mbps: 100"))
    link = shared_link(scenario, wiring)
    # the ring fills the uplink alone; the server's two pushes share spine1 -> leaf2 (40)
    assert planned_solo_mbps(scenario, wiring, {job.name: link for job in scenario.jobs}) == {"ps": 20.0, "ring": 40.0}
    assert planned_headroom(scenario, wiring, link) == {"ps": 2.0, "ring": 1.0}


def test_the_peak_load_counts_flows_that_share_a_link_once():
    scenario, wiring = _load(PS_AND_RING)
    # spine1 -> leaf2 carries both pushes and h2 -> h4 (a third of 40 each); h4 -> h2 has 40
    assert peak_load_mbps(scenario, wiring) == pytest.approx(3 * 40 / 3 + 40)
    # THREE_LEAVES: every spine-1 link carries two of a, b, c's six flows (20 each); d's two
    # flows go through spine 2 alone (40 each)
    assert peak_load_mbps(*_load(THREE_LEAVES)) == pytest.approx(6 * 20 + 2 * 40)
