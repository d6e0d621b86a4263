"""One emulation run: scenario → fabric → calibration → each policy → results folder.

The steps, in order (``session.run_session``, which ``run``, ``demo`` and ``batch`` call, runs an
:class:`Experiment`, which only sequences them; each step's module is named):

1. the theory plans the scenario (schedule, pair facts);
2. a fabric comes up with the fabric app and the window scheduler; every
   flow is pinned to the spine its route takes (the job's ``pin_spine``, else
   the ECMP hash; ``scenarios/routes.py``), so the jobs meet on known links,
   and the ports where they meet are captured (``scenarios/runlinks.py``);
3. the jobs are registered with the scheduler (its REST API) with the links
   they cross, and it computes the schedule with the same theory module;
4. calibration (``calibration.py``): each job alone, a few iterations — its
   solo iteration time, its burst's start-up overhead and data time, the
   realised rate of its bursts on the wire (fidelity);
5. each policy in turn: the scheduler sets the policy and a common epoch, the
   job drivers run for the duration (``drive.py``; gate: the scheduler opens
   and closes each job's windows at its senders' leaves), tcpdump captures
   every port where jobs meet, and the measurement is recorded (``record.py``);
6. the fluid model, fed with the measured solo figures and the offsets the
   scheduler actually used, predicts every job's mean iteration time
   (``prediction.py``, ``summary.py``), and fidelity is judged (``fidelity.py``);
7. summary, cross-checks and report into the results folder (atomic: a
   temporary folder renamed at the end, also when interrupted).
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from controller.gate import FLOOR_BURST_MS
from controller.limits import search_nodes
from controller.scheduler_client import SchedulerClient
from controller.theory.policies import get_policy, policy_schedule
from controller.theory.schedule import to_quanta
from scenarios.errors import InputError
from scenarios.experiment.calibration import Calibration
from scenarios.experiment.drive import (
    MEASURE_ATTEMPTS,
    START_IN_S,
    MeasureLog,
    Measurer,
    WorkerFault,
)
from scenarios.experiment.environment import environment_record
from scenarios.experiment.phaserecord import PhaseRecord
from scenarios.experiment.prediction import MeasuredRun, late_launch_bursts_ms
from scenarios.experiment.progress import fabric_line, plan_line, policy_line, stages
from scenarios.experiment.record import PolicyRecord, write_port_stats
from scenarios.experiment.reuse import (
    FolderCalibrations,
    ScenarioCalibrations,
    shape_key,
    write_calibration_record,
)
from scenarios.experiment.stopping import PolicyStop, TargetSE, read_rows
from scenarios.experiment.summary import build_summary, summary_in_scenario_units
from scenarios.results import PATTERN_PLAN, PHASES_SUMMARY, PREDICTION_LOG, ResultsWriter
from scenarios.routes import link_names
from scenarios.runlinks import RunLinks, run_links
from scenarios.schedule_record import schedule_record
from scenarios.sharedlink import fabric_params, planned_solo_mbps
from scenarios.summary_record import Gap, SummaryRecord
from scenarios.timescale import in_scenario_units
from topo import tcp_ports

log = logging.getLogger(__name__)

GATE_FLOOR_SHARE = 0.02  # outside its windows a gated job keeps this share of the link (FINs pass)


def job_dscp(index: int) -> int:
    """The DSCP (and so the fair-share class on every link) of the scenario's job number ``index``."""
    from topo.leafspine import FAIR_CLASSES

    return 1 + index % FAIR_CLASSES


@dataclass(frozen=True)
class RunOptions:
    """What the run was asked for (``session.SessionOptions`` as the experiment takes them)."""

    policies: tuple[str, ...]
    duration_s: float
    out_root: Path
    seed: int = 0
    fill: float = 0.8  # share of comm_ms a solo burst's data takes (apps/dltjob.py)
    datapath: str | None = None
    target_se_pct: float | None = None  # stop each policy once every job's mean is known this well (stopping.py)
    reuse_calibration: Path | None = None  # an earlier run's folder whose calibrations this run takes (reuse.py)


