"""The job emulator's iteration logic against a fake clock and a fake transport."""

import csv
import math
import os
import subprocess
import sys
from itertools import pairwise

import pytest

from apps.dltjob import (
    LATE_LAUNCH_GUARD_MS,
    WINDOW_TOLERANCE_MS,
    IterationLog,
    JobDriver,
    late_launch_ms,
    launch_overhead_ms,
    next_window_start,
    phases_csv_path,
)
from apps.jobmodel import (
    PHASE_CSV_FIELDS,
    JobPlan,
    JobSpec,
    TransferResult,
    Worker,
    burst_bytes,
    collective,
    data_flows,
    flow_burst_bytes,
    gradient_bytes,
    iteration_phases,
    pattern_phases,
    phase_bytes,
)
from controller.theory.phases import JobPattern, Phase, busy_ms


class FakeClock:
    def __init__(self, t_s=1000.0):
        self.t_s = t_s

    def now(self):
        return self.t_s

    def sleep_until(self, t_s):
        self.t_s = max(self.t_s, t_s)


class FakeTransport:
    """Every flow of a phase takes ``duration_s`` (or what ``durations`` yields), all together."""

    def __init__(self, clock, duration_s):
        self.clock, self.duration_s, self.launches = clock, duration_s, []

    def __call__(self, phase):
        start = self.clock.now()
        self.launches.append(start)
        d = self.duration_s() if callable(self.duration_s) else self.duration_s
        self.clock.t_s = start + d
        return [TransferResult(t, start, start + d, t.nbytes) for t in phase]


def diffs(xs):
    return [b - a for a, b in pairwise(xs)]


WORKERS = tuple(Worker(f"h{i}", f"10.0.0.{i}") for i in range(1, 5))


def spec(**kw):
    args = dict(name="a", period_ms=200.0, comm_ms=50.0, workers=WORKERS[:2], link_mbps=80.0)
    args.update(kw)
    return JobSpec(**args)


def run(job, plan, duration_s, iterations=4, lead_ms=0.0):
    clock = FakeClock()
    rows = []
    transport = FakeTransport(clock, duration_s)
    JobDriver(job, plan, transport, rows.append, clock=clock, launch_lead_ms=lead_ms).run(iterations)
    return rows, transport


def test_burst_bytes_fill_comm_at_link_rate():
    assert burst_bytes(100.0, 80.0, 1.0) == 1_000_000
    assert burst_bytes(100.0, 80.0, 0.5) == 500_000


def test_ring_sends_2_n_minus_1_over_n_gradient_to_successor():
    job = spec(workers=WORKERS, fill=1.0)
    (phase,) = collective(job)
    assert [(t.src.name, t.dst.name) for t in phase] == [("h1", "h2"), ("h2", "h3"), ("h3", "h4"), ("h4", "h1")]
    grad = gradient_bytes(job)
    assert all(abs(t.nbytes - 2 * 3 / 4 * grad) <= 1 for t in phase)
    assert abs(phase[0].nbytes - burst_bytes(50.0, 80.0, 1.0)) <= 2  # a solo flow takes comm_ms
    assert len({t.port for t in phase}) == len({t.cport for t in phase}) == 4


def test_ps_pushes_then_pulls():
    job = spec(workers=WORKERS[:3], pattern="ps")
    push, pull = collective(job)
    assert {(t.src.name, t.dst.name) for t in push} == {("h2", "h1"), ("h3", "h1")}
    assert {(t.src.name, t.dst.name) for t in pull} == {("h1", "h2"), ("h1", "h3")}
    assert [(f["tcp_src"], f["tcp_dst"]) for f in data_flows(job)] == [(p, 16384 + p) for p in range(5201, 5205)]


def test_none_first_burst_at_epoch_then_free_running():
    plan = JobPlan("none", epoch_s=1001.0, offset_ms=0.0, period_ms=200.0, window_ms=50.0)
    rows, transport = run(spec(), plan, duration_s=0.08)
    assert transport.launches[0] == pytest.approx(1001.0)
    assert rows[0]["start"] == pytest.approx(1001.0 - 0.15)
    # free: each iteration = compute 150 ms + comm 80 ms, no waiting
    starts = [r["start"] for r in rows if r["worker"] == "h1"]
    assert diffs(starts) == pytest.approx([0.23] * 3)


