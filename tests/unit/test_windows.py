"""The gate as data: every edge of every job over several hyper-periods, no overlap when feasible."""

import math
from dataclasses import dataclass

import pytest

from controller.gate import (
    CLOSED_METER_KBPS,
    GATE_PRIORITY,
    OPEN_METER_KBPS,
    DataFlow,
    GateFlowMod,
    GateWindow,
    MeterMod,
    WindowGate,
)


@dataclass(frozen=True)
class _Timing:
    name: str
    period_ms: float
    comm_ms: float


@dataclass(frozen=True)
class _Schedule:  # the fields of controller.theory.schedule.Schedule that the gate reads
    jobs: tuple
    shifts_ms: dict


FLOWS = {
    "a": [DataFlow(0x101, "10.0.0.1", "10.0.0.3", 5701)],
    "b": [DataFlow(0x101, "10.0.0.2", "10.0.0.4", 6701), DataFlow(0x102, "10.0.0.4", "10.0.0.2", 6702)],
    "c": [DataFlow(0x102, "10.0.0.3", "10.0.0.1", 7701)],
}
EPOCH_S = 5000.0


def gate(timings, shifts, **kw):
    return WindowGate.from_schedule(_Schedule(tuple(timings), shifts), FLOWS, EPOCH_S, **kw)


def hyperperiod_ms(timings):
    return math.lcm(*(int(t.period_ms) for t in timings))


def test_every_edge_of_every_job_over_several_hyperperiods():
    timings = [_Timing("a", 200, 60), _Timing("b", 300, 40)]
    g = gate(timings, {"a": 0.0, "b": 100.0})
    h_ms = hyperperiod_ms(timings)
    edges = g.edges(EPOCH_S, EPOCH_S + 3 * h_ms / 1000 - 1e-6)
    for t in timings:
        shift = {"a": 0.0, "b": 100.0}[t.name]
        mine = [e for e in edges if e.job == t.name]
        n = 3 * h_ms // t.period_ms
        opens = [EPOCH_S + (shift + k * t.period_ms) / 1000 for k in range(n)]
        closes = [o + t.comm_ms / 1000 for o in opens]
        assert [e.time_s for e in mine if e.opening] == pytest.approx(opens)
        assert [e.time_s for e in mine if not e.opening] == pytest.approx(closes)
    assert [e.time_s for e in edges] == sorted(e.time_s for e in edges)


def test_windows_in_pieces_equal_windows_at_once():
    timings = [_Timing("a", 200, 60), _Timing("b", 300, 40)]
    g = gate(timings, {"a": 10.0, "b": 100.0})
    whole = g.edges(EPOCH_S, EPOCH_S + 2.4)
    pieces = [e for i in range(24) for e in g.edges(EPOCH_S + i * 0.1, EPOCH_S + (i + 1) * 0.1)]
    assert [(e.time_s, e.job, e.opening) for e in whole] == [(e.time_s, e.job, e.opening) for e in pieces]


@pytest.mark.parametrize("timings,shifts", [
    ([_Timing("a", 200, 60), _Timing("b", 400, 100)], {"a": 0.0, "b": 60.0}),
    ([_Timing("a", 100, 30), _Timing("b", 200, 50), _Timing("c", 400, 20)], {"a": 0.0, "b": 30.0, "c": 80.0}),
])
def test_no_two_jobs_open_at_once_when_feasible(timings, shifts):
    g = gate(timings, shifts)
    h_s = hyperperiod_ms(timings) / 1000
    # replay the edges as a state machine: at most one job open at any instant
    open_jobs = set()
    for e in g.edges(EPOCH_S, EPOCH_S + 4 * h_s):
        if e.opening:
            assert not open_jobs, f"{e.job} opens at {e.time_s} while {open_jobs} open"
            open_jobs.add(e.job)
        else:
            open_jobs.discard(e.job)
    # and sample is_open on a 0.5 ms grid
    for i in range(int(4 * h_s * 2000)):
        t = EPOCH_S + i / 2000 + 1e-7
        assert sum(g.is_open(j.name, t) for j in timings) <= 1


def test_with_the_theory_schedule():
    schedule = pytest.importorskip("controller.theory.schedule")
    jobs = [schedule.JobTiming("a", 200.0, 60.0), schedule.JobTiming("b", 400.0, 100.0)]
    sched = schedule.compute_schedule(jobs, quantum_ms=1.0)
    assert sched.feasible
    g = WindowGate.from_schedule(sched, FLOWS, EPOCH_S)
    for i in range(int(sched.hyperperiod_ms * 2 * 2)):
        t = EPOCH_S + i / 2000 + 1e-7
        assert g.is_open("a", t) + g.is_open("b", t) <= 1


