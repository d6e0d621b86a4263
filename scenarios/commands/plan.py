"""``shiftbed plan SCENARIO``: theory only — LCM, gcd feasibility, shifts, predicted iteration times.

The schedule comes from ``controller.theory.schedule`` (exact; ``--heuristic`` when
the instance is beyond it); predictions come from the fluid model
(``controller.theory.fluid``): the jobs as they are (true periods and bursts)
against each policy's schedule on the grid, over a horizon, beside two
baselines (``none`` and random start offsets), on the link the jobs share: a
fabric faster than its host links carries more than one burst at full rate (``sharedlink.planned_headroom``).

With a fabric and workers, the jobs meet only where their routes do
(``scenarios/routes.py``): the schedule keeps apart only the pairs that share a
directed link (``conflicts.ConflictGraph``), and the fluid model shares every
link its bursts cross max-min fairly (``fabricshare.JobLinks``). Without them,
every pair meets on one link.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from dataclasses import dataclass, replace

from controller import limits
from controller.theory import fluid, sweep
from controller.theory.conflicts import ConflictGraph
from controller.theory.fabricshare import JobLinks
from controller.theory.policies import POLICIES, TCP_SHARING, UnknownPolicy, get_policy
from controller.theory.schedule import (
    BeyondExactMethod,
    compute_schedule,
    period_quanta,
    separating_interval,
    to_quanta,
)
from scenarios import policyfiles, spec
from scenarios.errors import InputError

DEFAULT_RANDOM_DRAWS = 20


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


def build_plan(scenario: spec.Scenario, quantum_ms: float | None = None, heuristic: bool = False,
               policies: tuple[str, ...] | None = None, iterations: int | None = None, seed: int = 0,
               horizon_ms: float | None = None, realign_s: float | None = None,
               random_draws: int = DEFAULT_RANDOM_DRAWS, sharing: str = "fair",
               link_traces: dict[str, fluid.LinkTrace] | None = None,
               jobs: list[fluid.FluidJob] | None = None) -> dict:
    """The plan as a JSON-ready dict (also used by ``run`` to record the prediction).

    The schedules see the jobs on the grid; the fluid model runs the jobs as
    they are (their true periods and bursts) against those schedules' windows.
    ``sharing``: one of :data:`TCP_SHARING`, for the policies (and baselines) that leave sharing to TCP.
    ``link_traces``: a :class:`fluid.LinkTrace` for each policy whose link is to be drawn (``explore``).
    ``random_draws=0``: no random-offsets baseline (its fields None), for a caller that reads only each
    policy's predicted iteration times; it is most of the work where the horizon is long.
    ``jobs``: the jobs as they will run, one per scenario job in order (default: as declared,
    :func:`planned_jobs`); the schedule is still made from the declared timings, as the controller's is.
    """
    q = quantum_ms or scenario.quantum_ms
    timings = scenario.timings(q)
    for i, t in enumerate(timings):
        if t.comm_ms >= t.period_ms:
            raise InputError(f"{scenario.path}: jobs[{i}].comm_ms: at quantum {q:g} ms comm rounds up to "
                             f"{t.comm_ms:g} ms, not less than period {t.period_ms:g} ms")
    fabric = fabric_model(scenario)
    method = {"method": "heuristic" if heuristic else "exact",
              "pair_weights": None if fabric is None else fabric.graph.meeting_weights()}
    try:
        schedule = compute_schedule(timings, q, **method)
    except BeyondExactMethod as exc:
        raise InputError(f"{scenario.path}: jobs: {exc}") from None
    policies = policies or scenario.policies
    knobs = scenario.knobs if realign_s is None else replace(scenario.knobs, realign_s=realign_s)
    jobs = jobs or planned_jobs(scenario)
    horizon = None if iterations else (horizon_ms or fluid.default_horizon_ms(jobs))
    length = {"iterations": iterations} if iterations else {"horizon_ms": horizon}
    cache = {tuple(timings): schedule}
    results, padding, errors, unsimulated = {}, {}, {}, {}
    for p in dict.fromkeys(("none", *policies)):
        try:
            _, results[p], padding[p] = fluid.predict_policy(p, timings, jobs, q, knobs, cache, method,
                                                             seed=seed, links=fabric and fabric.links,
                                                             tcp_sharing=sharing,
                                                             link_trace=(link_traces or {}).get(p), **length)
        except BeyondExactMethod as exc:
            raise InputError(f"{scenario.path}: jobs: {p}: {exc}") from None
        except fluid.Unsimulated as exc:  # counted and said, never a crash
            unsimulated[p] = exc.why
        except ValueError as exc:
            errors[p] = str(exc).splitlines()[0]
    missing = {**errors, **unsimulated}
    rand = (random_offsets_baseline(jobs, random_draws, seed, fabric and fabric.links, sharing=sharing, **length)
            if random_draws else None)
    return {
        "scenario": scenario.name,
        "quantum_ms": q,
        "feasible": schedule.feasible,
        "hyperperiod_ms": _num(schedule.hyperperiod_ms),
        "overlap_ms": _num(schedule.overlap_ms),
        "overlap_objective": "pairwise overlapped link-time per hyper-period",
        "method": schedule.method,
        "gap": schedule.gap,
        "horizon_ms": None if horizon is None else _num(horizon),
        "iterations": iterations,
        "tcp_sharing": sharing,
        "jobs": [{"name": t.name, "period_ms": _num(j.period_ms), "comm_ms": _num(j.comm_ms),
                  "grid_period_ms": _num(t.period_ms), "grid_comm_ms": _num(t.comm_ms),
                  "shift_ms": _num(schedule.shifts_ms[t.name]), "solo_period_ms": j.period_ms,
                  "solo_comm_ms": j.comm_ms, "link_headroom": round(f.link_headroom, 3)}
                 for t, j, f in zip(timings, scenario.jobs, jobs, strict=True)],
        "pairs": _pairs(timings, q),
        "baselines": {"none": _baseline_none(results.get("none")), "random_offsets": rand and _baseline_random(rand)},
        "policies": {p: {"error": errors[p]} if p in errors else {"unsimulated": unsimulated[p]} if p in unsimulated
                     else _per_job(results, p, padding[p], rand) for p in policies},
        "unsimulated": {p: why for p, why in unsimulated.items() if p in policies or p == "none"},
        "normalised_throughput": {p: None if p in missing else round(results[p].normalised_throughput, 4)
                                  for p in policies},
        "overlap": {p: None if p in missing else round(results[p].overlap_share, 4) for p in policies},
        **_graph(fabric, [t.name for t in timings]),
        "overlap_by_link": {p: None if p in missing else _by_link(fabric, results[p]) for p in policies},
    }


@dataclass(frozen=True)
class FabricModel:
    """Where a scenario's jobs meet: its wiring, the conflict graph of their routes, and the
    links the fluid model has them share."""

    wiring: object  # topo.wiring.Wiring
    graph: ConflictGraph
    links: JobLinks


def fabric_model(scenario: spec.Scenario) -> FabricModel | None:
    """The scenario's jobs routed over its fabric (``scenarios.routes``); None without a fabric or
    without workers for every job (then every pair meets on one link)."""
    if scenario.fabric is None or any(len(job.workers) < 2 for job in scenario.jobs):
        return None
    from scenarios.routes import fabric_links, job_links, job_routes
    from scenarios.sharedlink import fabric_params
    from topo.wiring import fabric_wiring

    wiring = fabric_wiring(fabric_params(scenario))
    routes = job_routes(scenario, wiring)
    return FabricModel(wiring, ConflictGraph.from_links(job_links(routes)), fabric_links(routes, wiring))


def _graph(fabric: FabricModel | None, names: list[str]) -> dict:
    """``links``: each directed link two or more jobs share, with them; ``conflicts``: each pair
    that meets and where (without a fabric: every pair, on the one link, named by no link);
    ``components``: groups of jobs that meet, directly or through others, in scenario order."""
    if fabric is None:
        return {"links": [], "conflicts": [{"jobs": [a, b], "links": []} for a, b in itertools.combinations(names, 2)],
                "components": [list(names)]}
    name = fabric.wiring.link_name
    return {"links": [{"name": name(link), "jobs": jobs} for link, jobs in fabric.graph.shared_links().items()],
            "conflicts": [{"jobs": [a, b], "links": [name(link) for link in links]}
                          for (a, b), links in fabric.graph.pairs().items()],
            "components": [[n for n in names if n in group] for group in fabric.graph.components()]}


def _by_link(fabric: FabricModel | None, result: fluid.FluidPolicyResult) -> dict[str, float]:
    """A policy's overlap (share of the time two or more bursts move data) on each shared link."""
    if fabric is None:
        return {}
    return {fabric.wiring.link_name(link): round(x, 4) for link, x in result.overlap_by_link.items()}


