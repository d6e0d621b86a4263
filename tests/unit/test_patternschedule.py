"""N jobs with busy patterns (controller/theory/patternschedule.py) against brute force: every combination
of shifts, each scored by walking the common hyper-period quantum by quantum; rectangles against
schedule.compute_schedule; two jobs against arcs."""

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.theory import patternschedule
from controller.theory.arcs import Pattern, compatibility, overlap_table, separable
from controller.theory.patternschedule import (
    brute_force_rate,
    brute_force_schedule,
    compatibility_score,
    overlap_rate,
    pattern_schedule,
)
from controller.theory.schedule import compute_schedule, quantize_job


def residues_q(patterns, i):
    """G_i over every other job, as the brief states the shifts' range."""
    periods = [p.period_q for p in patterns]
    return math.lcm(1, *(math.gcd(periods[i], t) for j, t in enumerate(periods) if j != i))


@st.composite
def pattern(draw, period_q):
    arcs = []
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, period_q - 1))
        arcs.append((start, draw(st.integers(1, min(max(1, period_q // 3), period_q - start)))))
    return Pattern(period_q, tuple(arcs))


@st.composite
def periods(draw, n_jobs):
    """Periods 2..24; half the time multiples of a common factor (gcd circles worth the name)."""
    if draw(st.booleans()):
        g = draw(st.integers(2, 8))
        return [g * draw(st.integers(1, 24 // g)) for _ in range(n_jobs)]
    return [draw(st.integers(2, 24)) for _ in range(n_jobs)]


def weights(draw, n_jobs):
    """None (every pair 1) or each pair 0..2 (a dict lists only some pairs: the rest weigh 0)."""
    if draw(st.booleans()):
        return None
    pairs = [frozenset({i, j}) for i in range(n_jobs) for j in range(i + 1, n_jobs)]
    return {pair: draw(st.integers(0, 2)) for pair in pairs if draw(st.integers(0, 4))}


@st.composite
def instances(draw):
    n_jobs = draw(st.integers(2, 4))
    return [draw(pattern(t)) for t in draw(periods(n_jobs))], weights(draw, n_jobs)


@st.composite
def rectangle_instances(draw):
    n_jobs = draw(st.integers(2, 4))
    ts = draw(periods(n_jobs))
    return [(t, draw(st.integers(1, max(1, t // 2)))) for t in ts], weights(draw, n_jobs)


# ---------------------------------------------------------------- against brute force


@settings(max_examples=300)
@given(instances())
def test_optimum_matches_brute_force(instance):
    patterns, pair_weights = instance
    result = pattern_schedule(patterns, pair_weights)
    assert result.exact
    assert result.overlap_rate == brute_force_schedule(patterns, pair_weights)
    assert result.feasible == (result.overlap_rate == 0)
    assert result.shifts_q[0] == 0
    assert all(0 <= s < residues_q(patterns, i) for i, s in enumerate(result.shifts_q))
    # the shifts achieve the rate, counted quantum by quantum and from the tables
    assert brute_force_rate(patterns, result.shifts_q, pair_weights) == result.overlap_rate
    assert overlap_rate(patterns, result.shifts_q, pair_weights) == result.overlap_rate


@settings(max_examples=150)
@given(instances())
def test_search_alone_finds_the_optimum(instance):
    """The greedy dive often is optimal already; started from every job at 0 instead, the branch and
    bound must find the optimum itself."""
    patterns, pair_weights = instance
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(patternschedule._Search, "_greedy", lambda self, *_: dict.fromkeys(self.group, 0))
        result = pattern_schedule(patterns, pair_weights)
    assert result.exact
    assert result.overlap_rate == brute_force_schedule(patterns, pair_weights)
    assert brute_force_rate(patterns, result.shifts_q, pair_weights) == result.overlap_rate


@st.composite
def small_instances(draw, n_jobs):
    return [draw(pattern(t)) for t in draw(periods(n_jobs))], weights(draw, n_jobs)


@settings(max_examples=60)
@given(small_instances(3), small_instances(3), st.booleans())
def test_groups_that_never_meet_are_solved_apart(first, second, search_alone):
    """Two instances side by side (no pair across them meets): the optimum is the sum of theirs, each
    group's search judged by its own cost (with or without the greedy dive's incumbent)."""
    (ps1, w1), (ps2, w2) = first, second
    ones = {frozenset({i, j}): 1 for i in range(3) for j in range(i + 1, 3)}
    weights = {pair: w for pair, w in (ones if w1 is None else w1).items()}
    weights |= {frozenset(k + 3 for k in pair): w for pair, w in (ones if w2 is None else w2).items()}
    with pytest.MonkeyPatch.context() as mp:
        if search_alone:
            mp.setattr(patternschedule._Search, "_greedy", lambda self, *_: dict.fromkeys(self.group, 0))
        result = pattern_schedule(ps1 + ps2, weights)
    assert result.exact
    assert result.overlap_rate == brute_force_schedule(ps1, w1) + brute_force_schedule(ps2, w2)
    assert overlap_rate(ps1 + ps2, result.shifts_q, weights) == result.overlap_rate
    assert result.shifts_q[3] == 0  # the second instance's first job anchors its group


@settings(max_examples=60)
@given(instances(), st.data())
def test_rate_matches_brute_force_at_any_shifts(instance, data):
    """The tables' rate equals the quantum-by-quantum count at arbitrary shifts, and a shift matters only
    modulo G_i (adding a multiple of it, or any common delay, changes nothing)."""
    patterns, pair_weights = instance
    shifts = [data.draw(st.integers(0, p.period_q - 1)) for p in patterns]
    rate = brute_force_rate(patterns, shifts, pair_weights)
    assert overlap_rate(patterns, shifts, pair_weights) == rate
    moved = [s + data.draw(st.integers(0, 3)) * residues_q(patterns, i) for i, s in enumerate(shifts)]
    assert brute_force_rate(patterns, moved, pair_weights) == rate
    delay = data.draw(st.integers(0, 30))
    assert brute_force_rate(patterns, [s + delay for s in shifts], pair_weights) == rate


# ---------------------------------------------------------------- two jobs: arcs


@settings(max_examples=80)
@given(periods(2).flatmap(lambda ts: st.tuples(pattern(ts[0]), pattern(ts[1]))))
def test_two_jobs_agree_with_arcs(pair):
    p1, p2 = pair
    result = pattern_schedule([p1, p2])
    assert result.feasible == separable(p1, p2)
    table = overlap_table(p1, p2)
    assert result.overlap_rate == Fraction(int(table.min()), math.lcm(p1.period_q, p2.period_q))
    assert int(table[result.shifts_q[1]]) == int(table.min())
    score = compatibility_score([p1, p2], result.shifts_q)
    assert 0 <= score <= 1
    assert (score == 1) == result.feasible
    assert float(score) == pytest.approx(compatibility(p1, p2), abs=1e-12)


# ---------------------------------------------------------------- rectangles: schedule.compute_schedule


@settings(max_examples=80)
@given(rectangle_instances())
def test_rectangles_agree_with_compute_schedule(instance):
    """compute_schedule reports overlap_ms: weighted overlapped quanta per hyper-period (lcm of all periods)
    times quantum_ms. With a 1-ms quantum both are whole numbers of ms (exact floats), so its rate is
    Fraction(overlap_ms, hyperperiod_ms): colliding quanta per quantum, as overlap_rate."""
    jobs, pair_weights = instance
    patterns = [Pattern.rectangle(t, c) for t, c in jobs]
    timings = [quantize_job(f"j{k}", t, c, 1.0) for k, (t, c) in enumerate(jobs)]
    names = None if pair_weights is None else {frozenset(f"j{k}" for k in pair): w for pair, w in pair_weights.items()}
    reference = compute_schedule(timings, 1.0, method="exact", pair_weights=names)
    ours = pattern_schedule(patterns, pair_weights)
    assert reference.method == "exact" and ours.exact
    assert ours.overlap_rate == Fraction(round(reference.overlap_ms), round(reference.hyperperiod_ms))
    assert ours.feasible == reference.feasible


# ---------------------------------------------------------------- worked cases


def test_pairwise_separable_but_not_jointly():
    """Three bursts of 2 on period 4: any two fit (2 + 2 <= gcd 4), all three need 6 of 4 quanta."""
    patterns = [Pattern.rectangle(4, 2)] * 3
    assert all(separable(a, b) for a, b in [(patterns[0], patterns[1])])
    for pair in ({0, 1}, {0, 2}, {1, 2}):
        assert pattern_schedule(patterns, {frozenset(pair): 1}).feasible
    result = pattern_schedule(patterns)
    assert not result.feasible and result.exact
    assert result.overlap_rate == brute_force_schedule(patterns) == Fraction(1, 2)  # 2 quanta per 4, one pair


def test_patterns_that_interleave_separate():
    """arcs' example: 10 busy quanta of 12 and 18 take only residues {0, 1} and {2, 3} of their gcd circle
    of 6; a third job of period 6 (the same circle with both) fits the two left, not three."""
    p1, p2 = Pattern(12, ((0, 2), (6, 2))), Pattern(18, ((2, 2), (8, 2), (14, 2)))
    fits, too_long = Pattern(6, ((0, 2),)), Pattern(6, ((0, 3),))
    assert pattern_schedule([p1, p2]).feasible
    result = pattern_schedule([p1, p2, fits])
    assert result.feasible and brute_force_rate([p1, p2, fits], result.shifts_q) == 0
    result = pattern_schedule([p1, p2, too_long])
    assert not result.feasible and result.overlap_rate == brute_force_schedule([p1, p2, too_long])


def test_groups_that_never_meet_are_each_anchored():
    patterns = [Pattern.rectangle(6, 4)] * 4
    result = pattern_schedule(patterns, {frozenset({0, 1}): 1, frozenset({2, 3}): 2})
    assert result.shifts_q[0] == 0 and result.shifts_q[2] == 0
    assert result.overlap_rate == brute_force_schedule(patterns, {frozenset({0, 1}): 1, frozenset({2, 3}): 2})
    assert pattern_schedule(patterns, {}).overlap_rate == 0  # no pair meets: all at 0
    assert pattern_schedule(patterns, {}).shifts_q == (0, 0, 0, 0)


def test_max_nodes_too_small_returns_a_valid_schedule():
    patterns = [Pattern(24, ((13, 3),)), Pattern(12, ((10, 2),)), Pattern(12, ((5, 7),)),
                Pattern(18, ((9, 3), (15, 3)))]
    full = pattern_schedule(patterns)
    short = pattern_schedule(patterns, max_nodes=3)
    assert full.exact and full.overlap_rate == brute_force_schedule(patterns)
    assert not short.exact and short.nodes == 3
    assert short.overlap_rate >= full.overlap_rate
    assert brute_force_rate(patterns, short.shifts_q) == short.overlap_rate
    assert pattern_schedule(patterns, max_nodes=0).overlap_rate == brute_force_rate(
        patterns, pattern_schedule(patterns, max_nodes=0).shifts_q)  # the greedy dive alone


@settings(max_examples=30)
@given(instances())
def test_python_integers_give_the_same_answer(instance):
    """When a total could overflow int64 the search runs on Python integers: same optimum, same shifts."""
    patterns, pair_weights = instance
    expected = pattern_schedule(patterns, pair_weights)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(patternschedule, "_INT64_TOTAL_LIMIT", 0)
        assert patternschedule._Instance(patterns, pair_weights).dtype is object
        assert pattern_schedule(patterns, pair_weights) == expected


def test_compatibility_score_is_the_mean_over_meeting_pairs():
    a, b = Pattern.rectangle(4, 2), Pattern.rectangle(4, 3)
    # pair (0, 1) at shift 0: 2 of min(2, 3) quanta collide -> 0; pair (0, 2) weight 0; pair (1, 2): a at 2
    # against b at 0 collides on 1 of 2 -> 1/2
    assert compatibility_score([a, b, a], [0, 0, 2], {frozenset({0, 1}): 1, frozenset({1, 2}): 3}) == Fraction(1, 4)
    assert compatibility_score([a, b], [0, 2], {}) == 1


def test_bad_input_is_refused():
    p = Pattern.rectangle(4, 1)
    with pytest.raises(ValueError, match="at least one job"):
        pattern_schedule([])
    with pytest.raises(ValueError, match="not a pair"):
        pattern_schedule([p, p], {frozenset({0, 2}): 1})
    with pytest.raises(ValueError, match="whole number"):
        pattern_schedule([p, p], {frozenset({0, 1}): -1})
    with pytest.raises(ValueError, match="max_nodes"):
        pattern_schedule([p, p], max_nodes=-1)
    with pytest.raises(ValueError, match="shifts"):
        overlap_rate([p, p], [0])
