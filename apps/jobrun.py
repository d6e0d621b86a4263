"""Glue for runners: jobs on a running fabric, registered with the scheduler, drivers started.

The scenario runner, the integration tests and ``bench/gate.py`` all do the
same few steps, so they live here once::

    specs = [job_on_fabric(fabric, "a", 200, 80, ["h1", "h3"], base_port=5201), ...]
    rest = fabric.controller.rest_url          # controller started with controller.scheduler_app
    register_jobs(rest, fabric.wiring, specs)   # POST /shiftbed/jobs (flows matched at each sender's leaf)
    scheduler = SchedulerClient(rest)
    schedule = scheduler.set_policy("gate", start_in_s=2.0)
    solo = calibrate(specs, run_dir, fabric=fabric)  # each job alone: solo iteration/comm/overhead
    drivers = start_drivers(specs, run_dir, rest, iterations=20, fabric=fabric)
    wait_drivers(drivers)                       # rows in <run_dir>/<job>.csv
    scheduler.stop()

The scheduler's REST API is :class:`controller.scheduler_client.SchedulerClient`.

Nothing here imports Mininet or Ryu: the fabric is duck-typed (``host(name).pid``,
``ip(name)``, ``wiring.host(name).leaf``, ``track(pid, label)``).
"""

from __future__ import annotations

import glob
import os
import time

from apps import dltjob, jobmodel
from apps.iperf import kill_pid
from apps.iterations import iteration_table
from controller.scheduler_client import SchedulerClient
from topo.tcp_ports import FIRST_SERVER_PORT


def job_on_fabric(fabric, name: str, period_ms: float, comm_ms: float, hosts: list[str], *,
                  pattern: str = "ring", link_mbps: float | None = None, fill: float = 0.8,
                  base_port: int = FIRST_SERVER_PORT, jitter_ms: float = 0.0, seed: int = 0,
                  transport: str = "iperf3", comm_pattern=None, model_link_mbps: float | None = None,
                  ) -> jobmodel.JobSpec:
    """A :class:`~apps.jobmodel.JobSpec` whose workers are fabric hosts (IPs and namespace PIDs). With
    ``comm_pattern`` (a ``phases.JobPattern`` timed at ``model_link_mbps``), a pattern job: its phases at
    their starts, each ``fill`` of its link time at the fabric's rate (``jobmodel.pattern_phases``)."""
    workers = tuple(jobmodel.Worker(h, fabric.ip(h), fabric.host(h).pid) for h in hosts)
    rate = link_mbps or min(fabric.params.host_link_mbps, fabric.params.fabric_link_mbps)
    phases = ()
    if comm_pattern is not None:
        comm_ms, phases = jobmodel.pattern_phases(comm_pattern, model_link_mbps)
    return jobmodel.JobSpec(name, float(period_ms), float(comm_ms), workers, pattern, rate, fill,
                            base_port, jitter_ms, seed, transport, phases)


def job_request(wiring, spec: jobmodel.JobSpec, grid: tuple[float, float] | None = None,
                links: list[str] | None = None, busy_ms: list[tuple[float, float]] | None = None) -> dict:
    """The ``POST /shiftbed/jobs`` body: each data flow gated at its sender's leaf.

    ``grid``: the ``(period_ms, comm_ms)`` the scheduler is told, on its quantum
    grid (default: the job's own). The job itself keeps its true timing: the
    scheduler only knows it to the quantum. ``links``: the directed links the
    job's flows cross, so that the scheduler keeps apart only jobs that meet. ``busy_ms``: a pattern
    job's busy arcs from its iteration's origin (the scheduler gives it one window per arc)."""
    from topo.wiring import leaf_dpid

    flows = [{"dpid": leaf_dpid(wiring.host(f["src_host"]).leaf), "src_ip": f["src_ip"],
              "dst_ip": f["dst_ip"], "tcp_src": f["tcp_src"], "tcp_dst": f["tcp_dst"]}
             for f in jobmodel.data_flows(spec)]
    period_ms, comm_ms = grid or (spec.period_ms, spec.comm_ms)
    doc = {"name": spec.name, "period_ms": period_ms, "comm_ms": comm_ms,
           "workers": [w.name for w in spec.workers], "flows": flows}
    if links is not None:
        doc["links"] = list(links)
    if busy_ms is not None:
        doc["busy_ms"] = [list(arc) for arc in busy_ms]
    return doc


def register_jobs(rest_url: str, wiring, specs, grid: dict[str, tuple[float, float]] | None = None,
                  links: dict[str, list[str]] | None = None,
                  busy: dict[str, list[tuple[float, float]]] | None = None) -> dict:
    """Register every job (replacing one of the same name); returns the schedule.

    ``grid[name]``: that job's ``(period_ms, comm_ms)`` on the scheduler's grid; ``links[name]``: the
    directed links its flows cross; ``busy[name]``: a pattern job's busy arcs (:func:`job_request`)."""
    client, doc = SchedulerClient(rest_url), {}
    for spec in specs:
        doc = client.replace_job(job_request(wiring, spec, (grid or {}).get(spec.name),
                                             (links or {}).get(spec.name), (busy or {}).get(spec.name)))
    return doc.get("schedule", {})


