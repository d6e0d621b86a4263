"""summary.json as one typed record: what the runner writes is what the readers read, older folders included."""

import json
from pathlib import Path

import pandas as pd
import pytest
from results_example import MEASURED_MS, PREDICTED_MS, error_pct, write_example

from controller.theory.schedule import JobTiming, compute_schedule
from scenarios import spec
from scenarios.errors import InputError
from scenarios.experiment.prediction import MeasuredRun
from scenarios.experiment.record import PolicyRecord
from scenarios.experiment.runner import Experiment, RunOptions
from scenarios.experiment.summary import policy_summaries
from scenarios.results import ResultsWriter, load_results
from scenarios.summary_record import FORMAT, Crosschecks, JobSummary, PolicySummary, SummaryRecord

REPO = Path(__file__).resolve().parents[2]

# A summary.json as format 1 wrote it: no gaps, no shared_link, no model figures, no standard
# error, a re-measurement without its worst second.
FORMAT_1_SUMMARY = {
    "scenario": "two-jobs", "complete": True, "incomplete_reason": None, "fidelity_ok": True,
    "fidelity": {"solo_rate_ratio": 0.96, "capture_drops": 0, "advice": None,
                 "host_steal_pct": {"solo a": 0.4}, "host_steal_max_pct": 5.0, "disturbed": [],
                 "measured_again": [{"measurement": "solo a", "attempt": 1, "run": "solo-a-1-0.800",
                                     "mean_pct": 8.2}]},
    "crosschecks": {"capture_vs_iperf_bytes_err_pct": 0.8, "capture_vs_portstats_util_err_pct": 2.1},
    "policies": {"none": {"throughput_change_vs_none_pct": 0.0,
                          "jobs": {"a": {"iterations": 40, "mean_iteration_ms": 110.0,
                                         "predicted_iteration_ms": 100.0, "solo_iteration_ms": 96.0}}}},
    "format": "shiftbed-results/1", "results_dir": "/somewhere/two-jobs/20261130T020000Z",
}


def test_a_format_1_summary_still_loads(tmp_path):
    folder = write_example(tmp_path)
    (folder / "summary.json").write_text(json.dumps(FORMAT_1_SUMMARY))
    summary = load_results(folder).summary
    assert summary.format == "shiftbed-results/1" and summary.complete and summary.fidelity_ok
    job = summary.policies["none"].jobs["a"]
    assert job.error_pct == pytest.approx(10.0)  # computed from the two means where the summary lacks it
    assert job.iteration_se_ms is None and job.predicted_range_ms is None and job.knife_edge is None
    assert summary.gaps == () and summary.shared_link is None and summary.policies["none"].epoch_s is None
    again = summary.fidelity.measured_again[0]
    assert (again.measurement, again.mean_pct, again.peak_pct) == ("solo a", 8.2, None)
    assert summary.crosschecks.gate_bytes_in_window is None


def test_a_summary_of_a_newer_format_is_refused_in_one_line(tmp_path):
    folder = write_example(tmp_path)
    (folder / "summary.json").write_text(json.dumps({**FORMAT_1_SUMMARY, "format": "shiftbed-results/3"}))
    with pytest.raises(InputError, match="summary format 'shiftbed-results/3' is newer") as caught:
        load_results(folder)
    assert "\n" not in str(caught.value)


def test_what_the_runner_writes_reads_back_as_the_same_record(tmp_path):
    summary = load_results(write_example(tmp_path)).summary
    assert summary.format == FORMAT
    assert SummaryRecord.from_dict(json.loads(json.dumps(summary.to_dict()))) == summary
    gate_b = summary.policies["gate"].jobs["b"]
    assert gate_b.mean_iteration_ms == MEASURED_MS["gate"]["b"] and gate_b.predicted_iteration_ms == PREDICTED_MS["gate"]["b"]
    assert gate_b.error_pct == pytest.approx(error_pct("gate", "b"))


def test_keys_without_a_figure_are_left_out_as_format_1_did_and_the_others_are_null():
    job = JobSummary(iterations=12, mean_iteration_ms=300.0).to_dict()
    assert "burst_lead_ms" not in job and "burst_data_ms" not in job  # no bursts on the link
    assert "met_share_first" not in job and "mean_iteration_last_third_ms" not in job  # too few of them
    shares = {"met_share_first": 0.75, "met_share_last": 0.0, "mean_iteration_last_third_ms": 290.0}
    assert JobSummary.from_dict({"iterations": 12, "mean_iteration_ms": 300.0, **shares}).to_dict() == {
        **JobSummary(iterations=12, mean_iteration_ms=300.0).to_dict(), **shares}
    assert job["iteration_se_ms"] is None and job["knife_edge"] is None  # always there, null when unknown
    assert list(PolicySummary(jobs={}).to_dict()) == ["jobs", "epoch_s", "offsets_ms"]  # no `none` to compare with
    assert Crosschecks(capture_vs_portstats_util_err_pct=None).to_dict() == {"capture_vs_portstats_util_err_pct": None}


