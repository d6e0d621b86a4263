"""``shiftbed batch OUT --scenarios N``: a sample of the sweep's scenarios, each predicted, then run on the fabric.

Thin adapter. Everything is checked first (exit 2, one line, nothing built or
written): the sampling arguments as ``sweep`` reads them, the fabric file,
the policies, and every drawn scenario as ``run`` checks a file. Then the
batch folder is created whole (``scenarios/batch/folder.py``) and each
scenario runs in turn: the model's prediction is written before its first
policy (``batch/predict.py``), then ``run`` runs it in-process, its results
folder inside the scenario's; a run that lost fidelity is run once more, then
kept. ``--resume OUT`` runs what is not done. At the end: ``batch.parquet``,
``report.md`` and ``report.html`` (docs/batch.md). With ``--dask-scheduler``
the scenarios run on a fleet's workers instead (``scenarios/batch/fleet.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys

from apps.jobmodel import TRANSPORTS
from scenarios.batch import fleet
from scenarios.batch.results import write_results
from scenarios.errors import EnvironmentProblem, InputError
from scenarios.exitcodes import FIDELITY_LOST, keeps_going
from scenarios.interrupts import interrupts_as_keyboard
from scenarios.options import MIX_HELP
from scenarios.shipped import DEMO_SCENARIOS

DEFAULTS = {"jobs": "2", "period_ms": "100:1000", "comm_frac": "0.1:0.5", "quantum_ms": "1", "seed": 0,
            "zoo": False, "zoo_link_mbps": None, "mix": None, "fabric": None, "policy": "none,shift,gate,priority",
            "transport": None, "duration": "12", "scenarios": None, "target_se_pct": None, "calibrate_each": False}
ATTEMPTS = 2  # a scenario whose fidelity is lost is run once more, then kept
CALIBRATION_DIR = ".calibration"  # the batch's reusable solo runs, hard-linked, while it runs


def add_arguments(parser) -> None:
    parser.add_argument("out", nargs="?", metavar="OUT", help="the batch's folder (must not exist)")
    parser.add_argument("--resume", metavar="DIR", help="run what a batch in DIR has not done (no other option "
                                                          "but --dask-scheduler)")
    parser.add_argument("--report", metavar="DIR", help="write the table and the report of what a batch in DIR "
                                                          "has done so far, running nothing (no root needed)")
    parser.add_argument("--scenarios", type=int, help="how many scenarios to draw (required)")
    parser.add_argument("--jobs", help="number(s) of jobs per scenario, taking turns, e.g. 2,3 (default 2)")
    parser.add_argument("--period-ms", help="LO:HI, periods uniform over these integers (ms; default 100:1000)")
    parser.add_argument("--comm-frac", help="lo:hi, comm_ms = U(lo, hi) × period_ms (default 0.1:0.5)")
    parser.add_argument("--quantum-ms", help="the schedule's quantum, one value (ms; default 1)")
    parser.add_argument("--seed", type=int, help="the sweep's seed: the same draws as `shiftbed sweep --seed` "
                                                 "(default 0)")
    parser.add_argument("--zoo", action="store_true", default=None, help="draw jobs from the model zoo")
    parser.add_argument("--zoo-link-mbps", type=float, help="link rate the zoo models are timed at (--zoo)")
    parser.add_argument("--mix", type=float, metavar="SHARE", help=MIX_HELP)
    parser.add_argument("--fabric", metavar="FILE", help=f"a scenario file to take the fabric from (default "
                                                         f"scenarios/{DEMO_SCENARIOS[0]}, the demo's)")
    parser.add_argument("--policy", help=f"comma-separated policies, `none` among them (default {DEFAULTS['policy']})")
    parser.add_argument("--transport", choices=TRANSPORTS, help="how the jobs' flows travel (default: as `run` "
                                                                "picks on this machine)")
    parser.add_argument("--duration", help=f"seconds each policy runs (default {DEFAULTS['duration']}; with "
                                           "--target-se-pct, the most it runs)")
    parser.add_argument("--target-se-pct", metavar="P", help="stop each policy once every job's mean iteration "
                        "time has a standard error of at most P %% of it (as `run --target-se-pct`)")
    parser.add_argument("--calibrate-each", action="store_true", default=None,
                        help="calibrate every scenario's jobs anew (default: a job shape measured alone on this "
                             "fabric earlier in the batch is reused, docs/batch.md)")
    fleet.add_argument(parser)


def _given(args) -> list[str]:
    return [f"--{k.replace('_', '-')}" for k in DEFAULTS if getattr(args, k) is not None]


def run(args) -> int:
    from scenarios.batch.folder import BatchFolder
    from scenarios.batch.settings import check_new_out, plan_batch

    if args.report is not None:
        if args.resume is not None or args.out is not None or _given(args) or args.dask_scheduler is not None:
            raise InputError("--report: reads the batch's folder alone; give no other option or OUT")
        return write_results(BatchFolder.open(args.report, "--report"))
    if args.resume is not None:
        if args.out is not None or _given(args):
            extra = args.out or _given(args)[0]
            raise InputError(f"--resume: takes the batch's own settings; give no other option (but "
                             f"--dask-scheduler) or OUT ({extra})")
        folder = BatchFolder.open(args.resume)
        if args.dask_scheduler is not None:
            return fleet.run_fleet(folder, fleet.connect(args.dask_scheduler))
        _require_root()
        return run_batch(folder)
    if args.out is None:
        raise InputError("OUT: give the batch's folder (or --resume DIR)")
    if args.scenarios is None:
        raise InputError("--scenarios: say how many scenarios to draw")
    values = {k: (DEFAULTS[k] if getattr(args, k) is None else getattr(args, k)) for k in DEFAULTS}
    check_new_out(args.out)
    record, texts = plan_batch(values, args.out)  # InputError for anything wrong, nothing written
    if args.dask_scheduler is not None:  # the fleet's workers build the fabrics (batch/fleet.py)
        on = fleet.connect(args.dask_scheduler)
        return fleet.run_fleet(BatchFolder.create(args.out, record, texts), on)
    _require_root()
    from scenarios.commands.run import preflight

    preflight()
    folder = BatchFolder.create(args.out, record, texts)
    return run_batch(folder)


def _require_root() -> None:
    if os.geteuid() != 0:
        raise EnvironmentProblem("building a fabric needs root: run `sudo shiftbed batch ...`")


def run_batch(folder) -> int:
    """Every scenario not done, in order, then the table and the report; 130 when interrupted, the first
    run's status that stops a batch (``exitcodes.keeps_going``), else the batch's combined status."""
    from scenarios.batch.progress import BatchProgress

    pending = folder.pending()
    progress = BatchProgress(folder, pending)
    solo_cache = _solo_cache(folder)
    try:
        with interrupts_as_keyboard():
            progress.introduce()
            for name in pending:
                code = run_scenario(folder, name, progress.display, solo_cache)
                if not keeps_going(code):
                    print(f"shiftbed batch: {name} stopped the batch (exit {code}); `shiftbed batch --resume "
                          f"{folder.root}` runs it again and the rest", file=sys.stderr)
                    return code
                progress.scenario_done(name)
            progress.finish()
    finally:
        if solo_cache is not None:
            shutil.rmtree(solo_cache.root, ignore_errors=True)
    return write_results(folder)


def _solo_cache(folder):
    """The batch's calibrations reused by job shape (``experiment/reuse.py``), unless it calibrates each."""
    from scenarios.experiment.reuse import SoloCache

    if not folder.record["settings"].get("reuse_calibration"):
        return None
    return SoloCache(folder.root / CALIBRATION_DIR)


