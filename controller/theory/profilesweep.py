"""Over mixes of real models: how often do ``shift``, ``gate``, ``priority`` help for their real patterns,
beside the same jobs as one rectangle each? (``shiftbed sweep --profiles``)

Sampling model. Each combination of N jobs draws, per job and uniformly, a model profile
(``profiles.py``: DDP's gradient buckets, DLRM's all-to-all, a pipeline stage's sends), a worker count
and a DDP bucket cap from the lists given; every job's links run at one rate (the real cluster's,
``link_mbps``) and its gradients are ``dtype``. Its iteration and phases are the profile's
(``profiles.profile_pattern``, the first bucket 1 MiB as DDP's default). The same job as **one
rectangle** sends the same bytes (its phases' link time added up) in one burst at the start of the same
iteration, and then computes (``PatternFluidJob.rectangle``).

Per combination and form (patterns, rectangles): the shifts that collide least on the jobs' busy quanta
(``patternschedule.pattern_schedule``: exact, or the best found), whether they keep every pair apart for
ever (``feasible``), and the fluid model of pattern jobs (``patternfluid``, compiled: ``fastpatterns``)
under ``none`` and each policy
over ``horizon_periods`` periods of the longest job after two of warm-up (profile iterations are
real-valued, so the jobs' relative phases never cycle exactly). A policy's gain is its normalised
throughput over ``none``'s, minus 1, classed as in the one-burst sweep (``sweep.two_sided``: helps above
the threshold, hurts below minus it, with 95 % Wilson intervals).

A combination depends only on ``(seed, N, its index)``, so chunks give the same answer on any number of
processes (``chunks.run_chunks``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from controller.theory import fastpatterns, patternfluid, profiles
from controller.theory.arcs import Pattern
from controller.theory.chunks import run_chunks, sample_ranges, without_cycle_collector
from controller.theory.fluid import MIN_HORIZON_ITERATIONS
from controller.theory.patternschedule import pattern_schedule
from controller.theory.phases import as_pattern, busy_total_ms
from controller.theory.schedule import comm_quanta, period_quanta
from controller.theory.sweep import HELPS_THRESHOLD, two_sided
from controller.theory.tally import wilson_interval
from controller.theory.unsimulated import Unsimulated
from controller.theory.zoo import DEFAULT_MODEL_LINK_MBPS

FORMS = ("patterns", "rectangles")
DEFAULT_POLICIES = ("shift", "gate", "priority")
DEFAULT_WORKERS = (4, 8, 16)  # the pipeline template needs three stages or more
DEFAULT_BUCKET_CAPS_MB = (25.0,)  # DDP's default


@dataclass(frozen=True)
class ProfileSweep:
    """What to draw and how to judge it."""

    models: tuple[str, ...] = ()  # empty: every profile
    workers: tuple[int, ...] = DEFAULT_WORKERS
    bucket_caps_mb: tuple[float, ...] = DEFAULT_BUCKET_CAPS_MB
    link_mbps: float = DEFAULT_MODEL_LINK_MBPS
    dtype: str = "fp32"
    jobs: tuple[int, ...] = (2, 3, 4)
    samples: int = 200  # per number of jobs
    seed: int = 0
    quantum_ms: float = 1.0
    policies: tuple[str, ...] = DEFAULT_POLICIES
    horizon_periods: int = MIN_HORIZON_ITERATIONS
    threshold: float = HELPS_THRESHOLD

    def __post_init__(self):
        object.__setattr__(self, "models", tuple(self.models) or tuple(profiles.profile_names()))


@dataclass
class ProfileRow:
    """One combination: its jobs, and per form whether a schedule keeps them apart and each policy's gain."""

    n_jobs: int
    jobs: list[tuple[str, int, float]]
    feasible: dict[str, bool] = field(default_factory=dict)
    gains: dict[str, dict[str, float]] = field(default_factory=dict)  # form -> policy -> gain (nan: unsimulated)


@cache
def job_pattern(model: str, workers: int, cap_mb: float, link_mbps: float, dtype: str):
    """One drawn job's iteration (cached: a sweep draws the same few hundred again and again)."""
    return profiles.profile_pattern(model, workers, bucket_cap_mb=cap_mb, dtype=dtype, link_mbps=link_mbps)


def draw_mix(settings: ProfileSweep, n_jobs: int, sample: int) -> list[tuple[str, int, float]]:
    """Combination ``sample`` of ``n_jobs`` jobs: (model, workers, bucket cap) each."""
    rng = np.random.default_rng((settings.seed, n_jobs, sample))
    return [(settings.models[rng.integers(len(settings.models))], int(rng.choice(settings.workers)),
             float(rng.choice(settings.bucket_caps_mb))) for _ in range(n_jobs)]


