"""batch.parquet: one row per scenario, policy and job, from the batch's done scenarios alone.

Each row holds what was measured in the scenario's kept run, the wire's change
against ``none`` with its 95 % interval and verdict (``verdict.folder_changes``,
as every reader of a run has them), and the four kinds of prediction
(docs/batch.md): *before the run* (``prediction.json``), the same *from the
fabric* as the batch's earlier scenarios measured it (``predict.fabric_prediction``),
*from calibration* (the run's prediction where it is of that kind; for a free-running policy, its
"together" state, which is made from calibration alone) and *explained
afterwards* (the run's prediction where it weighs the two states by the share
apart counted in the run), with the model's change and verdict made before the
run beside the wire's.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from scenarios import spec
from scenarios.analysis.verdict import folder_changes, standard_errors_ms
from scenarios.batch.folder import PREDICTION_FILE, BatchFolder
from scenarios.batch.predict import fabric_prediction
from scenarios.report.document import predicted_change_pct
from scenarios.report.story import AFTERWARDS, CALIBRATION, prediction_kind
from scenarios.results import load_results

FIGURES = ("period_ms", "comm_ms", "measured_iteration_ms", "measured_se_ms", "before_ms", "fabric_ms",
           "calibration_ms", "afterwards_ms", "apart_share", "met_share_first", "met_share_last",
           "wire_change_pct", "wire_low_pct", "wire_high_pct", "model_change_pct", "fabric_change_pct",
           "run_predicted_change_pct", "stopped_after_s")
COLUMNS = ("scenario", "n_jobs", "sample", "attempts", "exit_code", "fidelity_ok", "complete", "results_dir",
           "policy", "job", "iterations", "period_ms", "comm_ms", "measured_iteration_ms", "measured_se_ms",
           "before_ms", "fabric_ms", "calibration_ms", "afterwards_ms", "run_prediction_kind", "apart_share",
           "knife_edge", "met_share_first", "met_share_last", "wire_change_pct", "wire_low_pct", "wire_high_pct",
           "wire_verdict", "model_change_pct", "model_verdict", "fabric_change_pct", "fabric_verdict",
           "run_predicted_change_pct", "stopped_by", "stopped_after_s", "calibration_reused_from")


def _num(value) -> float:
    return math.nan if value is None else float(value)


def scenario_rows(folder: BatchFolder, name: str) -> list[dict]:
    """The rows of one done scenario (its kept run), every policy it was asked for and every job."""
    outcome = folder.outcome(name)
    done = folder.done_dir(name)
    prediction = json.loads((done / PREDICTION_FILE).read_text())
    before = prediction["policies"]
    draw = folder.record.get("draws", {}).get(name, {})
    scenario = spec.load(folder.scenario_file(name))
    fabric = fabric_prediction(folder, name, scenario, prediction).get("policies", {})
    declared = {j.name: j for j in scenario.jobs}
    results = load_results(done / outcome["kept"])
    summary, changes = results.summary, folder_changes(results)
    rows = []
    for policy in scenario.policies:
        entry, change = summary.policies.get(policy), changes.get(policy)
        errors = standard_errors_ms(results, policy) if entry is not None else {}
        model, by_fabric = before.get(policy, {}), fabric.get(policy, {})
        stop = entry.stopped if entry is not None else None  # a batch with a target standard error
        for job, declared_job in declared.items():
            j = entry.jobs.get(job) if entry is not None else None
            kind = prediction_kind(j) if j is not None and j.predicted_iteration_ms is not None else None
            calibration = (j.predicted_iteration_ms if kind == CALIBRATION else
                           j.predicted_together_ms if kind == AFTERWARDS else None)
            rows.append({
                "scenario": name, "n_jobs": draw.get("n_jobs", len(declared)), "sample": draw.get("sample"),
                "attempts": len(outcome["attempts"]), "exit_code": outcome["exit_code"],
                "fidelity_ok": summary.fidelity_ok, "complete": summary.complete, "results_dir": str(results.path),
                "policy": policy, "job": job, "iterations": j.iterations if j else None,
                "period_ms": declared_job.period_ms, "comm_ms": declared_job.comm_ms,
                "measured_iteration_ms": _num(j and j.mean_iteration_ms), "measured_se_ms": _num(errors.get(job)),
                "before_ms": _num(model.get("jobs", {}).get(job)), "fabric_ms": _num(by_fabric.get("jobs", {}).get(job)),
                "calibration_ms": _num(calibration),
                "afterwards_ms": _num(j.predicted_iteration_ms if kind == AFTERWARDS else None),
                "run_prediction_kind": kind, "apart_share": _num(j and j.apart_share),
                "knife_edge": bool(j and j.knife_edge),
                "met_share_first": _num(j and j.met_share_first), "met_share_last": _num(j and j.met_share_last),
                "wire_change_pct": _num(change and change.change_pct), "wire_low_pct": _num(change and change.low_pct),
                "wire_high_pct": _num(change and change.high_pct), "wire_verdict": change and change.verdict,
                "model_change_pct": _num(model.get("change_pct")), "model_verdict": model.get("verdict"),
                "fabric_change_pct": _num(by_fabric.get("change_pct")), "fabric_verdict": by_fabric.get("verdict"),
                "run_predicted_change_pct": _num(None if entry is None else predicted_change_pct(results, policy)),
                "stopped_by": stop.by if stop else None, "stopped_after_s": _num(stop and stop.after_ms / 1000),
                "calibration_reused_from": summary.fidelity.solo.get(job, {}).get("reused_from"),
            })
    return rows


def batch_table(folder: BatchFolder, names: list[str] | None = None) -> pd.DataFrame:
    """The table (:data:`COLUMNS`) of the done scenarios among ``names`` (default: all done), in order."""
    names = folder.done() if names is None else [n for n in names if folder.is_done(n)]
    table = pd.DataFrame([row for name in names for row in scenario_rows(folder, name)], columns=list(COLUMNS))
    return table.astype({"iterations": "Int64", "sample": "Int64", "fidelity_ok": bool, "complete": bool,
                         "knife_edge": bool, **{c: "float64" for c in FIGURES}})
