"""A pattern job's phases against a capture (scenarios/analysis/phases.py): synthetic rows and packets."""

import numpy as np
import pandas as pd
import pytest

from scenarios.analysis.phases import MAX_START_P95_MS, phase_figures, phase_table

SENDER, OTHER = "10.0.0.1", "10.0.0.2"


def packets_of(bursts):
    """Packets of 1 000 bytes: ``(first_s, count, seq0)`` each, one every 0.1 ms, from SENDER (job p)."""
    rows = []
    for first_s, count, seq0 in bursts:
        for i in range(count):
            rows.append({"time_s": first_s + i * 1e-4, "src_ip": SENDER, "dst_ip": OTHER, "sport": 5201,
                         "dport": 21585, "seq": seq0 + 1000 * i, "payload_bytes": 1000, "wire_bytes": 1066})
    packets = pd.DataFrame(rows)
    return packets, pd.Series(["p"] * len(packets), index=packets.index)


def test_each_phase_gets_its_own_packets_and_its_start_against_the_intended_time():
    # phase 0 due at 10.000, ends 10.0021; phase 1 due at 10.0015 waits for it (intended 10.0021)
    rows = pd.DataFrame([
        {"job": "p", "iteration": 1, "phase": 0, "due": 10.000, "launch": 10.0001, "end": 10.0021, "bytes": 20_000},
        {"job": "p", "iteration": 1, "phase": 1, "due": 10.0015, "launch": 10.0022, "end": 10.0200, "bytes": 10_000}])
    # two flows, one seen: 10 000 and 5 000 bytes expected on the capture; phase 0's last packet is
    # captured 0.3 ms before phase 1's launch (within the launch slack): it still counts for phase 0 only
    packets, labels = packets_of([(10.0010, 10, 0), (10.0032, 5, 10_000)])
    table = phase_table(rows, packets, labels, "p", {SENDER}, 1, 2)
    assert table["wire_bytes"].tolist() == [10_000, 5_000] == table["expected_bytes"].tolist()
    assert table["intended"].tolist() == pytest.approx([10.000, 10.0021])
    assert table["waited_ms"].tolist() == pytest.approx([0.0, 0.6])
    assert table["wire_late_ms"].tolist() == pytest.approx([1.0, 1.1])
    (first, second) = phase_figures(table, [0.0, 1.5], skip_iterations=0)
    assert first["capture_bytes_err_pct"] == 0 and first["within_bounds"]
    assert second["waited_ms_median"] == pytest.approx(0.6) and second["within_bounds"]


def test_a_lost_byte_or_a_late_start_is_outside_the_bounds():
    rows = pd.DataFrame([{"job": "p", "iteration": k, "phase": 0, "due": 10.0 + k, "launch": 10.0 + k,
                          "end": 10.01 + k, "bytes": 10_000} for k in range(3)])
    late = MAX_START_P95_MS / 1000 + 0.001
    packets, labels = packets_of([(10.0 + k + (late if k == 2 else 0.0005), 10, 10_000 * k) for k in range(3)])
    figures = phase_figures(phase_table(rows, packets, labels, "p", {SENDER}, 1, 1), [0.0], skip_iterations=0)
    assert figures[0]["wire_start_late_p95_ms"] > MAX_START_P95_MS and not figures[0]["within_bounds"]
    short, labels = packets_of([(10.0 + k + 0.0005, 9, 10_000 * k) for k in range(3)])
    (lost,) = phase_figures(phase_table(rows, short, labels, "p", {SENDER}, 1, 1), [0.0], skip_iterations=0)
    assert lost["capture_bytes_err_pct"] == pytest.approx(-10.0) and not lost["within_bounds"]
    assert np.isnan(phase_table(rows, short.iloc[:0], labels.iloc[:0], "p", {SENDER}, 1, 1)["wire_late_ms"]).all()
