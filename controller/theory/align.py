"""The ``align`` decision: pad jobs' periods so that a zero-overlap schedule exists.

Jobs whose periods share too little (``c_i + c_j > gcd(T_i, T_j)`` for some pair,
see :mod:`controller.theory.schedule`) can never be kept apart. Padding a job's
*compute* phase lengthens its period ``T -> P`` and keeps its burst, so the job
loses ``1 - T/P`` of its throughput; a good padding makes the periods
commensurate at the smallest mean loss (tie-breaks: smaller largest loss, then
smaller total padding).

Candidate search, in integer quanta:

(a) the identity (no padding), when the jobs are already separable;
(b) the TDM frames: for every frame ``F`` from the sum of all bursts up to the
    longest period, ``P_j = ceil(T_j / F) * F``. Every period is a multiple of
    ``F`` and all bursts fit one frame, so shifts ``0, c_1, c_1 + c_2, ...``
    separate every pair: always feasible;
(c) the same rounding for the frames ``F`` below the sum of the bursts: the
    periods may still share enough (``c_i + c_j <= gcd(P_i, P_j)`` for every
    pair, which is necessary), and the exact optimiser decides.

For two jobs this family holds the optimum: if ``(P_1, P_2)`` separates them,
so does rounding up to multiples of ``F = gcd(P_1, P_2)``, at no more padding.
For more jobs it is a heuristic family whose winner is always verified.

Candidates are tried cheapest first and the first one with a zero-overlap
schedule (``compute_schedule(...).feasible``, a certificate whatever method found
it) wins. The pairwise test rejects most of family (c) without a search; the
rest get a small exact-search budget each, and only the cheapest few of them
are searched, so a call stays well under a second for six jobs of up to 2000
quanta. The loss comparisons are exact (fractions): ties between frames are
common.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numba
import numpy as np

from controller.theory.schedule import (
    DEFAULT_MAX_NODES,
    BeyondExactMethod,
    JobTiming,
    Schedule,
    compute_schedule,
    to_quanta,
)

IDENTITY_MAX_NODES = 20_000  # search budget for the unpadded jobs (then the heuristic's restarts)
CANDIDATE_MAX_NODES = 1_000  # exact-search budget per frame below the sum of bursts; unproven ones are skipped
MAX_SEARCHES = 8  # frames below the sum of bursts searched at most; then the cheapest TDM frame wins
DEFAULT_PADDING_SHARE = 1.0  # no period grows by more than itself (the align policy's limit)


@dataclass(frozen=True)
class Alignment:
    """Padded jobs, what the padding costs, and the zero-overlap schedule it allows."""

    timings: tuple[JobTiming, ...]  # padded jobs: period_ms = P, comm_ms unchanged (on the grid)
    padding_ms: dict[str, float]  # P - T per job (multiples of the quantum, >= 0)
    mean_loss: float  # mean over jobs of 1 - T/P
    schedule: Schedule  # compute_schedule on the padded jobs; feasible


def align_periods(jobs: Sequence[JobTiming], quantum_ms: float,
                  max_padding_share: float = DEFAULT_PADDING_SHARE) -> Alignment:
    """The cheapest padding (mean throughput loss) that admits a zero-overlap schedule.

    No job's period grows by more than ``max_padding_share`` of itself; a
    ``ValueError`` names the jobs when no candidate stays within that.
    """
    periods, comms = _grid(jobs, quantum_ms, max_padding_share)
    found = _search(jobs, quantum_ms, periods, comms, max_padding_share)
    if found is None:
        raise ValueError(_refusal(jobs, quantum_ms, periods, comms, max_padding_share))
    padded, schedule = found
    return Alignment(
        timings=schedule.jobs,
        padding_ms={j.name: (p - t) * quantum_ms for j, t, p in zip(jobs, periods, padded, strict=True)},
        mean_loss=float(_losses(periods, padded)[0]),
        schedule=schedule,
    )


def padded_periods(jobs: Sequence[JobTiming], quantum_ms: float,
                   max_padding_share: float = DEFAULT_PADDING_SHARE) -> tuple[int, ...] | None:
    """The padded periods (quanta) :func:`align_periods` picks, or None where it refuses: without the
    refusal's message, whose cheapest padding beyond the share costs a second search."""
    periods, comms = _grid(jobs, quantum_ms, max_padding_share)
    found = _search(jobs, quantum_ms, periods, comms, max_padding_share)
    return None if found is None else found[0]


