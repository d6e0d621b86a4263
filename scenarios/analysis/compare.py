"""Runs side by side: one table across runs, scenarios and policies, from their results folders alone.

One row per run, policy and job: the measured mean iteration time and its
standard error, the model's prediction and the error, and the policy's
throughput change against ``none`` with its 95 % interval (the same change on
each of the policy's rows), beside the run's fidelity verdict.

The interval. Each job's change is ``(none_ms / ms - 1) × 100``
(``results.throughput_change_pct``); its variance follows from the two means'
standard errors (batch means, ``tables.batch_means_se``) by the delta method,
and the policy's change, the mean over its jobs, adds the jobs' variances over
the jobs squared. Each standard error rests on ``BATCHES - 1`` degrees of
freedom, so the half-width is Student's t at the Welch–Satterthwaite degrees
of freedom times the standard error. Where the summary lacks a job's standard
error (folders of format 1; a job under 10 iterations), it is computed from
``iterations.csv`` as the run would have; a job still without one leaves the
policy without an interval. ``none`` itself is the reference: change 0, no
interval. The jobs are taken as independent, which jobs sharing a link are
not quite: the interval is the measurement noise of each mean, not the
coupling between jobs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from apps.iterations import iteration_table
from controller.theory.tally import student_t975
from scenarios.analysis.tables import BATCHES, job_means
from scenarios.errors import InputError
from scenarios.results import SUMMARY_FILE, Results, load_results, throughput_change_pct

BASELINE = "none"
FIGURES = ("measured_iteration_ms", "measured_se_ms", "predicted_iteration_ms", "error_pct",
           "throughput_change_vs_none_pct", "throughput_change_low_pct", "throughput_change_high_pct",
           "predicted_throughput_change_vs_none_pct")
COLUMNS = ("scenario", "run", "results_dir", "format", "complete", "fidelity_ok", "policy", "job", "iterations",
           "measured_iteration_ms", "measured_se_ms", "predicted_iteration_ms", "error_pct",
           "throughput_change_vs_none_pct", "throughput_change_low_pct", "throughput_change_high_pct",
           "predicted_throughput_change_vs_none_pct")


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


def standard_errors_ms(results: Results, policy: str) -> dict[str, float | None]:
    """Each job's standard error of its mean iteration time under ``policy``: the summary's, else from
    ``iterations.csv`` (format 1 folders did not record it)."""
    jobs = results.summary.policies[policy].jobs
    recorded = {job: j.iteration_se_ms for job, j in jobs.items()}
    if all(se is not None for se in recorded.values()):
        return recorded
    rows = results.iterations[results.iterations["policy"] == policy]
    computed = job_means(iteration_table(rows)) if not rows.empty else {}
    return {job: se if se is not None else computed.get(job, {}).get("iteration_se_ms")
            for job, se in recorded.items()}


def change_half_width_pct(means_ms: dict[str, float], se_ms: dict[str, float | None], none_ms: dict[str, float],
                          none_se_ms: dict[str, float | None]) -> float | None:
    """The half-width of the 95 % interval of the mean over jobs of ``(none_ms / ms - 1) × 100`` (module
    docstring), or None when a job lacks a standard error or a mean under ``none``."""
    if not means_ms or any(se_ms.get(j) is None or none_se_ms.get(j) is None or not none_ms.get(j) for j in means_ms):
        return None
    n = len(means_ms)
    parts = []  # each mean's share of the variance of the policy's change
    for job, ms in means_ms.items():
        ratio = none_ms[job] / ms
        parts.append((100 * ratio * none_se_ms[job] / none_ms[job] / n) ** 2)
        parts.append((100 * ratio * se_ms[job] / ms / n) ** 2)
    variance = sum(parts)
    if variance == 0:
        return 0.0
    dof = variance ** 2 / sum(p ** 2 / (BATCHES - 1) for p in parts)
    return student_t975(dof) * math.sqrt(variance)


def policy_rows(results: Results) -> list[dict]:
    """One run's rows, one per policy and job."""
    summary = results.summary
    policies = summary.policies
    errors = {policy: standard_errors_ms(results, policy) for policy in policies}
    baseline = policies.get(BASELINE)
    rows = []
    none_ms = {j: b.mean_iteration_ms for j, b in baseline.jobs.items()} if baseline else {}
    for policy, entry in policies.items():
        change, predicted, half = ((0.0, 0.0, None) if policy == BASELINE else
                                   _change_vs_none(entry, errors[policy], errors.get(BASELINE), none_ms))
        for job, j in entry.jobs.items():
            rows.append({
                "scenario": summary.scenario or results.path.parent.name, "run": results.path.name,
                "results_dir": str(results.path), "format": summary.format, "complete": summary.complete,
                "fidelity_ok": summary.fidelity_ok, "policy": policy, "job": job, "iterations": j.iterations,
                "measured_iteration_ms": j.mean_iteration_ms, "measured_se_ms": errors[policy][job],
                "predicted_iteration_ms": j.predicted_iteration_ms, "error_pct": j.error_pct,
                "throughput_change_vs_none_pct": change,
                "throughput_change_low_pct": None if half is None else change - half,
                "throughput_change_high_pct": None if half is None else change + half,
                "predicted_throughput_change_vs_none_pct": predicted,
            })
    return rows


def _change_vs_none(entry, se_ms: dict[str, float | None], none_se_ms: dict[str, float | None] | None,
                    none_ms: dict[str, float]):
    """A policy's measured and predicted throughput change against ``none`` and the measured one's
    half-width (None each where the run has no ``none`` or no figure)."""
    if not none_ms or none_se_ms is None:
        return None, None, None
    means = {job: j.mean_iteration_ms for job, j in entry.jobs.items() if j.mean_iteration_ms}
    change = entry.throughput_change_vs_none_pct
    if change is None and means and all(none_ms.get(job) for job in means):
        change = throughput_change_pct(means, none_ms)  # a summary that did not record it
    half = None if change is None else change_half_width_pct(means, se_ms, none_ms, none_se_ms)
    return change, entry.predicted_throughput_change_vs_none_pct, half


def compare_table(runs: Iterable[Results]) -> pd.DataFrame:
    """The one table (:data:`COLUMNS`) of every run's policies and jobs, in the order the runs came."""
    rows = [row for results in runs for row in policy_rows(results)]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    # one schema whatever the runs hold: counts may be missing, figures are floats (NaN when missing)
    return table.astype({"iterations": "Int64", "complete": bool, "fidelity_ok": bool,
                         **{column: "float64" for column in FIGURES}})
