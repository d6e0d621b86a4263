"""iperf3 command lines for a burst (no iperf3 is run)."""

import pytest

from apps import iperf


def test_a_burst_client_receives_with_nodelay_cubic_and_a_pinned_data_port():
    argv = iperf.client_argv("10.0.0.1", 5201, 5701, 200_000)
    assert argv[:2] == ["iperf3", "-c"] and argv[-1] == "-R"
    assert argv[argv.index("--cport") + 1] == "5701" and argv[argv.index("-n") + 1] == "200000"
    assert "-N" in argv and argv[argv.index("-C") + 1] == "cubic"


@pytest.mark.parametrize("cport", [0, 32768, 40000])
def test_a_data_port_in_the_ephemeral_range_is_refused(cport):
    with pytest.raises(ValueError, match="cport"):
        iperf.client_argv("10.0.0.1", 5201, cport, 1000)
