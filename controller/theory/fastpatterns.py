"""The fluid model of pattern jobs compiled: the event loop of
:func:`controller.theory.patternfluid.simulate_patterns`, for the cases ``sweep --profiles`` runs, at
machine speed (numba).

What it covers: one shared link with ``fair`` or ``priority`` sharing, free-running jobs or windows that
every iteration waits for and that are enforced (``gate``), over a horizon; the mean iteration time of
each job and the share of the measured span with two or more jobs moving data. Everything else (a
fabric's links, ``mltcp`` and ``leader`` sharing, a trace) runs in the reference. It takes the same steps
in the same order with the same tolerances as the reference, so the two agree to rounding
(``tests/unit/test_fastpatterns.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

import numba
import numpy as np

from controller.theory.fluid import WARMUP_ITERATIONS
from controller.theory.fluidjob import EPS_MS

SHARING_CODES = {"fair": 0, "priority": 1}


@numba.njit(cache=True, inline="always")
def _locate(shift, period, t):
    k = math.floor((t - shift) / period)
    r = t - shift - k * period
    if r >= period - EPS_MS:
        k, r = k + 1, r - period
    return k, r


@numba.njit(cache=True, inline="always")
def _window_end(i, t, w_shift, w_period, w_a, w_b, w_ptr):
    """End of job i's window containing t, or NaN outside every window (``PatternWindows.end_of_current``)."""
    k, r = _locate(w_shift[i], w_period[i], t)
    for m in range(w_ptr[i], w_ptr[i + 1]):
        if w_a[m] - EPS_MS <= r < w_b[m] - EPS_MS:
            return w_shift[i] + k * w_period[i] + w_b[m]
    return np.nan


@numba.njit(cache=True, inline="always")
def _window_next(i, t, w_shift, w_period, w_a, w_ptr):
    """Start of job i's first window at or after t (``PatternWindows.next_start``)."""
    k, r = _locate(w_shift[i], w_period[i], t)
    for m in range(w_ptr[i], w_ptr[i + 1]):
        if w_a[m] >= r - EPS_MS:
            return w_shift[i] + k * w_period[i] + w_a[m]
    return w_shift[i] + (k + 1) * w_period[i] + w_a[w_ptr[i]]


@numba.njit(cache=True)
def simulate(period, ready, tail, headroom, offset, ph_start, ph_busy, ph_ptr, sharing, rank,
             gated, w_shift, w_period, w_a, w_b, w_ptr, enforce, horizon_ms, warmup_ms):
    """Each job's mean iteration time (inf where it finishes fewer than two in the span) and the overlap
    share. Jobs: ``period``, ``ready``, ``tail`` (ms), ``headroom``, first start ``offset``; job i's phases
    ``ph_start/ph_busy[ph_ptr[i]:ph_ptr[i+1]]`` sorted by start; ``sharing`` 0 fair, 1 priority (``rank``:
    lower first); ``gated[i]``: job i's iterations start at its window origins, its windows
    ``[w_a, w_b)`` of ``w_ptr`` past ``w_shift + k·w_period`` (enforced when ``enforce``).

    Why one long loop: its state is a dozen per-job arrays (backlog, released phases, window origins, ...)
    that every event reads and writes; compiled, they are local arrays. Split into helpers that take them,
    it ran 5x slower (2026-12-07)."""
    n = period.size
    span0, span1 = warmup_ms, warmup_ms + horizon_ms
    longest = period.max()
    give_up = span1 + horizon_ms + 2 * longest
    phases = 0
    for i in range(n):
        phases += ph_ptr[i + 1] - ph_ptr[i] + 2
    max_events = 1000 * phases * (math.ceil(give_up / period.min()) + 3)
    order = np.argsort(rank, kind="mergesort")
    backlog = np.zeros(n)
    released = np.zeros(n, np.int64)
    running = np.zeros(n, np.bool_)
    begin_at = offset.copy()
    origin = np.zeros(n)
    done_eps = np.empty(n)
    for i in range(n):
        comm = 0.0
        for m in range(ph_ptr[i], ph_ptr[i + 1]):
            comm += ph_busy[m]
        done_eps[i] = EPS_MS * max(1.0, comm)
    n_ends = np.zeros(n, np.int64)
    last_end = np.full(n, -np.inf)
    a_idx = np.full(n, -1, np.int64)
    a_val = np.zeros(n)
    a1_val = np.zeros(n)
    b_idx = np.full(n, -1, np.int64)
    b_val = np.zeros(n)
    sending = np.zeros(n, np.bool_)
    share = np.zeros(n)
    overlap = 0.0
    t = begin_at.min()
    while t < give_up:
        going = False
        for i in range(n):
            if n_ends[i] == 0 or last_end[i] < span1:
                going = True
        if not going:
            break
        max_events -= 1
        if max_events < 0:
            raise RuntimeError("pattern fluid model made no progress")
        count = 0
        for i in range(n):
            on = backlog[i] > done_eps[i]
            if on and gated[i] and enforce:
                on = not np.isnan(_window_end(i, t, w_shift, w_period, w_a, w_b, w_ptr))
            sending[i] = on
            share[i] = 0.0
            if on:
                count += 1
        if sharing == 1:
            left = 1.0
            for k in range(n):
                i = order[k]
                if sending[i]:
                    take = min(1.0 / headroom[i], left) if left > 1e-12 else 0.0
                    share[i] = take * headroom[i]
                    left -= take
        else:
            for i in range(n):
                if sending[i]:
                    share[i] = min(1.0, headroom[i] / count)
        t_next = np.inf
        for i in range(n):
            if not running[i]:
                t_next = min(t_next, begin_at[i])
                continue
            if released[i] < ph_ptr[i + 1] - ph_ptr[i]:
                t_next = min(t_next, origin[i] + ph_start[ph_ptr[i] + released[i]])
            if sending[i] and share[i] > 0:
                t_next = min(t_next, t + backlog[i] / share[i])
            if gated[i] and enforce and backlog[i] > done_eps[i]:
                end = _window_end(i, t, w_shift, w_period, w_a, w_b, w_ptr)
                if np.isnan(end):
                    end = _window_next(i, t + EPS_MS, w_shift, w_period, w_a, w_ptr)
                t_next = min(t_next, end)
        if not np.isfinite(t_next):
            break
        dt = t_next - t
        moving = 0
        for i in range(n):
            if sending[i] and share[i] > 0:
                moving += 1
        if moving >= 2:
            overlap += max(0.0, min(t_next, span1) - max(t, span0))
        for i in range(n):
            if sending[i]:
                backlog[i] -= dt * share[i]
        t = t_next
        for i in range(n):
            if not running[i] and begin_at[i] <= t + EPS_MS:
                running[i] = True
                released[i] = 0
                origin[i] = t
            if not running[i]:
                continue
            first = ph_ptr[i]
            while released[i] < ph_ptr[i + 1] - first and origin[i] + ph_start[first + released[i]] <= t + EPS_MS:
                backlog[i] += ph_busy[first + released[i]]
                released[i] += 1
            if released[i] == ph_ptr[i + 1] - first and backlog[i] <= done_eps[i]:
                backlog[i] = 0.0
                k = n_ends[i]
                if a_idx[i] < 0 and t >= span0 - EPS_MS:
                    a_idx[i], a_val[i] = k, t
                elif a_idx[i] >= 0 and k == a_idx[i] + 1:
                    a1_val[i] = t
                if a_idx[i] >= 0 and t <= span1 + EPS_MS:
                    b_idx[i], b_val[i] = k, t
                n_ends[i] += 1
                last_end[i] = t
                nxt = max(origin[i] + ready[i], t) + tail[i]
                running[i] = False
                if gated[i]:
                    nxt = w_shift[i] + math.ceil((nxt - w_shift[i] - 1e-6) / w_period[i]) * w_period[i]
                begin_at[i] = nxt
    means = np.full(n, np.inf)
    for i in range(n):
        if a_idx[i] >= 0 and n_ends[i] - a_idx[i] >= 2:
            if b_idx[i] >= a_idx[i] + 1:
                means[i] = (b_val[i] - a_val[i]) / (b_idx[i] - a_idx[i])
            else:
                means[i] = a1_val[i] - a_val[i]
    measured = min(t, span1) - span0
    return means, overlap / measured if measured > 0 else 0.0


