"""The schedule maths: periodic jobs sharing links, on an explicit time quantum.

Model (docs/design.md, "The model"): job *j* has period ``T_j`` and busy time ``c_j``
(its communication burst at full link rate). With shift ``s_j`` it occupies the
link during ``[s_j + k*T_j, s_j + k*T_j + c_j)`` for every integer ``k``. All
times live on a grid of ``quantum_ms``; internally everything is an integer
number of quanta, so gcd, LCM and feasibility are exact.

Objective. ``overlap_ms`` is the *weighted pairwise* overlapped link-time per
hyper-period: the time both jobs of a pair are busy times the pair's weight,
summed over pairs (three jobs busy on one link count three times). Jobs meet only
where their routes do: the weight is the number of directed links two jobs share
(``conflicts.ConflictGraph``), 0 for a pair free to burst together, 1 for every
pair without weights (one shared link). It is zero exactly when every pair that
meets is separated and decomposes over pairs, which makes the search fast;
components of the graph of positive weights are solved apart.

Why the search never walks the LCM. For a pair (i, j) with ``g = gcd(T_i, T_j)``
the start-time differences of their bursts are exactly ``d + g*Z`` with
``d = (s_j - s_i) mod g`` (Bézout), each difference occurring once per
``lcm(T_i, T_j)``. So the pair's overlap per LCM is
``O_ij(d) = sum_k overlap([0, c_i), [d + k*g, d + k*g + c_j))``, a table of
``g`` values, and the jobs separate iff some ``d`` has ``O_ij(d) = 0``, i.e.
iff ``c_i + c_j <= g``, with the separating ``d`` in ``[c_i, g - c_j]``.
Consequently ``s_i`` matters only modulo ``G_i = lcm_j gcd(T_i, T_j)``.

The exact optimiser (``optimiser.py``, its inner loops compiled in ``schedulecompiled.py``) is a
branch and bound over these residues: one job is
anchored at 0 (a common time shift changes nothing), identical jobs (same timing,
same weights to the others) are kept in order (swapping them changes nothing), every assignment updates, for each
unassigned job, the cost of each of its residues against the assigned ones
(forward checking with NumPy), and the bound is "cost so far + best residue of
every unassigned job + best value of every unassigned pair". A heuristic (one
greedy dive plus coordinate descent with restarts) gives the first upper
bound; it is also the fallback, with a gap stated against the pairwise bound.

Exact comparisons. A pair's cost per unit time is ``O_ij(d) / lcm(T_i, T_j)``,
a rational; the sums of three or more such rates can differ by far less than
any float tolerance. The search therefore works on one integer scale: every
pair's table is multiplied by its (whole) weight and by ``S / lcm(T_i, T_j)``
with ``S`` the lcm of the pair lcms (of the pairs whose cost depends on the
shifts), so every cost, bound and comparison is an integer one: int64 when the largest possible
total fits, else Python integers (exact, slower; only when the pair lcms share few factors).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from controller.theory import schedulecompiled as compiled
from controller.theory.conflicts import index_components, weight_matrix
from controller.theory.optimiser import BeyondExactMethod, _exact, _heuristic, _Problem  # noqa: F401  (the API)

MAX_EXACT_JOBS = 6
MAX_PERIOD_QUANTA = 100_000
DEFAULT_MAX_NODES = 200_000


@dataclass(frozen=True)
class JobTiming:
    """One job's solo timing, already on the quantum grid."""

    name: str
    period_ms: float
    comm_ms: float


@dataclass(frozen=True)
class Schedule:
    """The shifts for a set of jobs and what they achieve.

    ``shifts_ms[name]`` is when the job's burst (window) starts, modulo its
    period: the job is busy in ``[shift + k*period, shift + k*period + comm)``.
    ``overlap_ms`` is the weighted pairwise overlapped link-time per hyper-period
    (the LCM of all periods; module docstring); ``gap`` is ``(overlap - lower_bound) /
    overlap`` for the heuristic, ``None`` when the result is proven optimal.
    """

    jobs: tuple[JobTiming, ...]
    quantum_ms: float
    shifts_ms: dict[str, float]
    hyperperiod_ms: float
    feasible: bool
    overlap_ms: float
    method: str
    gap: float | None
    lower_bound_ms: float = 0.0
    nodes: int = 0
    pair_weights: dict[frozenset[str], int] | None = None  # as given to compute_schedule; None: all 1

    @property
    def overlap_fraction(self) -> float:
        """Weighted pairwise overlapped link-time per unit time (0 when separated)."""
        return self.overlap_ms / self.hyperperiod_ms if self.hyperperiod_ms else 0.0


# ---------------------------------------------------------------- the quantum grid


def _ratio(value_ms: float, quantum_ms: float) -> float:
    if not (math.isfinite(value_ms) and math.isfinite(quantum_ms)) or quantum_ms <= 0:
        raise ValueError(f"need finite times and a positive quantum, got {value_ms!r}, {quantum_ms!r}")
    return value_ms / quantum_ms


