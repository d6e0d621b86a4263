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
it) wins; the pairwise test rejects most of them without a search. The loss
comparisons are exact (fractions), as ties between frames are common.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from controller.theory.schedule import JobTiming, Schedule, compute_schedule, to_quanta

VERIFY_MAX_NODES = 20_000  # search budget per candidate; a candidate not proven separable is skipped


@dataclass(frozen=True)
class Alignment:
    """Padded jobs, what the padding costs, and the zero-overlap schedule it allows."""

    timings: tuple[JobTiming, ...]  # padded jobs: period_ms = P, comm_ms unchanged (on the grid)
    padding_ms: dict[str, float]  # P - T per job (multiples of the quantum, >= 0)
    mean_loss: float  # mean over jobs of 1 - T/P
    schedule: Schedule  # compute_schedule on the padded jobs; feasible


def align_periods(jobs: Sequence[JobTiming], quantum_ms: float, max_padding_share: float = 1.0) -> Alignment:
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
    padded_first = [periods, *(c for c in _candidates(periods, comms, share) if c != periods)]
    for padded in padded_first:  # the identity first: no padding when none is needed
        if not _pairwise_separable(padded, comms):
            continue
        timings = [JobTiming(j.name, p * quantum_ms, j.comm_ms) for j, p in zip(jobs, padded, strict=True)]
        schedule = compute_schedule(timings, quantum_ms, max_nodes=VERIFY_MAX_NODES)
        if schedule.feasible:
            return padded, schedule
    return None


def _candidates(periods, comms, share) -> list[tuple[int, ...]]:
    """Padded periods ``ceil(T_j / F) * F`` for every frame ``F``, within the share, cheapest first."""
    top = max(sum(comms), max(periods))
    cost = {}
    for frame in range(1, top + 1):
        padded = tuple(-(-t // frame) * frame for t in periods)
        if padded not in cost and _within(periods, padded, share):
            cost[padded] = (*_losses(periods, padded), sum(padded) - sum(periods), padded)
    return sorted(cost, key=cost.__getitem__)


def _losses(periods, padded) -> tuple[Fraction, Fraction]:
    """Mean and largest throughput loss ``1 - T/P``, exactly."""
    losses = [1 - Fraction(t, p) for t, p in zip(periods, padded, strict=True)]
    return sum(losses, Fraction(0)) / len(losses), max(losses)


def _within(periods, padded, share) -> bool:
    return all(p - t <= share * t * (1 + 1e-12) for t, p in zip(periods, padded, strict=True))


def _pairwise_separable(periods, comms) -> bool:
    """Every pair can be kept apart: necessary for a zero-overlap schedule (sufficient for two jobs)."""
    n = len(periods)
    return all(comms[i] + comms[j] <= math.gcd(periods[i], periods[j]) for i in range(n) for j in range(i + 1, n))


def _refusal(jobs, quantum_ms, periods, comms, share) -> str:
    """One line: which jobs would need more than the allowed padding, and how much."""
    found = _search(jobs, quantum_ms, periods, comms, math.inf)
    need = "" if found is None else ", ".join(
        f"{j.name} +{(p - t) * quantum_ms:g} ms ({(p - t) / t:.0%})"
        for j, t, p in zip(jobs, periods, found[0], strict=True) if p - t > share * t)
    names = ", ".join(j.name for j in jobs)
    return f"align: no padding within {share:.0%} of each period separates {names}; the cheapest needs {need}"
