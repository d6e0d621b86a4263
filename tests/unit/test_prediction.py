"""A run's prediction from solo figures, and its knife edges (scenarios/experiment/prediction.py)."""

from pathlib import Path

import pandas as pd
import pytest

from controller.theory.schedule import JobTiming, compute_schedule
from scenarios.analysis.tables import BUSY_START_MS
from scenarios.experiment.calibration import launch_leads_ms
from scenarios.experiment.prediction import (
    KNIFE_EDGE_SHARE,
    WIRE_SHARING,
    RunModel,
    apart_share,
    between_states,
    busy_start_costs_ms,
    has_two_states,
    knife_edge,
    late_launch_bursts_ms,
    pooled_solo,
    state_start,
    typical_lead_ms,
)


def _solo(iteration_ms, data_ms, lead_ms=5.0, mbps=50.0):
    return {"iteration_ms": iteration_ms, "data_ms": data_ms, "lead_ms": lead_ms, "burst_mbps": mbps}


def _model(schedule, solo):
    return RunModel(schedule, solo, {n: s["lead_ms"] - 3.0 for n, s in solo.items()}, link_mbps=50.0,
                    queue_ms=0.0)


def test_knife_edge_is_a_range_wider_than_a_tenth_of_the_prediction():
    assert KNIFE_EDGE_SHARE == 0.10
    assert knife_edge(400.0, (400.0, 441.0))
    assert not knife_edge(400.0, (400.0, 439.0))
    assert not knife_edge(400.0, (400.0, 400.0))


def test_gated_jobs_whose_bursts_never_meet_have_no_range():
    # feasible: 100 + 100 <= gcd 400; at the schedule's shifts no burst starts while another is on
    # the link, so slower busy start-ups change nothing
    schedule = compute_schedule([JobTiming("a", 400, 100), JobTiming("b", 800, 100)])
    model = _model(schedule, {"a": _solo(384, 60), "b": _solo(768, 60)})
    offsets = dict(schedule.shifts_ms)
    predicted, ranges = model.predict_with_range("gate", offsets, iterations=12)
    # each job makes every window: its period
    assert predicted == pytest.approx({"a": 400, "b": 800})
    assert ranges == {"a": pytest.approx((400, 400)), "b": pytest.approx((800, 800))}
    assert not knife_edge(predicted["a"], ranges["a"]) and not knife_edge(predicted["b"], ranges["b"])


def test_a_gated_job_whose_burst_only_just_makes_its_next_window_is_on_a_knife_edge():
    # Both jobs: period 100, window 50; a's opens at 0, b's at 25. Launched 2 ms early with a
    # 5-ms lead, data reaches the gate 3 ms late: a's at 3, b's at 28, while a's is on the link.
    # Busy starts costing nothing: a alone 3-28 (25 of 30 ms), half speed to 38; b (5 ms by 38)
    # alone to 63, ready again 68.5 later at 131.5, within its next window's 4-ms grace
    # (128 + 4): b makes every window. Costing 10 or 20 ms, b's data waits to 38 or 48, after a's
    # end at 33: b ends 5 or 15 ms later and misses every next window: every other window.
    schedule = compute_schedule([JobTiming("a", 100, 50), JobTiming("b", 100, 50)])
    model = _model(schedule, {"a": _solo(90, 30), "b": _solo(98.5, 30)})
    offsets = {"a": 0.0, "b": 25.0}
    cost = {"a": 10.0, "b": 10.0}
    predicted, ranges = model.predict_with_range("gate", offsets, iterations=12, busy_start_ms=cost)
    assert predicted == model.predict("gate", offsets, iterations=12, busy_start_ms=cost)
    assert ranges["b"] == pytest.approx((100, 200), rel=0.01)
    assert predicted["b"] == pytest.approx(200, rel=0.01)  # the prediction takes 10 ms per busy start
    assert knife_edge(predicted["b"], ranges["b"])
    # a, ready at 98 (90 - 30 + 38) before its window (103), makes every window whatever b costs
    assert ranges["a"] == pytest.approx((100, 100), rel=0.01)
    assert not knife_edge(predicted["a"], ranges["a"])