def forms(settings: ProfileSweep, mix: Sequence[tuple[str, int, float]]) -> dict[str, tuple[list, list]]:
    """Each form's jobs as the model runs them and on the grid: the patterns, and one rectangle each."""
    built = [job_forms(f"j{k}", m, w, cap, settings.link_mbps, settings.dtype, settings.quantum_ms)
             for k, (m, w, cap) in enumerate(mix)]
    return {form: ([b[k][0] for b in built], [b[k][1] for b in built]) for k, form in enumerate(FORMS)}


@cache
def job_forms(name: str, model: str, workers: int, cap_mb: float, link_mbps: float, dtype: str, quantum_ms: float):
    """One drawn job in both forms, ``(job, on-grid pattern)`` each (cached, as :func:`job_pattern`)."""
    found = job_pattern(model, workers, cap_mb, link_mbps, dtype)
    rectangle = patternfluid.PatternFluidJob.rectangle(name, found.iteration_ms, busy_total_ms(found, link_mbps))
    period_q = max(2, period_quanta(rectangle.period_ms, quantum_ms))
    return ((patternfluid.PatternFluidJob.from_pattern(name, found, link_mbps), as_pattern(found, link_mbps, quantum_ms)),
            (rectangle, Pattern.rectangle(period_q, min(comm_quanta(rectangle.comm_ms, quantum_ms), period_q - 1))))


def evaluate(settings: ProfileSweep, n_jobs: int, sample: int) -> ProfileRow:
    """One combination, both forms."""
    mix = draw_mix(settings, n_jobs, sample)
    row = ProfileRow(n_jobs, mix)
    for form, (jobs, grid) in forms(settings, mix).items():
        found = pattern_schedule(grid)
        schedule = patternfluid.pattern_schedule_record([j.name for j in jobs], grid, found.shifts_q,
                                                        settings.quantum_ms, found.feasible)
        horizon_ms = settings.horizon_periods * max(j.period_ms for j in jobs)
        prepared = fastpatterns.prepare(jobs)
        thr = {}
        for policy in ("none", *settings.policies):
            try:
                thr[policy] = patternfluid.pattern_throughput(policy, jobs, grid, schedule, horizon_ms=horizon_ms,
                                                              prepared=prepared)
            except Unsimulated:
                thr[policy] = math.nan
        row.feasible[form] = found.feasible
        row.gains[form] = {p: thr[p] / thr["none"] - 1 for p in settings.policies}
    return row


def _chunk(task) -> list[ProfileRow]:
    settings, n_jobs, start, stop = task
    with without_cycle_collector():
        return [evaluate(settings, n_jobs, k) for k in range(start, stop)]


def run(settings: ProfileSweep, workers: int = 1, progress: bool = False, chunk: int = 25,
        scheduler_address: str | None = None) -> list[ProfileRow]:
    """Every combination, in a deterministic order, on ``workers`` processes."""
    tasks = [(settings, n, a, b) for n in settings.jobs for a, b in sample_ranges(settings.samples, chunk)]
    rows: list[ProfileRow] = []
    for part in run_chunks(_chunk, tasks, workers, "sweep --profiles", progress, [b - a for _, _, a, b in tasks],
                           scheduler_address):
        rows.extend(part)
    return rows


def summarise(rows: list[ProfileRow], threshold: float) -> dict:
    """Per form: the feasible fraction and each policy two-sided, with 95 % Wilson intervals; the same per
    number of jobs; and how often the two forms disagree."""

    def fractions(sel: list[ProfileRow]) -> dict:
        n = len(sel)
        out = {"combinations": n}
        for form in FORMS:
            feasible = sum(r.feasible[form] for r in sel)
            policies = {}
            for p in dict.fromkeys(k for r in sel for k in r.gains[form]):
                gains = [r.gains[form][p] for r in sel if math.isfinite(r.gains[form][p])]
                policies[p] = {**two_sided(gains, threshold), "unsimulated": n - len(gains)}
            out[form] = {"feasible_fraction": feasible / n if n else math.nan,
                         "feasible_ci95": [round(x, 4) for x in wilson_interval(feasible, n)],
                         "policies": policies}
        shift_differs = sum((r.gains["patterns"].get("shift", 0) > threshold)
                            != (r.gains["rectangles"].get("shift", 0) > threshold) for r in sel)
        out["feasibility_differs_fraction"] = (sum(r.feasible["patterns"] != r.feasible["rectangles"] for r in sel) / n
                                               if n else math.nan)
        out["shift_verdict_differs_fraction"] = shift_differs / n if n else math.nan
        return out

    return {**fractions(rows), "by_jobs": {str(n): fractions([r for r in rows if r.n_jobs == n])
                                           for n in sorted({r.n_jobs for r in rows})}}
