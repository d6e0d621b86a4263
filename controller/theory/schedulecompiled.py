"""The exact optimiser's inner loops compiled (numba), for instances whose scaled costs fit in int64
(``controller/theory/schedule.py`` keeps Python integers for the rest): the pair tables, the pair's rates
tiled to each job's residues, the first greedy dive, and the branch and bound. Each takes the same steps
in the same order as the Python it stands for, so the answers are the same shifts, ties included
(``tests/unit/test_schedule.py`` checks against brute force and the Python search). They release the
interpreter lock: the scheduler hub keeps answering while one of them computes a schedule.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def pair_table(t1, c1, t2, c2):
    g = math.gcd(t1, t2)
    table = np.zeros(g, np.int64)
    for delta in range(-c2 + 1, c1):  # offsets where the two bursts touch
        table[delta % g] += min(c1, delta + c2) - max(0, delta)
    return table


@numba.njit(cache=True, nogil=True)
def directed_rows(table, factor, reps_j, reps_i):
    """A pair's scaled rates both ways, tiled (``optimiser._Problem.directed[i][j]`` and ``[j][i]``), and their minimum:
    ``np.tile(rate, reps_j)``, ``np.tile(rate[(-arange(g)) % g], reps_i)``, in int64."""
    g = len(table)
    rate = table * factor
    mirrored = np.empty(g, np.int64)
    for k in range(g):
        mirrored[k] = rate[(g - k) % g]
    forward, backward = np.empty(g * reps_j, np.int64), np.empty(g * reps_i, np.int64)
    for r in range(reps_j):
        forward[r * g:(r + 1) * g] = rate
    for r in range(reps_i):
        backward[r * g:(r + 1) * g] = mirrored
    return forward, backward, rate.min()


@numba.njit(cache=True, nogil=True)
def dive(flat, start, residue, order):
    """:func:`optimiser._heuristic`'s first attempt: a greedy dive in ``order`` (each job at its first cheapest residue
    against the jobs placed), then coordinate descent until no job improves alone."""
    n = len(residue)
    shifts = np.full(n, -1, np.int64)
    for i in order:
        shifts[i] = np.argmin(cost_row(flat, start, residue, shifts, i))
    improved = True
    while improved:
        improved = False
        for i in range(n):
            arr = cost_row(flat, start, residue, shifts, i)
            k = np.argmin(arr)
            if arr[k] < arr[shifts[i]]:
                shifts[i], improved = k, True
    return shifts


@numba.njit(cache=True, nogil=True)
def cost_row(flat, start, residue, shifts, i):
    """``optimiser._Problem.cost_array(i, shifts)`` (-1: no shift yet)."""
    length = residue[i]
    out = np.zeros(length, np.int64)
    for j in range(len(residue)):
        if j != i and shifts[j] >= 0 and start[j, i] >= 0:
            v, row = shifts[j] % length, start[j, i]
            for x in range(length):
                k = x - v
                out[x] += flat[row + (k + length if k < 0 else k)]
    return out


@numba.njit(cache=True, nogil=True)
def branch_and_bound(flat, start, residue, periods, pair_min, twins, anchor, best, best_cost, max_nodes, closure_limit):
    """``optimiser._exact``'s search from ``anchor`` at 0: (best shifts, their cost, nodes visited, and whether
    the node budget ran out). ``pair_min[a, b]``: the active pair's best scaled rate (a < b);
    ``twins[i, j]``: swapping identical jobs i and j changes no cost (they stay in order). Depth first, as
    the Python recursion, with the path kept in arrays: at each depth the job assigned, the residues to try
    in order, how many are tried, and every free job's cost array."""
    n = len(residue)
    at = np.zeros(n + 1, np.int64)  # job i's cost array at depth d is arrays[d, at[i]:at[i + 1]]
    for i in range(n):
        at[i + 1] = at[i] + residue[i]
    arrays = np.zeros((n + 1, at[n]), np.int64)
    values = np.zeros((n + 1, residue.max()), np.int64)
    count, tried = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
    choice, cost = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
    shifts = np.full(n, -1, np.int64)
    shifts[anchor] = 0
    for i in range(n):
        if i != anchor:
            arrays[0, at[i]:at[i + 1]] = cost_row(flat, start, residue, shifts, i)
    state = np.array([best_cost, 1, 0], np.int64)  # best cost, nodes, out of budget
    best = best.copy()
    if max_nodes < 1:
        return best, state[0], state[1], True
    count[0] = _node(flat, start, residue, periods, pair_min, twins, shifts, arrays[0], at, 0, best, state,
                     closure_limit, choice, values[0])
    d = 0
    while True:
        if tried[d] < count[d]:  # the next child of the node at depth d
            j, v = choice[d], values[d, tried[d]]
            tried[d] += 1
            shifts[j] = v
            here, child = arrays[d], arrays[d + 1]
            for i in range(n):
                if shifts[i] >= 0:
                    continue
                child[at[i]:at[i + 1]] = here[at[i]:at[i + 1]]
                if start[j, i] >= 0:
                    length = residue[i]
                    w, row = v % length, start[j, i]
                    for x in range(length):
                        k = x - w
                        child[at[i] + x] += flat[row + (k + length if k < 0 else k)]
            cost[d + 1] = cost[d] + here[at[j] + v]
            state[1] += 1
            if state[1] > max_nodes:
                return best, state[0], state[1], True
            count[d + 1] = _node(flat, start, residue, periods, pair_min, twins, shifts, child, at, cost[d + 1],
                                 best, state, closure_limit, choice[d + 1:], values[d + 1])
            if count[d + 1] > 0:
                d += 1
                tried[d] = 0
                continue
        elif d == 0:
            return best, state[0], state[1], False
        else:
            d -= 1
        shifts[choice[d]] = -1  # back from a child of depth d
        if state[0] <= 0:
            return best, state[0], state[1], False


