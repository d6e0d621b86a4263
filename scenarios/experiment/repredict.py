"""A results folder predicted again: its own measurements through the model of the code that runs now.

A run's predictions come from the fluid model of its day, fed with what the run
measured: calibration's solo figures and bursts, every policy's bursts (the
model of one policy draws on the others'), the offsets each policy ran with.
All of it is in the folder (``summary.json`` and ``raw/``; a run at time scale
K measured its raw runs on the wire, and is predicted again there, then turned
back to the scenario's units as the run was), so a changed model
can be checked against every kept run without running it again. With the code
that made the folder, every prediction comes out as recorded. The folder is
only read.

Which raw runs the model drew from follows from how the runner keeps them
(``calibration.py``, ``runner.py``): a job's last solo run, a policy's last
attempt.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from apps.iterations import iteration_table
from apps.jobmodel import JobSpec, data_flows
from controller.theory.policies import POLICIES, get_policy
from scenarios import spec as scenario_spec
from scenarios.analysis import tables as analysis
from scenarios.analysis.pcap import label_flows, read_pcap
from scenarios.errors import InputError
from scenarios.experiment.calibration import launch_leads_ms, solo_figures, trimmed_to_target
from scenarios.experiment.drive import capture_files, job_view
from scenarios.experiment.prediction import MeasuredRun
from scenarios.experiment.record import PolicyRecord
from scenarios.experiment.runner import policy_schedules, run_schedule
from scenarios.experiment.summary import pattern_jobs_arcs, policy_summaries
from scenarios.results import load_results
from scenarios.runlinks import run_links
from scenarios.sharedlink import fabric_params
from scenarios.summary_record import PolicySummary
from scenarios.timescale import in_scenario_units, on_wire, on_wire_units
from topo.wiring import fabric_wiring

WITHIN_PCT = 10.0  # the accuracy goal (docs/accuracy.md): how many pairs are within it


@dataclass(frozen=True)
class Repredicted:
    """One job under one policy: measured, predicted when the run ended, and predicted now (ms)."""

    policy: str
    job: str
    measured_ms: float
    recorded_ms: float | None
    predicted_ms: float

    @property
    def error_pct(self) -> float:
        return analysis.percent_error(self.measured_ms, self.predicted_ms)

    @property
    def recorded_error_pct(self) -> float | None:
        return None if not self.recorded_ms else analysis.percent_error(self.measured_ms, self.recorded_ms)

    def to_dict(self) -> dict:
        return {"policy": self.policy, "job": self.job, "measured_ms": self.measured_ms,
                "recorded_prediction_ms": self.recorded_ms, "prediction_ms": self.predicted_ms,
                "error_pct": self.error_pct, "recorded_error_pct": self.recorded_error_pct}


@dataclass(frozen=True)
class RawRun:
    """One raw folder read back: its iterations and the bursts the capture saw."""

    iterations: pd.DataFrame  # apps.iterations.iteration_table
    bursts: pd.DataFrame  # analysis.burst_spans of its steady iterations


def _specs(folder: Path) -> list[JobSpec]:
    """The jobs a raw folder's drivers ran, as they were configured (``*.driver.json``)."""
    specs = [JobSpec.from_dict(json.loads(p.read_text())["job"]) for p in sorted(folder.glob("*.driver.json"))]
    if not specs:
        raise InputError(f"{folder}: no driver configurations (*.driver.json): not a raw run of shiftbed")
    return specs


def _captures(folder: Path, specs: list[JobSpec], names: dict[str, str] | None = None) -> dict:
    """Each capture of a raw folder: its packets and each packet's job, by file name or, with ``names``
    (file name -> port name), by port as the runner keeps them (``drive.Measurement.captures``)."""
    flows = {s.name: [(f["src_ip"], f["dst_ip"], f["tcp_src"], f["tcp_dst"]) for f in data_flows(s)]
             for s in specs}
    captures = {}
    for pcap in sorted(folder.glob("*.pcap")):
        packets = read_pcap(str(pcap))
        captures[(names or {}).get(pcap.name, pcap.name)] = (packets, label_flows(packets, flows))
    return captures


