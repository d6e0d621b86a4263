"""The sweep's fractions for the distribution a batch's scenarios are drawn from.

A batch's "model" fractions are the model's verdicts for exactly its
scenarios, a sample of a few dozen. Beside them the report gives what
``shiftbed sweep`` says of the whole distribution they were drawn from (the
same sampling arguments, seed and quantum, :data:`SAMPLES` draws per number of
jobs): a batch's model fraction far from the sweep's says its sample is an
unusual one, a wire fraction far from both says the wire differs.
"""

from __future__ import annotations

import math

from controller.theory.sweepstream import SweepCell, run_sweep_cells
from controller.theory.tally import OUTCOMES, Tally, wilson_interval
from scenarios.analysis.verdict import BASELINE

SAMPLES = 2400  # draws per number of jobs: every 95 % interval within about ±2 points, as the map's


def sweep_settings(settings: dict, samples: int = SAMPLES) -> dict:
    """``shiftbed sweep``'s settings for a batch's (``batch.json``'s ``settings``)."""
    policies = [p for p in settings["policies"] if p != BASELINE]
    return {"policy": policies[0], "policies": policies, "seed": settings["seed"], "jobs": list(settings["jobs"]),
            "samples": samples, "period_range": tuple(settings["period_ms"]),
            "frac_range": tuple(settings["comm_frac"]), "quanta": [settings["quantum_ms"]], "zoo": settings["zoo"],
            "zoo_link_mbps": settings["zoo_link_mbps"], "mix": settings.get("mix"), "iterations": None,
            "horizon_ms": None, "realign_s": None, "threshold": settings["threshold_pct"] / 100}


def sweep_fractions(settings: dict, samples: int = SAMPLES) -> dict[str, dict]:
    """Per policy but ``none``, per outcome: ``count``, ``n``, ``fraction`` and its 95 % Wilson ``ci95``
    over the sweep's draws (the shape of ``stats.fractions``)."""
    merged = SweepCell()
    for cell in run_sweep_cells(sweep_settings(settings, samples)).values():
        merged = merged.merge(cell)
    asked = sweep_settings(settings, samples)["policies"]
    return {policy: _fractions(tally) for policy, tally in merged.policies.items() if policy in asked}


def _fractions(tally: Tally) -> dict[str, dict]:
    n = tally.n
    return {o: {"count": getattr(tally, o), "n": n, "fraction": getattr(tally, o) / n if n else math.nan,
                "ci95": list(wilson_interval(getattr(tally, o), n))} for o in OUTCOMES}
