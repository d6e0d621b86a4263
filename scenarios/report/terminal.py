"""A finished run on the terminal: its table, or ``--json``'s one object, and the lines that say what is missing.

What ``shiftbed run`` prints once its run ended (``experiment/session.py`` says how it ended), and
so what ``demo`` prints for each of its runs and a batch writes into each scenario's ``run.log``:
drawn from the results folder alone, as the report is.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from scenarios.exitcodes import FIDELITY_LOST, PREDICTION_MISSING, run_exit_code
from scenarios.results import PREDICTION_LOG
from scenarios.summary_record import JobSummary, SummaryRecord

if TYPE_CHECKING:
    from scenarios.analysis.verdict import PolicyChange


def say_run_end(results_dir: Path | None, problem: str | None, as_json: bool) -> None:
    """What a run says once it ended: ``problem``, the one line of a run stopped before its end (on
    stderr), else :func:`say_finished` on its folder."""
    if problem is not None:
        print(f"shiftbed run: {problem}", file=sys.stderr)
    else:
        say_finished(results_dir, as_json)


def say_finished(results_dir: Path, as_json: bool) -> None:
    """A finished run's table (or, ``as_json``, its one JSON object on stdout), then on stderr each
    policy stopped early, an incomplete run, lost fidelity and each missing prediction."""
    summary, changes = read_back(results_dir)
    if as_json:
        print(json.dumps(json_view(summary, results_dir, changes)))
        print(f"report: {results_dir / 'report.md'}", file=sys.stderr)
    else:
        print_table(summary, results_dir, changes)
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


def stop_lines(summary: SummaryRecord) -> str:
    """What stopped each policy of a run with a target standard error (empty without one)."""
    said = [f"{policy} {entry.stopped.phrase()}" for policy, entry in summary.policies.items() if entry.stopped]
    return "stopped: " + "; ".join(said) if said else ""


def read_back(results_dir: Path) -> tuple[SummaryRecord, dict[str, PolicyChange]]:
    """The folder's summary, and each policy's change against ``none`` as every reader of it has it."""
    from scenarios.analysis.verdict import folder_changes
    from scenarios.results import load_results

    results = load_results(results_dir)
    return results.summary, folder_changes(results)


def results_json(results_dir: Path) -> dict:
    """``--json``'s one object for a finished results folder (``shiftbed demo --json`` gives one per scenario)."""
    summary, changes = read_back(results_dir)
    return json_view(summary, results_dir, changes)


def json_view(summary: SummaryRecord, results_dir: Path, changes: dict[str, PolicyChange]) -> dict:
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


def print_table(summary: SummaryRecord, results_dir: Path, changes: dict[str, PolicyChange]) -> None:
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
