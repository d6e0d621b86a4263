"""A policy's throughput change against `none`, its 95 % interval and the verdict it gives: computed once
(`scenarios/analysis/verdict.py`) and said alike by report.md, report.html, `compare` and `run --json`."""

import math
import re

import numpy as np
import pytest
import results_example as ex
from coprime_run import ITERATION_MS
from results_format1 import write_format1_example

from scenarios.analysis import compare, verdict
from scenarios.analysis.tables import batch_means_se
from scenarios.report.draw import draw_report
from scenarios.report.terminal import results_json
from scenarios.results import load_results
from scenarios.summary_record import JobSummary, PolicySummary, SummaryRecord


def summary_of(samples: dict[str, dict[str, tuple[float, ...]]]) -> SummaryRecord:
    """The summary a run of these iteration times (ms, the first iteration left out) records: each job's
    count, mean and batch-means standard error; no throughput change, so the verdict works it out."""
    return SummaryRecord(policies={
        policy: PolicySummary(jobs={job: JobSummary(iterations=len(ms), mean_iteration_ms=float(np.mean(ms)),
                                                    iteration_se_ms=batch_means_se(np.array(ms)))
                                    for job, ms in jobs.items()})
        for policy, jobs in samples.items()})


def test_the_interval_of_one_job_by_hand():
    """none 200 ± 2 ms, the policy 100 ± 1 ms: +100 %; variance (100·2·2/200)² + (100·2·1/100)² = 8 on
    Welch–Satterthwaite's 64 / (16/4 + 16/4) = 8 degrees of freedom: t = 2.306, half-width 6.52."""
    half = verdict.change_half_width_pct({"a": 100.0}, {"a": 1.0}, {"a": 200.0}, {"a": 2.0})
    assert half == pytest.approx(2.306 * math.sqrt(8))
    assert verdict.change_half_width_pct({"a": 100.0}, {"a": 0.0}, {"a": 200.0}, {"a": 0.0}) == 0.0
    assert verdict.change_half_width_pct({"a": 100.0}, {"a": None}, {"a": 200.0}, {"a": 2.0}) is None


def test_the_interval_covers_the_true_change_about_95_times_in_100():
    """Two jobs, 50 iterations each under both policies, noise of 5 % of the mean: over 400 draws the
    interval built from batch-means standard errors holds the true change 90 to 99 % of the time."""
    rng = np.random.default_rng(11)
    true_ms = {"none": {"a": 120.0, "b": 230.0}, "gate": {"a": 100.0, "b": 200.0}}
    truth = sum(true_ms["none"][j] / true_ms["gate"][j] - 1 for j in ("a", "b")) / 2 * 100
    held = 0
    for _ in range(400):
        draws = {p: {j: rng.normal(ms, 0.05 * ms, 50) for j, ms in jobs.items()} for p, jobs in true_ms.items()}
        means = {p: {j: float(x.mean()) for j, x in jobs.items()} for p, jobs in draws.items()}
        se = {p: {j: batch_means_se(x) for j, x in jobs.items()} for p, jobs in draws.items()}
        change = sum(means["none"][j] / means["gate"][j] - 1 for j in ("a", "b")) / 2 * 100
        half = verdict.change_half_width_pct(means["gate"], se["gate"], means["none"], se["none"])
        held += change - half <= truth <= change + half
    assert 0.90 <= held / 400 <= 0.99, held


def test_the_coprime_runs_shift_is_within_the_noise_and_its_gate_hurts():
    """The demo's coprime pair at 12 s a policy (tests/unit/coprime_run.py): `shift` moved throughput by
    +0.1 %, an interval of about ±1.8 % around it, so it neither helps nor hurts; `gate` loses 41 %."""
    changes = verdict.policy_changes(summary_of(ITERATION_MS))
    shift, gate = changes["shift"], changes["gate"]
    assert shift.interval_text() == "+0.1 % [-1.6, +1.9]" and shift.verdict == verdict.NEUTRAL
    assert gate.interval_text() == "-41.2 % [-43.7, -38.7]" and gate.verdict == verdict.HURTS
    assert changes["none"].verdict is None and changes["none"].change_pct == 0.0
    said = verdict.headline(changes)
    assert said.startswith("no policy beat `none` beyond the noise (`gate` hurt); the largest change was "
                           "`shift`, +0.1 % [-1.6, +1.9]; the interval is too wide to tell")
    assert "won" not in said and "helps" not in said


def test_a_change_too_wide_to_tell_says_how_long_a_run_would_tell():
    """±1.8 % against the 1 % threshold over a 12.1-s span: (1.78 / 1)² × 12.1 s ≈ 38.4 s a policy."""
    shift = verdict.policy_changes(summary_of(ITERATION_MS))["shift"]
    assert shift.too_wide
    span_s = max(len(ms) * np.mean(ms) / 1000 for p in ("none", "shift") for ms in ITERATION_MS[p].values())
    assert shift.span_s == pytest.approx(span_s)
    assert shift.duration_to_tell_s == pytest.approx(span_s * shift.half_width_pct ** 2)
    needed = math.ceil(shift.duration_to_tell_s)
    assert (f"±{shift.half_width_pct:.1f} % against the 1 % threshold): about {math.ceil(needed - span_s)} s more "
            f"per policy (`--duration {needed}`) would narrow it to ±1 %") in verdict.headline({"shift": shift})


