"""Many grid schedules in one compiled call (controller/theory/manyschedule.py) against compute_schedule,
instance by instance: the same shifts and overlap wherever it takes the instance."""

import numpy as np

from controller.theory import manyschedule
from controller.theory.schedule import JobTiming, compute_schedule, to_quanta
from controller.theory.sweep import grid_quanta


def instances(count: int, jobs: int, seed: int, quantum_ms: float):
    """Seeded grid instances as the map draws them: periods 100-1000 ms (a third of them a multiple of
    another job's, where the search has most to do), bursts 3-30 % of the period (some can be separated)."""
    rng = np.random.default_rng(seed)
    periods = rng.integers(100, 1001, (count, jobs)).astype(float)
    harmonic = rng.random((count, jobs)) < 0.33
    periods[:, 1:] = np.where(harmonic[:, 1:], periods[:, :1] * rng.choice([1, 2, 3], (count, jobs - 1)), periods[:, 1:])
    return grid_quanta(periods, rng.uniform(0.03, 0.3, (count, jobs)), quantum_ms)


def reference(t, c, q):
    grid = [JobTiming(f"j{i}", int(t[i]) * q, int(c[i]) * q) for i in range(len(t))]
    schedule = compute_schedule(grid, q)
    return [to_quanta(schedule.shifts_ms[j.name], q) for j in grid], to_quanta(schedule.overlap_ms, q)


def test_shifts_and_overlap_are_compute_schedules():
    checked, separated = 0, 0
    for jobs, q, seed in ((3, 1.0, 1), (3, 10.0, 2), (4, 1.0, 3), (4, 5.0, 4), (5, 10.0, 5)):
        t, c = instances(150, jobs, seed, q)
        shifts, overlap, done = manyschedule.exact_schedules(t, c)
        assert done.mean() > 0.95, (jobs, q)
        for r in np.flatnonzero(done):
            want_shifts, want_overlap = reference(t[r], c[r], q)
            assert shifts[r].tolist() == want_shifts and overlap[r] == want_overlap, (t[r], c[r], q)
            checked += 1
        separated += (overlap[done] == 0).sum()
    assert checked > 700 and 10 < separated < checked - 10  # both kinds of instance were compared


def test_instances_it_does_not_take_are_left_to_compute_schedule():
    t = np.array([[100, 200, 300], [100, 200, 300], [100, 200, 300]])
    c = np.array([[10, 20, 30], [0, 20, 30], [10, 200, 30]])  # the second and third are refused there
    _, overlap, done = manyschedule.exact_schedules(t, c)
    assert done.tolist() == [True, False, False] and overlap[0] == reference(t[0], c[0], 1.0)[1]
    seven = np.tile(np.arange(100, 107), (2, 1))
    assert not manyschedule.exact_schedules(seven, seven // 10)[2].any()  # beyond the exact method's jobs
