"""The fluid model on cases computed by hand."""

import math
import random
from fractions import Fraction

import pytest

from controller.theory import policies
from controller.theory.fabricshare import JobLinks
from controller.theory.fluid import (
    MIN_HORIZON_ITERATIONS,
    FluidJob,
    FluidWindow,
    compare_policies,
    default_horizon_ms,
    mean_iterations,
    policy_windows,
    simulate,
    simulate_policy,
)
from controller.theory.policies import get_policy
from controller.theory.schedule import JobTiming, compute_schedule


def test_two_equal_jobs_colliding_every_iteration_stretch_each_burst_to_twice():
    jobs = [FluidJob("a", 500, 200), FluidJob("b", 500, 200)]
    out = simulate(jobs, {"a": 0.0, "b": 0.0}, iterations=10)
    # both bursts share the link from start to end: 2 × 200 ms, compute 300 ms
    for r in out.values():
        assert r.mean_iteration_ms == pytest.approx(300 + 2 * 200)


def test_bursts_that_meet_share_the_link_not_their_solo_rate():
    # alone, each burst reaches 80 % of the link (link_headroom 1.25); together they fill it:
    # each runs at 62.5 % of its solo speed, so 200 ms of solo burst takes 320 ms, not 400
    jobs = [FluidJob("a", 500, 200, link_headroom=1.25), FluidJob("b", 500, 200, link_headroom=1.25)]
    out = simulate(jobs, {"a": 0.0, "b": 0.0}, iterations=10)
    assert {k: v.mean_iteration_ms for k, v in out.items()} == pytest.approx({"a": 620, "b": 620})
    # alone, the headroom changes nothing: it cannot go faster than it did alone
    alone = simulate([FluidJob("a", 500, 200, link_headroom=1.25)], {"a": 0.0}, iterations=5)
    assert alone["a"].mean_iteration_ms == pytest.approx(500)
    with pytest.raises(ValueError, match="link_headroom"):
        simulate([FluidJob("a", 500, 200, link_headroom=0.9)], {"a": 0.0})


def test_separated_jobs_keep_their_solo_periods():
    jobs = [FluidJob("a", 400, 150), FluidJob("b", 800, 200)]
    out = simulate(jobs, {"a": 0.0, "b": 150.0}, iterations=10)
    assert out["a"].mean_iteration_ms == pytest.approx(400)
    assert out["b"].mean_iteration_ms == pytest.approx(800)
    assert out["a"].phase_error_ms == 0 and out["b"].phase_error_ms == 0


def test_half_overlap_hand_computed():
    # a alone 0-100 (100 of 200 done), shared 100-300 at half rate -> a ends at 300;
    # b shared 100-300 (100 done), alone 300-400 -> ends at 400. Both compute 800 ms, so the
    # next bursts start at 1100 and 1200: the same 100 ms offset, so every period is 1100 ms.
    jobs = [FluidJob("a", 1000, 200), FluidJob("b", 1000, 200)]
    out = simulate(jobs, {"a": 0.0, "b": 100.0}, iterations=1, warmup=0)
    # the second bursts (1100 and 1200) repeat the first pattern 1100 ms later: ends 300 -> 1400
    # and 400 -> 1500
    assert out["a"].mean_iteration_ms == pytest.approx(1100)
    assert out["b"].mean_iteration_ms == pytest.approx(1100)


def test_gate_realigns_every_iteration_while_a_static_shift_drifts():
    # infeasible pair (gcd 1): the optimal static shift still collides, bursts stretch,
    # and free-running jobs leave their planned phase; the gate keeps every burst on a window start.
    sched = compute_schedule([JobTiming("a", 401, 150), JobTiming("b", 600, 200)])
    assert not sched.feasible
    res = compare_policies(sched, ("none", "shift", "gate"))
    assert any(abs(j.phase_error_ms) > 1 for j in res["shift"].jobs.values())
    assert all(j.phase_error_ms == 0 for j in res["gate"].jobs.values())


def test_gate_on_a_feasible_schedule_gives_solo_periods():
    sched = compute_schedule([JobTiming("a", 300, 100), JobTiming("b", 600, 150), JobTiming("c", 900, 40)])
    assert sched.feasible
    res = compare_policies(sched, ("none", "shift", "gate"))
    for policy in ("shift", "gate"):
        for j in sched.jobs:
            assert res[policy].jobs[j.name].mean_iteration_ms == pytest.approx(j.period_ms)


