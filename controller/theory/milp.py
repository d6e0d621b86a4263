"""CP-SAT (OR-Tools) baseline for the same problem as ``controller.theory.schedule``.

A generic constraint model, solved with default settings: one integer shift
per job in ``[0, period)`` (the first job fixed at 0, the only symmetry a
modeller would break by hand), for every pair the residue
``d_ij = (s_j - s_i) mod gcd(T_i, T_j)`` and its overlap through an element
constraint on the pair's overlap table, minimising the same objective as the
structure-aware optimiser (pairwise overlapped quanta per hyper-period). It is
used to confirm optima in tests and as the benchmark's reference; it is not
used by the CLI.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from controller.theory.schedule import pair_overlap_table


@dataclass(frozen=True)
class CpsatResult:
    """What CP-SAT found: shifts and objective (quanta), its proven bound, and whether it is optimal."""

    shifts: list[int]
    objective: int
    bound: int
    optimal: bool
    seconds: float


def build_model(periods: Sequence[int], comms: Sequence[int]) -> tuple[cp_model.CpModel, list]:
    """The CP model and its shift variables."""
    n = len(periods)
    h = math.lcm(*periods)
    model = cp_model.CpModel()
    shifts = [model.NewIntVar(0, 0 if i == 0 else periods[i] - 1, f"s{i}") for i in range(n)]
    terms = []
    for i in range(n):
        for j in range(i + 1, n):
            g = math.gcd(periods[i], periods[j])
            table = [int(x) for x in pair_overlap_table(periods[i], comms[i], periods[j], comms[j])]
            diff = model.NewIntVar(-periods[i] + 1, periods[j] - 1, f"diff{i}_{j}")
            model.Add(diff == shifts[j] - shifts[i] + 0)
            shifted = model.NewIntVar(0, periods[i] + periods[j], f"pos{i}_{j}")
            model.Add(shifted == diff + periods[i])  # non-negative before the modulo
            d = model.NewIntVar(0, g - 1, f"d{i}_{j}")
            model.AddModuloEquality(d, shifted, g)
            cost = model.NewIntVar(0, max(table), f"o{i}_{j}")
            model.AddElement(d, table, cost)
            terms.append((h // math.lcm(periods[i], periods[j])) * cost)
    model.Minimize(sum(terms))
    return model, shifts


def solve_cpsat(periods: Sequence[int], comms: Sequence[int], time_limit_s: float | None = None) -> CpsatResult:
    """Minimise pairwise overlap with default CP-SAT settings (optionally under a time cap)."""
    started = time.perf_counter()
    model, shifts = build_model(periods, comms)
    solver = cp_model.CpSolver()
    if time_limit_s is not None:
        solver.parameters.max_time_in_seconds = time_limit_s
    status = solver.Solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT found no solution (status {solver.StatusName(status)})")
    return CpsatResult([int(solver.Value(s)) for s in shifts], int(round(solver.ObjectiveValue())),
                       math.ceil(solver.BestObjectiveBound() - 1e-6), status == cp_model.OPTIMAL,
                       time.perf_counter() - started)
