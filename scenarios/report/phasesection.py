"""report.md on a run of pattern jobs: its schedule section from the plan's exact schedule
(``pattern_plan.json``), and each phase's bytes, start against the intended time and capture's
cross-check per policy (``phases.json``); nothing for a folder without pattern jobs."""

from __future__ import annotations

import json
from pathlib import Path

from scenarios.results import PATTERN_PLAN, PHASES_SUMMARY


def _cell(value, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def phase_lines(folder: Path) -> list[str]:
    """The section's lines (with its heading), or none where the folder has no ``phases.json``."""
    path = Path(folder) / PHASES_SUMMARY
    if not path.exists():
        return []
    doc = json.loads(path.read_text())
    bounds = doc["bounds"]
    lines = ["## Each phase on the wire", "",
             "A pattern job sends each phase as its own burst over its standing connections, at its offset "
             "from the iteration's origin or once the phase before it has ended. *Waited*: the median time a "
             "phase waited for the one before it; *start p95*: the capture's first byte against that intended "
             "time; *capture*: the bytes captured against the driver's. Bounds: bytes within "
             f"{bounds['capture_bytes_err_pct']:g} %, start p95 within {bounds['wire_start_late_p95_ms']:g} ms. "
             "Each job's iteration times, measured and predicted from its phases' solo lengths, are in the "
             f"policies' table; `{PATTERN_PLAN}` holds the plan's exact schedule and its iteration times "
             "predicted from the file.", "",
             "| policy | job | phase | offset (ms) | bytes | waited (ms) | start p95 (ms) | capture vs driver | within |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for policy, jobs in doc["policies"].items():
        for job, phases in jobs.items():
            for p in phases:
                lines.append(f"| {policy} | {job} | {p['phase']} | {p['start_ms']:.1f} | {p['bytes']:.0f} | "
                             f"{p['waited_ms_median']:.1f} | {_cell(p['wire_start_late_p95_ms'], '.2f')} | "
                             f"{_cell(p['capture_bytes_err_pct'], '+.2f')} % | "
                             f"{'yes' if p['within_bounds'] else '**no**'} |")
    return [*lines, ""]


def pattern_prediction_text(folder: Path) -> str | None:
    """How a run of pattern jobs is predicted (``experiment/patternprediction.py``), for the report's
    theory-against-measurement section; None for a folder without pattern jobs."""
    if not (Path(folder) / PATTERN_PLAN).exists():
        return None
    return ("Prediction: the fluid model of pattern jobs fed with what calibration measured: each job's solo "
            "iteration and each phase at its offset, as long as it took alone (launch to last byte, the median "
            "over the solo run's iterations), started at the offsets the policy ran with, `gate` inside the "
            "scheduler's windows; phases that meet share the link max-min fairly, as standing connections "
            "share it. Error = (measured − predicted) / predicted; model range: every phase at its solo 25th "
            "and 75th percentile. ± is the measured mean's standard error (batch means over consecutive parts "
            "of the run): an error within about twice it is within the run's own noise.")


def pattern_schedule_section(folder: Path) -> tuple[str, list[str]] | None:
    """The schedule's verdict and section from ``pattern_plan.json`` (the busy quanta decided exactly,
    each pair beside the rectangle rule's verdict), or None where the folder has none."""
    path = Path(folder) / PATTERN_PLAN
    if not path.exists():
        return None
    plan = json.loads(path.read_text())
    lines = [f"Pattern jobs ({', '.join(plan['pattern_jobs'])}), decided exactly on their busy quanta: quantum "
             f"{plan['quantum_ms']:g} ms, hyper-period {plan['hyperperiod_ms']:g} ms, method `{plan['method']}`.", "",
             "| job | period (ms) | busy (ms) | phases | shift (ms) |", "|---|---:|---:|---:|---:|",
             *[f"| {j['name']} | {j['period_ms']:g} | {j['grid_comm_ms']:g} | {j['phases']} | {j['shift_ms']:g} |"
               for j in plan["jobs"]], "",
             "| pair | gcd (ms) | busy (ms) | separable (exact) | the rectangle rule would say |",
             "|---|---:|---:|---|---|",
             *[f"| {p['jobs'][0]} – {p['jobs'][1]} | {p['gcd_ms']:g} | {' + '.join(f'{b:g}' for b in p['busy_ms'])} | "
               f"{'yes' if p['separable'] else '**no**'} | {'separable' if p['rectangle_rule_separable'] else 'not'} |"
               for p in plan["pairs"]], "",
             f"Overlap at these shifts: {plan['overlap_ms']:g} ms per hyper-period (compatibility "
             f"{plan['compatibility']:g}).", ""]
    return ("feasible" if plan["feasible"] else "infeasible"), lines
