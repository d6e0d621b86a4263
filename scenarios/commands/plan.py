"""``shiftbed plan SCENARIO``: theory only — LCM, gcd feasibility, shifts, predicted iteration times.

The command around the model's prediction (``scenarios/planning.py``): its arguments checked, the
plan printed as a table or, with ``--json``, as one object.
"""

from __future__ import annotations

import itertools
import json
import math
import sys

from controller import limits
from controller.theory.policies import POLICIES, TCP_SHARING, UnknownPolicy, get_policy
from controller.theory.schedule import period_quanta
from scenarios import policyfiles, spec
from scenarios.errors import InputError
from scenarios.planning import DEFAULT_RANDOM_DRAWS, build_plan


def add_arguments(parser) -> None:
    parser.add_argument("scenario", help="scenario YAML file")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--quantum-ms", type=float, default=None, help="override the scenario's quantum_ms")
    parser.add_argument("--heuristic", action="store_true",
                        help="use the heuristic (states its optimality gap) instead of the exact optimiser")
    parser.add_argument("--policies", default=None,
                        help=f"comma-separated policies to predict (default: the scenario's; known: {', '.join(POLICIES)})")
    parser.add_argument("--horizon-s", type=float, default=None,
                        help="simulated time per policy after the warm-up (default: long enough for the jobs' "
                             "phases to cycle, within 40 to 400 periods of the longest job)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="instead of a horizon, simulate this many iterations per job")
    parser.add_argument("--realign-s", type=float, default=None,
                        help="re-align a schedule-using policy that enforces no windows (shift) every this many s")
    parser.add_argument("--random-draws", type=int, default=DEFAULT_RANDOM_DRAWS,
                        help="draws of random start offsets for the random-offsets baseline")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random policy and the random offsets")
    parser.add_argument("--sharing", default="fair",
                        help="how bursts share a link where a policy leaves it to TCP: fair (max-min, the ideal "
                             "model; default; what run predicts with for transport: persistent) or leader (fresh "
                             "connections per burst, as iperf3 jobs open: the burst further along keeps more of "
                             "the link; what run predicts with for them)")
    policyfiles.add_argument(parser)


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
    if args.iterations is not None and args.iterations < 2:
        raise InputError(f"--iterations: must be at least 2, got {args.iterations}")
    if args.iterations is not None and args.horizon_s is not None:
        raise InputError("--horizon-s: give either --horizon-s or --iterations, not both")
    for name, value in (("--horizon-s", args.horizon_s), ("--realign-s", args.realign_s)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"{name}: must be a positive number, got {value}")
    if args.random_draws < 1:
        raise InputError(f"--random-draws: must be at least 1, got {args.random_draws}")
    if args.sharing not in TCP_SHARING:
        raise InputError(f"--sharing: must be one of {', '.join(TCP_SHARING)}, got {args.sharing!r}")
    policyfiles.load(args.policy_file)
    scenario = spec.load(args.scenario)
    if args.quantum_ms is not None:
        check_quantum(scenario, args.quantum_ms)
    plan = build_plan(scenario, args.quantum_ms, args.heuristic, _policies_arg(args.policies),
                      args.iterations, args.seed, args.horizon_s and 1000.0 * args.horizon_s, args.realign_s,
                      args.random_draws, args.sharing)
    if args.json:
        print(json.dumps(plan))
    else:
        print(render(plan))
    return 0


def render(plan: dict) -> str:
    """The human-readable table."""
    if "pattern_jobs" in plan:
        return render_patterns(plan)
    gap = "" if plan["gap"] is None else f", gap {plan['gap']:.1%}"
    lines = [
        f"scenario {plan['scenario']}  quantum {plan['quantum_ms']:g} ms  hyper-period {plan['hyperperiod_ms']:,} ms",
        f"feasible: {'yes' if plan['feasible'] else 'no'}  (overlap {plan['overlap_ms']:g} ms per hyper-period, "
        f"{plan['method']}{gap})",
        "",
        f"{'job':<12}{'period_ms':>10}{'comm_ms':>10}{'grid T':>8}{'grid c':>8}{'shift_ms':>10}",
    ]
    for j in plan["jobs"]:
        lines.append(f"{j['name']:<12}{j['period_ms']:>10g}{j['comm_ms']:>10g}{j['grid_period_ms']:>8g}"
                     f"{j['grid_comm_ms']:>8g}{j['shift_ms']:>10g}")
    lines.append("")
    for p in plan["pairs"]:
        sep = (f"separable, relative shift in [{p['separating_shift_ms'][0]:g}, {p['separating_shift_ms'][1]:g}] "
               f"mod {p['gcd_ms']:g} ms") if p["separable"] else "not separable"
        lines.append(f"pair {p['jobs'][0]}/{p['jobs'][1]}: gcd {p['gcd_ms']:g} ms, lcm {p['lcm_ms']:g} ms, {sep}")
    lines += _render_graph(plan)
    roomy = [f"{j['name']} ({j['link_headroom']:g}x)" for j in plan["jobs"] if j["link_headroom"] > 1]
    if roomy:
        lines.append("the shared link is faster than these jobs' bursts alone (link rate / burst rate): "
                     f"{', '.join(roomy)}; bursts that meet share its spare rate before they stretch")
    lines += _render_predictions(plan)
    return "\n".join(lines)


def _render_predictions(plan: dict) -> list[str]:
    """The baselines and each policy's predicted iteration times (rectangles and pattern jobs alike)."""
    simulated = (f"{plan['iterations']} iterations per job" if plan["horizon_ms"] is None
                 else f"horizon {plan['horizon_ms'] / 1000:g} s")
    lines = []
    rand = plan["baselines"]["random_offsets"]
    if plan["tcp_sharing"] != "fair":
        lines += ["", f"bursts left to TCP share a link as {plan['tcp_sharing']!r} (--sharing): as on the emulated "
                  "fabric, not the ideal max-min fair model"]
    none = plan["baselines"]["none"]
    none_text = "unsimulated" if none is None else f"{none['normalised_throughput']:.3f}"
    lines += ["", f"baselines ({simulated}): none (all first bursts at 0) normalised throughput "
              f"{none_text}; random start offsets "
              f"{rand['normalised_throughput']:.3f} [{rand['ci95'][0]:.3f}, {rand['ci95'][1]:.3f}] "
              f"(95 %, {rand['draws']} draws)", ""]
    names = [j["name"] for j in plan["jobs"]]
    lines.append("predicted iteration time, ms (change in throughput vs none / vs random offsets)")
    lines.append(f"{'policy':<9}" + "".join(f"{n:>26}" for n in names) + f"{'norm. thr.':>12}{'overlap':>9}")
    for p, per_job in plan["policies"].items():
        if "error" in per_job:
            lines.append(f"{p:<9}not applicable: {per_job['error']}")
            continue
        if "unsimulated" in per_job:
            lines.append(f"{p:<9} unsimulated: the fluid model could not simulate it ({per_job['unsimulated']})")
            continue
        cells = "".join(_cell(per_job[n]) for n in names)
        lines.append(f"{p:<9}{cells}{plan['normalised_throughput'][p]:>12.3f}{plan['overlap'][p]:>9.1%}")
    if plan["unsimulated"]:
        lines += ["", f"unsimulated: {len(plan['unsimulated'])} of {len(dict.fromkeys(('none', *plan['policies'])))} "
                  f"policies ({', '.join(plan['unsimulated'])}): the fluid model could not simulate them on these "
                  "jobs; the others are predicted as ever"]
    return lines


def render_patterns(plan: dict) -> str:
    """The table of a plan with pattern jobs (``planning.pattern_plan``): the shifts, each pair's
    separating shifts beside the rectangle rule's verdict, and each policy's predicted iteration times."""
    lines = [
        f"scenario {plan['scenario']}  quantum {plan['quantum_ms']:g} ms  hyper-period {plan['hyperperiod_ms']:,} ms",
        f"pattern jobs (given by their phases): {', '.join(plan['pattern_jobs'])}; decided exactly on their busy quanta",
        f"feasible: {'yes' if plan['feasible'] else 'no'}  (overlap {plan['overlap_ms']:g} ms per hyper-period, "
        f"{plan['method']}; compatibility at these shifts {plan['compatibility']:.3f})",
        "",
        f"{'job':<12}{'period_ms':>10}{'busy_ms':>10}{'phases':>8}{'grid T':>8}{'grid busy':>11}{'shift_ms':>10}",
    ]
    for j in plan["jobs"]:
        lines.append(f"{j['name']:<12}{j['period_ms']:>10g}{j['comm_ms']:>10.3f}{j['phases']:>8}"
                     f"{j['grid_period_ms']:>8g}{j['grid_comm_ms']:>11g}{j['shift_ms']:>10g}")
    lines.append("")
    for p in plan["pairs"]:
        a, b = p["jobs"]
        if not p["separable"]:
            sep = f"not separable (best shift: compatibility {p['compatibility']:.3f})"
        elif p["separating_shifts_ms"] is None:
            sep = f"separable, {p['separating_shift_count']} relative shifts of {b} mod {p['gcd_ms']:g} ms"
        else:
            shifts = ", ".join(f"{s:g}" for s in p["separating_shifts_ms"])
            sep = f"separable, relative shift of {b} in {{{shifts}}} ms mod {p['gcd_ms']:g} ms"
        busy = (f"busy {p['busy_ms'][0]:g} + {p['busy_ms'][1]:g} {'<=' if p['rectangle_rule_separable'] else '>'} "
                f"gcd {p['gcd_ms']:g} ms")
        rule = ("the rectangle rule agrees" if p["rectangle_rule_agrees"] else
                f"the rectangle rule would say {'separable' if p['rectangle_rule_separable'] else 'not separable'}")
        lines.append(f"pair {a}/{b}: gcd {p['gcd_ms']:g} ms, lcm {p['lcm_ms']:g} ms, {sep}; {busy}: {rule}")
    lines += _render_graph(plan)
    lines += _render_predictions(plan)
    return "\n".join(lines)


def _render_graph(plan: dict) -> list[str]:
    """Which jobs meet on which links, and each component's shifts (its jobs are scheduled together)."""
    if any(not c["links"] for c in plan["conflicts"]):
        return ["no fabric to route over: every pair of jobs meets on one shared link"]
    lines = ["", "directed links two or more jobs share:" if plan["links"] else "no two jobs share a link"]
    lines += [f"  {link['name']:<16}{', '.join(link['jobs'])}" for link in plan["links"]]
    met = {tuple(c["jobs"]) for c in plan["conflicts"]}
    for c in plan["conflicts"]:
        lines.append(f"{c['jobs'][0]}/{c['jobs'][1]} meet on {len(c['links'])} link(s): {', '.join(c['links'])}")
    apart = [f"{a}/{b}" for a, b in itertools.combinations(sorted(j["name"] for j in plan["jobs"]), 2)
             if (a, b) not in met]
    if apart:
        lines.append(f"never meet (free to burst together): {', '.join(apart)}")
    shift = {j["name"]: j["shift_ms"] for j in plan["jobs"]}
    for k, group in enumerate(plan["components"], 1):
        lines.append(f"component {k}: " + ", ".join(f"{n} shift {shift[n]:g} ms" for n in group))
    return lines


def _cell(job: dict) -> str:
    ms, change = job["predicted_iteration_ms"], job["change_vs_none"]
    return (f"{'never' if ms is None else f'{ms:.1f}':>10} ({'n/a' if change is None else f'{change:+6.1%}':>6} / "
            f"{job['change_vs_random_offsets']:+6.1%})")


if __name__ == "__main__":
    print("use: shiftbed plan SCENARIO", file=sys.stderr)
