"""Two free-running jobs under weighted sharing, several simulations in flight at once.

Where two bursts share the link by weights that grow with the bytes sent (``mltcp``, ``leader``), the model
steps 1 ms at a time, and each step is a chain of dependent divisions (the weights, the shares, the progress
the next weights read): one simulation leaves the processor waiting on that chain. Here :data:`LANES`
simulations run together: each takes its events alone until its two bursts share the link, then every lane
that is stepping takes its next step in the same pass, so the processor overlaps their chains. Each lane
takes exactly the steps of :func:`controller.theory.fastfluid.simulate_means` (no windows, two jobs), in the
same order with the same arithmetic, so the numbers are the same bit for bit (``tests/unit/test_fastlanes.py``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from controller.theory import fastfluid
from controller.theory.fastfluid import _COUNT, _GAIN, _LAST, _end, _limits, _means, _no_ends
from controller.theory.fluidjob import EPS_MS

LANES = 4  # simulations in flight (written out four times in _steps_together)
# what a lane is doing: no row; events; plain steps; an event next (not a plain step); its ends and starts next
_EMPTY, _EVENTS, _STEPPING, _EVENT_FIRST, _ENDS_DUE = range(5)
_STEPPED, _REFUSED, _TOUCHED = 0, 1, 2  # a step taken; none (an event instead); taken, a burst within tolerance
_CLEAR = 1.0 + 2.0 ** -49  # a product this much smaller than another: its reciprocal is surely the larger
# a lane's moving state: each burst's remaining and sent, its time, the events it has left (a whole number)
_R0, _R1, _S0, _S1, _T, _BUDGET = range(6)
# its row's constants: the headrooms, the weights' gain, each burst's end tolerance, the give-up time (inf: none)
_H0, _H1, _GAIN_AT, _EPS0, _EPS1, _GIVE_UP = range(6)


def simulate_many(period, comm, headroom, offset, sharing, rank, windows, w_shift, w_period, w_length, realign_ms,
                  horizon_ms, iterations, warmup, warmup_periods, step_ms):
    """:func:`fastfluid.simulate_many` of every row, the rows of two free-running jobs under weighted sharing
    through :func:`simulate_weighted_pairs` (the same numbers)."""
    lanes = (windows == 0) & (sharing >= fastfluid.SHARING_CODES["mltcp"]) & (period.shape[1] == 2)
    rest = ~lanes
    out = np.empty(period.shape)
    if rest.any():
        out[rest] = fastfluid.simulate_many(period[rest], comm[rest], headroom[rest], offset[rest], sharing[rest],
                                            rank[rest], windows[rest], w_shift[rest], w_period[rest], w_length[rest],
                                            realign_ms[rest], horizon_ms[rest], iterations, warmup, warmup_periods,
                                            step_ms)
    if lanes.any():
        out[lanes] = simulate_weighted_pairs(period[lanes], comm[lanes], headroom[lanes], offset[lanes], sharing[lanes],
                                             horizon_ms[lanes], warmup_periods, iterations, warmup, step_ms)
    return out


@numba.njit(cache=True)
def simulate_weighted_pairs(period, comm, headroom, offset, sharing, horizon_ms, warmup_periods, iterations, warmup,
                            step_ms):
    """Each row's two mean iteration times (``fastfluid.simulate_means`` with no windows and ``sharing``
    ``mltcp`` or ``leader``; NaN where the model made no progress), :data:`LANES` rows at a time.

    Why one long loop: as ``simulate_means``, its state is arrays that every event reads and writes (here
    per lane, four simulations at once), kept as local arrays; split into steps, each would take most of
    them as arguments. Per lane: its row (-1: none),
    what it is doing, its moving state and row constants, which jobs send, each job's next start, the
    streamed ends (``fastfluid._no_ends``, rows ``2 lane`` and ``2 lane + 1``), span start and end."""
    rows = period.shape[0]
    out = np.full((rows, 2), np.nan)
    row, mode = np.full(LANES, -1), np.zeros(LANES, np.int64)
    moving, const, span = np.zeros((LANES, 6)), np.zeros((LANES, 6)), np.zeros((LANES, 3))
    sends, next_t, ends = np.zeros((LANES, 2), np.bool_), np.zeros((LANES, 2)), np.zeros((2 * LANES, 7))
    taken = 0
    while True:
        live = 0
        for lane in range(LANES):  # each lane's events until its two bursts share the link (or no row is left)
            while True:
                r = row[lane]
                if mode[lane] == _ENDS_DUE:  # bursts that ended and bursts ready to start, in job order
                    now = moving[lane, _T]
                    for i in range(2):
                        if sends[lane, i] and moving[lane, _R0 + i] <= const[lane, _EPS0 + i]:
                            _end(ends, 2 * lane + i, now, horizon_ms[r], span[lane, 0], span[lane, 1], warmup)
                            sends[lane, i], next_t[lane, i] = False, now + max(0.0, period[r, i] - comm[r, i])
                        elif not sends[lane, i] and next_t[lane, i] <= now + EPS_MS:  # a burst is ready
                            moving[lane, _R0 + i], moving[lane, _S0 + i] = comm[r, i], 0.0
                            sends[lane, i], next_t[lane, i] = True, math.inf
                    mode[lane] = _EVENTS
                if r < 0:
                    if taken == rows:
                        mode[lane] = _EMPTY
                        break
                    r = row[lane] = taken
                    taken += 1
                    sends[lane], next_t[lane] = False, offset[r]
                    ends[2 * lane:2 * lane + 2] = _no_ends(2)
                    span0, span1, give_up, target, events = _limits(period[r], horizon_ms[r],
                                                                    warmup_periods * period[r].max(), iterations,
                                                                    warmup, sharing[r], step_ms)
                    span[lane, 0], span[lane, 1], span[lane, 2] = span0, span1, target
                    moving[lane] = 0.0
                    moving[lane, _T], moving[lane, _BUDGET] = next_t[lane].min(), events
                    const[lane, _H0], const[lane, _H1], const[lane, _GAIN_AT] = headroom[r, 0], headroom[r, 1], _GAIN[sharing[r]]
                    const[lane, _EPS0], const[lane, _EPS1] = EPS_MS * max(1.0, comm[r, 0]), EPS_MS * max(1.0, comm[r, 1])
                    const[lane, _GIVE_UP] = give_up if horizon_ms[r] > 0 else math.inf
                now = moving[lane, _T]
                running = False  # fastfluid._running
                for i in range(2 * lane, 2 * lane + 2):
                    if horizon_ms[r] > 0:
                        running |= now < const[lane, _GIVE_UP] and (ends[i, _COUNT] == 0 or ends[i, _LAST] < span[lane, 1])
                    else:
                        running |= ends[i, _COUNT] < span[lane, 2]
                if not running:
                    out[r] = _means(ends[2 * lane:2 * lane + 2], horizon_ms[r], warmup)
                    row[lane] = -1
                    continue
                if sends[lane, 0] and sends[lane, 1] and mode[lane] != _EVENT_FIRST:
                    mode[lane] = _STEPPING
                    live += 1
                    break
                mode[lane] = _EVENTS
                moving[lane, _BUDGET] -= 1
                if moving[lane, _BUDGET] < 0:
                    row[lane] = -1  # out[r] stays NaN
                    continue
                # one event of fastfluid.simulate_means (no windows, two jobs)
                r0, r1, s0, s1 = moving[lane, _R0], moving[lane, _R1], moving[lane, _S0], moving[lane, _S1]
                on0, on1 = sends[lane, 0], sends[lane, 1]
                share0 = share1 = 0.0
                if on0 and on1:
                    share0, share1 = _shares(r0, r1, s0, s1, const[lane, _H0], const[lane, _H1],
                                             const[lane, _GAIN_AT])
                elif on0:
                    share0 = min(1.0, const[lane, _H0])  # headroom / 1 sending
                elif on1:
                    share1 = min(1.0, const[lane, _H1])
                t_next = min(next_t[lane, 0], next_t[lane, 1])
                stepping = on0 and on1
                if on0 and share0 > 0 and not (stepping and r0 > share0 * step_ms * (1 + 1e-9)):
                    t_next = min(t_next, now + r0 / share0)
                if on1 and share1 > 0 and not (stepping and r1 > share1 * step_ms * (1 + 1e-9)):
                    t_next = min(t_next, now + r1 / share1)
                if stepping:
                    t_next = min(t_next, now + step_ms)
                dt = t_next - now
                if on0:
                    moving[lane, _R0], moving[lane, _S0] = r0 - dt * share0, s0 + dt * share0
                if on1:
                    moving[lane, _R1], moving[lane, _S1] = r1 - dt * share1, s1 + dt * share1
                moving[lane, _T] = t_next
                mode[lane] = _ENDS_DUE
        if live == 0:
            return out
        _steps_together(mode, moving, const, step_ms)


@numba.njit(cache=True, inline="always")
def _steps_together(mode, moving, const, step_ms):
    """Every stepping lane's plain steps, one of each in turn (their arithmetic overlaps), until one cannot
    take one: that lane's mode becomes _EVENT_FIRST (an event instead) or _ENDS_DUE (a burst within tolerance
    of its end). The four lanes are written out, their state in scalars for the processor's registers."""
    s0 = (moving[0, 0], moving[0, 1], moving[0, 2], moving[0, 3], moving[0, 4], moving[0, 5])
    s1 = (moving[1, 0], moving[1, 1], moving[1, 2], moving[1, 3], moving[1, 4], moving[1, 5])
    s2 = (moving[2, 0], moving[2, 1], moving[2, 2], moving[2, 3], moving[2, 4], moving[2, 5])
    s3 = (moving[3, 0], moving[3, 1], moving[3, 2], moving[3, 3], moving[3, 4], moving[3, 5])
    c0 = (const[0, 0], const[0, 1], const[0, 2], const[0, 3], const[0, 4], const[0, 5])
    c1 = (const[1, 0], const[1, 1], const[1, 2], const[1, 3], const[1, 4], const[1, 5])
    c2 = (const[2, 0], const[2, 1], const[2, 2], const[2, 3], const[2, 4], const[2, 5])
    c3 = (const[3, 0], const[3, 1], const[3, 2], const[3, 3], const[3, 4], const[3, 5])
    on0, on1, on2, on3 = mode[0] == _STEPPING, mode[1] == _STEPPING, mode[2] == _STEPPING, mode[3] == _STEPPING
    while True:
        k0, s0 = _advance(on0, s0, c0, step_ms)
        k1, s1 = _advance(on1, s1, c1, step_ms)
        k2, s2 = _advance(on2, s2, c2, step_ms)
        k3, s3 = _advance(on3, s3, c3, step_ms)
        if k0 != _STEPPED or k1 != _STEPPED or k2 != _STEPPED or k3 != _STEPPED:
            break
    for lane, on, state, outcome in ((0, on0, s0, k0), (1, on1, s1, k1), (2, on2, s2, k2), (3, on3, s3, k3)):
        if on:
            for k in range(6):
                moving[lane, k] = state[k]
            if outcome == _REFUSED:
                mode[lane] = _EVENT_FIRST
            elif outcome == _TOUCHED:
                mode[lane] = _ENDS_DUE


