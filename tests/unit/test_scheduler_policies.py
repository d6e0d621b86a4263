"""The scheduler core computes each policy's own schedule: `guard` keeps widened windows apart,
`align` pads periods and tells each job its padding; `gate` is as before."""

import math

from controller.scheduler import SchedulerCore
from controller.theory.align import align_periods
from controller.theory.schedule import JobTiming

NOW_S = 1_800_000_000.0


def job(name, period_ms, comm_ms, host):
    return {"name": name, "period_ms": period_ms, "comm_ms": comm_ms, "workers": [host, "h9"],
            "flows": [{"dpid": 0x101, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.9", "tcp_src": 5701}]}


def core_of(*jobs) -> SchedulerCore:
    core = SchedulerCore()
    for j in jobs:
        core.add_job(job(*j))
    return core


def windows(core) -> list[tuple[float, float]]:
    """Each job's first window [start, end) mod the common period (the jobs here share one)."""
    doc = core.schedule_doc()["jobs"]
    return sorted((j["offset_ms"], j["offset_ms"] + j["window_ms"]) for j in doc.values())


def test_gate_windows_are_one_burst_long_and_may_touch():
    core = core_of(("a", 300, 100, "h1"), ("b", 300, 150, "h2"))
    core.set_policy({"policy": "gate", "epoch_s": NOW_S + 1}, NOW_S)
    doc = core.schedule_doc()["jobs"]
    assert {n: j["window_ms"] for n, j in doc.items()} == {"a": 100, "b": 150}
    assert {j["padding_ms"] for j in doc.values()} == {0}


def test_guard_widens_every_window_and_keeps_them_apart():
    """300-ms periods, bursts 100 and 150: with a 20 ms guard the windows are 120 and 170 ms, and
    120 + 170 = 290 <= 300 still fits one period, so they must not overlap."""
    core = core_of(("a", 300, 100, "h1"), ("b", 300, 150, "h2"))
    core.set_policy({"policy": "guard", "guard_ms": 20, "epoch_s": NOW_S + 1}, NOW_S)
    doc = core.schedule_doc()
    assert doc["feasible"]
    assert {n: j["window_ms"] for n, j in doc["jobs"].items()} == {"a": 120, "b": 170}
    (s1, e1), (s2, e2) = windows(core)
    assert e1 <= s2 and e2 <= s1 + 300, (s1, e1, s2, e2)


def test_a_guard_that_does_not_fit_is_refused():
    core = core_of(("a", 300, 100, "h1"), ("b", 300, 150, "h2"))
    try:
        core.set_policy({"policy": "guard", "guard_ms": 160, "epoch_s": NOW_S + 1}, NOW_S)
    except Exception as exc:  # ApiError 400 naming the schedule or the guard
        assert getattr(exc, "status", None) == 400, exc
    else:
        raise AssertionError("a 160 ms guard on a 150 ms burst in a 300 ms period was accepted")


def test_align_pads_periods_and_reports_the_padding():
    """Coprime 401/600 (bursts 150/200) cannot be separated; align pads to the periods
    ``align_periods`` chooses, and GET /schedule tells each job its padding."""
    core = core_of(("a", 401, 150, "h1"), ("b", 600, 200, "h2"))
    assert not core.schedule_doc()["feasible"]
    core.set_policy({"policy": "align", "epoch_s": NOW_S + 1}, NOW_S)
    doc = core.schedule_doc()
    want = align_periods([JobTiming("a", 401, 150), JobTiming("b", 600, 200)], 1.0)
    assert doc["feasible"]
    for name, entry in doc["jobs"].items():
        assert math.isclose(entry["padding_ms"], want.padding_ms[name]), (name, entry, want.padding_ms)
        assert entry["period_ms"] == {"a": 401, "b": 600}[name] + want.padding_ms[name]
        assert entry["window_ms"] == {"a": 150, "b": 200}[name]
    assert any(p > 0 for p in want.padding_ms.values())
    core.set_policy({"policy": "none"}, NOW_S)  # the next policy gets the jobs as registered again
    assert {j["padding_ms"] for j in core.schedule_doc()["jobs"].values()} == {0}


def test_a_model_only_policy_is_refused_and_changes_nothing():
    core = core_of(("a", 300, 100, "h1"), ("b", 300, 150, "h2"))
    core.set_policy({"policy": "gate", "epoch_s": NOW_S + 1}, NOW_S)
    before = core.schedule_doc()
    try:
        core.set_policy({"policy": "mltcp", "epoch_s": NOW_S + 1}, NOW_S)
    except Exception as exc:
        assert getattr(exc, "status", None) == 400 and "model only" in str(exc.message), exc
    else:
        raise AssertionError("mltcp (a model only) was accepted by the controller")
    assert core.schedule_doc() == before
