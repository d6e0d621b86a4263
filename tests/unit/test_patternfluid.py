"""The fluid model of pattern jobs on cases worked by hand, and against the one-burst model."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.theory import fluid, profiles
from controller.theory.arcs import Pattern, separating_shifts
from controller.theory.fluidjob import FluidJob
from controller.theory.patternfluid import (
    PatternFluidJob,
    PatternWindows,
    pattern_schedule_record,
    predict_pattern_policy,
    simulate_patterns,
)
from controller.theory.phases import JobPattern, Phase
from controller.theory.schedule import JobTiming, compute_schedule
from controller.theory.unsimulated import Unsimulated

TWO_ARCS = ((0.0, 2.0), (6.0, 2.0))  # busy {0, 1, 6, 7} of 12


def _means(out):
    return {name: r.mean_iteration_ms for name, r in out.items()}


@pytest.mark.parametrize("periods", [(300, 100, 600, 150), (401, 120, 600, 150), (100, 30, 150, 40)])
@pytest.mark.parametrize("policy", ["none", "shift", "gate", "random", "priority", "mltcp"])
def test_a_one_phase_job_is_the_one_burst_models_job(periods, policy):
    t1, c1, t2, c2 = periods
    schedule = compute_schedule([JobTiming("a", t1, c1), JobTiming("b", t2, c2)], 1.0)
    burst = fluid.simulate_policy(schedule, policy, [FluidJob("a", t1, c1), FluidJob("b", t2, c2)], seed=3)
    pattern = predict_pattern_policy(policy, [PatternFluidJob.rectangle("a", t1, c1),
                                              PatternFluidJob.rectangle("b", t2, c2)],
                                     [Pattern(t1, ((0, c1),)), Pattern(t2, ((0, c2),))], schedule, seed=3)
    assert pattern.offsets_ms == burst.offsets_ms
    for name in "ab":
        assert pattern.jobs[name].mean_iteration_ms == pytest.approx(burst.jobs[name].mean_iteration_ms, rel=1e-12)
    assert pattern.overlap_share == pytest.approx(burst.overlap_share, abs=1e-12)


def test_alone_every_iteration_takes_its_period():
    job = PatternFluidJob("a", 12.0, TWO_ARCS)
    out = simulate_patterns([job], {"a": 0.0}, horizon_ms=120)
    assert out["a"].mean_iteration_ms == pytest.approx(12.0)


def test_patterns_that_interleave_exactly_never_stretch():
    # the two-job example (docs/theory-rule.md, "Pattern jobs"): busy {0, 1, 6, 7} of 12 and {2, 3, 8, 9, 14, 15} of 18 never meet at shift 0
    a = PatternFluidJob("a", 12.0, TWO_ARCS)
    b = PatternFluidJob("b", 18.0, ((2.0, 2.0), (8.0, 2.0), (14.0, 2.0)))
    stats = {}
    out = simulate_patterns([a, b], {"a": 0.0, "b": 0.0}, stats=stats)
    assert _means(out) == pytest.approx({"a": 12.0, "b": 18.0})
    assert stats["overlap_share"] == 0.0


def test_twins_in_step_share_every_phase_and_stretch_as_worked_by_hand():
    # both at 0: each phase takes 4 ms at half the link, the second ends at 6 + 4 = 10 instead of 8; the
    # 4 ms after it wait for it: 14 ms an iteration, for ever (they stay in step)
    jobs = [PatternFluidJob(n, 12.0, TWO_ARCS) for n in "ab"]
    out = simulate_patterns(jobs, {"a": 0.0, "b": 0.0})
    assert _means(out) == pytest.approx({"a": 14.0, "b": 14.0})


def test_the_shift_the_projection_finds_keeps_the_twins_apart():
    jobs = [PatternFluidJob(n, 12.0, TWO_ARCS) for n in "ab"]
    grid = [Pattern(12, ((0, 2), (6, 2)))] * 2
    schedule = pattern_schedule_record("ab", grid, (0, 3), 1.0, True)
    for policy in ("shift", "gate"):
        out = predict_pattern_policy(policy, jobs, grid, schedule)
        assert _means(out.jobs) == pytest.approx({"a": 12.0, "b": 12.0})
        assert out.overlap_share == 0.0
    assert _means(predict_pattern_policy("none", jobs, grid, schedule).jobs) == pytest.approx({"a": 14.0, "b": 14.0})


def test_a_pattern_no_shift_separates_stretches():
    # busy {0, 2, 4} of 12 against {0, 1} of 18: 5 busy quanta of the gcd's 6, yet every shift collides
    a = PatternFluidJob("a", 12.0, ((0.0, 1.0), (2.0, 1.0), (4.0, 1.0)))
    b = PatternFluidJob("b", 18.0, ((0.0, 2.0),))
    for shift in range(6):
        out = simulate_patterns([a, b], {"a": 0.0, "b": float(shift)})
        assert max(out["a"].mean_iteration_ms / 12.0, out["b"].mean_iteration_ms / 18.0) > 1.0


def test_gate_holds_a_phase_to_its_windows_worked_by_hand():
    # b is gated to [0, 2) and [6, 8) of 12; a (free, 4 ms at 0 then 8 ms of compute) meets it at 0.
    # 0-2: both at half: a sent 1, b 1; b's window closes. 2-5: a alone, ends at 5, next at 13.
    # 6-8: b's second phase joins its 1 ms left: 2 of 3 sent; 12-13: the last 1 ms, alone: b ends at 13;
    # its next iteration is ready at max(8, 13) + 4 = 17 and starts at its next origin, 24
    a = PatternFluidJob.rectangle("a", 12.0, 4.0)
    b = PatternFluidJob("b", 12.0, TWO_ARCS)
    trace = []
    simulate_patterns([a, b], {"a": 0.0, "b": 0.0}, {"b": PatternWindows(0.0, 12.0, ((0.0, 2.0), (6.0, 8.0)))},
                      horizon_ms=48, warmup_ms=0, trace=trace)
    assert trace[:3] == [("a", 0.0, 5.0), ("b", 0.0, 13.0), ("a", 13.0, 17.0)]
    assert [s for n, s, _ in trace if n == "b"][:2] == [0.0, 24.0]


def test_windows_find_their_edges_across_periods():
    w = PatternWindows(5.0, 12.0, ((0.0, 2.0), (6.0, 8.0)))
    assert w.end_of_current(5.0) == 7.0 and w.end_of_current(12.0) == 13.0 and w.end_of_current(8.0) is None
    assert w.next_start(8.0) == 11.0 and w.next_start(13.0) == 17.0 and w.next_origin(6.0) == 17.0
    assert w.next_origin(17.0) == 17.0


def test_a_profiles_optimizer_waits_for_the_last_bucket_only():
    pattern = profiles.profile_pattern("resnet50", 4)
    job = PatternFluidJob.from_pattern("r", pattern, 10_000.0)
    assert job.wait_tail_ms == pattern.tail_ms > 0
    out = simulate_patterns([job], {"r": 0.0})
    assert out["r"].mean_iteration_ms == pytest.approx(pattern.iteration_ms)


def test_phases_that_cannot_end_within_the_iteration_are_refused():
    with pytest.raises(ValueError, match="past"):
        PatternFluidJob.from_pattern("x", JobPattern(10.0, (Phase(0.0, 10**6),), 2, tail_ms=5.0), 1000.0)


def test_a_policy_that_changes_the_timings_is_unsimulated():
    jobs = [PatternFluidJob(n, 100.0, TWO_ARCS) for n in "ab"]
    grid = [Pattern(100, ((0, 2), (6, 2)))] * 2
    with pytest.raises(Unsimulated, match="timings"):  # guard lengthens each busy total by its guard band
        predict_pattern_policy("guard", jobs, grid, pattern_schedule_record("ab", grid, (0, 3), 1.0, True))


@st.composite
def grid_job(draw, name):
    """A job on 1 ms quanta: a period and disjoint busy arcs, each phase exactly its arc on the link."""
    period = draw(st.integers(4, 24))
    cuts = sorted(draw(st.sets(st.integers(0, period - 1), min_size=2, max_size=8)))
    arcs = [(a, max(1, (b - a) // 2)) for a, b in zip(cuts, cuts[1:], strict=False)]
    return PatternFluidJob(name, float(period), tuple((float(a), float(n)) for a, n in arcs)), \
        Pattern(period, tuple(arcs))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid_job("a"), grid_job("b"), st.integers(0, 10**6))
def test_the_model_stretches_exactly_where_the_projection_says(first, second, pick):
    # on the grid, the second job started s quanta later never meets the first iff s separates them on the
    # gcd circle (arcs); the model then runs both at their own periods, and else they meet within the lcm
    (a, pa), (b, pb) = first, second
    shifts = separating_shifts(pa, pb)
    lcm = math.lcm(pa.period_q, pb.period_q)
    s = shifts[pick % len(shifts)] if shifts else pick % pb.period_q
    stats = {}
    out = simulate_patterns([a, b], {"a": 0.0, "b": float(s)}, horizon_ms=lcm + 2 * max(pa.period_q, pb.period_q),
                            warmup_ms=0.0, stats=stats)
    if shifts:
        assert stats["overlap_share"] == 0.0
        assert _means(out) == pytest.approx({"a": a.period_ms, "b": b.period_ms}, rel=1e-12)
    else:
        assert stats["overlap_share"] > 0.0