@numba.njit(cache=True, inline="always")
def _advance(on, state, const, step_ms):
    """One plain step of a lane: both bursts move ``step_ms`` on, where neither can end within it, the lane
    is still running (before its give-up time) and has an event left. (outcome, state)."""
    r0, r1, s0, s1, now, budget = state
    h0, h1, gain, eps0, eps1, give_up = const
    if not on:
        return _STEPPED, state
    if now >= give_up or budget < 1:
        return _REFUSED, state
    share0, share1 = _shares(r0, r1, s0, s1, h0, h1, gain)
    if (share0 > 0 and not r0 > share0 * step_ms * (1 + 1e-9)) or (share1 > 0 and not r1 > share1 * step_ms * (1 + 1e-9)):
        return _REFUSED, state
    t_next = now + step_ms
    dt = t_next - now
    r0, r1 = r0 - dt * share0, r1 - dt * share1
    moved = (r0, r1, s0 + dt * share0, s1 + dt * share1, t_next, budget - 1)
    return (_STEPPED if r0 > eps0 and r1 > eps1 else _TOUCHED), moved


@numba.njit(cache=True, inline="always")
def _shares(r0, r1, s0, s1, h0, h1, gain):
    """The two bursts' shares of the link (``policies.link_shares``' weighted max-min, as the compiled loop
    computes it): each weight, the bursts in order of cap (``1 / (headroom × weight)``, stable), each taking
    its cap or its weight's share of what is left."""
    w0 = 1.0 + gain * s0 / max(s0 + r0, 1e-9)
    w1 = 1.0 + gain * s1 / max(s1 + r1, 1e-9)
    total = 0.0
    total += w0
    total += w1
    p0, p1 = h0 * w0, h1 * w1  # 1/p0 > 1/p1: job 1 first; a division is monotonic, so the order is read from
    if p0 * _CLEAR < p1:  # the products unless they are within rounding of each other
        first = 1
    elif p0 >= p1:
        first = 0
    else:
        first = 1 if 1.0 / p0 > 1.0 / p1 else 0
    cap0, cap1 = 1.0 / h0, 1.0 / h1
    if first == 1:
        take1 = cap1 if cap1 * total <= 1.0 * w1 else 1.0 * w1 / total
        left, total = 1.0 - take1, total - w1
        take0 = cap0 if cap0 * total <= left * w0 else left * w0 / total
    else:
        take0 = cap0 if cap0 * total <= 1.0 * w0 else 1.0 * w0 / total
        left, total = 1.0 - take0, total - w0
        take1 = cap1 if cap1 * total <= left * w1 else left * w1 / total
    return take0 * h0, take1 * h1
