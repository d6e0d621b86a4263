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

The exact optimiser is a branch and bound over these residues: one job is
anchored at 0 (a common time shift changes nothing), identical jobs (same timing,
same weights to the others) are kept in order (swapping them changes nothing), every assignment updates, for each
unassigned job, the cost of each of its residues against the assigned ones
(forward checking), and the bound is "cost so far + best residue of
every unassigned job + best value of every unassigned pair". A heuristic (one
greedy dive plus coordinate descent with restarts) gives the first upper
bound; it is also the fallback, with a gap stated against the pairwise bound.
The tables, the dive and the search run compiled (``fastschedule.py``, numba).

Exact comparisons. A pair's cost per unit time is ``O_ij(d) / lcm(T_i, T_j)``,
a rational; the sums of three or more such rates can differ by far less than
any float tolerance. The search therefore works on one integer scale: every
pair's table is multiplied by its (whole) weight and by ``S / lcm(T_i, T_j)``
with ``S`` the lcm of the pair lcms (of the pairs whose cost depends on the
shifts), so every cost, bound and comparison is an integer one: int64 when the largest possible
total fits, else Python integers (exact, slower: the same loops interpreted; only when the pair
lcms share few factors).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from controller.theory import fastschedule
from controller.theory.conflicts import index_components, weight_matrix

MAX_EXACT_JOBS = 6
MAX_PERIOD_QUANTA = 100_000
DEFAULT_MAX_NODES = 200_000
_PAIR_CLOSURE_LIMIT = 250_000  # gcd² up to which the last two jobs are solved jointly
_INT64_TOTAL_LIMIT = 2**62  # a scaled total below this cannot overflow int64 in any sum the search forms


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


class BeyondExactMethod(Exception):
    """The instance is too large for the exact optimiser (use the heuristic)."""


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
    g = math.gcd(t1, t2)
    delta = np.arange(-c2 + 1, c1, dtype=np.int64)  # offsets where the two bursts touch
    line = np.minimum(c1, delta + c2) - np.maximum(0, delta)
    return np.bincount(delta % g, weights=line, minlength=g).astype(np.int64)


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


