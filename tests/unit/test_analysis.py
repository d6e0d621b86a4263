"""Measurements → numbers (scenarios/analysis/tables.py) on tables built here with known answers."""

import numpy as np
import pandas as pd
import pytest

from apps.dltjob import IterationLog
from apps.iterations import iteration_table
from scenarios.analysis import meetings
from scenarios.analysis import tables as analysis


def worker_rows():
    """Two iterations of job j (workers w1, w2) and one of job k, times in seconds."""
    return pd.DataFrame([
        # policy, job, worker, iteration, start, comm_start, comm_end, end, bytes
        ("none", "j", "w1", 0, 0.0, 0.2, 0.30, 0.30, 100),
        ("none", "j", "w2", 0, 0.0, 0.21, 0.32, 0.32, 100),
        ("none", "j", "w1", 1, 0.32, 0.52, 0.62, 0.62, 100),
        ("none", "j", "w2", 1, 0.32, 0.52, 0.60, 0.60, 100),
        ("none", "k", "w3", 0, 0.0, 0.5, 0.7, 0.7, 50),
    ], columns=["policy", "job", "worker", "iteration", "start", "comm_start", "comm_end", "end", "bytes"])


def test_iteration_ends_at_the_barrier_of_the_last_worker():
    it = iteration_table(worker_rows())
    j0 = it[(it.job == "j") & (it.iteration == 0)].iloc[0]
    assert j0.end == pytest.approx(0.32)
    assert j0.iteration_ms == pytest.approx(320.0)
    assert j0.comm_ms == pytest.approx(120.0)
    assert j0.bytes == 200


def test_the_drivers_csv_reads_into_the_iteration_table(tmp_path):
    log = IterationLog(str(tmp_path / "j.csv"))
    for row in worker_rows().to_dict("records"):
        log.write({**row, "retransmits": 0, "error": ""})
    log.close()
    it = iteration_table(pd.read_csv(tmp_path / "j.csv"))
    assert list(zip(it.job, it.iteration, strict=True)) == [("j", 0), ("j", 1), ("k", 0)]
    assert it.iteration_ms.tolist() == pytest.approx([320.0, 300.0, 700.0])
    assert it.comm_ms.tolist() == pytest.approx([120.0, 100.0, 200.0])


def test_the_standard_error_of_a_mean_comes_from_batch_means():
    # five batches of two: means 1, 3, 5, 7, 9, whose sd is sqrt(10); over sqrt(5): sqrt(2)
    assert analysis.batch_means_se(np.array([1, 1, 3, 3, 5, 5, 7, 7, 9, 9.0])) == pytest.approx(2 ** 0.5)
    # alternating 100 / 300 ms iterations: every batch of four has the same mean, so no noise
    assert analysis.batch_means_se(np.array([100.0, 300.0] * 10)) == pytest.approx(0.0)
    assert analysis.batch_means_se(np.arange(9.0)) is None  # fewer than two values a batch
    rows = pd.DataFrame({"policy": "gate", "job": "j", "worker": "h1", "iteration": range(12),
                         "start": [0.3 * k for k in range(12)], "comm_start": [0.3 * k + 0.2 for k in range(12)],
                         "comm_end": [0.3 * k + 0.3 for k in range(12)], "end": [0.3 * k + 0.3 for k in range(12)],
                         "bytes": 1})
    means = analysis.job_means(iteration_table(rows))
    assert means["j"]["iterations"] == 11 and means["j"]["iteration_se_ms"] == pytest.approx(0.0, abs=1e-9)


def test_one_missed_window_moves_the_mean_not_the_median():
    ends = [0.3 * k for k in range(1, 8)] + [0.3 * k + 0.3 for k in range(8, 12)]  # iteration 7 took 600 ms
    starts = [0.0] + ends[:-1]
    rows = pd.DataFrame({"policy": "gate", "job": "j", "worker": "h1", "iteration": range(11), "start": starts,
                         "comm_start": starts, "comm_end": ends, "end": ends, "bytes": 1})
    means = analysis.job_means(iteration_table(rows))["j"]
    assert means["median_iteration_ms"] == pytest.approx(300.0)
    assert means["mean_iteration_ms"] == pytest.approx(330.0)  # 10 iterations after the warm-up, one of 600


