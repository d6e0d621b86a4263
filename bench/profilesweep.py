"""Benchmark: ``sweep --profiles`` (mixes of model profiles, patterns beside rectangles) and exact two-job
feasibility of pattern jobs given by their phases.

The sweep: ``controller/theory/profilesweep.py`` at its defaults (every profile; 4, 8 or 16 workers; 25 MiB
buckets; 10 Gbit/s links; quantum 1 ms; ``none``, ``shift``, ``gate``, ``priority`` on both forms, 40
periods of the longest job each) on ``--workers`` processes. Each figure is combinations per minute of
wall-clock time, all processes counted together, in one timed run per number of jobs after a warm-up that
loads the compiled model (``fastpatterns``) in this process (its forked workers start with it loaded).
The reference is the same combinations through the pure-Python model
(``patternfluid.predict_pattern_policy``), on one process, on a smaller sample of 2-job mixes.

Feasibility: two jobs of ``--phases`` phases each (seeded random starts and bytes, 25 Gbit/s, quantum
1 ms, iterations 1 000 and 1 500 ms (gcd 500)), median µs of one call of ``arcs.separable`` on their on-grid
patterns (``phases.as_pattern``, built beforehand), and of building both patterns and deciding
(``as_pattern`` twice + ``separable``). The goal: at most 50 µs for 64 phases (``bench/arcs.py`` times
the same call on random arcs).

    .venv/bin/python bench/profilesweep.py [--json] [--workers 2] [--samples 3000] [--phases 64]

With ``--json`` the last line is one JSON object: ``combos_per_min`` (by number of jobs),
``reference_combos_per_min``, ``speedup_vs_reference`` (2 jobs), ``feasibility_us`` and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from controller.theory import patternfluid, profilesweep  # noqa: E402
from controller.theory.arcs import separable  # noqa: E402
from controller.theory.patternschedule import pattern_schedule  # noqa: E402
from controller.theory.phases import JobPattern, Phase, as_pattern  # noqa: E402

GOAL_US = 50.0
GOAL_PER_MIN = 100_000
JOBS = (2, 3, 4)


def sweep_per_min(n_jobs: int, samples: int, workers: int) -> float:
    settings = profilesweep.ProfileSweep(jobs=(n_jobs,), samples=samples, seed=7)
    started = time.perf_counter()
    rows = profilesweep.run(settings, workers, chunk=max(25, samples // (8 * workers)))
    return 60 * len(rows) / (time.perf_counter() - started)


def reference_per_min(samples: int) -> float:
    """2-job mixes through the pure-Python model, on one process."""
    settings = profilesweep.ProfileSweep(jobs=(2,), samples=samples, seed=7)
    started = time.perf_counter()
    for k in range(samples):
        mix = profilesweep.draw_mix(settings, 2, k)
        for jobs, grid in profilesweep.forms(settings, mix).values():
            found = pattern_schedule(grid)
            schedule = patternfluid.pattern_schedule_record([j.name for j in jobs], grid, found.shifts_q, 1.0,
                                                            found.feasible)
            horizon_ms = settings.horizon_periods * max(j.period_ms for j in jobs)
            for policy in ("none", *settings.policies):
                patternfluid.predict_pattern_policy(policy, jobs, grid, schedule, horizon_ms=horizon_ms)
    return 60 * samples / (time.perf_counter() - started)


def random_job(rng: random.Random, iteration_ms: float, phases: int) -> JobPattern:
    """``phases`` phases at random starts, each 0.1-1.5 ms on a 25 Gbit/s link (2 workers)."""
    return JobPattern(iteration_ms, tuple(Phase(rng.uniform(0, iteration_ms - 2), rng.randint(160_000, 2_400_000))
                                          for _ in range(phases)), 2)


def median_us(fn, repeats: int = 31) -> float:
    """Median µs of one call, over blocks of calls that take at least 2 ms."""
    fn()
    calls = 1
    while True:
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - t >= 2e-3:
            break
        calls *= 2
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("--workers", type=int, default=2, help="processes for the sweep")
    parser.add_argument("--samples", type=int, default=3000, help="combinations per number of jobs")
    parser.add_argument("--reference-samples", type=int, default=10, help="2-job combinations for the reference")
    parser.add_argument("--phases", type=int, default=64, help="phases per job for the feasibility figure")
    args = parser.parse_args()
    if min(args.workers, args.samples, args.reference_samples, args.phases) < 1:
        print("bench/profilesweep.py: --workers, --samples, --reference-samples and --phases must be at least 1",
              file=sys.stderr)
        return 2
    profilesweep.evaluate(profilesweep.ProfileSweep(), 2, 0)  # loads (or compiles) the compiled model
    by_jobs = {}
    for n in JOBS:
        by_jobs[str(n)] = round(sweep_per_min(n, args.samples, args.workers))
        print(f"sweep --profiles, {n} jobs: {by_jobs[str(n)]:,} combinations a minute on {args.workers} processes",
              file=sys.stderr)
    reference = reference_per_min(args.reference_samples)
    print(f"reference (pure Python, 1 process), 2 jobs: {reference:,.0f} combinations a minute", file=sys.stderr)
    rng = random.Random(2026)
    first, second = random_job(rng, 1000.0, args.phases), random_job(rng, 1500.0, args.phases)
    p1, p2 = as_pattern(first, 25_000, 1.0), as_pattern(second, 25_000, 1.0)
    feasibility = {"separable_us": round(median_us(lambda: separable(p1, p2)), 1),
                   "from_phases_us": round(median_us(lambda: separable(as_pattern(first, 25_000, 1.0),
                                                                       as_pattern(second, 25_000, 1.0))), 1),
                   "arcs": [len(p1.arcs), len(p2.arcs)], "separable": separable(p1, p2)}
    print(f"feasibility of two {args.phases}-phase jobs ({feasibility['arcs']} arcs): separable "
          f"{feasibility['separable_us']} µs, from the phases {feasibility['from_phases_us']} µs", file=sys.stderr)
    result = {
        "combos_per_min": by_jobs,
        "goal_per_min": GOAL_PER_MIN,
        "goal_per_min_met": {n: v >= GOAL_PER_MIN for n, v in by_jobs.items()},
        "reference_combos_per_min": round(reference, 1),
        "speedup_vs_reference": round(by_jobs["2"] / args.workers / reference, 1),
        "feasibility_us": feasibility,
        "feasibility_goal_us": GOAL_US,
        "feasibility_goal_met": feasibility["separable_us"] <= GOAL_US,
        "phases": args.phases,
        "workers": args.workers,
        "samples": args.samples,
        "counting": "combinations per minute of wall clock, all processes together, warm-up excluded; "
                    "speedup per process",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{platform.system()} {platform.release()}, {platform.machine()}, Python "
                   f"{platform.python_version()}, NumPy {np.__version__}, {os.cpu_count()} CPUs",
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
