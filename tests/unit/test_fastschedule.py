"""The optimiser's compiled loops (controller/theory/fastschedule.py) against independent computations on
seeded instances: the tables against NumPy's ``pair_overlap_table``, the residues against their
definition, the cost arrays and the dive against ``overlap_quanta``, the branch and bound against every
shift vector, and the compiled kernels against their own source interpreted on Python integers."""

import itertools
import math
import random

import numpy as np
import pytest

from controller.theory import fastschedule
from controller.theory.schedule import (
    _PAIR_CLOSURE_LIMIT,
    _exact,
    _heuristic,
    _Problem,
    overlap_quanta,
    pair_overlap_table,
)


def weighted_instance(rng, n, periods_from, twins=False):
    """Periods from ``periods_from``, bursts below them, pair weights 0-2 (a job repeated if ``twins``)."""
    periods = [rng.choice(periods_from) for _ in range(n)]
    comms = [rng.randint(1, t - 1) for t in periods]
    w = [[0] * n for _ in range(n)]
    for i, j in itertools.combinations(range(n), 2):
        w[i][j] = w[j][i] = rng.randint(0, 2)
    if twins:
        periods[1], comms[1] = periods[0], comms[0]
    return periods, comms, w


def as_arrays(periods, comms, w):
    return np.array(periods, np.int64), np.array(comms, np.int64), np.array(w, np.int64)


@pytest.mark.parametrize("seed", range(200))
def test_pair_tables_and_residues_equal_their_definition(seed):
    rng = random.Random(seed)
    periods, comms, w = weighted_instance(rng, rng.randint(2, 6), list(range(2, 61)))
    tables, start, g, lcm, top, active, residue = fastschedule.pair_tables(*as_arrays(periods, comms, w))
    gcds = {i: [] for i in range(len(periods))}
    for i, j in itertools.combinations(range(len(periods)), 2):
        if w[i][j] == 0:
            assert g[i, j] == 0 and not active[i, j]
            continue
        expected = pair_overlap_table(periods[i], comms[i], periods[j], comms[j]) * w[i][j]
        got = tables[start[i, j]:start[i, j] + g[i, j]]
        assert got.tolist() == expected.tolist()
        assert lcm[i, j] == math.lcm(periods[i], periods[j]) and not active[j, i]
        assert top[i, j] == expected.max() and active[i, j] == (expected.min() != expected.max())
        if active[i, j]:
            gcds[i].append(g[i, j])
            gcds[j].append(g[i, j])
    assert residue.tolist() == [math.lcm(1, *gcds[i]) for i in range(len(periods))]


def objective(prob, shifts):
    """The weighted overlap per hyper-period, from NumPy's tables (not the compiled ones)."""
    return overlap_quanta(prob.periods, prob.comms, shifts, prob.weights)


@pytest.mark.parametrize("seed", range(100))
def test_cost_arrays_and_costs_order_shifts_as_the_overlap_does(seed):
    """Moving one job: its cost array, scaled to the hyper-period and plus everything that does not
    involve that job's residue, is the overlap; the cost of a whole vector likewise."""
    rng = random.Random(1000 + seed)
    periods, comms, w = weighted_instance(rng, rng.randint(3, 5), (4, 6, 8, 9, 12, 18, 24))
    prob = _Problem(periods, comms, w)
    h = math.lcm(*periods)
    shifts = [rng.randrange(t) for t in periods]
    inert = objective(prob, shifts) - prob.cost(shifts) * (h // prob.scale)
    i = rng.randrange(len(periods))
    array = prob.cost_array(i, shifts)
    rest = prob.cost(shifts) - array[shifts[i] % prob.residue[i]]
    for s in range(periods[i]):
        moved = shifts[:i] + [s] + shifts[i + 1:]
        assert (rest + array[s % prob.residue[i]]) * (h // prob.scale) + inert == objective(prob, moved)
        assert prob.cost(moved) * (h // prob.scale) + inert == objective(prob, moved)


@pytest.mark.parametrize("seed", range(100))
def test_the_dive_ends_where_no_single_move_helps(seed):
    rng = random.Random(2000 + seed)
    periods, comms, w = weighted_instance(rng, rng.randint(3, 5), (4, 6, 8, 9, 12, 18, 24))
    prob = _Problem(periods, comms, w)
    shifts = prob.dive(range(len(periods)), [None] * len(periods))
    here = objective(prob, shifts)
    for i in range(len(periods)):
        assert 0 <= shifts[i] < prob.residue[i]
        assert all(objective(prob, shifts[:i] + [s] + shifts[i + 1:]) >= here for s in range(periods[i]))


@pytest.mark.parametrize("seed", range(150))
def test_branch_and_bound_finds_the_optimum_of_every_shift_vector(seed):
    """From a poor incumbent (all at 0) and from the dive, with and without identical jobs, the last
    two jobs closed jointly or not: the optimum over every shift vector (first job at 0)."""
    rng = random.Random(3000 + seed)
    n = rng.choice([3, 4])
    periods, comms, w = weighted_instance(rng, n, (4, 6, 8, 9, 12), twins=seed % 2 == 0)
    prob = _Problem(periods, comms, w)
    optimum = min(objective(prob, (0, *rest)) for rest in itertools.product(*(range(t) for t in periods[1:])))
    for incumbent in ([0] * n, _heuristic(prob, 0, 0)):
        shifts, _ = _exact(prob, incumbent, 10**6)
        assert objective(prob, shifts) == optimum


def run_search(prob, dtype, kernel, incumbent):
    """fastschedule.branch_and_bound (``kernel``: it or its py_func) with the costs as ``dtype``."""
    n, periods, comms, weights, residue = prob.n, *prob.arrays
    rates, offset, g = prob.rates
    pair_min = prob._pair_min.astype(dtype)
    best = np.array(incumbent, np.int64)
    nodes = kernel(periods, comms, weights, residue, rates.astype(dtype), offset, g, pair_min, best, 10**6,
                   _PAIR_CLOSURE_LIMIT, np.empty((n, sum(prob.residue)), dtype), np.zeros(n + 1, dtype),
                   np.empty(n, dtype), np.empty((3, max(prob.residue)), dtype))
    return best.tolist(), nodes


@pytest.mark.parametrize("seed", range(40))
def test_the_interpreted_kernels_on_python_integers_equal_the_compiled_ones(seed):
    """The object-dtype path (instances whose totals could overflow int64) runs the kernels' source in
    the interpreter: on an int64 instance it takes the same steps as the compiled code."""
    rng = random.Random(4000 + seed)
    periods, comms, w = weighted_instance(rng, rng.choice([4, 5]), (6, 8, 12, 16, 24, 36), twins=seed % 3 == 0)
    prob = _Problem(periods, comms, w)
    assert prob.dtype is np.int64
    compiled = run_search(prob, np.int64, fastschedule.branch_and_bound, [0] * prob.n)
    interpreted = run_search(prob, object, fastschedule.branch_and_bound.py_func, [0] * prob.n)
    assert compiled == interpreted
    shifts = [rng.randrange(t) for t in periods]
    out = [np.zeros(prob.residue[1], dtype) for dtype in (np.int64, object)]
    fastschedule.cost_array(1, np.array(shifts), *prob.rates, out[0])
    fastschedule.cost_array.py_func(1, np.array(shifts), prob.rates[0].astype(object), *prob.rates[1:], out[1])
    assert out[0].tolist() == out[1].tolist()
