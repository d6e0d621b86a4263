"""N periodic jobs with arbitrary busy patterns sharing a link: the shifts that collide least, exactly.

Model. Job ``i`` is a :class:`arcs.Pattern`: period ``T_i`` quanta, busy set ``B_i``; delayed by ``s_i``
quanta it is busy at ``t`` iff ``(t - s_i) mod T_i ∈ B_i``. Pair ``{i, j}`` weighs ``w_ij`` (the links
the two share; 0: they never meet). :mod:`arcs` solves two jobs; this module places ``N``.

Objective. ``overlap_rate = Σ_{i<j} w_ij · O_ij((s_j - s_i) mod g_ij) / lcm(T_i, T_j)``: weighted
colliding quanta per quantum of time, an exact :class:`~fractions.Fraction`, with ``O_ij`` the pair's
:func:`arcs.overlap_table` (colliding quanta per ``lcm(T_i, T_j)``) and ``g_ij = gcd(T_i, T_j)``. It is
zero exactly when every pair that meets is separated for ever. Over the common hyper-period
``L = lcm_i T_i`` it is the weighted count of colliding (quantum, pair) events divided by ``L``
(:func:`brute_force_rate` counts it that way, the tests' reference).

Why residues. Each pair's cost depends on ``(s_j - s_i) mod g_ij`` only, so ``s_i`` matters only modulo
``G_i = lcm_j g_ij`` over the jobs ``j`` it meets (a divisor of ``T_i``, and of the lcm over all other
jobs that :mod:`schedule` uses). A common delay changes nothing, so the first job of each group of
jobs linked by meeting pairs sits at 0 (job 0 first of all); groups are solved apart.

The search is the branch and bound of :mod:`schedule`, for patterns: jobs are placed most constrained
first (the costliest best residue against the placed jobs, then the fewest such residues), each at its
residues cheapest first; every placement updates, for every unplaced job, the cost of each of its
residues against the placed ones (forward checking); the bound is "cost so far + every unplaced job's
best residue + every unplaced pair's best value". A greedy dive (cheapest residue, same order) is the
first incumbent, so a search stopped at ``max_nodes`` still returns a schedule (``exact`` False).

Exact comparisons. Sums of rates ``O/lcm`` can differ by less than any float tolerance, so every pair's
table is multiplied by ``w_ij · S / lcm(T_i, T_j)`` with ``S`` the lcm of the meeting pairs' lcms: every
cost, bound and comparison is an integer one (int64 when the largest total fits, else Python integers),
and ``overlap_rate = cost / S``.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from controller.theory.arcs import Pattern, most_collisions, overlap_table

DEFAULT_MAX_NODES = 200_000
_INT64_TOTAL_LIMIT = 2**62  # a scaled total below this cannot overflow int64 in any sum the search forms


@dataclass(frozen=True)
class PatternSchedule:
    """Shifts for the jobs and what they achieve.

    ``shifts_q[i]``: job ``i``'s delay in quanta, in ``[0, G_i)`` (module docstring), job 0 at 0.
    ``overlap_rate``: weighted colliding quanta per quantum of time (exact). ``feasible``: it is 0.
    ``exact``: the search proved it optimal (False: it stopped at ``max_nodes`` with the best found).
    ``nodes``: search nodes (placements) explored, the greedy dive not counted.
    """

    shifts_q: tuple[int, ...]
    overlap_rate: Fraction
    feasible: bool
    exact: bool
    nodes: int


def weight_matrix(n_jobs: int, pair_weights: dict[frozenset[int], int] | None) -> list[list[int]]:
    """``pair_weights`` by job index as a symmetric matrix: ``None`` weighs every pair 1; a dict weighs the
    pairs it lists (a whole number >= 0 each) and every other pair 0, as :func:`schedule.compute_schedule`."""
    if pair_weights is None:
        return [[int(a != b) for b in range(n_jobs)] for a in range(n_jobs)]
    w = [[0] * n_jobs for _ in range(n_jobs)]
    for pair, weight in pair_weights.items():
        ends = sorted(pair)
        if len(ends) != 2 or any(not isinstance(k, numbers.Integral) or not 0 <= k < n_jobs for k in ends):
            raise ValueError(f"pair_weights: {ends!r} is not a pair of job indices in [0, {n_jobs})")
        if isinstance(weight, bool) or not isinstance(weight, numbers.Integral) or weight < 0:
            raise ValueError(f"pair_weights: weight of {ends!r} must be a whole number >= 0, got {weight!r}")
        a, b = int(ends[0]), int(ends[1])
        w[a][b] = w[b][a] = int(weight)
    return w


class _Instance:
    """The pair tables on one integer scale, and the residues ``G_i`` each shift lives in."""

    def __init__(self, patterns: Sequence[Pattern], pair_weights: dict[frozenset[int], int] | None):
        if not patterns:
            raise ValueError("need at least one job")
        for k, p in enumerate(patterns):
            if not isinstance(p, Pattern):
                raise ValueError(f"job {k} must be an arcs.Pattern, got {p!r}")
        self.n = n = len(patterns)
        self.periods_q = [p.period_q for p in patterns]
        self.weights = weight_matrix(n, pair_weights)
        self.pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if self.weights[i][j] > 0]
        self.partners: list[list[int]] = [[] for _ in range(n)]
        for i, j in self.pairs:
            self.partners[i].append(j)
            self.partners[j].append(i)
        self.gcd_q = {(i, j): math.gcd(self.periods_q[i], self.periods_q[j]) for i, j in self.pairs}
        self.residues_q = [math.lcm(1, *(math.gcd(self.periods_q[i], self.periods_q[j]) for j in self.partners[i]))
                           for i in range(n)]
        lcms_q = {(i, j): math.lcm(self.periods_q[i], self.periods_q[j]) for i, j in self.pairs}
        self.scale = math.lcm(1, *lcms_q.values())
        raw = {(i, j): overlap_table(patterns[i], patterns[j]).tolist() for i, j in self.pairs}
        factors = {pair: self.weights[pair[0]][pair[1]] * (self.scale // lcms_q[pair]) for pair in self.pairs}
        worst = sum(max(raw[pair]) * factors[pair] for pair in self.pairs)
        self.dtype = np.int64 if worst < _INT64_TOTAL_LIMIT else object
        # tables[(i, j)][d]: scaled cost of the pair when (s_j - s_i) mod g_ij = d
        self.tables = {pair: np.array([v * factors[pair] for v in raw[pair]], dtype=self.dtype) for pair in self.pairs}
        self.pair_min = {pair: self.tables[pair].min() for pair in self.pairs}

    def against(self, i: int, k: int, shift_k_q: int) -> np.ndarray:
        """Scaled cost of every residue of job ``i`` against job ``k`` at ``shift_k_q`` (they meet)."""
        r = np.arange(self.residues_q[i])
        if i < k:
            return self.tables[(i, k)][(shift_k_q - r) % self.gcd_q[(i, k)]]
        return self.tables[(k, i)][(r - shift_k_q) % self.gcd_q[(k, i)]]

    def cost(self, shifts_q: Sequence[int] | dict[int, int], pairs: Sequence[tuple[int, int]] | None = None) -> int:
        """Scaled cost of these shifts, ``overlap_rate · S``, over ``pairs`` (default: every meeting pair)."""
        return sum(int(self.tables[(i, j)][(shifts_q[j] - shifts_q[i]) % self.gcd_q[(i, j)]])
                   for i, j in (self.pairs if pairs is None else pairs))

    def groups(self) -> list[list[int]]:
        """Jobs linked by meeting pairs, each ascending, in order of their first job."""
        seen: set[int] = set()
        out = []
        for start in range(self.n):
            if start in seen:
                continue
            group, todo = [], [start]
            seen.add(start)
            while todo:
                i = todo.pop()
                group.append(i)
                for j in self.partners[i]:
                    if j not in seen:
                        seen.add(j)
                        todo.append(j)
            out.append(sorted(group))
        return out


class _Search:
    """Branch and bound over one group's residues, its first job at 0 (module docstring)."""

    def __init__(self, inst: _Instance, group: list[int], max_nodes: int):
        self.inst, self.group, self.max_nodes = inst, group, max_nodes
        self.nodes, self.stopped = 0, False
        anchor = group[0]
        self.shifts_q = {anchor: 0}
        rows = {i: np.zeros(inst.residues_q[i], inst.dtype) for i in group[1:]}
        for k in inst.partners[anchor]:
            rows[k] = rows[k] + inst.against(k, anchor, 0)
        free_min = sum(int(inst.pair_min[(i, j)]) for i, j in inst.pairs if i in rows and j in rows)
        self.root = (0, rows, free_min)
        self.best = self._greedy(*self.root)
        self.best_cost = inst.cost(self.best, [(i, j) for i, j in inst.pairs if i in self.best])  # this group's

    @staticmethod
    def _pick(rows: dict[int, np.ndarray]) -> int:
        """Most constrained first: the costliest best residue, then the fewest residues at that cost."""
        def key(i):
            least = rows[i].min()
            return (-least, int(np.count_nonzero(rows[i] == least)), i)
        return min(rows, key=key)

    def _place(self, i: int, r: int, rows: dict[int, np.ndarray], free_min: int) -> tuple[dict, int]:
        """The unplaced jobs' residue costs and the unplaced pairs' best values once ``i`` sits at ``r``."""
        inst = self.inst
        new_rows = {k: row for k, row in rows.items() if k != i}
        for k in inst.partners[i]:
            if k in new_rows:
                new_rows[k] = new_rows[k] + inst.against(k, i, r)
                free_min -= int(inst.pair_min[(min(i, k), max(i, k))])
        return new_rows, free_min

    def _greedy(self, cost: int, rows: dict[int, np.ndarray], free_min: int) -> dict[int, int]:
        shifts_q = dict(self.shifts_q)
        while rows:
            i = self._pick(rows)
            r = int(rows[i].argmin())
            shifts_q[i] = r
            rows, free_min = self._place(i, r, rows, free_min)
        return shifts_q

    def run(self) -> None:
        if self.best_cost > 0:
            self._branch(*self.root)

    def _branch(self, cost: int, rows: dict[int, np.ndarray], free_min: int) -> None:
        if not rows:
            if cost < self.best_cost:
                self.best, self.best_cost = dict(self.shifts_q), cost
            return
        rest = sum(int(row.min()) for row in rows.values())
        if cost + rest + free_min >= self.best_cost:
            return
        i = self._pick(rows)
        rest_without_i = rest - int(rows[i].min())
        for r in np.argsort(rows[i], kind="stable").tolist():
            here = cost + int(rows[i][r])
            # the child's bound is at least this (an unplaced partner k's best residue grows by at least the
            # pair's best value, which leaves free_min), for r and every costlier residue after it
            if here + rest_without_i + free_min >= self.best_cost:
                return
            if self.nodes >= self.max_nodes:
                self.stopped = True
                return
            self.nodes += 1
            self.shifts_q[i] = r
            self._branch(here, *self._place(i, r, rows, free_min))
            del self.shifts_q[i]
            if self.stopped or self.best_cost == 0:
                return


