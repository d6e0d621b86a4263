"""Pattern jobs at the scheduler and the gate: busy arcs over REST, scheduled exactly, one window per arc.

A two-job example in 1-ms quanta: T1 = 12 busy {0, 1, 6, 7}, T2 = 18 busy {2, 3, 8, 9, 14, 15}: the
busy total (10) is more than the gcd (6), so the rectangle rule says no shift separates them; the
projection theory separates them, and the gate must hold each job to all of its arcs. No root.
"""

import math

import pytest

from controller.gate import GateWindow, WindowGate
from controller.scheduler import ApiError, SchedulerCore, validate_job
from controller.theory.patternwindows import busy_pattern, pattern_set_schedule, window_arcs
from scenarios.analysis import gatecheck

NOW_S = 1_000_000.0


def job(name, period_ms, busy_ms, hosts=("h1", "h3"), port=5201):
    return {"name": name, "period_ms": period_ms, "comm_ms": sum(n for _, n in busy_ms),
            "workers": list(hosts), "busy_ms": [list(a) for a in busy_ms],
            "flows": [{"dpid": 1, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": port, "tcp_dst": port + 1}]}


A = job("a", 12, [(0, 2), (6, 2)])
B = job("b", 18, [(2, 2), (8, 2), (14, 2)], ("h2", "h4"), 5211)


def core_with(*jobs):
    core = SchedulerCore()
    for doc in jobs:
        core.add_job(doc)
    return core


def busy_at(windows: list[tuple[float, float, float]], t_ms: float) -> bool:
    return any((t_ms - start) % period < length for period, start, length in windows)


def test_the_gate_holds_each_job_to_every_arc_and_the_two_never_meet():
    core = core_with(A, B)
    core.set_policy({"policy": "gate", "epoch_s": NOW_S}, NOW_S)
    assert core.schedule.feasible and core.schedule.overlap_ms == 0
    arcs = core.window_arcs_ms()
    assert len(arcs["a"]) == 2 and len(arcs["b"]) == 3  # as many windows per period as busy arcs
    # over the hyper-period, quantum by quantum (the brute force): never both open, each open its busy share
    hyper = math.lcm(12, 18)
    open_a = [busy_at(arcs["a"], t + 0.5) for t in range(hyper)]
    open_b = [busy_at(arcs["b"], t + 0.5) for t in range(hyper)]
    assert not any(x and y for x, y in zip(open_a, open_b, strict=True))
    assert sum(open_a) == 4 * hyper // 12 and sum(open_b) == 6 * hyper // 18
    gate = WindowGate({n: [GateWindow(*w) for w in ws] for n, ws in arcs.items()},
                      {n: list(j.flows) for n, j in core.jobs.items()}, NOW_S)
    edges = gate.edges(NOW_S, NOW_S + hyper / 1000)
    assert sum(e.opening for e in edges if e.job == "a") == 2 * hyper // 12
    assert sum(e.opening for e in edges if e.job == "b") == 3 * hyper // 18
    for t in range(hyper):  # the gate's own state agrees with the windows
        assert gate.is_open("a", NOW_S + (t + 0.5) / 1000) == open_a[t]
    doc = core.schedule_doc()
    assert [w for w in doc["jobs"]["a"]["windows_ms"]] == [[0.0, 2.0], [6.0, 2.0]]
    rows = gatecheck.window_rows("gate", doc, hyper / 1000)
    assert len([r for r in rows if r["job"] == "b"]) == 3 * hyper // 18


def test_shift_and_none_run_pattern_jobs_and_the_rest_are_refused():
    core = core_with(A, B)
    core.set_policy({"policy": "shift", "epoch_s": NOW_S}, NOW_S)
    shifts = core.schedule.shifts_ms
    assert core.offsets_ms == shifts
    core.set_policy({"policy": "none", "epoch_s": NOW_S}, NOW_S)
    assert core.offsets_ms == {"a": 0.0, "b": 0.0}
    for policy in ("random", "align", "priority"):
        with pytest.raises(ApiError, match=f"{policy} does not run pattern jobs"):
            core.set_policy({"policy": policy, "epoch_s": NOW_S}, NOW_S)
    with pytest.raises(ApiError, match="policy.guard_ms: no guard band"):
        core.set_policy({"policy": "gate", "epoch_s": NOW_S, "guard_ms": 2}, NOW_S)


@pytest.mark.parametrize("busy, field", [
    ("x", "busy_ms: must be a list"), ([], "busy_ms: must be a list"), ([[0, 1, 2]], "busy_ms[0]: must be"),
    ([[12, 1]], "busy_ms[0].start_ms: must be < period_ms"), ([[-1, 1]], "busy_ms[0].start_ms: must be >="),
    ([[0, 0]], "busy_ms[0].length_ms: must be >"), ([[0, "2"]], "busy_ms[0].length_ms: must be a number"),
    ([[0, 6], [6, 6]], "busy_ms: the arcs add up to 12"),
])
def test_bad_busy_arcs_are_refused_in_one_line_naming_the_field(busy, field):
    with pytest.raises(ApiError) as info:
        validate_job({**A, "busy_ms": busy})
    assert info.value.status == 400 and f"job a.{field}" in info.value.message
    assert "\n" not in info.value.message


def test_arcs_go_on_the_grid_start_down_end_up_and_wrap():
    assert busy_pattern(12, [(0.5, 1.2)], 0, 1).arcs == ((0, 2),)
    assert busy_pattern(12, [(10, 3)], 0, 1).arcs == ((0, 1), (10, 2))
    assert window_arcs(busy_pattern(12, [(10, 3), (5, 1)], 0, 1)) == ((5, 1), (10, 3))  # one window through 12
    assert busy_pattern(300, None, 100, 10).arcs == ((0, 10),)  # a classic job: one burst at 0
    with pytest.raises(ValueError, match="whole period"):
        busy_pattern(12, [(0, 6), (6, 6)], 0, 1)
    found = pattern_set_schedule(["a", "b"], [busy_pattern(12, [(0, 2), (6, 2)], 0, 1),
                                              busy_pattern(18, [(2, 2), (8, 2), (14, 2)], 0, 1)], 1.0)
    assert found.feasible and found.method == "exact" and (found.shifts_ms["b"] - found.shifts_ms["a"]) % 6 in (0, 1, 2)


def test_the_run_and_the_controller_schedule_a_pattern_scenario_alike():
    """What the run records and predicts with (``runner.run_schedule``) is what the controller computes
    from the jobs the run registers (their grid timings, busy arcs and links), to the quantum."""
    from pathlib import Path

    from scenarios import spec
    from scenarios.experiment.runner import run_schedule
    from scenarios.routes import link_names
    from scenarios.sharedlink import fabric_params
    from topo.wiring import fabric_wiring

    scenario = spec.load(Path(__file__).resolve().parents[2] / "scenarios" / "pattern-resnet50.yaml")
    ours = run_schedule(scenario, "gate")
    links = link_names(scenario, fabric_wiring(fabric_params(scenario)))
    q = scenario.quantum_ms
    core = SchedulerCore()
    for t, busy in zip(scenario.timings(), scenario.busy_patterns(), strict=True):
        core.add_job({**job(t.name, t.period_ms, [(a * q, n * q) for a, n in busy.arcs]),
                      "comm_ms": t.comm_ms, "links": links[t.name]})
    core.set_policy({"policy": "gate", "epoch_s": NOW_S, "quantum_ms": q}, NOW_S)
    assert core.schedule.shifts_ms == ours.shifts_ms and core.schedule.overlap_ms == ours.overlap_ms
    assert len(core.window_arcs_ms()["resnet"]) == len(window_arcs(scenario.busy_patterns()[0]))
