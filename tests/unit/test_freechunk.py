"""The default sweep's two-job chunks evaluated as arrays (controller/theory/freechunk.py) against the
reference sweep (controller/theory/sweep.py), combination by combination, and the pieces they rest on."""

import math
import random

import numpy as np
import pytest

from controller.theory import freechunk, sweep, sweepstream
from controller.theory.policies import PolicyKnobs
from controller.theory.schedule import comm_quanta, period_quanta
from controller.theory.tally import tally_of, tally_of_array


def settings(**kw):
    return {"seed": 7, "jobs": [2], "samples": 1000, "period_range": (100, 1000), "frac_range": (0.1, 0.5),
            "quanta": [1.0, 10.0, 50.0], "zoo": False, "zoo_link_mbps": 1e4, "iterations": None,
            "horizon_ms": 3000.0, "realign_s": None, "threshold": 0.01, "policies": ["shift"], "policy": "shift",
            "rows": True, **kw}


def rows_of(s, chunk_samples=97):
    got = []
    sweepstream.run_sweep_cells(s, on_rows=got.extend, chunk_samples=chunk_samples)
    return got


@pytest.mark.parametrize("kw", [
    {},  # 3000 combinations: uniform periods, a horizon
    {"samples": 60, "horizon_ms": None},  # the default, steady-state horizon
    {"samples": 300, "zoo": True, "horizon_ms": None, "iterations": 8, "policies": ["shift", "random"]},
], ids=["uniform-horizon", "default-horizon", "zoo-iterations-random"])
def test_array_chunks_give_the_references_rows(kw):
    s = settings(**kw)
    got, want = rows_of(s), sweep.run_sweep(s)
    assert len(got) == len(want) == s["samples"] * 3
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        assert (g.n_jobs, g.quantum_ms, g.sample, g.periods_ms, g.comms_ms, g.feasible, g.method,
                g.hyperperiod_ms, g.overlap_fraction, g.policy) == (
            w.n_jobs, w.quantum_ms, w.sample, w.periods_ms, w.comms_ms, w.feasible, w.method,
            w.hyperperiod_ms, w.overlap_fraction, w.policy)
        for f in ("throughput_none", "throughput_shift", "throughput_policy", "throughput_sham", "sham_gain"):
            worst = max(worst, abs(getattr(g, f) - getattr(w, f)))
        assert set(g.per_policy) == set(w.per_policy)
        assert (g.shift_helps, g.shift_hurts) == (w.shift_helps, w.shift_hurts)
    assert worst <= 1e-6


def test_array_chunks_are_taken_only_where_every_arm_runs_free():
    free = {"none", "shift", "random"}
    assert freechunk.applies(2, free, PolicyKnobs())
    assert not freechunk.applies(3, free, PolicyKnobs())  # more jobs: the schedule is no closed form
    assert not freechunk.applies(2, free | {"gate"}, PolicyKnobs())  # windows
    assert not freechunk.applies(2, free | {"priority"}, PolicyKnobs())  # another sharing
    assert not freechunk.applies(2, free, PolicyKnobs(realign_s=2.0))  # shift re-aligns


def test_cells_from_arrays_are_the_cells_of_the_rows():
    s = settings(samples=200, rows=False)
    cells = sweepstream.run_sweep_cells(s)
    for q in s["quanta"]:
        rows = [r for r in rows_of({**s, "rows": True}) if r.quantum_ms == q]
        cell = sweepstream.SweepCell()
        for r in rows:
            cell.add({"feasible": r.feasible, "method": r.method, "shift_helps": r.shift_helps,
                      "policy_helps": r.policy_helps, "per_policy": r.per_policy, "sham_gain": r.sham_gain}, 0.01)
        got = cells[(2, q)]
        assert (got.combinations, got.feasible, got.heuristic, got.shift_helps, got.policy_helps) == (
            cell.combinations, cell.feasible, cell.heuristic, cell.shift_helps, cell.policy_helps)
        for a, b in ((got.policies["shift"], cell.policies["shift"]), (got.sham, cell.sham)):
            assert (a.helps, a.neutral, a.hurts) == (b.helps, b.neutral, b.hurts)
            assert a.mean == pytest.approx(b.mean, abs=1e-12) and a.m2 == pytest.approx(b.m2, rel=1e-9)


def test_a_tally_of_an_array_is_the_tally_of_its_values():
    rng = random.Random(2)
    gains = [rng.gauss(0, 0.02) for _ in range(999)] + [math.nan, 0.01, -0.01]
    a, b = tally_of_array(np.array(gains), 0.01), tally_of(gains, 0.01)
    assert (a.helps, a.neutral, a.hurts) == (b.helps, b.neutral, b.hurts) and a.n == 1001
    assert a.mean == pytest.approx(b.mean, abs=1e-15) and a.m2 == pytest.approx(b.m2, rel=1e-12)
    assert tally_of_array(np.array([math.nan]), 0.01).n == 0


def test_grids_rounded_at_once_are_the_schedules_rounding():
    rng = random.Random(3)
    for k in range(5000):
        raw = sweep.sample_raw(k, rng.randint(1, 4), k, (1, 3000), (0.01, 0.99), k % 5 == 0, 1e4)
        if k % 3 == 0:  # exact halves and multiples, where rounding has edges
            raw = [(rng.choice([1, 5, 10, 50]) * rng.randint(1, 30), rng.choice([0.1, 0.25, 0.5, 1 / 3]))
                   for _ in raw]
        q = rng.choice([0.1, 1.0, 2.5, 3.0, 10.0, 50.0])
        t_all, c_all = sweep.grid_quanta(np.array([[p for p, _ in raw]]), np.array([[f for _, f in raw]]), q)
        for job, (p, f), ta, ca in zip(sweep.on_grid(raw, q), raw, t_all[0], c_all[0], strict=True):
            t = max(2, period_quanta(p, q))
            assert (job.period_ms, job.comm_ms) == (t * q, min(comm_quanta(f * t * q, q), t - 1) * q), (raw, q)
            assert (job.period_ms, job.comm_ms) == (int(ta) * q, int(ca) * q), (raw, q)
