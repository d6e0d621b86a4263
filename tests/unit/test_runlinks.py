"""Where a run's jobs meet and which ports it captures (scenarios/runlinks.py), and the flows' pins."""

from pathlib import Path

import pytest

from controller.theory.fabricshare import JobLinks
from scenarios import spec
from scenarios.routes import conflicts_of, ecmp_spine, flow_spines, link_names, meeting_weights
from scenarios.runlinks import run_links
from scenarios.sharedlink import fabric_params, peak_load_mbps, planned_solo_mbps
from topo.tcp_ports import job_first_port, receiver_port
from topo.wiring import fabric_wiring

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SINGLE_LINK = ["classroom", "lab-contention", "model-zoo", "three-jobs", "two-jobs-coprime", "two-jobs-drifting",
               "two-jobs-feasible", "two-jobs-twin"]


def _load(name):
    scenario = spec.load(SCENARIOS / f"{name}.yaml")
    return scenario, fabric_wiring(fabric_params(scenario))


@pytest.mark.parametrize("name", SINGLE_LINK)
def test_a_single_link_scenario_is_captured_on_leaf1s_uplink_only_and_every_job_is_measured_there(name):
    scenario, wiring = _load(name)
    links = run_links(scenario, wiring)
    assert [p.name for p in links.ports] == ["leaf1->spine1"]
    assert {h.name for h in links.home.values()} == {"leaf1->spine1"}
    assert links.model_links({}) is None  # one port: the one-link model with measured headroom


def test_the_other_end_of_a_single_link_carries_the_same_flows_and_says_so():
    scenario, wiring = _load("classroom")
    record = run_links(scenario, wiring).record()
    assert record["leaf1->spine1"] == {"jobs": ["alpha", "beta"], "captured": True}
    assert record["spine1->leaf1"] == {"jobs": ["alpha", "beta"], "captured": True}
    assert record["spine1->leaf2"] == {"jobs": ["alpha", "beta"], "captured": False, "same_flows_as": "leaf1->spine1"}
    assert record["leaf2->spine1"]["same_flows_as"] == "spine1->leaf1"


def test_the_chain_is_captured_where_a_meets_b_and_where_b_meets_c():
    scenario, wiring = _load("chain")
    links = run_links(scenario, wiring)
    assert [p.name for p in links.ports] == ["leaf2->spine1", "leaf3->spine1"]
    assert {j: h.name for j, h in links.home.items()} == {"A": "leaf2->spine1", "B": "leaf2->spine1",
                                                          "C": "leaf3->spine1"}
    record = links.record()
    assert record["spine1->leaf2"]["jobs"] == ["A", "B"] and record["spine1->leaf3"]["jobs"] == ["B", "C"]
    assert all(entry["captured"] for entry in record.values())
    assert not any("A" in e["jobs"] and "C" in e["jobs"] for e in record.values())  # A and C never meet
    # what link_bandwidth.csv records: both directions of both ports
    assert [(p.name, d) for p, d, _ in links.recorded()] == [
        ("leaf2->spine1", "up"), ("leaf2->spine1", "down"), ("leaf3->spine1", "up"), ("leaf3->spine1", "down")]


def test_the_chains_schedule_weights_only_the_pairs_that_meet():
    scenario, wiring = _load("chain")
    assert meeting_weights(scenario, wiring) == {frozenset({"A", "B"}): 1, frozenset({"B", "C"}): 1}
    assert conflicts_of(scenario, wiring).components() == [["A", "B", "C"]]
    names = link_names(scenario, wiring)
    assert "spine1->leaf2" in names["A"] and "spine1->leaf2" in names["B"] and "spine1->leaf2" not in names["C"]


def test_every_flow_is_pinned_where_plan_routes_it():
    scenario, wiring = _load("ecmp-spread")
    spines = flow_spines(scenario, wiring)
    assert set(spines.values()) == {1, 2}  # the hash spreads the flows over both spines
    from scenarios.routes import job_routes

    routes = job_routes(scenario, wiring)
    for flows in routes.values():
        for label, route in flows.items():
            port = int(label.rsplit(":", 1)[1])
            assert ("up", wiring.host(label.split("->")[0]).leaf, spines[port]) in route
    # and the hash is the flow's own: alpha's first flow (h1 serves h4 on the job's first port)
    h1, h4 = wiring.host("h1"), wiring.host("h4")
    first = job_first_port(0)
    assert spines[first] == ecmp_spine(h1.ip, h4.ip, first, receiver_port(first), 2)


def test_the_model_of_a_multi_port_run_caps_each_job_at_its_measured_solo_rate():
    scenario, wiring = _load("chain")
    rate = scenario.fabric.fabric_link_mbps
    links = run_links(scenario, wiring)
    model = links.model_links({"A": {"burst_mbps": 0.8 * rate}, "B": {"burst_mbps": 0.96 * rate},
                               "C": {"burst_mbps": 0.0}})
    assert isinstance(model, JobLinks)
    assert model.solo_mbps("A") == pytest.approx(0.8 * rate)  # one flow each way on its uplink: its cap
    assert model.solo_mbps("B") == pytest.approx(0.96 * rate)
    assert model.solo_mbps("C") == pytest.approx(rate)  # not measured: the configured links only
    # A and B meet on leaf 2's links: half the rate each, below both their caps
    rates = model.rates_mbps(["A", "B"])
    assert rates["A"] == pytest.approx(rate / 2) and rates["B"] == pytest.approx(rate / 2)
    assert model.rates_mbps(["A", "C"]) == {"A": pytest.approx(0.8 * rate), "C": pytest.approx(rate)}  # never meet


def test_a_job_whose_workers_share_one_leaf_is_refused_by_name():
    scenario, wiring = _load("chain")
    from dataclasses import replace

    lonely = replace(scenario.jobs[2], workers=("h7", "h8"))
    with pytest.raises(ValueError, match=r"jobs\[2\] \(C\)\.workers: all on leaf4"):
        run_links(replace(scenario, jobs=(*scenario.jobs[:2], lonely)), wiring)


def test_planned_solo_rate_is_taken_on_each_jobs_home_uplink():
    scenario, wiring = _load("param-server")
    links = run_links(scenario, wiring)
    solo = planned_solo_mbps(scenario, wiring, links.home)
    rate = scenario.fabric.fabric_link_mbps
    assert solo["server"] == pytest.approx(rate)  # its pull sends two flows through leaf 1's uplink, half each
    assert solo["near"] == pytest.approx(rate) and solo["far"] == pytest.approx(rate)
    assert peak_load_mbps(scenario, wiring) > 0


def test_a_job_that_meets_no_one_is_captured_and_recorded_on_its_own_uplink():
    scenario, wiring = _load("classroom")
    from dataclasses import replace

    alone = replace(scenario, jobs=scenario.jobs[:1])
    links = run_links(alone, wiring)
    assert [p.name for p in links.ports] == ["leaf1->spine1"] and not links.meetings
    assert [(p.name, d, links.names[lk]) for p, d, lk in links.recorded()] == [
        ("leaf1->spine1", "up", "leaf1->spine1")]
    assert links.record() == {}