def period_quanta(period_ms: float, quantum_ms: float) -> int:
    """Nearest whole number of quanta (halves round up), at least one."""
    return max(1, math.floor(_ratio(period_ms, quantum_ms) + 0.5))


def comm_quanta(comm_ms: float, quantum_ms: float) -> int:
    """Whole quanta a burst occupies: rounded up (tolerating float noise), at least one."""
    x = _ratio(comm_ms, quantum_ms)
    return max(1, math.ceil(x - 1e-9 * max(1.0, x)))


def quantize_period_ms(period_ms: float, quantum_ms: float) -> float:
    """Period rounded to the nearest multiple of the quantum (at least one quantum)."""
    return period_quanta(period_ms, quantum_ms) * quantum_ms


def quantize_comm_ms(comm_ms: float, quantum_ms: float) -> float:
    """Burst length rounded up to the quantum grid (a burst occupies whole slots)."""
    return comm_quanta(comm_ms, quantum_ms) * quantum_ms


def to_quanta(value_ms: float, quantum_ms: float) -> int:
    """A time already on the grid, as an integer number of quanta."""
    return math.floor(_ratio(value_ms, quantum_ms) + 0.5)


def quantize_job(name: str, period_ms: float, comm_ms: float, quantum_ms: float) -> JobTiming:
    """A job with measured (real-valued) times put on the grid."""
    return JobTiming(name, quantize_period_ms(period_ms, quantum_ms), quantize_comm_ms(comm_ms, quantum_ms))


def gcd_ms(a_ms: float, b_ms: float, quantum_ms: float) -> float:
    """gcd of two on-grid times, on the grid."""
    return math.gcd(to_quanta(a_ms, quantum_ms), to_quanta(b_ms, quantum_ms)) * quantum_ms


def hyperperiod_ms(periods_ms: Sequence[float], quantum_ms: float) -> float:
    """LCM of on-grid periods: after this the joint pattern repeats."""
    return math.lcm(*(to_quanta(p, quantum_ms) for p in periods_ms)) * quantum_ms


# ---------------------------------------------------------------- two jobs


def separating_interval(t1: int, c1: int, t2: int, c2: int) -> tuple[int, int] | None:
    """Relative shifts ``(s2 - s1) mod gcd(t1, t2)`` that separate two jobs for ever.

    Integers in quanta. Returns the closed interval ``(c1, g - c2)``, or ``None``
    when ``c1 + c2 > g`` (no shift separates them).
    """
    g = math.gcd(t1, t2)
    return (c1, g - c2) if c1 + c2 <= g else None


def separable(t1: int, c1: int, t2: int, c2: int) -> bool:
    """Two jobs can be kept apart for ever iff ``c1 + c2 <= gcd(t1, t2)``."""
    return c1 + c2 <= math.gcd(t1, t2)


def pair_overlap_table(t1: int, c1: int, t2: int, c2: int) -> np.ndarray:
    """``table[d]``: quanta both jobs are busy per ``lcm(t1, t2)`` when ``(s2 - s1) mod g = d``."""
    return compiled.pair_table(int(t1), int(c1), int(t2), int(c2))


