"""How long a run takes: each stage's estimate from the scenario, and what is left as the run goes.

A run is a fixed sequence of stages (``runner.py``): the fabric comes up, each
job is calibrated alone, each policy runs for ``duration_s``, and the summary
and report are written. Each stage's length is predictable from the scenario:
a solo run is its iterations plus a fixed overhead, a policy is its duration
plus a fixed overhead. The overheads are measured on the reference machine
(2 vCPU, ``docs/accuracy.md``, "How long a run takes"); a host that takes the
CPU makes a measurement run again, which no estimate foresees.

:class:`Timeline` turns the estimates into an estimate of what is left: the
stages still to come at their estimates, the current one at what is left of
its estimate, the stages done at the time they took.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from scenarios.experiment.counts import CALIBRATION_ITERATIONS, MODEL_CALIBRATION_ITERATIONS

# Measured on the reference machine: the demo (classroom, two-jobs-coprime, 12 s per policy), 2026-12-05;
# the two overheads again on its raw folders (10 s per policy), 2026-12-07.
FABRIC_UP_S = 6.0  # the fabric up, the jobs registered with the scheduler (5.3 and 6.6 s)
SOLO_OVERHEAD_S = 1.5  # a solo run beyond its iterations: its start 1.5 s ahead less the driver's own, the capture read (1.3-1.7 s)
SIZING_RUNS = 2.25  # solo runs of CALIBRATION_ITERATIONS while a job's bursts are sized (1 to 3; 3, 2, 2, 2)
MODEL_RUNS = 1.75  # solo runs of MODEL_CALIBRATION_ITERATIONS while its period is set (1 to 3; 3, 1, 1, 2)
POLICY_OVERHEAD_S = 2.5  # a policy beyond its duration: its epoch 1.5 s ahead, the capture read (2.1-3.3 s)
REPORT_S = 5.5  # the summary, the plots and report.md, the fabric torn down (4.1 and 6.8 s)

@dataclass(frozen=True)
class Stage:
    """One stage of a run: ``key`` is (scenario, kind, what), kind one of fabric, calibrate, policy, report."""

    key: tuple[str, str, str | None]
    estimate_s: float


def calibration_s(period_ms: float) -> float:
    """A job's calibration: its sizing runs and its model runs, each its iterations plus an overhead."""
    def solo_s(iterations: int) -> float:
        return SOLO_OVERHEAD_S + iterations * period_ms / 1000

    return SIZING_RUNS * solo_s(CALIBRATION_ITERATIONS) + MODEL_RUNS * solo_s(MODEL_CALIBRATION_ITERATIONS)


def run_stages(scenario: str, periods_ms: dict[str, float], policies: Iterable[str],
               duration_s: float) -> list[Stage]:
    """Every stage of one run of ``scenario`` (its jobs' periods by name) under ``policies``."""
    return [Stage((scenario, "fabric", None), FABRIC_UP_S),
            *(Stage((scenario, "calibrate", job), calibration_s(period)) for job, period in periods_ms.items()),
            *(Stage((scenario, "policy", policy), duration_s + POLICY_OVERHEAD_S) for policy in policies),
            Stage((scenario, "report", None), REPORT_S)]


class Timeline:
    """The stages of a whole run (or of the demo's runs), in order, and the clock.

    :meth:`begin` moves to a stage; a stage not in the plan is ignored, so an
    unforeseen step never breaks the display, it only makes the estimate late.
    """

    def __init__(self, stages: list[Stage], clock: Callable[[], float] = time.monotonic):
        self.stages, self.clock = list(stages), clock
        self._index = {stage.key: i for i, stage in enumerate(self.stages)}
        self.started_s: float | None = None
        self.current: int | None = None
        self.current_started_s = 0.0
        self.current_done = False  # the current stage said it is done (its line); the next has not begun
        self.ended_s: float | None = None

    @property
    def estimate_s(self) -> float:
        """The whole run, as estimated before it started."""
        return sum(stage.estimate_s for stage in self.stages)

    def start(self) -> None:
        if self.started_s is None:
            self.started_s = self.clock()

    def begin(self, key) -> None:
        """Stage ``key`` starts now (the stages before it are done)."""
        self.start()
        index = self._index.get(tuple(key))
        if index is None or (self.current is not None and index <= self.current):
            return
        self.current, self.current_started_s, self.current_done = index, self.clock(), False

    def complete(self) -> None:
        """The current stage is done (a stage's line says so), before the next one begins."""
        self.current_done = self.current is not None

    def end(self) -> None:
        """The run is over (whatever stages were left)."""
        if self.ended_s is None:
            self.ended_s = self.clock()

    def elapsed_s(self) -> float:
        if self.started_s is None:
            return 0.0
        return (self.ended_s if self.ended_s is not None else self.clock()) - self.started_s

    def left_s(self) -> float:
        """What is left: the current stage's estimate less its time so far (not below zero; nothing once
        it said it is done), and every later stage's estimate."""
        if self.ended_s is not None:
            return 0.0
        if self.current is None:
            return max(self.estimate_s - self.elapsed_s(), 0.0)
        current = self.stages[self.current]
        in_stage_s = self.clock() - self.current_started_s
        current_left_s = 0.0 if self.current_done else max(current.estimate_s - in_stage_s, 0.0)
        return current_left_s + sum(stage.estimate_s for stage in self.stages[self.current + 1:])

    def stage_name(self) -> str:
        """The current stage in words: ``classroom: policy gate``."""
        if self.current is None:
            return "starting"
        scenario, kind, what = self.stages[self.current].key
        return f"{scenario}: {kind}" + (f" {what}" if what else "")
