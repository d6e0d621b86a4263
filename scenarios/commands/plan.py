"""``shiftbed plan SCENARIO``: theory only — LCM, gcd feasibility, shifts, predicted iteration times.

The schedule comes from ``controller.theory.schedule`` (exact; ``--heuristic`` when
the instance is beyond it); predictions come from the fluid model
(``controller.theory.fluid``) run on the on-grid timings for every policy, on the
link the jobs share: a fabric faster than its host links carries more than
one burst at full rate (``sharedlink.planned_headroom``).
"""

from __future__ import annotations

import itertools
import json
import math
import sys

from controller import limits
from controller.theory import fluid
from controller.theory.policies import POLICIES, UnknownPolicy, get_policy
from controller.theory.schedule import (
    BeyondExactMethod,
    compute_schedule,
    period_quanta,
    separating_interval,
    to_quanta,
)
from scenarios import policyfiles, spec
from scenarios.errors import InputError


def add_arguments(parser) -> None:
    parser.add_argument("scenario", help="scenario YAML file")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--quantum-ms", type=float, default=None, help="override the scenario's quantum_ms")
    parser.add_argument("--heuristic", action="store_true",
                        help="use the heuristic (states its optimality gap) instead of the exact optimiser")
    parser.add_argument("--policies", default=None,
                        help=f"comma-separated policies to predict (default: the scenario's; known: {', '.join(POLICIES)})")
    parser.add_argument("--iterations", type=int, default=40, help="iterations simulated per job by the fluid model")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random policy")
    policyfiles.add_argument(parser)


def build_plan(scenario: spec.Scenario, quantum_ms: float | None = None, heuristic: bool = False,
               policies: tuple[str, ...] | None = None, iterations: int = 40, seed: int = 0) -> dict:
    """The plan as a JSON-ready dict (also used by ``run`` to record the prediction)."""
    q = quantum_ms or scenario.quantum_ms
    timings = scenario.timings(q)
    for i, t in enumerate(timings):
        if t.comm_ms >= t.period_ms:
            raise InputError(f"{scenario.path}: jobs[{i}].comm_ms: at quantum {q:g} ms comm rounds up to "
                             f"{t.comm_ms:g} ms, not less than period {t.period_ms:g} ms")
    try:
        schedule = compute_schedule(timings, q, method="heuristic" if heuristic else "exact")
    except BeyondExactMethod as exc:
        raise InputError(f"{scenario.path}: jobs: {exc}") from None
    policies = policies or scenario.policies
    jobs = planned_jobs(scenario, schedule)
    headroom = {j.name: j.link_headroom for j in jobs or ()}
    results = fluid.compare_policies(schedule, tuple(dict.fromkeys(("none", *policies))), jobs, seed=seed,
                                     iterations=iterations)
    pairs = []
    for a, b in itertools.combinations(timings, 2):
        ta, tb = to_quanta(a.period_ms, q), to_quanta(b.period_ms, q)
        interval = separating_interval(ta, to_quanta(a.comm_ms, q), tb, to_quanta(b.comm_ms, q))
        pairs.append({
            "jobs": [a.name, b.name],
            "gcd_ms": _num(math.gcd(ta, tb) * q),
            "lcm_ms": _num(math.lcm(ta, tb) * q),
            "separable": interval is not None,
            "separating_shift_ms": None if interval is None else [_num(interval[0] * q), _num(interval[1] * q)],
        })
    return {
        "scenario": scenario.name,
        "quantum_ms": q,
        "feasible": schedule.feasible,
        "hyperperiod_ms": _num(schedule.hyperperiod_ms),
        "overlap_ms": _num(schedule.overlap_ms),
        "overlap_objective": "pairwise overlapped link-time per hyper-period",
        "method": schedule.method,
        "gap": schedule.gap,
        "jobs": [{"name": t.name, "period_ms": _num(t.period_ms), "comm_ms": _num(t.comm_ms),
                  "shift_ms": _num(schedule.shifts_ms[t.name]), "solo_period_ms": j.period_ms,
                  "solo_comm_ms": j.comm_ms, "link_headroom": round(headroom.get(t.name, 1.0), 3)}
                 for t, j in zip(timings, scenario.jobs, strict=True)],
        "pairs": pairs,
        "policies": {
            p: {name: {"predicted_iteration_ms": round(r.mean_iteration_ms, 3),
                       "throughput_per_s": round(r.throughput_per_s, 4),
                       "change_vs_none": round(fluid.change_vs_none(results, p, name), 4),
                       "phase_error_ms": round(r.phase_error_ms, 3)}
                for name, r in results[p].jobs.items()}
            for p in policies
        },
        "normalised_throughput": {p: round(results[p].normalised_throughput, 4) for p in policies},
    }


