"""What the terminal shows while a run goes: one line per stage, and the live line of a measurement.

Stage lines (the plan's verdict, the fabric up, each job calibrated, each
policy done) go to the :data:`stages` logger, which shows INFO whatever the
verbosity; the detail behind them is logged at INFO and DEBUG by each module
and shown with ``-v`` (``scenarios/cli.py``).
"""

from __future__ import annotations

import logging
import threading
import time

from scenarios.analysis.tables import STALL_MS

stages = logging.getLogger("scenarios.experiment.stages")
stages.setLevel(logging.INFO)


def plan_line(scenario_name: str, schedule, policies: tuple[str, ...], duration_s: float) -> str:
    """The theory's verdict on the scenario, and what the run will measure."""
    verdict = "feasible" if schedule.feasible else "infeasible"
    return (f"{scenario_name}: theory says {verdict} (hyper-period {schedule.hyperperiod_ms:g} ms); "
            f"{', '.join(policies)} for {duration_s:g} s each")


def fabric_line(fabric, links) -> str:
    """The fabric up: how long it took, its datapath, and the ports captured where the jobs meet."""
    ports = links.ports
    where = (f"shared link {ports[0].name}" if len(ports) == 1
             else f"jobs meet on {len(links.meetings)} links, captured at {', '.join(p.name for p in ports)}")
    return (f"fabric up in {fabric.startup_s:.1f} s ({fabric.datapath} datapath, MTU {fabric.mtu}); "
            f"{where} at {ports[0].mbps:g} Mbit/s")


def calibrated_line(name: str, period_ms: float, solo: dict) -> str:
    """One human line for a calibrated job: its solo iteration against its period, its bursts alone."""
    line = (f"calibrated {name}: {solo['iteration_ms']:.1f} ms per iteration for a {period_ms:g}-ms period; "
            f"bursts of {solo['comm_ms']:.1f} ms ({solo['data_ms']:.1f} ms of data) "
            f"at {solo['sustained_mbps']:.1f} Mbit/s alone")
    if solo.get("stalled_bursts"):
        line += (f"; {solo['stalled_bursts']} of {solo['bursts']} stalled, as on a TCP retransmission timeout "
                 f"({STALL_MS:g} ms or more over the median)")
    return line


def figures_line(name: str, solo: dict) -> str:
    """Every number of a job's solo figures, named (the detail behind :func:`calibrated_line`)."""
    figures = ", ".join(f"{key} {round(value, 2):g}" for key, value in solo.items() if isinstance(value, float))
    return f"solo {name}: {figures}"


def policy_line(policy: str, measured: dict[str, dict]) -> str:
    """A policy measured: each job's mean iteration time (``analysis.job_means``)."""
    means = ", ".join(f"{job} {m['mean_iteration_ms']:.1f}" for job, m in measured.items())
    return f"{policy} done: {means} ms per iteration"


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
