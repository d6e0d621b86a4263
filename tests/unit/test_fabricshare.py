"""Bursts sharing a fabric (controller.theory.fabricshare) and the fluid model over it."""

import pytest

from controller.theory.fabricshare import JobLinks, max_min_rates
from controller.theory.fluid import FluidJob, simulate
from controller.theory.policies import link_shares


def test_a_bundle_of_flows_counts_once_per_flow_on_each_link():
    # b puts two flows on x: x's 60 Mbit/s split three ways, 20 per flow
    rates = max_min_rates({"a": {"x": 1}, "b": {"x": 2, "y": 1}}, {"x": 60.0, "y": 100.0})
    assert rates == pytest.approx({"a": 20.0, "b": 20.0})


def test_weights_split_a_link_in_their_ratio_until_another_fills():
    # a rises three times as fast as b on x (40); b alone also crosses y (8): y fills first at b = 8
    rates = max_min_rates({"a": ["x"], "b": ["x", "y"]}, {"x": 40.0, "y": 8.0}, weights={"a": 3.0, "b": 1.0})
    assert rates == pytest.approx({"a": 32.0, "b": 8.0})


def test_a_job_met_on_one_of_its_two_bottlenecks_by_hand():
    """j's two flows cross x and y (one each, 50 Mbit/s); k crosses x, l puts two flows on y.
    All rise together until y fills at 3r = 50: j and l stop at 16.7, k takes the rest of x (33.3).
    Alone, j and k go at 50 and l at 25 per flow."""
    links = JobLinks({"j": {"x": 1, "y": 1}, "k": {"x": 1}, "l": {"y": 2}}, {"x": 50.0, "y": 50.0})
    assert links.rates_mbps(["j", "k", "l"]) == pytest.approx({"j": 50 / 3, "k": 100 / 3, "l": 50 / 3})
    assert [links.solo_mbps(n) for n in "jkl"] == pytest.approx([50.0, 50.0, 25.0])
    jobs = [FluidJob(n, 400.0, 100.0) for n in "jkl"]
    assert links.shares(jobs, [0, 1, 2], "fair", [0, 1, 2], [0.0] * 3, [1.0] * 3) == pytest.approx(
        {0: 1 / 3, 1: 2 / 3, 2: 2 / 3})
    assert sorted(links.meeting(["j", "k"])) == ["x"]
    assert links.shared_links() == ["x", "y"]


def test_two_jobs_on_one_link_and_one_apart_give_the_single_link_result():
    """a and b (400 ms, 150-ms bursts) share x from t = 0: each burst at half speed takes 300 ms, so
    they iterate every 250 + 300 = 550 ms; c crosses only its own link and keeps its 400 ms."""
    links = JobLinks({"a": {"ha": 1, "x": 1}, "b": {"hb": 1, "x": 1}, "c": {"hc": 1}},
                     {"ha": 50.0, "hb": 50.0, "hc": 50.0, "x": 50.0})
    jobs = [FluidJob(n, 400.0, 150.0) for n in "abc"]
    stats = {}
    out = simulate(jobs, dict.fromkeys("abc", 0.0), iterations=6, links=links, stats=stats)
    assert {n: r.mean_iteration_ms for n, r in out.items()} == pytest.approx({"a": 550.0, "b": 550.0, "c": 400.0})
    assert set(stats["overlap_by_link"]) == {"x"}
    # from 0 to the ninth bursts' end (2 warm-up + 6 + 1) at 300 + 8 x 550 ms, a and b meet 300 ms a burst
    assert stats["overlap_share"] == stats["overlap_by_link"]["x"] == pytest.approx(9 * 300.0 / (300.0 + 8 * 550.0))
    alone = simulate(jobs[:2], dict.fromkeys("ab", 0.0), iterations=6)
    assert {n: alone[n].mean_iteration_ms for n in "ab"} == pytest.approx({"a": 550.0, "b": 550.0})


JOBS = [FluidJob("a", 300.0, 100.0), FluidJob("b", 451.0, 170.0), FluidJob("c", 610.0, 120.0)]


def _one_link(host_mbps: float, shared_mbps: float) -> JobLinks:
    """Every job's single flow crosses its own host link and the one shared link ``x``."""
    return JobLinks({j.name: {("host", j.name): 1, "x": 1} for j in JOBS},
                    {"x": shared_mbps, **{("host", j.name): host_mbps for j in JOBS}})


@pytest.mark.parametrize("sharing", ["fair", "priority", "mltcp"])
@pytest.mark.parametrize("host_mbps, headroom", [(50.0, 1.0), (40.0, 2.0)])
def test_all_jobs_on_one_link_is_the_single_link_rule(sharing, host_mbps, headroom):
    offsets = {"a": 0.0, "b": 37.0, "c": 90.0}
    jobs = [FluidJob(j.name, j.period_ms, j.comm_ms, headroom) for j in JOBS]
    rule = simulate(jobs, offsets, horizon_ms=20_000.0, sharing=sharing, priority=("b", "a", "c"))
    fabric = simulate(jobs, offsets, horizon_ms=20_000.0, sharing=sharing, priority=("b", "a", "c"),
                      links=_one_link(host_mbps, 80.0 if headroom > 1 else 50.0))
    for name in "abc":
        assert fabric[name].mean_iteration_ms == pytest.approx(rule[name].mean_iteration_ms, rel=1e-6), name
    if sharing == "fair" and headroom == 1.0:  # the bursts did meet: the check compares stretched ones
        assert rule["a"].mean_iteration_ms > 300.5


def test_shares_match_link_shares_on_one_link():
    jobs = [FluidJob(j.name, j.period_ms, j.comm_ms, 1.0) for j in JOBS]
    links = _one_link(50.0, 50.0)
    sent, remaining = [10.0, 50.0, 90.0], [90.0, 120.0, 30.0]
    for sharing in ("fair", "priority", "mltcp"):
        assert links.shares(jobs, [0, 1, 2], sharing, [1, 0, 2], sent, remaining) == pytest.approx(
            link_shares(jobs, [0, 1, 2], sharing, [1, 0, 2], sent, remaining)), sharing


def test_links_are_checked():
    with pytest.raises(ValueError, match="no capacity"):
        JobLinks({"a": {"x": 1}}, {})
    with pytest.raises(ValueError, match="whole number"):
        JobLinks({"a": {"x": 0}}, {"x": 50.0})
    with pytest.raises(ValueError, match="capacity must be > 0"):
        JobLinks({"a": {"x": 1}}, {"x": 0.0})