def pattern_schedule(patterns: Sequence[Pattern], pair_weights: dict[frozenset[int], int] | None = None,
                     max_nodes: int = DEFAULT_MAX_NODES) -> PatternSchedule:
    """The shifts minimising :func:`overlap_rate` (module docstring), exact unless ``max_nodes`` search
    nodes are not enough (then ``exact`` False and the best found). ``pair_weights``: ``{frozenset({i, j}):
    w}`` by job index, pairs not listed weighing 0; ``None``: every pair 1. ``max_nodes`` applies to each
    group of jobs linked by meeting pairs."""
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, numbers.Integral) or max_nodes < 0:
        raise ValueError(f"max_nodes must be a whole number >= 0, got {max_nodes!r}")
    inst = _Instance(patterns, pair_weights)
    shifts_q = [0] * inst.n
    nodes, exact = 0, True
    for group in inst.groups():
        if len(group) == 1:
            continue
        search = _Search(inst, group, int(max_nodes))
        search.run()
        for i, s in search.best.items():
            shifts_q[i] = s
        nodes, exact = nodes + search.nodes, exact and not search.stopped
    rate = Fraction(inst.cost(shifts_q), inst.scale)
    return PatternSchedule(tuple(shifts_q), rate, rate == 0, exact, nodes)