def test_job_means_skip_the_warmup_iteration():
    means = analysis.job_means(iteration_table(worker_rows()))
    assert means["j"]["iterations"] == 1
    assert means["j"]["mean_iteration_ms"] == pytest.approx(300.0)
    assert means["j"]["median_iteration_ms"] == pytest.approx(300.0)
    # a job with only its warm-up iteration still gets a figure
    assert means["k"]["iterations"] == 1 and means["k"]["mean_iteration_ms"] == pytest.approx(700.0)


def packets(times, wire, job_labels, src="10.0.0.1"):
    frame = pd.DataFrame({"time_s": np.asarray(times, float), "wire_bytes": wire, "payload_bytes": wire,
                          "src_ip": src, "dst_ip": "10.0.0.3", "proto": 6, "sport": 1, "dport": 2})
    return frame, pd.Series(job_labels, index=frame.index)


def test_bandwidth_bins_give_every_job_every_bin():
    # 1250 bytes in the first 10 ms bin = 1 Mbit/s; job b only in the third bin
    frame, labels = packets([100.001, 100.005, 100.025], [625, 625, 2500], ["a", "a", "b"])
    bins = analysis.bandwidth_bins(frame, labels, 100.0, 100.03)
    assert set(bins.job) == {"a", "b"}
    assert len(bins) == 6
    a = bins[bins.job == "a"].set_index("t_s").mbps
    assert a.loc[0.0] == pytest.approx(1.0)
    assert a.loc[0.01] == 0 and a.loc[0.02] == 0
    assert bins[(bins.job == "b") & (bins.t_s == 0.02)].mbps.iloc[0] == pytest.approx(2.0)


def test_burst_rate_is_bytes_over_the_burst_time_and_can_skip_slow_start():
    # 21 packets 1 ms apart, 6250 bytes each = 50 Mbit/s; the first 5 come 4 ms apart (slow start)
    times = list(0.004 * np.arange(5)) + list(0.016 + 0.001 * np.arange(1, 17))
    frame, labels = packets(times, [6250] * 21, ["a"] * 21)
    it = pd.DataFrame({"job": ["a"], "comm_start": [0.0], "comm_end": [1.0]})
    whole = analysis.burst_rates_mbps(frame, labels, it, {"10.0.0.1"})
    sustained = analysis.burst_rates_mbps(frame, labels, it, {"10.0.0.1"}, skip_fraction=0.5)
    assert whole[0] == pytest.approx(20 * 6250 * 8 / 0.032 / 1e6)
    assert sustained[0] == pytest.approx(50.0)
    # another direction's packets do not count
    assert len(analysis.burst_rates_mbps(frame, labels, it, {"10.0.0.9"})) == 0


def test_burst_spans_from_launch_and_between_data_packets():
    frame, labels = packets([0.010, 0.050, 0.090, 0.5], [1000, 1000, 1000, 1000], ["a", "a", "a", "b"])
    it = pd.DataFrame({"job": ["a"], "comm_start": [0.0], "comm_end": [0.1], "comm_ms": [100.0]})
    lead_ms, span_ms = analysis.burst_spans_ms(analysis.burst_spans(frame, labels, it), it)
    assert lead_ms == pytest.approx(10.0) and span_ms == pytest.approx(80.0)


def test_burst_spans_time_when_every_flow_of_a_burst_is_going():
    # job a: flow 1 starts 8 ms after launch, flow 2 (other ports) 30 ms; job b alone: 5 ms
    frame = pd.DataFrame({"time_s": [0.008, 0.030, 0.060, 0.070, 1.005, 1.050],
                          "wire_bytes": 1000, "payload_bytes": 1000, "src_ip": "10.0.0.1",
                          "dst_ip": "10.0.0.3", "proto": 6,
                          "sport": [5201, 5202, 5201, 5202, 5211, 5211], "dport": [5701] * 4 + [5711] * 2})
    labels = pd.Series(["a", "a", "a", "a", "b", "b"])
    it = pd.DataFrame({"job": ["a", "b"], "comm_start": [0.0, 1.0], "comm_end": [0.1, 1.1]})
    spans = analysis.burst_spans(frame, labels, it)
    assert spans["job"].tolist() == ["a", "b"]
    assert spans["lead_ms"].tolist() == pytest.approx([8.0, 5.0])
    assert spans["all_flows_ms"].tolist() == pytest.approx([30.0, 5.0])
    assert spans["data_ms"].tolist() == pytest.approx([62.0, 45.0])