@numba.njit(cache=True, nogil=True)
def _bounds(twins, shifts, residue, i):
    """Residues of job i allowed by the ordering of identical jobs."""
    lo, hi = 0, residue[i] - 1
    for j in range(len(residue)):
        if twins[i, j] and shifts[j] >= 0:
            if j < i:
                lo = max(lo, shifts[j])
            else:
                hi = min(hi, shifts[j])
    return lo, hi


@numba.njit(cache=True, nogil=True)
def _node(flat, start, residue, periods, pair_min, twins, shifts, here, at, cost, best, state, closure_limit, choice,
          values):
    """One node of the search (``optimiser._exact``'s ``search`` up to its loop over children): settles the
    last job or the last two, or prunes, or writes the job to branch on (``choice[0]``) and its residues in
    the order to try (``values``); how many."""
    n = len(residue)
    free = np.array([i for i in range(n) if shifts[i] < 0], np.int64)
    if len(free) == 1:  # the last job's best residue is read off its cost array
        i = free[0]
        lo, hi = _bounds(twins, shifts, residue, i)
        row = here[at[i]:at[i + 1]]
        v = lo + np.argmin(row[lo:hi + 1])
        if cost + row[v] < state[0]:
            best[:] = shifts
            best[i], state[0] = v, cost + row[v]
        return 0
    mins = np.array([here[at[i]:at[i + 1]].min() for i in free], np.int64)
    rest = 0
    for a in free:
        for b in free:
            if a < b and start[a, b] >= 0:
                rest += pair_min[a, b]
    bound = cost + rest + mins.sum()
    if bound >= state[0]:
        return 0
    if len(free) == 2 and not twins[free[0]].any() and not twins[free[1]].any():
        i, j = free[0], free[1]
        g = math.gcd(periods[i], periods[j])
        if start[i, j] >= 0 and g * g <= closure_limit:
            _close_pair(flat, start, i, j, g, here[at[i]:at[i + 1]], here[at[j]:at[j + 1]], shifts, cost, best, state)
            return 0
    pick, cands = -1, np.zeros(0, np.int64)
    for m in range(len(free)):  # candidates of each free job: residues that can still beat the incumbent
        i = free[m]
        slack = state[0] - (bound - mins[m])
        lo, hi = _bounds(twins, shifts, residue, i)
        idx = np.flatnonzero(here[at[i] + lo:at[i] + hi + 1] < slack) + lo
        if pick < 0 or len(idx) < len(cands):
            pick, cands = i, idx
        if len(idx) == 0:
            return 0
    ordered = cands[np.argsort(here[at[pick]:at[pick + 1]][cands], kind="mergesort")]
    choice[0] = pick
    values[:len(ordered)] = ordered
    return len(ordered)