def read_raw_run(folder: Path) -> RawRun:
    """The drivers' rows and the captures of one raw folder, as the runner reads them when measuring."""
    specs = _specs(folder)
    packets, labels = job_view(_captures(folder, specs))
    it = iteration_table(pd.concat([pd.read_csv(folder / f"{s.name}.csv") for s in specs], ignore_index=True))
    steady = it[it["iteration"] >= 1]  # job_means' warm-up, as PolicyRecord.record
    return RawRun(it, analysis.burst_spans(packets, labels, steady, it))


def solo_from_raw(raw: Path, scenario, links, wiring) -> tuple[dict[str, dict], dict[str, pd.DataFrame]]:
    """Each job's solo figures and bursts from its kept solo run, computed as calibration computed
    them (``calibration.solo_figures``, the solo iteration trimmed to its target as there): for a
    folder whose summary did not keep them."""
    ports = {Path(capture_files("", port.interface, i)[0]).name: port.name for i, port in enumerate(links.ports)}
    solo, spans = {}, {}
    for job in scenario.jobs:
        folder = kept_solo_dir(raw, job.name)
        spec = next(s for s in _specs(folder) if s.name == job.name)
        senders = {w.ip for w in spec.workers if wiring.host(w.name).leaf == links.home[job.name].leaf}
        rows = pd.read_csv(folder / f"{job.name}.csv")
        figures, spans[job.name] = solo_figures(spec, rows, _captures(folder, [spec], ports), senders,
                                                links.home[job.name].name)
        solo[job.name] = {**trimmed_to_target(spec, figures)[1], "fill": spec.fill}
    return solo, spans


def kept_solo_dir(raw: Path, job: str) -> Path:
    """The job's last solo run (``raw/solo-<job>-<run>-<fill>``): the one its solo figures come from."""
    runs = []
    for path in raw.glob(f"solo-{job}-*"):
        found = re.fullmatch(rf"solo-{re.escape(job)}-(\d+)-[0-9.]+", path.name)
        if found:
            runs.append((int(found.group(1)), path))
    if not runs:
        raise InputError(f"{raw}: no solo run of job {job}")
    return max(runs)[1]


def kept_policy_dir(raw: Path, policy: str) -> Path | None:
    """The policy's last attempt (``raw/<policy>`` or ``raw/<policy>-attempt<N>``): the one recorded."""
    attempts = [(1, raw / policy)] if (raw / policy).is_dir() else []
    for path in raw.glob(f"{policy}-attempt*"):
        found = re.fullmatch(rf"{re.escape(policy)}-attempt(\d+)", path.name)
        if found:
            attempts.append((int(found.group(1)), path))
    return max(attempts)[1] if attempts else None


def run_offsets_ms(policy: str, recorded: dict[str, float], windows: pd.DataFrame, schedule,
                   notes: list[str]) -> dict[str, float]:
    """The offsets ``policy`` ran with: as recorded; in a folder that did not record them, the first
    window of each job, else the policy's offsets with seed 0 (said in ``notes``)."""
    if recorded:
        return dict(recorded)
    mine = windows[windows["policy"] == policy] if not windows.empty else windows
    if len(mine):
        return {job: float(rows["open_s"].min()) * 1000 for job, rows in mine.groupby("job")}
    offsets = get_policy(policy).initial_offsets_ms(schedule, random.Random(0))
    if any(offsets.values()):
        notes.append(f"{policy}: offsets not recorded in this folder; taken as the policy gives them with seed 0")
    return offsets