def test_burst_medians_are_per_job_and_ignore_one_stalled_burst():
    spans = pd.DataFrame({"job": ["a", "a", "a", "b"], "lead_ms": [5.0, 6.0, 400.0, 9.0],
                          "all_flows_ms": [10.0, 12.0, 500.0, 20.0], "data_ms": [40.0, 44.0, 900.0, 70.0]})
    assert analysis.burst_medians_ms(spans) == {
        "a": {"burst_lead_ms": 6.0, "burst_all_flows_ms": 12.0, "burst_data_ms": 44.0},
        "b": {"burst_lead_ms": 9.0, "burst_all_flows_ms": 20.0, "burst_data_ms": 70.0}}
    assert analysis.burst_medians_ms(spans.iloc[:0]) == {}


def test_link_time_samples_add_a_late_start_to_the_data_phase():
    # three bursts: data 44, 50, 45 ms; the third starts 6 ms later than the median lead (4 ms)
    frame, labels = packets([0.004, 0.048, 1.003, 1.053, 2.010, 2.055], [1000] * 6, ["a"] * 6)
    it = pd.DataFrame({"job": ["a"] * 3, "comm_start": [0.0, 1.0, 2.0], "comm_end": [0.1, 1.1, 2.1],
                       "comm_ms": [100.0] * 3})
    spans = analysis.burst_spans(frame, labels, it)
    assert spans["lead_ms"].tolist() == pytest.approx([4.0, 3.0, 10.0])
    assert spans["data_ms"].tolist() == pytest.approx([44.0, 50.0, 45.0])
    assert analysis.link_time_samples_ms(spans) == pytest.approx([44.0, 49.0, 51.0])
    assert analysis.link_time_samples_ms(analysis.burst_spans(frame, labels, it.iloc[:0])) == []


def test_after_samples_are_each_bursts_time_after_its_data_less_the_median():
    # last data packets at 48, 1053 and 2055 ms; the iterations end at 55, 1058 and 2080 ms:
    # 7, 5 and 25 ms after the data; less the median: 0, -2, +18, whose median absolute
    # deviation is 2, so +18 is clipped to 3 × 1.4826 × 2
    frame, labels = packets([0.004, 0.048, 1.003, 1.053, 2.010, 2.055], [1000] * 6, ["a"] * 6)
    it = pd.DataFrame({"job": ["a"] * 3, "comm_start": [0.0, 1.0, 2.0], "comm_end": [0.1, 1.1, 2.1],
                       "end": [0.055, 1.058, 2.080], "comm_ms": [100.0] * 3})
    spans = analysis.burst_spans(frame, labels, it)
    assert spans["after_ms"].tolist() == pytest.approx([7.0, 5.0, 25.0])
    assert analysis.after_time_samples_ms(spans) == pytest.approx([0.0, -2.0, 3 * 1.4826 * 2])
    # without an end column, the comm phase's end stands for it
    spans = analysis.burst_spans(frame, labels, it.drop(columns="end"))
    assert spans["after_ms"].tolist() == pytest.approx([52.0, 47.0, 45.0])
    assert analysis.after_time_samples_ms(spans.iloc[:0]) == []