def test_shift_offsets_first_burst_only():
    plan = JobPlan("shift", epoch_s=1001.0, offset_ms=70.0, period_ms=200.0, window_ms=50.0)
    rows, transport = run(spec(), plan, duration_s=0.08)
    assert transport.launches[0] == pytest.approx(1001.07)
    assert transport.launches[1] == pytest.approx(1001.07 + 0.08 + 0.15)


def test_gate_waits_for_next_window_every_iteration():
    plan = JobPlan("gate", epoch_s=1001.0, offset_ms=70.0, period_ms=200.0, window_ms=50.0)
    rows, transport = run(spec(), plan, duration_s=0.08, iterations=5)
    # the 80 ms burst overruns the 50 ms window: compute ends 30 ms past the next edge, so
    # every comm phase waits for the window after that one
    windows = [1001.07 + 0.2 * m for m in range(20)]
    for t in transport.launches:
        assert min(abs(t - w) for w in windows) < 1e-9
    assert diffs(transport.launches) == pytest.approx([0.4] * 4)


def test_gate_with_lead_launches_before_window_and_keeps_period():
    plan = JobPlan("gate", epoch_s=1001.0, offset_ms=0.0, period_ms=200.0, window_ms=50.0)
    rows, transport = run(spec(), plan, duration_s=0.045, iterations=5, lead_ms=10.0)
    assert transport.launches == pytest.approx([1001.0 - 0.01 + 0.2 * m for m in range(5)])
    ends = [r["end"] for r in rows if r["worker"] == "h1"]
    assert diffs(ends) == pytest.approx([0.2] * 4)


def test_a_late_burst_launches_into_its_window_while_it_still_fits():
    # a 100-ms window and bursts of 60 ms alone: one ready up to 100 - 60 - 10 = 30 ms after its
    # window opened goes at once; without the burst's length, only up to 2 ms late
    assert late_launch_ms(100.0, 60.0) == pytest.approx(100.0 - 60.0 - LATE_LAUNCH_GUARD_MS)
    assert late_launch_ms(100.0, None) == WINDOW_TOLERANCE_MS
    assert late_launch_ms(100.0, 95.0) == WINDOW_TOLERANCE_MS  # never less than that
    plan = JobPlan("gate", epoch_s=1001.0, offset_ms=0.0, period_ms=300.0, window_ms=100.0)
    job = spec(period_ms=300.0, comm_ms=75.0)  # compute: 225 ms
    # bursts at 1001.0 and 1001.3; the second takes 95 ms, so compute ends at 1001.62,
    # 20 ms after the window at 1001.6 opened
    for burst_ms, third_launch_s in ((60.0, 1001.62), (None, 1001.9)):
        clock = FakeClock()
        transport = FakeTransport(clock, iter([0.060, 0.095, 0.060]).__next__)
        JobDriver(job, plan, transport, lambda r: None, clock=clock, burst_ms=burst_ms).run(3)
        assert transport.launches == pytest.approx([1001.0, 1001.3, third_launch_s])


def test_jitter_is_bounded_uniform_and_seeded():
    plan = JobPlan("none", epoch_s=1001.0, offset_ms=0.0, period_ms=200.0, window_ms=50.0)
    job = spec(jitter_ms=10.0, seed=3)
    rows, transport = run(job, plan, duration_s=0.05, iterations=30)
    gaps = diffs(transport.launches)
    computes = [g - 0.05 for g in gaps]
    assert all(0.14 - 1e-9 <= c <= 0.16 + 1e-9 for c in computes)
    assert len({round(c, 6) for c in computes}) > 10
    assert run(job, plan, 0.05, 30)[1].launches == transport.launches


def test_barrier_end_is_slowest_flow_and_rows_per_worker():
    clock = FakeClock()
    job = spec(workers=WORKERS[:3])
    plan = JobPlan("none", epoch_s=1001.0, offset_ms=0.0, period_ms=200.0, window_ms=50.0)

    def transport(phase):
        start = clock.now()
        out = [TransferResult(t, start, start + 0.01 * (i + 1), t.nbytes) for i, t in enumerate(phase)]
        clock.t_s = start + 0.03
        return out

    rows = []
    JobDriver(job, plan, transport, rows.append, clock=clock).run(1)
    assert [r["worker"] for r in rows] == ["h1", "h2", "h3"]
    assert [r["end"] for r in rows] == pytest.approx([1001.03] * 3)
    # h1 sends at +10 ms, receives (from h3) until +30 ms
    assert rows[0]["comm_end"] == pytest.approx(1001.03)


