"""The model's word on a scenario before it runs: each job's iteration time and each policy's verdict.

The prediction "before the run" (docs/report.md, "The kinds of prediction"):
what ``shiftbed plan`` predicts from the scenario file alone, nothing measured,
steady state, with bursts sharing a link as the run's transport makes them
(``prediction.WIRE_SHARING``). A policy's change against ``none`` is
``throughput.throughput_change_pct`` of the predicted means, and its verdict the
sweep's: helps above the threshold, hurts below minus it, else neutral
(``verdict.PolicyChange`` with no interval, the model having no noise).

Beside it, the same prediction with the jobs as the fabric will run them, from
what the batch's earlier scenarios measured of it (:func:`from_the_fabric`,
``fabricfit``): also made before the run, from nothing of this scenario's.
"""

from __future__ import annotations

from controller.theory.unsimulated import exception_line
from scenarios import spec
from scenarios.analysis.verdict import BASELINE, THRESHOLD_PCT, PolicyChange
from scenarios.batch import fabricfit
from scenarios.experiment.prediction import WIRE_SHARING
from scenarios.planning import build_plan, planned_jobs
from scenarios.report.story import BEFORE
from scenarios.results import utc_timestamp
from scenarios.throughput import throughput_change_pct

FABRIC = "before the run, from the fabric"
FABRIC_KEY = "from_the_fabric"  # where prediction.json holds it


def model_verdict(policy: str, change_pct: float | None, threshold_pct: float = THRESHOLD_PCT) -> str | None:
    """helps / neutral / hurts of a change the model predicts (None for ``none`` and for no change)."""
    if change_pct is None:
        return None
    return PolicyChange(policy, change_pct, 0.0, threshold_pct).verdict


def before_the_run(scenario, policies: tuple[str, ...], threshold_pct: float = THRESHOLD_PCT,
                   jobs: list | None = None) -> dict:
    """``prediction.json``: per policy, each job's predicted iteration time (ms), the change against
    ``none`` (%) and the verdict; a policy the model could not predict has its reason instead.
    ``jobs``: the jobs as the fabric will run them (``fabricfit.jobs_as_run``); default as declared."""
    sharing = WIRE_SHARING[scenario.transport]
    plan = build_plan(scenario, policies=tuple(dict.fromkeys((BASELINE, *policies))), sharing=sharing,
                      random_draws=0, jobs=jobs)
    predicted = {p: {j: v["predicted_iteration_ms"] for j, v in entry.items() if isinstance(v, dict)}
                 for p, entry in plan["policies"].items() if "error" not in entry and "unsimulated" not in entry}
    none = predicted.get(BASELINE)
    out = {}
    for policy in policies:
        entry = plan["policies"].get(policy, {})
        if policy not in predicted:
            out[policy] = {"unavailable": entry.get("error") or entry.get("unsimulated") or "not predicted"}
            continue
        change = None if not none else throughput_change_pct(predicted[policy], none)
        out[policy] = {"jobs": predicted[policy], "change_pct": change,
                       "verdict": model_verdict(policy, change, threshold_pct)}
    return {"kind": BEFORE, "written": utc_timestamp(), "tcp_sharing": sharing, "feasible": plan["feasible"],
            "threshold_pct": threshold_pct, "policies": out}


def fabric_prediction(folder, name: str, scenario, before: dict) -> dict:
    """The scenario's prediction from the fabric: as ``prediction.json`` holds it, or, where it holds
    none (a scenario predicted before the batch made this kind, or on a fleet's worker, which sees only
    its own scenario), made now from the batch's scenarios before it, as it would have been."""
    stored = before.get(FABRIC_KEY) or {}
    if "policies" in stored:
        return stored
    return from_the_fabric(folder, name, scenario, scenario.policies, before.get("threshold_pct", THRESHOLD_PCT))


def from_the_fabric(folder, name: str, scenario, policies: tuple[str, ...],
                    threshold_pct: float = THRESHOLD_PCT) -> dict:
    """The prediction before the run from the fabric as the batch's earlier scenarios measured it
    (``fabricfit``): :func:`before_the_run`'s form with the fabric's figures, or ``unavailable`` with why
    (also when the model fails on it: a prediction's failure is said and never stops the batch)."""
    try:
        return _from_the_fabric(folder, name, scenario, policies, threshold_pct)
    except Exception as exc:
        return {"kind": FABRIC, "unavailable": exception_line(exc)}


def _from_the_fabric(folder, name, scenario, policies, threshold_pct):
    measured = []
    for earlier in folder.names[:folder.names.index(name)]:
        if folder.is_done(earlier):
            kept = folder.done_dir(earlier) / folder.outcome(earlier)["kept"]
            measured.append((earlier, fabricfit.solo_figures(kept, spec.load(folder.scenario_file(earlier)))))
    fabric = fabricfit.profile(measured)
    if fabric is None:
        return {"kind": FABRIC, "unavailable": f"fewer than {fabricfit.MIN_JOBS} jobs measured alone in the "
                                               "batch's earlier scenarios"}
    jobs = fabricfit.jobs_as_run(planned_jobs(scenario), fabric)
    return {**before_the_run(scenario, policies, threshold_pct, jobs), "kind": FABRIC, "fabric": fabric.as_dict()}
