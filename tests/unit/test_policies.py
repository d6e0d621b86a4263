"""The policy registry: names, offsets, and adding a policy in one small class."""

import random

import pytest

from controller.theory import fluid, policies
from controller.theory.schedule import JobTiming, compute_schedule


def schedule():
    return compute_schedule([JobTiming("a", 400, 150), JobTiming("b", 800, 200)])


def test_the_four_policies_and_their_offsets():
    assert list(policies.POLICIES)[:4] == ["none", "shift", "gate", "random"]
    sched = schedule()
    rng = random.Random(3)
    assert policies.get_policy("none").initial_offsets_ms(sched, rng) == {"a": 0.0, "b": 0.0}
    # by hand: gcd(400, 800) = 400 >= 150 + 200, so b may start 150 to 400 - 200 ms after a
    # (mod 400); the optimiser takes the interval's lower end, c_a = 150
    assert policies.get_policy("shift").initial_offsets_ms(sched, rng) == {"a": 0.0, "b": 150.0}
    gate, shift = policies.get_policy("gate"), policies.get_policy("shift")
    assert gate.enforces_windows and all(gate.waits_for_window(k) for k in range(10))
    assert not shift.enforces_windows and not any(shift.waits_for_window(k) for k in range(10))
    assert not shift.realigns() and gate.realigns()
    offsets = policies.get_policy("random").initial_offsets_ms(sched, rng)
    assert all(0 <= offsets[j.name] < j.period_ms for j in sched.jobs)


def test_unknown_policy_suggests_the_nearest_name():
    with pytest.raises(policies.UnknownPolicy, match="did you mean 'gate'"):
        policies.get_policy("gatee")


def test_a_registered_policy_is_usable_by_name_in_the_fluid_model():
    @policies.register
    class HalfPeriod(policies.Policy):
        name = "test-half"

        def initial_offsets_ms(self, schedule, rng):
            return {j.name: j.period_ms / 2 for j in schedule.jobs}

    try:
        result = fluid.simulate_policy(schedule(), "test-half")
        assert result.offsets_ms == {"a": 200.0, "b": 400.0}
    finally:
        del policies.POLICIES["test-half"]


def test_guard_lengthens_each_burst_by_the_band_rounded_up_to_the_grid():
    guard = policies.get_policy("guard")
    grid = [JobTiming("a", 400, 150), JobTiming("b", 800, 200)]
    assert guard.scheduled_timings(grid, 10, policies.PolicyKnobs()) == [JobTiming("a", 400, 160),
                                                                         JobTiming("b", 800, 210)]
    # 10 ms on a 100-ms grid: one whole quantum
    assert guard.scheduled_timings(grid, 100, policies.PolicyKnobs(guard_ms=10)) == [JobTiming("a", 400, 250),
                                                                                   JobTiming("b", 800, 300)]
    with pytest.raises(ValueError, match="does not fit"):
        guard.scheduled_timings([JobTiming("a", 400, 390)], 10, policies.PolicyKnobs())
    # its schedule keeps the guarded windows apart: gcd 400 >= 160 + 210, b from 160 after a
    sched = policies.policy_schedule(guard, grid, 10)
    assert sched.feasible and [j.comm_ms for j in sched.jobs] == [160, 210] and sched.shifts_ms["b"] == 160
    assert guard.enforces_windows and guard.uses_schedule
    # the others see the grid timings unchanged
    assert policies.policy_schedule(policies.get_policy("shift"), grid, 10).jobs == tuple(grid)


def test_priority_puts_the_shortest_grid_burst_first_ties_in_scenario_order():
    sched = compute_schedule([JobTiming("a", 400, 150), JobTiming("b", 800, 100), JobTiming("c", 800, 150)])
    prio = policies.get_policy("priority")
    assert prio.priority_order(sched) == ["b", "a", "c"]
    assert prio.sharing == "priority" and not prio.realigns()
    assert prio.initial_offsets_ms(sched, random.Random(0)) == {"a": 0.0, "b": 0.0, "c": 0.0}
    mltcp = policies.get_policy("mltcp")
    assert mltcp.sharing == "mltcp" and not mltcp.realigns()
    assert policies.get_policy("shift").sharing == "fair"
    assert policies.DEFAULT_POLICIES == ("none", "shift", "gate", "random")


def test_a_policy_that_leaves_sharing_to_tcp_takes_the_sharing_asked_for_and_the_others_keep_theirs():
    for name in ("none", "shift", "gate", "align"):
        assert policies.get_policy(name).link_sharing() == "fair"
        assert policies.get_policy(name).link_sharing("leader") == "leader"
    assert policies.get_policy("priority").link_sharing("leader") == "priority"
    assert policies.get_policy("mltcp").link_sharing("leader") == "mltcp"
    assert set(policies.TCP_SHARING) <= set(policies.SHARING)
