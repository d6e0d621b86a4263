"""Jobs given by their busy arcs (pattern jobs) as the scheduler and the gate see them: on the grid,
scheduled exactly, and their windows.

A pattern job (``phases.JobPattern``) is registered with the scheduler by its busy arcs in ms from its
iteration's origin (``phases.as_pattern`` on the run's grid, times the quantum). Here they become an
``arcs.Pattern`` on the scheduler's grid (:func:`busy_pattern`), a set of jobs gets the shifts that
collide least (``patternschedule.pattern_schedule``) as a ``schedule.Schedule`` (:func:`pattern_set_schedule`),
and the gate opens one window per busy arc of the shifted pattern (:func:`window_arcs`). A classic job
is the one arc ``(0, comm)``. The run's record of the schedule and the controller's are the same
function's, so they agree to the quantum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from controller.theory.arcs import Pattern
from controller.theory.patternschedule import pattern_schedule
from controller.theory.schedule import JobTiming, Schedule, comm_quanta, period_quanta

EPS = 1e-9


def busy_pattern(period_ms: float, busy_ms: Sequence[tuple[float, float]] | None, comm_ms: float,
                 quantum_ms: float) -> Pattern:
    """A job's busy quanta on a grid of ``quantum_ms``: its period to the nearest quantum, each arc
    ``(start_ms, length_ms)`` covered by whole quanta (start down, end up), an arc past the period
    wrapped to its start; without arcs, one burst of ``comm_ms`` (rounded up) at 0. ValueError where the
    arcs cover the whole period on this grid (the job would never leave the link idle)."""
    period_q = period_quanta(period_ms, quantum_ms)
    if not busy_ms:
        return Pattern.rectangle(period_q, min(comm_quanta(comm_ms, quantum_ms), period_q))
    busy = []
    for start_ms, length_ms in busy_ms:
        start_q = math.floor(start_ms / quantum_ms + EPS)
        length_q = max(1, math.ceil((start_ms + length_ms) / quantum_ms - EPS) - start_q)
        if length_q >= period_q:
            raise ValueError(f"a busy arc of {length_ms:g} ms covers the whole period on the {quantum_ms:g} ms grid")
        start_q %= period_q
        head = min(length_q, period_q - start_q)
        busy.append((start_q, head))
        if length_q > head:
            busy.append((0, length_q - head))
    pattern = Pattern(period_q, tuple(busy))
    if pattern.busy_q >= period_q:
        raise ValueError(f"its busy arcs cover the whole period ({period_q * quantum_ms:g} ms) on the "
                         f"{quantum_ms:g} ms grid")
    return pattern


def window_arcs(pattern: Pattern) -> tuple[tuple[int, int], ...]:
    """The pattern's busy arcs as windows, ``(start_q, length_q)`` from the job's shift: an arc that ends
    at the period and one that starts at 0 are one window through the period's end (no edge between)."""
    found = list(pattern.arcs)
    if len(found) > 1 and found[0][0] == 0 and found[-1][0] + found[-1][1] == pattern.period_q:
        head = found.pop(0)
        last = found.pop()
        found.append((last[0], last[1] + head[1]))
    return tuple(found)


def pattern_set_schedule(names: Sequence[str], patterns: Sequence[Pattern], quantum_ms: float,
                         pair_weights: dict[frozenset[str], int] | None = None,
                         max_nodes: int | None = None) -> Schedule:
    """The shifts (of each job's origin) that collide least, exactly unless the node budget runs out,
    as a ``Schedule``: each job on the grid with its busy quanta as ``comm_ms``, the weighted overlap per
    hyper-period. ``pair_weights`` by job name (pairs not listed weigh 0; None: every pair 1)."""
    index = {name: i for i, name in enumerate(names)}
    weights = None if pair_weights is None else {frozenset(index[n] for n in pair): w
                                                 for pair, w in pair_weights.items()}
    found = pattern_schedule(patterns, weights) if max_nodes is None else pattern_schedule(patterns, weights, max_nodes)
    hyper_q = math.lcm(*(p.period_q for p in patterns))
    jobs = tuple(JobTiming(name, p.period_q * quantum_ms, p.busy_q * quantum_ms)
                 for name, p in zip(names, patterns, strict=True))
    return Schedule(jobs=jobs, quantum_ms=quantum_ms,
                    shifts_ms={name: s * quantum_ms for name, s in zip(names, found.shifts_q, strict=True)},
                    hyperperiod_ms=hyper_q * quantum_ms, feasible=found.feasible,
                    overlap_ms=float(found.overlap_rate * hyper_q) * quantum_ms,
                    method="exact" if found.exact else "best found", gap=None, nodes=found.nodes,
                    pair_weights=pair_weights)