def test_gated_burst_pauses_outside_its_window():
    # one job, window shorter than the burst (measured comm longer than planned):
    # 100 ms in window [0, 80), pause until 1000, finish 20 ms later.
    out = simulate([FluidJob("a", 1000, 100)], {"a": 0.0}, {"a": FluidWindow(0, 1000, 80)}, iterations=2, warmup=0)
    assert out["a"].mean_iteration_ms == pytest.approx(2000)


def test_a_held_bursts_queue_drains_into_the_next_window():
    # a and b share the window [0, 100) and need 100 ms each: at 1/2 each, their queues on
    # the link fill (at 1/2 per ms) to 20 ms by t = 40. When the window closes they still
    # hold 20 ms each past the gate, which drains at 1/3 each (c's window has opened): c
    # gets a third of the link until 160, ends at 210 instead of 170, is ready at 440,
    # after its next window opened (400), and waits for the one after (700).
    jobs = [FluidJob("a", 300, 100), FluidJob("b", 300, 100), FluidJob("c", 300, 70)]
    offsets = {"a": 0.0, "b": 0.0, "c": 100.0}
    windows = {"a": FluidWindow(0, 300, 100), "b": FluidWindow(0, 300, 100), "c": FluidWindow(100, 300, 100)}
    stop_dead = simulate(jobs, offsets, windows, iterations=6, warmup=0)
    drained = simulate(jobs, offsets, windows, iterations=6, warmup=0, queue_ms=20)
    assert {k: v.mean_iteration_ms for k, v in stop_dead.items()} == pytest.approx({"a": 600, "b": 600, "c": 300})
    assert {k: v.mean_iteration_ms for k, v in drained.items()} == pytest.approx({"a": 600, "b": 600, "c": 600})
    # a job alone in its window builds no queue on the link: nothing changes
    alone = [FluidJob("a", 1000, 100)]
    for q in (0, 20):
        out = simulate(alone, {"a": 0.0}, {"a": FluidWindow(0, 1000, 80)}, iterations=2, warmup=0, queue_ms=q)
        assert out["a"].mean_iteration_ms == pytest.approx(2000)


def test_a_gated_burst_that_only_just_fits_fits_in_some_iterations_and_not_in_others():
    # window [0, 100) every 300 ms, compute 220 ms. An 80 ms burst ends at 80 and its job is
    # ready at 300, on time for the next window; a 120 ms one pauses at 100, ends 20 ms into
    # the next window, is ready 240 ms after it and waits for the one after: it costs 600 ms.
    # Half of each: 300 × 1.5 = 450 ms per iteration. One fixed 100 ms burst says 300 (all fit).
    window = {"a": FluidWindow(0, 300, 100)}
    fixed = simulate([FluidJob("a", 300, 100)], {"a": 0.0}, window, iterations=40)
    assert fixed["a"].mean_iteration_ms == pytest.approx(300)
    drawn = mean_iterations([FluidJob("a", 300, 80, comm_samples_ms=(80.0, 120.0))], {"a": 0.0}, draws=16,
                            windows=window, iterations=40)
    assert 450 - 30 < drawn["a"] < 450 + 30  # 3 sd of the share of long bursts among 656 draws: 0.06 × 300
    # every draw the same length: exactly the fixed-length model, in one run or many
    same = mean_iterations([FluidJob("a", 300, 100, comm_samples_ms=(100.0,))], {"a": 0.0}, draws=4,
                           windows=window, iterations=40)
    assert same["a"] == pytest.approx(300)
    # without measured bursts, or without an rng, bursts are comm_ms long
    assert FluidJob("a", 300, 80).draw(random.Random(1)) == (80, 0.0, 0.0)
    assert FluidJob("a", 300, 80, comm_samples_ms=(120.0,)).draw(None) == (80, 0.0, 0.0)
    with pytest.raises(ValueError, match="burst sample"):
        simulate([FluidJob("a", 300, 80, comm_samples_ms=(300.0,))], {"a": 0.0})


def test_measured_solo_figures_can_be_fed_in():
    # planned on the grid at 500 ms, measured 0.4 ms longer: the free-running shifted job slides
    # into its neighbour's bursts and stretches; the gate makes it miss each window by 0.4 ms and
    # wait for the next one (1000 ms), but keeps it on the window grid
    sched = compute_schedule([JobTiming("a", 500, 200), JobTiming("b", 1000, 250)])
    assert sched.feasible
    measured = [FluidJob("a", 500.4, 200), FluidJob("b", 1000, 250)]
    res = compare_policies(sched, ("none", "shift", "gate"), jobs=measured, iterations=60)
    assert res["shift"].jobs["a"].mean_iteration_ms > 500.4 + 1
    assert res["gate"].jobs["a"].mean_iteration_ms == pytest.approx(1000)
    assert res["gate"].jobs["b"].mean_iteration_ms == pytest.approx(1000)
    assert all(j.phase_error_ms == 0 for j in res["gate"].jobs.values())


