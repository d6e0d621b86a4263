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
