"""The lines a run says: one per stage (the live display is ``display.py``).

Stage lines (the plan's verdict, the fabric up, each job calibrated, each
policy done) go to the :data:`stages` logger, which shows INFO whatever the
verbosity; the detail behind them is logged at INFO and DEBUG by each module
and shown with ``-v`` (``scenarios/cli.py``).
"""

from __future__ import annotations

import logging

from scenarios.analysis.tables import STALL_MS

stages = logging.getLogger("scenarios.experiment.stages")
stages.setLevel(logging.INFO)


def plan_line(scenario_name: str, schedule, policies: tuple[str, ...], duration_s: float,
              target_se_pct: float | None = None) -> str:
    """The theory's verdict on the scenario, and what the run will measure (``target_se_pct``: each
    policy stops once every job's mean is known that well, ``duration_s`` the ceiling)."""
    verdict = "feasible" if schedule.feasible else "infeasible"
    until = "" if target_se_pct is None else f" at most, until every job's mean is known to {target_se_pct:g} %"
    return (f"{scenario_name}: theory says {verdict} (hyper-period {schedule.hyperperiod_ms:g} ms); "
            f"{', '.join(policies)} for {duration_s:g} s each{until}")


def fabric_line(fabric, links) -> str:
    """The fabric up: how long it took, its datapath, and the ports captured where the jobs meet."""
    ports = links.ports
    where = (f"shared link {ports[0].name}" if len(ports) == 1
             else f"jobs meet on {len(links.meetings)} links, captured at {', '.join(p.name for p in ports)}")
    return (f"fabric up in {fabric.startup_s:.1f} s ({fabric.datapath} datapath, MTU {fabric.mtu}); "
            f"{where} at {ports[0].mbps:g} Mbit/s")


def calibrated_line(name: str, period_ms: float, solo: dict) -> str:
    """One human line for a calibrated job: its solo iteration against its period, its bursts alone."""
    line = (f"calibrated {name}: {solo['iteration_ms']:.1f} ms per iteration for a {period_ms:g}-ms period; "
            f"bursts of {solo['comm_ms']:.1f} ms ({solo['data_ms']:.1f} ms of data) "
            f"at {solo['sustained_mbps']:.1f} Mbit/s alone")
    if solo.get("stalled_bursts"):
        line += (f"; {solo['stalled_bursts']} of {solo['bursts']} stalled, as on a TCP retransmission timeout "
                 f"({STALL_MS:g} ms or more over the median)")
    return line


def figures_line(name: str, solo: dict) -> str:
    """Every number of a job's solo figures, named (the detail behind :func:`calibrated_line`)."""
    figures = ", ".join(f"{key} {round(value, 2):g}" for key, value in solo.items() if isinstance(value, float))
    return f"solo {name}: {figures}"


def policy_line(policy: str, measured: dict[str, dict]) -> str:
    """A policy measured: each job's mean iteration time (``analysis.job_means``)."""
    means = ", ".join(f"{job} {m['mean_iteration_ms']:.1f}" for job, m in measured.items())
    return f"{policy} done: {means} ms per iteration"