def run_schedule(scenario, policy: str = "none"):
    """The schedule the run predicts ``policy`` with: that policy's (``policies.policy_schedule``),
    computed as the controller computes it, with the same node budget
    (``controller.limits.search_nodes``) and the same pair weights (the jobs that meet on the
    fabric, ``routes.meeting_weights``), so that on an instance too big for the exact search both
    fall back to the same heuristic shifts. ValueError where the policy cannot schedule the jobs."""
    from scenarios.routes import meeting_weights
    from topo.wiring import fabric_wiring

    timings = scenario.timings()
    periods = [to_quanta(t.period_ms, scenario.quantum_ms) for t in timings]  # as SchedulerCore counts them
    weights = meeting_weights(scenario, fabric_wiring(fabric_params(scenario)))
    if scenario.pattern_jobs:  # on the jobs' busy quanta, as the controller's (patternwindows), none/shift/gate
        from controller.scheduler import PATTERN_POLICIES
        from controller.theory.patternwindows import pattern_set_schedule

        if policy not in PATTERN_POLICIES:
            raise ValueError(f"{policy} does not run pattern jobs; use {', '.join(PATTERN_POLICIES)}")
        patterns = scenario.busy_patterns()
        return pattern_set_schedule([t.name for t in timings], patterns, scenario.quantum_ms, weights,
                                    search_nodes([p.period_q for p in patterns]))
    return policy_schedule(get_policy(policy), timings, scenario.quantum_ms, scenario.knobs,
                           max_nodes=search_nodes(periods), pair_weights=weights)


def gate_floor_options(link_mbps: float, time_scale: float) -> dict:
    """The floor a gated job keeps outside its windows on a link of ``link_mbps`` (the wire's):
    :data:`GATE_FLOOR_SHARE` of it, its meter's bucket :data:`FLOOR_BURST_MS` times the time scale
    long, so the bucket holds the same bytes at any K (less than one jumbo segment at K = 4 else)."""
    return {"mode": "floor", "floor_kbps": int(GATE_FLOOR_SHARE * link_mbps * 1000),
            "floor_burst_ms": FLOOR_BURST_MS * time_scale}


def guard_option_ms(scenario, policy: str) -> float:
    """The ``guard_ms`` the run asks the controller for: the scenario's guard band where the policy's
    schedule lengthens the bursts by it (``guard``), else 0 (every other window is one burst long)."""
    timings = scenario.timings()
    scheduled = get_policy(policy).scheduled_timings(timings, scenario.quantum_ms, scenario.knobs)
    lengthened = any(s.comm_ms > t.comm_ms for s, t in zip(scheduled, timings, strict=True))
    return scenario.knobs.guard_ms if lengthened else 0.0


def policy_schedules(scenario, policies) -> dict:
    """Each policy's schedule (:func:`run_schedule`); InputError naming the policy that cannot
    schedule the scenario's jobs (before anything is built)."""
    out = {}
    for policy in policies:
        try:
            out[policy] = run_schedule(scenario, policy)
        except ValueError as exc:
            raise InputError(f"{scenario.path}: policy {policy}: {str(exc).splitlines()[0]}") from None
    return out


