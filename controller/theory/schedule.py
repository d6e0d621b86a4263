"""The schedule maths: periodic jobs sharing one link, on an explicit time quantum.

Model (docs/design.md, "The model"): job *j* has period ``T_j`` and busy time ``c_j``
(its communication burst at full link rate). With shift ``s_j`` it occupies the
link during ``[s_j + k*T_j, s_j + k*T_j + c_j)`` for every integer ``k``. All
times live on a grid of ``quantum_ms``; internally everything is an integer
number of quanta, so gcd, LCM and feasibility are exact.

Objective. ``overlap_ms`` is the *pairwise* overlapped link-time per
hyper-period: for every pair of jobs, the time during which both are busy,
summed over pairs (a slot where three jobs are busy counts three times). It is
zero exactly when the jobs are separated, and it decomposes over pairs, which
is what makes the exact search fast.

Why the search never walks the LCM. For a pair (i, j) with ``g = gcd(T_i, T_j)``
the start-time differences of their bursts are exactly ``d + g*Z`` with
``d = (s_j - s_i) mod g`` (Bézout), each difference occurring once per
``lcm(T_i, T_j)``. So the pair's overlap per LCM is
``O_ij(d) = sum_k overlap([0, c_i), [d + k*g, d + k*g + c_j))``, a table of
``g`` values, and the jobs separate iff some ``d`` has ``O_ij(d) = 0``, i.e.
iff ``c_i + c_j <= g``, with the separating ``d`` in ``[c_i, g - c_j]``.
Consequently ``s_i`` matters only modulo ``G_i = lcm_j gcd(T_i, T_j)``.

The exact optimiser is a branch and bound over these residues: one job is
anchored at 0 (a common time shift changes nothing), identical jobs are kept in
order (swapping them changes nothing), every assignment updates, for each
unassigned job, the cost of each of its residues against the assigned ones
(forward checking with NumPy), and the bound is "cost so far + best residue of
every unassigned job + best value of every unassigned pair". A heuristic (one
greedy dive plus coordinate descent with restarts) gives the first upper
bound; it is also the fallback, with a gap stated against the pairwise bound.

Exact comparisons. A pair's cost per unit time is ``O_ij(d) / lcm(T_i, T_j)``,
a rational; the sums of three or more such rates can differ by far less than
any float tolerance. The search therefore works on one integer scale: every
pair's table is multiplied by ``S / lcm(T_i, T_j)`` with ``S`` the lcm of the
pair lcms (of the pairs whose cost depends on the shifts), so every cost,
bound and comparison is an integer one. The tables are int64 when the largest
possible total fits, else arrays of Python integers (exact, slower; only for
instances whose pair lcms share few factors).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

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
    ``overlap_ms`` is the pairwise overlapped link-time per hyper-period (see
    the module docstring); ``gap`` is ``(overlap - lower_bound) / overlap`` for
    the heuristic, ``None`` when the result is proven optimal.
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

    @property
    def overlap_fraction(self) -> float:
        """Pairwise overlapped link-time per unit time (0 when separated)."""
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


def overlap_quanta(periods: Sequence[int], comms: Sequence[int], shifts: Sequence[int]) -> int:
    """Pairwise overlapped quanta per hyper-period for given integer shifts."""
    h = math.lcm(*periods)
    total = 0
    for i in range(len(periods)):
        for j in range(i + 1, len(periods)):
            g = math.gcd(periods[i], periods[j])
            table = pair_overlap_table(periods[i], comms[i], periods[j], comms[j])
            total += int(table[(shifts[j] - shifts[i]) % g]) * (h // math.lcm(periods[i], periods[j]))
    return total


def overlap_ms(jobs: Sequence[JobTiming], shifts_ms: dict[str, float], quantum_ms: float) -> float:
    """Pairwise overlapped link-time per hyper-period (ms) of the given shifts."""
    periods = [to_quanta(j.period_ms, quantum_ms) for j in jobs]
    comms = [to_quanta(j.comm_ms, quantum_ms) for j in jobs]
    shifts = [to_quanta(shifts_ms[j.name], quantum_ms) for j in jobs]
    return overlap_quanta(periods, comms, shifts) * quantum_ms


# ---------------------------------------------------------------- N jobs


@dataclass
class _Problem:
    """Integer instance with the per-pair tables, as rates on one integer scale.

    The search's costs count only the *active* pairs (those whose overlap depends
    on the shifts), each as ``table * scale // lcm``: an exact integer multiple
    of the pair's overlap per unit time. The inert pairs add the same constant to
    every schedule, so they change no comparison.
    """

    periods: list[int]
    comms: list[int]
    n: int = 0
    residue: list[int] = field(default_factory=list)  # G_i: s_i matters modulo this
    scale: int = 1  # lcm of the active pairs' lcms: cost = overlap per unit time × scale
    dtype: type = np.int64  # object (Python integers) when a total could overflow int64
    # directed[i][j][x]: scaled rate when (s_j - s_i) mod g_ij == x, tiled to length G_j
    directed: list[list[np.ndarray | None]] = field(default_factory=list)
    pair_min: dict[tuple[int, int], int] = field(default_factory=dict)  # active pairs, scaled
    tables: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)

    def __post_init__(self):
        n = self.n = len(self.periods)
        p, c = self.periods, self.comms
        active = []
        for i in range(n):
            for j in range(i + 1, n):
                self.tables[(i, j)] = table = pair_overlap_table(p[i], c[i], p[j], c[j])
                if table.min() != table.max():  # else every relative shift costs the same: inert
                    active.append((i, j))
        # only active pairs constrain a shift: s_i matters modulo lcm of their gcds
        self.residue = [math.lcm(1, *(math.gcd(p[a], p[b]) for a, b in active if i in (a, b))) for i in range(n)]
        self.scale = math.lcm(1, *(math.lcm(p[i], p[j]) for i, j in active))
        weight = {(i, j): self.scale // math.lcm(p[i], p[j]) for i, j in active}
        worst = sum(int(self.tables[pair].max()) * w for pair, w in weight.items())
        self.dtype = np.int64 if worst < _INT64_TOTAL_LIMIT else object
        self.directed = [[None] * n for _ in range(n)]
        for i, j in active:
            g = math.gcd(p[i], p[j])
            rate = self.tables[(i, j)].astype(self.dtype) * weight[(i, j)]
            self.pair_min[(i, j)] = int(rate.min())
            self.directed[i][j] = np.tile(rate, self.residue[j] // g)
            self.directed[j][i] = np.tile(rate[(-np.arange(g)) % g], self.residue[i] // g)

    def overlap_quanta(self, shifts: Sequence[int]) -> int:
        """Exact integer objective: pairwise overlapped quanta per hyper-period."""
        h = math.lcm(*self.periods)
        total = 0
        for (i, j), table in self.tables.items():
            lcm = math.lcm(self.periods[i], self.periods[j])
            total += int(table[(shifts[j] - shifts[i]) % len(table)]) * (h // lcm)
        return total

    def cost(self, shifts: Sequence[int]) -> int:
        """The active pairs' scaled cost of these shifts (exact)."""
        total = 0
        for i in range(self.n):
            for j in range(i + 1, self.n):
                row = self.directed[i][j]
                if row is not None:
                    total += int(row[(shifts[j] - shifts[i]) % len(row)])
        return total

    def cost_array(self, i: int, shifts: Sequence[int | None]) -> np.ndarray:
        """Cost of every residue of job i against the jobs with a shift."""
        out = np.zeros(self.residue[i], dtype=self.dtype)
        for j, s in enumerate(shifts):
            if j != i and s is not None and self.directed[j][i] is not None:
                out += _rolled(self.directed[j][i], s)
        return out

    def pairwise_bound(self) -> int:
        """Every active pair at its own best residue, scaled: a lower bound on :meth:`cost`."""
        return sum(self.pair_min.values())

    def pairwise_bound_quanta(self) -> int:
        """Every pair at its own best residue: a lower bound on the objective."""
        h = math.lcm(*self.periods)
        return sum(int(t.min()) * (h // math.lcm(self.periods[i], self.periods[j])) for (i, j), t in self.tables.items())


def _rolled(a: np.ndarray, v: int) -> np.ndarray:
    """``out[s] = a[(s - v) mod len(a)]`` (np.roll without its overhead)."""
    v %= len(a)
    return np.concatenate((a[-v:], a[:-v])) if v else a


def _heuristic(prob: _Problem, restarts: int, seed: int) -> list[int]:
    """Greedy dive, then coordinate descent; best of a few random restarts."""
    rng = np.random.default_rng(seed)
    order = sorted(range(prob.n), key=lambda i: -prob.comms[i] / prob.periods[i])
    best, best_cost = None, math.inf
    for attempt in range(restarts + 1):
        shifts: list[int | None] = [None] * prob.n
        for i in order if attempt == 0 else rng.permutation(prob.n):
            arr = prob.cost_array(i, shifts)
            low = np.flatnonzero(arr == arr.min())
            shifts[i] = int(low[0] if attempt == 0 else rng.choice(low))
        improved = True
        while improved:
            improved = False
            for i in range(prob.n):
                arr = prob.cost_array(i, shifts)
                k = int(arr.argmin())
                if arr[k] < arr[shifts[i]]:
                    shifts[i], improved = k, True
        cost = prob.cost(shifts)
        if cost < best_cost:
            best, best_cost = list(shifts), cost
        if best_cost <= 0:
            break
    return best


def _exact(prob: _Problem, incumbent: list[int], max_nodes: int) -> tuple[list[int], int]:
    """Branch and bound over residues; returns optimal shifts and nodes visited."""
    n = prob.n
    best = list(incumbent)
    best_cost = prob.cost(best)
    if best_cost <= prob.pairwise_bound():  # meets the bound: already optimal
        return best, 0
    anchor = max(range(n), key=lambda i: prob.residue[i])
    key = [(prob.periods[i], prob.comms[i]) for i in range(n)]
    twins = [[j for j in range(n) if j != i and j != anchor and key[j] == key[i]] if i != anchor else [] for i in range(n)]
    nodes = 0

    def search(shifts, arrays, cost):
        nonlocal best, best_cost, nodes
        nodes += 1
        if nodes > max_nodes:
            raise BeyondExactMethod
        free = [i for i in range(n) if shifts[i] is None]
        if len(free) == 1:  # the last job's best residue is read off its cost array
            i = free[0]
            lo, hi = bounds(i, shifts)
            v = lo + int(arrays[i][lo : hi + 1].argmin())
            if cost + int(arrays[i][v]) < best_cost:
                best, best_cost = list(shifts), cost + int(arrays[i][v])
                best[i] = v
            return
        mins = {i: int(arrays[i].min()) for i in free}
        rest = sum(prob.pair_min[(a, b)] for a in free for b in free if a < b and prob.directed[a][b] is not None)
        bound = cost + rest + sum(mins.values())
        if bound >= best_cost:
            return
        if len(free) == 2 and not twins[free[0]] and not twins[free[1]]:
            i, j = free
            g = math.gcd(prob.periods[i], prob.periods[j])
            if prob.directed[i][j] is not None and g * g <= _PAIR_CLOSURE_LIMIT:
                close_pair(i, j, g, shifts, arrays, cost)
                return
        # candidates of each free job: residues that can still beat the incumbent
        choice, cands = None, None
        for i in free:
            slack = best_cost - (bound - mins[i])
            lo, hi = bounds(i, shifts)
            idx = np.flatnonzero(arrays[i][lo : hi + 1] < slack) + lo
            if cands is None or len(idx) < len(cands):
                choice, cands = i, idx
            if len(idx) == 0:
                return
        values = cands[np.argsort(arrays[choice][cands], kind="stable")]
        others = [i for i in free if i != choice]
        for v in values:
            v = int(v)
            shifts[choice] = v
            child = {i: arrays[i] if prob.directed[choice][i] is None else arrays[i] + _rolled(prob.directed[choice][i], v)
                     for i in others}
            search(shifts, child, cost + int(arrays[choice][v]))
            shifts[choice] = None
            if best_cost <= 0:
                return

    pair_matrix: dict[tuple[int, int], np.ndarray] = {}

    def bounds(i, shifts):
        """Residues of job i allowed by the ordering of identical jobs."""
        lo = max((shifts[j] for j in twins[i] if j < i and shifts[j] is not None), default=0)
        hi = min((shifts[j] for j in twins[i] if j > i and shifts[j] is not None), default=prob.residue[i] - 1)
        return lo, hi

    def close_pair(i, j, g, shifts, arrays, cost):
        """Best joint residues of the last two jobs: they interact only modulo their gcd."""
        nonlocal best, best_cost
        a_i = arrays[i].reshape(-1, g).min(0)  # best s_i with s_i mod g = x
        a_j = arrays[j].reshape(-1, g).min(0)
        if (i, j) not in pair_matrix:
            x, y = np.ogrid[:g, :g]
            pair_matrix[(i, j)] = prob.directed[i][j][(y - x) % g]
        total = a_i[:, None] + a_j[None, :] + pair_matrix[(i, j)]
        k = int(total.argmin())
        if cost + int(total.flat[k]) < best_cost:
            rx, ry = divmod(k, g)
            best = list(shifts)
            best[i] = rx + g * int(arrays[i].reshape(-1, g)[:, rx].argmin())
            best[j] = ry + g * int(arrays[j].reshape(-1, g)[:, ry].argmin())
            best_cost = cost + int(total.flat[k])

    start: list[int | None] = [None] * n
    start[anchor] = 0
    arrays = {i: prob.cost_array(i, start) for i in range(n) if i != anchor}
    search(start, arrays, 0)
    return best, nodes


def compute_schedule(
    jobs: Sequence[JobTiming],
    quantum_ms: float = 1.0,
    *,
    method: str = "auto",
    max_nodes: int = DEFAULT_MAX_NODES,
    max_jobs: int = MAX_EXACT_JOBS,
    restarts: int = 8,
    seed: int = 0,
) -> Schedule:
    """Shifts that separate the jobs if possible, else minimise pairwise overlap.

    ``method``: ``"exact"`` (raise :class:`BeyondExactMethod` when the instance
    is too large), ``"heuristic"``, or ``"auto"`` (exact, falling back to the
    heuristic with its gap stated). Times must already be on the grid.
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
    h = math.lcm(*periods)
    if len(jobs) == 2 and method != "heuristic" and not max(periods) > MAX_PERIOD_QUANTA:
        return _two_jobs(jobs, quantum_ms, periods, comms)
    prob = _Problem(periods, comms)
    too_big = len(jobs) > max_jobs or max(periods) > MAX_PERIOD_QUANTA
    if too_big and method == "exact":
        raise BeyondExactMethod(_refusal(len(jobs), max(periods), max_nodes))
    exact, nodes = False, 0
    if len(jobs) == 1:
        shifts, exact = [0], True
    elif method == "heuristic" or too_big:
        shifts = _heuristic(prob, restarts, seed)
    else:
        try:  # a greedy dive is the first incumbent
            shifts, nodes = _exact(prob, _heuristic(prob, 0, seed), max_nodes)
            exact = True
        except BeyondExactMethod:
            if method == "exact":
                raise BeyondExactMethod(_refusal(len(jobs), max(periods), max_nodes)) from None
            shifts = _heuristic(prob, restarts, seed)
    overlap = prob.overlap_quanta(shifts)
    lower = overlap if exact else prob.pairwise_bound_quanta()
    gap = None if exact else (0.0 if overlap == 0 else max(0.0, (overlap - lower) / overlap))
    return Schedule(
        jobs=tuple(jobs),
        quantum_ms=quantum_ms,
        shifts_ms={j.name: s * quantum_ms for j, s in zip(jobs, shifts, strict=True)},
        hyperperiod_ms=h * quantum_ms,
        feasible=overlap == 0,
        overlap_ms=overlap * quantum_ms,
        method="exact" if exact else "heuristic",
        gap=gap,
        lower_bound_ms=lower * quantum_ms,
        nodes=nodes,
    )


def _two_jobs(jobs, quantum_ms, periods, comms) -> Schedule:
    """Closed form: the separating interval if it exists, else the table's minimum."""
    (t1, t2), (c1, c2) = periods, comms
    interval = separating_interval(t1, c1, t2, c2)
    if interval is not None:
        d, overlap = interval[0], 0
    else:
        table = pair_overlap_table(t1, c1, t2, c2)
        d = int(table.argmin())
        overlap = int(table[d])  # the hyper-period is the pair's LCM
    return Schedule(tuple(jobs), quantum_ms, {jobs[0].name: 0.0, jobs[1].name: d * quantum_ms},
                    math.lcm(t1, t2) * quantum_ms, overlap == 0, overlap * quantum_ms, "exact", None,
                    overlap * quantum_ms, 0)


def _refusal(n_jobs: int, max_period: int, max_nodes: int) -> str:
    return (
        f"instance beyond the exact method ({n_jobs} jobs, longest period {max_period} quanta, "
        f"search budget {max_nodes} nodes; exact supports up to {MAX_EXACT_JOBS} jobs): "
        "use the heuristic (method='heuristic', `--heuristic`), which states its gap"
    )
