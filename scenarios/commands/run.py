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
import os
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from controller.theory.policies import POLICIES
from scenarios.errors import EnvironmentProblem
from scenarios.exitcodes import FIDELITY_LOST, INTERRUPTED, PREDICTION_MISSING, run_exit_code
from scenarios.interrupts import interrupts_as_keyboard
from scenarios.options import (
    DEFAULT_DURATION_S,
    check_out_root,
    parse_duration,
    parse_policies,
    parse_target_se_pct,
    parse_time_scale,
)
from scenarios.results import PREDICTION_LOG
from scenarios.runnable import burst_transport_here, require_runnable_here
from scenarios.summary_record import JobSummary, SummaryRecord

if TYPE_CHECKING:
    from scenarios.analysis.verdict import PolicyChange


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


def checked_inputs(args):
    """The scenario as asked for (in its own units, at its time scale), its policies and seconds per
    policy; InputError (exit 2) on anything wrong, before anything is built."""
    from scenarios import policyfiles, spec

    policyfiles.load(args.policy_file)
    scenario = parse_time_scale(getattr(args, "time_scale", None), spec.load(args.scenario))
    scenario.require_runnable(patterns=True)
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
    with interrupts_as_keyboard():
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
