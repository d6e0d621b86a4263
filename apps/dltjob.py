"""Emulated data-parallel training job: compute sleeps and synchronous iperf3 collectives.

Process model: one *driver* process per job, in the root namespace. It starts
one iperf3 server per flow in the receivers' namespaces, then each iteration
launches the senders' clients in their hosts' namespaces (``mnexec -a PID``)
all at once and waits for every one of them: that wait is the collective's
barrier. One process per job keeps the barrier a plain ``wait()`` and keeps
jobs from sharing a GIL or a scheduler. With ``transport: persistent`` the
flows run instead over standing connections opened once per job
(``apps.transports.StreamTransport``, ``apps/stream.py``), as collective libraries keep
theirs; the barrier is then the last receiver's report of its last byte.

Timeline (the model's occupancy ``[s + k·T, s + k·T + c)``): iteration ``k``
is a compute phase of ``period_ms − comm_ms`` (± uniform jitter of
``jitter_ms``; less the last burst's launch overhead beyond its usual,
:meth:`JobDriver.compute_s`) then the communication phase. Iteration 0 starts at
``epoch + offset − compute`` so that its *communication* begins at
``epoch + offset``: under ``none`` every job's first burst starts at the
epoch, under ``shift``/``random`` at its offset, and after that each job runs
free. Whenever the policy says so (``Policy.waits_for_window(k)``; ``gate``:
every iteration) the communication phase waits for the start of the next
window ``epoch + offset + m·T`` (launching ``launch_lead_ms`` early so the data,
not the client's start-up, begins just after the window edge; a negative lead
launches after it); a burst ready after its
window opened still launches into it while it would end inside it
(:func:`late_launch_ms`). The driver loads the
policy files named in ``SHIFTBED_POLICY_FILES``, so a user's policy works here
as the built-ins do.

A pattern job (``JobSpec.phases``) sends each phase as its own burst over
the job's standing connections, at its offset from the end of the compute
phase (the iteration's origin; the gate's wait moves the origin), or once the
phase before it has ended if that one is still in flight; one row per phase
and iteration goes to ``<job>.phases.csv`` (``apps.jobmodel.PHASE_CSV_FIELDS``).
A classic job is the one phase at 0.

The job's spec, its flows and their sizes are data (``apps/jobmodel.py``).
Every iteration of every worker is one CSV row, flushed at once.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from apps.jobmodel import (
    CSV_FIELDS,
    PHASE_CSV_FIELDS,
    JobPlan,
    JobSpec,
    Transfer,
    TransferResult,
    iteration_phases,
)
from apps.transports import open_transport
from controller.theory.windows import next_window_index, window_start_ms

# The driver's wake-ups are the job's clock. Under Linux's default scheduler a
# busy two-CPU VM woke drivers up to 21 ms late (p99 4 ms, 25,000 iterations;
# docs/accuracy.md), enough to move a burst by a tenth of a
# window. A real-time policy puts a wake-up ahead of every normal process.
CLOCK_RT_PRIORITY = 10


def keep_time(priority: int = CLOCK_RT_PRIORITY) -> bool:
    """Run this process under ``SCHED_FIFO`` so that its wake-ups are on time; False where not allowed.

    ``SCHED_RESET_ON_FORK``: the iperf3 clients it starts run at normal priority,
    so only the driver's few milliseconds of work per burst jump the queue.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(priority))
    except (AttributeError, OSError):
        return False
    return True


class SystemClock:
    """Wall clock (unix seconds): the controller and every driver share it on one machine."""

    def now(self) -> float:
        return time.time()

    def sleep_until(self, t_s: float) -> None:
        while True:
            left = t_s - time.time()
            if left <= 0:
                return
            time.sleep(left if left > 0.002 else left / 2)


def phases_csv_path(csv_path: str) -> str:
    """Where a pattern job's driver writes its phases, beside its iterations' ``<job>.csv``."""
    return csv_path[:-len(".csv")] + ".phases.csv" if csv_path.endswith(".csv") else csv_path + ".phases"


class IterationLog:
    """CSV of one row per worker per iteration (or, with ``fields``, any rows), flushed after each row
    (pandas reads it)."""

    def __init__(self, path: str, fields: tuple[str, ...] = CSV_FIELDS):
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        self._file = open(path, "a", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=fields)
        if new:
            self._writer.writeheader()
            self._file.flush()

    def write(self, row: dict) -> None:
        self._writer.writerow(row)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


# A burst ready this little after its window opened still launches into it (late).
WINDOW_TOLERANCE_MS = 2.0
# ... or, for a job whose burst length alone is known, as late as still leaves it
# this much of its window at the end. With 2 ms only, a classroom alpha whose
# burst took 20 ms more than alone lost a whole period waiting for its next
# window, though 37 ms of the window were left (docs/accuracy.md).
LATE_LAUNCH_GUARD_MS = 10.0