def test_a_folder_whose_run_wrote_no_summary_gets_the_whole_record(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")
    data = json.loads((writer.finish(False, "killed") / "summary.json").read_text())
    assert data["format"] == FORMAT and data["complete"] is False and data["incomplete_reason"] == "killed"
    assert data["scenario"] == "demo" and data["fidelity_ok"] is False and data["gaps"] == []
    assert data["fidelity"]["solo_rate_ratio"] is None and data["policies"] == {}


def test_a_run_stopped_before_its_fabric_came_up_still_has_a_summary(tmp_path):
    scenario = spec.load(REPO / "scenarios" / "classroom.yaml")
    experiment = Experiment(scenario, "", RunOptions(("none",), 1.0, tmp_path))
    experiment.writer = ResultsWriter(tmp_path, scenario.name)
    summary = experiment.summary(False, "FabricError: no OVS")
    assert summary.shared_link is None and summary.policies == {} and not summary.fidelity_ok
    assert summary.fidelity.advice == "fidelity was not confirmed"
    assert summary.crosschecks.to_dict() == {"capture_vs_portstats_util_err_pct": None}
    experiment.writer.finish(False, "test")


def test_each_policy_is_measured_beside_its_prediction_under_format_1s_keys():
    schedule = compute_schedule([JobTiming("a", 400, 100), JobTiming("b", 800, 100)])
    solo = {name: {"iteration_ms": 0.96 * period, "data_ms": 60.0, "lead_ms": 5.0, "burst_mbps": 50.0}
            for name, period in (("a", 400.0), ("b", 800.0))}
    record = PolicyRecord(duration_s=10.0)
    for policy, slower_ms in (("none", 40.0), ("gate", 0.0)):
        record.measured[policy] = {name: {"iterations": 20, "mean_iteration_ms": s["iteration_ms"] + slower_ms,
                                          "median_iteration_ms": s["iteration_ms"], "iteration_se_ms": None,
                                          "mean_comm_ms": 70.0} for name, s in solo.items()}
        record.offsets[policy] = dict(schedule.shifts_ms)
        record.epochs[policy] = 1.79e9
        record.bursts[policy] = pd.DataFrame()
    run = MeasuredRun(schedule, solo, {}, record.bursts, {"a": 2.0, "b": 2.0})
    policies = policy_summaries(run, record, link_mbps=50.0, queue_ms=0.0)
    gate = policies["gate"].to_dict()
    assert list(gate) == ["jobs", "epoch_s", "offsets_ms", "throughput_change_vs_none_pct",
                          "predicted_throughput_change_vs_none_pct"]
    assert gate["offsets_ms"] == dict(schedule.shifts_ms)  # what the run started each job at, kept
    assert list(gate["jobs"]["a"]) == [
        "iterations", "mean_iteration_ms", "median_iteration_ms", "iteration_se_ms", "mean_comm_ms",
        "predicted_iteration_ms", "predicted_range_ms", "busy_start_ms", "knife_edge", "solo_iteration_ms",
        "model_solo_iteration_ms", "model_quiet_bursts", "error_pct"]
    assert policies["none"].throughput_change_vs_none_pct == 0.0
    # by hand: measured 424 / 808 ms under none, 384 / 768 under gate (40 ms less each):
    # ((424 / 384 - 1) + (808 / 768 - 1)) / 2 = (0.104167 + 0.052083) / 2 = +7.8125 %
    assert policies["gate"].throughput_change_vs_none_pct == pytest.approx(7.8125)
    # feasible (100 + 100 <= gcd 400) and each solo iteration (384, 768 ms) shorter than its period:
    # every gated burst makes its window, so the model predicts the periods, 400 and 800 ms; the
    # measured 384 ms is (384 - 400) / 400 = -4.0 % off, and the predicted change against none (whose
    # jobs, started at the schedule's shifts, never meet: 384 / 768) is 384 / 400 - 1 = -4.0 %
    a = policies["gate"].jobs["a"]
    assert (a.predicted_iteration_ms, policies["gate"].jobs["b"].predicted_iteration_ms) == (400.0, 800.0)
    assert a.error_pct == pytest.approx(-4.0)
    assert policies["gate"].predicted_throughput_change_vs_none_pct == pytest.approx(-4.0)
    assert a.model_quiet_bursts == 0 and a.solo_iteration_ms == 384.0



@pytest.mark.parametrize("after_parting", [0, 5, 20])
def test_a_free_running_policy_is_predicted_together_and_apart_by_its_iterations_on_each_side(after_parting):
    """`none` starts a and b together (feasible: 100 + 100 <= gcd 400). Apart, from the schedule's
    shifts, their bursts never meet and each runs at its solo iteration; together, from 0 and 0, they
    meet every other iteration of a and run slower. Each job's prediction weighs the two by its
    iterations before and after the jobs parted; `shift` has one state only."""
    schedule = compute_schedule([JobTiming("a", 400, 100), JobTiming("b", 800, 100)])
    solo = {name: {"iteration_ms": 0.96 * period, "data_ms": 60.0, "lead_ms": 5.0, "burst_mbps": 50.0}
            for name, period in (("a", 400.0), ("b", 800.0))}
    record = PolicyRecord(duration_s=10.0)
    for policy in ("none", "shift"):
        record.measured[policy] = {name: {"iterations": 20, "mean_iteration_ms": s["iteration_ms"],
                                          "median_iteration_ms": s["iteration_ms"], "iteration_se_ms": None,
                                          "mean_comm_ms": 70.0, "bursts_after_parting": after_parting}
                                   for name, s in solo.items()}
        record.offsets[policy] = {"a": 0.0, "b": 0.0} if policy == "none" else dict(schedule.shifts_ms)
        record.epochs[policy] = 1.79e9
        record.bursts[policy] = pd.DataFrame()
    run = MeasuredRun(schedule, solo, {}, record.bursts, {"a": 2.0, "b": 2.0})
    policies = policy_summaries(run, record, link_mbps=50.0, queue_ms=0.0)
    a, b = policies["none"].jobs["a"], policies["none"].jobs["b"]
    assert a.apart_share == b.apart_share == after_parting / 20
    assert (a.predicted_apart_ms, b.predicted_apart_ms) == (pytest.approx(384.0), pytest.approx(768.0))
    assert a.predicted_together_ms > 384.0 + 10 and b.predicted_together_ms > 768.0 + 10
    share = after_parting / 20
    expected = (1 - share) * a.predicted_together_ms + share * a.predicted_apart_ms
    assert a.predicted_iteration_ms == pytest.approx(expected)
    assert a.error_pct == pytest.approx((384.0 - expected) / expected * 100)
    low, high = a.predicted_range_ms
    assert low <= a.predicted_iteration_ms <= high
    assert JobSummary.from_dict(a.to_dict()) == a  # kept in summary.json
    shift = policies["shift"].jobs["a"]
    assert shift.apart_share is None and "predicted_apart_ms" not in shift.to_dict()


UNMODELLED = REPO / "tests" / "policies" / "unmodelled.py"


@pytest.fixture
def unmodelled(policy_registry):
    """The policy the model cannot simulate (tests/policies/unmodelled.py), registered for one test."""
    from controller.theory.policies import load_policy_file

    return load_policy_file(UNMODELLED)[0]


def test_a_policy_the_model_cannot_simulate_keeps_its_measurement_and_says_why(unmodelled):
    from scenarios.exitcodes import PREDICTION_MISSING, run_exit_code

    schedule = compute_schedule([JobTiming("a", 400, 100), JobTiming("b", 800, 100)])
    solo = {name: {"iteration_ms": 0.96 * period, "data_ms": 60.0, "lead_ms": 5.0, "burst_mbps": 50.0}
            for name, period in (("a", 400.0), ("b", 800.0))}
    record = PolicyRecord(duration_s=10.0)
    for policy, slower_ms in (("none", 40.0), (unmodelled, 20.0)):
        record.measured[policy] = {name: {"iterations": 20, "mean_iteration_ms": s["iteration_ms"] + slower_ms,
                                          "median_iteration_ms": s["iteration_ms"], "iteration_se_ms": 1.5,
                                          "mean_comm_ms": 70.0} for name, s in solo.items()}
        record.offsets[policy] = {"a": 0.0, "b": 0.0}
        record.epochs[policy] = 1.79e9
        record.bursts[policy] = pd.DataFrame()
    run = MeasuredRun(schedule, solo, {}, record.bursts, {"a": 2.0, "b": 2.0})
    tracebacks: dict[str, str] = {}
    policies = policy_summaries(run, record, link_mbps=50.0, queue_ms=0.0, tracebacks=tracebacks)
    mine = policies[unmodelled]
    # measured as ever: 404 / 788 ms against none's 424 / 808
    assert mine.jobs["a"].mean_iteration_ms == 404.0 and mine.jobs["b"].iterations == 20
    assert mine.jobs["a"].iteration_se_ms == 1.5 and mine.jobs["a"].solo_iteration_ms == 384.0
    assert mine.throughput_change_vs_none_pct == pytest.approx(((424 / 404 - 1) + (808 / 788 - 1)) / 2 * 100)
    # no prediction, and why in one line; the traceback kept apart
    assert mine.jobs["a"].predicted_iteration_ms is None and mine.jobs["a"].error_pct is None
    assert mine.predicted_throughput_change_vs_none_pct is None
    assert mine.prediction_unavailable.startswith("ValueError: sharing must be one of")
    assert "\n" not in mine.prediction_unavailable and "by-queue-age" in mine.prediction_unavailable
    assert list(tracebacks) == [unmodelled] and "Traceback" in tracebacks[unmodelled]
    # the other policy is predicted as ever
    assert policies["none"].prediction_unavailable is None and policies["none"].jobs["a"].predicted_iteration_ms
    summary = SummaryRecord(complete=True, fidelity_ok=True, policies=policies)
    again = SummaryRecord.from_dict(json.loads(json.dumps(summary.to_dict())))
    assert again.predictions_missing == {unmodelled: mine.prediction_unavailable}
    assert again.policies[unmodelled].jobs["b"].mean_iteration_ms == 788.0
    assert run_exit_code(again) == PREDICTION_MISSING == 4
    assert "prediction_unavailable" not in policies["none"].to_dict()  # only where there is one
