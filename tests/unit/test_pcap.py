"""pcap parsing by struct slicing agrees with scapy's own decoding."""

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from scenarios.analysis.pcap import label_flows, read_pcap


def test_read_pcap_matches_scapy(tmp_path):
    packets = []
    for i in range(5):
        p = Ether() / IP(src="10.0.0.1", dst="10.0.0.3", id=(65534 + i) % 65536) / TCP(sport=5701, dport=5201) / (b"x" * (100 * i))
        p.time = 1000.0 + i * 0.001
        packets.append(p)
    u = Ether() / IP(src="10.0.0.2", dst="10.0.0.4", id=7) / UDP(sport=9, dport=10) / b"abc"
    u.time = 1000.5
    packets.append(u)
    path = str(tmp_path / "t.pcap")
    wrpcap(path, packets)
    df = read_pcap(path)
    assert len(df) == 6
    assert list(df["payload_bytes"]) == [0, 100, 200, 300, 400, 3]
    assert list(df["wire_bytes"]) == [len(p) for p in packets]
    assert df["time_s"].iloc[1] == 1000.001
    assert list(df["sport"][:5]) == [5701] * 5 and df["proto"].iloc[5] == 17
    assert list(df["ip_id"]) == [65534, 65535, 0, 1, 2, 7]  # the identification wraps at 16 bits
    jobs = label_flows(df, {"a": [("10.0.0.1", "10.0.0.3", 5701, 5201)]})
    assert list(jobs) == ["a"] * 5 + [""]


def test_an_empty_capture_reads_and_labels_as_no_packets(tmp_path):
    """A capture with no packet of interest (a link no job crossed) is an empty table, not an error."""
    path = tmp_path / "empty.pcap"
    wrpcap(str(path), [Ether() / b"not ip"])
    packets = read_pcap(str(path))
    assert len(packets) == 0
    labels = label_flows(packets, {"a": [("10.0.0.1", "10.0.0.3", 5201, 6201)]})
    assert len(labels) == 0