def late_launch_ms(window_ms: float, burst_ms: float | None) -> float:
    """How long after its window opened a burst of ``burst_ms`` (launch to end, alone) still launches
    into it: while it would end :data:`LATE_LAUNCH_GUARD_MS` before the window closes."""
    if burst_ms is None:
        return WINDOW_TOLERANCE_MS
    return max(WINDOW_TOLERANCE_MS, window_ms - burst_ms - LATE_LAUNCH_GUARD_MS)


def next_window_start(plan: JobPlan, t_s: float, tolerance_ms: float = WINDOW_TOLERANCE_MS) -> float:
    """Start of the first window ``epoch + offset + m·T`` (m ≥ 0) not more than ``tolerance_ms`` past ``t_s``."""
    t_ms = (t_s - plan.epoch_s) * 1000 - tolerance_ms
    m = max(0, next_window_index(plan.offset_ms, plan.period_ms, t_ms, 1e-9))
    return plan.epoch_s + window_start_ms(plan.offset_ms, plan.period_ms, m) / 1000


@dataclass
class JobDriver:
    """Runs one job's iterations. Clock, transport and log are injected (fakes in unit tests).

    ``transport(phase) -> list[TransferResult]`` runs one phase's flows together and
    returns when all are done.
    """

    spec: JobSpec
    plan: JobPlan
    transport: Callable[[list[Transfer]], list[TransferResult]]
    log: Callable[[dict], None]
    clock: object = field(default_factory=SystemClock)
    launch_lead_ms: float = 0.0
    burst_ms: float | None = None  # the burst's length alone (launch to end), for :func:`late_launch_ms`
    # the launch overhead of a burst alone (:func:`launch_overhead_ms`, the solo median); None: not kept
    launch_overhead_ms: float | None = None
    stop: Callable[[], bool] = lambda: False
    phase_log: Callable[[dict], None] | None = None  # a pattern job's rows per phase (PHASE_CSV_FIELDS)
    ready_slack_ms: float | None = field(default=None, init=False)  # < 0: ready after iteration 0 was due

    def __post_init__(self):
        self._rng = random.Random(self.spec.seed)
        self._phases = iteration_phases(self.spec)
        self._overhead_excess_ms = 0.0  # the last burst's launch overhead beyond the usual

    @property
    def compute_ms(self) -> float:
        """The job's compute phase as this policy runs it: its own, plus the plan's padding."""
        return self.spec.compute_ms + self.plan.padding_ms

    def compute_s(self) -> float:
        """This iteration's compute time: ``period − comm`` plus uniform(±jitter_ms), never < 0, less
        what the last burst's launch overhead took beyond the usual (``launch_overhead_ms``): fresh
        iperf3 processes and a control connection, which standing connections never pay and whose
        time moves with the machine's load (docs/accuracy.md). Only the data phase, the network's
        doing, moves the job's clock."""
        jitter = self._rng.uniform(-self.spec.jitter_ms, self.spec.jitter_ms) if self.spec.jitter_ms else 0.0
        return max(0.0, self.compute_ms + jitter - self._overhead_excess_ms) / 1000

    def run(self, iterations: int | None = None, until_s: float | None = None) -> int:
        """Run until ``iterations`` are done, ``until_s`` (unix) passes or ``stop()``; return the count."""
        first_comm_s = self.plan.epoch_s + self.plan.offset_ms / 1000
        start_s = first_comm_s - self.compute_ms / 1000
        if self.plan.gated:
            start_s -= self.launch_lead_ms / 1000
        self.ready_slack_ms = (start_s - self.clock.now()) * 1000
        self.clock.sleep_until(start_s)
        k = 0
        while not self.stop() and (iterations is None or k < iterations):
            if until_s is not None and self.clock.now() >= until_s:
                break
            start_s = max(start_s, self.clock.now()) if k else start_s
            start_s = self.iteration(k, start_s)
            k += 1
        return k

    def iteration(self, k: int, start_s: float) -> float:
        """One iteration starting at ``start_s``: compute, (gate: wait), collective, barrier; log rows."""
        compute_end_s = start_s + (self.compute_ms / 1000 if k == 0 else self.compute_s())
        launch_s = compute_end_s
        if self.plan.waits_for_window(k):
            window_s = next_window_start(self.plan, compute_end_s, late_launch_ms(self.plan.window_ms, self.burst_ms))
            launch_s = max(compute_end_s, window_s - self.launch_lead_ms / 1000)
        results, overhead_ms = [], 0.0
        for index, (offset_ms, steps) in enumerate(self._phases):
            due_s = launch_s + offset_ms / 1000  # or later: the phase before it is still in flight
            self.clock.sleep_until(due_s)
            mine = []
            for step in steps:
                done = self.transport(step)
                mine.extend(done)
                overhead_ms += launch_overhead_ms(done)
            results.extend(mine)
            if self.phase_log is not None:
                self.phase_log({"job": self.spec.name, "iteration": k, "phase": index, "policy": self.plan.policy,
                                "due": due_s, "launch": min(r.start_s for r in mine),
                                "end": max(r.end_s for r in mine), "bytes": sum(r.bytes_sent for r in mine),
                                "error": "; ".join(r.error for r in mine if r.error)})
        end_s = max(r.end_s for r in results)
        known = self.launch_overhead_ms is not None and not math.isnan(overhead_ms)
        self._overhead_excess_ms = overhead_ms - self.launch_overhead_ms if known else 0.0
        for worker in self.spec.workers:
            mine = [r for r in results if worker in (r.transfer.src, r.transfer.dst)]
            sent = [r for r in results if r.transfer.src == worker]
            self.log({
                "job": self.spec.name, "worker": worker.name, "iteration": k, "start": start_s,
                "comm_start": min(r.start_s for r in mine), "comm_end": max(r.end_s for r in mine),
                "end": end_s, "bytes": sum(r.bytes_sent for r in sent), "policy": self.plan.policy,
                "retransmits": sum(r.retransmits for r in sent),
                "error": "; ".join(r.error for r in mine if r.error),
                "launch_overhead_ms": "" if math.isnan(overhead_ms) else round(overhead_ms, 3),
            })
        return end_s


