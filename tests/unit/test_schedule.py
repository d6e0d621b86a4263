"""The schedule maths against brute force (walking every slot of the hyper-period)."""

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.theory.schedule import (
    BeyondExactMethod,
    JobTiming,
    _Problem,
    compute_schedule,
    hyperperiod_ms,
    overlap_ms,
    quantize_comm_ms,
    quantize_period_ms,
    separable,
    separating_interval,
)


def brute_overlap(periods, comms, shifts):
    """Pairwise busy-slot collisions over the hyper-period, slot by slot."""
    total = 0
    for slot in range(math.lcm(*periods)):
        busy = sum(1 for t, c, s in zip(periods, comms, shifts, strict=True) if (slot - s) % t < c)
        total += busy * (busy - 1) // 2
    return total


def brute_optimum(periods, comms):
    return min(
        brute_overlap(periods, comms, (0, *rest))
        for rest in itertools.product(*(range(t) for t in periods[1:]))
    )


@st.composite
def small_jobs(draw, min_jobs=2, max_jobs=4, max_period=9):
    n = draw(st.integers(min_jobs, max_jobs))
    periods = [draw(st.integers(2, max_period)) for _ in range(n)]
    comms = [draw(st.integers(1, t - 1)) for t in periods]
    return periods, comms


def as_jobs(periods, comms, quantum_ms=1.0):
    return [JobTiming(f"j{i}", t * quantum_ms, c * quantum_ms) for i, (t, c) in enumerate(zip(periods, comms, strict=True))]


@settings(max_examples=150, deadline=None)
@given(small_jobs(2, 2, 14))
def test_two_job_criterion_and_interval_match_brute_force(inst):
    (t1, t2), (c1, c2) = inst
    g = math.gcd(t1, t2)
    free_shifts = [d for d in range(t2) if brute_overlap([t1, t2], [c1, c2], [0, d]) == 0]
    assert separable(t1, c1, t2, c2) == bool(free_shifts)
    interval = separating_interval(t1, c1, t2, c2)
    expected = sorted({d % g for d in free_shifts})
    assert (list(range(interval[0], interval[1] + 1)) if interval else []) == expected
    # only the residue modulo the gcd matters
    for d in range(t2):
        assert (d in free_shifts) == (d % g in expected)


@settings(max_examples=100, deadline=None)
@given(small_jobs(2, 4, 8), st.data())
def test_overlap_of_given_shifts_matches_brute_force(inst, data):
    periods, comms = inst
    shifts = [data.draw(st.integers(0, t - 1)) for t in periods]
    jobs = as_jobs(periods, comms, 2.0)
    got = overlap_ms(jobs, {j.name: s * 2.0 for j, s in zip(jobs, shifts, strict=True)}, 2.0)
    assert got == 2.0 * brute_overlap(periods, comms, shifts)


@settings(max_examples=80, deadline=None)
@given(small_jobs(2, 4, 8))
def test_exact_optimum_matches_brute_force(inst):
    periods, comms = inst
    jobs = as_jobs(periods, comms)
    sched = compute_schedule(jobs, 1.0, method="exact")
    assert sched.method == "exact" and sched.gap is None
    assert sched.overlap_ms == brute_optimum(periods, comms)
    assert sched.feasible == (sched.overlap_ms == 0)
    # the returned shifts achieve the stated overlap, and lie in [0, period)
    shifts = [int(sched.shifts_ms[j.name]) for j in jobs]
    assert brute_overlap(periods, comms, shifts) == sched.overlap_ms
    assert all(0 <= s < t for s, t in zip(shifts, periods, strict=True))
    assert sched.hyperperiod_ms == math.lcm(*periods)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 5000), st.sampled_from([0.1, 0.5, 1.0, 2.5, 10.0, 50.0]))
def test_rounding_to_the_quantum(value_ms, quantum_ms):
    period = quantize_period_ms(value_ms, quantum_ms)
    k = round(period / quantum_ms)
    assert k >= 1 and math.isclose(period, k * quantum_ms)
    if value_ms >= quantum_ms / 2:
        assert abs(period - value_ms) <= quantum_ms / 2 + 1e-9
    comm = quantize_comm_ms(value_ms, quantum_ms)
    m = round(comm / quantum_ms)
    assert m >= 1 and math.isclose(comm, m * quantum_ms)
    assert comm >= value_ms - 1e-9 * value_ms and comm < value_ms + quantum_ms


def test_pairwise_condition_and_utilisation_are_not_sufficient():
    # docs/design.md's example (T = 10, c = 4) passes every pair but not utilisation (1.2);
    # T = 2, 4, 6 with c = 1 passes both (utilisation 0.92) and still cannot be separated.
    assert separable(10, 4, 10, 4) and not compute_schedule(as_jobs([10] * 3, [4] * 3)).feasible
    periods, comms = [2, 4, 6], [1, 1, 1]
    assert all(separable(periods[i], 1, periods[j], 1) for i, j in itertools.combinations(range(3), 2))
    assert sum(c / t for c, t in zip(comms, periods, strict=True)) <= 1
    assert not compute_schedule(as_jobs(periods, comms)).feasible
    assert brute_optimum(periods, comms) > 0


def test_feasible_shifts_separate_exactly_and_lcm_explodes():
    sched = compute_schedule(as_jobs([300, 450, 900], [60, 80, 100]))
    assert sched.feasible and sched.overlap_ms == 0
    assert brute_overlap([300, 450, 900], [60, 80, 100], [int(sched.shifts_ms[f"j{i}"]) for i in range(3)]) == 0
    assert hyperperiod_ms([101, 103], 1.0) == 10403