@numba.njit(cache=True, nogil=True)
def _close_pair(flat, start, i, j, g, arr_i, arr_j, shifts, cost, best, state):
    """Best joint residues of the last two jobs: they interact only modulo their gcd."""
    a_i = arr_i.copy().reshape(-1, g)
    a_j = arr_j.copy().reshape(-1, g)
    min_i = np.array([a_i[:, x].min() for x in range(g)], np.int64)
    min_j = np.array([a_j[:, y].min() for y in range(g)], np.int64)
    row = start[i, j]
    best_total, rx, ry = 0, -1, -1
    for x in range(g):
        for y in range(g):
            d = y - x
            total = min_i[x] + min_j[y] + flat[row + (d + g if d < 0 else d)]
            if rx < 0 or total < best_total:
                best_total, rx, ry = total, x, y
    if cost + best_total < state[0]:
        best[:] = shifts
        best[i] = rx + g * np.argmin(a_i[:, rx])
        best[j] = ry + g * np.argmin(a_j[:, ry])
        state[0] = cost + best_total


@numba.njit(cache=True, nogil=True)
def pair_tables(periods, comms, weights):
    """Every pair's :func:`pair_table` times its weight, one array after another: (the tables, where pair
    (i, j), i < j, starts (-1: weight 0, no table), each table's minimum and maximum)."""
    n = len(periods)
    at = np.full((n, n), -1, np.int64)
    total = 0
    for i in range(n):
        for j in range(i + 1, n):
            if weights[i, j] != 0:
                at[i, j] = total
                total += math.gcd(periods[i], periods[j])
    flat = np.zeros(total, np.int64)
    low, high = np.zeros((n, n), np.int64), np.zeros((n, n), np.int64)
    for i in range(n):
        for j in range(i + 1, n):
            if at[i, j] >= 0:
                table = pair_table(periods[i], comms[i], periods[j], comms[j]) * weights[i, j]
                flat[at[i, j]:at[i, j] + len(table)] = table
                low[i, j], high[i, j] = table.min(), table.max()
    return flat, at, low, high


@numba.njit(cache=True, nogil=True)
def all_directed_rows(tables, at, pairs, factors, residue, periods):
    """:func:`directed_rows` of every active pair (``pairs[k] = (i, j)``, its table at ``at[i, j]`` in
    ``tables``, scaled by ``factors[k]``), one row after another: (the rows, where ``directed[i][j]`` starts
    (-1: none), each pair's minimum)."""
    n = len(residue)
    start = np.full((n, n), -1, np.int64)
    total = 0
    for k in range(len(pairs)):
        i, j = pairs[k, 0], pairs[k, 1]
        start[i, j], start[j, i] = total, total + residue[j]
        total += residue[j] + residue[i]
    flat = np.zeros(total, np.int64)
    low = np.zeros(len(pairs), np.int64)
    for k in range(len(pairs)):
        i, j = pairs[k, 0], pairs[k, 1]
        g = math.gcd(periods[i], periods[j])
        forward, backward, low[k] = directed_rows(tables[at[i, j]:at[i, j] + g], factors[k], residue[j] // g,
                                                  residue[i] // g)
        flat[start[i, j]:start[i, j] + residue[j]] = forward
        flat[start[j, i]:start[j, i] + residue[i]] = backward
    return flat, start, low