def test_each_job_can_have_its_own_busy_start_cost():
    # the knife-edge pair above: with b's busy starts costing nothing, b makes every window again,
    # and twice nothing is nothing: no range
    schedule = compute_schedule([JobTiming("a", 100, 50), JobTiming("b", 100, 50)])
    model = _model(schedule, {"a": _solo(90, 30), "b": _solo(98.5, 30)})
    predicted, ranges = model.predict_with_range("gate", {"a": 0.0, "b": 25.0}, iterations=12,
                                                 busy_start_ms={"a": 5.0, "b": 0.0})
    assert predicted["b"] == pytest.approx(100, rel=0.01)
    assert ranges["b"] == pytest.approx((100, 100), rel=0.01)


def test_measured_busy_starts_are_drawn_and_scaled_for_the_range():
    # the knife-edge pair above, b's busy starts measured at 0 ms each time: every window, no
    # range (0, 0 and 0 again), whatever the single figure says; at 10 ms each: every other window
    schedule = compute_schedule([JobTiming("a", 100, 50), JobTiming("b", 100, 50)])
    model = _model(schedule, {"a": _solo(90, 30), "b": _solo(98.5, 30)})
    offsets = {"a": 0.0, "b": 25.0}
    for measured_ms, expected_ms in ((0.0, 100), (10.0, 200)):
        predicted, ranges = model.predict_with_range("gate", offsets, iterations=12,
                                                     busy_start_ms={"a": 10.0, "b": 10.0},
                                                     busy_start_samples_ms={"b": (measured_ms,) * 3})
        assert predicted["b"] == pytest.approx(expected_ms, rel=0.01)
    assert ranges["b"] == pytest.approx((100, 200), rel=0.01)  # 0 x, 1 x and 2 x the 10-ms draws


def test_a_drifting_pair_on_standing_connections_is_predicted_under_every_windowed_policy():
    # periods 250 and 757 on a 10-ms grid (b's windows every 760 ms), one spine and two leaves,
    # standing connections: each job's data follows its launch within a millisecond, so it
    # launches after its window opens (a negative launch lead) and the schedule, infeasible, lets
    # no burst launch late. A gated burst that waited for its window's start takes it.
    schedule = compute_schedule([JobTiming("a", 250, 80), JobTiming("b", 760, 120)], 10)
    solo = {"a": _solo(240.0, 54.9, lead_ms=0.6), "b": _solo(726.7, 82.0, lead_ms=0.6)}
    model = RunModel(schedule, solo, launch_leads_ms(solo), link_mbps=50.0, queue_ms=20.0,
                     tcp_sharing=WIRE_SHARING["persistent"])
    assert all(lead < 0 for lead in model.launch_lead_ms.values())
    for policy in ("gate", "guard", "align"):
        predicted, ranges = model.predict_with_range(policy, {"a": 0.0, "b": 0.0}, {"a": 80, "b": 25})
        # each burst in a window of its own, and slower than alone where the two meet
        assert 250 - 80 / 80 <= ranges["a"][0] <= predicted["a"] < 2 * 250
        assert 760 - 120 / 25 <= ranges["b"][0] <= predicted["b"] < 2 * 760


def test_a_busy_start_cost_is_the_measured_one_else_the_default():
    costs = busy_start_costs_ms({"a": 9.5, "b": None, "c": -1.2}, ["a", "b", "c", "d"])
    assert costs == {"a": 9.5, "b": BUSY_START_MS, "c": 0.0, "d": BUSY_START_MS}


def test_bursts_beside_other_jobs_give_busy_end_samples_against_the_pools_usual_after():
    solo = {"a": {**_solo(290.0, 50.0, lead_ms=10.0), "link_samples_ms": [50.0] * 3}}
    solo_spans = {"a": _spans("a", [10.0] * 3, [50.0] * 3, [10.0] * 3)}
    beside_b = _spans("a", [15.0] * 3, [60.0] * 3, [20.0, 22.0, 24.0], quiet=False).assign(met=[("b",)] * 3)
    others = pd.concat([_spans("a", [14.0] * 3, [50.0] * 3, [12.0] * 3).assign(met=[()] * 3), beside_b])
    # the pool's after phases: 10, 10, 10, 12, 12, 12 (median 11); beside b: 20, 22, 24
    assert pooled_solo(solo, solo_spans, others)["a"]["busy_after_samples_ms"] == (
        ("shared", pytest.approx((9.0, 11.0, 13.0))),)
    assert pooled_solo(solo, solo_spans, others, meets=set())["a"]["busy_after_samples_ms"] == (
        ("apart", pytest.approx((9.0, 11.0, 13.0))),)
    # one policy's own bursts never feed its prediction: a run with no other policy has none
    assert pooled_solo(solo, solo_spans, pd.DataFrame())["a"]["busy_after_samples_ms"] == ()


