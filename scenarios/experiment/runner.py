"""One emulation run: scenario → fabric → calibration → each policy → results folder.

The steps, in order (``shiftbed run`` is a thin adapter around :class:`Experiment`):

1. the theory plans the scenario (schedule, pair facts);
2. a fabric comes up with the fabric app and the window scheduler; every
   job's traffic is pinned to one spine (the scenario's ``pin_spine``, else
   spine 1), so the contention happens on a known link, which is captured;
3. the jobs are registered with the scheduler (its REST API), which computes
   the schedule with the same theory module;
4. calibration: each job alone, a few iterations — its solo iteration time,
   its burst's start-up overhead and data time, the realised rate of its
   bursts on the wire (fidelity);
5. each policy in turn: the scheduler sets the policy and a common epoch, the
   job drivers run for the duration (gate: the scheduler opens and closes
   each job's windows in the switches), tcpdump captures the shared link;
6. the fluid model, fed with the measured solo figures and the offsets the
   scheduler actually used, predicts every job's mean iteration time;
7. summary, cross-checks and report into the results folder (atomic: a
   temporary folder renamed at the end, also when interrupted).
"""

from __future__ import annotations

import glob
import logging
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from apps import hoststeal
from apps import iperf as iperf_app
from controller.theory.policies import get_policy
from controller.theory.schedule import compute_schedule
from scenarios.analysis import tables as analysis
from scenarios.experiment.prediction import (
    RunModel,
    busy_start_costs_ms,
    knife_edge,
    late_launch_bursts_ms,
    pooled_solo,
    typical_lead_ms,
)
from scenarios.results import ResultsWriter, schedule_record, throughput_change_pct
from scenarios.sharedlink import fabric_params, planned_solo_mbps, shared_link

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
FIDELITY_MIN_RATIO = 0.90  # realised solo burst rate / the rate the configured links give it
# Calibration makes each job's solo iteration ~4 % shorter than its period
# (PERIOD_MARGIN; a parameter server measured up to 3.8 % over it). A job this far
# over its period alone is a calibration gone wrong or a job this emulator cannot
# run (two solo runs once shared a folder: 9.2 times the period, docs/accuracy.md).
SOLO_OVERRUN_SHARE = 0.25
CALIBRATION_ITERATIONS = 6  # per solo run while a job's bursts are sized ...
# ... and for the solo run whose bursts the model draws from. A gated job misses
# a window about as often as the draws hold a slow burst, and 7 % of solo bursts
# are slow (8 ms or more over their run's median: 85 final solo runs). With 5
# bursts one slow one was a fifth of the draws (eighth session); with 10, two were
# in 15 % of runs, and a classroom `gate` alpha was predicted to miss 20 % of its
# windows and missed 8 % (docs/accuracy.md, eleventh session).
MODEL_CALIBRATION_ITERATIONS = 21
BURST_TARGET = 0.7  # a solo burst (start-up included) should take this share of comm_ms ...
BURST_TOLERANCE = 0.1  # ... give or take this share (else the fill is corrected again)
SIZING_ROUNDS = 3
PERIOD_MARGIN = 0.04  # an emulated job's solo iteration is this share shorter than its period
# ... give or take this share of the period, else its compute phase is moved by
# the difference and the solo run measured again (once). The fill of the last
# sizing round is never measured before the compute phase is set from it; in
# one classroom run alpha came out at 299.7 ms for 300 and its gated run missed
# 14 of 24 windows (docs/accuracy.md, twelfth session).
PERIOD_TOLERANCE = 0.02
# Corrections at most. With one, a host that changed speed between the two solo runs left
# classroom alpha at 300.3 ms (target 288) and beta at 560.5 (target 576); commensurate jobs
# off their common margin drift apart under a static shift, and lab 3's `shift` met bursts
# in 11-12 % of busy bins where it promises at most 8 % (docs/accuracy.md, fourteenth session).
PERIOD_CORRECTIONS = 2
# Fidelity asks whether the fabric delivers its configured rate, so the first
# part of each solo burst (a fresh TCP connection's slow start, which real
# networks share) is left out of the sustained rate; the whole-burst rate is
# recorded beside it.
SLOW_START_SHARE = 0.25
# A solo run or a policy's run during which the host took more than
# apps.hoststeal.MAX_STEAL_PCT of the CPU is kept in raw/ and measured again, up
# to this many times in all; still disturbed, the run loses fidelity. With 3, 10
# of 37 kept runs on this machine lost fidelity so: of 61 measurements disturbed
# once, 31 were disturbed again, and 10 of those a third time (fifteenth session).
MEASURE_ATTEMPTS = 5
GATE_FLOOR_SHARE = 0.02  # outside its windows a gated job keeps this share of the link (FINs pass)
# A burst's data should reach its leaf just after its window opened there, never
# before: edges take effect 1-3 ms after their time (docs/gate.md), and data
# that meets a closed gate (in floor mode, a token bucket of 31 KB at 2 % of the
# link) loses its 8 948-byte segments while smaller ones pass; now and then TCP
# then waits for retransmission timeouts past the window's end (600 ms). Each job
# launches its own solo lead (launch -> first data packet; the median,
# prediction.typical_lead_ms) minus this guard early; with one lead for all
# jobs (their mean), the job with the shorter lead sent ~2 ms before its window
# (docs/accuracy.md, sixth session).
LAUNCH_GUARD_MS = 3.0
PORT_STRIDE = 10  # job i's iperf3 servers use ports base + PORT_STRIDE*i + k (apps/iperf.receiver_port: clients')
BASE_PORT = 5201
START_IN_S = 1.5  # epoch this far ahead of the policy request, so every driver is ready
WATCH_INTERVAL_S = 0.2  # how often a running policy checks the controller and the workers


def with_phase(spec, phase_ms: float):
    """``spec`` with a communication phase of ``phase_ms`` and the same bytes per burst, so that
    its compute phase is ``period − phase_ms``; None when no such job exists (fill > 1, or no compute)."""
    from dataclasses import replace

    if not 0 < phase_ms < spec.period_ms or spec.fill * spec.comm_ms > phase_ms:
        return None
    return replace(spec, comm_ms=phase_ms, fill=spec.fill * spec.comm_ms / phase_ms)


