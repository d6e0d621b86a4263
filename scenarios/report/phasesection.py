"""report.md's section on a pattern job's phases (``phases.json``): each phase's bytes, its start against
the intended time and the capture's cross-check, per policy; nothing for a folder without pattern jobs."""

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
             f"Per-policy iteration times are not modelled for pattern jobs; `{PATTERN_PLAN}` holds the plan's "
             "exact schedule.", "",
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