def test_late_launches_only_where_no_two_jobs_windows_ever_meet():
    solo = {"alpha": {"comm_ms": 68.0}, "beta": {"comm_ms": 104.0}}
    separable = compute_schedule([JobTiming("alpha", 300, 100), JobTiming("beta", 600, 150)], 1)
    coprime = compute_schedule([JobTiming("alpha", 401, 150), JobTiming("beta", 600, 200)], 1)
    assert separable.feasible and not coprime.feasible
    assert late_launch_bursts_ms(separable, solo) == {"alpha": 68.0, "beta": 104.0}
    assert late_launch_bursts_ms(coprime, solo) == {}


def _spans(job, lead_ms, data_ms, after_ms, quiet=True):
    n = len(lead_ms)
    return pd.DataFrame({"job": [job] * n, "lead_ms": lead_ms, "data_ms": data_ms, "after_ms": after_ms,
                         "quiet": [quiet] * n})


def test_solo_figures_are_pooled_with_the_other_policies_quiet_bursts():
    solo = {"a": {**_solo(290.0, 50.0, lead_ms=10.0), "link_samples_ms": [50.0] * 3},
            "b": {**_solo(590.0, 100.0), "link_samples_ms": [100.0] * 3}}
    solo_spans = {"a": _spans("a", [10.0] * 3, [50.0] * 3, [10.0] * 3),   # 70 ms from launch to end
                  "b": _spans("b", [5.0] * 3, [100.0] * 3, [8.0] * 3)}
    others = pd.concat([_spans("a", [14.0] * 3, [50.0] * 3, [12.0] * 3),  # later in the run: 76 ms
                        _spans("a", [100.0], [200.0], [50.0], quiet=False),  # met another job's: not used
                        _spans("b", [9.0], [120.0], [8.0], quiet=False)])
    pooled = pooled_solo(solo, solo_spans, others)
    a = pooled["a"]
    assert a["quiet_bursts"] == 3
    assert a["lead_ms"] == pytest.approx(12.0) and a["data_ms"] == pytest.approx(50.0)
    assert a["burst_lead_ms"] == pytest.approx(12.0)  # the pool's median: 10, 10, 10, 14, 14, 14
    # the compute phase is a fixed sleep: the iteration moves by the median burst's change, (70 + 76) / 2 - 70
    assert a["iteration_ms"] == pytest.approx(293.0)
    assert a["link_samples_ms"] == pytest.approx([48.0] * 3 + [52.0] * 3)  # late starts against the pool's lead
    assert a["burst_mbps"] == solo["a"]["burst_mbps"]
    # no quiet burst of b elsewhere: its solo figures (and too few busy ones for busy-end samples)
    assert pooled["b"] == {**solo["b"], "quiet_bursts": 0, "busy_after_samples_ms": ()}
    assert pooled_solo(solo, solo_spans, pd.DataFrame())["a"] == {**solo["a"], "quiet_bursts": 0,
                                                                  "busy_after_samples_ms": ()}
    assert pooled_solo(solo, {}, others)["a"] == {**solo["a"], "quiet_bursts": 0}  # no solo bursts kept


def test_the_typical_lead_is_the_median_where_known():
    """Leads have a long tail of slow process starts: launching the mean early sent data before
    the window opened in 10 of 15 gated bursts (h10's b, measured 2026-12-02)."""
    assert typical_lead_ms({"lead_ms": 12.6, "burst_lead_ms": 11.0}) == 11.0
    assert typical_lead_ms({"lead_ms": 12.6}) == 12.6