def period_correction(spec, solo_iteration_ms: float):
    """``spec`` with its compute phase moved so its solo iteration lands on ``(1 − PERIOD_MARGIN)``
    of its period; None when it is already within :data:`PERIOD_TOLERANCE` of that (or cannot move).

    The compute phase is a fixed sleep, so moving it moves the solo iteration by as much."""
    target_ms = (1 - PERIOD_MARGIN) * spec.period_ms
    error_ms = solo_iteration_ms - target_ms
    if abs(error_ms) <= PERIOD_TOLERANCE * spec.period_ms:
        return None
    return with_phase(spec, spec.comm_ms + error_ms)


def trimmed_to_target(spec, solo: dict):
    """``spec`` and its ``solo`` figures with the compute phase moved by what is left of the solo
    iteration's error after :func:`period_correction` (at most :data:`PERIOD_TOLERANCE`), so every
    job's solo iteration is exactly ``(1 − PERIOD_MARGIN)`` of its period. Unchanged if it cannot move.

    No new measurement is needed: the compute phase is a fixed sleep, so the solo
    iteration moves by exactly as much and the bursts not at all. It matters under
    a static shift: each job within 2 % of its own target (up to 24 ms per 600 ms
    between classroom alpha and beta) left alpha at 285 ms and beta at 578, 8 ms
    apart per 600 ms; with the machine's drift they moved 20 ms apart per 600 ms
    under `shift` and met after 3 s. Lab 3's `shift` met bursts in 16 % of busy
    bins where it promises at most 8 % (docs/accuracy.md, sixteenth session)."""
    target_ms = (1 - PERIOD_MARGIN) * spec.period_ms
    trimmed = with_phase(spec, spec.comm_ms + solo["iteration_ms"] - target_ms)
    if trimmed is None:
        return spec, solo
    return trimmed, {**solo, "iteration_ms": target_ms, "measured_iteration_ms": solo["iteration_ms"],
                     "compute_trim_ms": trimmed.compute_ms - spec.compute_ms}


def job_dscp(index: int) -> int:
    """The DSCP (and so the fair-share class on every link) of the scenario's job number ``index``."""
    from topo.leafspine import FAIR_CLASSES

    return 1 + index % FAIR_CLASSES


def overrun_jobs(solo: dict[str, dict], period_ms: dict[str, float]) -> list[str]:
    """Jobs whose solo iteration exceeds their period by more than :data:`SOLO_OVERRUN_SHARE`."""
    return sorted(n for n, s in solo.items() if s["iteration_ms"] > (1 + SOLO_OVERRUN_SHARE) * period_ms[n])


def measurement_steal(solo: dict[str, dict], policy_steal: dict[str, dict], peak: bool = False) -> dict[str, float]:
    """The host's stolen CPU (%) during each kept measurement fidelity rests on: each job's first
    solo run (its rate is the fidelity figure: in one h7-triple run job a's came at 38.5 of 50 Mbit/s
    with 12.3 % stolen in all three attempts), the solo run the model draws from, each policy.
    With ``peak``, the worst second of each (what a mean over a whole run hides)."""
    key = "host_steal_peak_pct" if peak else "host_steal_pct"
    steal = {f"first solo {n}": s[f"nominal_{key}"] for n, s in solo.items() if f"nominal_{key}" in s}
    steal.update({f"solo {n}": s[key] for n, s in solo.items() if key in s})
    steal.update({p: st["peak_pct" if peak else "mean_pct"] for p, st in policy_steal.items()})
    return steal


def fidelity_advice(solo: dict[str, dict], link_mbps: float, ratio: float | None, unmeasured: list[str],
                    drops: int, overrun: dict[str, float] | None = None,
                    disturbed: dict[str, float] | None = None) -> str:
    """What to change when fidelity is lost, one sentence per cause.

    ``overrun``: the period (ms) of each job whose solo iteration exceeded it;
    ``disturbed``: the stolen CPU (%) of each measurement the host disturbed in every attempt.
    """
    parts = []
    if disturbed:
        why = ", ".join(f"{what} {pct:.0f} %" for what, pct in disturbed.items())
        parts.append(f"this machine's host took more than {hoststeal.MAX_STEAL_PCT:g} % of its CPU in all "
                     f"{MEASURE_ATTEMPTS} attempts at {', '.join(disturbed)} ({why}); run again when the host "
                     "is quieter, or give the machine more cores of its own")
    if overrun:
        why = "; ".join(f"{n}: {solo[n]['iteration_ms']:.0f} ms per iteration for a {period:.0f}-ms period"
                        for n, period in overrun.items())
        parts.append(f"alone, {', '.join(overrun)} could not keep their periods ({why}); give them a longer "
                     "comm_ms or period, or look in raw/ for a burst that stalled")
    if unmeasured:
        why = "; ".join(f"{n}: {solo[n]['data_ms']:.0f} ms of data after {solo[n]['startup_ms']:.0f} ms of "
                        "process start-up" for n in unmeasured)
        parts.append(f"the solo bursts of {', '.join(unmeasured)} were too short to measure a rate ({why}); "
                     "give those jobs a longer comm_ms")
    if ratio is not None and ratio < FIDELITY_MIN_RATIO:
        parts.append(f"solo bursts reached only {ratio:.0%} of the rate the {link_mbps:g}-Mbit/s links give them; "
                     "lower the link rates, keep jumbo frames, or use fewer concurrent flows")
    if drops:
        parts.append(f"tcpdump dropped {drops} packets; capture fewer links or lower the link rates")
    return "; ".join(parts) or "fidelity was not confirmed"


class RunAborted(Exception):
    """The run cannot go on (controller died, a worker failed, a signal); measurements are kept."""


class WorkerFault(RunAborted):
    """A job's driver or one of its iperf3 processes failed; names the job and the worker.

    During a policy this stops that policy's measurement only (a gap in the
    results); during calibration it ends the run.
    """

    def __init__(self, job: str, worker: str | None, message: str):
        super().__init__(message)
        self.job, self.worker = job, worker


@dataclass(frozen=True)
class RunOptions:
    """What ``shiftbed run`` was asked for."""

    policies: tuple[str, ...]
    duration_s: float
    out_root: Path
    seed: int = 0
    fill: float = 0.8  # share of comm_ms a solo burst's data takes (apps/dltjob.py)
    datapath: str | None = None


