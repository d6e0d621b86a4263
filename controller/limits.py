"""What a job may be, for the scenario schema and the scheduler's REST API alike.

A job name becomes file names (results, per-job logs) and a REST URL, so it is
kept to a safe alphabet. A schedule's arrays grow with the jobs' periods on
the quantum grid, so its size is bounded before anything is computed:

- memory: the exact search and the heuristic keep, for every pair of jobs,
  arrays as long as their periods' gcd (at most the period). Their total is at
  most ``(jobs - 1) × Σ period_quanta`` cells, refused above
  :data:`MAX_SCHEDULE_CELLS` (measured 2026-12-02 at the bound, 3-64 jobs with
  equal periods, the worst case: 60-90 MB peak, 0.1-1.2 s);
- time: the exact search visits at most :func:`search_nodes` nodes, about
  2 s of work; past that budget ``auto`` falls back to the heuristic, which
  states its gap (measured 2026-12-02: the slowest of ~2 400 random instances
  of 3-20 jobs took 2.0 s).

``scenarios/spec.py`` and ``controller/scheduler.py`` both import this; it
imports only the theory's own budget.
"""

from __future__ import annotations

import math
import re

from controller.theory.schedule import DEFAULT_MAX_NODES

MAX_JOB_NAME_CHARS = 32
_JOB_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
JOB_NAME_RULE = (f"1-{MAX_JOB_NAME_CHARS} characters of letters, digits, '-', '_', '.', "
                 "not starting with '.'")

MAX_JOBS = 64
MAX_PERIOD_MS = 600_000.0
# What the controller's policy request accepts (``POST /shiftbed/policy``); a scenario is held to them
# when it is loaded, at its time scale too, so a run is never refused half-way.
MAX_GUARD_MS = 1000.0
MAX_QUANTUM_MS = 10_000.0
MAX_SCHEDULE_CELLS = 5_000_000
# The exact search's time: each node costs about a fixed overhead plus one pass over the free
# jobs' arrays, plus, where the last two jobs are solved jointly, their gcd² table (at most
# 250 000 cells: controller/theory/schedule.py). Cells are ~1 ns each (measured 2026-12-02).
MAX_SEARCH_WORK = 2_000_000_000  # cells visited by the whole search: ~2 s
NODE_OVERHEAD_CELLS = 40_000  # ~40 µs of Python a node
PAIR_CLOSURE_CELLS = 250_000


def job_name_problem(value) -> str | None:
    """Why ``value`` cannot be a job name (one line), or None if it can."""
    if isinstance(value, str) and len(value) <= MAX_JOB_NAME_CHARS and _JOB_NAME.fullmatch(value):
        return None
    shown = repr(value) if not isinstance(value, str) or len(value) <= 60 else repr(value[:60]) + "..."
    return f"must be {JOB_NAME_RULE}, got {shown}"


def period_quanta_problem(period_ms: float, quantum_ms: float) -> str | None:
    """Why a period has too many quanta to schedule (one line), or None."""
    ratio = period_ms / quantum_ms
    if not math.isfinite(ratio) or ratio > MAX_SCHEDULE_CELLS:
        return (f"{period_ms:g} ms is more than {MAX_SCHEDULE_CELLS} quanta of {quantum_ms:g} ms: "
                "use a larger quantum_ms")
    return None


def schedule_cells(period_quanta: list[int]) -> int:
    """Upper bound on the cells of the schedule computation's arrays (module docstring)."""
    return (len(period_quanta) - 1) * sum(period_quanta)


def schedule_size_problem(period_quanta: list[int], quantum_ms: float) -> str | None:
    """Why the schedule of jobs with these periods (in quanta) is too big to compute, or None."""
    cells = schedule_cells(period_quanta)
    if cells <= MAX_SCHEDULE_CELLS:
        return None
    return (f"{len(period_quanta)} jobs with periods of {sum(period_quanta)} quanta of {quantum_ms:g} ms "
            f"in all need {cells} cells to schedule ((jobs - 1) × the sum of the periods), more than "
            f"{MAX_SCHEDULE_CELLS}: use a larger quantum_ms or fewer jobs")


def search_nodes(period_quanta: list[int]) -> int:
    """The exact search's node budget for jobs with these periods (in quanta): about
    :data:`MAX_SEARCH_WORK` cells in all, and never more than the theory's own budget."""
    pair_cells = max((min(math.gcd(a, b) ** 2, PAIR_CLOSURE_CELLS)
                      for i, a in enumerate(period_quanta) for b in period_quanta[i + 1:]), default=0)
    node_cells = NODE_OVERHEAD_CELLS + sum(period_quanta) + pair_cells
    return max(1, min(DEFAULT_MAX_NODES, MAX_SEARCH_WORK // node_cells))
