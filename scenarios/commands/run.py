"""``shiftbed run SCENARIO``: full emulation of one scenario, one or more policies.

Thin adapter: validates everything first (exit 2 on bad input, nothing
built), then hands over to :class:`scenarios.experiment.runner.Experiment`. SIGTERM
is turned into the same path as Ctrl-C: the jobs stop, every measurement so
far is kept in a results folder marked incomplete, the fabric is torn down,
and the exit status is 130. A run that measured but lost fidelity exits 3, one that
measured with fidelity but has no prediction for some policy 4 (``scenarios/exitcodes.py``).
"""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from controller.theory.policies import POLICIES, UnknownPolicy, get_policy
from scenarios.errors import EnvironmentProblem, InputError
from scenarios.exitcodes import FIDELITY_LOST, INTERRUPTED, PREDICTION_MISSING, run_exit_code
from scenarios.results import PREDICTION_LOG
from scenarios.spec import MAX_DURATION_S
from scenarios.summary_record import JobSummary, SummaryRecord

if TYPE_CHECKING:
    from scenarios.analysis.verdict import PolicyChange

DEFAULT_DURATION_S = 20.0


def add_arguments(parser):
    parser.add_argument("scenario", help="scenario YAML file")
    parser.add_argument("--policy", help="comma-separated policies (default: the scenario's, else all: "
                        + ",".join(POLICIES) + ")")
    parser.add_argument("--duration", type=str, default=None,
                        help=f"seconds each policy runs (default: the scenario's, else {DEFAULT_DURATION_S:g})")
    parser.add_argument("--target-se-pct", metavar="P",
                        help="stop each policy once every job's mean iteration time has a standard error of at "
                             "most P %% of it (at least 20 iterations a job); --duration is then the ceiling")
    parser.add_argument("--out", default="results", help="results root (default: results/)")
    parser.add_argument("--seed", type=int, default=0, help="seed for `random` offsets (default 0)")
    parser.add_argument("--datapath", choices=["kernel", "user"], help="OVS datapath (default: automatic)")
    parser.add_argument("--force", action="store_true",
                        help="run even if the fabric is larger than this machine can emulate faithfully")
    parser.add_argument("--time-scale", help="run every time K times longer and every link K times slower "
                        "(K >= 1; default: the scenario's time_scale, else 1); figures stay in the scenario's units")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--reuse-calibration", metavar="DIR",
                        help="take each job's calibration from the earlier run in the results folder DIR instead of "
                             "measuring it (the same jobs on the same fabric; refused if anything differs)")
    from scenarios import policyfiles

    policyfiles.add_argument(parser)


def parse_policies(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """``"none,gate"`` → ``("none", "gate")``; unknown names are an InputError naming them."""
    if text is None:
        return default
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise InputError("--policy: give at least one policy")
    for name in names:
        try:
            get_policy(name)
        except UnknownPolicy as exc:
            raise InputError(f"--policy: {exc}") from None
    if len(set(names)) != len(names):
        raise InputError(f"--policy: a policy is named twice in {text!r}")
    return tuple(names)


def _number(text: str, option: str, what: str) -> float:
    """``text`` as a float; InputError ``<option>: must be <what>, got ...`` if it is not one."""
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{option}: must be {what}, got {text!r}") from None


def parse_duration(text: str | None, default: float) -> float:
    if text is None:
        return default
    value = _number(text, "--duration", "a number of seconds")
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"--duration: must be a positive number of seconds, got {text!r}")
    if value > MAX_DURATION_S:
        raise InputError(f"--duration: at most {MAX_DURATION_S:g} s, got {text!r}")
    return value


def parse_target_se_pct(text: str | None) -> float | None:
    """``--target-se-pct``: a percentage above 0 and below 100 (None when not given)."""
    if text is None:
        return None
    value = _number(text, "--target-se-pct", "a percentage")
    if not 0 < value < 100:
        raise InputError(f"--target-se-pct: must be above 0 and below 100, got {text!r}")
    return value


def parse_time_scale(text: str | None, scenario):
    """``scenario`` at ``--time-scale`` (its own ``time_scale`` when not given); InputError if not a number >= 1."""
    from scenarios.spec import with_time_scale

    if text is None:
        return scenario
    return with_time_scale(scenario, _number(text, "--time-scale", "a number >= 1"))


def check_out_root(text: str) -> Path:
    """``--out`` must be a directory we can write in, or one we can create."""
    out = Path(text)
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise InputError(f"--out: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--out: cannot write in {existing}")
    return out


def emulation_load_mbps(scenario) -> float:
    """Peak traffic the fabric must forward: every job bursting at once, its flows sharing the
    links max-min fairly (Mbit/s; ``sharedlink.peak_load_mbps``)."""
    from scenarios.sharedlink import fabric_params, peak_load_mbps
    from topo.wiring import fabric_wiring

    return peak_load_mbps(scenario, fabric_wiring(fabric_params(scenario)))


