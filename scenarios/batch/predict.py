"""The model's word on a scenario before it runs: each job's iteration time and each policy's verdict.

The prediction "before the run" (docs/report.md, "The kinds of prediction"):
what ``shiftbed plan`` predicts from the scenario file alone, nothing measured,
steady state, with bursts sharing a link as the run's transport makes them
(``prediction.WIRE_SHARING``). A policy's change against ``none`` is
``results.throughput_change_pct`` of the predicted means, and its verdict the
sweep's: helps above the threshold, hurts below minus it, else neutral
(``verdict.PolicyChange`` with no interval, the model having no noise).
"""

from __future__ import annotations

from scenarios.analysis.verdict import BASELINE, THRESHOLD_PCT, PolicyChange
from scenarios.commands.plan import build_plan
from scenarios.experiment.prediction import WIRE_SHARING
from scenarios.report.story import BEFORE
from scenarios.results import throughput_change_pct, utc_timestamp


def model_verdict(policy: str, change_pct: float | None, threshold_pct: float = THRESHOLD_PCT) -> str | None:
    """helps / neutral / hurts of a change the model predicts (None for ``none`` and for no change)."""
    if change_pct is None:
        return None
    return PolicyChange(policy, change_pct, 0.0, threshold_pct).verdict


def before_the_run(scenario, policies: tuple[str, ...], threshold_pct: float = THRESHOLD_PCT) -> dict:
    """``prediction.json``: per policy, each job's predicted iteration time (ms), the change against
    ``none`` (%) and the verdict; a policy the model could not predict has its reason instead."""
    sharing = WIRE_SHARING[scenario.transport]
    plan = build_plan(scenario, policies=tuple(dict.fromkeys((BASELINE, *policies))), sharing=sharing,
                      random_draws=0)
    jobs = {p: {j: v["predicted_iteration_ms"] for j, v in entry.items() if isinstance(v, dict)}
            for p, entry in plan["policies"].items() if "error" not in entry and "unsimulated" not in entry}
    none = jobs.get(BASELINE)
    out = {}
    for policy in policies:
        entry = plan["policies"].get(policy, {})
        if policy not in jobs:
            out[policy] = {"unavailable": entry.get("error") or entry.get("unsimulated") or "not predicted"}
            continue
        change = None if not none else throughput_change_pct(jobs[policy], none)
        out[policy] = {"jobs": jobs[policy], "change_pct": change,
                       "verdict": model_verdict(policy, change, threshold_pct)}
    return {"kind": BEFORE, "written": utc_timestamp(), "tcp_sharing": sharing, "feasible": plan["feasible"],
            "threshold_pct": threshold_pct, "policies": out}
