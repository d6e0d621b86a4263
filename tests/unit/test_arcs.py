"""Two jobs with arbitrary busy patterns (controller/theory/arcs.py) against brute force: walking every
quantum of the hyper-period, for every shift on the gcd circle."""

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.theory.arcs import (
    Pattern,
    brute_force_separating_shifts,
    compatibility,
    overlap_table,
    projected,
    projected_counts,
    separable,
    separating_arcs,
    separating_shifts,
)
from controller.theory.schedule import pair_overlap_table, separating_interval


def busy_set(p):
    return {a for start, length in p.arcs for a in range(start, start + length)}


def brute_overlap_table(p1, p2):
    """Quanta both are busy per lcm(T1, T2), for every shift s in [0, g), quantum by quantum."""
    t1, t2 = p1.period_q, p2.period_q
    b1, b2 = busy_set(p1), busy_set(p2)
    return [sum(1 for t in range(math.lcm(t1, t2)) if t % t1 in b1 and (t - s) % t2 in b2)
            for s in range(math.gcd(t1, t2))]


@st.composite
def patterns(draw, period_q):
    arcs = []
    for _ in range(draw(st.integers(1, 6))):
        start = draw(st.integers(0, period_q - 1))
        longest = draw(st.sampled_from([1, 2, max(1, period_q // 4), period_q]))  # short arcs too
        arcs.append((start, draw(st.integers(1, max(1, min(longest, period_q - start))))))
    return Pattern(period_q, tuple(arcs))


@st.composite
def pairs(draw):
    """Two patterns, periods 1..40; half the time periods sharing a factor (a gcd circle worth the name)."""
    if draw(st.booleans()):
        g = draw(st.integers(1, 20))
        t1, t2 = g * draw(st.integers(1, 40 // g)), g * draw(st.integers(1, 40 // g))
    else:
        t1, t2 = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    return draw(patterns(t1)), draw(patterns(t2))


# ---------------------------------------------------------------- the two worked examples


def test_room_on_the_circle_yet_no_shift_separates():
    p1, p2 = Pattern(12, ((0, 1), (2, 1), (4, 1))), Pattern(18, ((0, 2),))
    assert p1.busy_q + p2.busy_q == 5 <= math.gcd(12, 18) == 6
    assert separating_shifts(p1, p2) == brute_force_separating_shifts(p1, p2) == ()
    assert not separable(p1, p2)
    assert overlap_table(p1, p2).tolist() == brute_overlap_table(p1, p2) == [1] * 6
    assert compatibility(p1, p2) == 0.75  # 1 of job 2's 4 busy quanta per 36 collides at best


def test_overloaded_circle_yet_shifts_separate():
    p1, p2 = Pattern(12, ((0, 2), (6, 2))), Pattern(18, ((2, 2), (8, 2), (14, 2)))
    assert p1.busy_q + p2.busy_q == 10 > 6
    assert separating_shifts(p1, p2) == brute_force_separating_shifts(p1, p2) == (0, 1, 2)
    assert separating_arcs(p1, p2) == ((0, 3),)
    assert compatibility(p1, p2) == 1.0


# ---------------------------------------------------------------- one arc each: the closed form


def test_rectangles_match_the_closed_form_and_brute_force():
    for t1 in range(1, 13):
        for t2 in range(1, 13):
            g = math.gcd(t1, t2)
            for c1 in range(1, t1 + 1):
                for c2 in range(1, t2 + 1):
                    p1, p2 = Pattern.rectangle(t1, c1), Pattern.rectangle(t2, c2)
                    shifts = separating_shifts(p1, p2)
                    interval = separating_interval(t1, c1, t2, c2)
                    assert shifts == (() if interval is None else tuple(range(interval[0], interval[1] + 1)))
                    assert bool(shifts) == (c1 + c2 <= g)
                    assert shifts == brute_force_separating_shifts(p1, p2)
                    assert np.array_equal(overlap_table(p1, p2), pair_overlap_table(t1, c1, t2, c2))


@pytest.mark.parametrize(("t1", "c1", "t2", "c2"), [
    (1000, 300, 1500, 200), (1000, 300, 1500, 201), (100_000, 20_000, 150_000, 30_000),
    (100_000, 20_000, 150_000, 30_001), (997, 1, 991, 1), (4096, 4095, 8192, 1), (4096, 4095, 8192, 2),
])
def test_large_rectangles_match_the_closed_form(t1, c1, t2, c2):
    p1, p2 = Pattern.rectangle(t1, c1), Pattern.rectangle(t2, c2)
    interval = separating_interval(t1, c1, t2, c2)
    assert separating_arcs(p1, p2) == (() if interval is None else ((interval[0], interval[1] - interval[0] + 1),))
    assert np.array_equal(overlap_table(p1, p2), pair_overlap_table(t1, c1, t2, c2))


# ---------------------------------------------------------------- random patterns against brute force


@settings(max_examples=400)
@given(pairs())
def test_separating_shifts_are_the_brute_force_ones(pair):
    p1, p2 = pair
    shifts = separating_shifts(p1, p2)
    assert shifts == brute_force_separating_shifts(p1, p2)
    assert separable(p1, p2) == bool(shifts)
    assert shifts == tuple(s for start, length in separating_arcs(p1, p2) for s in range(start, start + length))


@settings(max_examples=400)
@given(pairs())
def test_overlap_table_counts_the_collisions(pair):
    p1, p2 = pair
    g, hyper = math.gcd(p1.period_q, p2.period_q), math.lcm(p1.period_q, p2.period_q)
    table = overlap_table(p1, p2)
    assert table.dtype == np.int64 and table.shape == (g,)
    assert table.tolist() == brute_overlap_table(p1, p2)
    assert tuple(np.flatnonzero(table == 0).tolist()) == separating_shifts(p1, p2)
    assert int(table.sum()) == p1.busy_q * p2.busy_q  # every pair (a, b) meets at exactly one shift
    least_busy = min(p1.busy_q * hyper // p1.period_q, p2.busy_q * hyper // p2.period_q)
    assert int(table.max()) <= least_busy
    score = compatibility(p1, p2)
    assert 0.0 <= score <= 1.0
    assert (score == 1.0) == separable(p1, p2)
    assert score == pytest.approx(1 - int(table.min()) / least_busy, abs=1e-12)


@settings(max_examples=300)
@given(pairs())
def test_swapping_the_jobs_negates_the_shift(pair):
    p1, p2 = pair
    g = math.gcd(p1.period_q, p2.period_q)
    assert separating_shifts(p2, p1) == tuple(sorted((-s) % g for s in separating_shifts(p1, p2)))
    assert np.array_equal(overlap_table(p2, p1), overlap_table(p1, p2)[(-np.arange(g)) % g])
    assert compatibility(p2, p1) == compatibility(p1, p2)


@settings(max_examples=200)
@given(st.integers(1, 40).flatmap(patterns), st.integers(1, 50))
def test_projection_is_the_busy_set_modulo_g(pattern, g):
    counts = [0] * g
    for a in busy_set(pattern):
        counts[a % g] += 1
    assert projected_counts(pattern, g).tolist() == counts
    assert projected(pattern, g).tolist() == [n > 0 for n in counts]


def test_both_verdicts_occur_among_random_pairs():
    """The property tests' pairs are no one-sided sample: seeded pairs give both verdicts, each exact."""
    rng = random.Random(7)
    verdicts = set()
    for _ in range(300):
        g = rng.randint(1, 12)
        periods = [g * rng.randint(1, 3) for _ in range(2)]
        p1, p2 = (Pattern(t, tuple((s, rng.randint(1, min(2, t - s))) for s in rng.sample(range(t), min(t, 3))))
                  for t in periods)
        verdicts.add(separable(p1, p2))
        assert separating_shifts(p1, p2) == brute_force_separating_shifts(p1, p2)
    assert verdicts == {True, False}


@pytest.mark.parametrize("seed", range(16))
def test_large_circles_agree_with_the_overlap_table(seed):
    """Beyond brute force (g up to 2**20, several radix passes, many arcs): the sorted sweep against the
    second-difference table, two independent computations."""
    rng = random.Random(seed)
    g = rng.choice([997, 5000, 50_000, 2**20])
    periods = [g * rng.randint(1, 3) for _ in range(2)]
    patterns_ = []
    for t in periods:
        if rng.random() < 0.5:  # periodic phases, as pipeline or tensor parallelism sends them
            step = t // rng.choice([8, 16, 64])
            length = rng.randint(1, max(1, step // rng.choice([2, 5, 50])))
            arcs = tuple((k * step, length) for k in range(t // step) if k * step + length <= t)
        else:
            longest = max(1, g // rng.choice([500, 20_000]))
            arcs = tuple((s, rng.randint(1, min(t - s, longest))) for s in rng.sample(range(t), rng.choice([8, 64])))
        patterns_.append(Pattern(t, arcs))
    p1, p2 = patterns_
    zeros = tuple(np.flatnonzero(overlap_table(p1, p2) == 0).tolist())
    assert separating_shifts(p1, p2) == zeros


# ---------------------------------------------------------------- the pattern itself


def test_arcs_are_sorted_and_merged():
    p = Pattern(20, [(10, 2), (0, 3), (2, 2), (12, 1), (15, 1), (15, 2)])
    assert p.arcs == ((0, 4), (10, 3), (15, 2))
    assert p.busy_q == 9
    assert p == Pattern(20, ((15, 2), (0, 4), (10, 3)))
    assert Pattern.rectangle(10, 3) == Pattern(10, ((0, 3),))
    assert Pattern(5, ((0, 5),)).busy_q == 5


@pytest.mark.parametrize(("period_q", "arcs", "message"), [
    (10, ((8, 3),), "past the period 10"),
    (10, ((0, 0),), "length_q 0"),
    (10, ((-1, 2),), "starts before 0"),
    (0, ((0, 1),), "period_q must be at least 1"),
    (-3, ((0, 1),), "period_q must be at least 1"),
    (10, (), "at least one busy arc"),
    (10, ((1, 2, 3),), "pair"),
    (10, ((1.5, 2),), "whole number of quanta"),
    (10.0, ((1, 2),), "period_q must be a whole number"),
    (10, 5, "sequence of"),
])
def test_invalid_patterns_say_what_is_wrong(period_q, arcs, message):
    with pytest.raises(ValueError, match=message) as raised:
        Pattern(period_q, arcs)
    assert "\n" not in str(raised.value)