def test_a_gated_job_is_predicted_late_by_its_median_lead_less_its_launch_lead():
    schedule = compute_schedule([JobTiming("a", 300, 100)], 1)
    solo = {"a": {**_solo(288.0, 50.0, lead_ms=12.6), "burst_lead_ms": 11.0}}
    model = RunModel(schedule, solo, {"a": 8.0}, link_mbps=50.0, queue_ms=0.0)
    _jobs, offsets, _ = model.simulation("gate", {"a": 0.0}, 5)
    assert offsets["a"] == pytest.approx(3.0)  # data reaches the open gate 11 - 8 ms late


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["classroom.yaml", "two-jobs-coprime.yaml", "three-jobs.yaml", "model-zoo.yaml"])
def test_the_run_predicts_with_the_shifts_the_controller_computes(name):
    """The run's prediction and the controller's windows come from one schedule: the runner computes
    it as the scheduler core does, from the same registered times and with the same node budget."""
    from controller.scheduler import SchedulerCore
    from scenarios import spec
    from scenarios.experiment.runner import run_schedule

    scenario = spec.load(REPO / "scenarios" / name)
    core = SchedulerCore()
    for k, t in enumerate(scenario.timings()):
        core.add_job({"name": t.name, "period_ms": t.period_ms, "comm_ms": t.comm_ms, "workers": ["h1", "h3"],
                      "flows": [{"dpid": 0x101, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 5201 + k}]})
    ours = run_schedule(scenario)
    assert ours.shifts_ms == core.schedule.shifts_ms and ours.method == core.schedule.method


@pytest.mark.parametrize("policy", ["gate", "guard", "align", "priority"])
@pytest.mark.parametrize("name", ["classroom.yaml", "two-jobs-coprime.yaml", "two-jobs-drifting.yaml"])
def test_each_policy_is_predicted_with_the_schedule_the_controller_computes_for_it(name, policy):
    """``guard`` and ``align`` have schedules of their own (longer windows, padded periods): the run
    computes each as the scheduler core does when the run sets that policy (its quantum and guard)."""
    from controller.scheduler import SchedulerCore
    from scenarios import spec
    from scenarios.experiment.runner import guard_option_ms, run_schedule

    scenario = spec.load(REPO / "scenarios" / name)
    core = SchedulerCore()
    for k, t in enumerate(scenario.timings()):
        core.add_job({"name": t.name, "period_ms": t.period_ms, "comm_ms": t.comm_ms, "workers": ["h1", "h3"],
                      "flows": [{"dpid": 0x101, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 5201 + k}]})
    core.set_policy({"policy": policy, "start_in_s": 1.0, "quantum_ms": scenario.quantum_ms,
                     "guard_ms": guard_option_ms(scenario, policy)})
    ours = run_schedule(scenario, policy)
    assert ours.shifts_ms == core.schedule.shifts_ms
    doc = core.schedule_doc()["jobs"]
    for j in ours.jobs:
        assert doc[j.name]["period_ms"] == j.period_ms and doc[j.name]["window_ms"] == j.comm_ms, (j, doc[j.name])


def test_the_guard_is_asked_for_only_where_the_policy_widens_the_windows():
    from scenarios import spec
    from scenarios.experiment.runner import guard_option_ms

    scenario = spec.load(REPO / "scenarios" / "classroom.yaml")
    assert guard_option_ms(scenario, "guard") == scenario.knobs.guard_ms > 0
    assert guard_option_ms(scenario, "gate") == guard_option_ms(scenario, "align") == 0.0


def test_a_padded_job_is_predicted_at_its_solo_iteration_plus_the_padding():
    """A 288-ms job padded by 12 ms runs at 300 ms, exactly half its neighbour's 600: shifted apart,
    their bursts never meet, and its predicted iteration is its solo iteration plus the padding."""
    schedule = compute_schedule([JobTiming("a", 300, 100), JobTiming("b", 600, 100)], 1.0)
    solo = {"a": _solo(288.0, 60.0), "b": _solo(600.0, 60.0)}
    padded = RunModel(schedule, solo, {"a": 0.0, "b": 0.0}, link_mbps=50.0, queue_ms=0.0, padding_ms={"a": 12.0})
    predicted = padded.predict("none", {"a": 0.0, "b": 150.0}, 20)
    assert predicted == pytest.approx({"a": 300.0, "b": 600.0}, abs=0.01)


