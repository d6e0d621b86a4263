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


# ---------------------------------------------------------------- weighted pairs (jobs meeting on some links)


def brute_weighted_overlap(periods, comms, shifts, w):
    """Busy-slot collisions over the hyper-period, slot by slot, pair (i, j) counted w[i][j] times."""
    total, n = 0, len(periods)
    for slot in range(math.lcm(*periods)):
        busy = [(slot - s) % t < c for t, c, s in zip(periods, comms, shifts, strict=True)]
        total += sum(w[i][j] for i in range(n) for j in range(i + 1, n) if busy[i] and busy[j])
    return total


def brute_weighted_optimum(periods, comms, w):
    return min(brute_weighted_overlap(periods, comms, (0, *rest), w)
               for rest in itertools.product(*(range(t) for t in periods[1:])))


def pair_weights_of(w, names):
    return {frozenset((names[i], names[j])): w[i][j] for i in range(len(w)) for j in range(i + 1, len(w))}


CHAIN = [JobTiming("A", 400, 150), JobTiming("B", 400, 200), JobTiming("C", 400, 150)]


def test_the_chain_separates_when_a_and_c_never_meet():
    weights = {frozenset("AB"): 1, frozenset("BC"): 1}  # A-C left out: weight 0
    sched = compute_schedule(CHAIN, 1.0, pair_weights=weights)
    assert sched.feasible and sched.overlap_ms == 0 and sched.method == "exact"
    assert sched.pair_weights == weights
    assert overlap_ms(CHAIN, sched.shifts_ms, 1.0, weights) == 0
    assert overlap_ms(CHAIN, sched.shifts_ms, 1.0) > 0  # on one link, A and C would collide
    assert compute_schedule(CHAIN, 1.0, pair_weights={**weights, frozenset("AC"): 0}).feasible


def test_the_chain_cannot_separate_on_one_link():
    ones = {frozenset(p): 1 for p in ("AB", "BC", "AC")}
    assert not compute_schedule(CHAIN, 1.0, pair_weights=ones).feasible
    assert not compute_schedule(CHAIN, 1.0).feasible
    assert compute_schedule(CHAIN, 1.0, pair_weights=ones).overlap_ms == compute_schedule(CHAIN, 1.0).overlap_ms


def random_weighted(rng, n, max_period, periods_from=None):
    periods = [rng.choice(periods_from) if periods_from else rng.randint(2, max_period) for _ in range(n)]
    comms = [rng.randint(1, t - 1) for t in periods]
    w = [[0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            w[i][j] = w[j][i] = rng.randint(0, 2)
    return periods, comms, w


@pytest.mark.parametrize("seed", range(60))
def test_weighted_optimum_equals_brute_force(seed):
    rng = random.Random(500 + seed)
    periods, comms, w = random_weighted(rng, 3, 12)
    jobs = as_jobs(periods, comms)
    weights = pair_weights_of(w, [j.name for j in jobs])
    optimum = brute_weighted_optimum(periods, comms, w)
    for method in ("exact", "auto"):
        sched = compute_schedule(jobs, 1.0, method=method, pair_weights=weights)
        shifts = [round(sched.shifts_ms[j.name]) for j in jobs]
        assert sched.overlap_ms == optimum == brute_weighted_overlap(periods, comms, shifts, w)
        assert sched.feasible == (optimum == 0)
        assert sched.hyperperiod_ms == math.lcm(*periods)


@pytest.mark.parametrize("seed", range(80))
def test_identical_jobs_with_different_weights_are_not_interchanged(seed):
    """Same timing but different weights to the others: swapping them changes the cost, so the
    search must not order them as it orders identical jobs. The branch and bound starts from a
    poor incumbent (all at 0) so that its own pruning is what is tested."""
    from controller.theory.schedule import _exact

    rng = random.Random(seed)
    n = rng.choice([3, 4])
    periods, comms, w = random_weighted(rng, n, 12, periods_from=(4, 6, 8, 12))
    periods[1], comms[1] = periods[0], comms[0]
    if n == 4 and rng.random() < 0.5:
        periods[2], comms[2] = periods[0], comms[0]
    optimum = brute_weighted_optimum(periods, comms, w)
    prob = _Problem(periods, comms, w)
    assert prob.overlap_quanta(_exact(prob, [0] * n, 10**6)[0]) == optimum
    jobs = as_jobs(periods, comms)
    sched = compute_schedule(jobs, 1.0, method="exact", pair_weights=pair_weights_of(w, [j.name for j in jobs]))
    assert sched.overlap_ms == optimum


@pytest.mark.parametrize("seed", range(20))
def test_components_solved_apart_equal_the_joint_optimum(seed):
    """Two groups that never meet: the decomposed optimum equals one branch and bound over all
    five jobs (weight-0 pairs left out), and each component has a job at 0."""
    from controller.theory.schedule import _exact, _heuristic

    rng = random.Random(1300 + seed)
    periods, comms, w = random_weighted(rng, 5, 10)
    for i in range(5):
        for j in range(i + 1, 5):
            if (i < 3) != (j < 3):
                w[i][j] = w[j][i] = 0
            elif w[i][j] == 0:
                w[i][j] = w[j][i] = 1  # each group connected
    jobs = as_jobs(periods, comms)
    sched = compute_schedule(jobs, 1.0, method="exact", pair_weights=pair_weights_of(w, [j.name for j in jobs]))
    prob = _Problem(periods, comms, w)
    joint, _ = _exact(prob, _heuristic(prob, 0, 0), 10**6)
    assert sched.overlap_ms == prob.overlap_quanta(joint)
    shifts = [round(sched.shifts_ms[j.name]) for j in jobs]
    assert sched.overlap_ms == brute_weighted_overlap(periods, comms, shifts, w)
    assert 0 in shifts[:3] and 0 in shifts[3:]
    assert all(0 <= s < t for s, t in zip(shifts, periods, strict=True))


def test_the_exact_limit_applies_to_each_component():
    jobs = as_jobs([10] * 8, [3] * 8)
    with pytest.raises(BeyondExactMethod):
        compute_schedule(jobs, 1.0, method="exact")
    pairs = {frozenset((f"j{i}", f"j{i + 1}")): 1 for i in range(0, 8, 2)}
    sched = compute_schedule(jobs, 1.0, method="exact", pair_weights=pairs)
    assert sched.feasible and sched.method == "exact"


def test_no_pair_meets_everyone_at_zero():
    sched = compute_schedule(CHAIN, 1.0, pair_weights={})
    assert sched.feasible and set(sched.shifts_ms.values()) == {0.0}


@pytest.mark.parametrize("weights, problem", [
    ({frozenset("AZ"): 1}, "not a pair of these jobs"),
    ({frozenset("A"): 1}, "not a pair of these jobs"),
    ({frozenset("AB"): -1}, "whole number >= 0"),
    ({frozenset("AB"): 1.5}, "whole number >= 0"),
    ({frozenset("AB"): True}, "whole number >= 0"),
])
def test_bad_pair_weights_are_named(weights, problem):
    with pytest.raises(ValueError, match=f"pair_weights: .*{problem}"):
        compute_schedule(CHAIN, 1.0, pair_weights=weights)

