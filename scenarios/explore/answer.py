"""One answer of the explorer: the page's values through the spec, ``plan`` and the map.

Nothing here models anything: the scenario is the spec's (``inputs``), the
figures are ``plan``'s own :func:`~scenarios.planning.build_plan` on it
(so the page's gains are what ``shiftbed plan --json`` prints for the saved
scenario), over a horizon the work budget allows (``budget``), with a
:class:`~controller.theory.fluid.LinkTrace` per shown policy for the picture of
the link, and the map's cell is read from its files (``mapcell``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from controller.theory import fluid
from scenarios import planning, spec
from scenarios.errors import InputError
from scenarios.explore import budget, inputs, mapcell

MAX_DRAWN_MS = 30_000.0  # the picture of the link covers at most the first 30 s of the simulated time


@dataclass(frozen=True)
class Answer:
    """What the page shows for one set of values. ``problems``: a message per box (nothing was computed);
    ``refused``: why the change was not computed (too much work); else the plan and the rest."""

    edits: inputs.Edits
    problems: dict[str, str] = field(default_factory=dict)
    refused: str | None = None
    scenario: spec.Scenario | None = None
    plan: dict | None = None
    budget: budget.Budget | None = None
    traces: dict[str, fluid.LinkTrace] = field(default_factory=dict)
    drawn_ms: float = 0.0
    where: mapcell.Where | None = None
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.plan is not None


def answer(start: inputs.Start, edits: inputs.Edits, max_bursts: float = budget.MAX_BURSTS) -> Answer:
    """The page's values checked by the spec, then planned within the work budget."""
    began = time.perf_counter()
    try:
        scenario = inputs.scenario(start, edits)
    except InputError as exc:
        return Answer(edits, dict([inputs.box_of(str(exc), start.path)]))
    if not edits.policies:
        return Answer(edits, {"policies": "choose at least one policy"}, scenario=scenario)
    jobs = planning.planned_jobs(scenario)
    work = budget.budget(jobs, edits.policies, planning.DEFAULT_RANDOM_DRAWS, max_bursts=max_bursts)
    if work.refused:
        return Answer(edits, refused=work.refused, scenario=scenario, budget=work,
                      elapsed_ms=1000 * (time.perf_counter() - began))
    drawn_ms = min(MAX_DRAWN_MS, fluid.WARMUP_ITERATIONS * max(j.period_ms for j in jobs) + work.horizon_ms)
    traces = {p: fluid.LinkTrace(until_ms=drawn_ms) for p in edits.policies}
    try:
        planned = planning.build_plan(scenario, policies=edits.policies, horizon_ms=work.horizon_ms, link_traces=traces)
    except InputError as exc:
        return Answer(edits, dict([inputs.box_of(str(exc), start.path)]), scenario=scenario)
    return Answer(edits, scenario=scenario, plan=planned, budget=work, traces=traces, drawn_ms=drawn_ms,
                  where=mapcell.where([j.period_ms for j in scenario.jobs]),
                  elapsed_ms=1000 * (time.perf_counter() - began))


def plan_command(path: str, answer: Answer) -> str:
    """The ``plan`` command that prints this answer's figures for the scenario saved at ``path``."""
    cut = f" --horizon-s {answer.budget.horizon_ms / 1000:g}" if answer.budget and answer.budget.cut else ""
    return f"shiftbed plan {path}{cut} --json"