def _grid(jobs, quantum_ms, share) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Periods and bursts in quanta, after checking that the input can be aligned at all."""
    if not jobs:
        raise ValueError("align: need at least one job")
    if not share >= 0:  # also refuses NaN
        raise ValueError(f"align: max_padding_share must be >= 0, got {share!r}")
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ValueError(f"align: job names must be distinct, got {names}")
    periods = tuple(to_quanta(j.period_ms, quantum_ms) for j in jobs)
    comms = tuple(to_quanta(j.comm_ms, quantum_ms) for j in jobs)
    for j, t, c in zip(jobs, periods, comms, strict=True):
        if not 1 <= c < t:
            raise ValueError(f"align: {j.name}: need 1 quantum <= comm < period, got comm={c}, period={t} quanta")
    return periods, comms


def _search(jobs, quantum_ms, periods, comms, share) -> tuple[tuple[int, ...], Schedule] | None:
    """The first candidate, cheapest first, whose padded jobs have a zero-overlap schedule."""
    if _pairwise_separable(np.array([periods]), comms)[0]:  # the identity first: no padding when none is needed
        schedule = _verified(jobs, quantum_ms, periods, "auto", IDENTITY_MAX_NODES)
        if schedule is not None:
            return periods, schedule
    searches = 0
    for padded, framed, separable in _candidates(periods, comms, share, usable_only=True):
        if padded == periods:
            continue
        if framed:  # a TDM frame: separable by construction, the search only finds the shifts
            schedule = _verified(jobs, quantum_ms, padded, "auto", DEFAULT_MAX_NODES)
        elif searches < MAX_SEARCHES and separable:
            searches += 1
            schedule = _verified(jobs, quantum_ms, padded, "exact", CANDIDATE_MAX_NODES)
        else:
            continue
        if schedule is not None:
            return padded, schedule
    return None


def _verified(jobs, quantum_ms, padded, method, max_nodes) -> Schedule | None:
    """The padded jobs' schedule if one with zero overlap was found, else ``None``."""
    timings = [JobTiming(j.name, p * quantum_ms, j.comm_ms) for j, p in zip(jobs, padded, strict=True)]
    try:
        schedule = compute_schedule(timings, quantum_ms, method=method, max_nodes=max_nodes)
    except BeyondExactMethod:
        return None
    return schedule if schedule.feasible else None