def test_a_busy_start_is_a_launch_while_another_jobs_data_is_on_the_link():
    # a's data 0.004-0.048 s and 1.003-1.053 s; b launches at 0.020 (during a's data: busy),
    # its data 0.035-0.060 (its lead 15 ms); at 0.500 (link idle: lead 6 ms) and at 1.010 (busy,
    # lead 12 ms); b alone has a 6-ms lead: busy starts cost 15 - 6 and 12 - 6 ms, median 7.5
    frame, labels = packets([0.004, 0.048, 1.003, 1.053, 0.035, 0.060, 0.506, 0.530, 1.022, 1.040],
                            [1000] * 10, ["a"] * 4 + ["b"] * 6)
    it = pd.DataFrame({"job": ["a", "a", "b", "b", "b"], "comm_start": [0.0, 1.0, 0.020, 0.500, 1.010],
                       "comm_end": [0.05, 1.06, 0.07, 0.54, 1.05]})
    spans = analysis.burst_spans(frame, labels, it)
    assert spans["busy_start"].tolist() == [False, False, True, False, True]
    assert spans.loc[spans.job == "b", "lead_ms"].tolist() == pytest.approx([15.0, 6.0, 12.0])
    extra = analysis.busy_start_extra_ms(spans, {"a": 4.0, "b": 6.0}, min_bursts=2)
    assert extra["b"] == pytest.approx(7.5)
    assert extra["a"] is None  # a never launched onto a busy link
    assert analysis.busy_start_extra_ms(spans, {"b": 6.0}) == {"b": None}  # two such bursts, fewer than three
    assert analysis.busy_start_extra_ms(pd.DataFrame(), {"b": 6.0}) == {"b": None}


def test_bursts_launched_together_both_start_busy():
    # a launches at 0.000 and b at 0.004 on an idle link (data 0.012-0.040 and 0.018-0.050): both
    # start their processes side by side, so both are busy starts; b again at 0.300, alone: not busy
    frame, labels = packets([0.012, 0.040, 0.018, 0.050, 0.306, 0.330], [1000] * 6, ["a"] * 2 + ["b"] * 4)
    it = pd.DataFrame({"job": ["a", "b", "b"], "comm_start": [0.0, 0.004, 0.300], "comm_end": [0.05, 0.06, 0.34]})
    spans = analysis.burst_spans(frame, labels, it)
    assert spans["busy_start"].tolist() == [True, True, False]
    # b launching at 0.011 instead: 11 ms after a, before a's data: both quiet
    it.loc[1, "comm_start"] = 0.011
    assert analysis.TOGETHER_S == 0.010
    assert analysis.burst_spans(frame, labels, it)["busy_start"].tolist() == [False, False, False]
    # ... and at 0.020, while a's data goes: only b's start is busy
    it.loc[1, "comm_start"] = 0.020
    frame.loc[frame.index[2], "time_s"] = 0.025
    assert analysis.burst_spans(frame, labels, it)["busy_start"].tolist() == [False, True, False]


def test_busy_start_samples_are_each_busy_starts_cost_clipped_and_never_below_zero():
    # b alone leads 10 ms; its busy starts led 4, 12, 13, 14 and 80 ms (one stalled start)
    spans = pd.DataFrame({"job": ["b"] * 6 + ["a"], "lead_ms": [4.0, 12.0, 13.0, 14.0, 80.0, 7.0, 30.0],
                          "busy_start": [True] * 5 + [False, True]})
    samples = analysis.busy_start_samples_ms(spans, {"a": 4.0, "b": 10.0})
    # median 13, MAD 1: the 80 counts as 13 + 3 x 1.4826 and the 4 as 13 - 3 x 1.4826, less than
    # the solo lead: 0, never a gain
    assert samples["b"] == pytest.approx((0.0, 2.0, 3.0, 4.0, 3 + 3 * 1.4826))
    assert samples["a"] == ()  # one busy start: fewer than three
    assert analysis.busy_start_extra_ms(spans, {"b": 10.0}) == {"b": pytest.approx(3.0)}  # their median
    assert analysis.busy_start_samples_ms(pd.DataFrame(), {"b": 6.0}) == {"b": ()}


def test_link_time_samples_clip_an_outlier_to_three_robust_sd():
    # median 52, median absolute deviation 1: the 90 ms burst counts as 52 + 3 × 1.4826
    spans = pd.DataFrame({"lead_ms": [5.0] * 5, "data_ms": [50.0, 51.0, 52.0, 53.0, 90.0]})
    assert analysis.link_time_samples_ms(spans) == pytest.approx([50.0, 51.0, 52.0, 53.0, 52 + 3 * 1.4826])