def run_scenario(folder, name: str, display, solo_cache=None) -> int:
    """One scenario: its prediction written, then its run (once more if fidelity was lost), then done."""
    from scenarios import spec
    from scenarios.batch.folder import PREDICTION_FILE, RUN_LOG, run_folders
    from scenarios.batch.predict import FABRIC_KEY, before_the_run, from_the_fabric
    from scenarios.commands import run as run_command
    from scenarios.commands.demo import run_arguments
    from scenarios.results import json_text, load_results

    work = folder.begin(name)
    path = folder.scenario_file(name)
    scenario = spec.load(path)
    scenario.require_runnable()  # a file edited since it was drawn: refused in one line (a pattern job, ...)
    prediction = before_the_run(scenario, scenario.policies)  # nothing of this run measured yet
    prediction[FABRIC_KEY] = from_the_fabric(folder, name, scenario, scenario.policies)  # nor of any later
    (work / PREDICTION_FILE).write_text(json_text(prediction))
    attempts = []
    for _ in range(ATTEMPTS):
        args = run_arguments(path, scenario.duration_s, str(folder.work_root))
        args.seed = folder.record["settings"]["seed"]
        target = folder.record["settings"].get("target_se_pct")
        args.target_se_pct = None if target is None else str(target)
        with open(work / RUN_LOG, "a") as log, contextlib.redirect_stdout(log):
            code = run_command.run(args, display=display, solo_cache=solo_cache)
        if not keeps_going(code):
            return code
        kept = run_folders(work)[-1]
        summary = load_results(kept).summary
        attempts.append({"results_dir": kept.name, "exit_code": code, "fidelity_ok": summary.fidelity_ok})
        if solo_cache is not None and (code == FIDELITY_LOST or summary.fidelity.drifted):
            solo_cache.forget(name)  # measured or reused on a run without fidelity, or off its solo speed
        if code != FIDELITY_LOST:
            break
    folder.finish(name, {"scenario": name, "attempts": attempts, "kept": attempts[-1]["results_dir"],
                         "exit_code": attempts[-1]["exit_code"]})
    return attempts[-1]["exit_code"]
