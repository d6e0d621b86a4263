"""The model's prediction for a scenario: LCM, gcd feasibility, shifts, predicted iteration times.

One model for every reader: ``shiftbed plan`` prints its prediction; the batch, the explorer and the
report make theirs with it.

The schedule comes from ``controller.theory.schedule`` (exact; ``heuristic`` when
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

A scenario with a pattern job (one given by its phases, ``spec.ScenarioJob.comm_pattern``) is decided
by the projection theory instead (:func:`pattern_plan`): each job's busy quanta on the grid
(``arcs.Pattern``), two jobs apart for ever exactly at ``arcs.separating_shifts``, N jobs at the shifts
that collide least (``patternschedule.pattern_schedule``). Its predictions come from the fluid model of
pattern jobs (``controller.theory.patternfluid``): every job as its phases at their true offsets (a
job given by ``period_ms`` and ``comm_ms`` as one phase), each policy against windows on its busy arcs,
over a horizon.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from controller.theory import arcs, fluid, patternfluid, patternschedule, sweep
from controller.theory.conflicts import ConflictGraph
from controller.theory.fabricshare import JobLinks
from controller.theory.schedule import (
    BeyondExactMethod,
    compute_schedule,
    separating_interval,
    to_quanta,
)
from scenarios import spec
from scenarios.errors import InputError

DEFAULT_RANDOM_DRAWS = 20
MAX_LISTED_SHIFTS = 24  # a pair's separating shifts are listed up to this many, else counted
PATTERN_ITERATIONS = ("a pattern job's predictions are over a horizon (--horizon-s), not a fixed count of "
                      "iterations")


def build_plan(scenario: spec.Scenario, quantum_ms: float | None = None, heuristic: bool = False,
               policies: tuple[str, ...] | None = None, iterations: int | None = None, seed: int = 0,
               horizon_ms: float | None = None, realign_s: float | None = None,
               random_draws: int = DEFAULT_RANDOM_DRAWS, sharing: str = "fair",
               link_traces: dict[str, fluid.LinkTrace] | None = None,
               jobs: list[fluid.FluidJob] | None = None) -> dict:
    """The plan as a JSON-ready dict (also used by ``run`` to record the prediction); with a pattern job,
    :func:`pattern_plan`'s. The schedules see the jobs on the grid; the fluid model runs the jobs as they
    are (their true periods and bursts) against those schedules' windows.
    ``sharing``: one of :data:`TCP_SHARING`, for the policies (and baselines) that leave sharing to TCP.
    ``link_traces``: a :class:`fluid.LinkTrace` for each policy whose link is to be drawn (``explore``).
    ``random_draws=0``: no random-offsets baseline (its fields None), for a caller that reads only each
    policy's predicted iteration times; it is most of the work where the horizon is long.
    ``jobs``: the jobs as they will run, one per scenario job in order (default: as declared,
    :func:`planned_jobs`); the schedule is still made from the declared timings, as the controller's is.
    """
    if scenario.pattern_jobs:
        return pattern_plan(scenario, quantum_ms, policies, seed, horizon_ms, realign_s, random_draws, sharing, iterations)
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
            _, results[p], padding[p] = fluid.predict_policy(p, timings, jobs, q, knobs, cache, method, seed=seed,
                                                             links=fabric and fabric.links, tcp_sharing=sharing,
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


def pattern_plan(scenario: spec.Scenario, quantum_ms: float | None = None, policies: tuple[str, ...] | None = None,
                 seed: int = 0, horizon_ms: float | None = None, realign_s: float | None = None,
                 random_draws: int = DEFAULT_RANDOM_DRAWS, sharing: str = "fair", iterations: int | None = None) -> dict:
    """The exact plan of a scenario with pattern jobs, as a JSON-ready dict: the shifts that collide least
    (``pattern_schedule``; pairs that never meet on the fabric weigh 0), the pairwise overlap per
    hyper-period they leave, the compatibility score at them, and for each pair the separating shifts
    beside what the rectangle rule (busy quanta ``c1 + c2 <= gcd``) would have said; then each policy's
    predicted iteration times (``patternfluid``), in the same fields as :func:`build_plan`'s (over a horizon:
    InputError for ``iterations``)."""
    if iterations:
        raise InputError(f"{scenario.path}: --iterations: {PATTERN_ITERATIONS}")
    q = quantum_ms or scenario.quantum_ms
    patterns = scenario.busy_patterns(q)
    names = [j.name for j in scenario.jobs]
    fabric = fabric_model(scenario)
    weights = None if fabric is None else {frozenset(names.index(n) for n in pair): w
                                           for pair, w in fabric.graph.meeting_weights().items()}
    found = patternschedule.pattern_schedule(patterns, weights)
    hyper_q = math.lcm(*(p.period_q for p in patterns))
    score = patternschedule.compatibility_score(patterns, found.shifts_q, weights)
    predictions = _pattern_predictions(scenario, patterns, found, q, policies or scenario.policies, seed, horizon_ms,
                                       realign_s, random_draws, sharing, fabric)
    return {
        "scenario": scenario.name,
        "quantum_ms": q,
        "feasible": found.feasible,
        "hyperperiod_ms": _num(hyper_q * q),
        "overlap_ms": _num(int(found.overlap_rate * hyper_q) * q),
        "overlap_objective": "pairwise overlapped link-time per hyper-period",
        "method": "exact" if found.exact else "best found",
        "gap": None,
        "jobs": [{"name": j.name, "period_ms": _num(j.period_ms), "comm_ms": _num(j.comm_ms),
                  "grid_period_ms": _num(p.period_q * q), "grid_comm_ms": _num(p.busy_q * q),
                  "shift_ms": _num(s * q), "phases": 1 if j.comm_pattern is None else len(j.comm_pattern.phases),
                  "profile": j.profile, "busy_ms": [[_num(a * q), _num(n * q)] for a, n in p.arcs]}
                 for j, p, s in zip(scenario.jobs, patterns, found.shifts_q, strict=True)],
        "pairs": _pattern_pairs(names, patterns, q),
        **_graph(fabric, names),
        "pattern_jobs": [names[i] for i in scenario.pattern_jobs],
        "compatibility": round(float(score), 4),
        "search_nodes": found.nodes,
        **predictions,
    }


def pattern_fluid_jobs(scenario: spec.Scenario) -> list[patternfluid.PatternFluidJob]:
    """The scenario's jobs as the pattern model runs them: a pattern job's phases timed at its
    ``model_link_mbps``, any other job its one burst (``PatternFluidJob.rectangle``)."""
    return [patternfluid.PatternFluidJob.rectangle(j.name, j.period_ms, j.comm_ms) if j.comm_pattern is None
            else patternfluid.PatternFluidJob.from_pattern(j.name, j.comm_pattern, j.link_mbps)
            for j in scenario.jobs]


def _pattern_predictions(scenario, patterns, found, q, policies, seed, horizon_ms, realign_s, random_draws,
                         sharing, fabric) -> dict:
    """Each policy's prediction for the pattern jobs, and the two baselines, in :func:`build_plan`'s fields."""
    names = [j.name for j in scenario.jobs]
    try:
        jobs = pattern_fluid_jobs(scenario)
    except ValueError as exc:
        raise InputError(f"{scenario.path}: jobs: {exc}") from None
    schedule = patternfluid.pattern_schedule_record(names, patterns, found.shifts_q, q, found.feasible)
    knobs = scenario.knobs if realign_s is None else replace(scenario.knobs, realign_s=realign_s)
    horizon = horizon_ms or fluid.default_horizon_ms(jobs)
    links = fabric and fabric.links
    results, unsimulated = {}, {}
    for p in dict.fromkeys(("none", *policies)):
        try:
            results[p] = patternfluid.predict_pattern_policy(p, jobs, patterns, schedule, seed=seed, horizon_ms=horizon,
                                                             knobs=knobs, links=links, tcp_sharing=sharing)
        except fluid.Unsimulated as exc:  # counted and said, never a crash
            unsimulated[p] = exc.why
    rand = (sweep.random_offsets_baseline(jobs, random_draws, seed, horizon_ms=horizon, links=links, sharing=sharing,
                                          simulate=patternfluid.simulate_patterns) if random_draws else None)
    no_padding = dict.fromkeys(names, 0)
    return {
        "horizon_ms": _num(horizon),
        "iterations": None,
        "tcp_sharing": sharing,
        "baselines": {"none": _baseline_none(results.get("none")), "random_offsets": rand and _baseline_random(rand)},
        "policies": {p: {"unsimulated": unsimulated[p]} if p in unsimulated else _per_job(results, p, no_padding, rand)
                     for p in policies},
        "unsimulated": {p: why for p, why in unsimulated.items() if p in policies or p == "none"},
        "normalised_throughput": {p: None if p in unsimulated else round(results[p].normalised_throughput, 4)
                                  for p in policies},
        "overlap": {p: None if p in unsimulated else round(results[p].overlap_share, 4) for p in policies},
        "overlap_by_link": {p: None if p in unsimulated else _by_link(fabric, results[p]) for p in policies},
    }


def _pattern_pairs(names: list[str], patterns: list, q: float) -> list[dict]:
    """Each pair's gcd and lcm on the grid, the relative shifts (of the second job, mod gcd) that keep it
    apart for ever (listed up to :data:`MAX_LISTED_SHIFTS`, always counted), its compatibility at its best
    shift, and whether the rectangle rule on the busy quanta would have said the same."""
    pairs = []
    for (a, pa), (b, pb) in itertools.combinations(zip(names, patterns, strict=True), 2):
        g = math.gcd(pa.period_q, pb.period_q)
        count = sum(length for _, length in arcs.separating_arcs(pa, pb))
        listed = arcs.separating_shifts(pa, pb) if count <= MAX_LISTED_SHIFTS else None
        rectangle = pa.busy_q + pb.busy_q <= g
        pairs.append({
            "jobs": [a, b],
            "gcd_ms": _num(g * q),
            "lcm_ms": _num(math.lcm(pa.period_q, pb.period_q) * q),
            "separable": count > 0,
            "separating_shift_count": count,
            "separating_shifts_ms": None if listed is None else [_num(s * q) for s in listed],
            "compatibility": round(arcs.compatibility(pa, pb), 4),
            "busy_ms": [_num(pa.busy_q * q), _num(pb.busy_q * q)],
            "rectangle_rule_separable": rectangle,
            "rectangle_rule_agrees": rectangle == (count > 0),
        })
    return pairs


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