@dataclass
class _Problem:
    """Integer instance with the per-pair tables, as rates on one integer scale.

    The search's costs count only the *active* pairs (those whose overlap depends
    on the shifts), each as ``table * scale // lcm``: an exact integer multiple
    of the pair's overlap per unit time. The inert pairs add the same constant to
    every schedule, so they change no comparison. The tables, the rates and the
    loops over them live in :mod:`controller.theory.fastschedule`.
    """

    periods: list[int]
    comms: list[int]
    weights: list[list[int]] | None = None  # pair weights (None: every pair 1); weight 0 pairs are left out
    n: int = 0
    residue: list[int] = field(default_factory=list)  # G_i: s_i matters modulo this
    scale: int = 1  # lcm of the active pairs' lcms: cost = overlap per unit time × scale
    dtype: type = np.int64  # object (Python integers) when a total could overflow int64

    def __post_init__(self):
        n = self.n = len(self.periods)
        self.arrays = [np.array(self.periods, np.int64), np.array(self.comms, np.int64),
                       np.ones((n, n), np.int64) if self.weights is None else np.array(self.weights, np.int64)]
        self._tables, self._start, g, lcm, top, active, residue = fastschedule.pair_tables(*self.arrays)
        self.residue = residue.tolist()
        self.arrays.append(residue)
        lcms = lcm[active].tolist()  # the active pairs, in order (Python integers from here)
        self.scale = math.lcm(1, *lcms)
        factors = [self.scale // m for m in lcms]
        worst = sum(t * f for t, f in zip(top[active].tolist(), factors, strict=True))
        self.dtype = np.int64 if worst < _INT64_TOTAL_LIMIT else object
        factor = np.zeros((n, n), self.dtype)
        factor[active] = factors
        rates, self._pair_min = np.zeros(2 * int(g[active].sum()), self.dtype), np.zeros((n, n), self.dtype)
        offset = self._kernel(fastschedule.scaled_rates)(self._tables, self._start, g, active, factor, rates,
                                                          self._pair_min)
        self.rates = (rates, offset, g)  # what every kernel reads of the pairs

    def _kernel(self, f):
        """A fastschedule kernel as compiled (int64 costs) or as plain Python (Python integers)."""
        return f if self.dtype is np.int64 else f.py_func

    @cached_property
    def tables(self) -> dict[tuple[int, int], np.ndarray]:
        """``{(i, j): table}`` of every pair of positive weight, ``table[d]`` the pair's weighted overlapped
        quanta per ``lcm(T_i, T_j)`` when ``(s_j - s_i) mod gcd = d``."""
        g = self.rates[2]
        return {(i, j): self._tables[self._start[i, j]:self._start[i, j] + g[i, j]]
                for i in range(self.n) for j in range(i + 1, self.n) if g[i, j]}

    @cached_property
    def pair_min(self) -> dict[tuple[int, int], int]:
        """``{(i, j): least scaled rate}`` of the active pairs."""
        offset = self.rates[1]
        return {(i, j): int(self._pair_min[i, j]) for i in range(self.n) for j in range(i + 1, self.n)
                if offset[i, j] >= 0}

    def overlap_quanta(self, shifts: Sequence[int]) -> int:
        """Exact integer objective: weighted pairwise overlapped quanta per hyper-period (from the tables;
        int64 when even every pair overlapping all the time would fit)."""
        h = math.lcm(*self.periods)
        fits = h * int(self.arrays[2].sum()) < _INT64_TOTAL_LIMIT
        return int((fastschedule.overlap if fits else fastschedule.overlap.py_func)(
            np.array(shifts, np.int64), self.arrays[0], self._tables, self._start, self.rates[2], h))

    def cost(self, shifts: Sequence[int]) -> int:
        """The active pairs' scaled cost of these shifts (exact)."""
        return int(self._kernel(fastschedule.cost)(np.array(shifts, np.int64), *self.rates, 0))

    def cost_array(self, i: int, shifts: Sequence[int | None]) -> np.ndarray:
        """Cost of every residue of job i against the jobs with a shift."""
        out = np.zeros(self.residue[i], self.dtype)
        self._kernel(fastschedule.cost_array)(i, _assigned(shifts), *self.rates, out)
        return out

    def dive(self, order: Sequence[int], shifts: Sequence[int | None]) -> list[int]:
        """``fastschedule.dive``: the jobs of ``order`` placed greedily, then coordinate descent."""
        out = _assigned(shifts)
        self._kernel(fastschedule.dive)(np.array(order, np.int64), out, *self.rates, self.arrays[3],
                                        np.zeros(max(self.residue), self.dtype))
        return out.tolist()

    def pairwise_bound(self) -> int:
        """Every active pair at its own best residue, scaled: a lower bound on :meth:`cost`."""
        return sum(self.pair_min.values())

    def pairwise_bound_quanta(self) -> int:
        """Every pair at its own best residue: a lower bound on the objective."""
        h = math.lcm(*self.periods)
        return sum(int(t.min()) * (h // math.lcm(self.periods[i], self.periods[j])) for (i, j), t in self.tables.items())


def _assigned(shifts: Sequence[int | None]) -> np.ndarray:
    """Shifts as the kernels take them: -1 for a job without one."""
    return np.array([-1 if s is None else s for s in shifts], np.int64)


def _heuristic(prob: _Problem, restarts: int, seed: int) -> list[int]:
    """Greedy dive, then coordinate descent (:meth:`_Problem.dive`); best of that and a few random
    restarts, each placing the jobs in a random order, each at a random one of its cheapest residues."""
    order = sorted(range(prob.n), key=lambda i: -prob.comms[i] / prob.periods[i])
    best = prob.dive(order, [None] * prob.n)
    best_cost = prob.cost(best)
    rng = np.random.default_rng(seed) if restarts and best_cost > 0 else None
    for _ in range(restarts if best_cost > 0 else 0):
        shifts: list[int | None] = [None] * prob.n
        for i in rng.permutation(prob.n):
            arr = prob.cost_array(i, shifts)
            shifts[i] = int(rng.choice(np.flatnonzero(arr == arr.min())))
        shifts = prob.dive([], shifts)
        cost = prob.cost(shifts)
        if cost < best_cost:
            best, best_cost = shifts, cost
        if best_cost <= 0:
            break
    return best


def _exact(prob: _Problem, incumbent: list[int], max_nodes: int) -> tuple[list[int], int]:
    """Branch and bound over residues (``fastschedule.branch_and_bound``); returns optimal shifts and
    nodes visited, :class:`BeyondExactMethod` past ``max_nodes``."""
    n, dtype = prob.n, prob.dtype
    best = np.array(incumbent, np.int64)
    nodes = prob._kernel(fastschedule.branch_and_bound)(
        *prob.arrays, *prob.rates, prob._pair_min, best, max_nodes, _PAIR_CLOSURE_LIMIT,
        np.empty((n, sum(prob.residue)), dtype), np.zeros(n + 1, dtype), np.empty(n, dtype),
        np.empty((3, max(prob.residue)), dtype))
    if nodes > max_nodes:
        raise BeyondExactMethod
    return best.tolist(), nodes


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