def repredict(folder: str | Path) -> tuple[list[Repredicted], list[str]]:
    """Every job under every recorded policy, predicted again from the folder; and notes on what could
    not be (InputError, one line, if the folder cannot be re-predicted at all)."""
    results = load_results(folder)
    path, summary = results.path, results.summary
    raw = path / "raw"
    if not raw.is_dir():
        raise InputError(f"{path}: no raw/ folder: the measurements the model draws from are not kept")
    notes: list[str] = []
    recorded = list(summary.policies)
    if not recorded:  # a summary that kept no policy: the policies measured, in the order they ran
        recorded = [p for p in dict.fromkeys(results.iterations.get("policy", ())) if kept_policy_dir(raw, p)]
        if recorded:
            notes.append("summary.json kept no policy: measured again from the raw runs of "
                         f"{', '.join(recorded)}")
    if not recorded:
        raise InputError(f"{path}: no policy was measured: nothing to predict")
    unknown = [p for p in recorded if p not in POLICIES]
    if unknown:
        raise InputError(f"{path}: policy {unknown[0]} is not registered here: give the file that registers it "
                         "with --policy-file")
    time_scale = summary.time_scale  # the raw runs are on the wire, the summary in the scenario's units
    scenario = on_wire(scenario_spec.with_time_scale(scenario_spec.load(path / "scenario.yaml"), time_scale))
    wiring = fabric_wiring(fabric_params(scenario))
    links = run_links(scenario, wiring)
    queue_ms = results.environment.get("queue_ms")
    if queue_ms is None:
        raise InputError(f"{path}: environment.json has no queue_ms: the model needs the fabric's queue")
    policies = []
    for policy in recorded:
        if kept_policy_dir(raw, policy) is None:
            notes.append(f"{policy}: no raw run kept; left out")
        else:
            policies.append(policy)
    schedule = run_schedule(scenario)
    schedules = policy_schedules(scenario, policies)
    if summary.fidelity.solo:
        solo = on_wire_units(summary.fidelity.solo, time_scale)
        solo_spans = {job: read_raw_run(kept_solo_dir(raw, job)).bursts for job in solo}
    else:
        solo, solo_spans = solo_from_raw(raw, scenario, links, wiring)
        notes.append("summary.json kept no solo figures: computed again from the kept solo runs")
    record = PolicyRecord(duration_s=0.0)  # holds what the model reads: means, bursts, offsets
    for policy in policies:
        measured = read_raw_run(kept_policy_dir(raw, policy))
        record.measured[policy] = analysis.policy_figures(measured.iterations, measured.bursts, links.meeting_pairs())
        record.bursts[policy] = measured.bursts
        kept = summary.policies.get(policy)
        windows = results.windows.assign(open_s=results.windows["open_s"] * time_scale)  # as on the wire
        record.offsets[policy] = run_offsets_ms(policy, on_wire_units({"offsets_ms": kept.offsets_ms}, time_scale)
                                                ["offsets_ms"] if kept else {}, windows, schedules[policy], notes)
        record.epochs[policy] = kept.epoch_s if kept else None
    run = MeasuredRun(schedule, solo, solo_spans, record.bursts, launch_leads_ms(solo), schedules,
                      links.meeting_pairs(), scenario.transport)
    now = {policy: PolicySummary.from_dict(in_scenario_units(entry.to_dict(), time_scale))
           for policy, entry in policy_summaries(run, record, links.primary.mbps, float(queue_ms), links,
                                                 patterns=pattern_jobs_arcs(scenario)).items()}
    rows = []
    for policy, entry in now.items():
        if entry.prediction_unavailable:
            notes.append(f"{policy}: no prediction: the model could not simulate it ({entry.prediction_unavailable})")
            continue
        for job, figures in entry.jobs.items():
            kept = summary.policies.get(policy)
            before = kept.jobs.get(job) if kept else None
            rows.append(Repredicted(policy, job, figures.mean_iteration_ms,
                                    before.predicted_iteration_ms if before else None, figures.predicted_iteration_ms))
    return rows, notes


def accuracy(errors_pct: list[float]) -> dict:
    """Mean |error| and how many are within :data:`WITHIN_PCT`."""
    if not errors_pct:
        return {"mean_abs_error_pct": None, "within_goal": 0, "pairs": 0}
    return {"mean_abs_error_pct": sum(abs(e) for e in errors_pct) / len(errors_pct),
            "within_goal": sum(abs(e) <= WITHIN_PCT for e in errors_pct), "pairs": len(errors_pct)}
