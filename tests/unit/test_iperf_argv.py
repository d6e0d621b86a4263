"""iperf3 command lines for a burst (no iperf3 is run)."""

import pytest

from apps import iperf
from topo.tcp_ports import receiver_port


def test_a_burst_client_receives_with_nodelay_cubic_and_a_pinned_data_port():
    argv = iperf.client_argv("10.0.0.1", 5201, receiver_port(5201), 200_000)
    assert argv[:2] == ["iperf3", "-c"] and argv[-1] == "-R"
    assert argv[argv.index("--cport") + 1] == "21585" and argv[argv.index("-n") + 1] == "200000"
    assert "-N" in argv and argv[argv.index("-C") + 1] == "cubic"


@pytest.mark.parametrize("cport", [0, 5701, 16383, 32768, 40000])
def test_a_receiving_clients_data_port_outside_16384_32767_is_refused(cport):
    with pytest.raises(ValueError, match="cport"):
        iperf.client_argv("10.0.0.1", 5201, cport, 1000)


def test_a_sending_client_keeps_its_data_port_below_the_receivers_range():
    assert "-R" not in iperf.client_argv("10.0.0.1", 5201, 5701, 1000, reverse=False)
    with pytest.raises(ValueError, match="cport"):
        iperf.client_argv("10.0.0.1", 5201, 21585, 1000, reverse=False)


@pytest.mark.parametrize("port", [0, 16384, 40000])
def test_a_server_port_outside_1_16383_is_refused(port):
    with pytest.raises(ValueError, match="server port"):
        iperf.client_argv("10.0.0.1", port, 21585, 1000)
