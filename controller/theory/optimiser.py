"""The exact optimiser for N jobs (``controller/theory/schedule.py`` explains the model and the search): the
integer instance with its pair tables (:class:`_Problem`), the greedy dive and descent that give the first
incumbent and the fallback (:func:`_heuristic`), and the branch and bound (:func:`_exact`). Instances whose
scaled costs fit in int64 run their inner loops compiled (``controller/theory/schedulecompiled.py``); the
rest, with Python integers, here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from controller.theory import schedulecompiled as compiled

_PAIR_CLOSURE_LIMIT = 250_000  # gcd² up to which the last two jobs are solved jointly
_INT64_TOTAL_LIMIT = 2**62  # a scaled total below this cannot overflow int64 in any sum the search forms


class BeyondExactMethod(Exception):
    """The instance is too large for the exact optimiser (use the heuristic)."""


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
    weights: list[list[int]] | None = None  # pair weights (None: every pair 1); weight 0 pairs are left out
    n: int = 0
    residue: list[int] = field(default_factory=list)  # G_i: s_i matters modulo this
    scale: int = 1  # lcm of the active pairs' lcms: cost = overlap per unit time × scale
    dtype: type = np.int64  # object (Python integers) when a total could overflow int64
    # directed[i][j][x]: scaled rate when (s_j - s_i) mod g_ij == x, tiled to length G_j
    directed: list[list[np.ndarray | None]] = field(default_factory=list)
    pair_min: dict[tuple[int, int], int] = field(default_factory=dict)  # active pairs, scaled
    tables: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    rows: tuple = ()  # int64 instances: every directed row in one array, and where row [i][j] starts (-1: none)

    def __post_init__(self):
        n = self.n = len(self.periods)
        p, c = self.periods, self.comms
        weights = np.ones((n, n), np.int64) if self.weights is None else np.array(self.weights, np.int64)
        flat, at, low, high = compiled.pair_tables(np.array(p, np.int64), np.array(c, np.int64), weights)
        active = []
        for i in range(n):
            for j in range(i + 1, n):
                if at[i, j] < 0:  # weight 0: these two never meet, no cost
                    continue
                self.tables[(i, j)] = flat[at[i, j]:at[i, j] + math.gcd(p[i], p[j])]
                if low[i, j] != high[i, j]:  # else every relative shift costs the same: inert
                    active.append((i, j))
        # only active pairs constrain a shift: s_i matters modulo lcm of their gcds
        self.residue = [1] * n
        for a, b in active:
            g = math.gcd(p[a], p[b])
            self.residue[a], self.residue[b] = math.lcm(self.residue[a], g), math.lcm(self.residue[b], g)
        lcms = {(i, j): math.lcm(p[i], p[j]) for i, j in active}
        self.scale = math.lcm(1, *lcms.values())
        factor = {pair: self.scale // lcm for pair, lcm in lcms.items()}
        worst = sum(int(high[pair]) * f for pair, f in factor.items())
        self.dtype = np.int64 if worst < _INT64_TOTAL_LIMIT else object
        self.directed = [[None] * n for _ in range(n)]
        if self.dtype is np.int64 and active:
            rows, start, pair_low = compiled.all_directed_rows(
                flat, at, np.array(active, np.int64), np.array([factor[pair] for pair in active], np.int64),
                np.array(self.residue, np.int64), np.array(p, np.int64))
            self.rows = (rows, start)
            for k, (i, j) in enumerate(active):
                self.pair_min[(i, j)] = int(pair_low[k])
                self.directed[i][j] = rows[start[i, j]:start[i, j] + self.residue[j]]
                self.directed[j][i] = rows[start[j, i]:start[j, i] + self.residue[i]]
            return
        self.rows = (np.zeros(0, np.int64), np.full((n, n), -1, np.int64))
        for i, j in active:
            g = math.gcd(p[i], p[j])
            rate = self.tables[(i, j)].astype(self.dtype) * factor[(i, j)]
            self.pair_min[(i, j)] = int(rate.min())
            self.directed[i][j] = np.tile(rate, self.residue[j] // g)
            self.directed[j][i] = np.tile(rate[(-np.arange(g)) % g], self.residue[i] // g)

    def overlap_quanta(self, shifts: Sequence[int]) -> int:
        """Exact integer objective: weighted pairwise overlapped quanta per hyper-period (from the tables)."""
        p, h = self.periods, math.lcm(*self.periods)
        return sum(int(t[(shifts[j] - shifts[i]) % len(t)]) * (h // math.lcm(p[i], p[j])) for (i, j), t in self.tables.items())

    def cost(self, shifts: Sequence[int]) -> int:
        """The active pairs' scaled cost of these shifts (exact)."""
        rows = ((self.directed[i][j], shifts[j] - shifts[i]) for i, j in self.pair_min)
        return sum(int(row[d % len(row)]) for row, d in rows)

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
        if attempt == 0 and prob.dtype is np.int64:  # the first dive, compiled: the same steps
            shifts = [int(v) for v in compiled.dive(*prob.rows, np.array(prob.residue), np.array(order))]
            if not restarts:  # nothing to compare it with
                return shifts
            cost = prob.cost(shifts)
            if cost < best_cost:
                best, best_cost = list(shifts), cost
            if best_cost <= 0:
                break
            continue
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
    w = prob.weights

    def alike(i, j):  # swapping i and j changes no cost: same timing, same weight to every other job
        return key[i] == key[j] and (w is None or all(w[i][k] == w[j][k] for k in range(n) if k not in (i, j)))

    twins = [[j for j in range(n) if j != i and j != anchor and alike(i, j)] if i != anchor else [] for i in range(n)]
    if prob.dtype is np.int64:  # compiled: the same search
        return _exact_compiled(prob, best, best_cost, anchor, twins, max_nodes)
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


def _exact_compiled(prob: _Problem, best: list[int], best_cost: int, anchor: int, twins: list[list[int]],
                    max_nodes: int) -> tuple[list[int], int]:
    """:func:`_exact`'s search for an int64 instance, by ``schedulecompiled.branch_and_bound``."""
    n = prob.n
    pair_min = np.zeros((n, n), np.int64)
    for (a, b), v in prob.pair_min.items():
        pair_min[a, b] = v
    twin = np.zeros((n, n), np.bool_)
    for i, js in enumerate(twins):
        twin[i, js] = True
    shifts, _, nodes, beyond = compiled.branch_and_bound(
        *prob.rows, np.array(prob.residue), np.array(prob.periods), pair_min, twin, anchor, np.array(best),
        best_cost, max_nodes, _PAIR_CLOSURE_LIMIT)
    if beyond:
        raise BeyondExactMethod
    return [int(v) for v in shifts], int(nodes)
