"""Over many random job combinations, how often does a static shift help? (``shiftbed sweep``)

Sampling model (one combination): each of N jobs gets a period drawn uniformly
from the integers in [LO, HI] ms and a communication fraction uniform in
[lo, hi]. At each quantum Q the period is rounded to the nearest multiple of Q
(at least two quanta, so a burst and a gap fit; this only matters for zoo
jobs at coarse quanta) and ``comm_ms = fraction × period`` rounded up to Q
(capped at one quantum below the period). With ``--zoo`` each job is instead a random zoo
model with 2, 4 or 8 workers on ``--zoo-link-mbps`` links (``controller/theory/zoo.py``).
The same raw combinations are evaluated at every quantum (a paired design).

Per combination: the exact schedule (``controller.theory.schedule``; the heuristic if
the instance is beyond it) and the fluid model (``controller.theory.fluid``) under
``none`` and ``shift``. ``shift_helps``: the best static shift raises the
normalised throughput (mean over jobs of solo period / realised iteration time)
by more than 1 % over ``none``. ``--policy P`` (a built-in or one registered by
``--policy-file``) also simulates ``P`` and reports ``policy_helps`` by the same
rule (columns ``throughput_policy``, ``policy_gain``, ``policy_helps``; with the
default ``P = shift`` they repeat the shift columns).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from controller.theory import fluid, zoo
from controller.theory.policies import load_from_environment
from controller.theory.schedule import JobTiming, comm_quanta, compute_schedule, period_quanta

HELPS_THRESHOLD = 0.01
ZOO_WORKERS = (2, 4, 8)
HELP = (
    "sample random job combinations and report how often a zero-overlap schedule exists "
    "(feasible_fraction) and how often shift helps (shift_helps_fraction). shift_helps: in the "
    "fluid model, the optimal static shift raises the normalised throughput (mean over jobs of "
    "solo period / realised iteration time) by more than 1 % over `none` (all first bursts at t=0)."
)


@dataclass(frozen=True)
class Combination:
    """One evaluated combination: a row of the CSV."""

    n_jobs: int
    quantum_ms: float
    sample: int
    periods_ms: str
    comms_ms: str
    hyperperiod_ms: float
    feasible: bool
    method: str
    overlap_fraction: float
    throughput_none: float
    throughput_shift: float
    shift_gain: float
    shift_helps: bool
    policy: str = "shift"
    throughput_policy: float = math.nan
    policy_gain: float = math.nan
    policy_helps: bool = False


# ---------------------------------------------------------------- sampling and evaluation


def sample_raw(seed: int, n_jobs: int, sample: int, period_range: tuple[int, int],
               frac_range: tuple[float, float], use_zoo: bool, zoo_link_mbps: float) -> list[tuple[float, float]]:
    """Raw (period_ms, comm fraction) of one combination; deterministic in (seed, n, sample)."""
    rng = np.random.default_rng([seed, n_jobs, sample])
    if use_zoo:
        names = sorted(zoo.models())
        out = []
        for _ in range(n_jobs):
            t = zoo.job_timing(names[rng.integers(len(names))], int(rng.choice(ZOO_WORKERS)), zoo_link_mbps)
            out.append((t.period_ms, t.comm_ms / t.period_ms))
        return out
    lo, hi = period_range
    return [(float(rng.integers(lo, hi + 1)), float(rng.uniform(*frac_range))) for _ in range(n_jobs)]


def on_grid(raw: list[tuple[float, float]], quantum_ms: float) -> list[JobTiming]:
    """The sampling model's rounding: period to nearest, comm up, comm below the period."""
    jobs = []
    for i, (period_ms, frac) in enumerate(raw):
        t = max(2, period_quanta(period_ms, quantum_ms))  # room for a burst and a gap
        c = min(comm_quanta(frac * t * quantum_ms, quantum_ms), t - 1)
        jobs.append(JobTiming(f"j{i}", t * quantum_ms, c * quantum_ms))
    return jobs


