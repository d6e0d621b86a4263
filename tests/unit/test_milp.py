"""The CP-SAT models find the structure-aware optimiser's optimum; the fair model's reductions
(residues modulo G_i, an anchor, identical jobs in order) keep every optimum reachable."""

import itertools
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from controller.theory import milp
from controller.theory.schedule import JobTiming, _Problem, compute_schedule, overlap_quanta

REPO = Path(__file__).resolve().parents[2]


def random_instance(rng, twins: bool):
    n = rng.randint(2, 5)
    base = rng.choice([1, 5, 10])  # common factors make feasibility a real question
    periods = [base * rng.randint(3, 12) for _ in range(n)]
    comms = [max(1, int(t * rng.uniform(0.05, 0.5) / n)) for t in periods]
    if twins:  # the same job two or three times
        for i in range(1, n):
            if rng.random() < 0.5:
                j = rng.randrange(i)
                periods[i], comms[i] = periods[j], comms[j]
    return periods, comms


def optimiser(periods, comms) -> int:
    jobs = [JobTiming(f"j{i}", t, c) for i, (t, c) in enumerate(zip(periods, comms, strict=True))]
    sched = compute_schedule(jobs, 1.0, method="exact")
    return overlap_quanta(periods, comms, [round(sched.shifts_ms[j.name]) for j in jobs])


@pytest.mark.parametrize("seed", range(16))
def test_both_models_prove_the_optimisers_optimum(seed):
    rng = random.Random(1000 + seed)
    periods, comms = random_instance(rng, twins=seed % 2 == 1)
    ours = optimiser(periods, comms)
    for model in milp.MODELS:
        result = milp.solve_cpsat(periods, comms, time_limit_s=20, model=model)
        assert result.optimal and result.status == "OPTIMAL"
        assert result.objective == ours == result.bound, (model, periods, comms)
        assert overlap_quanta(periods, comms, result.shifts) == ours


def brute_optima(periods, comms):
    """Every shift vector (first job at 0, the others over their whole period) of least overlap."""
    costs = {(0, *rest): overlap_quanta(periods, comms, (0, *rest))
             for rest in itertools.product(*(range(t) for t in periods[1:]))}
    best = min(costs.values())
    return best, [s for s, c in costs.items() if c == best]


def canonical(shifts, periods, comms):
    """The image of a schedule in the fair model's domain: the anchor moved to 0 (a common shift),
    each shift modulo its residue G_i, identical jobs other than the anchor sorted (a swap)."""
    prob = _Problem(list(periods), list(comms))
    anchor = max(range(len(periods)), key=lambda i: prob.residue[i])
    out = [(s - shifts[anchor]) % prob.residue[i] for i, s in enumerate(shifts)]
    for group in milp.identical_groups(periods, comms):
        free = [i for i in group if i != anchor]
        for i, v in zip(free, sorted(out[i] for i in free), strict=True):
            out[i] = v
    return out


@pytest.mark.parametrize("periods, comms", [
    ([6, 6, 6], [1, 2, 1]),           # two identical jobs among three of one period
    ([4, 4, 4, 4], [1, 1, 1, 1]),     # four identical jobs: the anchor is one of them
    ([6, 6, 6], [2, 2, 2]),           # identical and exactly separable
    ([8, 4, 8, 4], [3, 1, 3, 1]),     # two pairs of twins, harmonic periods
    ([6, 9, 6, 9], [2, 2, 2, 3]),     # twins whose optimum overlaps
    ([5, 10, 10], [2, 4, 4]),         # infeasible: the twins must share some overlap
])
def test_symmetry_breaking_cuts_off_no_optimum(periods, comms):
    best, optima = brute_optima(periods, comms)
    assert milp.identical_groups(periods, comms)
    for model in milp.MODELS:
        assert milp.solve_cpsat(periods, comms, time_limit_s=20, model=model).objective == best
    assert optimiser(periods, comms) == best
    from ortools.sat.python import cp_model

    for shifts in optima:  # every optimum's image satisfies the fair model and keeps its cost
        image = canonical(shifts, periods, comms)
        assert overlap_quanta(periods, comms, image) == best
        built = milp.build_model(periods, comms, "fair")
        for var, v in zip(built.shifts, image, strict=True):
            built.model.Add(var == v)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.Solve(built.model) == cp_model.OPTIMAL, (shifts, image)
        modelled = built.constant + built.unit * sum(c * solver.Value(v) for c, v, _ in built.terms)
        assert modelled == best


def test_fair_domains_are_the_optimisers_residues():
    periods, comms = [300, 200, 600, 7], [20, 30, 40, 1]  # 7 is coprime to all: its pairs are inert
    built = milp.build_model(periods, comms, "fair")
    proto = built.model.Proto()
    domains = [list(proto.variables[var.Index()].domain) for var in built.shifts]
    residues = _Problem(periods, comms).residue
    assert residues == [300, 200, 600, 1]
    assert domains == [[0, 299], [0, 199], [0, 0], [0, 0]]  # the largest residue is the anchor
    # the pairs with the job of period 7 (gcd 1) overlap c_i x 1 quanta per lcm whatever the shifts:
    # over the hyper-period 4200, 20 x 2 + 30 x 3 + 40 x 1
    assert built.constant == 170
    assert built.unit * math.lcm(300, 200, 600) == 4200


def test_objectives_beyond_64_bits_are_refused():
    periods = [9973, 9967, 9949, 9941, 9931, 9929, 9923, 9907]  # primes: every pair lcm is their product
    comms = [t // 9 for t in periods]
    with pytest.raises(milp.BeyondCpsat):
        milp.build_model(periods, comms, "plain")


def test_unknown_model_is_refused():
    with pytest.raises(ValueError, match="unknown CP-SAT model"):
        milp.build_model([4, 6], [1, 1], "mip")


def test_shiftbed_imports_without_loading_ortools():
    code = ("import sys; import controller.theory.milp, controller.theory.sweep, scenarios.cli; "
            "sys.exit('ortools' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_capped_run_reports_its_bound_and_no_false_optimum():
    periods, comms = [2300, 1400, 2600, 200, 200, 650, 350], [56, 54, 58, 10, 10, 39, 14]
    result = milp.solve_cpsat(periods, comms, time_limit_s=0.05)
    assert not result.optimal and result.status in ("UNKNOWN", "FEASIBLE")
    heuristic = compute_schedule([JobTiming(f"j{i}", t, c) for i, (t, c) in enumerate(zip(periods, comms, strict=True))],
                                 1.0, method="heuristic")
    assert 0 <= result.bound <= heuristic.overlap_ms
    if result.objective is not None:
        assert result.bound <= result.objective == overlap_quanta(periods, comms, result.shifts)