def test_a_burst_ready_within_the_grace_takes_its_window_late():
    # window [0, 100) every 300 ms, 80 ms bursts, compute 225 ms: each burst ends at 80 and
    # its job is ready at 305, 5 ms after the next window opened. Without grace it waits
    # for the one after (600 ms per iteration); with 8 ms of grace (the driver's launch
    # lead and tolerance) it goes at 305, ends at 385, is ready at 610: 10 ms late, past
    # the grace, so it waits for 900. Iterations alternate 305 and 595 ms: 450 on average.
    job = [FluidJob("a", 305, 80)]
    strict = simulate(job, {"a": 0.0}, {"a": FluidWindow(0, 300, 100)}, iterations=6, warmup=0)
    lenient = simulate(job, {"a": 0.0}, {"a": FluidWindow(0, 300, 100, grace_ms=8)}, iterations=6, warmup=0)
    assert strict["a"].mean_iteration_ms == pytest.approx(600)
    assert lenient["a"].mean_iteration_ms == pytest.approx(450)
    # a late burst still ends with its window: 95 ms bursts, compute 225, 25 ms of grace.
    # Ends at 95, ready 20 ms late at 320: the window closes at 400 with 15 ms left, which
    # goes at 600 (ends 615); ready at 840, waits for 900, ends 995. (995 - 95) / 2 = 450.
    late = simulate([FluidJob("a", 320, 95)], {"a": 0.0}, {"a": FluidWindow(0, 300, 100, grace_ms=25)},
                    iterations=2, warmup=0)
    assert late["a"].mean_iteration_ms == pytest.approx(450)


def test_a_negative_grace_takes_a_burst_that_waited_and_skips_one_ready_just_before_a_window():
    # A job on standing connections launches after its window opens (its data follows at once):
    # a grace of -2 ms. Window [0, 100) every 300 ms, 80 ms bursts. Compute 219 ms: ready at 299,
    # 1 ms before the window, too late to launch into it: each burst waits for the one after
    # (600 ms per iteration). Compute 217: ready at 297, 3 ms before: every window (300 ms).
    window = {"a": FluidWindow(0, 300, 100, grace_ms=-2)}
    late = simulate([FluidJob("a", 299, 80)], {"a": 0.0}, window, iterations=6, warmup=0)
    early = simulate([FluidJob("a", 297, 80)], {"a": 0.0}, window, iterations=6, warmup=0)
    assert late["a"].mean_iteration_ms == pytest.approx(600)
    assert early["a"].mean_iteration_ms == pytest.approx(300)
    assert window["a"].takes(300.0) and not window["a"].takes(300.5)
    assert window["a"].wait_start(297.0) == 300 and window["a"].wait_start(299.0) == 600


def test_policy_windows_open_late_by_the_data_and_keep_their_close():
    sched = compute_schedule([JobTiming("a", 300, 100), JobTiming("b", 600, 150)])
    offsets = {"a": 0.0, "b": 100.0}
    windows = policy_windows(get_policy("gate"), sched, offsets, late_ms={"a": 3.0, "b": 500.0},
                             grace_ms={"a": 8.0})
    assert windows["a"] == FluidWindow(3.0, 300, 97.0, 8.0)
    assert windows["b"] == FluidWindow(175.0, 600, 75.0, 0.0)  # late at most half the window
    assert policy_windows(get_policy("none"), sched, offsets) is None


def test_a_burst_that_starts_while_another_is_on_the_link_sends_busy_start_ms_later():
    # a bursts at 0 on an idle link; b at 20, while a's burst is on it: b's data waits 10 ms, taking
    # no share meanwhile. a alone to 30 (10 left), half speed with b from 30: a ends at 50; b has 30
    # left, alone: ends at 80. a's next burst at 110 on an idle link; b's at 140, while a's is on it:
    # b waits to 150, when a ends; b alone ends at 190. a: 50 -> 150, b: 80 -> 190.
    jobs = [FluidJob("a", 100, 40, busy_start_ms=10), FluidJob("b", 100, 40, busy_start_ms=10)]
    busy = simulate(jobs, {"a": 0.0, "b": 20.0}, iterations=1, warmup=0)
    assert busy["a"].mean_iteration_ms == pytest.approx(100)
    assert busy["b"].mean_iteration_ms == pytest.approx(110)
    # without it: a ends at 60 and 180 (b joins its second burst at 140 with 20 left)
    free = simulate([FluidJob("a", 100, 40), FluidJob("b", 100, 40)], {"a": 0.0, "b": 20.0},
                    iterations=1, warmup=0)
    assert free["a"].mean_iteration_ms == pytest.approx(120)
    with pytest.raises(ValueError, match="busy_start_ms"):
        simulate([FluidJob("a", 100, 40, busy_start_ms=-1)], {"a": 0.0})


