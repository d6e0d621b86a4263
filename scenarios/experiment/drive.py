"""One measurement: the job drivers run with the ports where they meet captured, and are watched.

:class:`Measurer` starts the drivers (``apps/jobrun.py``) and one tcpdump per
captured port (``scenarios/runlinks.py``), checks every :data:`WATCH_INTERVAL_S` that the controller lives
and no worker failed, and reads back the drivers' rows and the capture. A
measurement during which the machine's host took its CPU is kept in ``raw/``
and measured again (:meth:`Measurer.measure_again`).
"""

from __future__ import annotations

import glob
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from apps import hoststeal
from scenarios.experiment import disk
from scenarios.runlinks import RunLinks
from scenarios.summary_record import Remeasurement

log = logging.getLogger(__name__)

# A solo run or a policy's run during which the host took more than
# apps.hoststeal.MAX_STEAL_PCT of the CPU is kept in raw/ and measured again, up
# to this many times in all; still disturbed, the run loses fidelity. With 3, 10
# of 37 kept runs on this machine lost fidelity so: of 61 measurements disturbed
# once, 31 were disturbed again, and 10 of those a third time (measured 2026-12-02).
MEASURE_ATTEMPTS = 5
# what a run prints for a measurement the host disturbed (apps.hoststeal.measured_again_pcts reads it)
DISTURBED_LINE = "%s: the host took %.1f %% of this machine's CPU (more than %g %%)"
START_IN_S = 1.5  # epoch this far ahead of the policy request, so every driver is ready
WATCH_INTERVAL_S = 0.2  # how often a running policy checks the controller and the workers


class RunAborted(Exception):
    """The run cannot go on (controller died, a worker failed, a signal); measurements are kept."""


class DiskFull(RunAborted):
    """The results folder's disk is (nearly) full: the run stops, keeping what it measured."""


class WorkerFault(RunAborted):
    """A job's driver or one of its iperf3 processes failed; names the job and the worker.

    During a policy this stops that policy's measurement only (a gap in the
    results); during calibration it ends the run.
    """

    def __init__(self, job: str, worker: str | None, message: str):
        super().__init__(message)
        self.job, self.worker = job, worker


@dataclass(frozen=True)
class Measurement:
    """What one run of the drivers left: their rows, the captured packets and each packet's job."""

    rows: pd.DataFrame  # the drivers' CSVs, one row per worker and iteration
    packets: pd.DataFrame  # every job's data packets, each once, from every capture (:func:`job_view`)
    labels: pd.Series  # each of those packets' job
    window: tuple[float, float]  # (start, end) of the drivers' run, unix s
    steal: hoststeal.Steal  # the CPU the host took meanwhile
    captures: dict[str, tuple[pd.DataFrame, pd.Series]] = field(default_factory=dict)  # port -> packets, jobs
    phase_rows: pd.DataFrame | None = None  # pattern jobs' phases (apps.jobmodel.PHASE_CSV_FIELDS); None: none


def job_view(captures: dict[str, tuple[pd.DataFrame, pd.Series]]) -> tuple[pd.DataFrame, pd.Series]:
    """Every job's data packets from all captures, each packet once (its first sighting: a flow that
    crosses two captured ports is seen on both), in time order. With one capture, its labelled packets."""
    frames = [packets[labels != ""].assign(job=labels[labels != ""]) for packets, labels in captures.values()]
    if not frames:
        return pd.DataFrame(), pd.Series(dtype=object)
    view = pd.concat(frames, ignore_index=True)
    if len(frames) > 1:
        key = ["src_ip", "dst_ip", "sport", "dport", "seq", "ip_id", "payload_bytes"]
        view = view.sort_values("time_s", kind="stable").drop_duplicates(key).reset_index(drop=True)
    return view.drop(columns="job"), view["job"]


@dataclass
class MeasureLog:
    """What measuring noticed on the way; both make the run lose fidelity (``fidelity.py``)."""

    capture_drops: int = 0  # packets tcpdump reported dropped, over every measurement
    measured_again: list[Remeasurement] = field(default_factory=list)  # measurements the host disturbed