def random_offsets_baseline(jobs: list[fluid.FluidJob], draws: int, seed: int, links: JobLinks | None,
                            iterations: int | None = None, horizon_ms: float | None = None,
                            sharing: str = "fair") -> dict:
    """``sweep.random_offsets_baseline``, the jobs sharing ``links`` where there are any."""
    return sweep.random_offsets_baseline(jobs, draws, seed, iterations=iterations, horizon_ms=horizon_ms,
                                         links=links, sharing=sharing)


def _pairs(timings, q: float) -> list[dict]:
    """Each pair's gcd and lcm on the grid, and whether (and how) a relative shift separates it."""
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
    return pairs


def _per_job(results: dict, p: str, padding: dict[str, float], rand: dict | None) -> dict:
    """One policy's prediction per job, against both baselines."""
    out = {}
    for name, r in results[p].jobs.items():
        out[name] = {"predicted_iteration_ms": _ms(r.mean_iteration_ms),
                     "throughput_per_s": round(r.throughput_per_s, 4),
                     "change_vs_none": round(fluid.change_vs_none(results, p, name), 4) if "none" in results else None,
                     "change_vs_random_offsets": rand and round(rand["jobs"][name][0] / r.mean_iteration_ms - 1, 4),
                     "change_vs_random_offsets_ci95": rand and [round(x / r.mean_iteration_ms - 1, 4)
                                                                for x in rand["jobs"][name][1:3]],
                     "phase_error_ms": round(r.phase_error_ms, 3),
                     "padding_ms": _num(padding[name])}  # what the policy's schedule added to the period
    return out