def test_stop_and_until(tmp_path):
    plan = JobPlan("none", epoch_s=1001.0, offset_ms=0.0, period_ms=200.0, window_ms=50.0)
    clock = FakeClock()
    n = JobDriver(spec(), plan, FakeTransport(clock, 0.05), lambda r: None, clock=clock).run(until_s=1002.0)
    assert n == 6  # iterations start at 1000.85 + 0.2 k; the 6th starts at 1001.85 < 1002


def test_the_driver_says_how_early_it_was_ready_for_iteration_0():
    clock = FakeClock(1000.0)
    on_time = JobDriver(spec(), JobPlan("none", 1001.0, 0.0, 200.0, 50.0), FakeTransport(clock, 0.05),
                        lambda r: None, clock=clock)
    on_time.run(1)
    assert on_time.ready_slack_ms == pytest.approx(850.0)  # iteration 0 due at 1001 - 0.15
    clock = FakeClock(1000.0)
    late = JobDriver(spec(), JobPlan("shift", 1000.05, 20.0, 200.0, 50.0), FakeTransport(clock, 0.05),
                     lambda r: None, clock=clock)
    late.run(1)
    assert late.ready_slack_ms == pytest.approx(-80.0)  # due at 1000.07 - 0.15


KEEP_TIME_PROBE = """
import os, subprocess, sys
from apps.dltjob import keep_time
ok = keep_time()
child = subprocess.run([sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"],
                       capture_output=True, text=True, check=True).stdout.strip()
print(ok, os.sched_getscheduler(0), child)
"""


def test_keep_time_makes_the_driver_real_time_but_not_its_children():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", KEEP_TIME_PROBE], cwd=root, capture_output=True, text=True,
                         check=True).stdout.split()
    ok, mine, child = out[0] == "True", int(out[1]), int(out[2])
    assert child == os.SCHED_OTHER
    assert (mine & ~os.SCHED_RESET_ON_FORK) == (os.SCHED_FIFO if ok else os.SCHED_OTHER)


def test_next_window_start_tolerates_small_lateness():
    plan = JobPlan("gate", epoch_s=10.0, offset_ms=20.0, period_ms=100.0, window_ms=30.0)
    assert next_window_start(plan, 0.0) == pytest.approx(10.02)
    assert next_window_start(plan, 10.021) == pytest.approx(10.02)
    assert next_window_start(plan, 10.025) == pytest.approx(10.12)


def test_log_is_flushed_per_row_and_read_back(tmp_path):
    path = tmp_path / "it.csv"
    log = IterationLog(str(path))
    log.write({"job": "a", "worker": "h1", "iteration": 0, "start": 1.0, "comm_start": 1.1,
               "comm_end": 1.2, "end": 1.2, "bytes": 5, "policy": "none", "retransmits": 0, "error": ""})
    rows = list(csv.DictReader(open(path)))  # read before close: already on disk
    assert rows[0]["bytes"] == "5"
    log.close()


def test_bad_specs_raise():
    with pytest.raises(ValueError):
        spec(comm_ms=200.0)
    with pytest.raises(ValueError):
        spec(workers=WORKERS[:1])
    with pytest.raises(ValueError):
        spec(pattern="tree")


def test_a_padded_plan_lengthens_every_compute_phase():
    """``align`` pads the period: with 100 ms of padding a 200-ms job (compute 150 ms) whose bursts
    take 50 ms launches every 150 + 100 + 50 = 300 ms, its first burst still at its offset."""
    plan = JobPlan("none", epoch_s=1001.0, offset_ms=0.0, period_ms=300.0, window_ms=50.0, padding_ms=100.0)
    _rows, transport = run(spec(), plan, duration_s=0.05, iterations=4)
    assert transport.launches[0] == pytest.approx(1001.0)
    assert diffs(transport.launches) == pytest.approx([0.15 + 0.1 + 0.05] * 3)


def test_the_schedule_answer_carries_the_padding():
    doc = {"policy": "align", "epoch_s": 1001.0,
           "jobs": {"a": {"offset_ms": 5.0, "period_ms": 450.0, "window_ms": 100.0, "padding_ms": 50.0}}}
    assert JobPlan.from_schedule(doc, "a").padding_ms == 50.0
    del doc["jobs"]["a"]["padding_ms"]  # an older controller: no padding
    assert JobPlan.from_schedule(doc, "a").padding_ms == 0.0


