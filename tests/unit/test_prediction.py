"""A run's prediction from solo figures, and its knife edges (scenarios/prediction.py)."""

import pytest

from controller.schedule import JobTiming, compute_schedule
from scenarios.prediction import (
    BUSY_START_MS,
    KNIFE_EDGE_SHARE,
    RunModel,
    busy_start_costs_ms,
    knife_edge,
    late_launch_bursts_ms,
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
    for job in ("a", "b"):
        assert ranges[job] == pytest.approx((predicted[job], predicted[job]))
        assert not knife_edge(predicted[job], ranges[job])


def test_a_gated_job_whose_burst_only_just_makes_its_next_window_is_on_a_knife_edge():
    # Both jobs: period 100, window 50; a's opens at 0, b's at 25. Launched 2 ms early with a
    # 5-ms lead, data reaches the gate 3 ms late: a's at 3, b's at 28, while a's is on the link.
    # Busy starts costing nothing: a alone 3-28 (25 of 30 ms), half speed to 38; b (5 ms by 38)
    # alone to 63, ready again 68.5 later at 131.5, within its next window's 4-ms grace
    # (128 + 4): b makes every window. Costing 5 or 10 ms more, b ends 5 or 10 ms later and
    # misses every next window by 3.5 ms or more: every other window.
    schedule = compute_schedule([JobTiming("a", 100, 50), JobTiming("b", 100, 50)])
    model = _model(schedule, {"a": _solo(90, 30), "b": _solo(98.5, 30)})
    offsets = {"a": 0.0, "b": 25.0}
    predicted, ranges = model.predict_with_range("gate", offsets, iterations=12)
    assert predicted == model.predict("gate", offsets, iterations=12)
    assert ranges["b"] == pytest.approx((100, 200), rel=0.01)
    assert predicted["b"] == pytest.approx(200, rel=0.01)  # the prediction takes 5 ms per busy start
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
    # range (0, 0 and 0 again), whatever the single figure says; at 5 ms each: every other window
    schedule = compute_schedule([JobTiming("a", 100, 50), JobTiming("b", 100, 50)])
    model = _model(schedule, {"a": _solo(90, 30), "b": _solo(98.5, 30)})
    offsets = {"a": 0.0, "b": 25.0}
    for measured_ms, expected_ms in ((0.0, 100), (5.0, 200)):
        predicted, ranges = model.predict_with_range("gate", offsets, iterations=12,
                                                     busy_start_ms={"a": 5.0, "b": 5.0},
                                                     busy_start_samples_ms={"b": (measured_ms,) * 3})
        assert predicted["b"] == pytest.approx(expected_ms, rel=0.01)
    assert ranges["b"] == pytest.approx((100, 200), rel=0.01)  # 0 x, 1 x and 2 x the 5-ms draws


def test_a_busy_start_cost_is_the_measured_one_else_the_default():
    costs = busy_start_costs_ms({"a": 9.5, "b": None, "c": -1.2}, ["a", "b", "c", "d"])
    assert costs == {"a": 9.5, "b": BUSY_START_MS, "c": 0.0, "d": BUSY_START_MS}


def test_late_launches_only_where_no_two_jobs_windows_ever_meet():
    solo = {"alpha": {"comm_ms": 68.0}, "beta": {"comm_ms": 104.0}}
    separable = compute_schedule([JobTiming("alpha", 300, 100), JobTiming("beta", 600, 150)], 1)
    coprime = compute_schedule([JobTiming("alpha", 401, 150), JobTiming("beta", 600, 200)], 1)
    assert separable.feasible and not coprime.feasible
    assert late_launch_bursts_ms(separable, solo) == {"alpha": 68.0, "beta": 104.0}
    assert late_launch_bursts_ms(coprime, solo) == {}
