"""Runs side by side: one table across runs, scenarios and policies, from their results folders alone.

One row per run, policy and job: the measured mean iteration time and its
standard error, the model's prediction and the error, and the policy's
throughput change against ``none`` with its 95 % interval (the same change on
each of the policy's rows), beside the run's fidelity verdict.

The change, its interval and the verdict (helps / neutral / hurts) are
``scenarios/analysis/verdict.py``'s, as every reader of a folder has them:
where the summary lacks a job's standard error (folders of format 1; a job
under 10 iterations) it is computed from ``iterations.csv`` as the run would
have; a job still without one leaves the policy without an interval and a
verdict. ``none`` itself is the reference: change 0, no interval.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from scenarios.analysis.verdict import BASELINE, folder_changes, standard_errors_ms
from scenarios.errors import InputError
from scenarios.results import SUMMARY_FILE, Results, load_results

FIGURES = ("measured_iteration_ms", "measured_se_ms", "predicted_iteration_ms", "error_pct",
           "throughput_change_vs_none_pct", "throughput_change_low_pct", "throughput_change_high_pct",
           "predicted_throughput_change_vs_none_pct")
COLUMNS = ("scenario", "run", "results_dir", "format", "complete", "fidelity_ok", "policy", "job", "iterations",
           "measured_iteration_ms", "measured_se_ms", "predicted_iteration_ms", "error_pct",
           "throughput_change_vs_none_pct", "throughput_change_low_pct", "throughput_change_high_pct",
           "throughput_verdict", "predicted_throughput_change_vs_none_pct")


def run_folders(path: str | Path) -> list[Path]:
    """The run folders ``path`` names: itself when it is one (it holds ``summary.json``), else the run
    folders in it (``results/<scenario>/``), else in its folders (``results/``). Hidden folders
    (``.<stamp>.partial``, a run still writing) are left out. InputError (one line) when there is none."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: no such folder")
    if (path / SUMMARY_FILE).is_file():
        return [path]
    for depth in (1, 2):
        found = sorted(p.parent for p in path.glob("/".join(["[!.]*"] * depth) + "/" + SUMMARY_FILE))
        if found:
            return found
    raise InputError(f"{path}: not a shiftbed results folder (no {SUMMARY_FILE} in it or in the folders below); "
                     "give a run's folder, e.g. results/<scenario>/<timestamp>, or the folder that holds them")


def load_runs(paths: Iterable[str | Path]) -> list[Results]:
    """Every run under ``paths``, each once, in the order given (InputError naming a folder that is not one)."""
    seen, runs = set(), []
    for path in paths:
        for folder in run_folders(path):
            if folder.resolve() not in seen:
                seen.add(folder.resolve())
                runs.append(load_results(folder))
    return runs


def policy_rows(results: Results) -> list[dict]:
    """One run's rows, one per policy and job."""
    summary = results.summary
    policies = summary.policies
    changes = folder_changes(results)
    rows = []
    for policy, entry in policies.items():
        errors, change = standard_errors_ms(results, policy), changes[policy]
        predicted = (0.0 if policy == BASELINE else
                     entry.predicted_throughput_change_vs_none_pct if BASELINE in policies else None)
        for job, j in entry.jobs.items():
            rows.append({
                "scenario": summary.scenario or results.path.parent.name, "run": results.path.name,
                "results_dir": str(results.path), "format": summary.format, "complete": summary.complete,
                "fidelity_ok": summary.fidelity_ok, "policy": policy, "job": job, "iterations": j.iterations,
                "measured_iteration_ms": j.mean_iteration_ms, "measured_se_ms": errors[job],
                "predicted_iteration_ms": j.predicted_iteration_ms, "error_pct": j.error_pct,
                "throughput_change_vs_none_pct": change.change_pct,
                "throughput_change_low_pct": change.low_pct, "throughput_change_high_pct": change.high_pct,
                "throughput_verdict": change.verdict,
                "predicted_throughput_change_vs_none_pct": predicted,
            })
    return rows


def compare_table(runs: Iterable[Results]) -> pd.DataFrame:
    """The one table (:data:`COLUMNS`) of every run's policies and jobs, in the order the runs came."""
    rows = [row for results in runs for row in policy_rows(results)]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    # one schema whatever the runs hold: counts may be missing, figures are floats (NaN when missing)
    return table.astype({"iterations": "Int64", "complete": bool, "fidelity_ok": bool,
                         **{column: "float64" for column in FIGURES}})
