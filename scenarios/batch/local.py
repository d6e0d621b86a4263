"""A batch on this machine: every scenario not done, in turn, each through the session API.

Each scenario's prediction is written before its first policy (``batch/predict.py``), then it runs
as ``shiftbed run`` runs it (``experiment/session.py``), its results folder inside the scenario's
and its table in ``run.log``; a run that lost fidelity is run once more, then kept. At the end:
the table and the report (``batch/results.py``). ``shiftbed batch`` runs a batch here with
:func:`run_batch`, and so does the child a fleet's worker starts (``batch/fleetchild.py``).
"""

from __future__ import annotations

import contextlib
import shutil
import sys

from scenarios.batch.results import write_results
from scenarios.exitcodes import FIDELITY_LOST, keeps_going
from scenarios.interrupts import interrupts_as_keyboard

ATTEMPTS = 2  # a scenario whose fidelity is lost is run once more, then kept
CALIBRATION_DIR = ".calibration"  # the batch's reusable solo runs, hard-linked, while it runs


def run_batch(folder) -> int:
    """Every scenario not done, in order, then the table and the report; 130 when interrupted, the first
    run's status that stops a batch (``exitcodes.keeps_going``), else the batch's combined status."""
    from scenarios.batch.progress import BatchProgress

    pending = folder.pending()
    progress = BatchProgress(folder, pending)
    solo_cache = batch_solo_cache(folder)
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


def batch_solo_cache(folder):
    """The batch's calibrations reused by job shape (``experiment/reuse.py``), unless it calibrates each."""
    from scenarios.experiment.reuse import SoloCache

    if not folder.record["settings"].get("reuse_calibration"):
        return None
    return SoloCache(folder.root / CALIBRATION_DIR)


def run_scenario(folder, name: str, display, solo_cache=None) -> int:
    """One scenario: its prediction written, then its run (once more if fidelity was lost), then done."""
    from scenarios import spec
    from scenarios.batch.folder import PREDICTION_FILE, RUN_LOG
    from scenarios.batch.predict import FABRIC_KEY, before_the_run, from_the_fabric
    from scenarios.experiment import session
    from scenarios.files import json_text
    from scenarios.report.terminal import say_run_end
    from scenarios.results import load_results

    work = folder.begin(name)
    path = folder.scenario_file(name)
    scenario = spec.load(path)
    scenario.require_runnable()  # a file edited since it was drawn: refused in one line (a pattern job, ...)
    prediction = before_the_run(scenario, scenario.policies)  # nothing of this run measured yet
    prediction[FABRIC_KEY] = from_the_fabric(folder, name, scenario, scenario.policies)  # nor of any later
    (work / PREDICTION_FILE).write_text(json_text(prediction))
    settings = folder.record["settings"]
    options = session.SessionOptions(policies=scenario.policies, duration_s=scenario.duration_s,
                                     out_root=folder.work_root, seed=settings["seed"],
                                     target_se_pct=settings.get("target_se_pct"))
    attempts = []
    for _ in range(ATTEMPTS):
        with open(work / RUN_LOG, "a") as log, contextlib.redirect_stdout(log):
            session.check_scenario(scenario, options)  # as `shiftbed run` checks its file, each time
            result = session.run_session(scenario, path.read_text(), options, display, solo_cache)
            say_run_end(result.results_dir, result.problem, False)
        code = result.status
        if not keeps_going(code):
            return code
        kept = result.results_dir
        summary = load_results(kept).summary
        attempts.append({"results_dir": kept.name, "exit_code": code, "fidelity_ok": summary.fidelity_ok})
        if solo_cache is not None and (code == FIDELITY_LOST or summary.fidelity.drifted):
            solo_cache.forget(name)  # measured or reused on a run without fidelity, or off its solo speed
        if code != FIDELITY_LOST:
            break
    folder.finish(name, {"scenario": name, "attempts": attempts, "kept": attempts[-1]["results_dir"],
                         "exit_code": attempts[-1]["exit_code"]})
    return attempts[-1]["exit_code"]