def first_end_ms(jobs, offsets, job: str) -> float:
    trace = []
    simulate(jobs, offsets, iterations=1, warmup=0, trace=trace)
    return next(end for name, _, _, end in trace if name == job)


def test_a_start_is_busy_when_another_jobs_data_was_going_at_its_launch_or_it_launched_alongside():
    # a's data 0-40 ms. b (15-ms lead) launches at 35 while a's data goes, its own data at 50 on an
    # idle link: a busy start all the same, 40 + 10 ms alone: ends at 100 (judged at its first data,
    # 90). Launched at 45 instead (data at 60), after a's data: quiet, ends at 100 (60 + 40).
    jobs = [FluidJob("a", 1000, 40, busy_start_ms=10), FluidJob("b", 1000, 40, busy_start_ms=10, lead_ms=15)]
    assert first_end_ms(jobs, {"a": 0.0, "b": 50.0}, "b") == pytest.approx(100.0)
    assert first_end_ms(jobs, {"a": 0.0, "b": 60.0}, "b") == pytest.approx(100.0)
    # a and b launch together at 0 onto an idle link, data at 5 and 8 (leads 5 and 8 ms): both start
    # busy, a held when b's launch shows up. a alone 5-8, both held to 18, half speed from 18: a
    # (37 left) ends at 92, b has sent 37 of 40 and ends alone at 95.
    jobs = [FluidJob("a", 1000, 40, busy_start_ms=10, lead_ms=5), FluidJob("b", 1000, 40, busy_start_ms=10, lead_ms=8)]
    assert first_end_ms(jobs, {"a": 5.0, "b": 8.0}, "a") == pytest.approx(92.0)
    assert first_end_ms(jobs, {"a": 5.0, "b": 8.0}, "b") == pytest.approx(95.0)
    # launched 11 ms apart (b's data at 19, a's still going): a quiet, b busy from a's data and
    # held to 29; a alone 5-29, then half speed
    assert first_end_ms(jobs, {"a": 5.0, "b": 19.0}, "a") == pytest.approx(5 + 24 + 2 * 16)
    with pytest.raises(ValueError, match="lead_ms"):
        simulate([FluidJob("a", 100, 40, lead_ms=-1)], {"a": 0.0})


def test_each_busy_start_draws_its_cost_from_the_measured_ones():
    # the case above with b's busy starts costing 10 ms every time, drawn from (10,): the same
    fixed = [FluidJob("a", 100, 40, busy_start_ms=10), FluidJob("b", 100, 40, busy_start_ms=10)]
    drawn = [FluidJob("a", 100, 40, busy_start_samples_ms=(10.0,)),
             FluidJob("b", 100, 40, busy_start_samples_ms=(10.0,))]
    offsets = {"a": 0.0, "b": 20.0}
    same = simulate(drawn, offsets, iterations=1, warmup=0, rng=random.Random(1))
    assert same["b"].mean_iteration_ms == pytest.approx(110)  # worked by hand in the test above
    assert simulate(fixed, offsets, iterations=1, warmup=0)["b"].mean_iteration_ms == pytest.approx(110)
    # b's first burst (40 ms, at 20 while a's is on the link) draws its cost from 0 and 30 ms: with 0
    # it shares the link from 20 (a ends at 60, b at 80); with 30 its data waits to 50, after a's end
    # at 40, and it ends at 90. Both happen
    mixed = [FluidJob("a", 1000, 40), FluidJob("b", 1000, 40, busy_start_samples_ms=(0.0, 30.0))]
    first_ends = set()
    for seed in range(8):
        trace = []
        simulate(mixed, offsets, iterations=1, warmup=0, rng=random.Random(seed), trace=trace)
        first_ends.add(round(next(end for job, _, _, end in trace if job == "b"), 6))
    assert first_ends == {80.0, 90.0}
    # without an rng nothing is drawn: busy_start_ms (0) holds
    trace = []
    simulate(mixed, offsets, iterations=1, warmup=0, trace=trace)
    assert next(end for job, _, _, end in trace if job == "b") == pytest.approx(80.0)
    with pytest.raises(ValueError, match="busy_start_samples_ms"):
        simulate([FluidJob("a", 100, 40, busy_start_samples_ms=(-1.0,))], {"a": 0.0})