def test_refuses_beyond_the_exact_method_and_offers_the_heuristic():
    jobs = as_jobs([11, 13, 17, 19, 23, 29, 31], [3] * 7)
    with pytest.raises(BeyondExactMethod, match="heuristic"):
        compute_schedule(jobs, method="exact")
    sched = compute_schedule(jobs)  # auto: falls back, states its gap
    assert sched.method == "heuristic" and sched.gap is not None and 0 <= sched.gap <= 1
    assert sched.lower_bound_ms <= sched.overlap_ms


def test_node_budget_refusal_instead_of_hanging():
    jobs = as_jobs([550, 1800, 450, 1900], [56, 264, 61, 140])
    with pytest.raises(BeyondExactMethod, match="heuristic"):
        compute_schedule(jobs, method="exact", max_nodes=1)
    exact = compute_schedule(jobs, method="exact")
    fallback = compute_schedule(jobs, max_nodes=1)
    assert fallback.method == "heuristic" and fallback.overlap_ms >= exact.overlap_ms
    assert fallback.lower_bound_ms <= exact.overlap_ms


# ---------------------------------------------------------------- exact integer costs
def random_instance(rng, n, max_period):
    periods = [rng.randint(2, max_period) for _ in range(n)]
    return periods, [rng.randint(1, t - 1) for t in periods]


def inert_quanta(prob):
    """Overlap per hyper-period of the pairs whose cost does not depend on the shifts."""
    h = math.lcm(*prob.periods)
    return sum(int(t[0]) * (h // math.lcm(prob.periods[i], prob.periods[j]))
               for (i, j), t in prob.tables.items() if (i, j) not in prob.pair_min)


@pytest.mark.parametrize("seed", range(40))
def test_integer_costs_equal_brute_force_exactly(seed):
    rng = random.Random(seed)
    periods, comms = random_instance(rng, rng.randint(3, 4), 9)
    prob = _Problem(periods, comms)
    h = math.lcm(*periods)
    assert h % prob.scale == 0
    for _ in range(10):
        shifts = [rng.randrange(t) for t in periods]
        cost = prob.cost(shifts)
        assert isinstance(cost, int)
        assert cost * (h // prob.scale) + inert_quanta(prob) == brute_overlap(periods, comms, shifts)
    jobs = [JobTiming(f"j{i}", t, c) for i, (t, c) in enumerate(zip(periods, comms, strict=True))]
    assert compute_schedule(jobs, 1.0, method="exact").overlap_ms == brute_optimum(periods, comms)


@pytest.mark.parametrize("seed", range(10))
def test_costs_are_ordered_as_the_exact_rationals(seed):
    """Three to four jobs with periods of thousands of quanta: the sum of the pairs' rates
    as Fractions orders every pair of shift vectors exactly as the integer costs do."""
    rng = random.Random(100 + seed)
    base = rng.randint(20, 200)
    periods = [base * rng.randint(5, 60) for _ in range(rng.randint(3, 4))]
    comms = [rng.randint(1, base) for _ in periods]
    prob = _Problem(periods, comms)
    samples = []
    for _ in range(200):
        shifts = [rng.randrange(t) for t in periods]
        rate = sum((Fraction(int(t[(shifts[j] - shifts[i]) % len(t)]), math.lcm(periods[i], periods[j]))
                    for (i, j), t in prob.tables.items() if (i, j) in prob.pair_min), Fraction(0))
        assert prob.cost(shifts) == rate * prob.scale
        samples.append(rate)
    assert len(set(samples)) > 1


def test_python_integers_when_a_total_could_overflow_int64():
    # gcd 2, otherwise distinct primes near 5e4: a pair's weight scale / lcm is about 5e4^4
    periods = [2 * q for q in (49999, 49993, 49991, 49957, 49943, 49939)]
    comms = [1] * 6
    prob = _Problem(periods, comms)
    assert prob.dtype is object and prob.scale > 2**63
    rng = random.Random(3)
    h = math.lcm(*periods)
    for _ in range(5):
        shifts = [rng.randrange(t) for t in periods]
        assert prob.cost(shifts) * (h // prob.scale) + inert_quanta(prob) == prob.overlap_quanta(shifts)
    array = prob.cost_array(1, [0, None, 1, None, None, None])
    assert array.dtype == object and all(type(x) is int for x in array)


def test_small_instances_stay_int64():
    prob = _Problem([300, 450, 900], [60, 80, 100])
    assert prob.dtype is np.int64 and prob.cost_array(1, [0, None, None]).dtype == np.int64


def test_costs_closer_than_any_float_tolerance_are_told_apart():
    """Three jobs whose best and second-best schedules differ by 41 quanta per hyper-period of
    4.2e13 quanta: 9.7e-13 per unit time, below a 1e-12 float tolerance, which took the worse
    schedule (369 911) for optimal. The optimum is checked over every residue (shifts matter mod 2)."""
    periods, comms = [45036, 83522, 45118], [3, 3, 3]
    prob = _Problem(periods, comms)
    assert prob.residue == [2, 2, 2]
    every = {s: prob.overlap_quanta([0, *s]) for s in itertools.product(range(2), range(2))}
    assert sorted(set(every.values()))[:2] == [369870, 369911]
    assert (369911 - 369870) / math.lcm(*periods) < 1e-12
    sched = compute_schedule(as_jobs(periods, comms), 1.0, method="exact")
    assert sched.overlap_ms == 369870 == min(every.values())