def overlap_rate(patterns: Sequence[Pattern], shifts_q: Sequence[int],
                 pair_weights: dict[frozenset[int], int] | None = None) -> Fraction:
    """Weighted colliding quanta per quantum of time at these shifts, from the pair tables (exact)."""
    inst = _Instance(patterns, pair_weights)
    if len(shifts_q) != inst.n:
        raise ValueError(f"need {inst.n} shifts, got {len(shifts_q)}")
    return Fraction(inst.cost([int(s) for s in shifts_q]), inst.scale)


def compatibility_score(patterns: Sequence[Pattern], shifts_q: Sequence[int],
                        pair_weights: dict[frozenset[int], int] | None = None) -> Fraction:
    """How well the jobs share the link at these shifts, in ``[0, 1]``: the mean over the meeting pairs of
    ``1 - O_ij(d_ij) / min(N_i, N_j)``, with ``O_ij(d_ij)`` the pair's colliding quanta per ``lcm(T_i,
    T_j)`` at these shifts and ``N_i = |B_i| · lcm / T_i`` job ``i``'s busy quanta in that time (no shift
    collides on more than the less busy job's). :func:`arcs.compatibility` at the pair's given shift, not
    its best one; weights only decide which pairs meet. 1 when no pair meets. Exact."""
    inst = _Instance(patterns, pair_weights)
    if len(shifts_q) != inst.n:
        raise ValueError(f"need {inst.n} shifts, got {len(shifts_q)}")
    if not inst.pairs:
        return Fraction(1)
    total = Fraction(0)
    for i, j in inst.pairs:
        g = inst.gcd_q[(i, j)]
        collide = int(overlap_table(patterns[i], patterns[j])[(shifts_q[j] - shifts_q[i]) % g])
        total += 1 - Fraction(collide, most_collisions(patterns[i], patterns[j]))
    return total / len(inst.pairs)


