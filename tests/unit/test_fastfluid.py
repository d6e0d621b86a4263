"""The compiled fluid model against the reference (controller/theory/fluid.py) on seeded combinations:
the same normalised throughput within 1e-6 for every policy it takes, and the same two-job schedule."""

import math
import random

import pytest

from controller.theory import fastfluid, fluid, pairschedule, sweep
from controller.theory.policies import POLICIES, PolicyKnobs
from controller.theory.schedule import JobTiming, compute_schedule

FAST = [name for name, pol in POLICIES.items() if type(pol) in fastfluid.FAST_POLICIES]


def combinations(count: int, seed: int = 11):
    """(raw jobs, quantum, policy, knobs, length) of ``count`` seeded combinations: 2-4 jobs, quanta 1-50
    ms, every policy the compiled model takes, re-alignment on a third of them, horizons (6 periods of the
    longest job, to keep the reference quick) or fixed counts."""
    rng = random.Random(seed)
    for k in range(count):
        policy = FAST[k % len(FAST)]
        n = 2 if policy == "align" else (2, 2, 2, 3, 3, 4)[k % 6]  # align's own search is slow beyond two
        frac = rng.choice([(0.05, 0.2), (0.1, 0.5), (0.3, 0.5)])
        raw = sweep.sample_raw(seed, n, k, (100, 1000), frac, k % 7 == 0, 10_000.0)
        q = rng.choice([1.0, 5.0, 10.0, 50.0])
        knobs = PolicyKnobs(realign_s=rng.choice([None, 2.0, 5.0]))
        jobs = sweep.true_jobs(raw)
        length = ({"iterations": rng.randint(4, 12)} if k % 4 == 0
                  else {"horizon_ms": 6 * max(j.period_ms for j in jobs)})
        yield raw, q, policy, knobs, length, k


def test_every_builtin_policy_but_plugins_is_compiled():
    assert set(FAST) == {"none", "shift", "gate", "random", "guard", "priority", "mltcp", "align"}
    assert all(fastfluid.supports(p) for p in FAST)


def test_compiled_model_gives_the_references_throughput_on_3000_combinations():
    worst, checked = 0.0, 0
    for raw, q, policy, knobs, length, seed in combinations(3000):
        grid, jobs = sweep.on_grid(raw, q), sweep.true_jobs(raw)
        try:
            ref = fluid.predict_policy(policy, grid, jobs, q, knobs, {}, seed=seed, **length)[1].normalised_throughput
        except ValueError:
            ref = math.nan
        try:
            fast = fastfluid.predict_throughput(policy, grid, jobs, q, knobs, {}, seed=seed, **length)
        except ValueError:
            fast = math.nan
        if math.isnan(ref):
            assert math.isnan(fast), (raw, q, policy)
            continue
        worst, checked = max(worst, abs(fast - ref)), checked + 1
        assert fast == pytest.approx(ref, abs=1e-6), (raw, q, policy, knobs, length)
    assert checked > 2800 and worst <= 1e-6


def test_a_batch_shares_identical_simulations_and_keeps_each_answer():
    raw = sweep.sample_raw(3, 2, 0, (100, 1000), (0.1, 0.5), False, 1e4)
    jobs = sweep.true_jobs(raw)
    horizon = fluid.default_horizon_ms(jobs, 20)
    batch, slots = fastfluid.Batch(), []
    for q in (1.0, 10.0):
        grid = sweep.on_grid(raw, q)
        for policy, seed in (("none", 0), ("shift", 0), ("random", 5)):
            slots.append((policy, q, seed, batch.add(policy, grid, jobs, q, None, {}, seed, horizon_ms=horizon)))
    batch.run()
    by_arm = {(policy, q): slot for policy, q, _, (_, slot) in slots}
    assert by_arm[("none", 1.0)] == by_arm[("none", 10.0)]  # `none` once for both quanta
    assert by_arm[("random", 1.0)] != by_arm[("random", 10.0)]
    for policy, q, seed, slot in slots:
        ref = fluid.predict_policy(policy, sweep.on_grid(raw, q), jobs, q, None, {}, seed=seed, horizon_ms=horizon)
        assert batch.throughput(slot) == pytest.approx(ref[1].normalised_throughput, abs=1e-9)


def test_two_job_schedule_in_closed_form_is_the_references():
    rng = random.Random(5)
    for _ in range(3000):
        t1, t2 = rng.randint(2, 400), rng.randint(2, 400)
        c1, c2 = rng.randint(1, t1 - 1), rng.randint(1, t2 - 1)
        q = rng.choice([1.0, 2.5, 10.0])
        timings = [JobTiming("j0", t1 * q, c1 * q), JobTiming("j1", t2 * q, c2 * q)]
        assert pairschedule.compute_schedule_fast(timings, q) == compute_schedule(timings, q)
