"""A chunk of two-job sweep combinations evaluated as arrays, where every arm runs free on a fairly shared
link: ``none``, ``shift`` (without re-alignment), ``random`` and the sham, the default ``shiftbed sweep``.

The combinations, schedules, offsets, horizons and simulations are those of ``controller/theory/sweep.py``
(its :func:`~controller.theory.sweep.evaluate` is the reference) and of the compiled model; only the
bookkeeping differs. A chunk's grids are rounded and its pair tables read in one call per quantum, every
simulation of the chunk runs in one compiled call (``none`` once for all quanta; ``shift`` only where its
offsets are not ``none``'s), and the throughputs come back as arrays that the sweep counts without a row
per combination. The policies still draw their own offsets (``RandomPolicy`` from the chunk's drawn uniforms), so a sample's numbers are the reference's to rounding (``tests/unit/test_freechunk.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from controller.theory import fastfluid, fluid, pairschedule
from controller.theory.policies import (
    NonePolicy,
    PolicyKnobs,
    RandomPolicy,
    ShiftPolicy,
    get_policy,
)
from controller.theory.schedule import MAX_PERIOD_QUANTA, JobTiming, Schedule
from controller.theory.sweep import arms, grid_quanta, run_length, true_jobs

FREE_POLICIES = (NonePolicy, ShiftPolicy, RandomPolicy)


def applies(n_jobs: int, names: set[str], knobs: PolicyKnobs) -> bool:
    """Do these arms all run free with fair sharing (and two jobs, whose schedule is a closed form)?"""
    return n_jobs == 2 and not knobs.realign_s and all(type(get_policy(p)) in FREE_POLICIES for p in names)


@dataclass
class FreeChunk:
    """The chunk's figures, one row per sample and one column per quantum: each policy's normalised
    throughput, the sham's two arms, and what the summary counts of the schedules."""

    samples: list[int]
    quanta: list[float]
    throughput: dict[str, np.ndarray]  # none, shift, each policy, sham_base, sham: (samples, quanta)
    feasible: np.ndarray
    heuristic: np.ndarray
    schedules: list[list[Schedule]]  # [sample][quantum]
    grids: list[list[list[JobTiming]]]  # [sample][quantum]


def evaluate_chunk(raws: list[list[tuple[float, float]]], samples: list[int], quanta: list[float],
                   policies: tuple[str, ...], uniforms: list[np.ndarray], iterations: int | None,
                   horizon_ms: float | None) -> FreeChunk:
    """Every arm of ``sweep.arms`` for each sample's raw jobs ``raws[k]`` at every quantum;
    ``uniforms[k]``: its random-offset arms' draws, as :func:`sweep.evaluate` gets them."""
    periods = np.array([[p for p, _ in raw] for raw in raws])
    fracs = np.array([[f for _, f in raw] for raw in raws])
    jobs = [true_jobs(raw) for raw in raws]
    true_period = np.array([[j.period_ms for j in js] for js in jobs])
    comm = np.array([[j.comm_ms for j in js] for js in jobs])
    headroom = np.array([[j.link_headroom for j in js] for js in jobs])
    horizon = np.array([run_length(js, iterations, horizon_ms).get("horizon_ms", 0.0) for js in jobs])
    names = tuple(dict.fromkeys(("none", "shift", *policies)))
    pols = {p: get_policy(p) for p in (*names, "random")}
    rows, cols = len(raws), len(quanta)
    schedules = [[None] * cols for _ in range(rows)]
    grids = [[None] * cols for _ in range(rows)]
    feasible = np.zeros((rows, cols), np.bool_)
    heuristic = np.zeros((rows, cols), np.bool_)
    offsets = {arm: np.zeros((rows, cols, 2)) for arm in (*names, "sham_base", "sham")}
    for c, q in enumerate(quanta):
        t, k = grid_quanta(periods, fracs, q)
        d, overlap = pairschedule.two_job_tables_min(t[:, 0], k[:, 0], t[:, 1], k[:, 1])
        for r in range(rows):
            grid = [JobTiming("j0", int(t[r, 0]) * q, int(k[r, 0]) * q), JobTiming("j1", int(t[r, 1]) * q,
                                                                                   int(k[r, 1]) * q)]
            if t[r].max() <= MAX_PERIOD_QUANTA:  # on the grid 1 <= comm < period: pairschedule.in_closed_form
                schedule = pairschedule.pair_schedule(grid, q, d[r], overlap[r])
            else:
                schedule = pairschedule.compute_schedule_fast(grid, q)
            schedules[r][c], grids[r][c] = schedule, grid
            feasible[r, c], heuristic[r, c] = schedule.feasible, schedule.method == "heuristic"
            for arm, policy, seed in arms(policies, uniforms[r], 2):
                pol = pols[policy]
                drawn = pol.initial_offsets_ms(schedule, seed if type(pol) is RandomPolicy else None)
                offsets[arm][r, c] = drawn["j0"], drawn["j1"]
    throughput = _simulate(offsets, true_period, comm, headroom, horizon, iterations)
    return FreeChunk(samples, list(quanta), throughput, feasible, heuristic, schedules, grids)