def test_port_tx_bytes_between_the_nearest_samples():
    stats = pd.DataFrame({"time_s": [10.0, 10.1, 10.2, 10.3], "dpid": 257, "port": 3,
                          "tx_bytes": [0, 1000, 5000, 9000]})
    tx, t0, t1 = analysis.port_tx_bytes(stats, 257, 3, 10.09, 10.31)
    assert (tx, t0, t1) == (8000.0, 10.1, 10.3)
    assert analysis.port_tx_bytes(stats, 258, 3, 10.0, 10.3)[0] == 0.0


def test_retransmitted_segments_count_once():
    frame, _ = packets([1.0, 1.1, 1.2, 1.3], [1000, 1000, 1000, 0], ["a"] * 4)
    frame["seq"] = [100, 1100, 100, 2100]  # the third packet resends the first
    assert analysis.unique_payload_bytes(frame) == 2000
    frame.loc[2, "sport"] = 9  # another flow with the same sequence number is not a resend
    assert analysis.unique_payload_bytes(frame) == 3000


def test_percent_error():
    assert analysis.percent_error(110, 100) == pytest.approx(10.0)
    assert analysis.percent_error(1, 0) is None


def test_a_quiet_burst_met_no_other_jobs_burst_from_launch_to_end():
    # a's bursts: 0.00-0.06 s (b launches at 0.05, before a's ends: neither is quiet) and 1.00-1.06
    # (alone: quiet); b's second burst 2.00-2.08 is alone, but b's iteration 0 (not among the
    # bursts measured) ran 1.03-1.09 and so a's second burst met it when ``everyone`` is given
    frame, labels = packets([0.004, 0.040, 1.004, 1.040, 0.055, 0.070, 2.004, 2.060],
                            [1000] * 8, ["a"] * 4 + ["b"] * 4)
    it = pd.DataFrame({"job": ["a", "a", "b", "b"], "comm_start": [0.0, 1.0, 0.05, 2.0],
                       "comm_end": [0.06, 1.06, 0.08, 2.08], "end": [0.06, 1.06, 0.08, 2.08]})
    spans = analysis.burst_spans(frame, labels, it)
    assert spans["quiet"].tolist() == [False, True, False, True]
    assert spans["met"].tolist() == [("b",), (), ("a",), ()]
    everyone = pd.concat([it, pd.DataFrame({"job": ["b"], "comm_start": [1.03], "comm_end": [1.09],
                                            "end": [1.09]})], ignore_index=True)
    assert analysis.burst_spans(frame, labels, it, everyone)["quiet"].tolist() == [False, False, False, True]


def test_busy_after_samples_are_the_after_phases_of_bursts_that_met_others_less_the_usual():
    met = [(), ("b",), ("b",), ("b", "c"), ("c",), ("c",), ("c",), ("a",)]
    spans = pd.DataFrame({"job": ["a"] * 7 + ["b"], "after_ms": [8.0, 20.0, 25.0, 30.0, 3.0, 12.0, 14.0, 40.0],
                          "quiet": [not m for m in met], "met": met})
    # a shares a link with b, not with c: beside b (or b and c) 20, 25, 30 ms; beside c only 3, 12, 14
    assert analysis.busy_after_samples_ms(spans, "a", 10.0, {frozenset("ab")}) == {
        "shared": pytest.approx((10.0, 15.0, 20.0)), "apart": pytest.approx((0.0, 2.0, 4.0))}
    # without the pairs, every job shares a link with every other
    assert analysis.busy_after_samples_ms(spans, "a", 10.0) == {
        "shared": pytest.approx((10.0, 15.0, 20.0, 0.0, 2.0, 4.0))}
    assert analysis.busy_after_samples_ms(spans, "b", 10.0) == {}  # one such burst: too few
    assert analysis.busy_after_samples_ms(spans.drop(columns="met"), "a", 10.0) == {}
    assert analysis.busy_after_samples_ms(spans.iloc[:0], "a", 10.0) == {}