def require_capturable(scenario, path: str) -> None:
    """Every job's bursts must cross the fabric, where the run captures them (``runlinks.run_links``)."""
    from scenarios.runlinks import run_links
    from scenarios.sharedlink import fabric_params
    from topo.wiring import fabric_wiring

    try:
        run_links(scenario, fabric_wiring(fabric_params(scenario)))
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None


# Measured here (docs/fabric.md): the userspace datapath keeps >= 90 % fidelity
# up to about this many Mbit/s of concurrent traffic on 2 cores with MTU 9000.
MAX_FAITHFUL_MBPS = 400.0


def require_emulated(scenario, path: str, policies: tuple[str, ...]) -> None:
    """InputError (before anything is built) for what only the model has: a policy the fabric cannot
    run, re-alignment (``realign_s``; the job drivers do not re-shift), or a policy that cannot
    schedule the scenario's jobs (``runner.policy_schedules``)."""
    from scenarios.experiment.runner import policy_schedules

    model_only = [p for p in policies if not get_policy(p).emulated]
    if model_only:
        raise InputError(f"--policy: {', '.join(model_only)}: a model only (shiftbed plan and sweep predict it; "
                         "the fabric cannot run it)")
    if scenario.knobs.realign_s is not None:
        raise InputError(f"{path}: realign_s: re-alignment is predicted by plan and sweep; the run does not "
                         "re-shift its jobs (remove realign_s to run)")
    policy_schedules(scenario, policies)


def require_runnable_here(scenario, path: str, policies: tuple[str, ...], force: bool = False) -> None:
    """What ``run`` checks of a scenario beyond its file, before anything is built (InputError naming
    ``path``): every policy emulated, every burst captured, a load this machine forwards faithfully
    (unless ``force``)."""
    from scenarios.timescale import on_wire

    require_emulated(scenario, path, policies)
    require_capturable(scenario, path)
    load = emulation_load_mbps(on_wire(scenario))  # as the fabric runs it: K times slower
    if load > MAX_FAITHFUL_MBPS and not force:
        raise InputError(f"{path}: fabric: the jobs would push ~{load:.0f} Mbit/s through the fabric, "
                         f"more than this machine forwards faithfully (~{MAX_FAITHFUL_MBPS:.0f}); lower the link "
                         "rates, raise --time-scale or pass --force")


def burst_transport_here(scenario, scenario_text: str, version: tuple[int, int] | None = None):
    """The scenario as this machine can run it, and its text as the results folder keeps it.

    An iperf3 from 3.16 on ends each test at its next report tick (``apps.iperf``), so a fresh
    test per burst cannot keep a job's time: a scenario that leaves the transport to the default
    runs over standing connections, said in one line and written into the kept ``scenario.yaml``
    (so ``report --repredict`` models what ran); one that asks for ``transport: iperf3`` is refused.
    """
    from apps import iperf

    version = version or iperf.installed_version()
    if scenario.transport != "iperf3" or version is None or version < iperf.ENDS_AT_REPORT_TICK_FROM:
        return scenario, scenario_text
    tick = (f"this machine's iperf3 {version[0]}.{version[1]} ends each test at its next report tick "
            "(~1 s a burst)")
    if scenario.transport_given:
        raise InputError(f"{scenario.path}: transport: iperf3: {tick}, so no burst could keep its time; "
                         "use transport: persistent (standing connections)")
    print(f"shiftbed run: {tick}: the jobs' flows use standing connections (transport: persistent)",
          file=sys.stderr)
    kept = scenario_text.rstrip("\n") + (f"\n# shiftbed run: {tick}, so the default transport was\n"
                                         "transport: persistent\n")
    return replace(scenario, transport="persistent"), kept


def checked_inputs(args):
    """The scenario as asked for (in its own units, at its time scale), its policies and seconds per
    policy; InputError (exit 2) on anything wrong, before anything is built."""
    from scenarios import policyfiles, spec

    policyfiles.load(args.policy_file)
    scenario = parse_time_scale(getattr(args, "time_scale", None), spec.load(args.scenario))
    scenario.require_runnable()
    policies = parse_policies(args.policy, scenario.policies)
    duration_s = parse_duration(args.duration, scenario.duration_s or DEFAULT_DURATION_S)
    parse_target_se_pct(getattr(args, "target_se_pct", None))
    check_out_root(args.out)
    require_runnable_here(scenario, args.scenario, policies, args.force)
    return scenario, policies, duration_s


