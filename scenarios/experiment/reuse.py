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

The same holds across runs: every run keeps its jobs' shapes and sized calibrations in
``calibration.json`` (:func:`write_calibration_record`), and ``shiftbed run
--reuse-calibration DIR`` takes each job's calibration from the run in the
results folder DIR (:class:`FolderCalibrations`), refused in one line, before
any job runs, when a job's shape or the fabric differs there.

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
    the run starts it (``apps.jobmodel.JobSpec``, before calibration), ``spines``: its flows' pins."""
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


CALIBRATION_FILE = "calibration.json"  # in a results folder: each job's shape and sized calibration


SOLO_SPANS_FILE = "solo_spans.parquet"  # in a kept solo run's raw folder: its bursts as calibration read them


def write_calibration_record(folder: Path, keys: dict[str, str], specs, calibration) -> dict:
    """``calibration.json`` in ``folder`` (a run's, partial): each calibrated job's shape (:func:`shape_key`),
    its burst and compute as sized, its solo figures (on the wire) and the folder under raw/ of the solo run
    they come from; that run's bursts, as calibration read them, beside its files (:data:`SOLO_SPANS_FILE`)."""
    by_name = {spec.name: spec for spec in specs}
    jobs = {}
    for job, key in keys.items():
        if job not in calibration.solo:
            continue
        run = Path(calibration.solo_dirs[job])
        spans = run / SOLO_SPANS_FILE
        if not spans.exists():  # a reused run's folder, linked here, has it already
            calibration.solo_spans[job].to_parquet(spans)
        solo = {k: v for k, v in calibration.solo[job].items() if k != "reused_from"}
        jobs[job] = {"shape": json.loads(key), "comm_ms": by_name[job].comm_ms, "fill": by_name[job].fill,
                     "solo": solo, "run": run.name}
    record = {"jobs": jobs}
    (folder / CALIBRATION_FILE).write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
    return record


def read_calibration_record(folder: str | Path) -> dict:
    """``DIR/calibration.json``'s jobs; InputError in one line when DIR holds none (not a run's folder, or a
    run stopped before its calibration ended)."""
    from scenarios.errors import InputError

    path = Path(folder) / CALIBRATION_FILE
    try:
        return json.loads(path.read_text())["jobs"]
    except FileNotFoundError:
        raise InputError(f"--reuse-calibration: {folder} holds no {CALIBRATION_FILE}: give the results folder of "
                         "a run whose calibration ended") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"--reuse-calibration: {path} cannot be read: {exc}") from None


def first_difference(there, here, where: str = "") -> str | None:
    """The first place two shapes (decoded :func:`shape_key`) differ, as ``where: X there, Y here``."""
    if isinstance(there, dict) and isinstance(here, dict):
        for key in sorted(set(there) | set(here)):
            found = first_difference(there.get(key), here.get(key), f"{where}.{key}" if where else key)
            if found:
                return found
        return None
    if isinstance(there, list) and isinstance(here, list) and len(there) == len(here):
        for i, (a, b) in enumerate(zip(there, here, strict=True)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if there == here else f"{where}: {json.dumps(there)} there, {json.dumps(here)} here"


class FolderCalibrations:
    """A run's view of an earlier run's calibrations (``--reuse-calibration DIR``): each job's from DIR when
    its shape is the same there (the same job on the same fabric, module docstring), else InputError naming
    the first difference. Nothing is kept: DIR is read, never written."""

    def __init__(self, folder: str | Path, keys: dict[str, str]):
        from scenarios.errors import InputError

        self.folder = Path(folder)
        recorded = read_calibration_record(self.folder)
        self.found: dict[str, Calibrated] = {}
        for job, key in keys.items():
            if job not in recorded:
                raise InputError(f"--reuse-calibration: {self.folder} calibrated no job {job}")
            entry = recorded[job]
            difference = first_difference(entry["shape"], json.loads(key))
            if difference:
                kind = "the fabric" if difference.split(".")[0] in ("fabric", "environment") else f"job {job}"
                raise InputError(f"--reuse-calibration: {kind} differs from {self.folder}'s ({difference})")
            stored = self.folder / "raw" / entry["run"]
            if not (stored / SOLO_SPANS_FILE).is_file():
                raise InputError(f"--reuse-calibration: {stored} (job {job}'s solo run) is missing")
            self.found[job] = Calibrated(entry["comm_ms"], entry["fill"], dict(entry["solo"]), None, entry["run"],
                                         stored, str(self.folder))
        self.reused: dict[str, str] = {}

    def lookup(self, job: str) -> Calibrated | None:
        found = self.found[job]
        self.reused[job] = found.scenario
        return replace(found, spans=pd.read_parquet(found.stored / SOLO_SPANS_FILE))

    def keep(self, job: str, spec, solo: dict, spans: pd.DataFrame, run_dir: str) -> None:
        """Never called: every job of the run is found in DIR or the run was refused."""


def check_reusable(folder: str | Path, wire, seed: int) -> None:
    """Before anything is built: InputError in one line unless ``folder`` (``--reuse-calibration``) holds a
    calibration of every job of ``wire`` (the scenario as the fabric runs it) with the same fabric and the
    same job as the scenario gives it. What only the built fabric tells (addresses, versions, the
    datapath) is compared once it is up (:class:`FolderCalibrations`)."""
    from scenarios.errors import InputError
    from scenarios.sharedlink import fabric_params

    recorded = read_calibration_record(folder)
    fabric = json.loads(json.dumps(asdict(fabric_params(wire)), default=str))
    for i, job in enumerate(wire.jobs):
        if job.name not in recorded:
            raise InputError(f"--reuse-calibration: {folder} calibrated no job {job.name}")
        shape = recorded[job.name]["shape"]
        difference = first_difference(shape["fabric"], fabric, "fabric")
        if difference:
            raise InputError(f"--reuse-calibration: the fabric differs from {folder}'s ({difference})")
        here = {"period_ms": float(job.period_ms), "comm_ms": float(job.comm_ms), "pattern": job.pattern,
                "jitter_ms": job.jitter_ms, "seed": seed + i, "transport": wire.transport,
                "workers": list(job.workers)}
        there = {**{key: shape["job"][key] for key in here}, "workers": [w[0] for w in shape["job"]["workers"]]}
        difference = first_difference(there, here, "job")
        if difference:
            raise InputError(f"--reuse-calibration: job {job.name} differs from {folder}'s ({difference})")