class Experiment:
    """Runs one scenario under the requested policies and writes the results folder.

    ``scenario`` is the one the fabric runs (``timescale.on_wire``: at K = ``time_scale``, every time
    K times longer and every rate K times lower); the folder keeps the scenario file as written, its
    tables as measured on the wire, and a summary in the scenario's units."""

    def __init__(self, scenario, scenario_text: str, options: RunOptions, display=None, solo_cache=None):
        self.scenario = scenario
        self.solo_cache = solo_cache  # a batch's calibrations, reused by job shape (reuse.SoloCache), or None
        self.environment: dict = {}  # environment.json, once the fabric is up
        self.scenario_text = scenario_text
        self.options = options
        self.display = display  # the run's display (``display.RunDisplay``), or None
        self.schedule = run_schedule(scenario)
        self.schedules = policy_schedules(scenario, options.policies)  # each policy's own (align pads, guard widens)
        self.writer: ResultsWriter | None = None  # the results folder, once the run started
        self.links: RunLinks | None = None  # where the jobs meet and are captured, once the fabric is up
        self.queue_ms: float | None = None  # the fabric's queue, once it is up
        self.link_mbps = min(scenario.fabric.host_link_mbps, scenario.fabric.fabric_link_mbps)
        self.expected_solo_mbps: dict[str, float] = {}  # per job: its solo rate on the shared link, as planned
        self.specs: list = []  # the jobs on the fabric (apps.jobmodel.JobSpec), sized by calibration
        self.calibration = Calibration()
        self.record = PolicyRecord(options.duration_s)
        self.phases = PhaseRecord()  # a pattern job's phases, per policy
        self.notes = MeasureLog()
        self.gaps: list[Gap] = []  # policies whose measurement a worker fault cut short

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
        stages.info("%s", plan_line(sc.name, self.schedule, self.options.policies, self.options.duration_s,
                                        self.options.target_se_pct))
        if sc.time_scale != 1:
            stages.info("time scale K = %g: every time on the fabric is %g times the scenario's, every link %g "
                        "times slower; the lines below are on the wire, the summary and report in the scenario's "
                        "units", sc.time_scale, sc.time_scale, sc.time_scale)
        self.writer = ResultsWriter(self.options.out_root, sc.name)
        self._begin("fabric")
        complete, reason = False, None
        try:
            self.writer.write_text("scenario.yaml", self.scenario_text)
            stats_raw = self.writer.partial_dir / "port_stats.raw.csv"
            queue = {"queue_ms": f.queue_ms} if f.queue_ms is not None else {}
            with Fabric(params, FabricController(apps=("controller.scheduler_app",), pins=tuple(pins),
                                         stats_csv=str(stats_raw)), datapath=self.options.datapath,
                        tcp_rto_min_ms=f.tcp_rto_min_ms, **queue) as fabric:
                fabric.record.notes["results_partial_dir"] = str(self.writer.partial_dir)  # for `shiftbed clean`
                fabric.record.save()
                self.links = run_links(sc, fabric.wiring)
                self.queue_ms = fabric.queue_ms
                self.expected_solo_mbps = planned_solo_mbps(sc, fabric.wiring, self.links.home)
                self.environment = {**environment_record(fabric), "time_scale": sc.time_scale}
                self.writer.write_json("environment.json", self.environment)
                stages.info("%s", fabric_line(fabric, self.links))
                try:
                    self._run_on(fabric)
                finally:  # the controller's log goes with the results (the fabric's workdir does not stay)
                    _copy_if_exists(fabric.controller.log_path, self.writer.partial_dir / "controller.log")
            complete = not self.gaps
            if self.gaps:
                reason = "measurement gaps: " + "; ".join(f"policy {g.policy}: {g.message}" for g in self.gaps)
        except BaseException as exc:  # keep what was measured, say why it stopped, re-raise
            reason = _reason(exc)
            raise
        finally:
            self._finish(complete, reason)
        return self.writer.final_dir

    def _pins(self, Pin) -> list:
        """Every flow's TCP traffic through the spine its route takes (``routes.flow_spines``), marked
        with its job's own DSCP so that links share fairly between jobs: one pin per direction for a
        job whose flows all take one spine, else one per direction and flow."""
        from scenarios.routes import flow_spines
        from topo.wiring import fabric_wiring

        spine_of = flow_spines(self.scenario, fabric_wiring(fabric_params(self.scenario)))
        pins = []
        for i, job in enumerate(self.scenario.jobs):
            first, last = tcp_ports.job_port_range(i)
            mine = {port: spine for port, spine in spine_of.items() if first <= port <= last}
            spines = set(mine.values()) or {job.pin_spine or 1}
            ranges = [((first, last), spines.pop())] if len(spines) == 1 else [((p, p), s) for p, s in sorted(mine.items())]
            for ports, spine in ranges:
                pins.append(Pin(spine=spine, src_port_range=ports, dscp=job_dscp(i)))
                pins.append(Pin(spine=spine, dst_port_range=ports, dscp=job_dscp(i)))
        return pins

    def _run_on(self, fabric) -> None:
        from apps import jobrun

        sc = self.scenario
        self.specs = [  # each job keeps its true timing; the scheduler sees it on its grid
            jobrun.job_on_fabric(fabric, job.name, job.period_ms, job.comm_ms,
                                 list(job.workers), pattern=job.pattern, link_mbps=self.link_mbps,
                                 fill=self.options.fill, base_port=tcp_ports.job_first_port(i),
                                 jitter_ms=job.jitter_ms, seed=self.options.seed + i,
                                 transport=sc.transport, comm_pattern=job.comm_pattern,
                                 model_link_mbps=job.link_mbps)
            for i, job in enumerate(sc.jobs)]
        self._classify_host_egress(fabric)
        rest = fabric.controller.rest_url
        grid = {t.name: (t.period_ms, t.comm_ms) for t in sc.timings()}
        controller_schedule = jobrun.register_jobs(rest, fabric.wiring, self.specs, grid,
                                                   links=link_names(sc, fabric.wiring), busy=self._busy_ms())
        log.info("scheduler: feasible=%s hyperperiod=%s ms", controller_schedule.get("feasible"),
                 controller_schedule.get("hyperperiod_ms"))
        measurer = Measurer(fabric, self.links, self.writer.partial_dir / "raw", self.notes, self.display)
        keys = self._shape_keys(fabric)
        self.specs = self.calibration.run(measurer, self.specs, on_job=lambda name: self._begin("calibrate", name),
                                          known=self._known(keys))
        write_calibration_record(self.writer.partial_dir, keys, self.specs, self.calibration)
        self.writer.write_json("schedule.json", in_scenario_units(schedule_record(self.schedule, {
            name: (s["iteration_ms"], s["comm_ms"]) for name, s in self.calibration.solo.items()}), sc.time_scale))
        if sc.pattern_jobs:  # the plan's exact schedule of the busy quanta, each pair's verdict beside the rule's
            from scenarios.planning import pattern_plan

            self.writer.write_json(PATTERN_PLAN, pattern_plan(sc))
        for policy in self.options.policies:
            self._run_policy(measurer, policy)

    def _busy_ms(self) -> dict[str, list[tuple[float, float]]] | None:
        """With pattern jobs, every job's busy arcs on the scenario's grid in ms (``spec.busy_patterns``),
        as the controller is told them; None for a scenario of classic jobs."""
        if not self.scenario.pattern_jobs:
            return None
        q = self.scenario.quantum_ms
        return {job.name: [(a * q, n * q) for a, n in busy.arcs]
                for job, busy in zip(self.scenario.jobs, self.scenario.busy_patterns(), strict=True)}

    def _shape_keys(self, fabric) -> dict[str, str]:
        """Each job's shape (``reuse.shape_key``): everything its solo runs depend on."""
        from scenarios.routes import flow_spines

        spine_of = flow_spines(self.scenario, fabric.wiring)
        keys = {}
        for i, spec in enumerate(self.specs):
            first, last = tcp_ports.job_port_range(i)
            spines = tuple(sorted((port, spine) for port, spine in spine_of.items() if first <= port <= last))
            keys[spec.name] = shape_key(fabric.params, self.environment, spec, self.links.home[spec.name].name,
                                        spines)
        return keys

    def _known(self, keys: dict[str, str]):
        """The calibrations this run may reuse (``reuse.py``): the batch's, or the earlier run's in
        ``--reuse-calibration DIR`` (InputError, before any job runs, where a shape differs); None else."""
        if self.solo_cache is not None:
            return ScenarioCalibrations(self.solo_cache, self.scenario.name, keys)
        if self.options.reuse_calibration is not None:
            return FolderCalibrations(self.options.reuse_calibration, keys)
        return None

    def _classify_host_egress(self, fabric) -> None:
        """Put each job's data into its own fair-share class on its senders' links too."""
        from apps.jobmodel import data_flows

        for i, spec in enumerate(self.specs):
            for flow in data_flows(spec):
                fabric.classify_egress(flow["src_host"], flow["tcp_src"], job_dscp(i))

    # -- each policy -----------------------------------------------------------

    def _run_policy(self, measurer: Measurer, policy: str) -> None:
        self._begin("policy", policy)
        scheduler = SchedulerClient(measurer.fabric.controller.rest_url)
        options = {}
        pol = get_policy(policy)
        enforced = pol.enforces_windows
        if enforced:  # a floor, not a wall: a burst's closing handshake after its window still passes
            options = {**gate_floor_options(self.link_mbps, self.scenario.time_scale),
                       "guard_ms": guard_option_ms(self.scenario, policy)}
        for attempt in range(1, MEASURE_ATTEMPTS + 1):  # a run the host disturbed is kept, and run again
            doc = scheduler.set_policy(policy, start_in_s=START_IN_S, seed=self.options.seed,
                                       quantum_ms=self.scenario.quantum_ms, **options)
            epoch_s = float(doc["epoch_s"])
            run_dir = measurer.work_dir(policy) if attempt == 1 else measurer.work_dir(policy, f"attempt{attempt}")
            stop = self._stop_rule(epoch_s)
            measured = self._drive_policy(measurer, policy, run_dir, epoch_s, enforced, self._ranks(pol), stop)
            if measured is None:
                return
            if not measured.steal.disturbed or attempt == MEASURE_ATTEMPTS:
                break
            measurer.measure_again(policy, attempt, run_dir, measured.steal)
        wiring = measurer.fabric.wiring
        leaf_ips = {leaf: {h.ip for h in wiring.hosts_on_leaf(leaf)} for leaf in range(1, wiring.params.leaves + 1)}
        self.record.record(self.writer, self.links, policy, doc, epoch_s, measured, self.specs, leaf_ips,
                           stop.outcome() if stop is not None else None)
        self.phases.record(self.writer, policy, run_dir, self.specs, measured.captures, self.links, leaf_ips)
        stages.info("%s", policy_line(policy, self.record.measured[policy]))

    def _ranks(self, pol) -> dict[int, int] | None:
        """Under a strict-priority policy, each job's DSCP class and its rank on every link (0 first)."""
        if pol.sharing != "priority":
            return None
        order = pol.priority_order(self.schedules[pol.name])
        return {job_dscp(i): order.index(job.name) for i, job in enumerate(self.scenario.jobs)}

    def _stop_rule(self, epoch_s: float) -> PolicyStop | None:
        """A policy's watch for the target standard error (None: it runs for the duration)."""
        if self.options.target_se_pct is None:
            return None
        return PolicyStop(TargetSE(self.options.target_se_pct), [s.name for s in self.specs], epoch_s,
                          self.options.duration_s)

    def _drive_policy(self, measurer: Measurer, policy, run_dir, epoch_s, enforced, ranks=None, stop=None):
        """One measurement of ``policy`` (a ``drive.Measurement``), or None if a worker fault stopped it.
        ``ranks``: the jobs' classes ranked for strict priority on every link while it runs; ``stop``:
        its watch for the target standard error, polled on the drivers' rows so far."""
        fabric = measurer.fabric
        names = [s.name for s in self.specs]
        stop_when = None if stop is None else (lambda: stop.poll(time.time(), lambda: read_rows(run_dir, names)))
        try:
            if ranks:
                fabric.rank_job_classes(ranks)
            return measurer.drive(self.specs, run_dir, policy, until_s=epoch_s + self.options.duration_s,
                                  launch_lead_ms=self.calibration.launch_lead_ms,
                                  burst_ms=late_launch_bursts_ms(self.schedules[policy], self.calibration.solo),
                                  launch_overhead_ms=self.calibration.launch_overhead_ms, stop_when=stop_when)
        except WorkerFault as fault:  # this policy's measurement stops here; the next policy runs
            kept = self.record.keep_rows(self.writer, policy, run_dir, self.specs)
            self.gaps.append(Gap(policy=policy, job=fault.job, worker=fault.worker, message=str(fault),
                                 iterations_kept=kept))
            log.error("policy %s: %s; its measurement stopped (%d iteration rows kept), going on with the "
                      "next policy", policy, fault, kept)
            return None
        except BaseException:  # interrupted or aborted: keep the iterations measured so far
            self.record.keep_rows(self.writer, policy, run_dir, self.specs)
            raise
        finally:
            if ranks:
                fabric.rank_job_classes(None)
            if enforced and fabric.controller.alive():
                SchedulerClient(fabric.controller.rest_url).stop()

    def _begin(self, kind: str, what: str | None = None) -> None:
        """A stage starts (``estimate.run_stages`` names them): the display's estimate moves on."""
        if self.display is not None:
            self.display.begin((self.scenario.name, kind, what))

    # -- the results folder ----------------------------------------------------

    def _finish(self, complete: bool, reason: str | None) -> None:
        """Summary, tables, report; the folder is renamed whatever happened."""
        self._begin("report")
        self.writer.release_reserve()  # room for them on a disk the run filled
        try:
            write_port_stats(self.writer)
            tracebacks: dict[str, str] = {}
            summary = self.summary(complete, reason, tracebacks)
            self.writer.write_json("summary.json", summary.to_dict())
            self.phases.write(self.writer)
            if self.scenario.pattern_jobs:
                stages.info("pattern jobs: %s holds the plan's exact schedule, %s each phase", PATTERN_PLAN,
                            PHASES_SUMMARY)
            self._keep_model_failures(tracebacks)
            if not (self.writer.partial_dir / "windows.csv").exists():  # no shift/gate policy ran
                self.writer.write_table("windows.csv", pd.DataFrame(columns=["policy", "job", "open_s", "close_s"]))
        except Exception as exc:  # never lose the folder because a summary could not be computed
            log.exception("summary failed")
            reason = reason or f"summary failed: {exc}"
            complete = False
        self.writer.finish(complete, reason)
        try:
            from scenarios.report.draw import draw_report

            draw_report(self.writer.final_dir)
        except Exception:
            log.exception("report failed; redraw with `shiftbed report %s`", self.writer.final_dir)

    def _keep_model_failures(self, tracebacks: dict[str, str]) -> None:
        """The traceback of each policy the model could not predict, in :data:`PREDICTION_LOG` in the
        results folder (``shiftbed run`` says one line per policy, from the summary)."""
        if tracebacks:
            self.writer.write_text(PREDICTION_LOG, "".join(f"== {policy}: prediction failed\n{trace}\n"
                                                           for policy, trace in tracebacks.items()))

    def summary(self, complete: bool, reason: str | None, tracebacks: dict[str, str] | None = None) -> SummaryRecord:
        """The summary record of what the run measured so far (``tracebacks``: see
        ``summary.policy_summaries``)."""
        cal = self.calibration
        run = MeasuredRun(self.schedule, cal.solo, cal.solo_spans, self.record.bursts, cal.launch_lead_ms,
                          self.schedules, self.links.meeting_pairs() if self.links is not None else None,
                          self.scenario.transport)
        on_wire = build_summary(scenario=self.scenario, complete=complete, reason=reason, run=run,
                                record=self.record, notes=self.notes, links=self.links, queue_ms=self.queue_ms,
                                link_mbps=self.link_mbps, expected_solo_mbps=self.expected_solo_mbps,
                                port_stats_csv=self.writer.partial_dir / "port_stats.csv", gaps=self.gaps,
                                tracebacks=tracebacks)
        return summary_in_scenario_units(on_wire, self.scenario.time_scale)


def _copy_if_exists(src, dst) -> None:
    try:
        shutil.copyfile(src, dst)
    except OSError:
        pass


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return f"interrupted ({exc.args[0] if exc.args else 'SIGINT'})"
    return f"{exc.__class__.__name__}: {exc}"
