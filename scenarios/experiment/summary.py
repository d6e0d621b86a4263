"""The run's summary record: each policy's measurement beside its prediction, fidelity and the cross-checks.

Built once, when the run ends however it ended, from what the stages kept:
calibration's solo figures, each policy's record, what measuring noticed.
The record's form is ``scenarios/summary_record.py``.
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from controller.theory.fluid import exception_line
from scenarios.analysis import tables as analysis
from scenarios.experiment.drive import MeasureLog
from scenarios.experiment.fidelity import judge_fidelity
from scenarios.experiment.patternprediction import predict_pattern_run
from scenarios.experiment.prediction import (
    STATES,
    MeasuredRun,
    RunModel,
    apart_share,
    between_states,
    has_two_states,
    knife_edge,
    state_start,
)
from scenarios.experiment.record import PolicyRecord
from scenarios.runlinks import RunLinks
from scenarios.summary_record import Gap, JobSummary, PolicySummary, SummaryRecord
from scenarios.throughput import throughput_change_pct

log = logging.getLogger(__name__)


def predict(run: MeasuredRun, record: PolicyRecord, policy: str, figures: dict[str, dict],
            busy_start_ms: dict[str, float], busy_start_samples_ms: dict[str, tuple[float, ...]],
            link_mbps: float, queue_ms: float, links: RunLinks | None = None, state: str | None = None,
            ) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Each job's predicted mean iteration time under ``policy`` and its range (``prediction.RunModel``).

    The fluid model is fed with ``figures`` (:meth:`MeasuredRun.model_solo`) and the
    offsets the scheduler used. Each job's mean is over as many iterations as the
    measurement counted for it: that skips only the first (launch to first burst's
    end, analysis.job_means) and counts from the first burst's end on, so model and
    wire cover the same span of time. With ``links`` of more than one port, the bursts share
    the fabric's links (:meth:`RunLinks.model_links`). ``state`` (``prediction.STATES``): the
    jobs together or apart, with max-min fair sharing (``prediction.state_start``); None: the
    policy's own start with the transport's sharing.
    """
    schedule = run.schedule_of(policy)
    sharing = run.tcp_sharing if state is None else "fair"
    offsets = record.offsets[policy] if state is None else state_start(state, schedule, record.offsets[policy])
    model = RunModel(schedule, figures, run.launch_lead_ms, link_mbps, queue_ms,
                     run.padding_ms(policy), links.model_links(figures) if links is not None else None, sharing)
    return model.predict_with_range(policy, offsets, measured_iterations(run, record, policy), busy_start_ms,
                                    busy_start_samples_ms)


def measured_iterations(run: MeasuredRun, record: PolicyRecord, policy: str) -> dict[str, int]:
    """Per job, how many iterations the wire's mean under ``policy`` is over (a job not measured: the
    most any job was), so that model and wire cover the same span."""
    measured = record.measured[policy]
    most = max(m["iterations"] for m in measured.values())
    return {j.name: max(1, measured.get(j.name, {}).get("iterations", most)) for j in run.schedule.jobs}


def _together_and_apart(args: tuple, jobs: dict[str, dict]):
    """A free-running policy's predictions (:func:`predict`'s ``args``): each job's, and its range, the
    together and apart states' weighed by its share of iterations apart; and per job those figures."""
    (together, t_range), (apart, a_range) = (predict(*args, state=s) for s in STATES)
    share = {name: apart_share(jobs.get(name, {})) for name in together}
    predicted = {j: between_states(share[j], together[j], apart[j]) for j in together}
    ranges = {j: (between_states(share[j], t_range[j][0], a_range[j][0]),
                  between_states(share[j], t_range[j][1], a_range[j][1])) for j in together}
    states = {j: {"apart_share": share[j], "predicted_together_ms": together[j], "predicted_apart_ms": apart[j]}
              for j in together}
    return predicted, ranges, states


def _predicted_jobs(run: MeasuredRun, record: PolicyRecord, policy: str, link_mbps: float, queue_ms: float,
                    links: RunLinks | None) -> tuple[dict[str, float], dict[str, dict]]:
    """``policy``'s prediction: each job's predicted mean, and per job the model's figures that go
    beside it in the summary (range, busy-start cost, the solo figures fed, both states')."""
    jobs = record.measured[policy]
    figures = run.model_solo(policy)
    busy, busy_samples = run.busy_starts_ms(policy, figures)
    args = (run, record, policy, figures, busy, busy_samples, link_mbps, queue_ms, links)
    states = {}
    if has_two_states(policy):
        predicted, ranges, states = _together_and_apart(args, jobs)
    else:
        predicted, ranges = predict(*args)
    return predicted, {name: dict(predicted_iteration_ms=predicted[name], predicted_range_ms=tuple(ranges[name]),
                                  busy_start_ms=busy[name], knife_edge=knife_edge(predicted[name], ranges[name]),
                                  model_solo_iteration_ms=figures[name]["iteration_ms"],
                                  model_quiet_bursts=figures[name]["quiet_bursts"], **states.get(name, {}))
                       for name in jobs}


def _predicted_pattern_jobs(run: MeasuredRun, record: PolicyRecord, policy: str, link_mbps: float,
                            links: RunLinks | None, patterns: dict) -> tuple[dict[str, float], dict[str, dict]]:
    """A run of pattern jobs: ``policy``'s prediction (``patternprediction``) and per job its figures."""
    predicted, ranges = predict_pattern_run(run.schedule_of(policy), run.solo, patterns, policy, record.offsets[policy],
                                            measured_iterations(run, record, policy), link_mbps,
                                            sharing=run.tcp_sharing,
                                            links=links.model_links(run.solo) if links is not None else None)
    return predicted, {name: dict(predicted_iteration_ms=predicted[name], predicted_range_ms=tuple(ranges[name]),
                                  knife_edge=knife_edge(predicted[name], ranges[name]),
                                  model_solo_iteration_ms=run.solo[name]["iteration_ms"])
                       for name in record.measured[policy]}