def test_a_burst_that_starts_on_an_idle_link_takes_its_solo_length():
    # one job alone never meets another burst: busy_start_ms changes nothing
    out = simulate([FluidJob("a", 100, 40, busy_start_ms=25)], {"a": 0.0}, iterations=5)
    assert out["a"].mean_iteration_ms == pytest.approx(100)


def test_the_trace_lists_each_burst_ready_first_on_the_link_and_end():
    # a alone 0-100 ms (half its burst), then both at half speed until a ends at 300;
    # b has 100 of its 200 ms done then and ends alone at 400
    trace = []
    simulate([FluidJob("a", 1000, 200), FluidJob("b", 1000, 200)], {"a": 0.0, "b": 100.0},
             iterations=1, warmup=0, trace=trace)
    first = {job: (ready, went, end) for job, ready, went, end in trace[:2]}
    assert first == {"a": pytest.approx((0.0, 0.0, 300.0)), "b": pytest.approx((100.0, 100.0, 400.0))}
    # a gated burst ready before its window is on the link from the window's start
    trace = []
    simulate([FluidJob("a", 500, 100)], {"a": 0.0}, windows={"a": FluidWindow(50.0, 500, 150)},
             iterations=1, warmup=0, trace=trace)
    assert trace[0][0] == "a" and trace[0][1:] == pytest.approx((0.0, 50.0, 150.0))


def test_a_drawn_burst_brings_its_jobs_extra_time_after_it():
    # every burst is 100 ms on the link and its job then takes 20 ms longer than the median: 320 ms
    job = FluidJob("a", 300, 100, comm_samples_ms=(100.0, 100.0), after_samples_ms=(20.0, 20.0))
    assert job.draw(random.Random(0)) == (100.0, 20.0, 0.0)
    out = mean_iterations([job], {"a": 0.0}, draws=2, iterations=5)
    assert out["a"] == pytest.approx(320.0)
    # the draw pairs a link time with its own burst's extra time; unpaired lists add nothing
    pair = FluidJob("a", 300, 100, comm_samples_ms=(80.0, 120.0), after_samples_ms=(-10.0, 10.0))
    assert {pair.draw(random.Random(seed)) for seed in range(20)} == {(80.0, -10.0, 0.0), (120.0, 10.0, 0.0)}
    assert FluidJob("a", 300, 100, comm_samples_ms=(80.0,), after_samples_ms=(1.0, 2.0)).draw(random.Random(0)) == (80.0, 0.0, 0.0)
    assert job.draw(None) == (100, 0.0, 0.0)


def test_a_burst_beside_another_jobs_brings_a_busy_end_draw_of_its_kind():
    slow_end = FluidJob("a", 300, 100, busy_after_samples_ms=(("shared", (20.0,)), ("apart", (5.0,))))
    rng = random.Random(0)
    assert slow_end.busy_after_cost("shared", rng) == 20.0 and slow_end.busy_after_cost("apart", rng) == 5.0
    assert slow_end.busy_after_cost(None, rng) == 0.0 and slow_end.busy_after_cost("shared", None) == 0.0
    # alone, no burst meets another: 300 ms per iteration
    assert mean_iterations([slow_end], {"a": 0.0}, draws=2, iterations=5)["a"] == pytest.approx(300.0)

    def second_ready_ms(links=None):
        # b's bursts (1000/10) meet a's first one only: a's next burst is ready after its compute
        # (200 ms) and the busy end of the kind b is
        trace = []
        simulate([slow_end, FluidJob("b", 1000, 10)], {"a": 0.0, "b": 0.0}, iterations=1, warmup=0,
                 rng=random.Random(0), trace=trace, links=links)
        a_bursts = [(ready, end) for job, ready, _, end in trace if job == "a"]
        return a_bursts[1][0] - a_bursts[0][1]

    assert second_ready_ms() == pytest.approx(200.0 + 20.0)  # one link: b shares it
    apart = JobLinks({"a": {"up1": 1}, "b": {"up2": 1}}, {"up1": 1.0, "up2": 1.0})
    assert second_ready_ms(apart) == pytest.approx(200.0 + 5.0)
    with pytest.raises(ValueError, match="busy_after_samples_ms"):
        simulate([FluidJob("a", 300, 100, busy_after_samples_ms=(("apart", (-1.0,)),))], {"a": 0.0})


