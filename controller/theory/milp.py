"""CP-SAT (OR-Tools) baselines for the same problem as ``controller.theory.schedule``.

Two constraint models of one objective (pairwise overlapped quanta per
hyper-period), both exact, both used only by tests and ``bench/solver.py``:

- ``"fair"``: what a modeller who knows the problem's structure writes, so the
  benchmark compares solvers and not formulations. It uses the same reductions
  as the structure-aware optimiser: inert pairs (constant overlap table) are
  a constant; job *i*'s shift lives in ``[0, G_i)`` with ``G_i`` the lcm of its
  active pairs' gcds (``_Problem.residue``: nothing depends on ``s_i`` beyond
  that); the job with the largest ``G_i`` is fixed at 0; identical jobs (same
  period and burst) other than that one are kept in non-decreasing shift
  order. Each active pair's residue is a linear equation
  ``d = s_j - s_i + g*k`` with an integer ``k``, and its overlap an element
  constraint on the pair's table. The objective is every active pair's overlap
  per unit time on one integer scale (``S / lcm(T_i, T_j)`` with ``S`` the lcm of
  the active pairs' lcms), as the optimiser compares them.
- ``"plain"``: the generic model (every shift in ``[0, T_i)``, the first job at
  0, every pair through a modulo constraint, no ordering of identical jobs),
  kept to show how much the formulation alone is worth.

``import ortools`` happens only when a model is built, so the rest of
shiftbed imports without OR-Tools installed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from controller.theory.schedule import _Problem, overlap_quanta, pair_overlap_table

MODELS = ("fair", "plain")
_INT64_MAX = 2**63 - 1


class BeyondCpsat(ValueError):
    """The objective's integer coefficients do not fit CP-SAT's 64-bit integers."""


@dataclass(frozen=True)
class CpsatResult:
    """What CP-SAT found: shifts and objective (quanta per hyper-period; ``None`` when the
    time cap came before any solution), its proven bound (same unit), whether it proved
    optimality, and its time (wall and CPU seconds)."""

    shifts: list[int] | None
    objective: int | None
    bound: int
    optimal: bool
    seconds: float
    cpu_seconds: float
    status: str


@dataclass
class _Built:
    model: object
    shifts: list
    terms: list  # (coefficient, cost variable, largest cost)
    constant: int  # quanta per hyper-period the model leaves out (inert pairs)
    unit: int  # quanta per hyper-period of one unit of the model's objective


def identical_groups(periods: Sequence[int], comms: Sequence[int]) -> list[list[int]]:
    """Indices of jobs with the same period and burst, groups of two or more, in index order."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, key in enumerate(zip(periods, comms, strict=True)):
        groups.setdefault(key, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def _fair(periods: Sequence[int], comms: Sequence[int], cp_model) -> _Built:
    prob = _Problem(list(periods), list(comms))
    n, h = prob.n, math.lcm(*periods)
    model = cp_model.CpModel()
    anchor = max(range(n), key=lambda i: prob.residue[i])
    shifts = [model.NewIntVar(0, 0 if i == anchor else prob.residue[i] - 1, f"s{i}") for i in range(n)]
    for group in identical_groups(periods, comms):
        free = [i for i in group if i != anchor]
        for a, b in zip(free, free[1:], strict=False):
            model.Add(shifts[a] <= shifts[b])
    active = [pair for pair in prob.tables if pair in prob.pair_min]
    scale = prob.scale
    terms = []
    for i, j in active:
        g = math.gcd(periods[i], periods[j])
        table = [int(x) for x in prob.tables[(i, j)]]
        d = model.NewIntVar(0, g - 1, f"d{i}_{j}")
        k = model.NewIntVar(-((prob.residue[j] - 1) // g), (prob.residue[i] + g - 2) // g, f"k{i}_{j}")
        model.Add(d == shifts[j] - shifts[i] + g * k)
        cost = model.NewIntVar(min(table), max(table), f"o{i}_{j}")
        model.AddElement(d, table, cost)
        terms.append((scale // math.lcm(periods[i], periods[j]), cost, max(table)))
    _check_fits(terms)
    model.Minimize(sum(coef * cost for coef, cost, _ in terms))
    inert = sum(int(t[0]) * (h // math.lcm(periods[i], periods[j]))
                for (i, j), t in prob.tables.items() if (i, j) not in prob.pair_min)
    return _Built(model, shifts, terms, inert, h // scale)


def _plain(periods: Sequence[int], comms: Sequence[int], cp_model) -> _Built:
    n, h = len(periods), math.lcm(*periods)
    scale = math.lcm(*(math.lcm(periods[i], periods[j]) for i in range(n) for j in range(i + 1, n)))
    model = cp_model.CpModel()
    shifts = [model.NewIntVar(0, 0 if i == 0 else periods[i] - 1, f"s{i}") for i in range(n)]
    terms = []
    for i in range(n):
        for j in range(i + 1, n):
            g = math.gcd(periods[i], periods[j])
            table = [int(x) for x in pair_overlap_table(periods[i], comms[i], periods[j], comms[j])]
            shifted = model.NewIntVar(1, periods[i] + periods[j] - 1, f"pos{i}_{j}")
            model.Add(shifted == shifts[j] - shifts[i] + periods[i])  # non-negative before the modulo
            d = model.NewIntVar(0, g - 1, f"d{i}_{j}")
            model.AddModuloEquality(d, shifted, g)
            cost = model.NewIntVar(0, max(table), f"o{i}_{j}")
            model.AddElement(d, table, cost)
            terms.append((scale // math.lcm(periods[i], periods[j]), cost, max(table)))
    _check_fits(terms)
    model.Minimize(sum(coef * cost for coef, cost, _ in terms))
    return _Built(model, shifts, terms, 0, h // scale)


def _check_fits(terms) -> None:
    if sum(coef * top for coef, _, top in terms) > _INT64_MAX // 4:
        raise BeyondCpsat("the objective's scaled pair costs exceed 64-bit integers")


def build_model(periods: Sequence[int], comms: Sequence[int], model: str = "fair") -> _Built:
    """The CP model, its shift variables and objective terms, and how to read its objective
    in quanta per hyper-period: ``quanta = constant + unit * objective``."""
    from ortools.sat.python import cp_model  # lazy: OR-Tools is needed only here

    if model not in MODELS:
        raise ValueError(f"unknown CP-SAT model {model!r} (one of {', '.join(MODELS)})")
    return (_fair if model == "fair" else _plain)(periods, comms, cp_model)


def solve_cpsat(periods: Sequence[int], comms: Sequence[int], time_limit_s: float | None = None, *,
                model: str = "fair", workers: int = 1, parameters: dict | None = None) -> CpsatResult:
    """Minimise pairwise overlap with CP-SAT (``workers`` search threads, optionally under a
    time cap; ``parameters``: further ``SatParameters`` fields by name). The objective is
    recomputed exactly from the shifts found."""
    from ortools.sat.python import cp_model

    wall0, cpu0 = time.perf_counter(), time.process_time()
    built = build_model(periods, comms, model)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    if time_limit_s is not None:
        solver.parameters.max_time_in_seconds = time_limit_s
    for name, value in (parameters or {}).items():
        setattr(solver.parameters, name, value)
    status = solver.Solve(built.model)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    raw_bound = solver.BestObjectiveBound()  # costs are never negative: 0 when CP-SAT has none
    bound = built.constant + built.unit * (math.ceil(raw_bound - 1e-6) if math.isfinite(raw_bound) else 0)
    if status == cp_model.UNKNOWN:  # the cap came first
        return CpsatResult(None, None, bound, False, wall, cpu, solver.StatusName(status))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT found no solution (status {solver.StatusName(status)})")
    found = [int(solver.Value(s)) for s in built.shifts]
    objective = overlap_quanta(periods, comms, found)
    modelled = built.constant + built.unit * sum(coef * int(solver.Value(cost)) for coef, cost, _ in built.terms)
    if objective != modelled:
        raise AssertionError(f"CP-SAT's objective {modelled} disagrees with its shifts {found} ({objective})")
    return CpsatResult(found, objective, bound, status == cp_model.OPTIMAL, wall, cpu, solver.StatusName(status))
