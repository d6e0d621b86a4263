"""The fabric as a batch has measured it so far, and a scenario's jobs as that fabric will run them.

The prediction from the file (``predict.before_the_run``) runs each job as
declared. On the wire a job runs as calibration makes it
(``scenarios/experiment/calibration.py``): its solo iteration a little under
its period, its burst a share of its ``comm_ms``, the first part of each burst
a start-up (process start, the transport's handshake) that is not on the
link, its data at the rate a burst reaches alone. None of that is the
scenario's: it is the fabric's and the transport's. So before a scenario
runs, the batch takes those figures from every job measured alone in the
batch's *earlier* scenarios (kept runs that kept fidelity; medians over
their jobs) and runs this scenario's jobs as the fabric will run them,
against the schedule of their declared timings (the one the controller
makes). Nothing of the scenario itself, or of any later one, is used; the
batch's first scenario has no such prediction.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass

from controller.theory.fluidjob import FluidJob
from scenarios import spec
from scenarios.analysis.tables import BUSY_START_MS

MIN_JOBS = 2  # solo jobs measured before the fabric's figures are used


@dataclass(frozen=True)
class FabricProfile:
    """What calibration made of declared jobs on this fabric (medians over the jobs measured alone)."""

    period_share: float  # solo iteration / declared period
    burst_share: float  # solo burst (start-up and data) / declared comm_ms
    startup_ms: float  # the part of a burst before and after its data, not on the link
    rate_share: float  # a burst's rate alone / its host link's rate
    jobs: int  # solo jobs the medians are over
    scenarios: tuple[str, ...]  # the scenarios they were measured in

    def as_dict(self) -> dict:
        return {**asdict(self), "scenarios": list(self.scenarios)}


def solo_figures(results_dir, scenario: spec.Scenario) -> list[dict]:
    """Per job of a kept run that kept fidelity: its declared period and comm, and its solo figures."""
    summary = json.loads((results_dir / "summary.json").read_text())
    if not summary.get("fidelity_ok"):
        return []
    solo = summary.get("fidelity", {}).get("solo", {})
    out = []
    for job in scenario.jobs:
        s = solo.get(job.name)
        if not s or not s.get("burst_mbps") or s.get("reused_from"):  # a reused one was counted where measured
            continue
        out.append({"period_ms": job.period_ms, "comm_ms": job.comm_ms, "iteration_ms": s["iteration_ms"],
                    "burst_ms": s["comm_ms"], "data_ms": s["data_ms"], "burst_mbps": s["burst_mbps"],
                    "host_link_mbps": scenario.fabric.host_link_mbps})
    return out


def profile(measured: list[tuple[str, list[dict]]]) -> FabricProfile | None:
    """The medians over ``measured`` (scenario name, its :func:`solo_figures`); None below :data:`MIN_JOBS`."""
    jobs = [(name, f) for name, figures in measured for f in figures]
    if len(jobs) < MIN_JOBS:
        return None
    fs = [f for _, f in jobs]
    return FabricProfile(
        period_share=statistics.median(f["iteration_ms"] / f["period_ms"] for f in fs),
        burst_share=statistics.median(f["burst_ms"] / f["comm_ms"] for f in fs),
        startup_ms=statistics.median(f["burst_ms"] - f["data_ms"] for f in fs),
        rate_share=statistics.median(f["burst_mbps"] / f["host_link_mbps"] for f in fs),
        jobs=len(fs), scenarios=tuple(dict.fromkeys(name for name, _ in jobs)))


def jobs_as_run(planned: list[FluidJob], fabric: FabricProfile) -> list[FluidJob]:
    """The scenario's jobs as the fabric will run them, from the jobs as declared (``planning.planned_jobs``):
    the period and the burst's data time as calibration makes them, the start-up part of the computation
    (as the run's model has it), a burst alone reaching the fabric's share of its link (so the shared link
    has that much more room), and a burst that starts beside another's costing what the run's model
    charges when it has no figure of its own."""
    out = []
    for job in planned:
        period_ms = fabric.period_share * job.period_ms
        data_ms = min(max(0.01, fabric.burst_share * job.comm_ms - fabric.startup_ms), 0.99 * period_ms)
        headroom = max(1.0, job.link_headroom / fabric.rate_share)
        out.append(FluidJob(job.name, period_ms, data_ms, headroom, busy_start_ms=BUSY_START_MS))
    return out