def _candidates(periods, comms, share, usable_only: bool = False) -> Iterator[tuple[tuple[int, ...], bool, bool]]:
    """``(P, framed, separable)`` with ``P_j = ceil(T_j / F) * F`` for every frame ``F``, within the share, cheapest first.

    ``framed``: some frame that yields ``P`` holds every burst (a TDM frame); ``separable``: every pair of
    ``P`` can be kept apart (:func:`_pairwise_separable`). Every frame at once as arrays,
    ranked by the losses in floating point; candidates whose mean losses lie within rounding of each other
    are then put in the exact order (:func:`_cost`). Yielded one run of ties at a time, so that a search
    that stops at the first few builds only those; ``usable_only``: without the rows neither framed nor
    separable, which the search would pass over (the order of the others is the same).
    """
    t = np.array(periods, np.int64)
    total_comm = sum(comms)
    frames = np.arange(1, max(total_comm, max(periods)) + 1, dtype=np.int64)
    padded = -(-t[None, :] // frames[:, None]) * frames[:, None]
    keep = np.all(padded - t <= share * t * (1 + 1e-12), axis=1)
    padded, frames = padded[keep], frames[keep]
    if not len(frames):
        return
    order = np.lexsort(padded.T[::-1])  # the same padding next to each other
    padded, frames = padded[order], frames[order]
    first = np.ones(len(frames), np.bool_)
    first[1:] = np.any(padded[1:] != padded[:-1], axis=1)
    starts = np.flatnonzero(first)
    framed = np.maximum.reduceat(frames >= total_comm, starts)
    padded = padded[starts]
    ratio = t / padded
    ranked = np.lexsort((*padded.T[::-1], padded.sum(axis=1), -ratio.min(axis=1), -ratio.sum(axis=1)))
    padded, framed = padded[ranked], framed[ranked]
    separable = _pairwise_separable(padded, comms)
    mean = -ratio.sum(axis=1)[ranked]
    # runs of rows whose mean losses lie within rounding of the next one's; a run ends where the next one differs
    run = np.r_[0, np.cumsum(np.diff(mean) > 1e-9)]
    rows = np.flatnonzero(framed | separable) if usable_only else np.arange(len(padded))
    for _, members in itertools.groupby(zip(rows.tolist(), run[rows].tolist(), strict=True), key=lambda m: m[1]):
        found = [(tuple(padded[r].tolist()), bool(framed[r]), bool(separable[r])) for r, _ in members]
        if len(found) > 1:
            found.sort(key=lambda row: _cost(periods, row[0]))
        yield from found


def _cost(periods, padded) -> tuple:
    """A candidate's rank, exactly: mean loss, largest loss, total padding, then the periods themselves."""
    return (*_losses(periods, padded), sum(padded) - sum(periods), padded)


def _losses(periods, padded) -> tuple[Fraction, Fraction]:
    """Mean and largest throughput loss ``1 - T/P``, exactly."""
    losses = [1 - Fraction(t, p) for t, p in zip(periods, padded, strict=True)]
    return sum(losses, Fraction(0)) / len(losses), max(losses)


def _pairwise_separable(periods: np.ndarray, comms) -> np.ndarray:
    """Of each row of periods (quanta): every pair can be kept apart, ``c_i + c_j <= gcd(P_i, P_j)``;
    necessary for a zero-overlap schedule (sufficient for two jobs)."""
    n = periods.shape[1]
    out = np.ones(len(periods), np.bool_)
    for i in range(n):
        for j in range(i + 1, n):
            out &= comms[i] + comms[j] <= np.gcd(periods[:, i], periods[:, j])
    return out


# Two jobs' padding compiled (:func:`pair_paddings`) where every candidate's exact mean loss differs from
# the next distinct one's by more than _candidates' 1e-9 float band: (P1 P2) below this, the two orders agree
PAIR_PRODUCT_LIMIT = 500_000_000


@numba.njit(cache=True)
def pair_paddings(t1, c1, t2, c2, share):
    """:func:`align_periods`' padded periods (quanta) of each pair of jobs, as arrays; (-1, -1) where no
    padding within ``share`` of each period separates them.

    For two jobs every usable candidate is separable (a frame holding both bursts divides both periods,
    so their gcd holds the bursts), and separable suffices for a zero-overlap schedule; so :func:`_search`
    takes the unpadded periods when they are separable, else the first separable candidate in the order
    of :func:`_candidates`: by exact mean loss, largest loss, total padding, then the periods, the least
    first (which the float ranking and its 1e-9 runs give where ``P1 P2 <`` :data:`PAIR_PRODUCT_LIMIT`;
    the caller keeps to that). The losses are compared exactly, in integers."""
    out = np.full((len(t1), 2), -1, np.int64)
    for k in range(len(t1)):
        a, b, ca, cb = t1[k], t2[k], c1[k], c2[k]
        if ca + cb <= math.gcd(a, b):
            out[k, 0], out[k, 1] = a, b
            continue
        best_a, best_b = -1, -1
        for f in range(1, max(ca + cb, max(a, b)) + 1):
            pa, pb = -(-a // f) * f, -(-b // f) * f
            if pa - a > share * a * (1 + 1e-12) or pb - b > share * b * (1 + 1e-12):
                continue
            if ca + cb > math.gcd(pa, pb):
                continue
            if best_a < 0 or _pair_cheaper(a, b, pa, pb, best_a, best_b):
                best_a, best_b = pa, pb
        out[k, 0], out[k, 1] = best_a, best_b
    return out


@numba.njit(cache=True, inline="always")
def _pair_cheaper(a, b, pa, pb, qa, qb):
    """Is padding (pa, pb) of periods (a, b) cheaper than (qa, qb) in :func:`_cost`'s order? The kept shares
    ``a/pa``, ``b/pb`` compared as fractions: their sum (the mean loss), then the least (the largest loss)."""
    sum_p, sum_q = (a * pb + b * pa) * (qa * qb), (a * qb + b * qa) * (pa * pb)
    if sum_p != sum_q:
        return sum_p > sum_q
    least_p = (a, pa) if a * pb <= b * pa else (b, pb)
    least_q = (a, qa) if a * qb <= b * qa else (b, qb)
    if least_p[0] * least_q[1] != least_q[0] * least_p[1]:
        return least_p[0] * least_q[1] > least_q[0] * least_p[1]
    if pa + pb != qa + qb:
        return pa + pb < qa + qb
    return (pa, pb) < (qa, qb)


def _refusal(jobs, quantum_ms, periods, comms, share) -> str:
    """One line: which jobs would need more than the allowed padding, and how much."""
    found = _search(jobs, quantum_ms, periods, comms, math.inf)
    need = "" if found is None else ", ".join(
        f"{j.name} +{(p - t) * quantum_ms:g} ms ({(p - t) / t:.0%})"
        for j, t, p in zip(jobs, periods, found[0], strict=True) if p - t > share * t)
    names = ", ".join(j.name for j in jobs)
    return f"align: no padding within {share:.0%} of each period separates {names}; the cheapest needs {need}"
