"""The gate's own edge error, the wire's, and the queueing between them, from two captures."""

import numpy as np
import pandas as pd
import pytest

from scenarios.analysis import gatecheck
from scenarios.analysis.pcap import COLUMNS

GAP_S = 0.0005  # one probe datagram every 0.5 ms
PERIOD_S, WINDOW_S = 0.2, 0.04
T0_S = 1000.0
FLOW = ("10.0.0.1", "10.0.0.6", 17, 7201, 7701)


def capture(times_s, ip_ids, flow=FLOW) -> pd.DataFrame:
    """A ``read_pcap`` table of one UDP flow's datagrams."""
    n = len(times_s)
    src, dst, proto, sport, dport = flow
    return pd.DataFrame({"time_s": np.asarray(times_s, dtype=float), "wire_bytes": [242] * n,
                         "payload_bytes": [200] * n, "src_ip": [src] * n, "dst_ip": [dst] * n,
                         "proto": [proto] * n, "sport": [sport] * n, "dport": [dport] * n, "seq": [0] * n,
                         "ip_id": np.asarray(ip_ids) % 65536}, columns=COLUMNS)


def windows(n: int = 10) -> np.ndarray:
    opens = T0_S + 0.1 + PERIOD_S * np.arange(n)
    return np.column_stack([opens, opens + WINDOW_S])


def probe(gate_delay_s: float, queue_s, seconds: float = 2.0, first_id: int = 65000):
    """A paced stream at ingress (times half a gap off the window grid), the packets a gate
    ``gate_delay_s`` late lets through, and those seen at egress ``queue_s`` later."""
    ingress_s = T0_S + (np.arange(int(seconds / GAP_S)) + 0.5) * GAP_S
    ids = first_id + np.arange(len(ingress_s))
    passed = gatecheck.inside(ingress_s - gate_delay_s, windows())
    egress_s = ingress_s[passed] + np.broadcast_to(queue_s, len(ingress_s))[passed]
    return capture(ingress_s, ids), capture(egress_s, ids[passed])


def test_packets_pair_by_identification_and_flow_not_by_order():
    ingress = capture([1.0, 1.1, 1.2, 1.3], [10, 11, 12, 13])
    other = capture([1.05], [11], flow=("10.0.0.5", "10.0.0.2", 17, 7203, 7703))  # same id, other flow
    egress = pd.concat([capture([1.35, 1.15], [13, 11]), other], ignore_index=True)
    matched = gatecheck.match_packets(ingress, egress)
    assert matched["ip_id"].tolist() == [11, 13]
    assert matched["ingress_s"].tolist() == [1.1, 1.3]
    assert matched["egress_s"].tolist() == [1.15, 1.35]


def test_an_identification_seen_twice_in_a_capture_is_left_unpaired():
    ingress = capture([1.0, 1.1, 1.2], [5, 6, 5])  # wrapped within the capture
    egress = capture([1.01, 1.11, 1.21], [5, 6, 5])
    assert gatecheck.match_packets(ingress, egress)["ip_id"].tolist() == [6]


@pytest.mark.parametrize("gate_delay_ms", [0.0, 1.5])
def test_gate_edge_keeps_the_gates_timing_while_the_wire_edge_moves_by_the_queue(gate_delay_ms):
    ingress, egress = probe(gate_delay_ms / 1000, queue_s=0.004)
    matched = gatecheck.match_packets(ingress, egress)
    assert len(matched) == len(egress)
    split = gatecheck.split_edges([(matched, windows())], min_gap_s=0.002)
    gate, wire = split["gate_edge_ms"], split["wire_edge_ms"]
    # 10 windows; the first's two edges and the last's lie within 50 ms of the stream's ends and
    # are not scored: 8 opens and 8 closes. Packets sit half a gap off each edge.
    assert gate["n"] == wire["n"] == 16 and gate["missed"] == wire["missed"] == 0
    assert gate["signed_mean"] == pytest.approx(gate_delay_ms, abs=1e-6)
    assert gate["max"] == pytest.approx(gate_delay_ms + 0.25, abs=1e-6)
    assert wire["signed_mean"] == pytest.approx(gate_delay_ms + 4.0, abs=1e-6)
    assert split["queueing_ms"]["n"] == len(matched)
    assert split["queueing_ms"]["p50"] == pytest.approx(4.0, abs=1e-6)
    assert split["queueing_ms"]["max"] == pytest.approx(4.0, abs=1e-6)
    assert split["probes_silent"] == 0


def test_packets_lost_after_the_gate_leave_the_gate_edge_alone():
    ingress, egress = probe(0.0, queue_s=0.002)
    inner = egress.time_s.diff().fillna(1).lt(0.001) & egress.time_s.diff(-1).fillna(-1).gt(-0.001)
    lossy = egress[~(inner & (np.arange(len(egress)) % 3 == 0))]  # every third packet not at an edge
    assert len(lossy) < len(egress) * 0.75
    whole = gatecheck.split_edges([(gatecheck.match_packets(ingress, egress), windows())], 0.002)
    lost = gatecheck.split_edges([(gatecheck.match_packets(ingress, lossy), windows())], 0.002)
    assert lost["gate_edge_ms"] == whole["gate_edge_ms"]
    assert lost["wire_edge_ms"] == whole["wire_edge_ms"]
    assert lost["queueing_ms"]["n"] == len(lossy)


def test_queueing_summary_reads_a_varying_delay():
    delays_s = np.arange(1, 101) / 1000  # 1..100 ms
    summary = gatecheck.summarize_delays_ms(delays_s)
    assert summary["n"] == 100
    assert summary["p50"] == pytest.approx(50.5)
    assert summary["p95"] == pytest.approx(95.05)
    assert summary["max"] == pytest.approx(100.0)


def test_a_growing_queue_shows_in_the_wire_edge_and_queueing_only():
    ingress, _ = probe(0.0, 0.0)
    queue_s = np.linspace(0.001, 0.009, len(ingress))  # the queue builds up over the run
    _, egress = probe(0.0, queue_s)
    split = gatecheck.split_edges([(gatecheck.match_packets(ingress, egress), windows())], 0.002)
    assert split["gate_edge_ms"]["max"] == pytest.approx(0.25, abs=1e-6)
    assert split["wire_edge_ms"]["max"] > 7.0
    assert 4.0 < split["queueing_ms"]["p50"] < 6.0 and split["queueing_ms"]["max"] <= 9.0


def test_empty_captures_and_silent_probes_score_nothing():
    empty = pd.DataFrame({c: [] for c in COLUMNS}, columns=COLUMNS)
    matched = gatecheck.match_packets(empty, empty)
    assert matched.empty and {"ingress_s", "egress_s"} <= set(matched.columns)
    split = gatecheck.split_edges([(matched, windows())], min_gap_s=0.002)
    assert split == {"gate_edge_ms": {"n": 0, "missed": 0}, "wire_edge_ms": {"n": 0, "missed": 0},
                     "queueing_ms": {"n": 0}, "probes_silent": 1}
    assert gatecheck.split_edges([], min_gap_s=0.002)["probes_silent"] == 0