def test_a_run_four_times_as_long_halves_the_interval_as_the_estimate_of_a_telling_run_takes():
    """The time a run would need to tell takes the half-width to shrink with the square root of the
    iterations. Simulated: 200 draws of two jobs with 8 % noise at 30 and at 120 iterations; the mean
    half-width of the longer is half the shorter's, within 10 %."""
    rng = np.random.default_rng(3)
    true_ms = {"none": {"a": 400.0, "b": 600.0}, "shift": {"a": 400.0, "b": 600.0}}

    def mean_half(n):
        halves = []
        for _ in range(200):
            draws = {p: {j: rng.normal(ms, 0.08 * ms, n) for j, ms in jobs.items()} for p, jobs in true_ms.items()}
            means = {p: {j: float(x.mean()) for j, x in jobs.items()} for p, jobs in draws.items()}
            se = {p: {j: batch_means_se(x) for j, x in jobs.items()} for p, jobs in draws.items()}
            halves.append(verdict.change_half_width_pct(means["shift"], se["shift"], means["none"], se["none"]))
        return np.mean(halves)

    assert mean_half(30) / mean_half(120) == pytest.approx(2.0, rel=0.10)


def test_a_clear_gain_helps_and_in_short_names_it():
    """30 iterations with 5 % noise, `shift` 100 and 200 ms where `none` takes 120 and 230: about +17.5 %."""
    rng = np.random.default_rng(5)
    true_ms = {"none": {"a": 120.0, "b": 230.0}, "shift": {"a": 100.0, "b": 200.0}}
    samples = {p: {j: tuple(rng.normal(ms, 0.05 * ms, 30)) for j, ms in jobs.items()} for p, jobs in true_ms.items()}
    shift = verdict.policy_changes(summary_of(samples))["shift"]
    assert shift.verdict == verdict.HELPS and shift.low_pct > 1.0 and not shift.too_wide
    assert shift.duration_to_tell_s is None
    assert verdict.headline({"shift": shift}) == (f"`shift` helps: {shift.interval_text()} throughput vs `none`, "
                                                  "its whole 95 % interval above +1 %")


@pytest.mark.parametrize("change, half, expected", [
    (5.0, 3.9, "helps"), (5.0, 4.0, "neutral"),  # the interval must be wholly above the threshold
    (-5.0, 3.9, "hurts"), (-5.0, 4.0, "neutral"), (0.5, 0.2, "neutral"), (3.0, None, None)])
def test_the_verdict_is_the_sweeps_word_for_where_the_whole_interval_lies(change, half, expected):
    assert verdict.THRESHOLD_PCT == 1.0  # the sweep's HELPS_THRESHOLD, 0.01, in percent
    assert verdict.PolicyChange("p", change, half).verdict == expected
    assert expected is None or expected in verdict.OUTCOMES


def test_without_an_interval_in_short_says_too_few_iterations_and_the_run_that_gives_one():
    """A 600-ms job with 9 iterations has no standard error; 11 iterations of the longest mean give it one."""
    samples = {p: dict(jobs) for p, jobs in ITERATION_MS.items() if p != "gate"}
    samples["shift"]["beta"] = samples["shift"]["beta"][:9]
    shift = verdict.policy_changes(summary_of(samples))["shift"]
    assert shift.verdict is None and shift.too_wide and shift.low_pct is None
    longest_s = max(np.mean(ms) for jobs in samples.values() for ms in jobs.values()) / 1000
    assert shift.duration_to_tell_s == pytest.approx(11 * longest_s)
    said = verdict.headline({"shift": shift})
    assert said.startswith("no policy differed from `none` beyond the noise; the largest change was `shift`, ")
    assert said.endswith("too few iterations to tell: a job had under 10, so there is no interval; a "
                         "`--duration` of at least 7 s gives every job one")


def test_when_every_policy_hurts_in_short_names_the_least_loss():
    changes = {"gate": verdict.PolicyChange("gate", -40.0, 2.0), "align": verdict.PolicyChange("align", -10.0, 2.0)}
    assert verdict.headline(changes) == ("every policy hurt against `none` beyond the noise; the least was "
                                         "`align`, -10.0 % [-12.0, -8.0]")


def test_a_run_without_none_has_nothing_to_compare():
    samples = {"shift": ITERATION_MS["shift"], "gate": ITERATION_MS["gate"]}
    changes = verdict.policy_changes(summary_of(samples))
    assert all(c.change_pct is None and c.verdict is None for c in changes.values())
    assert verdict.headline(changes) == "no policy to compare with `none`"


@pytest.mark.parametrize("write", [ex.write_example, write_format1_example])
def test_report_md_html_compare_and_json_give_the_same_interval_and_verdict(write, tmp_path):
    """One folder, four readers. The example's summaries lack most standard errors (format 1 records
    none): each reader takes them from iterations.csv alike."""
    folder = write(tmp_path / "results")
    changes = verdict.folder_changes(load_results(folder))
    paths = draw_report(folder)
    report_md, report_html = paths[-1].read_text(), paths[-2].read_text()
    table = compare.compare_table([load_results(folder)])
    runs = results_json(folder)
    for policy in ("shift", "gate"):
        change = changes[policy]
        assert change.low_pct is not None and change.verdict in verdict.OUTCOMES
        bounds = change.bounds_text()
        assert re.search(rf"\| {policy} \| {re.escape(f'{change.change_pct:+.1f} %')} \| {re.escape(bounds)} "
                         rf"\| {change.verdict} \|", report_md)
        assert f"<td class=\"num\">{bounds}</td><td>{change.verdict}</td>" in report_html
        row = table[table["policy"] == policy].iloc[0]
        assert f"[{row['throughput_change_low_pct']:+.1f}, {row['throughput_change_high_pct']:+.1f}]" == bounds
        assert row["throughput_verdict"] == change.verdict
        entry = runs["policies"][policy]
        low, high = entry["throughput_change_vs_none_ci95"]
        assert f"[{low:+.1f}, {high:+.1f}]" == bounds and entry["throughput_verdict"] == change.verdict
    said = verdict.headline(changes)
    assert f"- Policies: {said}." in report_md and runs["policy_verdict"] == said
