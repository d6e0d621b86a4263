"""The align decision: padded periods admit a zero-overlap schedule at the least mean loss."""

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.theory.align import (
    Alignment,
    _candidates,
    align_periods,
    padded_periods,
    pair_paddings,
)
from controller.theory.schedule import JobTiming, compute_schedule, separable, to_quanta


def brute_two_jobs(t1, c1, t2, c2, share):
    """Least (mean loss, max loss, padding) over every padded pair within the share that separates."""
    best = None
    for p1 in range(t1, math.floor(t1 * (1 + share)) + 1):
        for p2 in range(t2, math.floor(t2 * (1 + share)) + 1):
            if separable(p1, c1, p2, c2):
                loss1, loss2 = 1 - Fraction(t1, p1), 1 - Fraction(t2, p2)
                key = ((loss1 + loss2) / 2, max(loss1, loss2), p1 + p2 - t1 - t2)
                best = key if best is None or key < best else best
    return best


def tdm_mean_loss(periods, comms):
    """Mean loss of the cheapest TDM frame: every period a multiple of a frame holding all bursts."""
    return min(
        sum(1 - Fraction(t, -(-t // f) * f) for t in periods) / len(periods)
        for f in range(sum(comms), max(sum(comms), max(periods)) + 1)
    )


def check_padding(jobs, result: Alignment, quantum_ms):
    """Padded jobs keep name and burst, never shrink, sit on the grid and are separated."""
    assert result.schedule.feasible and result.schedule.overlap_ms == 0
    assert [t.name for t in result.timings] == [j.name for j in jobs]
    for job, padded in zip(jobs, result.timings, strict=True):
        assert padded.comm_ms == job.comm_ms
        pad = result.padding_ms[job.name]
        assert pad >= 0 and padded.period_ms == pytest.approx(job.period_ms + pad)
        assert pad / quantum_ms == pytest.approx(round(pad / quantum_ms))
    losses = [1 - j.period_ms / p.period_ms for j, p in zip(jobs, result.timings, strict=True)]
    assert result.mean_loss == pytest.approx(sum(losses) / len(losses))
    assert compute_schedule(list(result.timings), quantum_ms).feasible


def test_already_feasible_jobs_get_no_padding():
    jobs = [JobTiming("a", 300.0, 100.0), JobTiming("b", 600.0, 150.0), JobTiming("c", 900.0, 50.0)]
    result = align_periods(jobs, 1.0)
    assert compute_schedule(jobs, 1.0).feasible
    assert result.padding_ms == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert result.mean_loss == 0.0
    assert result.timings == tuple(jobs)
    check_padding(jobs, result, 1.0)


def test_coprime_pair_matches_brute_force_over_all_padded_pairs():
    jobs = [JobTiming("a", 300.0, 100.0), JobTiming("b", 449.0, 150.0)]
    assert not compute_schedule(jobs, 1.0).feasible
    result = align_periods(jobs, 1.0)
    check_padding(jobs, result, 1.0)
    mean, worst, padding = brute_two_jobs(300, 100, 449, 150, 1.0)
    assert result.mean_loss == pytest.approx(float(mean))
    losses = [1 - j.period_ms / p.period_ms for j, p in zip(jobs, result.timings, strict=True)]
    assert max(losses) == pytest.approx(float(worst))
    assert sum(result.padding_ms.values()) == padding


def test_three_jobs_pad_only_the_odd_one_out():
    """a and b (1000 ms, bursts 300) share everything; c (449 ms, prime) shares nothing.

    c needs gcd(P_c, 1000) >= 400, so P_c = 500 (a pad of 51 ms, mean loss 0.034);
    leaving c alone or padding it to 450..499 forces a and b to a multiple of
    P_c (1347 ms or more), a far larger loss. The frame of the TDM family costs more.
    """
    jobs = [JobTiming("a", 1000.0, 300.0), JobTiming("b", 1000.0, 300.0), JobTiming("c", 449.0, 100.0)]
    result = align_periods(jobs, 1.0)
    check_padding(jobs, result, 1.0)
    assert result.padding_ms == {"a": 0.0, "b": 0.0, "c": 51.0}
    assert result.mean_loss == pytest.approx(51 / 500 / 3)
    assert result.mean_loss < tdm_mean_loss([1000, 1000, 449], [300, 300, 100])


def test_three_coprime_jobs_are_separated_by_the_padding():
    jobs = [JobTiming("a", 301.0, 60.0), JobTiming("b", 449.0, 80.0), JobTiming("c", 611.0, 50.0)]
    assert not compute_schedule(jobs, 1.0).feasible
    result = align_periods(jobs, 1.0)
    check_padding(jobs, result, 1.0)
    assert 0 < result.mean_loss <= tdm_mean_loss([301, 449, 611], [60, 80, 50])


def test_padding_share_too_small_is_refused_naming_the_jobs():
    jobs = [JobTiming("a", 300.0, 100.0), JobTiming("b", 449.0, 150.0)]
    with pytest.raises(ValueError, match="a, b") as refusal:
        align_periods(jobs, 1.0, max_padding_share=0.1)
    assert "\n" not in str(refusal.value)
    assert brute_two_jobs(300, 100, 449, 150, 0.1) is None


def test_share_limit_is_respected_when_met():
    jobs = [JobTiming("a", 300.0, 100.0), JobTiming("b", 449.0, 150.0)]
    share = 0.4
    result = align_periods(jobs, 1.0, max_padding_share=share)
    for job in jobs:
        assert result.padding_ms[job.name] <= share * job.period_ms
    assert result.mean_loss == pytest.approx(float(brute_two_jobs(300, 100, 449, 150, share)[0]))


@pytest.mark.parametrize(
    "jobs",
    [
        [JobTiming("a", 100.0, 100.0), JobTiming("b", 300.0, 50.0)],  # a burst as long as its period
        [JobTiming("a", 100.0, 150.0)],
        [],
    ],
)
def test_bursts_that_cannot_fit_are_refused(jobs):
    with pytest.raises(ValueError):
        align_periods(jobs, 1.0)


def test_works_on_a_coarser_quantum():
    jobs = [JobTiming("a", 300.0, 100.0), JobTiming("b", 450.0, 150.0)]  # 60 and 90 quanta of 5 ms
    result = align_periods(jobs, 5.0)
    check_padding(jobs, result, 5.0)
    mean, _, _ = brute_two_jobs(60, 20, 90, 30, 1.0)
    assert result.mean_loss == pytest.approx(float(mean))


@st.composite
def job_sets(draw, max_period=16):
    n = draw(st.integers(2, 3))
    quantum_ms = draw(st.sampled_from([1.0, 2.5]))
    periods = [draw(st.integers(2, max_period)) for _ in range(n)]
    comms = [draw(st.integers(1, t - 1)) for t in periods]
    jobs = [JobTiming(f"j{i}", t * quantum_ms, c * quantum_ms) for i, (t, c) in enumerate(zip(periods, comms, strict=True))]
    return jobs, quantum_ms


@settings(max_examples=150, deadline=None)
@given(job_sets())
def test_padded_jobs_are_always_separable(inst):
    jobs, quantum_ms = inst
    result = align_periods(jobs, quantum_ms, max_padding_share=math.inf)
    check_padding(jobs, result, quantum_ms)


@settings(max_examples=150, deadline=None)
@given(job_sets(), st.sampled_from([0.25, 0.5, 1.0, 2.0]))
def test_two_jobs_match_brute_force_or_are_refused_alike(inst, share):
    jobs, quantum_ms = inst
    jobs = jobs[:2]
    (t1, t2), (c1, c2) = ([to_quanta(getattr(j, f), quantum_ms) for j in jobs] for f in ("period_ms", "comm_ms"))
    best = brute_two_jobs(t1, c1, t2, c2, share)
    if best is None:
        with pytest.raises(ValueError):
            align_periods(jobs, quantum_ms, max_padding_share=share)
        return
    result = align_periods(jobs, quantum_ms, max_padding_share=share)
    check_padding(jobs, result, quantum_ms)
    assert result.mean_loss == pytest.approx(float(best[0]))
    assert sum(result.padding_ms.values()) == pytest.approx(best[2] * quantum_ms)


def candidates_by_definition(periods, comms, share):
    """Every frame's padding within the share, ranked by exact (mean loss, largest loss, padding, periods)."""
    total_comm, cost, framed = sum(comms), {}, {}
    for frame in range(1, max(total_comm, max(periods)) + 1):
        padded = tuple(-(-t // frame) * frame for t in periods)
        if all(p - t <= share * t * (1 + 1e-12) for t, p in zip(periods, padded, strict=True)):
            losses = [1 - Fraction(t, p) for t, p in zip(periods, padded, strict=True)]
            cost[padded] = (sum(losses) / len(losses), max(losses), sum(padded) - sum(periods), padded)
            framed[padded] = framed.get(padded, False) or frame >= total_comm
    return [(padded, framed[padded], all(c1 + c2 <= math.gcd(p1, p2) for (p1, c1), (p2, c2)
                                        in itertools.combinations(zip(padded, comms, strict=True), 2)))
            for padded in sorted(cost, key=cost.__getitem__)]


def test_the_candidates_come_in_their_exact_order():
    """The arrays' ranking (floating point, exact within rounding) is the exact one, ties included."""
    rng = random.Random(5)
    cases = [((6, 6), (1, 1), 1.0), ((4, 6, 12), (1, 1, 1), math.inf), ((10, 15), (3, 4), 0.0)]
    for _ in range(400):
        n = rng.choice((2, 2, 3, 4))
        periods = tuple(rng.randrange(2, rng.choice((20, 200, 1000))) for _ in range(n))
        comms = tuple(rng.randrange(1, max(2, t // 2)) for t in periods)
        cases.append((periods, comms, rng.choice((0.1, 0.5, 1.0, math.inf))))
    for periods, comms, share in cases:
        want = candidates_by_definition(periods, comms, share)
        assert list(_candidates(periods, comms, share)) == want
        # what the search reads: the same order without the rows neither framed nor separable
        assert list(_candidates(periods, comms, share, usable_only=True)) == [row for row in want if row[1] or row[2]]


def test_two_jobs_compiled_paddings_are_align_periods_own():
    """``pair_paddings`` (the map's, compiled) picks what ``align_periods`` picks, refusals included, over
    2000 seeded pairs of all sizes and shares."""
    rng = random.Random(5)
    cases = []
    for _ in range(2000):
        t1, t2 = rng.randint(2, 1000), rng.randint(2, 1000)
        c1, c2 = rng.randint(1, t1 - 1), rng.randint(1, t2 - 1)
        if rng.random() < 0.5:  # the map's bursts: 5-30 % of the period
            c1, c2 = max(1, t1 * rng.randint(5, 30) // 100), max(1, t2 * rng.randint(5, 30) // 100)
        cases.append((t1, c1, t2, c2, rng.choice([1.0, 1.0, 0.5, 0.2, 3.0])))
    refused = 0
    for share in {c[4] for c in cases}:
        mine = [c for c in cases if c[4] == share]
        a = np.array([c[:4] for c in mine], dtype=np.int64)
        got = pair_paddings(a[:, 0], a[:, 1], a[:, 2], a[:, 3], share)
        for (t1, c1, t2, c2, _), padded in zip(mine, got.tolist(), strict=True):
            jobs = [JobTiming("a", float(t1), float(c1)), JobTiming("b", float(t2), float(c2))]
            try:
                want = [round(t.period_ms) for t in align_periods(jobs, 1.0, share).timings]
            except ValueError:
                want, refused = [-1, -1], refused + 1
            assert padded == want, (t1, c1, t2, c2, share)
    assert 0 < refused < len(cases) // 2


def test_padded_periods_are_align_periods_own_and_none_where_it_refuses():
    rng = random.Random(11)
    refused = 0
    for _ in range(60):
        n = rng.choice([3, 4])
        jobs = [JobTiming(f"j{i}", float(t), float(max(1, t * rng.randint(10, 30) // 100)))
                for i, t in enumerate(rng.randint(20, 120) for _ in range(n))]
        share = rng.choice([1.0, 0.1])
        try:
            want = tuple(round(t.period_ms) for t in align_periods(jobs, 1.0, share).timings)
        except ValueError:
            want, refused = None, refused + 1
        assert padded_periods(jobs, 1.0, share) == want
    assert 0 < refused < 60