def environment_record(fabric) -> dict:
    """Versions and settings a reader needs to reproduce the run."""

    def output(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return None

    iperf = output(["iperf3", "--version"])
    return {
        "shiftbed_commit": output(["git", "-C", str(REPO), "rev-parse", "HEAD"]),
        "ovs_version": fabric.ovs_version,
        "ryu_version": output([str(Path(os.sys.executable)), "-c", "import ryu; print(ryu.version)"]),
        "iperf3_version": iperf.splitlines()[0] if iperf else None,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "datapath": fabric.datapath,
        "mtu": fabric.mtu,
        "queue_ms": fabric.queue_ms,
        "cores": os.cpu_count(),
        "link_mbps": min(fabric.params.host_link_mbps, fabric.params.fabric_link_mbps),  # a flow's rate
        "shared_link_mbps": fabric.params.fabric_link_mbps,  # what the jobs' bursts share (a leaf uplink)
        "fabric_startup_s": fabric.startup_s,
        "ovs_tx_sndbuf_bytes": fabric.ovs_tx_sndbuf_bytes,
        "ovs_heap": fabric.ovs_heap,  # topo/ovs_heap.py: tuned, warmed or shared (userspace datapath)
        "burst_tcp": {"congestion_control": iperf_app.CONGESTION, "nodelay": True},
    }


class Progress:
    """A live line on stderr: policy, elapsed/total, iterations per job, link utilisation."""

    def __init__(self, stream, interface: str, link_mbps: float):
        self.stream, self.interface, self.link_mbps = stream, interface, link_mbps
        self._stop = threading.Event()
        self._thread = None

    def _tx_bytes(self) -> int:
        try:
            with open(f"/sys/class/net/{self.interface}/statistics/tx_bytes") as f:
                return int(f.read())
        except (OSError, ValueError):
            return 0

    def start(self, label: str, total_s: float, csv_paths: dict[str, tuple[str, int]]) -> None:
        """Show progress until :meth:`stop`; ``csv_paths``: job → (its rows' CSV, its worker count)."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(label, total_s, csv_paths), daemon=True)
        self._thread.start()

    def _loop(self, label, total_s, csv_paths):
        started, last_bytes, last_t = time.monotonic(), self._tx_bytes(), time.monotonic()
        while not self._stop.wait(1.0):
            now, now_bytes = time.monotonic(), self._tx_bytes()
            util = (now_bytes - last_bytes) * 8 / 1e6 / max(now - last_t, 1e-3) / self.link_mbps
            last_bytes, last_t = now_bytes, now
            done = {job: _count_rows(path) // workers for job, (path, workers) in csv_paths.items()}
            jobs = " ".join(f"{job}:{n}" for job, n in done.items())
            self.stream.write(f"\r  {label:>8}  {min(now - started, total_s):5.1f}/{total_s:.0f} s  "
                              f"iterations {jobs}  link {util:4.0%}   ")
            self.stream.flush()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
            self.stream.write("\n")
            self.stream.flush()


def _count_rows(path: str) -> int:
    try:
        with open(path) as f:
            return max(0, sum(1 for _ in f) - 1)
    except OSError:
        return 0


class Experiment:
    """Runs one scenario under the requested policies and writes the results folder."""

    def __init__(self, scenario, scenario_text: str, options: RunOptions, progress_stream=None):
        self.scenario = scenario
        self.scenario_text = scenario_text
        self.options = options
        self.progress_stream = progress_stream
        self.schedule = compute_schedule(scenario.timings(), scenario.quantum_ms)
        self.writer: ResultsWriter | None = None
        self.epochs: dict[str, float] = {}  # policy -> its epoch (unix s)
        self.solo: dict[str, dict] = {}
        self.solo_spans: dict[str, pd.DataFrame] = {}  # per job: the bursts of the solo run kept in self.solo
        self.measured: dict[str, dict] = {}
        self.bursts: dict[str, pd.DataFrame] = {}  # policy -> its bursts (analysis.burst_spans)
        self.offsets: dict[str, dict] = {}
        self.link_checks: dict[str, dict] = {}
        self.gaps: list[dict] = []  # policies whose measurement a worker fault cut short
        self.link_mbps = min(scenario.fabric.host_link_mbps, scenario.fabric.fabric_link_mbps)
        self.expected_solo_mbps: dict[str, float] = {}  # per job: its solo rate on the shared link, as planned
        self.launch_lead_ms: dict[str, float] = {}  # per job: launch this early so its data meets its offset
        self.solo_runs: dict[str, int] = {}  # per job: solo runs so far (each has its own raw folder)
        self.policy_steal: dict[str, dict] = {}  # the kept measurement of each policy: the CPU its host took
        self.disturbed: list[dict] = []  # measurements the host disturbed, kept in raw/ and run again

    # -- the whole run ---------------------------------------------------------

    def run(self) -> Path:
        """Run everything; returns the final results folder (also on interruption, then re-raises)."""
        from controller.forwarding import Pin
        from controller.process import FabricController
        from topo.fabric import Fabric

        sc = self.scenario
        f = sc.fabric
        params = fabric_params(sc)
        pins = self._pins(Pin)
        self.writer = ResultsWriter(self.options.out_root, sc.name)
        complete, reason = False, None
        try:
            self.writer.write_text("scenario.yaml", self.scenario_text)
            stats_raw = self.writer.partial_dir / "port_stats.raw.csv"
            queue = {"queue_ms": f.queue_ms} if f.queue_ms is not None else {}
            with Fabric(params, FabricController(apps=("controller.scheduler_app",), pins=tuple(pins),
                                         stats_csv=str(stats_raw)), datapath=self.options.datapath, **queue) as fabric:
                self.fabric = fabric
                fabric.record.notes["results_partial_dir"] = str(self.writer.partial_dir)  # for `shiftbed clean`
                fabric.record.save()
                self.link = shared_link(sc, fabric.wiring)
                self.expected_solo_mbps = planned_solo_mbps(sc, fabric.wiring, self.link)
                self.link_mbps = min(f.host_link_mbps, f.fabric_link_mbps)
                self.writer.write_json("environment.json", environment_record(fabric))
                try:
                    self._run_on(fabric)
                finally:  # the controller's log goes with the results (the fabric's workdir does not stay)
                    _copy_if_exists(fabric.controller.log_path, self.writer.partial_dir / "controller.log")
                self._stats_raw = stats_raw
            complete = not self.gaps
            if self.gaps:
                reason = "measurement gaps: " + "; ".join(
                    f"policy {g['policy']}: {g['message']}" for g in self.gaps)
        except BaseException as exc:  # keep what was measured, say why it stopped, re-raise
            reason = _reason(exc)
            raise
        finally:
            self._finish(complete, reason)
        return self.writer.final_dir

    def _pins(self, Pin) -> list:
        """Every job's TCP traffic through its spine (the scenario's pin_spine, else spine 1),
        marked with the job's own DSCP so that links share fairly between jobs."""
        pins = []
        for i, job in enumerate(self.scenario.jobs):
            first = BASE_PORT + PORT_STRIDE * i
            spine, dscp = job.pin_spine or 1, job_dscp(i)
            pins.append(Pin(spine=spine, src_port_range=(first, first + PORT_STRIDE - 1), dscp=dscp))
            pins.append(Pin(spine=spine, dst_port_range=(first, first + PORT_STRIDE - 1), dscp=dscp))
        return pins

    def _run_on(self, fabric) -> None:
        from apps import jobrun

        sc = self.scenario
        timings = {t.name: t for t in sc.timings()}
        self.specs = [
            jobrun.job_on_fabric(fabric, job.name, timings[job.name].period_ms, timings[job.name].comm_ms,
                                 list(job.workers), pattern=job.pattern, link_mbps=self.link_mbps,
                                 fill=self.options.fill, base_port=BASE_PORT + PORT_STRIDE * i,
                                 jitter_ms=job.jitter_ms, seed=self.options.seed + i)
            for i, job in enumerate(sc.jobs)]
        self._classify_host_egress(fabric)
        rest = fabric.controller.rest_url
        controller_schedule = jobrun.register_jobs(rest, fabric.wiring, self.specs)
        log.info("scheduler: feasible=%s hyperperiod=%s ms", controller_schedule.get("feasible"),
                 controller_schedule.get("hyperperiod_ms"))
        self._calibrate(fabric)
        self.writer.write_json("schedule.json", schedule_record(self.schedule, {
            name: (s["iteration_ms"], s["comm_ms"]) for name, s in self.solo.items()}))
        for policy in self.options.policies:
            self._run_policy(fabric, policy)

    def _classify_host_egress(self, fabric) -> None:
        """Put each job's data into its own fair-share class on its senders' links too."""
        from apps.dltjob import data_flows

        for i, spec in enumerate(self.specs):
            for flow in data_flows(spec):
                fabric.classify_egress(flow["src_host"], flow["tcp_src"], job_dscp(i))

    # -- calibration -----------------------------------------------------------

    def _calibrate(self, fabric) -> None:
        """Each job alone: size its bursts to fit ``comm_ms``, then keep its solo figures.

        A burst is a fixed start-up cost (process start, iperf3's control
        exchange: docs/gate.md) plus data at the rate the fabric delivers. Each
        solo run measures both; the fill is corrected until a solo burst takes
        ``BURST_TARGET`` × ``comm_ms`` (± ``BURST_TOLERANCE``), leaving margin
        so that a gated burst ends inside its window. Then the compute phase
        is set so that a solo iteration takes ``1 − PERIOD_MARGIN`` of the
        period, checked on the solo run the model draws from
        (:func:`period_correction`), and what is left of the error trimmed off
        (:func:`trimmed_to_target`).
        """
        from dataclasses import replace

        sized = []
        for spec in self.specs:
            nominal_mbps = nominal_steal = nominal_peak = None
            for _ in range(SIZING_ROUNDS):
                solo = self._solo(fabric, spec)
                if nominal_mbps is None:  # the scenario's own burst size, before any re-sizing
                    nominal_mbps, nominal_steal = solo["sustained_mbps"], solo["host_steal_pct"]
                    nominal_peak = solo["host_steal_peak_pct"]
                if abs(solo["comm_ms"] / spec.comm_ms - BURST_TARGET) <= BURST_TOLERANCE:
                    break
                data_target_ms = max(BURST_TARGET * spec.comm_ms - solo["startup_ms"], 0.2 * spec.comm_ms)
                fill = spec.fill * data_target_ms / max(solo["data_ms"], 1e-3)
                spec = replace(spec, fill=min(1.0, max(0.02, fill)))
            # The scenario's period is the solo iteration time: compute for
            # period − (the burst's measured length) − a small margin, with the
            # same bytes, so a gated job is ready a little before its next
            # window (a job even 1 ms slower than its window period misses
            # every other window). The margin is a share of the period, so
            # commensurate periods stay commensurate.
            rephased = with_phase(spec, solo["comm_ms"] + PERIOD_MARGIN * spec.period_ms)
            if rephased is not None:
                spec = rephased
                solo = self._solo(fabric, spec, MODEL_CALIBRATION_ITERATIONS)
                for _ in range(PERIOD_CORRECTIONS):
                    corrected = period_correction(spec, solo["iteration_ms"])
                    if corrected is None:
                        break
                    log.info("solo %s: %.1f ms per iteration for a %.0f-ms period; compute moved by %.1f ms",
                             spec.name, solo["iteration_ms"], spec.period_ms, spec.compute_ms - corrected.compute_ms)
                    spec = corrected
                    solo = self._solo(fabric, spec, MODEL_CALIBRATION_ITERATIONS)
                spec, solo = trimmed_to_target(spec, solo)
            sized.append(spec)
            self.solo[spec.name] = {**solo, "fill": spec.fill, "nominal_sustained_mbps": nominal_mbps,
                                    "nominal_host_steal_pct": nominal_steal, "nominal_host_steal_peak_pct": nominal_peak}
            log.info("solo %s: %s", spec.name, {k: round(v, 2) for k, v in self.solo[spec.name].items()
                                                if isinstance(v, float)})
        self.specs = sized
        self.launch_lead_ms = {name: max(0.0, typical_lead_ms(s) - LAUNCH_GUARD_MS) for name, s in self.solo.items()}

    def _solo(self, fabric, spec, iterations: int = CALIBRATION_ITERATIONS) -> dict:
        """One job alone for ``iterations`` iterations: its solo figures (ms) and burst rate (Mbit/s)."""
        from apps.dltjob import JobPlan

        # One folder per solo run: two runs of a job at the same fill once shared one, their
        # rows were read as one run's, and the model got 2.8-s iterations for a 300-ms job.
        for attempt in range(1, MEASURE_ATTEMPTS + 1):  # a run the host disturbed is kept, and run again
            self.solo_runs[spec.name] = self.solo_runs.get(spec.name, 0) + 1
            run_dir = self._work_dir("solo", spec.name, str(self.solo_runs[spec.name]), f"{spec.fill:.3f}")
            plan = JobPlan("none", time.time() + START_IN_S, 0.0, spec.period_ms, spec.comm_ms)
            rows, packets, labels, _, steal = self._drive(fabric, [spec], run_dir, f"solo {spec.name}",
                                                          plans={spec.name: plan}, iterations=iterations)
            if not steal.disturbed or attempt == MEASURE_ATTEMPTS:
                break
            self._measure_again(f"solo {spec.name}", attempt, run_dir, steal)
        it = analysis.iteration_table(rows)
        steady = it[it["iteration"] >= 1]
        senders = self._link_senders([spec])
        rates = analysis.burst_rates_mbps(packets, labels, steady, senders)
        sustained = analysis.burst_rates_mbps(packets, labels, steady, senders, skip_fraction=SLOW_START_SHARE)
        spans = analysis.burst_spans(packets, labels, steady, it)
        self.solo_spans[spec.name] = spans  # the last solo run of a job is the one kept
        first_ms, data_ms = analysis.burst_spans_ms(spans, steady)
        # Medians: a slow process start now and then is not the burst. The compute
        # phase is a fixed sleep, so the median iteration is compute + median burst;
        # a mean pulled up by one slow burst (302 ms for a 300 ms job) had a gated
        # job miss every window in the model when it is on time in most.
        comm_ms = float(steady["comm_ms"].median())
        return {"iteration_ms": float(steady["iteration_ms"].median()), "comm_ms": comm_ms, "data_ms": data_ms,
                "startup_ms": comm_ms - data_ms, "lead_ms": first_ms,
                "burst_mbps": float(np.median(rates)) if len(rates) else 0.0,
                "sustained_mbps": float(np.median(sustained)) if len(sustained) else 0.0,
                "link_samples_ms": analysis.link_time_samples_ms(spans),
                "after_samples_ms": analysis.after_time_samples_ms(spans),
                "host_steal_pct": round(steal.mean_pct, 2), "host_steal_peak_pct": round(steal.peak_pct, 2),
                **analysis.burst_medians_ms(spans).get(spec.name, {})}

    def _run_policy(self, fabric, policy: str) -> None:
        from apps import jobrun

        rest = fabric.controller.rest_url
        options = {}
        enforced = get_policy(policy).enforces_windows
        if enforced:  # a floor, not a wall: a burst's closing handshake after its window still passes
            options = {"mode": "floor", "floor_kbps": int(GATE_FLOOR_SHARE * self.link_mbps * 1000)}
        for attempt in range(1, MEASURE_ATTEMPTS + 1):  # a run the host disturbed is kept, and run again
            doc = jobrun.set_policy(rest, policy, start_in_s=START_IN_S, seed=self.options.seed, **options)
            epoch_s = float(doc["epoch_s"])
            run_dir = self._work_dir(policy) if attempt == 1 else self._work_dir(policy, f"attempt{attempt}")
            measured = self._drive_policy(fabric, policy, run_dir, epoch_s, enforced)
            if measured is None:
                return
            rows, packets, labels, window, steal = measured
            if not steal.disturbed or attempt == MEASURE_ATTEMPTS:
                break
            self._measure_again(policy, attempt, run_dir, steal)
        self.policy_steal[policy] = steal.as_dict()
        self.offsets[policy] = {name: float(j["offset_ms"]) for name, j in doc["jobs"].items()}
        self._record_policy(policy, doc, epoch_s, rows, packets, labels, window)

    def _measure_again(self, measurement: str, attempt: int, run_dir: str, steal) -> None:
        """Record a measurement the host disturbed (its folder stays in raw/) and wait for a quiet host."""
        self.disturbed.append({"measurement": measurement, "attempt": attempt, "run": os.path.basename(run_dir),
                               **steal.as_dict()})
        log.warning("%s: measuring it again (attempt %d of %d)", measurement, attempt + 1, MEASURE_ATTEMPTS)
        hoststeal.wait_until_quiet()

    def _drive_policy(self, fabric, policy, run_dir, epoch_s, enforced):
        """One measurement of ``policy``: what :meth:`_drive` returns, or None if a worker fault stopped it."""
        from apps import jobrun

        rest = fabric.controller.rest_url
        try:
            return self._drive(fabric, self.specs, run_dir, policy, until_s=epoch_s + self.options.duration_s)
        except WorkerFault as fault:  # this policy's measurement stops here; the next policy runs
            kept = self._keep_rows(policy, run_dir)
            self.gaps.append({"policy": policy, "job": fault.job, "worker": fault.worker,
                              "message": str(fault), "iterations_kept": kept})
            log.error("policy %s: %s; its measurement stopped (%d iteration rows kept), going on with the "
                      "next policy", policy, fault, kept)
            return None
        except BaseException:  # interrupted or aborted: keep the iterations measured so far
            self._keep_rows(policy, run_dir)
            raise
        finally:
            if enforced and fabric.controller.alive():
                jobrun.stop_gate(rest)

    def _drive(self, fabric, specs, run_dir, label, plans=None, iterations=None, until_s=None):
        """Run job drivers with the shared link captured; returns (rows, packets, labels, (t0, t1), steal)."""
        from apps import dltjob, jobrun
        from apps.capture import Capture
        from apps.dltjob import data_flows
        from scenarios.analysis.pcap import label_flows, read_pcap

        pcap = os.path.join(run_dir, "shared.pcap")
        cap = Capture(self.link.interface, pcap, on_start=lambda pid: fabric.track(pid, "tcpdump"),
                      log_path=os.path.join(run_dir, "tcpdump.err"))
        progress = None
        if self.progress_stream is not None:
            progress = Progress(self.progress_stream, self.link.interface, self.link.mbps)
            total = (until_s - time.time()) if until_s else sum(s.period_ms for s in specs) / 1000 * (iterations or 1)
            progress.start(label, total, {s.name: (os.path.join(run_dir, f"{s.name}.csv"), len(s.workers))
                                          for s in specs})
        t0 = time.time()
        drivers = {}
        meter = hoststeal.StealMeter().start()
        try:
            drivers = jobrun.start_drivers(specs, run_dir, fabric.controller.rest_url, plans=plans,
                                           iterations=iterations, until_s=until_s, fabric=fabric,
                                           launch_lead_ms=self.launch_lead_ms,
                                           burst_ms=late_launch_bursts_ms(self.schedule, self.solo))
            budget = (until_s - time.time() if until_s else 0) + 60 + sum(s.period_ms for s in specs) / 1000 * (
                iterations or 0) * 3
            self._watch(fabric, drivers, run_dir, label, budget)
        finally:
            if progress:
                progress.stop()
            for proc in drivers.values():  # interrupted or faulted: end the jobs first
                dltjob.stop_driver(proc)
            cap.stop()
            jobrun.end_leftover_servers(run_dir)
            steal = meter.stop()
        t1 = time.time()
        rows = pd.concat([pd.read_csv(os.path.join(run_dir, f"{s.name}.csv")) for s in specs], ignore_index=True)
        packets = read_pcap(pcap)
        flows = {s.name: [(f["src_ip"], f["dst_ip"], f["tcp_src"], f["tcp_dst"]) for f in data_flows(s)]
                 for s in specs}
        labels = label_flows(packets, flows)
        self._capture_drops(run_dir, label)
        if steal.disturbed:
            log.warning("%s: the host took %.1f %% of this machine's CPU (more than %g %%)", label, steal.mean_pct,
                        hoststeal.MAX_STEAL_PCT)
        return rows, packets, labels, (t0, t1), steal

    def _watch(self, fabric, drivers, run_dir, label, budget_s) -> None:
        """Wait for the job drivers, checking every ``WATCH_INTERVAL_S`` the controller and the workers.

        A dead controller is a :class:`RunAborted` naming it; a driver that
        exits with an error or a burst that fails (iperf3 killed, refused) is
        a :class:`WorkerFault` naming the job and the worker. Either way the
        drivers are stopped at once (the caller's ``finally``).
        """
        from apps import dltjob

        deadline = time.monotonic() + budget_s
        tracked: set[str] = set()
        while True:
            _track_servers(fabric, run_dir, tracked)
            if not fabric.controller.alive():
                raise RunAborted(f"the controller (pid {fabric.controller.pid}) died during {label}; "
                                 "its log is controller.log in the results folder")
            running = False
            for name, proc in drivers.items():
                code = proc.poll()
                running |= code is None
                if code not in (None, 0):
                    raise WorkerFault(name, None, f"job {name}: its driver exited with status {code} "
                                      f"(see {run_dir}/{name}.driver.err)")
                fault = _first_error(os.path.join(run_dir, f"{name}.csv"))
                if fault:
                    worker, error = fault
                    raise WorkerFault(name, worker, f"job {name}, worker {worker}: {error}")
            if not running:
                return
            if time.monotonic() > deadline:
                for proc in drivers.values():
                    dltjob.stop_driver(proc)
                raise RunAborted(f"{label}: the jobs did not finish within {budget_s:.0f} s (see {run_dir})")
            time.sleep(WATCH_INTERVAL_S)

    def _keep_rows(self, policy, run_dir) -> int:
        """Append the iterations a cut-short policy completed without error to iterations.csv."""
        frames = []
        for spec in self.specs:
            path = os.path.join(run_dir, f"{spec.name}.csv")
            try:
                frames.append(pd.read_csv(path))
            except (OSError, pd.errors.EmptyDataError):
                continue
        if not frames:
            return 0
        rows = pd.concat(frames, ignore_index=True)
        rows = rows[rows["error"].isna() | (rows["error"].astype(str) == "")]
        if rows.empty:
            return 0
        self.writer.append_rows("iterations.csv", rows.assign(policy=policy)[
            ["policy", "job", "worker", "iteration", "start", "comm_start", "comm_end", "end", "bytes"]]
            .to_dict("records"))
        return len(rows)

    def _capture_drops(self, run_dir, label) -> None:
        """tcpdump reports kernel drops on exit; any drop makes the run lose fidelity."""
        text = Path(run_dir, "tcpdump.err").read_text(errors="replace")
        dropped = 0
        for line in text.splitlines():
            if "dropped by kernel" in line:
                dropped += int(line.split()[0])
        self.link_checks.setdefault("capture_drops", 0)
        self.link_checks["capture_drops"] += dropped

    def _link_senders(self, specs) -> set[str]:
        """IPs of hosts on the captured link's leaf (their packets leave through it)."""
        return {w.ip for s in specs for w in s.workers if self.fabric.wiring.host(w.name).leaf == self.link.leaf}

    def _record_policy(self, policy, doc, epoch_s, rows, packets, labels, window) -> None:
        it = analysis.iteration_table(rows)
        self.measured[policy] = analysis.job_means(it)
        steady = it[it["iteration"] >= 1]  # job_means' warm-up
        self.bursts[policy] = analysis.burst_spans(packets, labels, steady, it)
        for job, medians in analysis.burst_medians_ms(self.bursts[policy]).items():
            if job in self.measured[policy]:
                self.measured[policy][job].update(medians)
        self.writer.append_rows("iterations.csv", rows[["policy", "job", "worker", "iteration", "start",
                                                         "comm_start", "comm_end", "end", "bytes"]]
                                .to_dict("records"))
        senders = self._link_senders(self.specs)
        out = packets["src_ip"].isin(senders)
        t_end = max(window[1], epoch_s + self.options.duration_s)
        bins = analysis.bandwidth_bins(packets[out], labels[out], epoch_s, t_end)
        if not bins.empty:
            self.writer.append_rows("link_bandwidth.csv", bins.assign(policy=policy, link=self.link.name)
                                    [["policy", "link", "t_s", "job", "mbps"]].to_dict("records"))
        pol = get_policy(policy)
        if pol.uses_schedule or pol.realigns():  # planned (shift) or realigned-to / enforced windows
            wins = []
            for name, j in doc["jobs"].items():
                first = float(j["offset_ms"]) / 1000  # gate: its offset is the shift
                period_s, window_s = float(j["period_ms"]) / 1000, float(j["window_ms"]) / 1000
                k = 0
                while first + k * period_s < self.options.duration_s:
                    wins.append({"policy": policy, "job": name, "open_s": first + k * period_s,
                                 "close_s": first + k * period_s + window_s})
                    k += 1
            self.writer.append_rows("windows.csv", wins)
        self._check_bytes(policy, rows, packets, labels, senders)
        if pol.enforces_windows:
            from scenarios.analysis import gatecheck

            self.link_checks.setdefault("gate_bytes_in_window", {}).update(
                {job: v["in_window"] for job, v in gatecheck.bytes_in_windows(packets, labels, doc).items()})
        self.link_checks.setdefault("intervals", {})[policy] = (epoch_s, t_end)
        self.link_checks.setdefault("outgoing", {})[policy] = packets.loc[out, ["time_s", "wire_bytes"]]
        self.epochs[policy] = epoch_s

    def _check_bytes(self, policy, rows, packets, labels, senders) -> None:
        """Captured payload bytes of flows leaving through the link vs what iperf3 reported sending."""
        sender_names = {w.name for s in self.specs for w in s.workers if w.ip in senders}
        reported = float(rows[rows["worker"].isin(sender_names)]["bytes"].sum())
        mask = packets["src_ip"].isin(senders) & (labels != "")
        captured = analysis.unique_payload_bytes(packets[mask])
        self.link_checks.setdefault("bytes", {})[policy] = {"captured": captured, "reported": reported}

    def _work_dir(self, *parts) -> str:
        """A new folder under raw/ for one run of the drivers (their CSVs append: never reuse one)."""
        path = self.writer.partial_dir / "raw" / "-".join(parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        return str(path)

    # -- prediction and summary ------------------------------------------------

    def _other_bursts(self, policy: str | None) -> pd.DataFrame:
        """The bursts of the run's policies but ``policy`` (a policy's prediction never uses its own;
        None: every policy's)."""
        others = [b for p, b in self.bursts.items() if p != policy and not b.empty]
        return pd.concat(others, ignore_index=True) if others else pd.DataFrame()

    def model_solo(self, policy: str) -> dict[str, dict]:
        """The solo figures the model is fed for ``policy``: pooled with the quiet bursts of the
        run's other policies (``scenarios.experiment.prediction.pooled_solo``)."""
        return pooled_solo(self.solo, self.solo_spans, self._other_bursts(policy))

    def predict(self, policy: str, figures: dict[str, dict], busy_start_ms: dict[str, float],
                busy_start_samples_ms: dict[str, tuple[float, ...]],
                ) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
        """Each job's predicted mean iteration time under ``policy`` and its range (``scenarios/experiment/prediction.py``).

        The fluid model is fed with ``figures`` (:meth:`model_solo`) and the offsets
        the scheduler used. It counts as many iterations as the measurement:
        that skips only the first (launch to first burst's end,
        analysis.job_means) and counts from the first burst's end on.
        """
        model = RunModel(self.schedule, figures, self.launch_lead_ms, self.link.mbps, self.fabric.queue_ms)
        iterations = max(m["iterations"] for m in self.measured[policy].values()) + 1
        return model.predict_with_range(policy, self.offsets[policy], iterations, busy_start_ms,
                                        busy_start_samples_ms)

    def busy_starts_ms(self, policy: str, figures: dict[str, dict] | None = None,
                       ) -> tuple[dict[str, float], dict[str, tuple[float, ...]]]:
        """Per job, what a busy start cost in the run's other policies (``scenarios.experiment.prediction``):
        the median (or the default) and each such burst's, beyond the lead in ``figures``
        (default: the solo figures)."""
        spans = self._other_bursts(policy)
        lead_ms = {name: s["lead_ms"] for name, s in (figures or self.solo).items()}
        costs = busy_start_costs_ms(analysis.busy_start_extra_ms(spans, lead_ms),
                                    [j.name for j in self.schedule.jobs])
        return costs, analysis.busy_start_samples_ms(spans, lead_ms)

    def _finish(self, complete: bool, reason: str | None) -> None:
        """Summary, tables, report; the folder is renamed whatever happened."""
        try:
            self._write_port_stats()
            self.writer.write_json("summary.json", self._summary(complete, reason))
            if not (self.writer.partial_dir / "windows.csv").exists():  # no shift/gate policy ran
                self.writer.write_table("windows.csv", pd.DataFrame(columns=["policy", "job", "open_s", "close_s"]))
        except Exception as exc:  # never lose the folder because a summary could not be computed
            log.exception("summary failed")
            reason = reason or f"summary failed: {exc}"
            complete = False
        self.writer.finish(complete, reason)
        try:
            from scenarios.report.document import draw_report

            draw_report(self.writer.final_dir)
        except Exception:
            log.exception("report failed; redraw with `shiftbed report %s`", self.writer.final_dir)

    def _write_port_stats(self) -> None:
        raw = self.writer.partial_dir / "port_stats.raw.csv"
        if raw.exists() and raw.stat().st_size:
            from controller.port_stats import read_port_stats

            stats = read_port_stats(raw).rename(columns={"time_s": "time"})
            cols = ["time", "dpid", "port", "rx_bytes", "tx_bytes", "rx_packets", "tx_packets",
                    "rx_dropped", "tx_dropped", "switch"]
            self.writer.write_table("port_stats.csv", stats[cols])
            raw.unlink()

    def _summary(self, complete: bool, reason: str | None) -> dict:
        policies = {}
        predictions = {}
        for policy, jobs in self.measured.items():
            figures = self.model_solo(policy)
            busy, busy_samples = self.busy_starts_ms(policy, figures)
            predictions[policy], ranges = self.predict(policy, figures, busy, busy_samples)
            entry = {}
            for name, m in jobs.items():
                predicted = predictions[policy][name]
                entry[name] = {**m, "predicted_iteration_ms": predicted,
                               "predicted_range_ms": list(ranges[name]), "busy_start_ms": busy[name],
                               "knife_edge": knife_edge(predicted, ranges[name]),
                               "solo_iteration_ms": self.solo[name]["iteration_ms"],
                               "model_solo_iteration_ms": figures[name]["iteration_ms"],
                               "model_quiet_bursts": figures[name]["quiet_bursts"],
                               "error_pct": analysis.percent_error(m["mean_iteration_ms"], predicted)}
            policies[policy] = {"jobs": entry, "epoch_s": self.epochs.get(policy)}
        if "none" in policies:
            none_ms = {j: v["mean_iteration_ms"] for j, v in policies["none"]["jobs"].items()}
            none_pred = predictions["none"]
            for policy, entry in policies.items():
                measured_ms = {j: v["mean_iteration_ms"] for j, v in entry["jobs"].items()}
                entry["throughput_change_vs_none_pct"] = throughput_change_pct(measured_ms, none_ms)
                entry["predicted_throughput_change_vs_none_pct"] = throughput_change_pct(predictions[policy], none_pred)
        # Fidelity asks whether the fabric carries the scenario's bursts at its link rate, so
        # it is measured on each job's first solo run, at the scenario's burst size
        # (``fill`` of comm_ms at the link rate). Calibration then shortens the bursts to make
        # room for process start-up; a 10-packet burst's rate measures one scheduling pause
        # more than the fabric (docs/accuracy.md, eighth session). A job whose bursts carry
        # too few packets for a rate (analysis.burst_rates_mbps) is unmeasured, not "0 %".
        rates = {name: s["nominal_sustained_mbps"] for name, s in self.solo.items()}
        unmeasured = sorted(name for name, mbps in rates.items() if not mbps)
        # against what the configured links give the job's flows on the shared link (a parameter
        # server's flows share its link, so each gets a part of the rate)
        expected = self.expected_solo_mbps
        ratio = min((mbps / (expected.get(name) or self.link_mbps) for name, mbps in rates.items() if mbps),
                    default=None)
        drops = self.link_checks.get("capture_drops", 0)
        periods = {j.name: j.period_ms for j in self.scenario.jobs}
        overrun = overrun_jobs(self.solo, periods)
        steal = measurement_steal(self.solo, self.policy_steal)
        disturbed = {what: pct for what, pct in steal.items() if pct > hoststeal.MAX_STEAL_PCT}
        # Not part of fidelity_ok: the fabric may still carry its rate, and the model's figures
        # follow the drift (pooled_solo). But a job that drifted further than calibration's own
        # tolerance did not run at the period it was calibrated to, and the report says so.
        drift_ms = analysis.speed_drift_ms(self.solo_spans, self._other_bursts(None))
        drift_pct = {n: None if ms is None else round(100 * ms / periods[n], 2) for n, ms in drift_ms.items()}
        drifted = sorted(n for n, pct in drift_pct.items() if pct is not None and abs(pct) > 100 * PERIOD_TOLERANCE)
        fidelity_ok = (bool(self.solo) and not unmeasured and not overrun and ratio >= FIDELITY_MIN_RATIO
                       and drops == 0 and not disturbed)
        advice = (fidelity_advice(self.solo, self.link_mbps, ratio, unmeasured, drops,
                                  {n: periods[n] for n in overrun}, disturbed) if not fidelity_ok else None)
        return {
            "scenario": self.scenario.name,
            "complete": complete,
            "incomplete_reason": reason,
            "fidelity_ok": fidelity_ok,
            "fidelity": {"solo_rate_ratio": ratio, "expected_solo_mbps": expected,
                         "unmeasured_jobs": unmeasured, "overrun_jobs": overrun,
                         "capture_drops": drops, "advice": advice,
                         "host_steal_pct": steal, "host_steal_max_pct": hoststeal.MAX_STEAL_PCT,
                         "host_steal_peak_pct": measurement_steal(self.solo, self.policy_steal, peak=True),
                         "disturbed": sorted(disturbed), "measured_again": self.disturbed,
                         "speed_drift_pct_of_period": drift_pct, "drifted": drifted,
                         "drift_max_pct": 100 * PERIOD_TOLERANCE,
                         "solo": self.solo},
            "crosschecks": self._crosschecks(),
            "shared_link": self.link.name if hasattr(self, "link") else None,
            "policies": policies,
            "gaps": self.gaps,
        }

    def _crosschecks(self) -> dict:
        out = {}
        byte_sets = self.link_checks.get("bytes", {})
        if byte_sets:
            captured = sum(v["captured"] for v in byte_sets.values())
            reported = sum(v["reported"] for v in byte_sets.values())
            out["capture_vs_iperf_bytes_err_pct"] = analysis.percent_error(captured, reported)
        if "gate_bytes_in_window" in self.link_checks:
            out["gate_bytes_in_window"] = self.link_checks["gate_bytes_in_window"]
        out["capture_vs_portstats_util_err_pct"] = self._util_check()
        return out

    def _util_check(self) -> float | None:
        """Link utilisation from the capture vs from OpenFlow port counters, over the same interval."""
        raw = self.writer.partial_dir / "port_stats.csv"
        if not raw.exists() or not hasattr(self, "link"):
            return None
        stats = pd.read_csv(raw)
        from topo.wiring import leaf_dpid

        errors = []
        for policy, (t0, t1) in self.link_checks.get("intervals", {}).items():
            tx, t_lo, t_hi = analysis.port_tx_bytes(stats, leaf_dpid(self.link.leaf), self.link.port, t0, t1)
            outgoing = self.link_checks["outgoing"][policy]
            if t_hi <= t_lo:
                continue
            times = outgoing["time_s"].to_numpy()
            captured = float(outgoing["wire_bytes"].to_numpy()[(times >= t_lo) & (times < t_hi)].sum())
            if tx > 0:
                errors.append(abs(analysis.percent_error(captured, tx)))
        return max(errors) if errors else None


def _first_error(csv_path: str) -> tuple[str, str] | None:
    """(worker, error) of the first row of a driver's CSV that reports an error, else None.

    The error names the flow and the host whose iperf3 client failed
    (``apps/dltjob.py``); that host is the worker named.
    """
    import csv

    try:
        with open(csv_path, newline="") as f:
            for row in csv.DictReader(f):
                error = (row.get("error") or "").strip()
                if error:
                    named = re.search(r"client on (\S+?)\)", error)
                    return (named.group(1) if named else row.get("worker", "?")), error
    except OSError:
        pass
    return None


def _track_servers(fabric, run_dir: str, tracked: set[str]) -> None:
    """The drivers' iperf3 servers are daemons: put their PIDs (from their pid files) in the run record.

    So ``shiftbed clean`` ends them even when the run and its drivers were SIGKILLed.
    """
    for path in glob.glob(os.path.join(run_dir, "iperf3-*.pid")):
        if path in tracked:
            continue
        try:
            pid = int(Path(path).read_text().strip().strip("\x00"))
        except (OSError, ValueError):  # not written yet: next time
            continue
        tracked.add(path)
        fabric.track(pid, "iperf3-server")


def _copy_if_exists(src, dst) -> None:
    try:
        shutil.copyfile(src, dst)
    except OSError:
        pass


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (SIGINT/SIGTERM)"
    return f"{exc.__class__.__name__}: {exc}"