def overlap_quanta(periods: Sequence[int], comms: Sequence[int], shifts: Sequence[int],
                   weights: Sequence[Sequence[int]] | None = None) -> int:
    """Pairwise overlapped quanta per hyper-period for given integer shifts, pair (i, j)
    counted ``weights[i][j]`` times (``None``: once)."""
    h = math.lcm(*periods)
    total = 0
    for i in range(len(periods)):
        for j in range(i + 1, len(periods)):
            w = 1 if weights is None else weights[i][j]
            g = math.gcd(periods[i], periods[j])
            table = pair_overlap_table(periods[i], comms[i], periods[j], comms[j])
            total += w * int(table[(shifts[j] - shifts[i]) % g]) * (h // math.lcm(periods[i], periods[j]))
    return total


def overlap_ms(jobs: Sequence[JobTiming], shifts_ms: dict[str, float], quantum_ms: float,
               pair_weights: dict[frozenset[str], int] | None = None) -> float:
    """Weighted pairwise overlapped link-time per hyper-period (ms) of the given shifts
    (``pair_weights`` as :func:`compute_schedule` takes them; ``None``: every pair 1)."""
    periods = [to_quanta(j.period_ms, quantum_ms) for j in jobs]
    comms = [to_quanta(j.comm_ms, quantum_ms) for j in jobs]
    shifts = [to_quanta(shifts_ms[j.name], quantum_ms) for j in jobs]
    return overlap_quanta(periods, comms, shifts, weight_matrix([j.name for j in jobs], pair_weights)) * quantum_ms


# ---------------------------------------------------------------- N jobs


def compute_schedule(
    jobs: Sequence[JobTiming],
    quantum_ms: float = 1.0,
    *,
    method: str = "auto",
    max_nodes: int = DEFAULT_MAX_NODES,
    max_jobs: int = MAX_EXACT_JOBS,
    restarts: int = 8,
    seed: int = 0,
    pair_weights: dict[frozenset[str], int] | None = None,
) -> Schedule:
    """Shifts that separate the jobs if possible, else minimise weighted pairwise overlap:
    ``method``: ``"exact"`` (raise :class:`BeyondExactMethod` when the instance
    is too large), ``"heuristic"``, or ``"auto"`` (exact, falling back to the
    heuristic with its gap stated). Times must already be on the grid.
    ``pair_weights``: ``{frozenset({a, b}): w}`` (whole ``w >= 0``; pairs not listed
    weigh 0), e.g. ``conflicts.ConflictGraph.pair_weights()``; ``None``: every pair 1
    (one shared link). Components of the pairs of positive weight are solved apart,
    each anchored at 0; ``max_jobs`` and ``max_nodes`` apply to each.
    """
    if not jobs:
        raise ValueError("need at least one job")
    if method not in ("auto", "exact", "heuristic"):
        raise ValueError(f"unknown method {method!r}")
    periods = [to_quanta(j.period_ms, quantum_ms) for j in jobs]
    comms = [to_quanta(j.comm_ms, quantum_ms) for j in jobs]
    for j, t, c in zip(jobs, periods, comms, strict=True):
        if not 1 <= c < t:
            raise ValueError(f"{j.name}: need 1 quantum <= comm < period, got comm={c}, period={t} quanta")
    weights = weight_matrix([j.name for j in jobs], pair_weights)
    h = math.lcm(*periods)
    options = dict(method=method, max_nodes=max_nodes, max_jobs=max_jobs, restarts=restarts, seed=seed)
    shifts, overlap, lower, exact, nodes = [0] * len(jobs), 0, 0, True, 0
    for group in index_components(len(jobs), weights):
        sub = None if weights is None else [[weights[a][b] for b in group] for a in group]
        part = _solve([periods[a] for a in group], [comms[a] for a in group], sub, **options)
        anchor = part[0][0] if len(group) < len(jobs) else 0  # each component's first job at 0
        scale = h // math.lcm(*(periods[a] for a in group))  # the component's hyper-period divides h
        for a, s in zip(group, part[0], strict=True):
            shifts[a] = (s - anchor) % periods[a] if anchor else s
        overlap, lower = overlap + part[1] * scale, lower + part[2] * scale
        exact, nodes = exact and part[3], nodes + part[4]
    gap = None if exact else (0.0 if overlap == 0 else max(0.0, (overlap - lower) / overlap))
    return Schedule(tuple(jobs), quantum_ms, {j.name: s * quantum_ms for j, s in zip(jobs, shifts, strict=True)},
                    h * quantum_ms, overlap == 0, overlap * quantum_ms, "exact" if exact else "heuristic", gap,
                    lower * quantum_ms, nodes, None if pair_weights is None else dict(pair_weights))


def _solve(periods, comms, weights, *, method, max_nodes, max_jobs, restarts, seed):
    """One connected instance, in quanta: ``(shifts, overlap, lower bound, exact, nodes)``,
    the overlap and its bound per the instance's own hyper-period."""
    n = len(periods)
    if n == 2 and method != "heuristic" and not max(periods) > MAX_PERIOD_QUANTA:
        return _two_jobs(periods, comms, 1 if weights is None else weights[0][1])
    prob = _Problem(periods, comms, weights)
    too_big = n > max_jobs or max(periods) > MAX_PERIOD_QUANTA
    if too_big and method == "exact":
        raise BeyondExactMethod(_refusal(n, max(periods), max_nodes))
    exact, nodes = False, 0
    if n == 1:
        shifts, exact = [0], True
    elif method == "heuristic" or too_big:
        shifts = _heuristic(prob, restarts, seed)
    else:
        try:  # a greedy dive is the first incumbent
            shifts, nodes = _exact(prob, _heuristic(prob, 0, seed), max_nodes)
            exact = True
        except BeyondExactMethod:
            if method == "exact":
                raise BeyondExactMethod(_refusal(n, max(periods), max_nodes)) from None
            shifts = _heuristic(prob, restarts, seed)
    overlap = prob.overlap_quanta(shifts)
    lower = overlap if exact else prob.pairwise_bound_quanta()
    return shifts, overlap, lower, exact, nodes


def _two_jobs(periods, comms, weight):
    """Closed form: the table's first minimum, which is the separating interval's start
    (``c1``) when the two separate; the hyper-period is the pair's LCM."""
    table = pair_overlap_table(periods[0], comms[0], periods[1], comms[1])
    d = int(table.argmin())
    return [0, d], weight * int(table[d]), weight * int(table[d]), True, 0


def _refusal(n_jobs: int, max_period: int, max_nodes: int) -> str:
    return (f"instance beyond the exact method ({n_jobs} jobs, longest period {max_period} quanta, "
            f"search budget {max_nodes} nodes; exact supports up to {MAX_EXACT_JOBS} jobs): "
            "use the heuristic (method='heuristic', `--heuristic`), which states its gap")
