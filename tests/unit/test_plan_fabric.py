"""`shiftbed plan` over the real conflict graph: the chain, ECMP and parameter-server scenarios,
and the single-link scenarios unchanged."""

from pathlib import Path

import pytest

from controller.theory.schedule import compute_schedule
from scenarios import planning, spec
from scenarios.commands import plan

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
SINGLE_LINK = ("classroom", "lab-contention", "model-zoo", "three-jobs", "two-jobs-coprime",
               "two-jobs-drifting", "two-jobs-feasible", "two-jobs-twin")
NEW_KEYS = {"links", "conflicts", "components", "overlap_by_link"}
SHORT = {"horizon_ms": 6000.0, "random_draws": 3}


def _plan(name: str, **kwargs) -> dict:
    return plan.build_plan(spec.load(SCENARIOS / f"{name}.yaml"), **{**SHORT, **kwargs})


def test_the_chain_is_feasible_on_the_fabric_and_not_on_one_link():
    doc = _plan("chain")
    assert doc["feasible"] is True and doc["overlap_ms"] == 0
    timings = spec.load(SCENARIOS / "chain.yaml").timings(1.0)
    assert compute_schedule(timings, 1.0).feasible is False  # every pair on one link: 500 ms in 400
    shift = {j["name"]: j["shift_ms"] for j in doc["jobs"]}
    burst = {j["name"]: j["comm_ms"] for j in doc["jobs"]}
    for a, b in (("A", "B"), ("B", "C")):  # the pairs that meet are apart, modulo the common 400 ms
        gap = (shift[b] - shift[a]) % 400
        assert burst[a] <= gap <= 400 - burst[b], (a, b, shift)


def test_the_chain_links_and_conflicts_are_exactly_where_the_jobs_meet():
    doc = _plan("chain")
    assert doc["links"] == [
        {"name": "spine1->leaf2", "jobs": ["A", "B"]},
        {"name": "spine1->leaf3", "jobs": ["B", "C"]},
        {"name": "leaf2->spine1", "jobs": ["A", "B"]},
        {"name": "leaf3->spine1", "jobs": ["B", "C"]},
    ]
    assert doc["conflicts"] == [
        {"jobs": ["A", "B"], "links": ["spine1->leaf2", "leaf2->spine1"]},
        {"jobs": ["B", "C"], "links": ["spine1->leaf3", "leaf3->spine1"]},
    ]
    assert doc["components"] == [["A", "B", "C"]]


def test_shift_and_gate_keep_the_chain_apart_and_none_does_not():
    doc = _plan("chain")
    for p in ("shift", "gate"):
        assert doc["overlap"][p] == 0
        assert set(doc["overlap_by_link"][p]) == {link["name"] for link in doc["links"]}
        assert all(x == 0 for x in doc["overlap_by_link"][p].values())
        assert {n: v["predicted_iteration_ms"] for n, v in doc["policies"][p].items()} == dict.fromkeys("ABC", 400)
    assert doc["overlap"]["none"] == max(doc["overlap_by_link"]["none"].values()) > 0
    assert doc["policies"]["none"]["B"]["predicted_iteration_ms"] > 400


def test_the_text_shows_who_meets_where_and_each_component():
    text = plan.render(_plan("chain"))
    assert "A/B meet on 2 link(s): spine1->leaf2, leaf2->spine1" in text
    assert "never meet (free to burst together): A/C" in text
    assert "component 1: A shift" in text


@pytest.mark.parametrize("name, apart", [("ecmp-spread", ("alpha", "gamma")), ("param-server", ("near", "far"))])
def test_the_fabric_scenarios_separate_only_on_the_fabric(name, apart):
    doc = _plan(name)
    assert doc["feasible"] is True
    assert compute_schedule(spec.load(SCENARIOS / f"{name}.yaml").timings(1.0), 1.0).feasible is False
    met = [set(c["jobs"]) for c in doc["conflicts"]]
    assert set(apart) not in met and len(met) == 2


def test_ecmp_spreads_one_job_over_both_spines():
    doc = _plan("ecmp-spread")
    beta = {link["name"] for link in doc["links"] if "beta" in link["jobs"]}
    assert {"leaf2->spine1", "leaf1->spine2"} <= beta


def test_the_parameter_server_meets_near_on_its_own_leaf():
    doc = _plan("param-server")
    near = next(c for c in doc["conflicts"] if c["jobs"] == ["near", "server"])
    assert {"leaf1->spine1", "spine1->leaf1"} <= set(near["links"])


@pytest.mark.parametrize("name", SINGLE_LINK)
def test_single_link_scenarios_plan_as_on_one_link(name, monkeypatch):
    """Where every pair meets, the fabric's plan is the one-link plan, key for key."""
    fabric = _plan(name)
    monkeypatch.setattr(planning, "fabric_model", lambda scenario: None)
    one_link = _plan(name)
    for key in set(one_link) - NEW_KEYS:
        assert fabric[key] == one_link[key], key
    assert fabric["links"] and one_link["links"] == []


def test_without_a_fabric_every_pair_conflicts_on_one_link():
    scenario = spec.parse("name: x\njobs:\n  - {name: a, period_ms: 400, comm_ms: 150}\n"
                          "  - {name: b, period_ms: 400, comm_ms: 200}\n  - {name: c, period_ms: 400, comm_ms: 150}\n",
                          "x.yaml")
    doc = plan.build_plan(scenario, **SHORT)
    assert doc["feasible"] is False and doc["links"] == [] and doc["components"] == [["a", "b", "c"]]
    assert [c["jobs"] for c in doc["conflicts"]] == [["a", "b"], ["a", "c"], ["b", "c"]]
    assert doc["overlap_by_link"]["shift"] == {}
    assert "every pair of jobs meets on one shared link" in plan.render(doc)


def test_the_fluid_model_counts_the_servers_two_flows_on_its_links():
    from scenarios.routes import fabric_links, job_routes
    from scenarios.sharedlink import fabric_params
    from topo.wiring import fabric_wiring

    scenario = spec.load(SCENARIOS / "param-server.yaml")
    wiring = fabric_wiring(fabric_params(scenario))
    links = fabric_links(job_routes(scenario, wiring), wiring)
    server = links.flows_on["server"]
    assert server[("up", 1, 1)] == server[("down", 1, 1)] == server[("host-down", "h1")] == 2
    assert server[("up", 2, 1)] == server[("down", 1, 3)] == 1
    rate = scenario.fabric.fabric_link_mbps  # every link's: the server's two flows halve it on its links
    assert links.solo_mbps("server") == pytest.approx(rate / 2) and links.solo_mbps("near") == pytest.approx(rate)
    assert links.capacity_mbps[("host-up", "h2")] == links.capacity_mbps[("up", 1, 1)] == rate
