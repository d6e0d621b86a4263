"""The explorer's inputs: what a student set on the page, turned into a scenario the spec checks.

The page edits a copy of the scenario file's document, keeping its fabric,
workers and every other key: each job's period, burst and jitter, the
quantum, the shared link's rate and the policies. :func:`scenario` runs the
edited document through ``scenarios/spec.py``, as ``run`` reads a file, so a
message about a value is the spec's own; :func:`box_of` says which box it
belongs beside.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from scenarios import spec
from scenarios.errors import InputError

MIN_JOBS, MAX_JOBS = 2, 4
JOB_NAMES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
NEW_JOB_PERIOD_MS, NEW_JOB_COMM_MS = 400.0, 100.0  # a job the page adds to a scenario that has fewer
MODEL_KEYS = ("model", "model_workers", "model_link_mbps", "time_scale")  # a zoo job gets its times written out
GENERAL = "general"  # the box of a message that names no one value
_FIELD = re.compile(r"^(?:jobs\[(\d+)\]\.(\w+)|([\w.]+))")


@dataclass(frozen=True)
class JobEdit:
    """One job as the page sets it."""

    name: str
    period_ms: float
    comm_ms: float
    jitter_ms: float = 0.0


@dataclass(frozen=True)
class Edits:
    """Everything the page sets; ``link_mbps`` is None where the scenario has no fabric."""

    jobs: tuple[JobEdit, ...]
    quantum_ms: float
    link_mbps: float | None
    policies: tuple[str, ...]


@dataclass(frozen=True)
class Start:
    """The scenario the explorer was started with: its file's document and what the spec made of it."""

    path: str
    document: dict
    scenario: spec.Scenario

    def edits(self) -> Edits:
        """The page's opening values: the scenario's own (at most :data:`MAX_JOBS` jobs)."""
        s = self.scenario
        jobs = tuple(JobEdit(j.name, j.period_ms, j.comm_ms, j.jitter_ms) for j in s.jobs[:MAX_JOBS])
        while len(jobs) < MIN_JOBS:
            jobs += (new_job(jobs),)
        return Edits(jobs, s.quantum_ms, s.fabric.fabric_link_mbps if s.fabric else None, s.policies)


def load(path: str | Path) -> Start:
    """The scenario file, checked by the spec (InputError, one line, if it is not a scenario)."""
    path = str(path)
    scenario = spec.load(path)
    for i in scenario.pattern_jobs:
        raise InputError(f"{path}: jobs[{i}].{scenario.jobs[i].pattern_key}: the explorer edits jobs of one burst "
                         "per iteration (period_ms, comm_ms); shiftbed plan and run take a pattern job")
    document = yaml.safe_load(Path(path).read_text())
    if len(scenario.jobs) > MAX_JOBS:
        raise InputError(f"{path}: jobs: the explorer shows {MIN_JOBS} to {MAX_JOBS} jobs, the file has "
                         f"{len(scenario.jobs)}")
    return Start(path, document, scenario)


def new_job(jobs: tuple[JobEdit, ...]) -> JobEdit:
    """A job the page adds: the first free name, a middling period and burst."""
    taken = {j.name for j in jobs}
    name = next(n for n in JOB_NAMES if n not in taken)
    return JobEdit(name, NEW_JOB_PERIOD_MS, NEW_JOB_COMM_MS)


def document(start: Start, edits: Edits) -> dict:
    """The scenario file's document with the page's values in it (what "save as scenario" writes)."""
    doc = copy.deepcopy(start.document)
    doc["quantum_ms"] = _plain(edits.quantum_ms)
    doc["policies"] = list(edits.policies)
    if start.scenario.policy_files:  # resolved, so the saved file finds them wherever it is written
        doc["policy_files"] = list(start.scenario.policy_files)
    if edits.link_mbps is not None and isinstance(doc.get("fabric"), dict):
        doc["fabric"]["fabric_link_mbps"] = _plain(edits.link_mbps)
    given = doc.get("jobs") or []
    jobs = []
    for k, e in enumerate(edits.jobs):
        job = copy.deepcopy(given[k] if k < len(given) else given[k % len(given)])
        for key in MODEL_KEYS:
            job.pop(key, None)
        job.update(name=e.name, period_ms=_plain(e.period_ms), comm_ms=_plain(e.comm_ms))
        if e.jitter_ms or "jitter_ms" in job:
            job["jitter_ms"] = _plain(e.jitter_ms)
        jobs.append(job)
    doc["jobs"] = jobs
    return doc


def scenario(start: Start, edits: Edits) -> spec.Scenario:
    """The edited scenario, checked by the spec; InputError names the field as the spec does."""
    return spec.parse(yaml_text(document(start, edits)), start.path)


def yaml_text(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)


def number(text: str, what: str) -> float:
    """A box's text as a number; ValueError with a message for beside the box."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{what}: not a number: {str(text)[:40]!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{what}: must be finite, got {text!r}")
    return value


def box_of(message: str, path: str) -> tuple[str, str]:
    """(box, message without the file's name) for a spec or plan message about ``path``: boxes are
    ``period/K``, ``comm/K``, ``jitter/K``, ``quantum``, ``link``, ``policies`` or :data:`GENERAL`."""
    text = message.removeprefix(f"{path}: ")
    m = _FIELD.match(text)
    if not m:
        return GENERAL, text
    if m.group(1) is not None:
        key = {"period_ms": "period", "comm_ms": "comm", "jitter_ms": "jitter"}.get(m.group(2))
        return (f"{key}/{m.group(1)}", text) if key else (GENERAL, text)
    field = m.group(3)
    if field == "quantum_ms":
        return "quantum", text
    if field.startswith("fabric.fabric_link_mbps"):
        return "link", text
    if field.startswith("policies"):
        return "policies", text
    return GENERAL, text


def _plain(x: float) -> int | float:
    """A whole number written as one (``600``, not ``600.0``)."""
    return int(x) if float(x).is_integer() else float(x)