def test_under_strict_priority_the_first_ranked_job_is_never_slowed():
    """``priority`` ranks the shorter burst first. Two 300-ms jobs whose bursts start together: fair
    sharing stretches both alike, so they stay together and both run slow; under strict priority
    the first goes at full rate, the second waits for it once and then runs beside it, apart."""
    schedule = compute_schedule([JobTiming("a", 300, 100), JobTiming("b", 300, 150)], 1.0)
    solo = {"a": _solo(300.0, 80.0, lead_ms=0.0), "b": _solo(300.0, 120.0, lead_ms=0.0)}
    model = RunModel(schedule, solo, {"a": 0.0, "b": 0.0}, link_mbps=50.0, queue_ms=0.0)
    fair = model.predict("none", {"a": 0.0, "b": 0.0}, 20, busy_start_ms=0.0)
    strict = model.predict("priority", {"a": 0.0, "b": 0.0}, 20, busy_start_ms=0.0)
    assert strict["a"] == pytest.approx(300.0, abs=0.5) and fair["a"] > 300.0 + 10
    assert strict["b"] == pytest.approx(300.0, abs=0.5) and fair["b"] > 300.0 + 10


def test_the_wire_shares_a_link_as_its_transport_does():
    """Fresh iperf3 connections per burst: the burst further along keeps more of the link ("leader");
    standing connections: fair. Two equal jobs a few ms apart meet under fair sharing every period
    and run slower than under the leader's weights, which sort them apart."""
    assert WIRE_SHARING == {"iperf3": "leader", "persistent": "fair"}
    schedule = compute_schedule([JobTiming("a", 300, 100), JobTiming("b", 300, 100)])
    solo = {"a": _solo(288, 70), "b": _solo(288, 70)}
    offsets = {"a": 0.0, "b": 5.0}
    predicted = {}
    for transport, sharing in WIRE_SHARING.items():
        model = RunModel(schedule, solo, {"a": 2.0, "b": 2.0}, link_mbps=50.0, queue_ms=0.0, tcp_sharing=sharing)
        assert model.simulation("none", offsets, 20)[2]["sharing"] == sharing
        assert model.simulation("priority", offsets, 20)[2]["sharing"] == "priority"  # its own, not TCP's
        predicted[transport] = model.predict("none", offsets, 20)
    for job in ("a", "b"):
        assert predicted["persistent"][job] > predicted["iperf3"][job] + 10


def test_only_jobs_left_free_running_from_a_start_off_the_shifts_have_two_states():
    assert has_two_states("none") and has_two_states("random")
    # started at the shifts, held to windows, realigned, or sharing by their own rule: one state
    for policy in ("shift", "gate", "guard", "align", "priority", "mltcp"):
        assert not has_two_states(policy), policy


def test_a_job_is_predicted_apart_for_its_iterations_after_the_jobs_parted():
    assert apart_share({"iterations": 20, "bursts_after_parting": 5}) == 0.25
    assert apart_share({"iterations": 20, "bursts_after_parting": 21}) == 1.0  # a burst past the last iteration
    assert apart_share({"iterations": 20, "bursts_after_parting": 0}) == 0.0
    assert apart_share({"iterations": 20}) == 0.0 and apart_share({}) == 0.0  # no figure: as they started
    # a quarter of 384 ms apart and three quarters of 460 ms together: 96 + 345 = 441 ms
    assert between_states(0.25, together=460.0, apart=384.0) == pytest.approx(441.0)
    assert between_states(0.0, 460.0, 384.0) == 460.0 and between_states(1.0, 460.0, 384.0) == 384.0


def test_together_starts_where_the_policy_did_and_apart_at_the_schedules_shifts():
    schedule = compute_schedule([JobTiming("a", 400, 100), JobTiming("b", 800, 100)])
    own = {"a": 0.0, "b": 0.0}
    assert state_start("together", schedule, own) == own
    assert state_start("apart", schedule, own) == dict(schedule.shifts_ms) != own
    with pytest.raises(ValueError, match="state 'sorted': expected one of together, apart"):
        state_start("sorted", schedule, own)