def _simulate(offsets: dict[str, np.ndarray], period: np.ndarray, comm: np.ndarray, headroom: np.ndarray,
              horizon: np.ndarray, iterations: int | None) -> dict[str, np.ndarray]:
    """Each arm's normalised throughput, (samples, quanta): every distinct simulation once."""
    rows, cols = next(iter(offsets.values())).shape[:2]
    none_free = not offsets["none"].any()  # `none` starts every job at 0, whatever the quantum
    runs: list[tuple[str, np.ndarray]] = []  # (arm, mask of the (sample, quantum) cells it simulates)
    for arm, off in offsets.items():
        if arm == "none" and none_free:
            mask = np.zeros((rows, cols), np.bool_)
            mask[:, 0] = True
        elif arm != "none" and none_free:
            mask = off.any(axis=2)  # where every offset is 0 the run is `none`'s
        else:
            mask = np.ones((rows, cols), np.bool_)
        runs.append((arm, mask))
    picks = [(arm, np.nonzero(mask)) for arm, mask in runs]
    index_r = np.concatenate([r for _, (r, _) in picks])
    offset = np.concatenate([offsets[arm][r, c] for arm, (r, c) in picks]).reshape(-1, 2)
    means = simulate_free_many(period[index_r], comm[index_r], headroom[index_r], offset, horizon[index_r],
                               iterations or 0, 2, float(fluid.WARMUP_ITERATIONS))
    if np.isnan(means).any():
        raise RuntimeError("fluid model made no progress (window or time values out of range)")
    thr = (period[index_r] / means).sum(axis=1) / 2
    out, start = {}, 0
    none = None
    for arm, (r, c) in picks:
        values = np.full((rows, cols), np.nan)
        values[r, c] = thr[start:start + len(r)]
        start += len(r)
        if arm == "none" and none_free:
            values[:] = values[:, :1]
            none = values
        elif none_free:
            values = np.where(np.isnan(values), none, values)
        out[arm] = values
    return out


@numba.njit(cache=True)
def simulate_free_many(period, comm, headroom, offset, horizon_ms, iterations, warmup, warmup_periods):
    """:func:`fastfluid.simulate_free_fair` of every row, the span after ``warmup_periods`` of the longest
    job (``horizon_ms[k] <= 0``: ``iterations`` each)."""
    out = np.empty(period.shape)
    for k in range(period.shape[0]):
        out[k] = fastfluid.simulate_free_fair(period[k], comm[k], headroom[k], offset[k], horizon_ms[k],
                                              warmup_periods * period[k].max(), iterations, warmup)
    return out


def gains(chunk: FreeChunk, policies: tuple[str, ...]) -> dict[str, np.ndarray]:
    """``gain_<p>`` of every policy after ``none`` (as :func:`sweep.combine`), and ``sham``."""
    thr = chunk.throughput
    names = tuple(dict.fromkeys(("none", "shift", *policies)))
    out = {p: thr[p] / thr["none"] - 1 for p in names[1:]}
    out["sham"] = thr["sham"] / thr["sham_base"] - 1
    return out


def throughputs_of(chunk: FreeChunk, r: int, c: int) -> dict[str, float]:
    """One combination's arms, as :func:`sweep.combine` takes them."""
    return {arm: float(values[r, c]) for arm, values in chunk.throughput.items()}