def evaluate(jobs: list[JobTiming], quantum_ms: float, iterations: int = 40, policy: str = "shift") -> dict:
    """Schedule + fluid model for one on-grid combination (``none``, ``shift`` and ``policy``)."""
    schedule = compute_schedule(jobs, quantum_ms)
    results = fluid.compare_policies(schedule, tuple(dict.fromkeys(("none", "shift", policy))), iterations=iterations)
    none, shift = results["none"].normalised_throughput, results["shift"].normalised_throughput
    other = results[policy].normalised_throughput
    gain, other_gain = shift / none - 1, other / none - 1
    return {"hyperperiod_ms": schedule.hyperperiod_ms, "feasible": schedule.feasible, "method": schedule.method,
            "overlap_fraction": schedule.overlap_fraction, "throughput_none": none,
            "throughput_shift": shift, "shift_gain": gain, "shift_helps": gain > HELPS_THRESHOLD,
            "policy": policy, "throughput_policy": other, "policy_gain": other_gain,
            "policy_helps": other_gain > HELPS_THRESHOLD}


def _task(args) -> list[Combination]:
    settings, n, sample = args
    load_from_environment()  # a worker process knows the --policy-file policies too (no-op if loaded)
    raw = sample_raw(settings["seed"], n, sample, settings["period_range"], settings["frac_range"],
                     settings["zoo"], settings["zoo_link_mbps"])
    rows = []
    for q in settings["quanta"]:
        jobs = on_grid(raw, q)
        r = evaluate(jobs, q, settings["iterations"], settings.get("policy", "shift"))
        rows.append(Combination(n, q, sample, ";".join(f"{j.period_ms:g}" for j in jobs),
                                ";".join(f"{j.comm_ms:g}" for j in jobs), **r))
    return rows


def run_sweep(settings: dict, workers: int = 1, progress: bool = False) -> list[Combination]:
    """Every combination of the settings (keys: seed, jobs, samples, period_range, frac_range,
    quanta, zoo, zoo_link_mbps, iterations), in a deterministic order."""
    tasks = [(settings, n, k) for n in settings["jobs"] for k in range(settings["samples"])]
    rows: list[Combination] = []

    def results() -> Iterator[list[Combination]]:
        if workers <= 1:
            yield from map(_task, tasks)
        else:
            with ProcessPoolExecutor(workers) as pool:
                yield from pool.map(_task, tasks, chunksize=max(1, len(tasks) // (workers * 20)))

    for done, chunk in enumerate(results(), 1):
        rows.extend(chunk)
        if progress and (done % max(1, len(tasks) // 100) == 0 or done == len(tasks)):
            bar = "#" * (30 * done // len(tasks))
            print(f"\rsweep [{bar:<30}] {done}/{len(tasks)} combinations", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return rows


def summarise(rows: list[Combination]) -> dict:
    """Overall fractions and the same broken down by number of jobs, quantum, and both."""

    def fractions(sel: list[Combination]) -> dict:
        n = len(sel)
        return {"combinations": n,
                "feasible_fraction": sum(r.feasible for r in sel) / n if n else math.nan,
                "shift_helps_fraction": sum(r.shift_helps for r in sel) / n if n else math.nan,
                "policy_helps_fraction": sum(r.policy_helps for r in sel) / n if n else math.nan,
                "heuristic_fraction": sum(r.method == "heuristic" for r in sel) / n if n else math.nan}

    jobs = sorted({r.n_jobs for r in rows})
    quanta = sorted({r.quantum_ms for r in rows})
    return {
        **fractions(rows),
        "by_jobs": {str(n): fractions([r for r in rows if r.n_jobs == n]) for n in jobs},
        "by_quantum_ms": {f"{q:g}": fractions([r for r in rows if r.quantum_ms == q]) for q in quanta},
        "by_jobs_and_quantum": [{"n_jobs": n, "quantum_ms": q,
                                 **fractions([r for r in rows if r.n_jobs == n and r.quantum_ms == q])}
                                for n in jobs for q in quanta],
    }