def test_speed_drift_is_the_quiet_bursts_median_launch_to_end_against_the_solo_bursts():
    def spans(job, lead_ms, quiet=True):
        n = len(lead_ms)
        return pd.DataFrame({"job": [job] * n, "lead_ms": lead_ms, "data_ms": [50.0] * n,
                             "after_ms": [10.0] * n, "quiet": [quiet] * n})

    solo = {"a": spans("a", [10.0] * 5), "b": spans("b", [10.0] * 5)}
    later = pd.concat([spans("a", [18.0, 20.0, 22.0, 20.0, 30.0]),  # 10 ms later (median)
                       spans("a", [90.0] * 9, quiet=False),  # met another job's burst: not counted
                       spans("b", [4.0] * 4)])  # four quiet bursts only
    drift = analysis.speed_drift_ms(solo, later)
    assert drift["a"] == pytest.approx(10.0)
    assert drift["b"] is None
    assert analysis.speed_drift_ms(solo, later, min_bursts=4)["b"] == pytest.approx(-6.0)
    assert analysis.speed_drift_ms(solo, pd.DataFrame()) == {"a": None, "b": None}
    # a job that keeps its clock is moved by its data phases only: later starts take nothing
    assert analysis.speed_drift_ms(solo, later, frozenset({"a"}))["a"] == pytest.approx(0.0)
    longer = spans("a", [10.0] * 5).assign(data_ms=57.0)
    assert analysis.speed_drift_ms(solo, longer, frozenset({"a"}))["a"] == pytest.approx(7.0)


def test_a_burst_150_ms_or_more_over_its_runs_median_stalled():
    # a parameter server's solo run: 127-143 ms, or 340-376 ms after a retransmission timeout
    comm = pd.Series([130.0, 350.0, 137.0, 133.0, 356.0, 127.0, 143.0])
    assert analysis.STALL_MS == 150.0
    assert analysis.stalled_bursts(comm) == 2
    assert analysis.stalled_bursts(pd.Series([130.0, 279.0, 140.0])) == 0  # 139 over the median
    assert analysis.stalled_bursts(pd.Series(dtype=float)) == 0


def test_the_last_third_of_the_iterations_is_measured_apart_from_the_whole_run():
    # by hand: 10 iterations after the warm-up, the first four 400 ms, the rest 300 ms; a third is
    # 10 // 3 = 3 iterations, the last three 300 ms, the whole run (4 x 400 + 6 x 300) / 10 = 340 ms
    lengths = [0.4] * 5 + [0.3] * 6  # the warm-up iteration (400 ms) is skipped
    ends = list(np.cumsum(lengths))
    starts = [0.0] + ends[:-1]
    rows = pd.DataFrame({"policy": "none", "job": "j", "worker": "h1", "iteration": range(11), "start": starts,
                         "comm_start": starts, "comm_end": ends, "end": ends, "bytes": 1})
    means = analysis.job_means(iteration_table(rows))["j"]
    assert means["mean_iteration_ms"] == pytest.approx(340.0)
    assert means["mean_iteration_last_third_ms"] == pytest.approx(300.0)
    short = analysis.job_means(iteration_table(rows[rows["iteration"] < 6]))["j"]  # 5 after the warm-up
    assert "mean_iteration_last_third_ms" not in short


def spans_of(bursts):
    """A spans table (analysis.burst_spans' columns that meeting_shares reads) from (job, first, last) in s."""
    return pd.DataFrame({"job": [b[0] for b in bursts], "first_s": [b[1] for b in bursts],
                         "last_s": [b[2] for b in bursts]})


def test_meeting_shares_follow_jobs_that_sort_themselves_apart():
    # a and b burst every second, 100 ms of data each; for three bursts b starts with a (full overlap),
    # for three it starts 50 ms after a's start (half of each data phase beside the other's), then
    # never meets it; c shares no link with a and always bursts with it
    bursts = []
    for k in range(9):
        b_at = [0.0, 0.0, 0.0, 0.05, 0.05, 0.05, 0.5, 0.5, 0.5][k]
        bursts += [("a", k, k + 0.1), ("b", k + b_at, k + b_at + 0.1), ("c", k, k + 0.1)]
    meets = {frozenset(("a", "b"))}
    shares = meetings.meeting_shares(spans_of(bursts), meets)
    assert shares["a"] == pytest.approx({"met_share_first": 1.0, "met_share_last": 0.0})
    assert shares["b"] == pytest.approx({"met_share_first": 1.0, "met_share_last": 0.0})
    assert shares["c"] == pytest.approx({"met_share_first": 0.0, "met_share_last": 0.0})  # meets no one
    assert meetings.meeting_shares(spans_of(bursts), meets, parts=9) == {}  # 9 bursts, fewer than 2 x 9
    # without the link's pairs every other job counts: a always bursts beside c
    assert meetings.meeting_shares(spans_of(bursts))["a"] == pytest.approx(
        {"met_share_first": 1.0, "met_share_last": 1.0})