def test_a_shift_re_aligns_to_its_grid_window_after_every_realign_period():
    """True period 310 ms, windows every 300 (the grid), re-align every second. Bursts ready at 0,
    310, 620, 930; the one ready at 1240 (first after 1 s) waits for the window at 1500; then 1810,
    2120 (after 2 s) waits for 2400; 2710, 3020 (after 3 s) waits for 3300. Between, it runs free."""
    trace = []
    simulate([FluidJob("a", 310, 100)], {"a": 0.0}, {"a": FluidWindow(0, 300, 100)}, iterations=9, warmup=0,
             waits=lambda k: False, enforce=False, realign_ms=1000.0, trace=trace)
    assert [round(went) for _, _, went, _ in trace[:10]] == [0, 310, 620, 930, 1500, 1810, 2400, 2710, 3300, 3610]
    assert [round(ready) for _, ready, _, _ in trace[4:5]] == [1240]


def test_realign_s_reaches_the_model_only_for_a_schedule_using_policy_without_windows():
    sched = compute_schedule([JobTiming("a", 300, 100), JobTiming("b", 600, 200)], 100)
    true = [FluidJob("a", 310, 100), FluidJob("b", 600, 150)]
    free = simulate_policy(sched, "shift", true, iterations=30)
    knobs = policies.PolicyKnobs(realign_s=1.0)
    realigned = simulate_policy(sched, "shift", true, iterations=30, knobs=knobs)
    assert realigned.jobs["a"].mean_iteration_ms > free.jobs["a"].mean_iteration_ms  # it waits for windows
    for p in ("none", "gate"):  # none has no schedule to re-align to; gate waits every burst anyway
        assert simulate_policy(sched, p, true, iterations=30, knobs=knobs).jobs == \
            simulate_policy(sched, p, true, iterations=30).jobs


def test_strict_priority_lets_the_first_burst_go_and_the_other_follow():
    """Two jobs of 300 ms, bursts of 100, both ready at 0. Fair: each gets half, 200-ms bursts, 400-ms
    iterations (and the link shared half the time). Priority to a: a sends [0, 100), b [100, 200); a is
    ready at 300, b at 400: they never meet again, 300 each, nothing shared after the warm-up."""
    jobs = [FluidJob("a", 300, 100), FluidJob("b", 300, 100)]
    fair_stats, prio_stats = {}, {}
    fair = simulate(jobs, {"a": 0.0, "b": 0.0}, horizon_ms=12_000, stats=fair_stats)
    prio = simulate(jobs, {"a": 0.0, "b": 0.0}, horizon_ms=12_000, sharing="priority", priority=["a", "b"],
                    stats=prio_stats)
    assert {k: v.mean_iteration_ms for k, v in fair.items()} == pytest.approx({"a": 400, "b": 400})
    assert {k: v.mean_iteration_ms for k, v in prio.items()} == pytest.approx({"a": 300, "b": 300})
    assert fair_stats["overlap_share"] == pytest.approx(0.5) and prio_stats["overlap_share"] == 0.0


def test_link_shares_by_hand():
    jobs = [FluidJob("a", 300, 100), FluidJob("b", 300, 100)]
    # priority, each burst alone fills the link: the first takes it all
    assert policies.link_shares(jobs, [0, 1], "priority", [1, 0], [0, 0], [1, 1]) == {1: 1.0, 0: 0.0}
    # link 1.5 times a burst's rate: the first takes 2/3 of it, the second the last third = half its speed
    roomy = [FluidJob("a", 300, 100, 1.5), FluidJob("b", 300, 100, 1.5)]
    assert policies.link_shares(roomy, [0, 1], "priority", [0, 1], [0, 0], [1, 1]) == pytest.approx({0: 1.0, 1: 0.5})
    # mltcp: a half sent (weight 1.5), b not started (weight 1): 0.6 and 0.4 of the link
    assert policies.link_shares(jobs, [0, 1], "mltcp", [0, 1], [50, 0], [50, 100]) == pytest.approx({0: 0.6, 1: 0.4})
    # ... each capped at its solo rate: on a link twice a burst's rate both go at full speed
    wide = [FluidJob("a", 300, 100, 2.0), FluidJob("b", 300, 100, 2.0)]
    assert policies.link_shares(wide, [0, 1], "mltcp", [0, 1], [50, 0], [50, 100]) == pytest.approx({0: 1.0, 1: 1.0})
    assert policies.link_shares(jobs, [0, 1], "fair", [0, 1], [50, 0], [50, 100]) == {0: 0.5, 1: 0.5}
    # leader: the same rule at LEADER_GAIN (0.25): weights 1.125 and 1, 1.125 / 2.125 and 1 / 2.125
    assert policies.LEADER_GAIN == 0.25
    assert policies.link_shares(jobs, [0, 1], "leader", [0, 1], [50, 0], [50, 100]) == pytest.approx(
        {0: 1.125 / 2.125, 1: 1 / 2.125})


