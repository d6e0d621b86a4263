"""Port-stat CSV -> pandas with rates, on a hand-written file."""

from controller.port_stats import read_port_stats


def test_rates_per_port(tmp_path):
    path = tmp_path / "port_stats.csv"
    path.write_text(
        "time_s,dpid,switch,port,rx_bytes,tx_bytes,rx_packets,tx_packets,rx_dropped,tx_dropped,rx_errors,tx_errors\n"
        "100.0,257,leaf1,1,0,0,0,0,0,0,0,0\n"
        "100.0,257,leaf1,3,0,0,0,0,0,0,0,0\n"
        "100.1,257,leaf1,1,625000,0,10,0,0,0,0,0\n"
        "100.1,257,leaf1,3,0,1250000,0,20,0,0,0,0\n"
        "100.2,257,leaf1,1,1250000,0,20,0,0,0,0\n"  # cut short by a crash: dropped
    )
    frame = read_port_stats(path)
    assert len(frame) == 4
    port1 = frame[frame.port == 1].iloc[-1]
    port3 = frame[frame.port == 3].iloc[-1]
    assert round(port1.rx_mbps, 6) == 50.0 and round(port3.tx_mbps, 6) == 100.0
    assert frame[frame.port == 1].rx_mbps.isna().iloc[0]