def start_drivers(specs, run_dir: str, rest_url: str | None = None, *, plans: dict | None = None,
                  iterations: int | None = None, until_s: float | None = None,
                  launch_lead_ms: dict[str, float] | None = None, burst_ms: dict[str, float] | None = None,
                  launch_overhead_ms: dict[str, float] | None = None, fabric=None) -> dict:
    """One driver process per job (plan from ``rest_url`` or ``plans[name]``); CSV at ``<run_dir>/<job>.csv``.

    ``launch_lead_ms[name]``: how early that job launches a burst before its
    window or offset (0 if absent); ``burst_ms[name]``: its burst's length alone,
    so that a burst ready late still launches into its window while it fits
    (``apps.dltjob.late_launch_ms``); ``launch_overhead_ms[name]``: its bursts'
    usual launch overhead alone, which the job takes the excess over off its next
    computation (``apps.dltjob.JobDriver.compute_s``; absent: nothing is taken off).
    With ``fabric``, each driver's PID is recorded in the run record.
    """
    os.makedirs(run_dir, exist_ok=True)
    drivers = {}
    for spec in specs:
        cfg = dltjob.driver_config(
            spec, os.path.join(run_dir, f"{spec.name}.csv"), run_dir,
            controller_url=None if plans else rest_url, plan=plans[spec.name] if plans else None,
            iterations=iterations, until_s=until_s, launch_lead_ms=(launch_lead_ms or {}).get(spec.name, 0.0),
            burst_ms=(burst_ms or {}).get(spec.name),
            launch_overhead_ms=(launch_overhead_ms or {}).get(spec.name))
        err = open(os.path.join(run_dir, f"{spec.name}.driver.err"), "wb")
        proc = dltjob.start_driver(cfg, os.path.join(run_dir, f"{spec.name}.driver.json"), stderr=err)
        err.close()
        if fabric is not None:
            fabric.track(proc.pid, f"dltjob:{spec.name}")
        drivers[spec.name] = proc
    return drivers


def wait_drivers(drivers: dict, timeout_s: float = 120.0) -> dict:
    """Wait for every driver to exit (stop the rest after ``timeout_s``); returns exit codes."""
    deadline = time.monotonic() + timeout_s
    codes = {}
    for name, proc in drivers.items():
        try:
            codes[name] = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except Exception:
            codes[name] = dltjob.stop_driver(proc)
    return codes




def calibrate(specs, run_dir: str, *, iterations: int = 8, fabric=None, start_in_s: float = 1.0) -> dict:
    """Each job *alone* on the fabric, one after the other: its solo figures (ms).

    Returns per job: ``iteration_ms`` / ``comm_ms`` (mean, iteration 0 left out as
    warm-up), ``*_sd_ms``, the samples, and ``overhead_ms`` = solo comm phase minus
    the data time at link rate, i.e. what iperf3 start-up and TCP cost per burst.
    """
    import pandas as pd

    out = {}
    for spec in specs:
        job_dir = os.path.join(run_dir, f"solo-{spec.name}")
        plan = jobmodel.JobPlan("none", time.time() + start_in_s, 0.0, spec.period_ms, spec.comm_ms)
        codes = wait_drivers(start_drivers([spec], job_dir, plans={spec.name: plan}, iterations=iterations,
                                           fabric=fabric), timeout_s=60 + iterations * spec.period_ms / 1000 * 3)
        end_leftover_servers(job_dir)
        if codes[spec.name] != 0:
            raise RuntimeError(f"solo run of {spec.name} failed: see {job_dir}/{spec.name}.driver.err")
        it = iteration_table(pd.read_csv(os.path.join(job_dir, f"{spec.name}.csv"))).iloc[1:]
        data_ms = max(t.nbytes for phase in jobmodel.collective(spec) for t in phase) * 8 / (spec.link_mbps * 1e3)
        out[spec.name] = {
            "iteration_ms": float(it["iteration_ms"].mean()), "iteration_sd_ms": float(it["iteration_ms"].std()),
            "comm_ms": float(it["comm_ms"].mean()), "comm_sd_ms": float(it["comm_ms"].std()),
            "overhead_ms": float(it["comm_ms"].mean() - data_ms * len(jobmodel.collective(spec))),
            "iteration_samples_ms": it["iteration_ms"].to_numpy(), "comm_samples_ms": it["comm_ms"].to_numpy()}
    return out


def end_leftover_servers(run_dir: str) -> int:
    """End iperf3 servers whose pid files a killed driver left in ``run_dir``; returns how many."""
    ended = 0
    for path in glob.glob(os.path.join(run_dir, "iperf3-*.pid")):
        try:
            pid = int(open(path).read().strip().strip("\x00") or 0)
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "iperf3":
                    kill_pid(pid)
                    ended += 1
        except (ValueError, FileNotFoundError, ProcessLookupError):
            pass
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return ended