def test_mltcp_lets_the_burst_nearer_its_end_finish_first():
    """a (100 ms) starts at 0, b (100 ms) at 50. Fair: a alone to 50, then half each: a ends at 150, b
    alone to 200. MLTCP: a has sent half when b comes, so it gets more of the link and ends before 150;
    the link is never idle, so b still ends at 200 (200 ms of work from t = 0)."""
    jobs = [FluidJob("a", 1000, 100), FluidJob("b", 1000, 100)]
    fair, mltcp = [], []
    simulate(jobs, {"a": 0.0, "b": 50.0}, iterations=1, warmup=0, trace=fair)
    simulate(jobs, {"a": 0.0, "b": 50.0}, iterations=1, warmup=0, sharing="mltcp", trace=mltcp)
    ends = {(name, round(end, 6)) for name, _, _, end in fair if end < 1000}
    assert ends == {("a", 150), ("b", 200)}
    end = {name: e for name, _, _, e in mltcp if e < 1000}
    assert 100 < end["a"] < 145 and end["b"] == pytest.approx(200, abs=1e-6)


def test_leader_sharing_pushes_two_jobs_that_start_together_apart_and_fair_sharing_keeps_them():
    """a and b (400 ms, 100-ms bursts that fill the link) start 5 ms apart. Fair: both bursts end later
    by the same amount, so b starts 5 ms after a for ever, every burst 195 ms long (a 495-ms period).
    Leader (weights 1 + LEADER_GAIN x the share sent): a, ahead, ends first and b's lag grows every
    iteration until they no longer meet, each at its 400-ms period."""
    jobs = [FluidJob("a", 400, 100), FluidJob("b", 400, 100)]
    lags = {}
    for sharing in ("fair", "leader"):
        trace = []
        simulate(jobs, {"a": 0.0, "b": 5.0}, iterations=8, warmup=0, sharing=sharing, trace=trace)
        starts = {name: [s for n, _, s, _ in trace if n == name] for name in ("a", "b")}
        lags[sharing] = [b - a for a, b in zip(starts["a"], starts["b"], strict=False)]
    assert lags["fair"] == pytest.approx([5.0] * len(lags["fair"]))
    assert all(later > earlier for earlier, later in zip(lags["leader"], lags["leader"][1:], strict=False))
    fair_stats, leader_stats = {}, {}
    fair = simulate(jobs, {"a": 0.0, "b": 5.0}, horizon_ms=400_000, sharing="fair", stats=fair_stats)
    leader = simulate(jobs, {"a": 0.0, "b": 5.0}, horizon_ms=400_000, sharing="leader", stats=leader_stats)
    assert fair["a"].mean_iteration_ms == pytest.approx(495.0)
    assert leader["a"].mean_iteration_ms == pytest.approx(400.0, rel=0.01)
    assert leader_stats["overlap_share"] < 0.01 < fair_stats["overlap_share"]


def test_halving_the_mltcp_step_moves_predictions_by_less_than_half_a_percent():
    jobs = [FluidJob("a", 304, 100), FluidJob("b", 597, 150), FluidJob("c", 450, 120)]
    offsets = {"a": 0.0, "b": 30.0, "c": 70.0}
    coarse = simulate(jobs, offsets, horizon_ms=60_000, sharing="mltcp")
    fine = simulate(jobs, offsets, horizon_ms=60_000, sharing="mltcp", mltcp_step_ms=0.5)
    for name in coarse:
        assert fine[name].mean_iteration_ms == pytest.approx(coarse[name].mean_iteration_ms, rel=0.005)


def test_the_default_horizon_is_the_lcm_of_the_true_periods_in_microseconds():
    assert default_horizon_ms([FluidJob("a", 304, 100), FluidJob("b", 597, 150)]) == 304 * 597
    # 300.5 and 601 ms: lcm(300 500, 601 000) µs = 601 000 µs ... below 40 periods of 601 ms
    assert default_horizon_ms([FluidJob("a", 300.5, 100), FluidJob("b", 601, 150)]) == 40 * 601
    # 0.1 is no whole number of µs as a float: no lcm, the cap
    assert default_horizon_ms([FluidJob("a", 300.1, 100), FluidJob("b", 600, 150)]) == 400 * 600