def run(args, display=None, solo_cache=None) -> int:
    """``display``: the demo's, shared by its runs; else the run shows its own (``display.RunDisplay``).
    ``solo_cache``: a batch's calibrations to reuse by job shape (``experiment/reuse.py``)."""
    from scenarios.timescale import on_wire

    scenario, policies, duration_s = checked_inputs(args)
    if os.geteuid() != 0:
        raise EnvironmentProblem("building a fabric needs root: run `sudo shiftbed run ...`")
    scenario, scenario_text = burst_transport_here(scenario, Path(args.scenario).read_text())
    wire, wire_duration_s = on_wire(scenario), duration_s * scenario.time_scale  # what the fabric runs
    reuse_calibration = getattr(args, "reuse_calibration", None)
    if reuse_calibration is not None:
        from scenarios.experiment.reuse import check_reusable

        check_reusable(reuse_calibration, wire, args.seed)
    check_free_space(args.out, wire, len(policies), wire_duration_s)
    preflight()

    from controller.process import ControllerError
    from controller.scheduler_client import SchedulerUnreachable
    from scenarios.experiment.drive import RunAborted
    from scenarios.experiment.runner import Experiment, RunOptions
    from topo.fabric import FabricError
    from topo.runrecord import FabricBusy

    options = RunOptions(policies=policies, duration_s=wire_duration_s, out_root=Path(args.out), seed=args.seed,
                         datapath=args.datapath, target_se_pct=parse_target_se_pct(getattr(args, "target_se_pct", None)),
                         reuse_calibration=Path(reuse_calibration) if reuse_calibration is not None else None)
    own_display = display is None
    if own_display:
        display = run_display([(scenario, policies)], duration_s)
    experiment = Experiment(wire, scenario_text, options, display=display, solo_cache=solo_cache)
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        with display.showing():
            results_dir = experiment.run()
    except KeyboardInterrupt:
        print(f"shiftbed run: interrupted; partial results kept in {experiment.writer.final_dir}", file=sys.stderr)
        return INTERRUPTED
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        where = experiment.writer.final_dir if experiment.writer else args.out
        print(f"shiftbed run: no space left on the disk of {args.out} ({exc.filename or exc.strerror}); "
              f"what was measured is kept in {where}", file=sys.stderr)
        return 1
    except (RunAborted, FabricError, FabricBusy, ControllerError, SchedulerUnreachable) as exc:  # kept, cause named
        where = experiment.writer.final_dir if experiment.writer else None
        print(f"shiftbed run: {exc}" + (f"; partial results kept in {where}" if where else ""), file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if own_display:
        display.finish()
    summary, changes = _read_back(results_dir)
    if args.json:
        print(json.dumps(_json_view(summary, results_dir, changes)))
        print(f"report: {results_dir / 'report.md'}", file=sys.stderr)
    else:
        _print_table(summary, results_dir, changes)
    for gap in summary.gaps:  # the other policies ran; say what is missing
        print(f"shiftbed run: policy {gap.policy} stopped early: {gap.message}", file=sys.stderr)
    code = run_exit_code(summary)
    if not summary.complete and not summary.gaps:
        print(f"shiftbed run: incomplete: {summary.incomplete_reason}", file=sys.stderr)
    if code == FIDELITY_LOST:
        print(f"shiftbed run: fidelity lost (exit {FIDELITY_LOST}); every figure is kept in {results_dir}",
              file=sys.stderr)
    for policy, why in summary.predictions_missing.items():
        print(f"shiftbed run: no prediction for {policy} ({why}); its measurement is kept; the model's traceback "
              f"is in {results_dir / PREDICTION_LOG}", file=sys.stderr)
    if code == PREDICTION_MISSING:
        print(f"shiftbed run: results kept, prediction missing (exit {PREDICTION_MISSING}); every figure is kept in "
              f"{results_dir}", file=sys.stderr)
    return code


def stop_lines(summary: SummaryRecord) -> str:
    """What stopped each policy of a run with a target standard error (empty without one)."""
    said = [f"{policy} {entry.stopped.phrase()}" for policy, entry in summary.policies.items() if entry.stopped]
    return "stopped: " + "; ".join(said) if said else ""


def run_display(runs, duration_s: float):
    """The display of one or more runs (``runs``: scenario and its policies, in order; ``duration_s``
    in the scenarios' units), its estimate made from them as the fabric runs them
    (``estimate.run_stages``, ``timescale.on_wire``), on standard error."""
    from scenarios.experiment.display import RunDisplay
    from scenarios.experiment.estimate import Timeline, run_stages
    from scenarios.experiment.progressview import estimate_line
    from scenarios.timescale import on_wire

    stages = [stage for scenario, policies in runs
              for stage in run_stages(scenario.name, {job.name: job.period_ms for job in on_wire(scenario).jobs},
                                      policies, duration_s * scenario.time_scale)]
    timeline = Timeline(stages)
    wire_s = max(duration_s * scenario.time_scale for scenario, _ in runs)
    intro = estimate_line([scenario.name for scenario, _ in runs], sum(len(p) for _, p in runs), wire_s,
                          timeline.estimate_s)
    return RunDisplay(sys.stderr, timeline, intro)


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


def _raise_interrupt(signum, frame):
    """SIGTERM and SIGHUP (a dropped ssh session) take Ctrl-C's path: teardown, partial results kept."""
    if signum == signal.SIGHUP:
        _detach_from_terminal()
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _detach_from_terminal() -> None:
    """After a hang-up the terminal is gone and writing to it fails: send stdout and stderr to
    /dev/null, so teardown's messages cannot stop it."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        if os.isatty(fd):
            os.dup2(devnull, fd)
    os.close(devnull)


def _read_back(results_dir: Path) -> tuple[SummaryRecord, dict[str, PolicyChange]]:
    """The folder's summary, and each policy's change against ``none`` as every reader of it has it."""
    from scenarios.analysis.verdict import folder_changes
    from scenarios.results import load_results

    results = load_results(results_dir)
    return results.summary, folder_changes(results)


def results_json(results_dir: Path) -> dict:
    """``--json``'s one object for a finished results folder (``shiftbed demo --json`` gives one per scenario)."""
    summary, changes = _read_back(results_dir)
    return _json_view(summary, results_dir, changes)


def _json_view(summary: SummaryRecord, results_dir: Path, changes: dict[str, PolicyChange]) -> dict:
    """``--json``'s one object: the summary's verdicts and numbers, each policy's change with its 95 %
    interval and verdict (``verdict.PolicyChange.to_json``), "In short"'s phrase on them, and where the
    folder is."""
    from scenarios.analysis.verdict import headline

    whole = summary.to_dict()
    policies = {p: {**entry, **changes[p].to_json()} if p in changes else entry
                for p, entry in whole["policies"].items()}
    return {"results_dir": str(results_dir), "time_scale": summary.time_scale,
            "fidelity_ok": whole["fidelity_ok"], "complete": whole["complete"],
            "crosschecks": whole["crosschecks"], "policies": policies, "policy_verdict": headline(changes),
            "gaps": whole["gaps"]}


TABLE_NOTE_CHARS = 100  # the verdict's line under the table, wrapped


def _state_note(job: JobSummary) -> str:
    """A free-running job's two predicted states and how much of the run it spent apart."""
    if job.apart_share is None:
        return ""
    return (f"  together {job.predicted_together_ms:.0f} / apart {job.predicted_apart_ms:.0f} ms, "
            f"{job.apart_share:.0%} apart")


def _print_table(summary: SummaryRecord, results_dir: Path, changes: dict[str, PolicyChange]) -> None:
    """One row per policy and job, the policy's change against ``none`` with its 95 % interval and verdict
    on each of its rows; then "In short"'s phrase on the policies."""
    from scenarios.analysis.verdict import headline, verdict_word

    if summary.time_scale != 1:
        print(f"time scale K = {summary.time_scale:g}: the fabric ran {summary.time_scale:g} times slower; "
              "every figure below is in the scenario's units")
    print(f"{'policy':<8} {'job':<10} {'iters':>5} {'measured ms ± se':>17} {'predicted ms':>13} {'error':>7} "
          f"{'vs none':>8} {'95 % interval':>15} {'verdict':<11}")
    for policy, entry in summary.policies.items():
        change = changes[policy]
        pct, said = change.change_pct, f"{change.bounds_text():>15} {verdict_word(change):<11}"
        for job, j in entry.jobs.items():
            se = j.iteration_se_ms
            measured = f"{j.mean_iteration_ms:.1f}" + (f" ±{se:4.1f}" if se is not None else " " * 6)
            predicted = (f"{j.predicted_iteration_ms:>13.1f} {j.error_pct:>+6.1f}%" if j.predicted_iteration_ms
                         is not None and j.error_pct is not None else f"{'unavailable':>13} {'-':>7}")
            line = (f"{policy:<8} {job:<10} {j.iterations:>5} {measured:>17} {predicted} "
                    + (f"{pct:>+7.1f}%" if pct is not None else " " * 8) + f" {said}"
                    + ("  knife edge (model {:.0f}-{:.0f} ms)".format(*j.predicted_range_ms)
                       if j.knife_edge else "") + _state_note(j))
            print(line.rstrip())
    # wrapped: in a log (the demo's --json sends the tables to stderr) every line stays short
    print(textwrap.fill(f"policies: {headline(changes)}", width=TABLE_NOTE_CHARS, subsequent_indent="  "))
    if stop_lines(summary):
        print(textwrap.fill(stop_lines(summary), width=TABLE_NOTE_CHARS, subsequent_indent="  "))
    if not summary.fidelity_ok:
        print(f"FIDELITY LOST: {summary.fidelity.advice}")
    print(f"report: {results_dir / 'report.md'}")