def prepare(jobs: Sequence) -> tuple:
    """The arrays of ``patternfluid.PatternFluidJob`` s that do not depend on the policy (a sweep runs every
    policy on the same jobs: built once)."""
    return (np.array([j.period_ms for j in jobs], float), np.array([j.ready_ms for j in jobs], float),
            np.array([j.wait_tail_ms for j in jobs], float), np.array([j.link_headroom for j in jobs], float),
            np.array([s for j in jobs for s, _ in j.phases], float),
            np.array([b for j in jobs for _, b in j.phases], float),
            np.cumsum([0] + [len(j.phases) for j in jobs]).astype(np.int64))


def run(jobs: Sequence, offsets_ms: dict[str, float], windows: dict | None, enforce: bool, sharing: str,
        priority: Sequence[str], horizon_ms: float, warmup_ms: float | None = None,
        prepared: tuple | None = None) -> tuple[np.ndarray, float]:
    """:func:`simulate` of ``patternfluid.PatternFluidJob`` s and ``PatternWindows`` (every iteration of a
    job with windows waits for one: ``gate``); ``prepared``: :func:`prepare` of ``jobs``, if made already."""
    warmup_ms = WARMUP_ITERATIONS * max(j.period_ms for j in jobs) if warmup_ms is None else warmup_ms
    period, ready, tail, headroom, ph_start, ph_busy, ph_ptr = prepared or prepare(jobs)
    order = {name: k for k, name in enumerate(priority)}
    return simulate(period, ready, tail, headroom, np.array([offsets_ms[j.name] for j in jobs], float),
                    ph_start, ph_busy, ph_ptr, SHARING_CODES[sharing],
                    np.array([order.get(j.name, len(order) + k) for k, j in enumerate(jobs)], np.int64),
                    *(_window_arrays(jobs, windows) if windows else _no_windows(len(jobs))),
                    enforce, float(horizon_ms), float(warmup_ms))


def _window_arrays(jobs: Sequence, windows: dict) -> tuple:
    """The jobs' windows as :func:`simulate` takes them."""
    arcs = [windows[j.name].arcs_ms if j.name in windows else () for j in jobs]
    flat = [x for a in arcs for x in a]
    return (np.array([j.name in windows for j in jobs], np.bool_),
            np.array([windows[j.name].shift_ms if j.name in windows else 0.0 for j in jobs], float),
            np.array([windows[j.name].period_ms if j.name in windows else 1.0 for j in jobs], float),
            np.array([a for a, _ in flat], float), np.array([b for _, b in flat], float),
            np.cumsum([0] + [len(a) for a in arcs]).astype(np.int64))


@cache
def _no_windows(n: int) -> tuple:
    """No job has windows (read only: :func:`simulate` never writes them)."""
    return (np.zeros(n, np.bool_), np.zeros(n), np.ones(n), np.zeros(0), np.zeros(0), np.zeros(n + 1, np.int64))