def test_a_meeting_counts_the_time_two_others_cover_together_once():
    # a's data 0-100 ms; b beside it 0-60 ms and c 40-80 ms: together 0-80 ms, 0.8 of a's data phase
    bursts = [("a", k, k + 0.1) for k in range(6)] + [("b", k, k + 0.06) for k in range(6)] \
        + [("c", k + 0.04, k + 0.08) for k in range(6)]
    shares = meetings.meeting_shares(spans_of(bursts))
    assert shares["a"] == pytest.approx({"met_share_first": 0.8, "met_share_last": 0.8})
    assert meetings.meeting_shares(pd.DataFrame()) == {}


def test_each_bursts_met_share_counts_only_jobs_it_meets():
    # a's data 0-100 ms, b's 50-150 ms (half of each beside the other), c's 0-100 ms shares no link
    bursts = [("a", 0.0, 0.1), ("b", 0.05, 0.15), ("c", 0.0, 0.1)]
    shares = meetings.burst_met_shares(spans_of(bursts), {frozenset(("a", "b"))})
    assert shares == pytest.approx([0.5, 0.5, 0.0])
    assert len(meetings.burst_met_shares(pd.DataFrame())) == 0


def test_the_jobs_parted_where_a_step_fits_their_meetings_best():
    # a and b burst every second for 12 s, 100 ms of data each; b starts with a for its first four
    # bursts (full meetings: share 1), then 500 ms after it, except one brush in the tenth: 30 ms
    # beside a's (b 70 ms after a's start), share 0.3 for both. The step before the fifth
    # bursts leaves 16 bursts after it with a mean share 0.6 / 16 = 0.04 (at most 0.10): each job has
    # 8 after the parting; the brush does not move it.
    lag = [0.0] * 4 + [0.5] * 5 + [0.07] + [0.5] * 2
    bursts = [burst for k in range(12) for burst in (("a", k, k + 0.1), ("b", k + lag[k], k + lag[k] + 0.1))]
    meets = {frozenset(("a", "b"))}
    assert meetings.APART_MET_SHARE == 0.10 and meetings.APART_MIN_BURSTS == 3
    assert meetings.bursts_after_parting(spans_of(bursts), meets) == {"a": 8, "b": 8}
    # meeting all through: no step
    together = [burst for k in range(12) for burst in (("a", k, k + 0.1), ("b", k, k + 0.1))]
    assert meetings.bursts_after_parting(spans_of(together), meets) == {"a": 0, "b": 0}
    # a pair that meets every other iteration has no step either: no stretch after one is quiet enough
    alternate = [burst for k in range(12) for burst in (("a", k, k + 0.1), ("b", k + (k % 2) * 0.5, k + (k % 2) * 0.5 + 0.1))]
    assert meetings.bursts_after_parting(spans_of(alternate), meets) == {"a": 0, "b": 0}
    # parted only for the last two bursts each: fewer than three, not parted
    late = [burst for k in range(12) for burst in (("a", k, k + 0.1), ("b", k + (0.5 if k >= 10 else 0.0), k + (0.6 if k >= 10 else 0.1)))]
    assert meetings.bursts_after_parting(spans_of(late), meets) == {"a": 0, "b": 0}
    # never met: every burst is apart
    apart = [burst for k in range(8) for burst in (("a", k, k + 0.1), ("b", k + 0.5, k + 0.6))]
    assert meetings.bursts_after_parting(spans_of(apart), meets) == {"a": 8, "b": 8}
    assert meetings.bursts_after_parting(pd.DataFrame(), meets) == {}