# ---------------------------------------------------------------- the reference, quantum by quantum


def _busy_line(pattern: Pattern, shift_q: int, length_q: int) -> np.ndarray:
    """Is the job, delayed by ``shift_q``, busy at each quantum ``t`` in ``[0, length_q)``? (bool)"""
    busy = np.zeros(pattern.period_q, bool)
    for start_q, arc_q in pattern.arcs:
        busy[start_q:start_q + arc_q] = True
    return busy[(np.arange(length_q) - shift_q) % pattern.period_q]


def brute_force_rate(patterns: Sequence[Pattern], shifts_q: Sequence[int],
                     pair_weights: dict[frozenset[int], int] | None = None) -> Fraction:
    """The reference objective: walk the common hyper-period ``L = lcm_i T_i`` quantum by quantum, count
    each meeting pair busy together (times its weight), divide by ``L``. No gcd circle, no tables."""
    w = weight_matrix(len(patterns), pair_weights)
    length_q = math.lcm(*(p.period_q for p in patterns))
    lines = [_busy_line(p, s, length_q) for p, s in zip(patterns, shifts_q, strict=True)]
    total = sum(w[i][j] * int(np.count_nonzero(lines[i] & lines[j]))
                for i, j in itertools.combinations(range(len(patterns)), 2) if w[i][j])
    return Fraction(total, length_q)


def brute_force_schedule(patterns: Sequence[Pattern], pair_weights: dict[frozenset[int], int] | None = None
                         ) -> Fraction:
    """The reference optimum: every combination of shifts (job 0 at 0, job ``i`` over ``[0, G_i)`` with
    ``G_i = lcm_{j≠i} gcd(T_i, T_j)``), each scored as :func:`brute_force_rate` does, quantum by quantum
    over ``L``; the least rate. Each pair's collisions are counted once per pair of shifts (a matrix
    product of busy lines), then summed per combination. Slow; for tests."""
    n = len(patterns)
    w = weight_matrix(n, pair_weights)
    periods_q = [p.period_q for p in patterns]
    length_q = math.lcm(*periods_q)
    ranges = [[0]] + [range(math.lcm(1, *(math.gcd(periods_q[i], periods_q[j]) for j in range(n) if j != i)))
                      for i in range(1, n)]
    # float64 rows of 0/1: the matrix product counts exactly (sums far below 2**53), and fast
    lines = [np.array([_busy_line(p, s, length_q) for s in ranges[i]], np.float64) for i, p in enumerate(patterns)]
    pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if w[i][j]]
    together = {(i, j): (w[i][j] * np.rint(lines[i] @ lines[j].T).astype(np.int64)).tolist()
                for i, j in pairs}  # [index of s_i][index of s_j]: colliding quanta over L
    best = min(sum(together[(i, j)][c[i]][c[j]] for i, j in pairs)
               for c in itertools.product(*(range(len(r)) for r in ranges)))
    return Fraction(best, length_q)