def planned_jobs(scenario: spec.Scenario, schedule) -> list[fluid.FluidJob] | None:
    """The schedule's jobs with the shared link's headroom over each (None: no fabric or
    workers to place them, so every burst alone fills the link)."""
    if scenario.fabric is None or any(len(job.workers) < 2 for job in scenario.jobs):
        return None
    from scenarios.sharedlink import fabric_params, planned_headroom, shared_link
    from topo.wiring import fabric_wiring

    wiring = fabric_wiring(fabric_params(scenario))
    headroom = planned_headroom(scenario, wiring, shared_link(scenario, wiring))
    return [fluid.FluidJob(j.name, j.period_ms, j.comm_ms, headroom[j.name]) for j in schedule.jobs]


def _num(x: float) -> int | float:
    """Integral values as int (JSON readers expect hyperperiod_ms to be an int on a 1 ms grid)."""
    return int(x) if float(x).is_integer() else x


def _policies_arg(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = tuple(p.strip() for p in value.split(",") if p.strip())
    try:
        for p in names:
            get_policy(p)
    except UnknownPolicy as exc:
        raise InputError(f"--policies: {exc}") from None
    return names or None


def check_quantum(scenario: spec.Scenario, quantum_ms: float) -> None:
    """``--quantum-ms`` replaces the scenario's quantum, so it gets the schema's bounds on the
    schedule's size (``controller/limits.py``): a tiny quantum would make huge arrays."""
    for job in scenario.jobs:
        problem = limits.period_quanta_problem(job.period_ms, quantum_ms)
        if problem:
            raise InputError(f"--quantum-ms: {job.name}: {problem}")
    problem = limits.schedule_size_problem([period_quanta(j.period_ms, quantum_ms) for j in scenario.jobs],
                                           quantum_ms)
    if problem:
        raise InputError(f"--quantum-ms: {problem}")


def run(args) -> int:
    if args.quantum_ms is not None and not (math.isfinite(args.quantum_ms) and args.quantum_ms > 0):
        raise InputError(f"--quantum-ms: must be a positive number, got {args.quantum_ms}")
    if args.iterations < 2:
        raise InputError(f"--iterations: must be at least 2, got {args.iterations}")
    policyfiles.load(args.policy_file)
    scenario = spec.load(args.scenario)
    if args.quantum_ms is not None:
        check_quantum(scenario, args.quantum_ms)
    plan = build_plan(scenario, args.quantum_ms, args.heuristic, _policies_arg(args.policies),
                      args.iterations, args.seed)
    if args.json:
        print(json.dumps(plan))
    else:
        print(render(plan))
    return 0


def render(plan: dict) -> str:
    """The human-readable table."""
    gap = "" if plan["gap"] is None else f", gap {plan['gap']:.1%}"
    lines = [
        f"scenario {plan['scenario']}  quantum {plan['quantum_ms']:g} ms  hyper-period {plan['hyperperiod_ms']:,} ms",
        f"feasible: {'yes' if plan['feasible'] else 'no'}  (overlap {plan['overlap_ms']:g} ms per hyper-period, "
        f"{plan['method']}{gap})",
        "",
        f"{'job':<12}{'period_ms':>10}{'comm_ms':>10}{'shift_ms':>10}",
    ]
    for j in plan["jobs"]:
        lines.append(f"{j['name']:<12}{j['period_ms']:>10g}{j['comm_ms']:>10g}{j['shift_ms']:>10g}")
    lines.append("")
    for p in plan["pairs"]:
        sep = (f"separable, relative shift in [{p['separating_shift_ms'][0]:g}, {p['separating_shift_ms'][1]:g}] "
               f"mod {p['gcd_ms']:g} ms") if p["separable"] else "not separable"
        lines.append(f"pair {p['jobs'][0]}/{p['jobs'][1]}: gcd {p['gcd_ms']:g} ms, lcm {p['lcm_ms']:g} ms, {sep}")
    roomy = [f"{j['name']} ({j['link_headroom']:g}x)" for j in plan["jobs"] if j["link_headroom"] > 1]
    if roomy:
        lines.append("the shared link is faster than these jobs' bursts alone (link rate / burst rate): "
                     f"{', '.join(roomy)}; bursts that meet share its spare rate before they stretch")
    lines.append("")
    names = [j["name"] for j in plan["jobs"]]
    lines.append("predicted iteration time, ms (change in throughput vs none)")
    lines.append(f"{'policy':<8}" + "".join(f"{n:>20}" for n in names) + f"{'norm. thr.':>12}")
    for p, per_job in plan["policies"].items():
        cells = "".join(f"{per_job[n]['predicted_iteration_ms']:>11.1f} ({per_job[n]['change_vs_none']:+6.1%})" for n in names)
        lines.append(f"{p:<8}{cells}{plan['normalised_throughput'][p]:>12.3f}")
    return "\n".join(lines)


if __name__ == "__main__":
    print("use: shiftbed plan SCENARIO", file=sys.stderr)
