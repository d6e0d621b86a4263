"""``shiftbed run SCENARIO``: full emulation of one scenario, one or more policies.

Thin adapter: reads the options into the run's own (``experiment/session.py``'s
``SessionOptions``), validates everything first (exit 2 on bad input, nothing
built), then hands the scenario to ``session.run_session``. SIGTERM
is turned into the same path as Ctrl-C: the jobs stop, every measurement so
far is kept in a results folder marked incomplete, the fabric is torn down,
and the exit status is 130. A run that measured but lost fidelity exits 3, one that
measured with fidelity but has no prediction for some policy 4 (``scenarios/exitcodes.py``).
What it prints at the end is ``scenarios/report/terminal.py``'s.
"""

from __future__ import annotations

import sys
from pathlib import Path

from controller.theory.policies import POLICIES
from scenarios.experiment.session import SessionOptions, check_scenario, require_root, run_session
from scenarios.options import (
    DEFAULT_DURATION_S,
    parse_duration,
    parse_policies,
    parse_target_se_pct,
    parse_time_scale,
)
from scenarios.report.terminal import say_run_end


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
    """The scenario as asked for (in its own units, at its time scale) and the run's options;
    InputError (exit 2) on anything wrong, before anything is built."""
    from scenarios import policyfiles, spec

    policyfiles.load(args.policy_file)
    scenario = parse_time_scale(args.time_scale, spec.load(args.scenario))
    scenario.require_runnable(patterns=True)
    policies = parse_policies(args.policy, scenario.policies)
    duration_s = parse_duration(args.duration, scenario.duration_s or DEFAULT_DURATION_S)
    options = SessionOptions(policies=policies, duration_s=duration_s, out_root=Path(args.out), seed=args.seed,
                             datapath=args.datapath, target_se_pct=parse_target_se_pct(args.target_se_pct),
                             reuse_calibration=None if args.reuse_calibration is None else Path(args.reuse_calibration),
                             force=args.force)
    check_scenario(scenario, options)
    return scenario, options


def run(args) -> int:
    scenario, options = checked_inputs(args)
    require_root("shiftbed run")
    display = run_display([(scenario, options.policies)], options.duration_s)
    result = run_session(scenario, Path(args.scenario).read_text(), options, display)
    if result.problem is None:
        display.finish()
    say_run_end(result.results_dir, result.problem, args.json)
    return result.status


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
