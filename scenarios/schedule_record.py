"""``schedule.json`` as one typed record: :func:`schedule_record` writes it, :meth:`ScheduleRecord.from_dict` reads it.

The schedule the theory computed for a run's jobs, with each pair's gcd test,
so a reader sees why it is (in)feasible; the keys are in docs/results.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def schedule_record(schedule: Any, solo: Mapping[str, tuple[float, float]] | None = None) -> dict:
    """The ``schedule.json`` record of a ``controller.theory.schedule.Schedule``.

    ``solo`` maps a job to its measured ``(solo_period_ms, solo_comm_ms)``.
    Pair facts use the schedule's quantum, so they say exactly why it is
    (in)feasible: a pair separates iff ``comm_sum_ms <= gcd_ms``.
    """
    quantum_ms = schedule.quantum_ms
    jobs = list(schedule.jobs)

    def quanta(ms: float) -> int:
        return round(ms / quantum_ms)

    records = []
    for job in jobs:
        record = {"name": job.name, "period_ms": job.period_ms, "comm_ms": job.comm_ms,
                  "shift_ms": schedule.shifts_ms[job.name]}
        if solo and job.name in solo:
            record["solo_period_ms"], record["solo_comm_ms"] = solo[job.name]
        records.append(record)
    pairs = []
    for i, a in enumerate(jobs):
        for b in jobs[i + 1:]:
            gcd_ms = math.gcd(quanta(a.period_ms), quanta(b.period_ms)) * quantum_ms
            comm_sum_ms = a.comm_ms + b.comm_ms
            pairs.append({"a": a.name, "b": b.name, "gcd_ms": gcd_ms, "comm_sum_ms": comm_sum_ms,
                          "separable": quanta(comm_sum_ms) <= quanta(gcd_ms)})
    return {"quantum_ms": quantum_ms, "hyperperiod_ms": schedule.hyperperiod_ms,
            "feasible": bool(schedule.feasible), "overlap_ms": schedule.overlap_ms,
            "method": schedule.method, "jobs": records, "pairs": pairs}


@dataclass(frozen=True)
class JobSchedule:
    """One job in ``schedule.json``: the period and burst the schedule used, and its shift."""

    name: str
    period_ms: float
    comm_ms: float
    shift_ms: float
    solo_period_ms: float | None = None
    solo_comm_ms: float | None = None


@dataclass(frozen=True)
class PairFact:
    """Why two jobs can or cannot be kept apart: separable iff ``comm_sum_ms <= gcd_ms``."""

    a: str
    b: str
    gcd_ms: float
    comm_sum_ms: float
    separable: bool


@dataclass(frozen=True)
class ScheduleRecord:
    """``schedule.json``."""

    quantum_ms: float
    hyperperiod_ms: float
    feasible: bool
    overlap_ms: float
    method: str
    jobs: tuple[JobSchedule, ...]
    pairs: tuple[PairFact, ...]

    def job(self, name: str) -> JobSchedule | None:
        return next((j for j in self.jobs if j.name == name), None)

    @classmethod
    def from_dict(cls, data: dict) -> ScheduleRecord:
        """The record of a ``schedule.json``; KeyError, TypeError or ValueError naming what is wrong."""
        return cls(
            quantum_ms=float(data["quantum_ms"]),
            hyperperiod_ms=float(data["hyperperiod_ms"]),
            feasible=bool(data["feasible"]),
            overlap_ms=float(data["overlap_ms"]),
            method=str(data["method"]),
            jobs=tuple(
                JobSchedule(
                    name=str(j["name"]), period_ms=float(j["period_ms"]), comm_ms=float(j["comm_ms"]),
                    shift_ms=float(j["shift_ms"]), solo_period_ms=_number(j.get("solo_period_ms")),
                    solo_comm_ms=_number(j.get("solo_comm_ms")),
                )
                for j in data["jobs"]
            ),
            pairs=tuple(
                PairFact(a=str(p["a"]), b=str(p["b"]), gcd_ms=float(p["gcd_ms"]),
                         comm_sum_ms=float(p["comm_sum_ms"]), separable=bool(p["separable"]))
                for p in data.get("pairs", [])
            ),
        )