def test_delete_toggle_block_mode_messages():
    g = gate([_Timing("b", 300, 40)], {"b": 100.0}, toggle="delete")
    setup = g.setup()
    assert setup == [GateFlowMod("add", f.dpid, f.match()) for f in FLOWS["b"]]
    assert all(m.priority == GATE_PRIORITY >= 10000 and m.meter_id is None for m in setup)
    assert setup[0].match == {"eth_type": 0x0800, "ip_proto": 6, "ipv4_src": "10.0.0.2",
                              "ipv4_dst": "10.0.0.4", "tcp_src": 6701}
    first_open, first_close = g.edges(EPOCH_S, EPOCH_S + 0.2)
    assert first_open.opening and first_open.time_s == pytest.approx(EPOCH_S + 0.1)
    assert {m.command for m in first_open.mods} == {"delete"}
    assert {m.command for m in first_close.mods} == {"add"}
    assert {m.command for m in g.teardown()} == {"delete"}


def test_floor_mode_meters_first_and_goto():
    g = gate([_Timing("a", 200, 60), _Timing("b", 300, 40)], {"a": 0.0, "b": 100.0}, mode="floor",
             floor_kbps=2000)
    setup = g.setup()
    meters = [m for m in setup if isinstance(m, MeterMod)]
    assert setup[: len(meters)] == meters  # meters exist before rules that use them
    assert {(m.dpid, m.meter_id) for m in meters} == {(0x101, 1), (0x101, 2), (0x102, 2)}
    assert all(m.rate_kbps == 2000 and m.burst_kbit == 500 for m in meters)
    rules = [m for m in setup if isinstance(m, GateFlowMod)]
    assert {m.meter_id for m in rules if m.match["tcp_src"] == 5701} == {1}
    down = g.teardown()
    assert isinstance(down[-1], MeterMod) and down[-1].command == "delete"


def test_closes_before_opens_at_the_same_instant():
    g = gate([_Timing("a", 200, 100), _Timing("b", 200, 100)], {"a": 0.0, "b": 100.0})
    e1, e2 = [e for e in g.edges(EPOCH_S + 0.05, EPOCH_S + 0.15)]
    assert e1.time_s == pytest.approx(e2.time_s) and not e1.opening and e2.opening


def test_before_epoch_closed_and_bad_inputs():
    g = gate([_Timing("a", 200, 60)], {"a": 0.0})
    assert not g.is_open("a", EPOCH_S - 0.001)
    assert g.is_open("a", EPOCH_S + 0.001)
    with pytest.raises(ValueError):
        GateWindow(100, 0, 100)
    with pytest.raises(ValueError):
        WindowGate({"a": GateWindow(100, 0, 10)}, FLOWS, EPOCH_S, mode="sometimes")
    with pytest.raises(ValueError):
        WindowGate({"z": GateWindow(100, 0, 10)}, FLOWS, EPOCH_S)


def test_match_both_ports_when_given():
    assert DataFlow(1, "10.0.0.1", "10.0.0.3", 5201, 5701).match()["tcp_dst"] == 5701
    assert "tcp_dst" not in DataFlow(1, "10.0.0.1", "10.0.0.3", 5201).match()
    udp = DataFlow(1, "10.0.0.1", "10.0.0.3", 5201, 5701, proto="udp").match()
    assert udp["ip_proto"] == 17 and udp["udp_src"] == 5201 and udp["udp_dst"] == 5701


def test_modify_toggle_keeps_one_rule_and_flips_it():
    g = gate([_Timing("a", 200, 60)], {"a": 0.0}, toggle="modify")
    assert {m.command for m in g.setup()} == {"add"}
    opening, closing = g.edges(EPOCH_S, EPOCH_S + 0.1)
    assert {(m.command, m.pass_through) for m in opening.mods} == {("modify", True)}
    assert {(m.command, m.pass_through) for m in closing.mods} == {("modify", False)}
    assert {m.command for m in g.teardown()} == {"delete"}


def test_meter_toggle_keeps_rules_and_flips_meter_rates():
    g = gate([_Timing("a", 200, 60)], {"a": 0.0}, toggle="meter")
    setup = g.setup()
    meters = [m for m in setup if isinstance(m, MeterMod)]
    rules = [m for m in setup if isinstance(m, GateFlowMod)]
    assert [(m.command, m.rate_kbps) for m in meters] == [("add", CLOSED_METER_KBPS)]
    assert rules and all(m.command == "add" and m.meter_id == meters[0].meter_id for m in rules)
    opening, closing = g.edges(EPOCH_S, EPOCH_S + 0.1)
    assert [(type(m), m.command, m.rate_kbps) for m in opening.mods] == [(MeterMod, "modify", OPEN_METER_KBPS)]
    assert [(type(m), m.command, m.rate_kbps) for m in closing.mods] == [(MeterMod, "modify", CLOSED_METER_KBPS)]
    # a closed bucket holds less than one 1500-byte frame: no full-sized data segment passes
    assert closing.mods[0].burst_kbit * 1000 < 1500 * 8
    assert {type(m) for m in g.teardown()} == {GateFlowMod, MeterMod}


def test_meter_toggle_closes_to_the_floor_in_floor_mode():
    g = gate([_Timing("a", 200, 60)], {"a": 0.0}, toggle="meter", mode="floor", floor_kbps=500)
    _, closing = g.edges(EPOCH_S, EPOCH_S + 0.1)
    assert [(m.rate_kbps, m.burst_kbit) for m in closing.mods] == [(500, 125)]