def _baseline_none(result: fluid.FluidPolicyResult | None) -> dict | None:
    """``none``'s prediction (None where the model could not simulate it: see ``unsimulated``)."""
    if result is None:
        return None
    return {"normalised_throughput": round(result.normalised_throughput, 4),
            "jobs": {name: {"predicted_iteration_ms": _ms(r.mean_iteration_ms)} for name, r in result.jobs.items()}}


def _baseline_random(rand: dict) -> dict:
    thr = rand["normalised_throughput"]
    return {"normalised_throughput": round(thr[0], 4), "ci95": [round(thr[1], 4), round(thr[2], 4)],
            "draws": rand["draws"],
            "jobs": {name: {"predicted_iteration_ms": _ms(m), "ci95": [_ms(lo), _ms(hi)]}
                     for name, (m, lo, hi) in rand["jobs"].items()}}


def _ms(x: float) -> float | None:
    """A predicted time for JSON: rounded, None where a job never finishes (starved by priority)."""
    return round(x, 3) if math.isfinite(x) else None


def planned_jobs(scenario: spec.Scenario) -> list[fluid.FluidJob]:
    """The scenario's jobs as they are (true period and burst), with the shared link's headroom
    over each (1 without a fabric or workers to place them: every burst alone fills the link)."""
    if scenario.fabric is None or any(len(job.workers) < 2 for job in scenario.jobs):
        return [fluid.FluidJob(j.name, j.period_ms, j.comm_ms) for j in scenario.jobs]
    from scenarios.sharedlink import fabric_params, planned_headroom, shared_link
    from topo.wiring import fabric_wiring

    wiring = fabric_wiring(fabric_params(scenario))
    headroom = planned_headroom(scenario, wiring, shared_link(scenario, wiring))
    return [fluid.FluidJob(j.name, j.period_ms, j.comm_ms, headroom[j.name]) for j in scenario.jobs]


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
    gap = "" if plan["gap"] is None else f", gap {plan['gap']:.1%}"
    simulated = (f"{plan['iterations']} iterations per job" if plan["horizon_ms"] is None
                 else f"horizon {plan['horizon_ms'] / 1000:g} s")
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