def test_a_job_that_keeps_its_clock_is_moved_by_its_data_phase_only():
    # each burst: 100 ms on the link, 20 of them a late start, then 15 ms more after it than usual
    drifting = FluidJob("a", 300, 100, comm_samples_ms=(100.0,), after_samples_ms=(15.0,), late_samples_ms=(20.0,))
    assert drifting.draw(random.Random(0)) == (100.0, 15.0, 20.0)
    assert mean_iterations([drifting], {"a": 0.0}, draws=2, iterations=5)["a"] == pytest.approx(315.0)
    # keeping its clock, the late start and the longer end come off the computation: 300 - 20 = 280 ms
    kept = FluidJob("a", 300, 100, comm_samples_ms=(100.0,), after_samples_ms=(15.0,), late_samples_ms=(20.0,),
                    keeps_clock=True)
    assert mean_iterations([kept], {"a": 0.0}, draws=2, iterations=5)["a"] == pytest.approx(280.0)

    def gap_after_first_ms(job):
        # a busy start (b launched with it) costs 30 ms on the link; b's bursts meet a's first one only
        trace = []
        simulate([job, FluidJob("b", 1000, 10)], {"a": 0.0, "b": 0.0}, iterations=1, warmup=0, trace=trace)
        a_bursts = [(ready, end) for name, ready, _, end in trace if name == "a"]
        return a_bursts[1][0] - a_bursts[0][1]

    busy = {"busy_start_ms": 30.0}
    assert gap_after_first_ms(FluidJob("a", 300, 100, **busy)) == pytest.approx(200.0)
    assert gap_after_first_ms(FluidJob("a", 300, 100, keeps_clock=True, **busy)) == pytest.approx(170.0)


def test_one_count_per_job_averages_each_over_exactly_its_own_iterations():
    # a (100 ms) and b (1000 ms) never meet: a's bursts 0-10, 100-110, ...; b's 50-60, 1050-1060
    jobs = [FluidJob("a", 100, 10), FluidJob("b", 1000, 10)]
    offsets = {"a": 0.0, "b": 50.0}
    one = simulate(jobs, offsets, iterations=1, warmup=0)
    # one count for all: the simulation runs until b has two bursts (1060 ms), and a's mean takes all
    # of its 11 bursts by then
    assert one["a"].iterations == 10 and one["b"].iterations == 1
    per_job = simulate(jobs, offsets, iterations={"a": 3, "b": 1}, warmup=0)
    assert per_job["a"].iterations == 3 and per_job["b"].iterations == 1
    assert per_job["a"].mean_iteration_ms == pytest.approx(100)
    assert per_job["b"].mean_iteration_ms == pytest.approx(1000)
    with pytest.raises(ValueError, match="count >= 1 for every job"):
        simulate(jobs, offsets, iterations={"a": 3})


def test_a_per_job_count_covers_the_span_a_run_of_that_many_iterations_covers():
    # gated coprime periods: which windows meet moves slowly (alpha's 401-ms windows slip 3 ms a
    # 1 200 ms against beta's), so beta's mean depends on the span it is taken over. Each job's
    # mean is over its first `count` iterations, from its first burst's end, as a run measures it.
    jobs = [FluidJob("alpha", 385, 105), FluidJob("beta", 576, 142)]
    windows = {"alpha": FluidWindow(0.0, 401.0, 150.0), "beta": FluidWindow(0.0, 600.0, 200.0)}
    counts = {"alpha": 50, "beta": 25}
    trace = []
    out = simulate(jobs, {"alpha": 0.0, "beta": 0.0}, windows, iterations=counts, warmup=0, queue_ms=20.0,
                   trace=trace)
    for name, count in counts.items():
        ends = [end for job, _ready, _first, end in trace if job == name]
        assert out[name].iterations == count
        assert out[name].mean_iteration_ms == pytest.approx((ends[count] - ends[0]) / count)
    # one count for both (alpha's 50): beta's mean over twice the span sees other meetings
    longer = simulate(jobs, {"alpha": 0.0, "beta": 0.0}, windows, iterations=50, warmup=0, queue_ms=20.0)
    assert longer["beta"].iterations == 50
    assert abs(longer["beta"].mean_iteration_ms / out["beta"].mean_iteration_ms - 1) > 0.03


def test_default_horizon_of_whole_ms_periods_is_the_exact_rules():
    rng = random.Random(1)
    for _ in range(3000):
        periods = [float(rng.randint(1, 3000)) for _ in range(rng.randint(1, 5))]
        jobs = [FluidJob(f"j{i}", p, p / 4) for i, p in enumerate(periods)]
        lcm_ms = math.lcm(*(int(Fraction(p) * 1000) for p in periods)) / 1000
        want = min(max(lcm_ms, MIN_HORIZON_ITERATIONS * max(periods)), 100 * max(periods))
        assert default_horizon_ms(jobs, 100) == want, periods
    assert default_horizon_ms([FluidJob("a", 300.0004, 10.0)], 100) == 100 * 300.0004  # no whole µs: the cap
