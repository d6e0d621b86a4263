"""Many grid schedules of three or more jobs in one compiled call, for the map's chunks.

What :func:`controller.theory.schedule.compute_schedule` gives jobs on one shared link (every pair weighing
1, its defaults, the exact method): the same kernels (``fastschedule``) called in the same order with the
same inputs as ``compute_schedule`` → ``_solve`` → ``_Problem`` (the pair tables, the scaled rates, the
greedy dive as the first incumbent, the branch and bound, the overlap), without the Python around each
instance. An instance this does not take is left to ``compute_schedule`` (``done`` False): one whose
totals need Python integers, one too large for the exact method, one whose search runs past its budget
of nodes (``compute_schedule`` then turns to its heuristic's random restarts), one off the grid's bounds.
``tests/unit/test_manyschedule.py`` holds the shifts and overlaps to ``compute_schedule``'s.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from controller.theory import fastschedule
from controller.theory.schedule import (
    _INT64_TOTAL_LIMIT,
    _PAIR_CLOSURE_LIMIT,
    DEFAULT_MAX_NODES,
    MAX_EXACT_JOBS,
    MAX_PERIOD_QUANTA,
)


def exact_schedules(periods: np.ndarray, comms: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's shifts (quanta) and overlapped quanta per hyper-period, and whether it was computed here,
    for rows of periods and bursts in quanta (``compute_schedule`` of the jobs on the grid, every pair 1)."""
    periods, comms = np.ascontiguousarray(periods, np.int64), np.ascontiguousarray(comms, np.int64)
    if periods.shape[1] > MAX_EXACT_JOBS:
        return np.zeros(periods.shape, np.int64), np.zeros(len(periods), np.int64), np.zeros(len(periods), np.bool_)
    return _exact_schedules(periods, comms, DEFAULT_MAX_NODES, _PAIR_CLOSURE_LIMIT, _INT64_TOTAL_LIMIT,
                            MAX_PERIOD_QUANTA)


@numba.njit(cache=True)
def _exact_schedules(periods, comms, max_nodes, pair_limit, total_limit, max_period):
    rows, n = periods.shape
    shifts = np.zeros((rows, n), np.int64)
    overlap = np.zeros(rows, np.int64)
    done = np.zeros(rows, np.bool_)
    weights = np.ones((n, n), np.int64)
    for r in range(rows):
        t, c = periods[r].copy(), comms[r].copy()
        if not ((c >= 1).all() and (c < t).all() and t.max() <= max_period):
            continue  # compute_schedule's refusal, or its heuristic
        tables, start, g, lcm, top, active, residue = fastschedule.pair_tables(t, c, weights)
        factor = np.zeros((n, n), np.int64)
        if not _factors(lcm, top, active, factor, total_limit):
            continue  # totals in Python integers
        rates, pair_min = np.zeros(2 * int(g.ravel()[active.ravel()].sum()), np.int64), np.zeros((n, n), np.int64)
        offset = fastschedule.scaled_rates(tables, start, g, active, factor, rates, pair_min)
        order = np.argsort(-c / t, kind="mergesort")  # _heuristic's greedy order (a stable sort)
        best = np.full(n, -1, np.int64)
        fastschedule.dive(order, best, rates, offset, g, residue, np.zeros(residue.max(), np.int64))
        nodes = fastschedule.branch_and_bound(t, c, weights, residue, rates, offset, g, pair_min, best, max_nodes,
                                              pair_limit, np.empty((n, residue.sum()), np.int64),
                                              np.zeros(n + 1, np.int64), np.empty(n, np.int64),
                                              np.empty((3, residue.max()), np.int64))
        h = _lcm_below(t, total_limit // (n * n))
        if nodes > max_nodes or h < 0:
            continue  # the heuristic's restarts; or an overlap in Python integers
        shifts[r], overlap[r] = best, fastschedule.overlap(best, t, tables, start, g, h)
        done[r] = True
    return shifts, overlap, done


@numba.njit(cache=True)
def _factors(lcm, top, active, factor, total_limit):
    """``_Problem``'s scale and factors (``scale // lcm`` of each active pair) into ``factor``; False where
    its worst total would need Python integers (it reaches ``total_limit``, or the scale does)."""
    n = len(lcm)
    scale = 1
    for i in range(n):
        for j in range(i + 1, n):
            if active[i, j]:
                step = scale // math.gcd(scale, lcm[i, j])
                if step > (total_limit - 1) // lcm[i, j]:
                    return False
                scale = step * lcm[i, j]
    worst = 0
    for i in range(n):
        for j in range(i + 1, n):
            if active[i, j]:
                factor[i, j] = scale // lcm[i, j]
                if top[i, j] > (total_limit - 1 - worst) // factor[i, j]:
                    return False
                worst += top[i, j] * factor[i, j]
    return True


@numba.njit(cache=True)
def _lcm_below(values, limit):
    """The lcm of ``values`` where it is below ``limit``, else -1."""
    out = 1
    for v in values:
        step = out // math.gcd(out, v)
        if step >= (limit + v - 1) // v:
            return -1
        out = step * v
    return out
