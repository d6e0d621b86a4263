"""The structure-aware optimiser agrees with the CP-SAT baseline on random small instances."""

import random

import pytest

from controller.theory.schedule import JobTiming, compute_schedule

milp = pytest.importorskip("controller.theory.milp")


@pytest.mark.parametrize("seed", range(12))
def test_optimum_agrees_with_cpsat(seed):
    rng = random.Random(1000 + seed)
    n = rng.randint(2, 4)
    base = rng.choice([1, 5, 10])  # common factors make feasibility a real question
    periods = [base * rng.randint(3, 12) for _ in range(n)]
    comms = [max(1, int(t * rng.uniform(0.05, 0.5) / n)) for t in periods]
    jobs = [JobTiming(f"j{i}", t, c) for i, (t, c) in enumerate(zip(periods, comms, strict=True))]
    ours = compute_schedule(jobs, 1.0, method="exact")
    result = milp.solve_cpsat(periods, comms, time_limit_s=20)
    assert result.optimal and ours.overlap_ms == result.objective
