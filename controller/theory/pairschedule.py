"""Two jobs' schedule in closed form, compiled: the reference's (:func:`controller.theory.schedule._two_jobs`),
the first minimum of the pair's overlap table, computed in a loop instead of with NumPy, one pair at a time or
an array of pairs at once (the sweep's chunks). ``tests/unit/test_fastfluid.py`` checks it against
:func:`~controller.theory.schedule.compute_schedule` on thousands of pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numba
import numpy as np

from controller.theory.schedule import (
    MAX_PERIOD_QUANTA,
    JobTiming,
    Schedule,
    compute_schedule,
    to_quanta,
)


@numba.njit(cache=True)
def two_job_table_min(t1, c1, t2, c2):
    """(d, overlap): the first minimum of :func:`schedule.pair_overlap_table`, in quanta."""
    g = math.gcd(t1, t2)
    table = np.zeros(g, np.int64)
    for delta in range(-c2 + 1, c1):
        table[delta % g] += min(c1, delta + c2) - max(0, delta)
    d = 0
    for k in range(1, g):
        if table[k] < table[d]:
            d = k
    return d, table[d]


@numba.njit(cache=True)
def two_job_tables_min(t1, c1, t2, c2):
    """:func:`two_job_table_min` of every row: the arrays (d, overlap)."""
    d, overlap = np.empty(len(t1), np.int64), np.empty(len(t1), np.int64)
    for k in range(len(t1)):
        d[k], overlap[k] = two_job_table_min(t1[k], c1[k], t2[k], c2[k])
    return d, overlap


def compute_schedule_fast(timings: Sequence[JobTiming], quantum_ms: float) -> Schedule:
    """:func:`compute_schedule` with its defaults; two jobs in closed form here, more by the reference."""
    if not in_closed_form(timings, quantum_ms):
        return compute_schedule(timings, quantum_ms)  # more jobs, its error, or its heuristic
    t1, c1, t2, c2 = _pair_quanta(timings, quantum_ms)
    return pair_schedule(timings, quantum_ms, *two_job_table_min(t1, c1, t2, c2))


def in_closed_form(timings: Sequence[JobTiming], quantum_ms: float) -> bool:
    """Is this the two-job case :func:`compute_schedule` solves by the pair's table (on the grid, each
    burst shorter than its period, periods within :data:`MAX_PERIOD_QUANTA`)?"""
    if len(timings) != 2:
        return False
    t1, c1, t2, c2 = _pair_quanta(timings, quantum_ms)
    return 1 <= c1 < t1 and 1 <= c2 < t2 and max(t1, t2) <= MAX_PERIOD_QUANTA


def _pair_quanta(timings, quantum_ms):
    a, b = timings
    return (to_quanta(a.period_ms, quantum_ms), to_quanta(a.comm_ms, quantum_ms),
            to_quanta(b.period_ms, quantum_ms), to_quanta(b.comm_ms, quantum_ms))


def pair_schedule(timings: Sequence[JobTiming], quantum_ms: float, d: int, overlap: int) -> Schedule:
    """The schedule :func:`compute_schedule` gives two jobs in closed form whose table's first minimum is
    ``overlap`` at ``d`` quanta (:func:`two_job_table_min`)."""
    (a, b) = timings
    hyper = math.lcm(to_quanta(a.period_ms, quantum_ms), to_quanta(b.period_ms, quantum_ms))
    return Schedule(tuple(timings), quantum_ms, {a.name: 0 * quantum_ms, b.name: int(d) * quantum_ms},
                    hyper * quantum_ms, int(overlap) == 0, int(overlap) * quantum_ms, "exact", None,
                    int(overlap) * quantum_ms, 0, None)