def launch_overhead_ms(phase: list[TransferResult]) -> float:
    """What a phase's flows took beyond moving their data: the first launch to the last exit, less
    the longest data time (process starts, control exchanges, exits); NaN when a flow's is unknown."""
    if not phase or any(r.error or r.data_s <= 0 for r in phase):
        return math.nan
    return (max(r.end_s for r in phase) - min(r.start_s for r in phase) - max(r.data_s for r in phase)) * 1000


def fetch_plan(controller_url: str, job: str, timeout_s: float = 5.0) -> JobPlan:
    """Ask the scheduler's REST API for this job's plan."""
    from controller.scheduler_client import SchedulerClient

    return JobPlan.from_schedule(SchedulerClient(controller_url, timeout_s).schedule(), job)


def main(argv=None) -> int:
    """``python -m apps.dltjob CONFIG.json``: run one job's driver (see :func:`driver_config`)."""
    parser = argparse.ArgumentParser(prog="python -m apps.dltjob", description=__doc__.splitlines()[0])
    parser.add_argument("config", help="JSON file written by apps.dltjob.driver_config")
    args = parser.parse_args(argv)
    with open(args.config) as f:
        cfg = json.load(f)
    from controller.theory.policies import load_from_environment

    load_from_environment()  # the run's --policy-file / policy_files: policies
    realtime = keep_time()
    spec = JobSpec.from_dict(cfg["job"])
    if cfg.get("plan"):
        plan = JobPlan(**cfg["plan"])
    else:
        plan = fetch_plan(cfg["controller_url"], spec.name)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    log = IterationLog(cfg["csv"])
    phase_log = IterationLog(phases_csv_path(cfg["csv"]), PHASE_CSV_FIELDS) if spec.phases else None
    transport = None
    try:
        transport = open_transport(spec, cfg["run_dir"])
        driver = JobDriver(spec, plan, transport, log.write, launch_lead_ms=cfg.get("launch_lead_ms", 0.0),
                           burst_ms=cfg.get("burst_ms"), launch_overhead_ms=cfg.get("launch_overhead_ms"),
                           stop=lambda: bool(stopping), phase_log=phase_log.write if phase_log else None)
        done = driver.run(iterations=cfg.get("iterations"), until_s=cfg.get("until_s"))
        print(json.dumps({"job": spec.name, "iterations": done, "realtime": realtime,
                          "ready_slack_ms": round(driver.ready_slack_ms, 1)}), file=sys.stderr)
    finally:
        if transport is not None:
            transport.close()
        log.close()
        if phase_log is not None:
            phase_log.close()
    return 0


def driver_config(spec: JobSpec, csv_path: str, run_dir: str, *, controller_url: str | None = None,
                  plan: JobPlan | None = None, iterations: int | None = None,
                  until_s: float | None = None, launch_lead_ms: float = 0.0,
                  burst_ms: float | None = None, launch_overhead_ms: float | None = None) -> dict:
    """The JSON document :func:`main` reads. Give ``controller_url`` (plan from REST) or ``plan``."""
    if (controller_url is None) == (plan is None):
        raise ValueError("give exactly one of controller_url and plan")
    return {"job": asdict(spec), "csv": csv_path, "run_dir": run_dir, "controller_url": controller_url,
            "plan": asdict(plan) if plan else None, "iterations": iterations, "until_s": until_s,
            "launch_lead_ms": launch_lead_ms, "burst_ms": burst_ms, "launch_overhead_ms": launch_overhead_ms}


def start_driver(config: dict, config_path: str, python: str = sys.executable, stderr=None):
    """Write ``config`` to ``config_path`` and start the driver process; returns the Popen (its PID)."""
    import subprocess

    with open(config_path, "w") as f:
        json.dump(config, f)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.Popen([python, "-m", "apps.dltjob", config_path], cwd=root, stderr=stderr)


def stop_driver(proc, timeout_s: float = 10.0) -> int:
    """SIGTERM a driver (it finishes the iteration in flight, ends its iperf3s) and wait; SIGKILL if stuck."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except Exception:
            proc.kill()
            proc.wait()
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
