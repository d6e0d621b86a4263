"""``shiftbed demo``: the README's main job — the paper's point, in theory and on the wire.

Two scenarios, under two minutes each on 2 cores:

- ``classroom``: periods 300 and 600 ms, gcd 300 ≥ 100 + 150 — a shift can
  separate the jobs and the gate holds them apart;
- ``two-jobs-coprime``: periods 401 and 600 ms, gcd 1 — no shift separates
  them, and static shifting does not help (the ~73 % case).

For each it runs the emulation under every policy (``run``: one line per
stage, the theory's verdict first) and prints where the report is. A run that
lost fidelity, or missed a prediction, does not stop the next; the demo then exits
3 (or 4), as ``run`` does (``exitcodes.combined_exit_code``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from scenarios.errors import EnvironmentProblem
from scenarios.exitcodes import combined_exit_code, keeps_going
from scenarios.experiment import session
from scenarios.options import parse_duration, parse_time_scale
from scenarios.shipped import DEMO_SCENARIOS, SCENARIOS_DIR

# Seconds per policy. At 6 s a job with a 600-ms period had ~9 iterations, so one
# 50-ms stall of the machine that cost it a window moved its mean by 10 % (classroom
# gate beta +10.0 %, standard error 9 %; measured 2026-12-01, docs/accuracy.md).
DEMO_DURATION_S = 12.0


def add_arguments(parser):
    parser.add_argument("--out", default="results", help="results root (default: results/)")
    parser.add_argument("--duration", default=str(DEMO_DURATION_S),
                        help=f"seconds per policy (default {DEMO_DURATION_S:g})")
    parser.add_argument("--time-scale", help="run every time K times longer and every link K times slower "
                        "(K >= 1, default 1); figures stay in the scenarios' units")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run_options(scenario, duration_s: float, out: str) -> session.SessionOptions:
    """What the demo asks of a run of ``scenario``: ``shiftbed run PATH --duration D --out OUT``'s
    options (the scenario's policies, the run's defaults)."""
    return session.SessionOptions(policies=scenario.policies, duration_s=duration_s, out_root=Path(out))


def run(args) -> int:
    import json

    from scenarios import spec
    from scenarios.commands.run import run_display
    from scenarios.report.terminal import results_json, say_run_end
    from scenarios.results import REPORT_HTML_FILE

    duration = parse_duration(args.duration, DEMO_DURATION_S)
    if os.geteuid() != 0:
        raise EnvironmentProblem("the demo builds an emulated fabric and needs root: `sudo make demo`")
    reports, runs, codes = {}, {}, []
    time_scale = getattr(args, "time_scale", None)
    scenarios = {name: parse_time_scale(time_scale, spec.load(SCENARIOS_DIR / name))
                 for name in DEMO_SCENARIOS}
    # one display for both runs: its estimate is the whole demo's
    display = run_display([(s, s.policies) for s in scenarios.values()], duration)
    display.introduce()
    for name, scenario in scenarios.items():
        path = SCENARIOS_DIR / name
        print(f"== {scenario.name}: {scenario.description}", file=sys.stderr)
        # with --json, stdout holds the demo's one object: each run's table goes to stderr
        with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
            scenario.require_runnable()  # as `shiftbed run PATH --duration D --out OUT` checks it
            options = run_options(scenario, duration, args.out)
            session.check_scenario(scenario, options)
            result = session.run_session(scenario, path.read_text(), options, display)
            say_run_end(result.results_dir, result.problem, as_json=False)  # the run's table; the JSON is the demo's
        codes.append(result.status)
        if not keeps_going(result.status):  # a fault or an interrupt: the next scenario would not fare better
            return result.status
        reports[scenario.name] = str(result.results_dir / "report.md")
        if args.json:
            runs[scenario.name] = results_json(result.results_dir)
    display.finish()
    if args.json:  # where each report is, and each run's own --json object
        print(json.dumps({"reports": reports, "runs": runs}))
    else:
        for name, report in reports.items():
            print(f"{name}: {report}")
            print(f"{' ' * len(name)}  {Path(report).with_name(REPORT_HTML_FILE)} (the same, to open in a browser)")
    return combined_exit_code(codes)