def pattern_jobs_arcs(scenario) -> dict | None:
    """A scenario with pattern jobs: each job's on-grid busy pattern (``spec.busy_patterns``), which the
    pattern model predicts its run with; None for a scenario without."""
    if not scenario.pattern_jobs:
        return None
    return dict(zip((j.name for j in scenario.jobs), scenario.busy_patterns(), strict=True))


def policy_summaries(run: MeasuredRun, record: PolicyRecord, link_mbps: float,
                     queue_ms: float, links: RunLinks | None = None,
                     tracebacks: dict[str, str] | None = None,
                     patterns: dict | None = None) -> dict[str, PolicySummary]:
    """Every measured policy: each job measured and predicted, and the throughput change against ``none``.

    A free-running policy's jobs (``prediction.has_two_states``) are predicted together and apart,
    and each job's prediction weighs the two by its iterations before and after the jobs parted
    (``prediction.apart_share``).

    The measurement never depends on the model: a policy whose prediction fails keeps every measured
    figure, with the reason in one line (``prediction_unavailable``) and no predicted ones; its
    traceback goes to ``tracebacks[policy]`` where given, else to the log at debug level.
    ``patterns``: a run of pattern jobs, each job's on-grid busy pattern (``spec.busy_patterns``), which
    the pattern model predicts (:func:`_predicted_pattern_jobs`)."""
    jobs_of, predictions, missing = {}, {}, {}
    for policy, jobs in record.measured.items():
        model: dict[str, dict] = {}
        try:
            if patterns is not None:
                predictions[policy], model = _predicted_pattern_jobs(run, record, policy, link_mbps, links, patterns)
            else:
                predictions[policy], model = _predicted_jobs(run, record, policy, link_mbps, queue_ms, links)
        except Exception as exc:  # the model's failure is said, never the measurement's
            missing[policy] = exception_line(exc)
            trace = traceback.format_exc()
            if tracebacks is not None:
                tracebacks[policy] = trace
            else:
                log.debug("%s: prediction failed\n%s", policy, trace)
        entry = {}
        for name, m in jobs.items():
            predicted = model.get(name, {}).get("predicted_iteration_ms")
            entry[name] = JobSummary(**m, **model.get(name, {}), solo_iteration_ms=run.solo[name]["iteration_ms"],
                                     error_pct=None if predicted is None
                                     else analysis.percent_error(m["mean_iteration_ms"], predicted))
        jobs_of[policy] = entry
    changes = {policy: (None, None) for policy in jobs_of}
    if "none" in jobs_of:
        none_ms = {j: v.mean_iteration_ms for j, v in jobs_of["none"].items()}
        none_pred = predictions.get("none")
        for policy, entry in jobs_of.items():
            measured_ms = {j: v.mean_iteration_ms for j, v in entry.items()}
            mine = predictions.get(policy)
            changes[policy] = (throughput_change_pct(measured_ms, none_ms),
                               None if mine is None or none_pred is None else throughput_change_pct(mine, none_pred))
    return {policy: PolicySummary(jobs=entry, epoch_s=record.epochs.get(policy),
                                  throughput_change_vs_none_pct=changes[policy][0],
                                  predicted_throughput_change_vs_none_pct=changes[policy][1],
                                  offsets_ms=dict(record.offsets.get(policy, {})),
                                  prediction_unavailable=missing.get(policy), stopped=record.stops.get(policy))
            for policy, entry in jobs_of.items()}


def build_summary(*, scenario, complete: bool, reason: str | None, run: MeasuredRun, record: PolicyRecord,
                  notes: MeasureLog, links: RunLinks | None, queue_ms: float | None, link_mbps: float,
                  expected_solo_mbps: dict[str, float], port_stats_csv: Path, gaps: list[Gap],
                  tracebacks: dict[str, str] | None = None) -> SummaryRecord:
    """The summary record of a run of ``scenario``; ``links`` (where the jobs meet and are captured)
    and ``queue_ms`` (the fabric's) are None when no fabric came up, and then no policy was measured
    either. ``tracebacks``: as :func:`policy_summaries`."""
    policies = (policy_summaries(run, record, links.primary.mbps, queue_ms, links, tracebacks,
                                 pattern_jobs_arcs(scenario))
                if record.measured else {})
    period_ms = {j.name: j.period_ms for j in scenario.jobs}
    meets = links.meeting_pairs() if links is not None else None
    fidelity_ok, fidelity = judge_fidelity(run.solo, run.solo_spans, run.other_bursts(None), expected_solo_mbps,
                                           link_mbps, period_ms, record.steal, notes, meets)
    return SummaryRecord(scenario=scenario.name, complete=complete, incomplete_reason=reason,
                         fidelity_ok=fidelity_ok, fidelity=fidelity,
                         crosschecks=record.crosschecks(port_stats_csv),
                         shared_link=links.primary.name if links is not None else None,
                         links=links.record() if links is not None else {},
                         policies=policies, gaps=tuple(gaps))


def summary_in_scenario_units(summary: SummaryRecord, time_scale: float) -> SummaryRecord:
    """A summary built from what the wire of a run at ``time_scale`` measured (and the model fed
    with it predicted), in the scenario's units and saying K (``timescale.in_scenario_units``)."""
    from scenarios.timescale import in_scenario_units

    if time_scale == 1:
        return summary
    return SummaryRecord.from_dict({**in_scenario_units(summary.to_dict(), time_scale), "time_scale": time_scale})