def test_a_job_keeping_its_clock_takes_a_bursts_launch_overhead_beyond_the_usual_off_its_next_compute():
    """Bursts of 80 ms of which 60 ms data (iperf3's count): 20 ms launch overhead, 30 in the second."""
    clock = FakeClock()
    durations = iter([0.08, 0.09, 0.08, 0.08])
    data_s = iter([0.06, 0.06, 0.06, 0.06])

    def transport(phase):
        start = clock.now()
        d, data = next(durations), next(data_s)
        clock.t_s = start + d
        return [TransferResult(t, start, start + d, t.nbytes, data_s=data) for t in phase]

    plan = JobPlan("none", epoch_s=1001.0, offset_ms=0.0, period_ms=200.0, window_ms=50.0)
    rows = []
    JobDriver(spec(), plan, transport, rows.append, clock=clock, launch_overhead_ms=20.0).run(4)
    mine = [r for r in rows if r["worker"] == "h1"]
    assert [r["launch_overhead_ms"] for r in mine] == pytest.approx([20.0, 30.0, 20.0, 20.0])
    # computes of 150 ms, the one after the slow start 10 ms shorter: the bursts' data keeps the clock
    launches = [r["comm_start"] for r in mine]
    assert diffs(launches) == pytest.approx([0.23, 0.24 - 0.01, 0.23])
    # without the usual figure nothing is taken off; an unknown data time takes nothing off either
    rows.clear()
    durations, data_s, clock.t_s = iter([0.08, 0.09, 0.08]), iter([0.06, 0.06, 0.06]), 1000.0
    JobDriver(spec(), plan, transport, rows.append, clock=clock, launch_overhead_ms=None).run(3)
    assert diffs([r["comm_start"] for r in rows if r["worker"] == "h1"]) == pytest.approx([0.23, 0.24])
    rows.clear()
    durations, data_s, clock.t_s = iter([0.08, 0.09, 0.08]), iter([0.06, 0.0, 0.06]), 1000.0
    JobDriver(spec(), plan, transport, rows.append, clock=clock, launch_overhead_ms=20.0).run(3)
    assert diffs([r["comm_start"] for r in rows if r["worker"] == "h1"]) == pytest.approx([0.23, 0.24])
    assert math.isnan(launch_overhead_ms([]))  # nothing to judge by


# -- pattern jobs: each phase its own burst at its offset ----------------------------------------------

def pattern_spec(**kw):
    """Period 200 ms; phases at 0, 30 and 40 ms of the comm part, each 20 ms of comm_ms 60 at fill 1."""
    args = dict(name="p", period_ms=200.0, comm_ms=60.0, workers=WORKERS[:3], link_mbps=80.0, fill=0.5,
                transport="persistent", phases=((0.0, 1 / 3), (30.0, 1 / 3), (40.0, 1 / 3)))
    args.update(kw)
    return JobSpec(**args)


def test_a_pattern_keeps_its_timing_and_its_bytes_scale_with_the_link():
    link_mbps = 10_000.0
    pattern = JobPattern(229.0, (Phase(79.0, 8_000_000), Phase(121.0, 30_000_000), Phase(130.0, 9_000_000)), 2)
    comm_ms, phases = pattern_phases(pattern, link_mbps)
    busy = [busy_ms(p, 2, link_mbps) for p in pattern.phases]
    # the third phase waits for the second (121 + 24 > 130): the phases go one after another
    assert comm_ms == pytest.approx(121.0 + busy[1] + busy[2])
    assert [start for start, _ in phases] == [79.0, 121.0, 130.0]
    assert [share * comm_ms for _, share in phases] == pytest.approx(busy)
    job = JobSpec("r", 229.0, comm_ms, WORKERS[:2], link_mbps=50.0, fill=0.8, transport="persistent", phases=phases)
    # each phase: fill of its own link time, at the fabric's rate (the zoo's rule: times kept, bytes scaled)
    assert phase_bytes(job) == pytest.approx([burst_bytes(b, 50.0, 0.8) for b in busy], abs=1)


