"""Solo calibrations reused within a batch: a job measured alone once per fabric and job shape.

Calibration (``calibration.py``) measures each job alone: nothing of it
depends on the other jobs of its scenario. A job of the same *shape* on the
same *fabric* is the same measurement, so a batch measures it once and reuses
it while the fabric stays the same. The shape is everything the solo runs
depend on (:func:`shape_key`): the job's period, burst, pattern, workers (names
and addresses), ports, seed, jitter, transport and rate; the spines its flows
are pinned to and the port its rate is measured on; and the fabric: its
parameters and the environment the run records (versions, datapath, MTU,
queue, TCP's minimum RTO, Open vSwitch's heap). Anything different: measured
anew.

A reused calibration is the whole of it: the sized burst and phased compute
(the job's spec), its solo figures and bursts, and its kept solo run, linked
into the new run's ``raw/`` under its own name, so that ``shiftbed report
--repredict`` reads the folder alone. The job's solo figures say where they came
from (``reused_from``: the scenario that measured them). Whether the machine
still runs at the speed they were measured at is what the run's own drift
check (``fidelity.py``: the bursts that met no other job against the solo
ones) asks of every run; a scenario that lost fidelity drops what it measured
or reused (:meth:`SoloCache.forget`), so its second attempt calibrates anew.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

NOT_THE_FABRIC = ("fabric_startup_s",)  # environment.json's figures that vary from one build to the next


@dataclass(frozen=True)
class Calibrated:
    """One job's calibration, as kept for reuse: its burst and compute as sized, its solo figures and
    bursts, where its kept solo run is stored, and the scenario that measured it."""

    comm_ms: float
    fill: float
    solo: dict
    spans: pd.DataFrame = field(compare=False)
    run: str  # the kept solo run's folder name under raw/
    stored: Path  # ... and its copy in the cache
    scenario: str


def shape_key(fabric_params, environment: dict, spec, home_port: str, spines: tuple) -> str:
    """Everything a job's solo runs depend on (module docstring), as one string; ``spec``: the job as
    the run starts it (``apps.dltjob.JobSpec``, before calibration), ``spines``: its flows' pins."""
    job = asdict(spec)
    job["workers"] = [(w["name"], w["ip"]) for w in job["workers"]]  # not the namespace's PID
    fabric = {k: v for k, v in environment.items() if k not in NOT_THE_FABRIC}
    return json.dumps({"fabric": asdict(fabric_params), "environment": fabric, "job": job, "home": home_port,
                       "spines": list(spines)}, sort_keys=True, default=str)


class SoloCache:
    """The calibrations measured so far in one batch, by shape; their kept solo runs are hard-linked
    under ``root`` (no second copy on disk), so they outlive the folder of the run that measured them."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        shutil.rmtree(self.root, ignore_errors=True)  # what an earlier process kept: its runs may be gone
        self.root.mkdir(parents=True)
        self._found: dict[str, Calibrated] = {}
        self._used_by: dict[str, set[str]] = {}  # shape -> scenarios that reused it

    def lookup(self, key: str, scenario: str) -> Calibrated | None:
        found = self._found.get(key)
        if found is not None:
            self._used_by.setdefault(key, set()).add(scenario)
        return found

    def keep(self, key: str, calibrated: Calibrated, run_dir: str | Path) -> None:
        """Keep ``calibrated`` under ``key``, its solo run ``run_dir`` linked into the cache."""
        stored = self.root / str(len(self._found)) / Path(run_dir).name
        link_tree(run_dir, stored)
        self._found[key] = replace(calibrated, stored=stored)

    def forget(self, scenario: str) -> list[str]:
        """Drop every calibration ``scenario`` measured or reused (its run lost fidelity); the shapes dropped."""
        gone = [key for key, c in self._found.items() if c.scenario == scenario
                or scenario in self._used_by.get(key, ())]
        for key in gone:
            shutil.rmtree(self._found.pop(key).stored.parent, ignore_errors=True)
            self._used_by.pop(key, None)
        return gone

    def __len__(self) -> int:
        return len(self._found)


def link_tree(src: str | Path, dst: str | Path) -> None:
    """``dst`` a copy of the folder ``src``, its files hard links where the disk allows (else copies)."""

    def link(a, b):
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=link)


@dataclass
class ScenarioCalibrations:
    """One run's view of the batch's cache: its jobs' shapes (job name -> :func:`shape_key`), and which
    of its jobs reused a calibration (job name -> the scenario that measured it)."""

    cache: SoloCache
    scenario: str
    keys: dict[str, str]
    reused: dict[str, str] = field(default_factory=dict)

    def lookup(self, job: str) -> Calibrated | None:
        found = self.cache.lookup(self.keys[job], self.scenario)
        if found is not None:
            self.reused[job] = found.scenario
        return found

    def keep(self, job: str, spec, solo: dict, spans: pd.DataFrame, run_dir: str) -> None:
        self.cache.keep(self.keys[job], Calibrated(spec.comm_ms, spec.fill, dict(solo), spans,
                                                   Path(run_dir).name, Path(run_dir), self.scenario), run_dir)
