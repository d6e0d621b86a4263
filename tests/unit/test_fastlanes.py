"""Two-job weighted simulations several at a time (controller/theory/fastlanes.py) against the compiled loop
one at a time (fastfluid.simulate_many) and the reference's shares (policies.link_shares): the same numbers
bit for bit."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.theory import fastfluid, fastlanes, fluid
from controller.theory.fluidjob import FluidJob
from controller.theory.policies import link_shares

MLTCP, LEADER = fastfluid.SHARING_CODES["mltcp"], fastfluid.SHARING_CODES["leader"]


def rows(count: int, seed: int, jobs: int = 2):
    """``count`` seeded rows of fastfluid.simulate_many's inputs: periods 100-1000 ms, bursts 10-60 % of
    them, offsets within the periods, headroom 1 or up to 3 (the solo cap binds), mltcp or leader, a horizon
    of 6-40 periods of the longest job or (every third row) a fixed count of iterations, with a few fair rows
    and rows with windows among them (those go the one-at-a-time way)."""
    rng = np.random.default_rng(seed)
    period = rng.uniform(100, 1000, (count, jobs)).round()
    comm = period * rng.uniform(0.1, 0.6, (count, jobs))
    headroom = np.where(rng.random((count, 1)) < 0.5, 1.0, rng.uniform(1.0, 3.0, (count, jobs)))
    offset = np.floor(rng.random((count, jobs)) * period)
    sharing = rng.choice([MLTCP, LEADER, MLTCP, 0], count)
    windows = np.where(rng.random(count) < 0.1, fastfluid.GATED, 0)
    horizon = np.where(np.arange(count) % 3 == 0, 0.0, rng.uniform(6, 40, count) * period.max(axis=1))
    rank = np.zeros((count, jobs), np.int64)
    return (period, comm, headroom, offset, sharing, rank, windows, offset, period, comm, np.full(count, math.inf),
            horizon)


def test_lanes_give_the_one_at_a_time_numbers_bit_for_bit():
    for seed, count in ((1, 3), (2, 61), (3, 400)):  # fewer rows than lanes, a remainder, many
        args = rows(count, seed)
        tail = (7, 2, float(fluid.WARMUP_ITERATIONS), fluid.MLTCP_STEP_MS)
        one = fastfluid.simulate_many(*args, *tail)
        lanes = fastlanes.simulate_many(*args, *tail)
        assert np.isfinite(one).mean() > 0.9
        assert np.array_equal(one, lanes, equal_nan=True), np.flatnonzero((one != lanes).any(axis=1))


def test_a_row_out_of_events_is_nan_in_its_lane_alone():
    period, comm, headroom, offset, sharing, rank, windows, *rest = rows(9, 4)
    sharing[:], windows[:], rest[-1][:] = MLTCP, 0, 0.0  # 5 iterations each
    stuck = np.array([1, 4, 5])  # long bursts that always meet: 1-ms steps outrun the budget of events
    period[stuck], comm[stuck], offset[stuck], headroom[stuck] = 6000.0, 5000.0, 0.0, 1.0
    args = (period, comm, headroom, offset, sharing, rank, windows, *rest, 5, 2, 2.0, 1.0)
    one, lanes = fastfluid.simulate_many(*args), fastlanes.simulate_many(*args)
    assert np.array_equal(np.flatnonzero(np.isnan(lanes).any(axis=1)), stuck)
    assert np.array_equal(one, lanes, equal_nan=True)


@settings(max_examples=400, deadline=None)
@given(st.floats(0, 500), st.floats(1e-6, 500), st.floats(0, 500), st.floats(1e-6, 500),
       st.floats(1, 3), st.floats(1, 3), st.sampled_from(["mltcp", "leader"]))
def test_two_bursts_shares_are_link_shares(s0, r0, s1, r1, h0, h1, sharing):
    jobs = [FluidJob("a", 500.0, 100.0, link_headroom=h0), FluidJob("b", 500.0, 100.0, link_headroom=h1)]
    want = link_shares(jobs, [0, 1], sharing, [0, 1], [s0, s1], [r0, r1])
    gain = fastfluid._GAIN[fastfluid.SHARING_CODES[sharing]]
    assert fastlanes._shares.py_func(r0, r1, s0, s1, h0, h1, gain) == (want[0], want[1])


def test_equal_weights_keep_job_order_and_a_near_tie_is_read_exactly():
    # equal products: the stable order puts job 0 first; products a rounding apart: the reciprocals decide
    for p0, p1 in ((1.5, 1.5), (1.5, np.nextafter(1.5, 2)), (np.nextafter(1.5, 2), 1.5), (1.25, 1.75)):
        w0, w1 = p0, p1  # headroom 1: the products are the weights
        s0, s1 = w0 - 1.0, w1 - 1.0  # sent / (sent + remaining) with sent + remaining = 1
        jobs = [FluidJob("a", 500.0, 100.0), FluidJob("b", 500.0, 100.0)]
        want = link_shares(jobs, [0, 1], "mltcp", [0, 1], [s0, s1], [1.0 - s0, 1.0 - s1])
        assert fastlanes._shares.py_func(1.0 - s0, 1.0 - s1, s0, s1, 1.0, 1.0, 1.0) == (want[0], want[1])