def test_a_pattern_job_sends_one_ring_per_phase_over_the_same_flows():
    job = pattern_spec()
    steps = iteration_phases(job)
    assert [start for start, _ in steps] == [0.0, 30.0, 40.0]
    ports = [[t.port for (step,) in [s] for t in step] for _, s in steps]
    assert ports[0] == ports[1] == ports[2] and len(set(ports[0])) == 3
    assert [step[0][0].nbytes for _, step in steps] == phase_bytes(job) == [burst_bytes(20.0, 80.0, 0.5)] * 3
    assert flow_burst_bytes(job) == {p: phase_bytes(job) for p in ports[0]}
    # one iteration's bytes per flow, every phase's together; the flows registered once each
    (ring,) = collective(job)
    assert [t.nbytes for t in ring] == [sum(phase_bytes(job))] * 3
    assert len(data_flows(job)) == 3
    assert flow_burst_bytes(spec()) == {t.port: [t.nbytes] for t in collective(spec())[0]}


def test_a_pattern_job_needs_standing_connections_and_a_ring():
    with pytest.raises(ValueError, match="standing connections"):
        pattern_spec(transport="iperf3")
    with pytest.raises(ValueError, match="ring"):
        pattern_spec(pattern="ps")
    with pytest.raises(ValueError, match="ascend"):
        pattern_spec(phases=((30.0, 0.3), (0.0, 0.3)))
    with pytest.raises(ValueError, match="share"):
        pattern_spec(phases=((0.0, 0.0),))


def run_pattern(job, plan, durations_s, iterations=3, lead_ms=0.0):
    clock = FakeClock()
    rows, phase_rows = [], []
    durations = iter(durations_s * iterations)
    transport = FakeTransport(clock, lambda: next(durations))
    JobDriver(job, plan, transport, rows.append, clock=clock, launch_lead_ms=lead_ms,
              phase_log=phase_rows.append).run(iterations)
    return rows, phase_rows, transport


def test_each_phase_goes_at_its_offset_or_when_the_one_before_it_ends():
    plan = JobPlan("none", epoch_s=1001.0, offset_ms=0.0, period_ms=200.0, window_ms=60.0)
    # phase 0 takes 35 ms, past phase 1's offset (30): phase 1 waits for it; phase 2 (at 40) waits for phase 1
    rows, phase_rows, transport = run_pattern(pattern_spec(), plan, [0.035, 0.010, 0.005])
    first = [r for r in phase_rows if r["iteration"] == 0]
    assert [r["due"] for r in first] == pytest.approx([1001.0, 1001.03, 1001.04])
    assert [r["launch"] for r in first] == pytest.approx([1001.0, 1001.035, 1001.045])
    assert [r["end"] for r in first] == pytest.approx([1001.035, 1001.045, 1001.05])
    assert [r["bytes"] for r in first] == [3 * n for n in phase_bytes(pattern_spec())]
    assert all(set(r) == set(PHASE_CSV_FIELDS) and r["error"] == "" for r in phase_rows)
    # the iteration: compute (period - comm_ms = 140 ms) after the last phase's end, the origin at its end
    second = [r for r in phase_rows if r["iteration"] == 1]
    assert second[0]["due"] == pytest.approx(1001.05 + 0.14)
    h1 = [r for r in rows if r["worker"] == "h1"]
    assert h1[0]["comm_start"] == pytest.approx(1001.0) and h1[0]["comm_end"] == pytest.approx(1001.05)
    assert h1[0]["start"] == pytest.approx(1001.0 - 0.14) and h1[1]["start"] == pytest.approx(1001.05)
    # a worker sends in every phase: its bytes are the iteration's
    assert h1[0]["bytes"] == sum(phase_bytes(pattern_spec()))


def test_a_gated_pattern_job_waits_for_its_period_then_keeps_its_offsets():
    plan = JobPlan("gate", epoch_s=1001.0, offset_ms=50.0, period_ms=200.0, window_ms=60.0)
    rows, phase_rows, _ = run_pattern(pattern_spec(), plan, [0.010, 0.010, 0.010], iterations=3)
    for k in range(3):
        mine = [r for r in phase_rows if r["iteration"] == k]
        origin = 1001.05 + 0.2 * k  # ready at 1001.05 + 0.05 + 0.14: waits for the next period
        assert [r["launch"] for r in mine] == pytest.approx([origin, origin + 0.03, origin + 0.04])


def test_the_phases_file_sits_beside_the_iterations():
    assert phases_csv_path("/x/run/alpha.csv") == "/x/run/alpha.phases.csv"