class Measurer:
    """Runs the job drivers on ``fabric`` with the ports of ``links`` captured, one folder under
    ``raw_dir`` each."""

    def __init__(self, fabric, links: RunLinks, raw_dir: Path, notes: MeasureLog, display=None):
        self.fabric, self.links, self.raw_dir, self.notes = fabric, links, Path(raw_dir), notes
        self.display = display  # the run's display (``display.RunDisplay``), or None

    def work_dir(self, *parts) -> str:
        """A new folder under raw/ for one run of the drivers (their CSVs append: never reuse one)."""
        path = self.raw_dir / "-".join(parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir()
        return str(path)

    def home_senders(self, specs) -> dict[str, set[str]]:
        """Per job, the IPs of its workers on its home port's leaf (their packets leave through it)."""
        host = self.fabric.wiring.host
        return {s.name: {w.ip for w in s.workers if host(w.name).leaf == self.links.home[s.name].leaf}
                for s in specs}

    def measure_again(self, measurement: str, attempt: int, run_dir: str, steal: hoststeal.Steal) -> None:
        """Record a measurement the host disturbed (its folder stays in raw/) and wait for a quiet host."""
        taken = steal.as_dict()
        self.notes.measured_again.append(Remeasurement(measurement, attempt, os.path.basename(run_dir),
                                                       taken["mean_pct"], taken["peak_pct"]))
        log.warning("%s: measuring it again (attempt %d of %d)", measurement, attempt + 1, MEASURE_ATTEMPTS)
        hoststeal.wait_until_quiet()

    def drive(self, specs, run_dir: str, label: str, *, plans=None, iterations=None, until_s=None,
              launch_lead_ms: dict[str, float] | None = None,
              burst_ms: dict[str, float] | None = None,
              launch_overhead_ms: dict[str, float] | None = None, stop_when=None) -> Measurement:
        """Run job drivers with the ports captured (``apps.jobrun.start_drivers`` for the arguments);
        ``stop_when()``, polled while they run, ends them early when true (``stopping.PolicyStop``)."""
        from apps import dltjob, jobrun
        from apps.capture import Capture
        from apps.jobmodel import data_flows
        from scenarios.analysis.pcap import label_flows, read_pcap

        fabric = self.fabric
        files = {port.name: capture_files(run_dir, port.interface, i) for i, port in enumerate(self.links.ports)}
        caps = []
        try:
            for port in self.links.ports:
                pcap, err = files[port.name]
                caps.append(Capture(port.interface, pcap, on_start=lambda pid: fabric.track(pid, "tcpdump"),
                                    log_path=err))
        except BaseException:
            for cap in caps:
                cap.stop()
            raise
        primary = self.links.primary
        progress = None
        if self.display is not None:
            from scenarios.experiment.display import Sampler

            progress = Sampler(self.display, primary.interface, primary.mbps,
                               {s.name: (os.path.join(run_dir, f"{s.name}.csv"), len(s.workers)) for s in specs})
            total = (until_s - time.time()) if until_s else (
                START_IN_S + sum(s.period_ms for s in specs) / 1000 * (iterations or 1))
            progress.start(label, total)
        t0 = time.time()
        drivers = {}
        meter = hoststeal.StealMeter().start()
        try:
            drivers = jobrun.start_drivers(specs, run_dir, fabric.controller.rest_url, plans=plans,
                                           iterations=iterations, until_s=until_s, fabric=fabric,
                                           launch_lead_ms=launch_lead_ms, burst_ms=burst_ms,
                                           launch_overhead_ms=launch_overhead_ms)
            budget = (until_s - time.time() if until_s else 0) + 60 + sum(s.period_ms for s in specs) / 1000 * (
                iterations or 0) * 3
            self._watch(drivers, run_dir, label, budget, stop_when)
        finally:
            if progress:
                progress.stop()
            for proc in drivers.values():  # interrupted or faulted: end the jobs first
                dltjob.stop_driver(proc)
            for cap in caps:
                cap.stop()
            jobrun.end_leftover_servers(run_dir)
            steal = meter.stop()
        t1 = time.time()
        rows = pd.concat([pd.read_csv(os.path.join(run_dir, f"{s.name}.csv")) for s in specs], ignore_index=True)
        phase_files = [dltjob.phases_csv_path(os.path.join(run_dir, f"{s.name}.csv")) for s in specs if s.phases]
        phase_rows = pd.concat([pd.read_csv(f) for f in phase_files if os.path.exists(f)] or [pd.DataFrame()],
                               ignore_index=True) if phase_files else None
        flows = {s.name: [(f["src_ip"], f["dst_ip"], f["tcp_src"], f["tcp_dst"]) for f in data_flows(s)]
                 for s in specs}
        captures = {}
        for name, (pcap, err) in files.items():
            packets = read_pcap(pcap)
            captures[name] = (packets, label_flows(packets, flows))
            self._count_capture_drops(err)
        if steal.disturbed:
            log.warning(DISTURBED_LINE, label, steal.mean_pct, hoststeal.MAX_STEAL_PCT)
        packets, labels = job_view(captures)
        return Measurement(rows, packets, labels, (t0, t1), steal, captures, phase_rows)

    def _watch(self, drivers, run_dir, label, budget_s, stop_when=None) -> None:
        """Wait for the job drivers, checking every ``WATCH_INTERVAL_S`` the controller and the workers
        (and returning early once ``stop_when()`` is true: the caller stops the drivers).

        A dead controller is a :class:`RunAborted` naming it; a driver that
        exits with an error or a burst that fails (iperf3 killed, refused) is
        a :class:`WorkerFault` naming the job and the worker. Either way the
        drivers are stopped at once (the caller's ``finally``).
        """
        from apps import dltjob

        fabric = self.fabric
        deadline = time.monotonic() + budget_s
        tracked: set[str] = set()
        while True:
            _track_servers(fabric, run_dir, tracked)
            free = disk.free_bytes(run_dir)
            if free < disk.DISK_FLOOR_BYTES:
                raise DiskFull(f"the disk holding the results is full ({free / 2**20:.1f} MB left) during {label}; "
                               "free some space and run again")
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
            if not running or (stop_when is not None and stop_when()):
                return
            if time.monotonic() > deadline:
                for proc in drivers.values():
                    dltjob.stop_driver(proc)
                raise RunAborted(f"{label}: the jobs did not finish within {budget_s:.0f} s (see {run_dir})")
            time.sleep(WATCH_INTERVAL_S)

    def _count_capture_drops(self, err_path) -> None:
        """tcpdump reports kernel drops on exit; any drop makes the run lose fidelity."""
        text = Path(err_path).read_text(errors="replace")
        dropped = 0
        for line in text.splitlines():
            if "dropped by kernel" in line:
                dropped += int(line.split()[0])
        self.notes.capture_drops += dropped


def capture_files(run_dir: str, interface: str, index: int) -> tuple[str, str]:
    """The capture file and tcpdump's messages of a run's ``index``-th port: ``shared.pcap`` and
    ``tcpdump.err`` for the first (the busiest), ``<interface>.pcap`` and ``.err`` for the others."""
    if index == 0:
        return os.path.join(run_dir, "shared.pcap"), os.path.join(run_dir, "tcpdump.err")
    return os.path.join(run_dir, f"{interface}.pcap"), os.path.join(run_dir, f"{interface}.err")


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
