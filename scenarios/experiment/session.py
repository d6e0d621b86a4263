"""One scenario on the fabric, run the one way every command runs it.

``run``, ``demo`` and ``batch`` (here, and in the child a fleet's worker starts) read their options
into :class:`SessionOptions`, check the scenario (:func:`check_scenario`) and root
(:func:`require_root`), then hand both to :func:`run_session`: it checks what the run needs from
this machine (the iperf3 it has, an earlier calibration to reuse, disk space, Open vSwitch and the
tools, no other fabric: :func:`preflight`), runs :class:`runner.Experiment` with SIGTERM and SIGHUP
taking Ctrl-C's path, and says how it ended: a status (``scenarios/exitcodes.py``) and the results
folder. What is said on the terminal about it is the caller's (``scenarios/report/terminal.py``).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from scenarios.errors import EnvironmentProblem
from scenarios.exitcodes import FAULT, INTERRUPTED, run_exit_code
from scenarios.interrupts import interrupts_as_keyboard
from scenarios.options import check_out_root
from scenarios.runnable import burst_transport_here, require_runnable_here


@dataclass(frozen=True)
class SessionOptions:
    """What a run of one scenario is asked for, in the scenario's units (``shiftbed run``'s options)."""

    policies: tuple[str, ...]
    duration_s: float  # each policy's seconds in the scenario's units (the fabric runs K times longer)
    out_root: Path  # the results root: the run writes out_root/<scenario>/<timestamp>
    seed: int = 0  # for `random` offsets and the jobs' jitter
    datapath: str | None = None  # the OVS datapath (None: automatic)
    target_se_pct: float | None = None  # stop each policy once every job's mean is known this well
    reuse_calibration: Path | None = None  # an earlier run's folder whose calibrations this run takes
    force: bool = False  # run a load larger than this machine forwards faithfully


@dataclass(frozen=True)
class SessionResult:
    """How a run ended: its exit status, its results folder (None if it stopped before making one)
    and, when it stopped before its end, why, in one line (None when it finished)."""

    status: int
    results_dir: Path | None
    problem: str | None = None


def check_scenario(scenario, options: SessionOptions) -> None:
    """What a run checks of a loaded scenario (``spec.load``, at its time scale) and its options before
    anything is built: InputError, one line naming the option or the file and field."""
    check_out_root(str(options.out_root))
    require_runnable_here(scenario, scenario.path, options.policies, options.force)


def require_root(command: str) -> None:
    """Building a fabric needs root: EnvironmentProblem naming ``command`` (``shiftbed run``) with sudo."""
    if os.geteuid() != 0:
        raise EnvironmentProblem(f"building a fabric needs root: run `sudo {command} ...`")


def check_free_space(out: str, scenario, policies: int, duration_s: float) -> None:
    """Refuse, in one line, a run whose results would not fit on the disk of ``--out``."""
    from scenarios.experiment import disk

    link_mbps = min(scenario.fabric.host_link_mbps, scenario.fabric.fabric_link_mbps)
    periods_ms = [job.period_ms for job in scenario.jobs]
    need, free = disk.estimated_bytes(link_mbps, periods_ms, policies, duration_s), disk.free_bytes(out)
    if free < need:
        raise EnvironmentProblem(f"--out: {free / 2**20:.0f} MB free on the disk of {out}, and this run may "
                                 f"write up to {need / 2**20:.0f} MB; free some space, or shorten --duration")


def preflight() -> None:
    """What a run needs before anything (results folder included) is created; EnvironmentProblem if not."""
    import shutil

    from topo.fabric import FabricError, ensure_ovs_running
    from topo.runrecord import FabricBusy, FabricLock

    try:
        ensure_ovs_running()  # starts Open vSwitch if it is installed but not running
    except FabricError as exc:
        raise EnvironmentProblem(str(exc)) from None
    missing = [tool for tool in ("iperf3", "tcpdump", "mnexec") if not shutil.which(tool)]
    if missing:
        raise EnvironmentProblem(f"{', '.join(missing)}: not installed; run `sudo make install`")
    lock = FabricLock()
    try:
        lock.acquire("preflight")
    except FabricBusy as exc:
        raise EnvironmentProblem(str(exc)) from None
    finally:
        lock.release()


def run_session(scenario, scenario_text: str, options: SessionOptions, display, solo_cache=None) -> SessionResult:
    """Run ``scenario`` (checked: :func:`check_scenario`, root too; in its own units, at its time
    scale; ``scenario_text``: its file, as the results folder keeps it) under ``options``.

    ``display``: the run's (``display.RunDisplay``), shown while it runs; its caller finishes it.
    ``solo_cache``: a batch's calibrations to reuse by job shape (``experiment/reuse.py``).
    InputError or EnvironmentProblem before anything is built; after that, every way the run ends
    is a :class:`SessionResult`: finished (the status its summary gives), interrupted (130), or
    stopped by a fault (1), what was measured kept in the folder it names."""
    from controller.process import ControllerError
    from controller.scheduler_client import SchedulerUnreachable
    from scenarios.experiment.drive import RunAborted
    from scenarios.experiment.runner import Experiment, RunOptions
    from scenarios.results import load_results
    from scenarios.timescale import on_wire
    from topo.fabric import FabricError
    from topo.runrecord import FabricBusy

    scenario, scenario_text = burst_transport_here(scenario, scenario_text)
    wire, wire_duration_s = on_wire(scenario), options.duration_s * scenario.time_scale  # what the fabric runs
    if options.reuse_calibration is not None:
        from scenarios.experiment.reuse import check_reusable

        check_reusable(options.reuse_calibration, wire, options.seed)
    check_free_space(str(options.out_root), wire, len(options.policies), wire_duration_s)
    preflight()

    run_options = RunOptions(policies=options.policies, duration_s=wire_duration_s, out_root=options.out_root,
                             seed=options.seed, datapath=options.datapath, target_se_pct=options.target_se_pct,
                             reuse_calibration=options.reuse_calibration)
    experiment = Experiment(wire, scenario_text, run_options, display=display, solo_cache=solo_cache)
    with interrupts_as_keyboard():
        try:
            with display.showing():
                results_dir = experiment.run()
        except KeyboardInterrupt:
            where = experiment.writer.final_dir
            return SessionResult(INTERRUPTED, where, f"interrupted; partial results kept in {where}")
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            where = experiment.writer.final_dir if experiment.writer else None
            return SessionResult(FAULT, where, f"no space left on the disk of {options.out_root} "
                                               f"({exc.filename or exc.strerror}); what was measured is kept in "
                                               f"{where or options.out_root}")
        except (RunAborted, FabricError, FabricBusy, ControllerError, SchedulerUnreachable) as exc:  # kept, cause named
            where = experiment.writer.final_dir if experiment.writer else None
            return SessionResult(FAULT, where, f"{exc}" + (f"; partial results kept in {where}" if where else ""))
    return SessionResult(run_exit_code(load_results(results_dir).summary), results_dir)
