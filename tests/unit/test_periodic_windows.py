"""A job's windows, computed once (controller/theory/windows.py), seen alike by the gate, the job
driver and the analysis."""

import numpy as np
import pytest

from apps.dltjob import next_window_start
from apps.jobmodel import JobPlan
from controller.gate import DataFlow, GateWindow, WindowGate
from controller.theory.windows import (
    last_window_index,
    next_window_index,
    window_start_ms,
    windows_between,
)
from scenarios.analysis import gatecheck

EPOCH_S = 1_700_000_000.25
DOC = {"epoch_s": EPOCH_S, "jobs": {
    "a": {"period_ms": 200.0, "shift_ms": 30.0, "offset_ms": 30.0, "window_ms": 60.0},
    "b": {"period_ms": 300.0, "shift_ms": 110.0, "offset_ms": 110.0, "window_ms": 45.5}}}


def test_window_starts_and_indices():
    assert window_start_ms(30.0, 200.0, 0) == 30.0
    assert window_start_ms(30.0, 200.0, 3) == 630.0
    assert next_window_index(30.0, 200.0, 30.0) == 0  # a start at t counts as at or after it
    assert next_window_index(30.0, 200.0, 30.5) == 1
    assert next_window_index(30.0, 200.0, -500.0) == -2  # before the shift: negative
    assert last_window_index(30.0, 200.0, 229.9) == 0
    assert last_window_index(30.0, 200.0, 230.0) == 1
    # slack: a start a hair after t still counts as the last one, a hair before as the next one
    assert last_window_index(30.0, 200.0, 229.9999999, slack=1e-6) == 1
    assert next_window_index(30.0, 200.0, 230.0000001, slack=1e-6) == 1


def test_windows_between_keeps_what_overlaps_and_nothing_before_the_epoch():
    assert windows_between(30.0, 200.0, 60.0, -1000.0, 450.0) == [(30.0, 90.0), (230.0, 290.0), (430.0, 490.0)]
    # a window that closes exactly at the start is kept; one that opens exactly at the end is not
    assert windows_between(30.0, 200.0, 60.0, 290.0, 430.0) == [(230.0, 290.0)]
    assert windows_between(30.0, 200.0, 60.0, 291.0, 430.0) == []
    # far from 0, rounding of the index cannot lose a window
    k = 10**7
    start = window_start_ms(0.1, 0.3, k)
    assert windows_between(0.1, 0.3, 0.1, start, start + 1e-9) == [(start, start + 0.1)]


def test_gate_driver_and_analysis_agree_on_every_edge():
    flows = {name: [DataFlow(0x101, "10.0.0.1", "10.0.0.3", 5201 + i)] for i, name in enumerate(DOC["jobs"])}
    windows = {name: GateWindow(j["period_ms"], j["shift_ms"], j["window_ms"]) for name, j in DOC["jobs"].items()}
    edges = WindowGate(windows, flows, EPOCH_S).edges(EPOCH_S, EPOCH_S + 3.0)
    rows = gatecheck.window_rows("gate", DOC, 3.0)
    for name, j in DOC["jobs"].items():
        opens = [e.time_s for e in edges if e.job == name and e.opening]
        closes = [e.time_s for e in edges if e.job == name and not e.opening]
        assert len(opens) == 3000 // j["period_ms"] + (3000 % j["period_ms"] > j["shift_ms"])
        analysed = gatecheck.windows_of(DOC, name, EPOCH_S, EPOCH_S + 3.0)
        inside = analysed[(analysed[:, 0] >= EPOCH_S) & (analysed[:, 0] < EPOCH_S + 3.0)]
        assert list(inside[:, 0]) == opens  # the same float, not only close
        assert list(inside[:, 1])[:len(closes)] == closes
        mine = [r for r in rows if r["job"] == name]
        assert [EPOCH_S + r["open_s"] for r in mine] == pytest.approx(opens, abs=1e-6)
        assert all(r["close_s"] - r["open_s"] == pytest.approx(j["window_ms"] / 1000) for r in mine)
        plan = JobPlan("gate", EPOCH_S, j["offset_ms"], j["period_ms"], j["window_ms"])
        # a driver ready a little after a window opened waits for the next one (no tolerance)
        assert [next_window_start(plan, t + 1e-4, 0.0) for t in opens[:-1]] == opens[1:]


def test_windows_of_reaches_a_period_beyond_the_asked_span():
    w = gatecheck.windows_of(DOC, "a", EPOCH_S + 0.5, EPOCH_S + 0.9)
    assert np.all(np.diff(w[:, 0]) == pytest.approx(0.2))
    assert w[0, 1] >= EPOCH_S + 0.5 - 0.2 and w[0, 0] < EPOCH_S + 0.5
    assert w[-1, 0] > EPOCH_S + 0.9
    assert gatecheck.inside(np.array([EPOCH_S + 0.64, EPOCH_S + 0.7]), w).tolist() == [True, False]
