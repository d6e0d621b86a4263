"""The link a run's jobs share (scenarios.sharedlink): which uplink, and which jobs miss it."""

from scenarios import spec
from scenarios.sharedlink import fabric_params, job_uplinks, jobs_off_link, shared_link
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


def test_the_shared_link_is_the_uplink_most_jobs_cross_and_the_others_are_named():
    scenario, wiring = _load(THREE_LEAVES)
    link = shared_link(scenario, wiring)  # (1, 1) and (2, 1) both carry two jobs: the lowest leaf wins
    assert (link.name, link.interface) == ("leaf1->spine1", "leaf1-eth4")
    assert jobs_off_link(scenario, wiring, link) == ["c", "d"]


def test_a_job_on_one_leaf_crosses_no_uplink():
    scenario, wiring = _load(THREE_LEAVES.replace("[h5, h8]", "[h5, h6]").replace("[h3, h6]", "[h3, h9]"))
    assert job_uplinks(scenario.jobs[2], wiring) == set()
    assert "c" in jobs_off_link(scenario, wiring, shared_link(scenario, wiring))
