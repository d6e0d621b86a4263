"""The exact optimiser's loops, compiled (numba): the pair tables, the scaled rates, the greedy dive and
the branch and bound of :mod:`controller.theory.schedule`, which keeps the model, the reductions on the
Python side (residues, the integer scale) and the schedule around them.

Layout. Pair (i, j)'s scaled rate when ``(s_j - s_i) mod g_ij = x`` is ``rates[offset[i, j] + x]``, both
directions stored (``offset[j, i]`` reads the same pair from j's side), ``offset = -1`` for a pair whose
cost does not depend on the shifts. A job's cost array (the cost of each of its ``G_i`` residues against
the jobs with a shift) is a row of its own; a shift of -1 means "not assigned".

One source for both integer kinds. Costs are int64 when the largest total fits (nearly always), Python
integers otherwise: the kernels are compiled for int64, and on object arrays their ``py_func`` (this
same source, run by the interpreter) computes exactly, if slowly. Hence the kernels allocate no array of
costs themselves (the caller passes them, of the instance's dtype), and their helpers are
``register_jitable`` (compiled into a kernel, plain Python under ``py_func``). The kernels release the
GIL (``nogil``): a schedule computed on a thread, as the controller's scheduler does, leaves the other
threads (its REST hub) running.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import register_jitable


@numba.njit(cache=True, nogil=True)
def pair_tables(periods, comms, weights):
    """Every pair's weighted overlap table in one flat array: ``(tables, start, g, lcm, top, active,
    residue)``.

    Pair (i, j), i < j, of positive weight has ``g[i, j] = gcd(T_i, T_j)`` entries from ``start[i, j]``:
    the quanta both are busy per ``lcm[i, j]`` when ``(s_j - s_i) mod g = d``, times the weight (``g`` and
    ``start`` are symmetric). ``top[i, j]``: its largest entry; ``active[i, j]`` (i < j): its entries
    differ, the pair's cost depends on the shifts. ``residue[i]``: the lcm of the gcds of i's active
    pairs, ``G_i`` (s_i matters modulo it)."""
    n = len(periods)
    g = np.zeros((n, n), np.int64)
    start = np.zeros((n, n), np.int64)
    lcm = np.zeros((n, n), np.int64)
    top = np.zeros((n, n), np.int64)
    active = np.zeros((n, n), np.bool_)
    residue = np.ones(n, np.int64)
    total = 0
    for i in range(n):
        for j in range(i + 1, n):
            if weights[i, j] > 0:
                g[i, j] = g[j, i] = math.gcd(periods[i], periods[j])
                lcm[i, j] = periods[i] // g[i, j] * periods[j]
                start[i, j] = start[j, i] = total
                total += g[i, j]
    tables = np.zeros(total, np.int64)
    for i in range(n):
        for j in range(i + 1, n):
            if weights[i, j] > 0:
                table = tables[start[i, j]:start[i, j] + g[i, j]]
                c1, c2 = comms[i], comms[j]
                for delta in range(-c2 + 1, c1):  # offsets where the two bursts touch
                    table[delta % g[i, j]] += weights[i, j] * (min(c1, delta + c2) - max(0, delta))
                top[i, j] = table.max()
                if table.min() != top[i, j]:
                    active[i, j] = True
                    for k in (i, j):
                        residue[k] = residue[k] // math.gcd(residue[k], g[i, j]) * g[i, j]
    return tables, start, g, lcm, top, active, residue


@numba.njit(cache=True, nogil=True)
def overlap(shifts, periods, tables, start, g, h):
    """Weighted pairwise overlapped quanta per hyper-period ``h`` at these shifts, every pair of positive
    weight counted (``h``: an int64 when the total fits, else a Python integer under ``py_func``)."""
    total = h - h
    n = len(shifts)
    for i in range(n):
        for j in range(i + 1, n):
            if g[i, j]:
                lcm = int(periods[i] // g[i, j] * periods[j])  # int(): h may be a Python integer
                total += int(tables[start[i, j] + (shifts[j] - shifts[i]) % g[i, j]]) * (h // lcm)
    return total


@numba.njit(cache=True, nogil=True)
def scaled_rates(tables, start, g, active, factor, rates, pair_min):
    """Fill ``rates`` (length: the active pairs' gcds, twice) with each active pair's table times
    ``factor[i, j]`` (``scale // lcm``), from both sides, and ``pair_min``; returns ``offset``."""
    n = len(g)
    offset = np.full((n, n), -1, np.int64)
    at = 0
    for i in range(n):
        for j in range(i + 1, n):
            if active[i, j]:
                gg, table = g[i, j], tables[start[i, j]:start[i, j] + g[i, j]]
                offset[i, j], offset[j, i] = at, at + gg
                for x in range(gg):  # int(): a Python integer factor stays one
                    rates[at + x] = int(table[x]) * factor[i, j]
                rates[at + gg] = rates[at]
                for x in range(1, gg):  # seen from j: s_i - s_j = x
                    rates[at + gg + x] = rates[at + gg - x]
                pair_min[i, j] = pair_min[j, i] = rates[_argmin(rates, at, at + gg)]
                at += 2 * gg
    return offset


@register_jitable
def _argmin(a, lo, hi):
    """First index of the least ``a[k]``, ``lo <= k < hi``."""
    k = lo
    for x in range(lo + 1, hi):
        if a[x] < a[k]:
            k = x
    return k


@register_jitable
def _add_rolled(out, src, rates, at, g, v):
    """``out[s] = src[s] + rates[at + (s - v) mod g]`` for every s (``len(out)`` a multiple of g; ``src``
    may be ``out``), a block of g at a time in two straight runs."""
    k = (-v) % g
    for block in range(0, len(out), g):
        for t in range(g - k):
            out[block + t] = src[block + t] + rates[at + k + t]
        for t in range(g - k, g):
            out[block + t] = src[block + t] + rates[at + t - (g - k)]


@register_jitable
def _cost_array(i, shifts, rates, offset, g, out):
    """``out[s]``: the cost of job i at residue s against every other job with a shift."""
    out[:] = 0
    for j in range(len(shifts)):
        if j != i and shifts[j] >= 0 and offset[j, i] >= 0:
            _add_rolled(out, out, rates, offset[j, i], g[j, i], shifts[j])


@numba.njit(cache=True, nogil=True)
def cost_array(i, shifts, rates, offset, g, out):
    """:func:`_cost_array` from Python."""
    _cost_array(i, shifts, rates, offset, g, out)


@register_jitable
def _cost(shifts, rates, offset, g, total):
    """``total`` plus every active pair's scaled cost at these shifts."""
    n = len(shifts)
    for i in range(n):
        for j in range(i + 1, n):
            if offset[i, j] >= 0:
                total += rates[offset[i, j] + (shifts[j] - shifts[i]) % g[i, j]]
    return total


@numba.njit(cache=True, nogil=True)
def cost(shifts, rates, offset, g, zero):
    """The active pairs' scaled cost of these shifts (``zero``: 0 of the instance's integer kind)."""
    return _cost(shifts, rates, offset, g, zero)


@numba.njit(cache=True, nogil=True)
def dive(order, shifts, rates, offset, g, residue, work):
    """The heuristic's deterministic part. Each job of ``order`` goes, in turn, to its cheapest residue
    against the jobs already placed (the first, on ties); then, job by job in index order, a job moves
    to its cheapest residue while that is cheaper than where it is, until no job moves. ``work``: a
    scratch array of ``max(residue)`` costs."""
    for i in order:
        out = work[:residue[i]]
        _cost_array(i, shifts, rates, offset, g, out)
        shifts[i] = _argmin(out, 0, len(out))
    improved = True
    while improved:
        improved = False
        for i in range(len(shifts)):
            out = work[:residue[i]]
            _cost_array(i, shifts, rates, offset, g, out)
            k = _argmin(out, 0, len(out))
            if out[k] < out[shifts[i]]:
                shifts[i], improved = k, True


@numba.njit(cache=True, nogil=True)
def branch_and_bound(periods, comms, weights, residue, rates, offset, g, pair_min, best, max_nodes, pair_limit,
                     levels, costs, mins, work):
    """Branch and bound over residues from the incumbent ``best`` (improved in place); returns the nodes
    visited, ``max_nodes + 1`` when the budget ran out.

    Job ``anchor`` (the first of largest residue) stays at 0, identical jobs keep their index order, and
    a node's bound is its cost plus each free job's cheapest residue plus each free pair's cheapest
    value. A node expands the free job with the fewest residues that can still beat the incumbent,
    those residues cheapest first; the last job is read off its cost array, the last two jointly modulo
    their gcd when ``gcd² <= pair_limit``. Scratch, of the costs' dtype: ``levels`` (one row of every
    job's cost array per depth, each job at ``sum(residue[:i])``), ``costs`` (each depth's cost, then
    the incumbent's; all zero on entry), ``mins`` (n) and ``work`` (3 × max(residue))."""
    n = len(periods)
    costs[n] = _cost(best, rates, offset, g, costs[0])
    if costs[n] <= _pair_rest(np.full(n, -1, np.int64), pair_min, costs[0]):  # meets the bound: optimal
        return 0
    anchor = _argmin(-residue, 0, n)
    twins = _twins(periods, comms, weights, anchor)
    at = np.zeros(n + 1, np.int64)
    at[1:] = np.cumsum(residue)
    shifts = np.full(n, -1, np.int64)
    shifts[anchor] = 0
    for i in range(n):
        if i != anchor:
            _cost_array(i, shifts, rates, offset, g, levels[0, at[i]:at[i + 1]])
    choice, cands = np.zeros(n, np.int64), np.zeros((n, residue.max()), np.int64)
    taken, count = np.zeros(n, np.int64), np.zeros(n, np.int64)
    nodes, depth, fresh = 0, 0, True
    while depth >= 0:
        if fresh:
            nodes += 1
            if nodes > max_nodes:
                return nodes
            count[depth] = _expand(depth, shifts, at, residue, rates, offset, g, pair_min, twins, pair_limit,
                                   levels[depth], costs, mins, work, best, choice, cands[depth])
            taken[depth] = 0
        if taken[depth] < count[depth] and (taken[depth] == 0 or costs[n] > 0):
            c, v = choice[depth], cands[depth, taken[depth]]
            taken[depth] += 1
            shifts[c] = v
            for i in range(n):
                if shifts[i] < 0:
                    child, parent = levels[depth + 1, at[i]:at[i + 1]], levels[depth, at[i]:at[i + 1]]
                    if offset[c, i] >= 0:
                        _add_rolled(child, parent, rates, offset[c, i], g[c, i], v)
                    else:
                        child[:] = parent
            costs[depth + 1] = costs[depth] + levels[depth, at[c] + v]
            depth, fresh = depth + 1, True
        else:
            if count[depth] > 0:
                shifts[choice[depth]] = -1
            depth, fresh = depth - 1, False
    return nodes


@register_jitable
def _expand(depth, shifts, at, residue, rates, offset, g, pair_min, twins, pair_limit, arrays, costs, mins, work,
            best, choice, cands):
    """One node: prune it, finish it (one or two free jobs left), or choose the job to branch on
    (``choice[depth]``) and its candidate residues (``cands``, cheapest first, stable); returns how many."""
    n, cost = len(shifts), costs[depth]
    free = np.flatnonzero(shifts < 0)
    if len(free) == 1:  # the last job's best residue is read off its cost array
        i = free[0]
        lo, hi = _bounds(i, shifts, twins, residue)
        v = _argmin(arrays, at[i] + lo, at[i] + hi + 1) - at[i]
        if cost + arrays[at[i] + v] < costs[n]:
            best[:] = shifts
            best[i], costs[n] = v, cost + arrays[at[i] + v]
        return 0
    bound = _pair_rest(shifts, pair_min, cost)
    for i in free:
        mins[i] = arrays[at[i]:at[i + 1]].min()
        bound += mins[i]
    if bound >= costs[n]:
        return 0
    if len(free) == 2 and not twins[free[0]].any() and not twins[free[1]].any():
        i, j = free[0], free[1]
        if offset[i, j] >= 0 and g[i, j] * g[i, j] <= pair_limit:
            _close_pair(i, j, g[i, j], shifts, arrays[at[i]:at[i + 1]], arrays[at[j]:at[j + 1]], rates, offset[i, j],
                        pair_min[i, j], cost, costs, work, best)
            return 0
    fewest, low, high, cut = -1, 0, 0, bound
    for i in free:  # the job with the fewest residues that can still beat the incumbent
        slack = costs[n] - (bound - mins[i])
        lo, hi = _bounds(i, shifts, twins, residue)
        m = 0
        for x in range(at[i] + lo, at[i] + hi + 1):
            m += arrays[x] < slack
        if fewest < 0 or m < fewest:
            choice[depth], fewest, low, high, cut = i, m, lo, hi, slack
        if m == 0:
            return 0
    i, m = choice[depth], 0
    for x in range(low, high + 1):
        if arrays[at[i] + x] < cut:
            cands[m], work[2, m] = x, arrays[at[i] + x]
            m += 1
    cands[:m] = cands[:m][np.argsort(work[2, :m], kind="mergesort")]
    return m


@register_jitable
def _pair_rest(shifts, pair_min, total):
    """``total`` plus the cheapest value of every pair of free jobs."""
    n = len(shifts)
    for a in range(n):
        for b in range(a + 1, n):
            if shifts[a] < 0 and shifts[b] < 0:
                total += pair_min[a, b]
    return total


@register_jitable
def _twins(periods, comms, weights, anchor):
    """``twins[i, j]``: swapping jobs i and j (neither the anchor) changes no cost: the same timing and
    the same weight to every other job."""
    n = len(periods)
    twins = np.zeros((n, n), np.bool_)
    for i in range(n):
        for j in range(n):
            if i != j and i != anchor and j != anchor and periods[i] == periods[j] and comms[i] == comms[j]:
                twins[i, j] = True
                for k in range(n):
                    if k != i and k != j and weights[i, k] != weights[j, k]:
                        twins[i, j] = False
    return twins


@register_jitable
def _bounds(i, shifts, twins, residue):
    """Residues of job i allowed by the ordering of identical jobs (those with a shift)."""
    lo, hi = 0, residue[i] - 1
    for j in range(len(shifts)):
        if twins[i, j] and shifts[j] >= 0:
            if j < i:
                lo = max(lo, shifts[j])
            else:
                hi = min(hi, shifts[j])
    return lo, hi


@register_jitable
def _close_pair(i, j, gg, shifts, row_i, row_j, rates, at, least, cost, costs, work, best):
    """Best joint residues of the last two jobs: they interact only modulo their gcd ``gg`` (the pair's
    rates at ``at``, the least ``least``); for each residue modulo ``gg`` each takes its cheapest residue
    (the first, on ties). The first least pair in ``(x, y)`` order, as a full table's argmin gives."""
    n = len(shifts)
    a_i, a_j = work[0, :gg], work[1, :gg]
    for x in range(gg):
        a_i[x] = row_i[_strided_argmin(row_i, x, gg)]
        a_j[x] = row_j[_strided_argmin(row_j, x, gg)]
    floor = a_j[_argmin(a_j, 0, gg)] + least
    bx, by, low = -1, -1, costs[n] - cost  # the first least total, if below what beats the incumbent
    for x in range(gg):
        if a_i[x] + floor >= low:  # nothing in this row is lower
            continue
        for y in range(gg):
            total = a_i[x] + a_j[y] + rates[at + y - x + (gg if y < x else 0)]
            if total < low:
                bx, by, low = x, y, total
    if bx >= 0:
        best[:] = shifts
        best[i], best[j] = _strided_argmin(row_i, bx, gg), _strided_argmin(row_j, by, gg)
        costs[n] = cost + low


@register_jitable
def _strided_argmin(a, x, step):
    """First index of the least ``a[x + step*m]``."""
    k = x
    for s in range(x + step, len(a), step):
        if a[s] < a[k]:
            k = s
    return k
